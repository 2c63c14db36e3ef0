"""LangGraph: ``graph.astream(stream_mode=["messages", "updates"])`` as contract events.

The two modes together say everything a trace needs, read by class name, and a LangChain
callback handler the adapter adds to the run's ``callbacks`` says when each model request
starts and which request each chunk belongs to (LangChain's ``run_id``; message ids only
where the callbacks did not see the request: a model may set its own ids on its chunks):

* ``messages``: the chat model's ``AIMessageChunk`` tokens with their metadata. A chunk of
  a new request opens an LLM call (``LLMCallStart`` with the model and provider LangChain
  reports, ``ls_model_name`` / ``ls_provider``, and its ``ls_*`` params); text and
  reasoning content become ``TextDelta`` / ``ReasoningDelta``; ``tool_call_chunks`` are
  assembled by index. A request that raised before its first chunk (a 429) still opens its
  call when the run fails, so the error lands on it, not on the step before; one that raised
  while the graph went on (``with_fallbacks``, a retry, a node catching it) fails its own
  call (``Error`` of its class, callbacks' ``on_llm_error``) beside the one that answered.
* ``updates``: a node finished. The model node's ``AIMessage`` closes its call with the
  final ``tool_calls``, ``usage_metadata`` (cache reads and reasoning included) and
  ``response_metadata`` (``model_name``, ``finish_reason`` or ``stop_reason``, ``id``), and
  the tools the provider ran inside the response (LangChain's ``content_blocks``, each
  provider's own blocks translated: a ``server_tool_call`` and its ``server_tool_result``)
  end it as a ``ServerToolCallsEnd`` (``agent_contract.sources._server_tools``); the
  tool node's ``ToolMessage``\\ s become ``ToolResult`` (``status="error"`` an error result,
  its ``error_type`` the exception class LangGraph's own error message names, or
  ``tool_not_found`` for its answer to a tool name the model made up),
  and the next LLM call after results starts a new step.
* A whole ``AIMessage`` no request made (the callbacks did not see it) is a call only when it
  carries what a model's answer does (``_from_model``); one a node wrote is no call: its text
  is told, its tool calls only with their results, when a tool ran them.
* A request asking for a structured answer (``with_structured_output``, the prebuilt agent's
  ``response_format``) tells no tool calls: the one carrying its answer runs no tool; the
  graph's ``structured_response`` is the run's answer (``StructuredFinal``). A tool call the
  node that asked for it answers itself, no tool running it (LangChain's ``create_agent`` with
  ``ToolStrategy``), is no tool call either (both stay in the call's output:
  ``UnrunCallsEnd``); a ``ToolStrategy`` answer the node refused (its error results, no
  structured response) fails the step, and the model asked again starts the next; a result
  of a tool the node ran itself (a ``ToolNode`` inside it), handed before the node's update
  ends its request, is told after it.
* A request LangGraph keeps out of ``messages`` (tagged ``nostream``: a middleware's summary or
  choice of tools) is told whole from the callbacks once it ended: its messages, answer, usage.
* A request made for one tool call outside the tool's body (a ``wrap_tool_call`` middleware
  answering the call with a model, LangChain's ``LLMToolEmulator``, or asking one about its
  result: its parent run is the task ``create_agent`` sends that one call to) is a side call
  naming that call (``SideCallStart.tool_call_id``), its span under the call's.
* A result ``HumanInTheLoopMiddleware`` marks as a human's rejection fails as
  ``approval_rejected``, as a refused approval does in the other adapters.

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through
LangChain's own seam: a callback handler (added to ``config``'s callbacks, beside the
caller's) whose ``on_tool_start`` enters the scope and ``on_tool_end`` / ``on_tool_error``
leave it. LangChain calls both inline, in the tool's own context, just before and after the
body (a sync tool's thread included), so the body and what it opens nest under its span. A
tool a body invokes itself (``other_tool.invoke(...)``: no call id, its parent run the calling
tool's) is no model's call: it is an ``inner_tool``, a span under the calling tool's with its
arguments, result and failure.

A graph streamed through this adapter inside another graph's node (an agent a tool runs and
traces on its own) is that run's: LangGraph forwards its items to the outer graph's
``subgraphs`` stream too, so it claims its namespace (the node's checkpoint path, from the
config LangGraph makes current there) and a run reading an enclosing graph passes over
everything under it; its own phases are named relative to that namespace. A graph a tool
body runs without streaming it (``invoke``) is a run nested under the tool's span, started at
its first item, or earlier by its first tool when the graph runs ahead of the reader on a
thread of its own (a sync tool, ``asyncio.to_thread``), so that tool nests in its step.

Requests streaming at the same time (parallel branches, ``Send`` fan-out) interleave their
chunks; the contract tells one call at a time, so the first streams live and each other is
held (its chunks, and results of the tools it asked for) until the live one ends, then told
in the order they started; a request ends once it has ended and every chunk it streamed is
read (a sync node's, on a thread, may end before the reader reads its chunks). A call whose
request ended (``on_llm_end``) before its node's
update names its message ends with that request's final message (its usage, tool calls and
finish reason), so a node keeping the answer out of ``messages`` loses nothing. A call still
open when the stream ends is closed with what its chunks assembled. The
graph's own stream items go to ``sink`` untouched. Needs ``langgraph`` (extra ``langgraph``);
``langchain_core`` (which LangGraph depends on) is imported when a run starts.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from contextlib import suppress
from contextvars import ContextVar
from typing import Any

from agent_contract.agent.events import InterruptFinal, StreamEvent
from agent_contract.events import (
    AgentEvent,
    FunctionCall,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    PhaseMarker,
    ReasoningDelta,
    SideCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, tool_scope
from agent_contract.sources import _conversation
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._failure import Error, error_name, failed_result
from agent_contract.sources._history import call_start, langchain_messages
from agent_contract.sources._joined import joined
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import Pushed
from agent_contract.sources._require import expect, require
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._server_tools import (
    ServerToolCall,
    ServerToolCallsEnd,
    langchain_server_calls,
)
from agent_contract.sources._stream import UNREADABLE_CHUNK, Sink, told, unreadable
from agent_contract.sources._structured import structured_final
from agent_contract.sources._unrun import UnrunCallsEnd

__all__ = ["langgraph_events"]

# LangGraph's ToolNode error message: "Error: {repr(exception)}\n Please fix your mistakes."
_TEMPLATE_ERROR = re.compile(r"Error: ([A-Za-z_][A-Za-z0-9_.]{0,127})\(")
_TEMPLATE_END = "\n Please fix your mistakes."
# ToolNode's answer to a call of a tool it does not have (no tool ran, no callback saw it)
_NOT_A_TOOL = " is not a valid tool, try one of ["
# ToolNode's own wrapper of the error the tool's arguments failed with (``ValidationError``):
# not named, so the class the tool raised (its scope saw it) names the failure, as it does
# under ToolNode's default handler, whose message names no class
_WRAPPERS = frozenset({"ToolInvocationError"})
_MSG = "messages"
_MODES = (_MSG, "updates")  # what the adapter reads
# What a model's message carries and a hand-written one lacks (``_from_model``): the response
# details providers' chat models report, and the id LangChain's chat models give a message
# the provider left without one (``lc_run--<run id>``; ``run-<run id>`` before langchain-core 1)
_MODEL_KEYS = ("model_name", "model", "model_provider", "finish_reason", "stop_reason")
_RUN_ID = re.compile(r"(?:lc_)?run--?[0-9a-f]{8}-[0-9a-f]{4}-")
_PARAMS = {"ls_temperature": "temperature", "ls_max_tokens": "max_tokens", "ls_stop": "stop"}
# LangGraph's tag (``langgraph.constants.TAG_NOSTREAM``) keeping a request out of ``messages``
_NOSTREAM = "nostream"
# The nodes the prebuilt agents run around their model node (``_in_hook``): LangGraph's
# ``create_react_agent`` hooks' and LangChain's ``create_agent`` middleware's (``<name>.<hook>``)
_HOOK_NODES = frozenset({"pre_model_hook", "post_model_hook"})
_HOOK_SUFFIXES = (".before_agent", ".before_model", ".after_model", ".after_agent")
# The messages a task of the functional API may return that the adapter reads (``_messages``)
_RETURNED = frozenset({"AIMessage", "ToolMessage"})
# LangChain's ``HumanInTheLoopMiddleware``: the source it marks its answer to a decision with
_HITL_DECISION = "hitl_interrupt_decision"
# The exception LangChain's ``ToolStrategy`` raises for a refused structured answer (one call
# that failed its schema, or several at once) when it does not ask the model again
_REFUSED = ("StructuredOutputValidationError", "MultipleStructuredOutputsError")


class _Call:
    """The LLM call a model node is streaming: its request, id and tool-call chunks by index."""

    __slots__ = ("id", "read", "run", "tools", "whole")

    def __init__(self, message_id: str | None, run: Any = None) -> None:
        self.id = message_id
        self.run = run  # LangChain's run_id of the request, when the callbacks saw it
        self.read = 0  # its chunks read so far
        self.tools: dict[int, list[Any]] = {}  # index -> [id, name, args parts]
        # the whole message a request that did not stream answered with, while its call waits
        # for its node's update to end it (``_Reader._whole``)
        self.whole: Any = None

    def asking(self, ended: Any) -> set[str]:
        """The ids of the tool calls this call asks for so far: its chunks', its whole
        message's and ``ended``'s (its request's final message, when the callbacks saw it)."""
        ids = {str(slot[0]) for slot in self.tools.values() if slot[0]}
        for message in (self.whole, ended):
            for tool in getattr(message, "tool_calls", None) or ():
                if isinstance(tool, dict) and tool.get("id"):
                    ids.add(str(tool["id"]))
        return ids


class _Held:
    """A request held while another streams: where it runs, its chunks so far (or its whole
    message, for a model that did not stream)."""

    __slots__ = ("chunks", "meta", "namespace", "run", "whole")

    def __init__(self, namespace: Any, meta: Any, run: Any, chunks: list[Any],
                 whole: Any = None) -> None:  # fmt: skip
        self.namespace, self.meta, self.run = namespace, meta, run
        self.chunks, self.whole = chunks, whole


class _Requests:
    """What the run's chat models tell LangChain's callbacks, read by the adapter in order.

    Inline and synchronous (``run_inline``): called in the model's own task or thread as the
    request starts and as each chunk arrives, before LangGraph streams that chunk.
    """

    run_inline = True
    raise_error = False
    ignore_llm = ignore_chat_model = False
    ignore_chain = ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True

    def __init__(self) -> None:
        # The tool call of this run whose body the current context runs in (set by the scoping
        # handler as each body starts): what a graph a tool body runs is read under.
        self.inside: ContextVar[str | None] = ContextVar("langgraph_tool_body", default=None)
        self.within: dict[Any, str] = {}  # run_id -> the tool call its request ran inside
        self.parents: dict[str, str | None] = {}  # tool call id -> the call it ran inside
        self.tasks: dict[str, tuple[str, ...]] = {}  # tool call id -> its task's namespace
        self.names: dict[str, str] = {}  # tool call id -> the name of a graph its body ran
        self.errors: dict[str, BaseException] = {}  # tool call id -> what that graph raised
        # tool call id -> the answer its body returned (``on_tool_end``), until the graph
        # streams it: a node failing after its tool ran never does (``_Reader.returned``)
        self.returned: dict[str, Any] = {}
        # The runs of graphs tool bodies run: started by a tool of that graph whose body
        # starts before a reader has read the graph's first item (the graph runs ahead on a
        # thread), or by the reader; each once, whichever comes first (under ``lock``).
        self.lock = threading.Lock()
        self.runs: dict[str, Pushed | None] = {}  # tool call id -> its graph's run, unread
        self.read: set[str] = set()  # tool call ids whose graph's run a reader has
        self.own: set[str] = set()  # tool call ids whose body streams its graph itself
        self.started: dict[Any, Any] = {}  # run_id -> metadata, announced and not yet opened
        self.requests: dict[Any, Any] = {}  # run_id -> its messages, while it is announced
        self.owners: dict[int, Any] = {}  # id(chunk message) -> run_id
        self.ended: dict[Any, Any] = {}  # run_id -> the final message (kept until its update)
        self.sent: dict[Any, int] = {}  # run_id -> its chunks the model streamed so far
        self.failed: list[Any] = []  # run_ids whose request raised, in order
        # run_id -> what its request raised, until its call is told failed: the graph may go
        # on (a fallback's next model, a retry of the node, a node catching it)
        self.raised: dict[Any, BaseException] = {}
        # run_ids asking for a structured answer (``with_structured_output``: LangChain's
        # ``ls_structured_output_format`` option): the tool call that carries it is the answer
        # (the prebuilt agent's ``response_format`` call), not a tool the graph runs
        self.shaped: set[Any] = set()
        # run_id -> the output format its request asks the provider for (the
        # ``response_format`` bound by ``ProviderStrategy``, ``with_structured_output``'s
        # JSON modes): the call's ``response_format`` param
        self.formats: dict[Any, Any] = {}
        # Requests LangGraph keeps out of its ``messages`` stream (tagged ``nostream``: the
        # summary of LangChain's ``SummarizationMiddleware``, ``LLMToolSelectorMiddleware``'s
        # choice, a caller's own hidden call): run_id -> metadata; once ended, in ``unheard``
        # (in order) until the reader tells them from the callbacks alone
        self.quiet: dict[Any, Any] = {}
        self.unheard: list[Any] = []
        # A request made for one tool call outside its body (a ``wrap_tool_call`` middleware
        # answering the call with a model: LangChain's ``LLMToolEmulator``): the task running
        # that one call (its chain's run_id -> the call's id), and the request's run_id -> the
        # call, whose span it nests under
        self.tool_tasks: dict[Any, str] = {}
        self.stand_ins: dict[Any, str] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any,
                            metadata: Any = None, **kwargs: Any) -> None:  # fmt: skip
        self.started[run_id] = metadata
        self.requests[run_id] = messages[0] if messages else None
        options = kwargs.get("options")
        if isinstance(options, dict) and options.get("ls_structured_output_format"):
            self.shaped.add(run_id)
        invoked = kwargs.get("invocation_params")
        if isinstance(invoked, dict) and invoked.get("response_format") is not None:
            self.formats[run_id] = invoked["response_format"]
        self._note(run_id, metadata, kwargs.get("tags"), kwargs.get("parent_run_id"))

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: Any,
                     metadata: Any = None, **kwargs: Any) -> None:  # fmt: skip
        self.started[run_id] = metadata
        self.requests[run_id] = prompts[:1] if prompts else None
        self._note(run_id, metadata, kwargs.get("tags"), kwargs.get("parent_run_id"))

    def _note(self, run_id: Any, metadata: Any, tags: Any, parent: Any) -> None:
        inside = self.inside.get()
        if inside is not None:  # a request of a graph a tool body runs
            self.within[run_id] = inside
        elif parent is not None and parent in self.tool_tasks:  # made for that call, no body
            self.stand_ins[run_id] = self.tool_tasks[parent]
        if isinstance(tags, (list, tuple)) and _NOSTREAM in tags:
            self.quiet[run_id] = metadata

    def run_of(self, call_id: str) -> Pushed | None:
        """The run of the graph ``call_id``'s body runs, for the reader (in that call's scope):
        the one a tool of that graph started, else one started now."""
        with self.lock:
            self.read.add(call_id)
            if call_id in self.runs:
                return self.runs.pop(call_id)
            return Pushed.start(self.names.get(call_id))

    def ahead(self, call_id: str | None) -> None:
        """A tool of the graph ``call_id``'s body runs is starting (on that graph's thread, in
        the body's scope): the graph's run starts now unless a reader has it, so that the tool
        finds it open and nests in its step."""
        if call_id is None or call_id not in self.names or call_id in self.own:
            return
        with self.lock:
            if call_id not in self.read and call_id not in self.runs:
                self.runs[call_id] = Pushed.start(self.names[call_id])

    def request(self, run_id: Any) -> tuple[Any, ...] | None:
        """The messages request ``run_id`` sent, copied (once: then forgotten)."""
        messages = self.requests.pop(run_id, None)
        return None if messages is None else tuple(messages)

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, run_id: Any, **kw: Any) -> None:
        message = getattr(chunk, "message", None)
        if message is not None and run_id not in self.quiet:  # (a quiet one's never come)
            self.owners[id(message)] = run_id
            self.sent[run_id] = self.sent.get(run_id, 0) + 1

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.started.pop(run_id, None)  # it ended: its call opens from its messages
        generations = getattr(response, "generations", None)
        if generations and generations[0]:
            self.ended[run_id] = getattr(generations[0][0], "message", None)
        if run_id in self.quiet:
            self.unheard.append(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self.quiet.pop(run_id, None)  # failed from its start, as any request that raised
        self.raised[run_id] = error
        self.failed.append(run_id)


_HINT = "A StateGraph streams once compiled: pass builder.compile(), not the builder."


def _handler() -> Any:
    """A :class:`_Requests` that is a LangChain ``BaseCallbackHandler`` (imported lazily)."""
    from langchain_core.callbacks import BaseCallbackHandler

    kind = type("LangGraphRequests", (_Requests, BaseCallbackHandler), {})
    return kind()


def _with_handler(config: Any, handler: Any) -> Any:
    """``config`` with ``handler`` among its callbacks (a list, a manager, or none yet)."""
    config = dict(config or {})
    callbacks = config.get("callbacks")
    if callbacks is None:
        config["callbacks"] = [handler]
    elif isinstance(callbacks, list):
        config["callbacks"] = [*callbacks, handler]
    else:  # a callback manager: a copy with the handler, inherited by nested runs
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        config["callbacks"] = manager
    return config


async def langgraph_events(
    graph: Any, input: Any, config: Any = None, *, sink: Sink | None = None, **stream: Any
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Stream ``graph`` on ``input`` (``stream`` goes to ``astream``), yielding events.

    The graph is always streamed with ``subgraphs=True``, so a compiled sub-graph used as a
    node (the supervisor pattern, an agent made with ``create_react_agent`` inside another
    graph) streams its own calls and tool results as they happen; its calls are steps of the
    run, each announced by a ``PhaseMarker`` naming the sub-graph's node path. ``sink``
    receives what the caller asked for, shaped as LangGraph yields it for the caller's own
    arguments: the modes of its ``stream_mode`` (a name or a list; ``messages`` and
    ``updates`` by default: the adapter streams those and the caller's),
    ``(namespace, mode, payload)`` items when it passed ``subgraphs=True``, else the root
    graph's ``(mode, payload)`` items (the payload alone for one mode given by name).
    """
    require("langgraph")
    require("langchain_core.callbacks", "BaseCallbackHandler")
    expect(graph, "langgraph_events", "a compiled LangGraph graph", "astream", hint=_HINT)
    # before the framework makes any request (read once the graph is known to be one); the
    # thread its checkpointer keeps
    thread = _conversation.thread_id(config) or _conversation.thread_id(getattr(graph, "config", 0))
    framework_started(__name__, thread)
    nested = bool(stream.pop("subgraphs", False))
    asked = stream.pop("stream_mode", None)
    single = isinstance(asked, str)
    wanted = _MODES if asked is None else ((asked,) if single else tuple(asked))
    modes = [*_MODES, *(m for m in wanted if m not in _MODES)]
    requests = _handler()
    base = _base()
    if base:  # a graph run inside another's node (a tool): this run reads it, not that one
        _CLAIMED[base] = None
        while len(_CLAIMED) > _CLAIMS:
            _CLAIMED.popitem(last=False)
    reader = _Reader(requests, base)
    thread = _thread(config)
    if _resumes(input):  # the run a pause left: its paused tool calls are told again first
        if thread is not None:
            yield JourneyMarker(name=_graph_name(graph), journey_id=thread)
        for told in await _paused_calls(graph, config):
            if isinstance(told, ToolCall):  # (an Error telling its arguments' repair follows)
                reader.asked.add(str(told.id))
            yield told
    config = _scoped(config, requests, _mcp_servers(graph, set()))
    items = graph.astream(
        input, _with_handler(config, requests), stream_mode=modes, subgraphs=True, **stream,
    )  # fmt: skip
    try:
        async for namespace, mode, payload in items:
            if (
                sink is not None
                and mode in wanted
                and (nested or not namespace or mode == "messages")
            ):
                item = payload if single else (mode, payload)
                sink((namespace, *item) if nested and not single else
                     (namespace, item) if nested else item)  # fmt: skip
            if mode not in _MODES:
                continue
            for event in await reader.route(namespace, mode, payload):
                yield event
    except Exception as error:  # the graph's: it comes out as it is, whatever ours does
        with suppress(Exception):
            await reader.end_bodies(error)
        for event in reader.drain(reader.finished, error):  # a request that answered before
            yield event
        for event in reader.drain(reader.returned):  # a tool's answer the graph never streamed
            yield event
        for event in reader.drain(reader.refused):  # a request that raised before its chunk
            yield event
        raise
    await reader.end_bodies(None)
    for event in reader.drain(reader.close):
        yield event
    answer = structured_final(reader.answer[0]) if reader.answer and not reader.interrupts else None
    if answer is not None:  # the prebuilt agent's ``response_format``: the run's answer
        yield answer
    if reader.interrupts:  # the graph paused (``interrupt()``): the run ends interrupted
        if thread is not None:
            yield JourneyMarker(name=_graph_name(graph), journey_id=thread)
        for pause in reader.interrupts:
            pause_id = getattr(pause, "id", None)
            yield InterruptFinal(interrupt_id=str(pause_id) if pause_id is not None else "",
                                 payload=getattr(pause, "value", None))  # fmt: skip


def _thread(config: Any) -> str | None:
    """The checkpointer's thread the run reads and writes (``configurable.thread_id``)."""
    configurable = config.get("configurable") if isinstance(config, dict) else None
    thread = configurable.get("thread_id") if isinstance(configurable, dict) else None
    return str(thread) if thread is not None and str(thread) else None


def _graph_name(graph: Any) -> str:
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else "LangGraph"


def _resumes(input: Any) -> bool:
    """``input`` resumes a paused run: LangGraph's ``Command(resume=...)``."""
    return type(input).__name__ == "Command" and getattr(input, "resume", None) is not None


async def _paused_calls(graph: Any, config: Any) -> list[AgentEvent]:
    """The tool calls the paused run left without results, in the graph's state and its
    sub-graphs' (read from the checkpointer): the resumed run runs them again and ends them."""
    try:
        state = await graph.aget_state(config, subgraphs=True)
    except Exception:  # no checkpointer, a graph of its own kind: nothing told again
        return []
    calls: dict[str, tuple[AgentEvent, ...]] = {}  # a call's events, by its id
    states = [state]
    while states:
        state = states.pop(0)
        values = getattr(state, "values", None)
        messages = values.get("messages") if isinstance(values, dict) else None
        if isinstance(messages, (list, tuple)):
            for call_id, events in _unanswered(messages):
                calls.setdefault(call_id, events)
        tasks = getattr(state, "tasks", None)
        states += [t.state for t in tasks or () if type(t.state).__name__ == "StateSnapshot"]
    return [event for events in calls.values() for event in events]


def _unanswered(
    messages: list[Any] | tuple[Any, ...],
) -> Iterator[tuple[str, tuple[AgentEvent, ...]]]:
    """The tool calls of the last model message with no tool message answering them: each
    one's id and events (``tool_call``'s)."""
    answered = {str(m.tool_call_id) for m in messages if type(m).__name__ == "ToolMessage"}
    last = next((m for m in reversed(messages) if type(m).__name__ == "AIMessage"), None)
    for call in getattr(last, "tool_calls", None) or ():
        call_id = call.get("id") if isinstance(call, dict) else None
        if call_id is not None and str(call_id) not in answered:
            yield str(call_id), tool_call(str(call_id), call.get("name"), call.get("args"))


class _Body:
    """A graph a tool body ran (a plain ``invoke``/``ainvoke``, or a compiled sub-graph called
    as a tool): recorded as a run nested under the tool's span, read by its own reader."""

    __slots__ = ("pushed", "reader")

    def __init__(self, pushed: Pushed, reader: _Reader) -> None:
        self.pushed, self.reader = pushed, reader


class _Reader:
    """One run: the LLM call streaming, the messages already told, the step and its phase."""

    __slots__ = (
        "answer", "asked", "asked_by", "base", "bodies", "branch", "call", "carried", "held",
        "interrupts",
        "level", "phase", "requests", "results", "results_held", "spoke", "stand_in", "step",
        "told", "waiting", "written",
    )  # fmt: skip

    def __init__(
        self, requests: _Requests, base: tuple[str, ...] = (), level: str | None = None
    ) -> None:
        self.requests = requests
        self.base = base  # the namespace the graph runs in (inside another graph's node)
        self.level = level  # the tool call whose body runs the graph read here (None: the run)
        self.bodies: dict[str, _Body | None] = {}  # call id -> the graph its body ran
        self.interrupts: list[Any] = []  # LangGraph's ``Interrupt``\ s the graph paused on
        self.call: _Call | None = None
        self.stand_in: str | None = None  # the tool call the open call does the work of
        self.step, self.results = 0, False
        self.spoke = False  # a call was told in the step
        self.told: set[str] = set()  # ids of the AI and tool messages already made events
        self.phase: str | None = None  # the node path of the graph whose model spoke last
        # Requests streaming while another streams (parallel branches, ``Send``): the contract
        # tells one call at a time, so each is held, by request, until the live one ends.
        self.held: dict[Any, _Held] = {}
        self.asked: set[str] = set()  # the tool-call ids told so far
        self.results_held: dict[str, Any] = {}  # tool results of calls still held, by key
        # The calls told whose result is not: no step ends while a branch running beside the
        # one that speaks next still waits for its tools. A branch is the namespace of the
        # graph whose model spoke (task ids included: the same node sent twice is two); the
        # ids each asked, so that its speaking again gives them up in one lookup.
        self.waiting: set[str] = set()
        self.asked_by: dict[tuple[str, ...], list[str]] = {}
        self.branch: tuple[str, ...] = ()  # the branch of the call told last
        # The tool calls of messages a node wrote itself (no request made them), by id: told
        # with their result when a tool ran them, never when the node wrote the answer too.
        self.written: dict[str, tuple[AgentEvent, ...]] = {}  # a call's events (tool_call)
        self.answer: tuple[Any] | None = None  # the graph's structured answer, once given
        # The tool calls the node that asked for them answered itself, no tool running them
        # (``create_agent``'s ``ToolStrategy`` carrying its structured answer): no tool calls.
        self.carried: set[str] = set()

    async def route(self, namespace: Any, mode: Any, payload: Any) -> list[AgentEvent]:
        """Read one item where it ran: a graph a tool body ran is a run of its own under that
        tool's span (its events are recorded there, at any depth); the events of this run's
        own graph are returned."""
        target, pushed = self, None
        claimed = _CLAIMED and isinstance(namespace, tuple) and self._claimed(namespace)
        for call_id in () if claimed else self._chain(self._owner(namespace, mode, payload)):
            body = target._body(call_id)
            if body is None:
                break
            target, pushed = body.reader, body.pushed
        try:
            for call_id in target._results(mode, payload):  # the tool ended: so did its graph
                await target._end_body(call_id, None)
        except Exception:
            ended: list[AgentEvent] = [unreadable()]
        else:
            ended = []
        events = [*ended, *target.drain(target.feed, namespace, mode, payload)]
        if pushed is None:
            return events
        await pushed.push(events)
        return []

    def drain(self, read: Any, *item: Any) -> list[AgentEvent]:
        """What this reader's ``read(*item)`` (its ``feed`` of one item, its end) gives, read
        out by ``told``: where it fails, the item is skipped and told; a call the reader let
        go of before its end was told is ended."""
        was_open = self.call is not None
        out = told(read, *item)
        skipped = bool(out) and getattr(out[-1], "error_type", None) == UNREADABLE_CHUNK
        if skipped and self.call is None and _left_open(out, was_open):
            out.append(LLMCallEnd())
        return out

    def _owner(self, namespace: Any, mode: Any, payload: Any) -> str | None:
        """The innermost tool call of this run whose body the item's graph ran in: by the
        message (its request's or tool's context, noted by the callbacks), else by its
        namespace (under the task of a tool still running)."""
        requests = self.requests
        if not requests.parents:  # no tool body has started
            return None
        found: str | bool = False
        if mode == "messages" and isinstance(payload, tuple) and payload:
            found = _inside(requests, payload[0])
        elif mode == "updates" and isinstance(payload, dict):
            found = next((f for m in _messages(payload) if (f := _inside(requests, m))), False)
        if isinstance(found, str):
            return found or None
        if not isinstance(namespace, tuple) or not namespace or not requests.tasks:
            return None
        best: tuple[int, str | None] = (0, None)
        for call_id, task in list(requests.tasks.items()):  # (callbacks add from threads)
            if len(task) > best[0] and namespace[: len(task)] == task:
                best = (len(task), call_id)
        return best[1]

    def _chain(self, call_id: str | None) -> list[str]:
        """The calls from this reader's level down to ``call_id``, outermost first."""
        chain: list[str] = []
        while call_id is not None and call_id != self.level and call_id not in chain:
            chain.append(call_id)
            call_id = self.requests.parents.get(call_id)
        return chain[::-1] if call_id == self.level else []

    def _body(self, call_id: str) -> _Body | None:
        """The run of the graph ``call_id``'s body runs, started under its span at its first
        item; ``None`` where nothing traces it (its items are then this run's)."""
        if call_id in self.bodies:
            return self.bodies[call_id]
        if call_id not in self.asked:  # its call is not told yet: nothing to nest under
            return None
        with tool_scope(call_id, None):
            pushed = self.requests.run_of(call_id)
        base = self.requests.tasks.get(call_id, self.base)
        body = None if pushed is None else _Body(pushed, _Reader(self.requests, base, call_id))
        self.bodies[call_id] = body
        return body

    def _results(self, mode: Any, payload: Any) -> list[str]:
        """The calls with a graph of their own that this item's tool results end."""
        if not self.bodies:
            return []
        if mode == "messages":
            found = [payload[0]] if isinstance(payload, tuple) and payload else []
        elif mode == "updates" and isinstance(payload, dict):
            found = list(_messages(payload))
        else:
            return []
        return [str(m.tool_call_id) for m in found if type(m).__name__ == "ToolMessage"
                and self.bodies.get(str(m.tool_call_id)) is not None]  # fmt: skip

    async def _end_body(self, call_id: str, error: BaseException | None) -> None:
        """End the run of the graph ``call_id``'s body ran (its own first, innermost first):
        in error with what the graph raised, its request that failed first opened."""
        body = self.bodies.pop(call_id, None)
        if body is None:
            return
        raised = self.requests.errors.pop(call_id, None) or error
        await body.reader.end_bodies(raised)
        reader = body.reader
        ended = (
            [*reader.finished(raised), *reader.returned(), *reader.refused()]
            if raised is not None
            else reader.close()
        )
        await body.pushed.push(list(ended))
        await body.pushed.end(raised)

    async def end_bodies(self, error: BaseException | None) -> None:
        """End the runs of the graphs tool bodies ran that are still open (and, for the run,
        those started whose items no reader read)."""
        for call_id in list(self.bodies):
            await self._end_body(call_id, error)
        if self.level is None:
            for call_id in list(self.requests.runs):
                pushed = self.requests.runs.pop(call_id, None)
                if pushed is not None:
                    await pushed.end(self.requests.errors.pop(call_id, None) or error)

    def feed(self, namespace: Any, mode: Any, payload: Any) -> Iterator[AgentEvent]:
        if isinstance(namespace, tuple):
            if _CLAIMED and self._claimed(namespace):
                self._pass_over(mode, payload)
                return
            if self.base and namespace[: len(self.base)] == self.base:
                namespace = namespace[len(self.base) :]
        if self.requests.raised:
            yield from self._raised()
        if self.requests.unheard:
            yield from self._unheard()
        if mode == "messages":
            message, meta = payload
            kind = type(message).__name__
            if kind == "AIMessageChunk":
                yield from self._chunk(namespace, meta, message)
            elif kind == "AIMessage":  # a model call that was not streamed: whole at once
                if self.call is not None and self._in_flight(self.call):
                    key = ("whole", id(message))  # told when the call streaming ends
                    self.held[key] = _Held(namespace, meta, None, [], message)
                else:
                    yield from self._whole(namespace, meta, message)
            elif kind == "ToolMessage":
                yield from self._tool(message)
        elif mode == "updates" and isinstance(payload, dict):
            paused = payload.get("__interrupt__")
            if paused and not namespace and isinstance(paused, (list, tuple)):
                self.interrupts.extend(paused)
            if not namespace:
                self._answer(payload)
            for message in _messages(payload):
                kind = type(message).__name__
                if kind == "ToolMessage":
                    yield from self._tool(message)
                elif kind == "AIMessage" and (ending := self._ends(message)) is not None:
                    yield from self._end(message, ending[0])
            if self.carried:
                yield from self._refused(payload)
        if self.call is None and (self.held or self.results_held):
            yield from self._flush()

    def _answer(self, update: dict[str, Any]) -> None:
        """Keep the graph's structured answer (the prebuilt agent's ``structured_response``,
        made with ``response_format``), the run's answer once it ends."""
        for state in update.values():
            if isinstance(state, dict) and state.get("structured_response") is not None:
                self.answer = (state["structured_response"],)

    def _refused(self, update: dict[str, Any]) -> Iterator[AgentEvent]:
        """A node's update answering the structured answer's calls itself with no structured
        response (``ToolStrategy``'s error results, the model asked again): the answer was
        refused, a failure of its step, named as LangChain's exception is when it does not
        retry; the retried request starts the next step."""
        for state in update.values():
            messages = state.get("messages") if isinstance(state, dict) else None
            if not isinstance(messages, (list, tuple)) or state.get("structured_response"):
                continue
            ids = [str(m.tool_call_id) for m in messages if type(m).__name__ == "ToolMessage"
                   and str(m.tool_call_id) in self.carried]  # fmt: skip
            if not ids or f"refused:{ids[0]}" in self.told:
                continue
            self.told.update(f"refused:{i}" for i in ids)
            kind = _REFUSED[len(ids) > 1]
            yield Error(message="the structured answer was refused", error_type=kind)
            self.results = True

    def _chunk(self, namespace: Any, meta: Any, message: Any) -> Iterator[AgentEvent]:
        """A streamed chunk: the live call's, a held request's, or a new request's."""
        call, run = self.call, self.requests.owners.pop(id(message), None)
        if call is not None and (
            run == call.run if run is not None or call.run is not None
            else not (message.id and message.id != call.id)
        ):  # fmt: skip
            call.id = call.id or message.id
            yield from _deltas(message, call)
            return
        key = run if run is not None else message.id
        held = self.held.get(key) if key is not None else None
        if held is not None:
            held.chunks.append(message)
            return
        self.requests.started.pop(run, None)
        if call is not None and self._in_flight(call):  # parallel: told when this one ends
            self.held[key if key is not None else ("chunk", id(message))] = _Held(
                namespace, meta, run, [message]
            )
            return
        if call is not None:
            yield from self._end(self._final(call))
        if self.held:  # the requests held while that one streamed started before this one
            yield from self._flush()
            if self.call is not None:
                self.held[key if key is not None else ("chunk", id(message))] = _Held(
                    namespace, meta, run, [message]
                )
                return
        yield from self._open(namespace, meta, run)
        call = self.call = _Call(message.id, run)
        yield from _deltas(message, call)

    def _in_flight(self, call: _Call) -> bool:
        """Whether ``call``'s request is still streaming to the reader: the callbacks saw it
        start, and not end or not all its chunks are read yet (a node on a thread of its own
        may finish its request before the reader reads its chunks); a request they did not see
        is taken as done when another's chunk comes."""
        run = call.run
        return run is not None and (
            (run not in self.requests.ended and run not in self.requests.raised)
            or call.read < self.requests.sent.get(run, 0)
        )

    def _flush(self) -> Iterator[AgentEvent]:
        """Tell the requests held while another streamed, in the order they started: each
        that has ended whole (its final message, from the callbacks), the first still
        streaming becomes the live call (the rest stay held)."""
        while self.held and self.call is None:
            key = next(iter(self.held))
            held = self.held.pop(key)
            if held.whole is not None:
                yield from self._whole(held.namespace, held.meta, held.whole, True)
                continue
            first = held.chunks[0]
            yield from self._open(held.namespace, held.meta, held.run)
            call = self.call = _Call(first.id, held.run)
            for chunk in held.chunks:
                call.id = call.id or chunk.id
                yield from _deltas(chunk, call)
            if held.run is not None and not self._in_flight(call):
                yield from self._end(self.requests.ended.pop(held.run, None))
        ready = [k for k, r in self.results_held.items() if str(r.tool_call_id) in self.asked]
        for key in ready:
            yield from self._tool(self.results_held.pop(key))

    def close(self) -> Iterator[AgentEvent]:
        yield from self._raised()
        yield from self._unheard()
        if self.call is not None:
            yield from self._end(self._final(self.call))
        while self.held:
            yield from self._flush()
            if self.call is not None:
                yield from self._end(self._final(self.call))
        for result in self.results_held.values():  # results of calls never told: as they are
            yield from self._tool(result, True)
        self.results_held.clear()

    def _final(self, call: _Call) -> Any:
        """The message ``call``'s request ended with, when the callbacks saw it (its usage), or
        the whole message it answered with."""
        found = self.requests.ended.pop(call.run, None) if call.run is not None else None
        return found if found is not None else call.whole

    def _unheard(self) -> Iterator[AgentEvent]:
        """The requests of this run that ended out of LangGraph's ``messages`` stream (tagged
        ``nostream``: a middleware's summary or tool choice): each is a call of its own, told
        whole from the callbacks (its messages, answer and usage) once no other streams."""
        requests = self.requests
        for run in list(requests.unheard):  # (callbacks add from threads)
            if requests.within.get(run) != self.level:
                continue
            if self.call is not None and self._in_flight(self.call):
                return  # another request streams: told when it ends
            with suppress(ValueError):
                requests.unheard.remove(run)
            meta = requests.quiet.pop(run, None)
            message = requests.ended.pop(run, None)
            namespace = _namespace(meta)
            if _CLAIMED and self._claimed(namespace):  # another run reads it
                continue
            yield from self._open(namespace[len(self.base) :], meta, run, side=True)
            self.call = _Call(getattr(message, "id", None), run)
            if message is not None:
                yield from _deltas(message, self.call)
            yield from self._end(message)

    def _claimed(self, namespace: tuple[str, ...]) -> bool:
        """Whether another run reads the graph ``namespace`` is in: a graph streamed through
        this adapter inside one of this graph's nodes (a tool body) streams into this
        graph's stream too (LangGraph forwards a graph run inside a node to its parent's
        ``subgraphs`` stream); that run is nested, traced on its own."""
        return any(namespace[:n] in _CLAIMED for n in range(len(self.base) + 1, len(namespace) + 1))

    def _pass_over(self, mode: Any, payload: Any) -> None:
        """Forget what the callbacks noted of a claimed graph's model calls."""
        if mode == "messages" and isinstance(payload, tuple) and payload:
            run = self.requests.owners.pop(id(payload[0]), None)
            if run is not None:
                self.requests.started.pop(run, None)
                self.requests.requests.pop(run, None)
                self.requests.ended.pop(run, None)
                self.requests.sent.pop(run, None)

    def _ends(self, message: Any) -> tuple[Any] | None:
        """``(final,)`` when ``message`` is the open call's final message: the one its request
        ended with (the callbacks saw it: ``final``), or one with its id, which a node may have
        made in place of the model's answer (the prebuilt agent's "need more steps" near the
        recursion limit): ``final`` then still says what the request spent. ``None`` for another
        message, which leaves the request's final message to the call."""
        call = self.call
        if call is None:
            return None
        final = self.requests.ended.get(call.run) if call.run is not None else None
        if final is not message and not (message.id and message.id == call.id):
            return None
        self.requests.ended.pop(call.run, None)
        return (final,)

    def _raised(self) -> Iterator[AgentEvent]:
        """The requests of this run that raised while the graph went on (``with_fallbacks``
        trying the next model, ``with_retry``, a node's ``RetryPolicy``, a node catching the
        error): the live call's ends failed once its chunks are read; one that raised before
        its first chunk opens its call and fails it, when no other request streams."""
        requests = self.requests
        for run in list(requests.raised):  # (callbacks add from threads)
            if requests.within.get(run) != self.level:
                continue
            call = self.call
            if call is not None and call.run == run:
                if call.read >= requests.sent.get(run, 0):
                    yield from self._end(None)
                continue
            if run in self.held or run not in requests.started or requests.sent.get(run):
                continue  # held (failed when told), or its chunks open its call
            if call is not None and self._in_flight(call):
                continue  # another request streams: this one waits for its end
            meta = requests.started.pop(run, None)
            namespace = _namespace(meta)
            if _CLAIMED and self._claimed(namespace):  # another run reads it
                requests.raised.pop(run, None)
                continue
            yield from self._open(namespace[len(self.base) :], meta, run)
            self.call = _Call(None, run)
            yield from self._end(None)

    def finished(self, error: BaseException) -> Iterator[AgentEvent]:
        """The run failed with ``error``: the call streaming whose request had ended (the
        callbacks saw its final message, every chunk read) ends with it, its answer and tokens,
        as the request did: a node raising after its model answered fails the step and the
        run, not the call (a request still streaming stays open, cut short by the failure; one
        that raised fails with the run's error). A structured answer ``ToolStrategy`` refused
        without asking again (``error`` is its exception, naming the schema's tools) ran no
        tool: its calls are no tool calls."""
        call = self.call
        if (
            call is None
            or call.run is None
            or call.run in self.requests.raised
            or self._in_flight(call)
        ):
            return
        final = self._final(call)
        if type(error).__name__ in _REFUSED:
            names = getattr(error, "tool_names", None) or [getattr(error, "tool_name", None)]
            for tool in getattr(final, "tool_calls", None) or ():
                if isinstance(tool, dict) and tool.get("name") in names and tool.get("id"):
                    self.carried.add(str(tool["id"]))
        yield from self._end(final)

    def returned(self) -> Iterator[AgentEvent]:
        """The run failed: each call of this run whose tool returned its answer (LangChain's
        ``on_tool_end``) that the graph never streamed (the node raised after its tool ran) is
        told with that answer, so it ends as the tool did, not cut short by, or blamed for, the
        node's failure."""
        returned = self.requests.returned
        for call_id in [c for c in self.asked if c in returned]:  # (callbacks add from threads)
            if f"call:{call_id}" not in self.told and f"bare:{call_id}" not in self.told:
                yield from self._tool(returned[call_id], True)

    def refused(self) -> Iterator[AgentEvent]:
        """The run failed: each request that raised before its first chunk opens its call (the
        run's error then lands on it)."""
        for run in list(self.requests.failed):  # (callbacks add from threads)
            if self.requests.within.get(run) != self.level:
                continue
            meta = self.requests.started.pop(run, None)
            namespace = _namespace(meta)  # the whole path, this graph's own included
            if meta is None or (_CLAIMED and self._claimed(namespace)):
                continue
            if self.call is not None:
                yield from self._end(None)
            yield from self._open(namespace[len(self.base) :], meta, run)
            self.call = _Call(None, run)

    def _open(
        self, namespace: Any, meta: Any, run: Any, *, side: bool = False
    ) -> Iterator[AgentEvent]:
        """End the call before, start a step after tool results, and announce a new call, with
        the messages request ``run`` sent (the caller then makes it ``self.call``); a side
        call (``side``: a request kept out of ``messages``) does not name the run."""
        if self.call is not None:
            yield from self._end(self._final(self.call))
        self.branch = branch = namespace if isinstance(namespace, tuple) else ()
        for call_id in self.asked_by.pop(branch, ()):  # speaking again, it will not get them
            self.waiting.discard(call_id)
        phase = _path(namespace)
        moved = phase != self.phase and (phase or self.phase is not None)
        # a step ends after tool results, or when another graph speaks (the supervisor after
        # its agent's answer): each step is one agent's
        if (self.results or (moved and self.spoke)) and not self.waiting:
            yield StepBoundary(index=self.step)
            self.step, self.results, self.spoke = self.step + 1, False, False
        if moved:
            yield PhaseMarker(name=phase or "root")
        self.phase, self.spoke = phase, True
        stand_in = self.requests.stand_ins.pop(run, None) if self.requests.stand_ins else None
        side = side or stand_in is not None or _in_hook(meta)
        self.stand_in = stand_in
        start = _start(meta, self.requests.request(run), side, stand_in)
        if self.requests.formats and run in self.requests.formats:
            start.params["response_format"] = self.requests.formats.pop(run)
        yield start

    def _end(self, message: Any, spent: Any = None) -> Iterator[AgentEvent]:
        call, self.call, self.stand_in = self.call, None, None
        if call is not None:
            self.requests.sent.pop(call.run, None)
            if call.id:
                self.told.add(call.id)
            error = self.requests.raised.pop(call.run, None)
            if error is not None:  # its request raised: no answer, no tokens, no tool calls
                with suppress(ValueError):
                    self.requests.failed.remove(call.run)
                kind = error_name(error)
                yield Error(message=str(error) or kind, error_type=kind)
                yield LLMCallEnd()
                return
            shaped = call.run is not None and call.run in self.requests.shaped
            self.requests.shaped.discard(call.run)
            unrun: list[ToolCall] = []
            for event in _end(call, message, spent):
                if isinstance(event, ToolCall) and (shaped or event.id in self.carried):
                    unrun.append(event)  # the structured answer's carrier: no tool runs it
                    continue
                if unrun and type(event) is LLMCallEnd:  # its output still says it was asked
                    event = UnrunCallsEnd(
                        model=event.model, finish_reason=event.finish_reason,
                        response_id=event.response_id, unrun=tuple(unrun),
                    )  # fmt: skip
                if isinstance(event, ToolCall) and event.id:
                    self.asked.add(event.id)
                    self.waiting.add(event.id)
                    self.asked_by.setdefault(self.branch, []).append(event.id)
                yield event

    def _whole(
        self, namespace: Any, meta: Any, message: Any, flushed: bool = False
    ) -> Iterator[AgentEvent]:
        if message.id and message.id in self.told:
            return
        if self.call is not None and message.id == self.call.id:
            # the streamed call's own message (or one a node made in its place): it ends it
            yield from self._end(message, self._final(self.call))
            return
        ended = self.requests.ended  # the request that ended with this message, if seen
        run = next((run for run, final in list(ended.items()) if final is message), None)
        if run is None and not _from_model(message):
            yield from self._written(message)
            return
        ended.pop(run, None)
        yield from self._open(namespace, meta, run)
        self.call = call = _Call(message.id, run)
        yield from _deltas(message, call)
        if run is not None and message.tool_calls and not flushed:
            # its node's update ends it (``_ends``): the node may answer a call itself first
            call.whole = ended[run] = message
            return
        yield from self._end(message)

    def _written(self, message: Any) -> Iterator[AgentEvent]:
        """A message a node wrote itself (a canned reply, a join of parallel answers, a
        handoff's "Transferring ..."): no model call. Its text is the agent's; its tool calls
        wait for their results (a tool ran them, or the node wrote the answer too)."""
        if message.id:
            self.told.add(message.id)
        yield from _deltas(message, _Call(None))
        for tool in message.tool_calls:
            call_id = tool.get("id")
            if call_id:
                self.written[str(call_id)] = tool_call(
                    str(call_id), tool.get("name"), tool.get("args")
                )

    def _tool(self, message: Any, orphan: bool = False) -> Iterator[AgentEvent]:
        # A result is told once, whether LangGraph shows it first without an id and later with
        # the one a parent's ``add_messages`` gave it (a handoff's ``Command.PARENT`` update)
        # or the other way round; two results with ids of their own stay two.
        call = f"call:{message.tool_call_id}"
        key = message.id or call
        if (
            key in self.told
            or f"bare:{message.tool_call_id}" in self.told
            or (not message.id and call in self.told)
        ):
            return
        marks = (key, call) if message.id else (call, f"bare:{message.tool_call_id}")
        call_id, asking = str(message.tool_call_id), self.call
        if (
            not orphan
            and asking is not None
            and call_id not in self.asked
            and call_id in asking.asking(self.requests.ended.get(asking.run))
        ):  # a result of the call still open: its node answered it before its end was told
            if call_id in self.requests.parents:  # a tool ran (the node runs its own tools)
                self.results_held.setdefault(key, message)  # told after its call
            else:  # the node answered it itself (the structured answer's carrier): no tool
                self.carried.add(call_id)
                self.told.update(marks)
            return
        if self.written and (asked := self._asked_written(message)) is not None:
            if not asked:  # the node wrote the answer too: no tool ran
                self.told.update(marks)
                return
            yield from asked
        if self.held and not orphan and str(message.tool_call_id) not in self.asked:
            self.results_held.setdefault(key, message)  # its call is held: told after it
            return
        if self.call is not None and self.stand_in == call_id:  # a request made for the call
            yield from self._end(self._final(self.call))  # ended before its result: told so
        self.told.update(marks)
        self.results = True
        self.waiting.discard(str(message.tool_call_id))
        self.requests.tasks.pop(str(message.tool_call_id), None)
        self.requests.returned.pop(str(message.tool_call_id), None)
        yield _result(message)

    def _asked_written(self, message: Any) -> tuple[AgentEvent, ...] | None:
        """For a result answering a tool call a node wrote: ``(call,)`` when a tool ran it (a
        tool body started for it, or ``ToolNode`` answered a name it lacks), told now; ``()``
        when the node wrote the answer too; ``None`` for another result. (``call`` is the
        call's events: its ``ToolCall`` and the ``Error`` telling a repair of its arguments.)"""
        call_id = str(message.tool_call_id)
        call = self.written.pop(call_id, None)
        if call is None:
            return None
        if call_id in self.requests.parents or _error_type(message.content, message.name) == (
            "tool_not_found"
        ):
            self.asked.add(call_id)
            return call
        return ()


_CLAIMED: OrderedDict[tuple[str, ...], None] = OrderedDict()
"""The namespaces of graphs run inside another graph's node and streamed through this adapter
there: each is that run's, not the outer one's (``_Reader._claimed``). Task ids make each
unique; the oldest are forgotten past ``_CLAIMS``."""
_CLAIMS = 4096


def _left_open(events: list[AgentEvent], was_open: bool) -> bool:
    """Whether a call is still open after ``events`` (a call was open before them when
    ``was_open``): the last call event among them is a start, or there is none."""
    last = next((e for e in reversed(events) if isinstance(e, (LLMCallStart, LLMCallEnd))), None)
    return isinstance(last, LLMCallStart) or (last is None and was_open)


def _inside(requests: _Requests, message: Any) -> str | bool:
    """The tool call whose body ``message`` was made in (``""``: none, the run's own), read
    from the callbacks' notes; ``False`` when they have none."""
    kind = type(message).__name__
    if kind == "ToolMessage":
        found = requests.parents.get(str(message.tool_call_id), False)
        return found if found is not None else ""
    if kind == "AIMessageChunk":
        run = requests.owners.get(id(message))
    elif kind == "AIMessage":
        run = next((r for r, final in list(requests.ended.items()) if final is message), None)
    else:
        return False
    return False if run is None else requests.within.get(run, "")


def _base() -> tuple[str, ...]:
    """The namespace a graph streamed now runs in: inside another graph's node (a tool body),
    LangGraph's config, current there, names that node's checkpoint path."""
    try:
        from langchain_core.runnables.config import var_child_runnable_config
    except ImportError:  # pragma: no cover - LangGraph depends on it
        return ()
    config = var_child_runnable_config.get()
    configurable = config.get("configurable") if isinstance(config, dict) else None
    path = configurable.get("checkpoint_ns") if isinstance(configurable, dict) else None
    return tuple(path.split("|")) if isinstance(path, str) and path else ()


def _namespace(meta: Any) -> tuple[str, ...]:
    """The graph namespace a model call's metadata names (its checkpoint path, minus the node
    itself), as LangGraph's ``messages`` stream gives it."""
    path = meta.get("langgraph_checkpoint_ns") if isinstance(meta, dict) else None
    return tuple(path.split("|")[:-1]) if isinstance(path, str) and path else ()


def _path(namespace: Any) -> str:
    """A namespace's node path (``("worker:<task id>",)`` is ``worker``); root is ``""``."""
    if not isinstance(namespace, tuple):
        return ""
    return "/".join(str(part).split(":", 1)[0] for part in namespace)


def _mcp_servers(graph: Any, seen: set[int]) -> dict[str, McpServer]:
    """The MCP servers of the tools of ``graph``'s tool nodes (and its sub-graphs'), by tool
    name: the tools LangChain's MCP adapters made (``load_mcp_tools``,
    ``MultiServerMCPClient.get_tools``), whose body names the server it calls."""
    out: dict[str, McpServer] = {}
    nodes = _attribute(graph, "nodes")
    if id(graph) in seen or not isinstance(nodes, dict):
        return out
    seen.add(id(graph))
    for node in nodes.values():
        bound = _attribute(node, "bound")
        tools = _attribute(bound, "tools_by_name")
        if isinstance(tools, dict):
            for name, tool in tools.items():
                server = _mcp_server(tool)
                if isinstance(name, str) and server is not None:
                    out.setdefault(name, server)
        elif bound is not None:
            for name, server in _mcp_servers(bound, seen).items():
                out.setdefault(name, server)
    return out


def _mcp_server(tool: Any) -> McpServer | None:
    """The server of a tool of LangChain's MCP adapters (``None``: another tool): the name it
    was loaded with (the ``MultiServerMCPClient``'s key) and, when the tool calls one held
    session, what that session tells. The adapters keep both only in the tool's body (its
    closure), read by name; a closure of another shape reads as an unnamed server."""
    body = _attribute(tool, "coroutine")
    if _attribute(body, "__module__") != "langchain_mcp_adapters.tools":
        return None
    names = _attribute(_attribute(body, "__code__"), "co_freevars")
    cells = _attribute(body, "__closure__")
    found: dict[str, Any] = {}
    if isinstance(names, tuple) and isinstance(cells, tuple):
        for name, cell in zip(names, cells, strict=False):
            with suppress(ValueError):  # an empty cell
                found[name] = cell.cell_contents
    return server_of(found.get("session"), found.get("server_name"))


def _attribute(value: Any, name: str) -> Any:
    try:
        return getattr(value, name, None)
    except Exception:  # a property that raises
        return None


def _scoped(config: Any, requests: _Requests, servers: dict[str, McpServer]) -> Any:
    """``config`` with the handler that scopes each tool call (the caller's callbacks kept),
    and notes for ``requests`` which call each body runs inside and what graph it runs;
    ``servers``: the MCP server of each MCP tool, by name."""
    from langchain_core.callbacks import BaseCallbackHandler

    class ToolScopes(BaseCallbackHandler):
        run_inline = True  # in the tool's own context, not on an executor's thread
        raise_error = False
        ignore_llm = ignore_chat_model = ignore_retriever = ignore_retry = True
        ignore_custom_event = True  # tools are "agent" events: never ignore_agent

        def __init__(self) -> None:
            self.scopes = OpenScopes()
            self.bodies: dict[Any, tuple[str, Any]] = {}  # tool run_id -> (call id, token)

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            name = (serialized or {}).get("name") if isinstance(serialized, dict) else None
            run, call_id = kwargs.get("run_id"), kwargs.get("tool_call_id")
            inputs = kwargs.get("inputs")
            if kwargs.get("parent_run_id") in self.scopes or (
                not call_id and requests.inside.get() is not None
            ):  # a tool a tool's body invokes itself, no model's call: an inner tool (its
                # parent that tool, whatever id it carries: one invoked with a tool call of the
                # body's making; or, with no id, a runnable the body runs)
                self.scopes.enter_inner(
                    run, name, inputs if isinstance(inputs, dict) else input_str,
                    mcp=servers.get(name) if isinstance(name, str) else None,
                )  # fmt: skip
                return
            if isinstance(call_id, str) and call_id:  # a graph's tool inside another's body
                requests.ahead(requests.inside.get())
            # the arguments the tool runs with (LangChain's, injected ones left out): a
            # ``wrap_tool_call`` middleware may have changed the model's (a reviewer's edit)
            self.scopes.enter(
                run, call_id, name, mcp=servers.get(name) if isinstance(name, str) else None,
                called_with=inputs if isinstance(inputs, dict) else None,
            )  # fmt: skip
            if isinstance(call_id, str) and call_id:
                requests.parents[call_id] = requests.inside.get()
                requests.tasks[call_id] = _task()
                self.bodies[run] = (call_id, requests.inside.set(call_id))

        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            run = kwargs.get("run_id")
            body = self.bodies.get(run)
            if body is not None and body[1] is not None and type(output).__name__ == "ToolMessage":
                requests.returned[body[0]] = output  # told if the graph fails before it does
            self._leave(run, None, output)

        def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
            # LangGraph's own control flow (``interrupt()`` pausing the run, a ``Command`` to
            # the parent graph) leaves the body cut short, not failed
            bubbles = any(k.__name__ == "GraphBubbleUp" for k in type(error).__mro__)
            self._leave(kwargs.get("run_id"), None if bubbles else error)

        def _leave(self, run: Any, error: BaseException | None = None, output: Any = None) -> None:
            if type(output).__name__ == "ToolMessage":  # (an inner tool's result, if it is one)
                failed = getattr(output, "status", None) == "error"
                self.scopes.exit(run, error, getattr(output, "content", None), failed)
            else:
                self.scopes.exit(run, error, output)
            body = self.bodies.pop(run, None)
            if body is not None:
                with suppress(ValueError):  # left in another context than it was entered in
                    requests.inside.reset(body[1])

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           parent_run_id: Any = None, **kwargs: Any) -> None:  # fmt: skip
            if type(inputs) is list and len(inputs) == 1:  # a task running one tool call
                call = inputs[0]  # (``create_agent``'s tools node, sent each call alone)
                if isinstance(call, dict) and call.get("type") == "tool_call" and call.get("id"):
                    requests.tool_tasks[run_id] = str(call["id"])
            body = self.bodies.get(parent_run_id)  # a graph (a runnable) a tool body runs
            name = kwargs.get("name")
            if body is not None and body[1] is not None and isinstance(name, str) and name:
                requests.names.setdefault(body[0], name)
                self.bodies[run_id] = (body[0], None)
                if _base() in _CLAIMED:  # the body streams it through this adapter
                    requests.own.add(body[0])

        def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            requests.tool_tasks.pop(run_id, None)
            body = self.bodies.get(run_id)
            if body is not None and body[1] is None:
                del self.bodies[run_id]
                requests.errors.setdefault(body[0], error)

        def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
            requests.tool_tasks.pop(run_id, None)
            body = self.bodies.get(run_id)
            if body is not None and body[1] is None:
                del self.bodies[run_id]

    return _with_handler(config, ToolScopes())


def _task() -> tuple[str, ...]:
    """The checkpoint path of the task running now (a tool body's: its node's)."""
    return _base()


def _messages(update: dict[str, Any]) -> Iterator[Any]:
    """The messages of an ``updates`` item: each node's state's ``messages``, or what a task
    of the functional API (``@task``, ``@entrypoint``) returned, a message or a list of them
    (its update is its return value)."""
    for state in update.values():
        if isinstance(state, dict):
            messages = state.get("messages", ())
            yield from messages if isinstance(messages, (list, tuple)) else (messages,)
        elif isinstance(state, (list, tuple)):
            yield from (m for m in state if type(m).__name__ in _RETURNED)
        elif type(state).__name__ in _RETURNED:
            yield state


def _in_hook(meta: Any) -> bool:
    """Whether a request was made in a hook node a prebuilt agent runs around its model node
    (``create_react_agent``'s ``pre_model_hook`` / ``post_model_hook``, ``create_agent``'s
    middleware ``before_model`` ... nodes): the hook's own request (a summary, a check of
    the answer) is a side call, not the agent's."""
    node = meta.get("langgraph_node") if isinstance(meta, dict) else None
    return isinstance(node, str) and (node in _HOOK_NODES or node.endswith(_HOOK_SUFFIXES))


def _start(
    meta: Any, messages: tuple[Any, ...] | None, side: bool = False, stand_in: str | None = None
) -> LLMCallStart:
    """The call's start (a ``SideCallStart`` when ``side``, naming the tool call it does the
    work of when ``stand_in``); its ``messages`` are LangChain's ``messages``, read when read."""
    meta = meta if isinstance(meta, dict) else {}
    params = {name: meta[key] for key, name in _PARAMS.items() if meta.get(key) is not None}
    model, provider = meta.get("ls_model_name"), meta.get("ls_provider")
    if messages is None:
        kind = SideCallStart if side else LLMCallStart
        start = kind(model=model, provider=provider, params={**params, "stream": True})
    else:
        start = call_start(model, provider, {**params, "stream": True}, langchain_messages,
                           messages, side=side)  # fmt: skip
    if stand_in is not None and isinstance(start, SideCallStart):
        start.tool_call_id = stand_in
    return start


def _from_model(message: Any) -> bool:
    """Whether a whole ``AIMessage`` the callbacks did not see came from a model: one called
    outside them (a raw SDK call turned into a message, a chat model given other callbacks).
    LangChain's chat models name their request on every message they return (``lc_run-`` id
    when the provider gave none), and providers report usage, the model or why it stopped;
    a message with any of those is a call (with what it has), one with none a node wrote."""
    if message.usage_metadata:
        return True
    meta = message.response_metadata
    if isinstance(meta, dict) and any(meta.get(key) for key in _MODEL_KEYS):
        return True
    return isinstance(message.id, str) and _RUN_ID.match(message.id) is not None


def _deltas(chunk: Any, call: _Call) -> Iterator[AgentEvent]:
    call.read += 1
    content = chunk.content
    if isinstance(content, str):
        if content:
            yield TextDelta(text=content)
    else:
        for block in content:
            if isinstance(block, str):
                yield TextDelta(text=block)
            elif isinstance(block, dict):
                kind = block.get("type")
                text = block.get("text") or block.get("reasoning") or block.get("thinking")
                if text and kind == "text":
                    yield TextDelta(text=text)
                elif text and kind in ("reasoning", "thinking"):
                    yield ReasoningDelta(text=text)
    reasoning = chunk.additional_kwargs.get("reasoning_content")
    if reasoning and isinstance(reasoning, str):
        yield ReasoningDelta(text=reasoning)
    for part in getattr(chunk, "tool_call_chunks", None) or ():
        index = part.get("index") or 0
        slot = call.tools.setdefault(index, [None, "", []])
        slot[0] = part.get("id") or slot[0]
        slot[1] += part.get("name") or ""
        slot[2].append(part.get("args") or "")


def _end(call: _Call, message: Any, spent: Any = None) -> Iterator[AgentEvent]:
    """The call's end: the tool calls ``message`` asks for (what the graph acts on), the usage
    and response details of ``spent`` (the request's own final message, when the callbacks saw
    it: a node that replaced the model's answer does not unspend its tokens), else of
    ``message``."""
    if message is not None:
        for tool in message.tool_calls:
            yield from tool_call(tool.get("id"), tool.get("name"), tool.get("args"))
    else:
        for call_id, name, parts in call.tools.values():
            yield ToolCall(id=call_id, function=FunctionCall(name or None, joined("".join(parts))))
    meta = (
        getattr(spent, "response_metadata", None)
        or getattr(message, "response_metadata", None)
        or {}
    )
    model = meta.get("model_name") or meta.get("model")
    usage = getattr(spent, "usage_metadata", None) or getattr(message, "usage_metadata", None)
    if usage:
        read = (usage.get("input_token_details") or {}).get("cache_read")
        made = (usage.get("input_token_details") or {}).get("cache_creation")
        thought = (usage.get("output_token_details") or {}).get("reasoning")
        yield Usage(
            input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
            total_tokens=usage.get("total_tokens"), cache_read_tokens=read,
            cache_creation_tokens=made, reasoning_tokens=thought, model=model,
        )  # fmt: skip
    finish = meta.get("finish_reason") or meta.get("stop_reason")
    done = {"model": model, "finish_reason": finish, "response_id": meta.get("id")}
    served = _served(spent if spent is not None else message)
    yield ServerToolCallsEnd(**done, calls=served) if served else LLMCallEnd(**done)


def _served(message: Any) -> tuple[ServerToolCall, ...]:
    """The tools the provider ran inside the response ``message`` (module doc): only a message
    of content blocks has them."""
    if not isinstance(getattr(message, "content", None), list):
        return ()
    try:
        return langchain_server_calls(message.content_blocks)
    except Exception:  # a message LangChain cannot translate: no such call read
        return ()


def _result(message: Any) -> ToolResult:
    call_id, content = str(message.tool_call_id), message.content
    if message.status == "error":
        kind = "approval_rejected" if _rejected(message) else _error_type(content, message.name)
        return failed_result(call_id, content, message.name, kind)
    return ToolResult(tool_call_id=call_id, content=content, name=message.name)


def _rejected(message: Any) -> bool:
    """Whether an error result is a human's refusal of the call, which never ran: LangChain's
    ``HumanInTheLoopMiddleware`` marks the message it answers a rejected call with
    (``additional_kwargs``: ``lc_source`` its decision's, ``lc_data`` the decision)."""
    extra = getattr(message, "additional_kwargs", None)
    if not isinstance(extra, dict) or extra.get("lc_source") != _HITL_DECISION:
        return False
    data = extra.get("lc_data")
    return isinstance(data, dict) and data.get("decision") == "reject"


def _error_type(content: Any, name: Any) -> str:
    """The exception class a ``ToolNode`` error message names, when it is LangGraph's own
    template (``handle_tool_errors=True``: ``Error: ToolFailure('...')`` and a fixed last line);
    ``tool_not_found`` for its answer to a tool name the model made up (``Error: <name> is not
    a valid tool, try one of [...].``, named for that call); ``tool_error`` for a message of
    the caller's own."""
    if (
        isinstance(content, str)
        and isinstance(name, str)
        and content.startswith(f"Error: {name}{_NOT_A_TOOL}")
        and content.endswith("].")
    ):
        return "tool_not_found"
    if isinstance(content, str) and content.endswith(_TEMPLATE_END):
        found = _TEMPLATE_ERROR.match(content)
        if found is not None and found.group(1) not in _WRAPPERS:
            return found.group(1)
    return "tool_error"

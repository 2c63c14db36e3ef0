"""LlamaIndex: an agent workflow's ``handler.stream_events()`` as contract events.

``llama_index_events(agent, user_msg, ...)`` starts ``agent.run(user_msg=..., **run)`` (a
``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``, a multi-agent ``AgentWorkflow``, or a
``Workflow`` of one's own) and reads its stream by class name (nothing of LlamaIndex is
imported here). The model calls its steps make that no event below tells (a workflow's own
steps calling their LLM, an agent's memory asking one) are read from LlamaIndex's
instrumentation dispatcher (``_llama_index_calls``): in a workflow of one's own as they come
(the adapter awaits whichever comes first, the workflow's next event or a call's, ``_merged``),
so each chat span lasts its request; in an agent's run each whole, between the stream's events.
The stream's events:

* ``AgentInput``: the agent is about to call its LLM: ``LLMCallStart`` (the LLM's
  ``metadata.model_name``, the provider its class talks to, its temperature and max tokens),
  after a ``StepBoundary`` when tool results came since the last call, and a ``PhaseMarker``
  when the answering agent changed (an ``AgentWorkflow`` handoff);
* ``AgentStream``: ``delta`` is ``TextDelta``, ``thinking_delta`` ``ReasoningDelta``. One
  while no call is open starts one: a request LlamaIndex makes with no ``AgentInput`` before
  it (an agent past its ``max_iterations`` with ``early_stopping_method="generate"`` asks its
  LLM once more for a final answer), as an ``AgentOutput`` with none before it does;
* ``AgentOutput``: the call ended: ``Usage`` and ``LLMCallEnd`` (response id, model and
  finish reason from the provider's payload). A call that streamed nothing (an agent made
  with ``streaming=False``: LlamaIndex writes no ``AgentStream`` then) tells its response's
  text and thinking blocks first, as ``TextDelta`` and ``ReasoningDelta``. One with
  ``retry_messages`` sends its answer back (a ``ReActAgent`` output its parser refused, an
  empty one): an ``Error`` of its step (``ValueError``, the parser's, else
  ``output_rejected``; its message, which quotes the answer, is content), the retried
  request the next step. The final one (no tool calls) of an agent or ``AgentWorkflow``
  given ``output_cls`` is followed by a request of its own, not streamed: LlamaIndex asks
  the LLM for the answer as that class (``as_structured_llm``): an ``LLMCallStart`` after
  its ``LLMCallEnd``, ended by ``AgentStreamStructuredOutput``, or failed
  (``structured_output_failed``) when the stream ends without one (LlamaIndex warns and goes
  on);
* ``ToolCall`` / ``ToolCallResult``: a tool starts / returns (``tool_output.is_error``: an
  error result; LlamaIndex catches a tool's exception and reports it this way, keeping it as
  ``exception``; a name the agent lacks is its fixed text, ``tool_not_found``). A tool that
  awaits ``ctx.wait_for_event`` (a human's answer) has its step run again from the start when
  the event comes, writing its ``ToolCall`` again: told once, its span lasting the wait.
* ``StopEvent``: the run's end. Its result is the last ``AgentOutput`` written, except after
  a tool made with ``return_direct=True``: LlamaIndex then answers with that tool's output,
  asking the LLM nothing more, in an ``AgentOutput`` of its own written nowhere else; its
  text is the run's answer (a ``MessageFinal``). So is the text of a last ``AgentOutput``
  the agent's ``finalize`` changed after it was written: a ``ReActAgent`` takes its answer
  out of the model's text (``Thought: ... Answer: ...``), which the call keeps.

**Usage.** LlamaIndex's agent events carry no token counts: only each provider's own payload,
as ``raw`` on ``AgentStream`` (a stream chunk) and ``AgentOutput`` (the response, or the last
chunk). The adapter reads it there (``_raw_usage``: OpenAI Chat Completions and Responses,
Anthropic, Gemini, Bedrock Converse, Ollama), the latest report of the call winning (the
providers' stream counts are cumulative). A provider whose payload carries no usage (or
LlamaIndex's mock LLMs) gives a chat span without token counts.

The handler goes to ``on_handler`` as soon as the run starts, so the caller keeps what the
workflow returns (``await handler`` after the stream) and its context; every stream event
goes to ``sink`` untouched. A run that fails (the LLM raised) ends its event stream quietly
and raises from the handler: the adapter awaits it, so the exception comes out as the same
object with the failed call still open. A run the application cancels with the handler's
``cancel_run()`` raises LlamaIndex's ``WorkflowCancelledByUser`` (the same object), after a
fatal ``Error`` of type ``CancelledError``: the run ends ``cancelled``. Stopping early or
cancelling cancels the workflow run (in the background: the consumer never waits for it).

**Tool scopes.** Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call,
through LlamaIndex's own seam: its instrumentation dispatcher opens a span around every
workflow step, in the step's own task, with the step's input event. A span handler on the
root dispatcher (added once; outside a traced run it does nothing) enters the scope when a
step starts on a ``ToolCall`` event (its ``tool_id`` and ``tool_name``) and leaves it when
that step ends, so the tool body, and a sub-agent run inside it, nest under its span. Only
the tool steps of a workflow a run streams are scoped: an agent a workflow step runs and
awaits is not the run's (its calls are not in the stream); traced with its own
``llama_index_events``, it is a run nested where it runs.

**MCP tools.** A tool ``McpToolSpec`` made (``llama-index-tools-mcp``: its body calls its
client's ``call_tool``) is scoped with its server (``McpServer``: what the client knows of it;
``BasicMCPClient`` opens a session per call, so its server's name and protocol version are
told when the call's session has initialised). The agent's tools (an ``AgentWorkflow``'s
agents' too) are read when the run starts: those a tool retriever picks later are not known as
MCP tools.

**Sub-agents.** An ``AgentWorkflow`` handoff is a ``handoff`` tool call and a
``PhaseMarker`` naming the next agent. A handoff the workflow refuses (its ``handoff`` tool
returns its own text, raising nothing) is a failed call: ``agent_not_found`` for an agent
the workflow lacks, ``handoff_not_allowed`` for one not in the agent's ``can_handoff_to``.
A workflow (an agent) a tool's body starts itself (``await expert.run(q)``) is that call's
work: ``Workflow.run``, set once on the class (``_nest_started``), records it as a run nested
under the tool's span (``agent_contract.scope.nested_run``), only in a tool body of a run
here and with a tracer claiming it; anywhere else ``run`` is LlamaIndex's. Its handler stays
the tool's: the adapter reads its events as they come and keeps them for the handler's
``stream_events()`` (``Tee``; its internal events too, for a tool asking for them with
``expose_internal=True``), and awaiting the handler waits for the nested run's end. Those
events the tool forwards into the run's stream (``ctx.write_event_to_stream``) were told in
the nested run: the run's reader passes over them. The span handler notes each workflow
agent whose steps run in the run's context, by name (``_NAMED``), so a call is told with its
own agent's LLM's model and parameters.
Needs ``llama-index-core`` (extra ``llama-index``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import suppress
from typing import Any

from agent_contract.agent.events import MessageFinal, StreamEvent
from agent_contract.events import (
    AgentEvent,
    Error,
    LLMCallEnd,
    LLMCallStart,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, nested_run
from agent_contract.sources import _conversation
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._endpoint import at_endpoint
from agent_contract.sources._failure import Error as ContentError
from agent_contract.sources._failure import cancelled_run, error_name, failed_result
from agent_contract.sources._history import call_start, llama_index_messages
from agent_contract.sources._llama_index_calls import (
    CALLS,
    PROVIDERS,
    Calls,
    blocks,
    finish_reason,
    llm_endpoint,
)
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import TAKEN
from agent_contract.sources._raw_usage import get, usage_from_raw
from agent_contract.sources._require import expect, require
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._stream import Sink, read_events, told
from agent_contract.sources._tee import Tee

__all__ = ["llama_index_events"]

_STOPPING: set[asyncio.Task[Any]] = set()  # cancellations in flight, kept until they finish


_HINT = "Make one with llama_index.core.agent.workflow.FunctionAgent(tools=..., llm=...)."


async def llama_index_events(
    agent: Any,
    user_msg: Any = None,
    *,
    sink: Sink | None = None,
    on_handler: Callable[[Any], object] | None = None,
    **run: Any,
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` on ``user_msg`` (``run`` goes to ``agent.run``), yielding its events."""
    require("llama_index.core")
    require("llama_index_instrumentation", "get_dispatcher")
    expect(
        agent, "llama_index_events", "a LlamaIndex agent workflow", "run", "add_step", hint=_HINT
    )
    # before the framework makes any request (read once the agent is known to be one); the
    # session its memory keeps the chat under
    framework_started(__name__, _conversation.id_of(run.get("memory")))
    _install_scopes()
    handler, named, calls = _launch(agent, lambda: agent.run(user_msg=user_msg, **run))
    calls.live = not calls.side  # a workflow of one's own: its calls told as they come
    if on_handler is not None:
        on_handler(handler)
    async for out in _events_of(agent, (named, calls), handler, handler.stream_events(),
                                lambda: handler, sink, own=True):  # fmt: skip
        yield out


def _launch(agent: Any, start: Callable[[], Any]) -> tuple[Any, dict[str, Any], Calls]:
    """``start()`` (the call of ``agent.run``) with what the workflow's tasks, made there, copy
    from the context: the MCP servers of its tools, the workflows streamed, the agents it
    names, the model calls its steps make (``_llama_index_calls``: an agent's are side
    calls); never a tool body's (``_IN_BODY``). Its handler, the agents noted by name and
    the calls."""
    token = _SERVERS.set(_mcp_servers(agent))
    own = _STREAMED.set((*_STREAMED.get(), agent))
    named: dict[str, Any] = {}
    noting = _NAMED.set(named)
    body = _IN_BODY.set(False)
    calls = Calls(agent, side=hasattr(agent, "take_step") or bool(_agents(agent)))
    calling = CALLS.set(calls)
    try:
        return start(), named, calls
    finally:
        CALLS.reset(calling)
        _IN_BODY.reset(body)
        _NAMED.reset(noting)
        _STREAMED.reset(own)
        _SERVERS.reset(token)


async def _events_of(
    agent: Any,
    launched: tuple[dict[str, Any], Calls],
    handler: Any,
    items: AsyncIterator[Any],
    finished: Callable[[], Awaitable[Any]],
    sink: Sink | None,
    *,
    own: bool,
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """The events of the run ``handler`` handles, read from its stream ``items``; awaits
    ``finished()`` after them (a failed run ends its stream quietly: its exception comes out
    there). ``own``: the run is this stream's, cancelled when the stream stops early.
    ``launched``: the agents noted by name and the calls of its steps (``_launch``)."""
    reader = _Reader(agent, *launched)
    merged = _merged(items, launched[1]) if launched[1].live else None
    if merged is not None and sink is not None:
        sink = _sunk(sink)
    try:
        async for out in read_events(items if merged is None else merged, reader.feed, sink):
            yield out
        for out in told(reader.finish):
            yield out
        await finished()
    except Exception as error:
        if type(error).__name__ == "WorkflowCancelledByUser":  # handler.cancel_run(): told
            yield cancelled_run("cancel_run()")
        raise
    finally:
        if own and not handler.is_done():
            stopping = asyncio.ensure_future(handler.cancel_run())
            _STOPPING.add(stopping)
            stopping.add_done_callback(_STOPPING.discard)
        if merged is not None:  # its read of the stream, if one is pending, cancelled
            await merged.aclose()


_HEARD = object()
"""An item of ``_merged``: the calls no event tells have told something (``Calls.told``)."""


async def _merged(items: AsyncIterator[Any], calls: Calls) -> AsyncGenerator[Any, None]:
    """The run's stream ``items``, with ``_HEARD`` between its events whenever its steps'
    model calls told something (``_llama_index_calls``): whichever comes first, so a call is
    told as it starts, streams and ends, in order with the workflow's own events. The
    dispatcher may tell from a worker thread (a sync ``llm.chat``): it wakes the loop."""
    loop, heard = asyncio.get_running_loop(), asyncio.Event()

    def wake() -> None:
        try:
            if asyncio.get_running_loop() is loop:
                heard.set()
                return
        except RuntimeError:  # no loop on this thread: a worker's
            pass
        with suppress(RuntimeError):  # the loop closed: the run is over
            loop.call_soon_threadsafe(heard.set)

    calls.wake = wake
    iterator = items.__aiter__()
    following: asyncio.Future[Any] | None = None
    waiting: asyncio.Future[Any] | None = None
    try:
        while True:
            if calls.told:
                heard.clear()
                yield _HEARD
                continue
            if following is None:
                following = asyncio.ensure_future(iterator.__anext__())
            if waiting is None:
                waiting = asyncio.ensure_future(heard.wait())
            await asyncio.wait((following, waiting), return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                waiting = None
                heard.clear()
            if following.done():
                done, following = following, None
                try:
                    item = done.result()
                except StopAsyncIteration:
                    return
                yield item
    finally:
        calls.wake = None
        for pending in (following, waiting):
            if pending is not None and not pending.done():
                pending.cancel()


def _sunk(sink: Sink) -> Sink:
    """``sink`` given the run's stream's items only (never ``_merged``'s ``_HEARD``)."""

    def to(item: Any) -> object:
        return None if item is _HEARD else sink(item)

    return to


_scopes_installed = False
_SERVERS: contextvars.ContextVar[dict[str, McpServer] | None] = contextvars.ContextVar(
    "agent_contract_llama_index_mcp", default=None
)
"""The MCP servers of the run's tools, by tool name (what its workflow's tasks see)."""
_STREAMED: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "agent_contract_llama_index_streamed", default=()
)
"""The workflows streamed through ``llama_index_events`` that a context runs in: a tool step
of another (an agent a workflow step runs and awaits) is not one of the run's calls."""
_NAMED: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "agent_contract_llama_index_named", default=None
)
"""The workflow agents whose steps ran in a run's context (its own, and agents its steps run:
their events may be forwarded into its stream), by name, the first of a name kept."""
_IN_BODY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "agent_contract_llama_index_tool_body", default=False
)
"""Set while a tool body of a run here runs (its step's scope is entered): a workflow started
there is that call's work, a nested run (``_nest_started``)."""
_NESTING: set[asyncio.Future[Any]] = set()  # nested runs being read, kept until they end
_MCP_TOOL = "McpToolSpec._create_tool_fn.<locals>.async_tool_fn"


def _note_agent(context: Any) -> None:
    """Note the workflow agent a step's ``Context`` runs (module doc), in a run's context."""
    named = _NAMED.get()
    if named is None or context is None:
        return
    workflow = getattr(getattr(context, "_face", None), "_workflow", None)
    name = getattr(workflow, "name", None)
    if isinstance(name, str) and name not in named and hasattr(workflow, "llm"):
        named[name] = workflow


def _streamed(context: Any) -> bool:
    """Whether the workflow a step's ``Context`` belongs to is one a run streams: ``False``
    only when LlamaIndex names it (``llama-index-workflows`` 2.x) and it is another."""
    workflow = getattr(getattr(context, "_face", None), "_workflow", None)
    return workflow is None or any(workflow is one for one in _STREAMED.get())


def _mcp_servers(agent: Any) -> dict[str, McpServer]:
    """The MCP servers of the tools ``McpToolSpec`` made among the agent's (and an
    ``AgentWorkflow``'s agents') tools, by tool name. Never raises."""
    out: dict[str, McpServer] = {}
    try:
        for one in [agent, *_agents(agent).values()]:
            tools = getattr(one, "tools", None)
            for tool in tools if isinstance(tools, (list, tuple)) else ():
                spec = _mcp_spec(getattr(tool, "async_fn", None))
                name = getattr(getattr(tool, "metadata", None), "name", None)
                if spec is not None and isinstance(name, str):
                    out[name] = server_of(getattr(spec, "client", None))
    except Exception:  # an agent of another shape: its tools are plain ones
        return out
    return out


def _mcp_spec(body: Any) -> Any:
    """The ``McpToolSpec`` whose tool body ``body`` is (None: another function)."""
    if getattr(body, "__qualname__", None) != _MCP_TOOL:
        return None
    if not str(getattr(body, "__module__", "")).startswith("llama_index.tools.mcp"):
        return None
    for cell in getattr(body, "__closure__", None) or ():
        value = cell.cell_contents
        if type(value).__name__ == "McpToolSpec":
            return value
    return None


def _install_scopes() -> None:
    """Add the span handler scoping each tool-call step (module doc) to the root dispatcher,
    and the event handler keeping the model calls of a run's steps (``_llama_index_calls``)."""
    global _scopes_installed
    if _scopes_installed:
        return
    _scopes_installed = True
    from llama_index_instrumentation import get_dispatcher
    from llama_index_instrumentation.event_handlers import BaseEventHandler
    from llama_index_instrumentation.span_handlers import BaseSpanHandler

    scopes = OpenScopes()
    bodies: dict[str, contextvars.Token[bool]] = {}

    def leave(id_: str, error: Any = None) -> None:
        calls = CALLS.get()
        if calls is not None:
            calls.left(id_, error)
        scopes.exit(id_)
        token = bodies.pop(id_, None)
        if token is not None:
            with suppress(ValueError):  # left in another context: its flag goes with it
                _IN_BODY.reset(token)

    class ToolScopes(BaseSpanHandler[Any]):
        def new_span(self, id_: str, bound_args: Any, *args: Any, **kwargs: Any) -> Any:
            arguments = bound_args.arguments
            calls = CALLS.get()
            if calls is not None:  # in a run: its spans' parents, to place its model calls
                workflow = getattr(getattr(arguments.get("ctx"), "_face", None), "_workflow", None)
                calls.spanned(id_, kwargs.get("parent_span_id"), kwargs.get("instance"), workflow)
            _note_agent(arguments.get("ctx"))
            for value in arguments.values():
                if type(value).__name__ == "ToolCall" and _streamed(arguments.get("ctx")):
                    name = value.tool_name
                    mcp = (_SERVERS.get() or {}).get(name) if isinstance(name, str) else None
                    scopes.enter(id_, getattr(value, "tool_id", None), name, mcp=mcp)
                    bodies[id_] = _IN_BODY.set(True)
                    break
            return None  # nothing for the dispatcher to keep

        def prepare_to_exit_span(self, id_: str, *args: Any, **kwargs: Any) -> Any:
            leave(id_)
            return None

        def prepare_to_drop_span(self, id_: str, *args: Any, **kwargs: Any) -> Any:
            leave(id_, kwargs.get("err"))
            return None

    class ModelCalls(BaseEventHandler):
        def handle(self, event: Any, **kwargs: Any) -> Any:
            calls = CALLS.get()
            if calls is not None and not _IN_BODY.get():  # a tool's own call is its own
                calls.event(event)

    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(ToolScopes())
    dispatcher.add_event_handler(ModelCalls())
    _nest_started()


def _nest_started() -> None:
    """Make ``Workflow.run`` record a workflow (an agent) a tool body starts itself (``await
    expert.run(q)``) as a run nested under the tool's span: only in a tool body of a run here
    (``_IN_BODY``) with a tracer claiming it (``nested_run``). Its handler stays the
    application's: its events are read as they come and kept for its ``stream_events()``
    (``Tee``, the internal ones too), and awaiting it waits for the nested run's end. Set
    once, on the class; anywhere else ``run`` is LlamaIndex's."""
    Workflow = require("llama_index.core.workflow", "Workflow")
    original = Workflow.run
    if getattr(original, "_agent_contract_nesting", False):
        return

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _IN_BODY.get():
            return original(self, *args, **kwargs)
        wrap = nested_run(getattr(self, "name", None))
        if wrap is None:
            return original(self, *args, **kwargs)
        handler, named, calls = _launch(self, lambda: original(self, *args, **kwargs))
        with suppress(Exception):  # a handler of another shape: the run goes on untraced
            _nest(self, (named, calls), handler, wrap)
        return handler

    run._agent_contract_nesting = True  # type: ignore[attr-defined]
    Workflow.run = run


def _nest(agent: Any, launched: tuple[dict[str, Any], Calls], handler: Any, wrap: Any) -> None:
    """Record the run ``handler`` handles through ``wrap`` (a nested run) in a task of the
    tool body's context, its events kept for the handler's own ``stream_events()``."""
    stream, finished = handler.stream_events, handler.stop_event_result
    tee = Tee(stream(expose_internal=True))  # kept for a reader asking for them too

    async def copied(expose_internal: bool = False) -> AsyncIterator[Any]:
        async for event in tee.copy():
            if not expose_internal and _internal(event):  # as LlamaIndex's own filter
                continue
            TAKEN.add(event)  # forwarded into the run's stream, it is passed over there
            yield event

    # wrapped now, before the workflow's steps run: a tool body of its own starting before the
    # nested run read its call finds the run (its span opens early there)
    recorded = wrap(_events_of(agent, launched, handler, tee.read(), finished, None, own=False))

    async def record() -> None:
        try:
            async for _ in recorded:
                pass
        except Exception:  # the workflow's own failure: recorded, and the application's
            pass

    reading = asyncio.ensure_future(record())
    _NESTING.add(reading)
    reading.add_done_callback(_NESTING.discard)
    watching = asyncio.ensure_future(finished())
    _NESTING.add(watching)
    watching.add_done_callback(_NESTING.discard)

    def ended(watched: asyncio.Future[Any]) -> None:
        if watched.cancelled():  # torn down (its caller's run stopped): its stream never ends
            reading.cancel()
        else:
            watched.exception()  # (the application's own await raises it)

    watching.add_done_callback(ended)

    async def stop_event_result() -> Any:
        try:
            result = await finished()
        except asyncio.CancelledError:  # the awaiting body is cancelled: it never waits
            raise
        except BaseException:
            await asyncio.wait((reading,))  # the nested run ended with the failure
            raise
        await asyncio.wait((reading,))  # the nested run has ended (never cancelled here)
        return result

    handler.stream_events = copied
    handler.stop_event_result = stop_event_result


def _internal(event: Any) -> bool:
    """Whether ``event`` is one of the workflow's internal events (``InternalDispatchEvent``:
    its steps' state, its queues), which ``stream_events()`` gives only when asked."""
    return any(c.__name__ == "InternalDispatchEvent" for c in type(event).__mro__)


# A workflow agent's output for a call to a tool it lacks (``BaseWorkflowAgent``,
# ``AgentWorkflow``): it runs nothing and keeps no exception.
_NOT_FOUND = "Tool {} not found. Please select a tool that is available."
# The starts of the texts an ``AgentWorkflow``'s ``handoff`` tool returns for a handoff it
# refuses (it raises nothing): to an agent the workflow lacks, to one not in ``can_handoff_to``.
_HANDOFFS_REFUSED = (
    ("Agent {} not found. Please select a valid agent to hand off to.", "agent_not_found"),
    ("Agent {} cannot hand off to ", "handoff_not_allowed"),
)
# The start of the text a ``ReActAgent`` sends back for an answer its output parser refused
# with the ``ValueError`` the agent catches.
_UNPARSED = "Error while parsing the output: "
# The step of a call the run's stream tells (``_Reader.at``).
_STREAMED_CALL = object()
# The events an agent tells its model requests with (``current_agent_name`` names it).
_AGENTS_SAY = frozenset({"AgentInput", "AgentStream", "AgentOutput"})
# The failure of a request for the structured output that gave none (LlamaIndex swallows the
# exception, with a warning: no class is known).
_NO_STRUCTURED_OUTPUT = "structured_output_failed"


class _Reader:
    """One run's state: the open LLM call and its latest usage, the step, the agent."""

    def __init__(self, agent: Any, named: dict[str, Any], calls: Calls) -> None:
        self.agent = agent
        self.named = named  # agents by name, as their steps ran
        self.calls = calls  # the model calls of its steps no event tells
        self.began = False  # a call was told
        self.at: Any = None  # the last told call's workflow step (``_aside``)
        self.calling = False
        self.usage: Usage | None = None
        self.last_output: Any = None
        self.current: str | None = None  # the answering agent's name
        self.results = False  # tool results since the last call: the next call is a new step
        self.step = 0
        # The tool calls told whose result has not come: a step that waited for an event
        # (``ctx.wait_for_event``, a human's answer) runs again from its start and writes its
        # ``ToolCall`` again; it is the same call.
        self.running: set[Any] = set()
        self.structuring = False  # the open call is the request for the structured output
        self.streamed = False  # the open call streamed text or thinking (``AgentStream``)
        self.said: str | None = None  # the last output's text as it was written
        self.kept: set[str] = set()  # the calls no event tells that were told open (``_aside``)

    def feed(self, event: Any) -> Iterator[AgentEvent | StreamEvent]:
        if event is _HEARD:  # the calls no event tells told something (``_merged``)
            if not self.calling:  # told between the run's own calls
                yield from self._aside(self.calls.drain())
            return
        if TAKEN and TAKEN.take(event):  # a nested run's event, forwarded: told there
            return
        if self.calls.told and not self.calling:  # told between the run's own calls
            yield from self._aside(self.calls.drain())
        kind = type(event).__name__
        if kind in _AGENTS_SAY:
            self.calls.heard(getattr(event, "current_agent_name", None))
        if kind == "AgentStream":
            if not self.calling:  # a request with no input event (early stopping's: module doc)
                yield from self._start(event.current_agent_name)
            if event.delta:
                self.streamed = True
                yield TextDelta(text=event.delta)
            thinking = getattr(event, "thinking_delta", None)
            if thinking and isinstance(thinking, str):
                self.streamed = True
                yield ReasoningDelta(text=thinking)
            self._count(event.raw)
        elif kind == "AgentInput":
            yield from self._start(event.current_agent_name, getattr(event, "input", None))
        elif kind == "AgentOutput":
            if event is self.last_output and (self.structuring or not self.calling):
                return  # the same output written again (a run's final answer)
            if not self.calling:
                yield from self._start(event.current_agent_name)
            self.last_output = event
            said = getattr(getattr(event, "response", None), "content", None)
            self.said = said if isinstance(said, str) else None  # as the model said it
            if not self.streamed:  # not streamed (``streaming=False``): the response tells it
                yield from blocks(getattr(event, "response", None))
            yield from self._end(event.raw)
            retry = _sent_back(getattr(event, "retry_messages", None))
            if retry is not None:  # the answer was refused: its step failed, the retry is next
                yield retry
                self.results = True
            elif not getattr(event, "tool_calls", None) and self._restated(event):
                # the answer asked for again as the output class: a request of its own
                yield from self._start(event.current_agent_name, stream=False)
                self.structuring = True
        elif kind == "AgentStreamStructuredOutput":
            if self.structuring:
                yield from self._end(None)
        elif kind == "ToolCall":
            if event.tool_id and event.tool_id in self.running:
                return
            self.running.add(event.tool_id)
            yield from tool_call(event.tool_id, event.tool_name, event.tool_kwargs)
        elif kind == "ToolCallResult":
            self.results = True
            self.running.discard(event.tool_id)
            output = event.tool_output
            call_id, content = str(event.tool_id), getattr(output, "content", output)
            if getattr(output, "is_error", False) is True:
                error = getattr(output, "exception", None)
                kind = error_name(error) if isinstance(error, BaseException) else "tool_error"
                if content == _NOT_FOUND.format(event.tool_name):  # the agent's own outcome
                    kind = "tool_not_found"
                yield failed_result(call_id, content, event.tool_name, kind)
            elif (refused := _handoff_refused(event, content)) is not None:
                yield failed_result(call_id, content, event.tool_name, refused)
            else:
                yield ToolResult(tool_call_id=call_id, content=content, name=event.tool_name)
        elif kind == "StopEvent":
            result = getattr(event, "result", None)
            if type(result).__name__ == "AgentOutput":
                text = getattr(getattr(result, "response", None), "content", None)
                # a return_direct tool's output answered, or the agent's ``finalize`` took
                # the answer out of the model's text (a ReActAgent's): module doc
                if isinstance(text, str) and (result is not self.last_output or text != self.said):
                    yield MessageFinal(text=text)

    def _restated(self, output: Any) -> bool:
        """Whether the answer ``output`` gave is asked for again as a class: the run's (an
        ``AgentWorkflow``'s, taking precedence) or the answering agent's ``output_cls``; a
        ``structured_output_fn`` is the caller's own code, no request."""
        answering = _agent(self.agent, output.current_agent_name, self.named)
        return any(getattr(a, "output_cls", None) is not None for a in (self.agent, answering))

    def finish(self) -> Iterator[AgentEvent]:
        """The run's stream ended: a request for the structured output that gave none failed
        (LlamaIndex warns and goes on, ``structured_response`` left ``None``); the calls no
        event told that are left (``_aside``) are told."""
        if self.structuring:
            yield Error(message="no structured output", error_type=_NO_STRUCTURED_OUTPUT)
            yield from self._end(None)
        yield from self._aside(self.calls.close())

    def _aside(self, told: Iterable[tuple[Any, str, AgentEvent]]) -> Iterator[AgentEvent]:
        """The events of the calls no event tells (``_llama_index_calls``), as they came: side
        calls in an agent's run; in a workflow of one's own, the run's, the calls of one
        workflow step (``step``) one step, a step apart from the agent requests its stream
        tells; no step ends while one is open (calls of parallel steps share one)."""
        for step, call, event in told:
            if isinstance(event, LLMCallStart):
                if not self.calls.side:
                    if self.began and not self.kept and (self.results or step != self.at):
                        yield from self._next_step()
                    self.began, self.at = True, step
                self.kept.add(call)
            elif isinstance(event, LLMCallEnd):
                self.kept.discard(call)
            yield event

    def _next_step(self) -> Iterator[AgentEvent]:
        yield StepBoundary(index=self.step)
        self.step, self.results = self.step + 1, False

    def _start(
        self, name: Any, request: Any = None, *, stream: bool | None = None
    ) -> Iterator[AgentEvent]:
        if self.calling:  # a call that never reported its output
            yield from self._end(None)
        if (self.results or (self.began and self.at is not _STREAMED_CALL)) and not self.kept:
            yield from self._next_step()
        self.began, self.at = True, _STREAMED_CALL
        if isinstance(name, str) and name != self.current:
            if self.current is not None or _agents(self.agent):
                yield PhaseMarker(name=name)
            self.current = name
        self.calling, self.usage, self.streamed = True, None, False
        agent = _agent(self.agent, name, self.named)
        llm = getattr(agent, "llm", None)
        metadata = getattr(llm, "metadata", None)
        model = getattr(metadata, "model_name", None) or getattr(llm, "model", None)
        params: dict[str, Any] = {}
        for key in ("temperature", "max_tokens"):
            value = getattr(llm, key, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                params[key] = value
        params["stream"] = bool(getattr(agent, "streaming", True)) if stream is None else stream
        model = model if isinstance(model, str) and model != "unknown" else None
        provider = PROVIDERS.get(type(llm).__name__)
        start = (
            LLMCallStart(model=model, provider=provider, params=params)
            if request is None  # an output with no input event before it
            else call_start(model, provider, params, llama_index_messages, tuple(request))
        )
        yield at_endpoint(start, llm_endpoint(llm))

    def _count(self, raw: Any) -> None:
        usage = usage_from_raw(raw)
        if usage is not None:
            self.usage = usage

    def _end(self, raw: Any) -> Iterator[AgentEvent]:
        self._count(raw)
        self.calling = self.structuring = False
        if self.usage is not None:
            yield self.usage
            self.usage = None
        model = get(raw, "model")
        response_id = get(raw, "id")
        yield LLMCallEnd(
            model=model if isinstance(model, str) else None,
            finish_reason=finish_reason(raw),
            response_id=response_id if isinstance(response_id, str) else None,
        )


def _handoff_refused(event: Any, content: Any) -> str | None:
    """The failure a ``handoff`` call's result names when the workflow refused the handoff
    (``agent_not_found``, ``handoff_not_allowed``: its own texts), else ``None``."""
    if event.tool_name != "handoff" or not isinstance(content, str):
        return None
    to = (event.tool_kwargs or {}).get("to_agent")
    return next((kind for text, kind in _HANDOFFS_REFUSED
                 if content.startswith(text.format(to))), None)  # fmt: skip


def _sent_back(messages: Any) -> ContentError | None:
    """The answer an ``AgentOutput`` sends back (its ``retry_messages``: the answer, then the
    text asking for another) as an error of the step that gave it: ``ValueError`` for a
    ``ReActAgent`` output its parser refused, else ``output_rejected`` (an empty answer, an
    agent of one's own). The text is content: it quotes the answer."""
    if not isinstance(messages, list) or not messages:
        return None
    text = getattr(messages[-1], "content", None)
    text = text if isinstance(text, str) else ""
    kind = "ValueError" if text.startswith(_UNPARSED) else "output_rejected"
    return ContentError(message=text or kind, error_type=kind)


def _agents(agent: Any) -> dict[str, Any]:
    agents = getattr(agent, "agents", None)
    return agents if isinstance(agents, dict) else {}


def _agent(agent: Any, name: Any, named: dict[str, Any]) -> Any:
    """The agent ``name`` names: one of an ``AgentWorkflow``'s, else one whose steps ran in
    the run (an agent a tool runs, its events forwarded into the stream), else the run's."""
    if not isinstance(name, str):
        return agent
    found = _agents(agent).get(name)
    found = named.get(name) if found is None else found
    return agent if found is None else found

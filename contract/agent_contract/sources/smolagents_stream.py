"""smolagents: ``agent.run(task, stream=True)`` as contract events.

smolagents runs an agent as a synchronous generator; ``iterate_in_thread`` pulls it on a worker
thread, one item per event, so the event loop never blocks and the consumer's context (the
tool span while one tool runs) is current in the agent's code. Items are read by class name
(nothing of smolagents is imported here):

* smolagents' stream announces no model call, so the adapter hears each at the model: the
  agent's model gets its ``generate`` / ``generate_stream`` wrapped once (instance
  attributes, handing every call on unchanged), and a call made on the run's worker thread
  sends ``LLMCallStart`` (``model.model_id``, the provider the model class talks to, its
  completion kwargs, and the messages smolagents sends) into the stream at that moment,
  through ``iterate_in_thread``'s channel: the step waits until the consumer has taken it, so
  the chat span opens as the request starts, and a request refused before any output (a 429)
  fails its own span. A call made while the step's tools run (a managed agent inside a tool)
  is that agent's, not this run's. The call ends (``LLMCallEnd``) as its response does, heard
  there too: when ``generate`` returns (its text is a ``TextDelta``) or when the last
  ``ChatMessageStreamDelta`` of ``generate_stream`` is out (``stream_outputs=True``: each
  delta's content is a ``TextDelta``). So each chat span shows what its call produced: the
  words beside its tool calls, a CodeAgent's code, the answer of a ``final_answer`` call
  (its ``answer`` argument, told before the call's end);
* ``ToolCall`` / ``ToolOutput`` items are ``ToolCall`` / ``ToolResult`` by id (after their
  call's end: the tracer gives them to the call that ended last). The ``final_answer`` tool
  is the answer, not a call: told as its call's text, it is the run's answer (the last
  call's). A CodeAgent's answer is what its code computed, not model text: it is told as
  text once the code ran, after the call that wrote it, so the run's answer is that text
  and the call keeps its code. A tool that
  raises fails the whole step in smolagents (the other results of a parallel call are
  dropped): the call the error names gets an error ``ToolResult`` whose ``error_type`` is the
  tool's own exception (the ``__cause__`` of smolagents' ``AgentToolExecutionError``); a call
  whose result smolagents dropped gets none, so its span ends with the step, incomplete. A
  tool that returns an exception instead of raising it (smolagents hands the model its text)
  failed too: an error ``ToolResult`` of its class, the text unchanged (a tool declaring
  ``-> str`` has it turned to text by smolagents before any caller sees it: a success). A
  CodeAgent's code run is its ``python_interpreter`` call: its result is the step's
  observations (or its error);
* the ``ActionStep`` (or ``PlanningStep``) that ends a step gives the call's ``Usage``: from
  the provider's response in ``model_output_message.raw`` when it reports one (cache and
  reasoning tokens included, ``_raw_usage``), else smolagents' ``TokenUsage`` (input and
  output only); then a ``StepBoundary``. A step error with no tool to carry it (a model
  output that does not parse) becomes an ``Error`` event. A run that reaches ``max_steps``
  asks the model for a final answer, whose text is the run's answer; smolagents keeps that
  step in its memory (its usage, its ``AgentMaxStepsError``) but yields the step before it
  again: the step it kept is read instead, so the final call has its own usage, once, and
  its step fails with ``AgentMaxStepsError``;
* ``FinalAnswerStep`` ends the run (its output is the text when no step gave it).

A ``step_callbacks`` callback that raises ends the run with its exception before smolagents
yields the step it was handed: the adapter wraps the agent's callback registry once (an
instance attribute) and tells that step first, as if yielded (its call's usage, its end), so
the call keeps its tokens; the exception then ends the run, the same object.

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call. smolagents has no
tool-wrapping seam, but every tool and managed agent a ``ToolCallingAgent`` calls goes through
its ``execute_tool_call(name, arguments)``, on the thread (a copy of the step's context) that
runs the call, so the adapter wraps that method once on the agent, as an instance attribute
(outside a traced run it does nothing). It gets no call id: the name and arguments pick the
call. A ``CodeAgent``'s tools run inside its code: the code run is the one call, and each tool
its code calls (through smolagents' local executor, whose ``send_tools`` the adapter wraps once)
is an ``inner_tool`` of it, a span under its own with its arguments and result. A tool of an
MCP server (``MCPClient``'s, an mcpadapt ``MCPAdaptTool``) is scoped as one
(``McpServer``), its server unnamed: mcpadapt keeps no name for it.

A managed agent (``managed_agents=``) runs inside the manager's call, unstreamed
(``agent(task)`` calls its own ``run``), so no stream shows it. The adapter sets ``run`` on
each managed agent (once, as an instance attribute; at any depth): called for a plain answer
(no ``stream``, no ``return_full_result``) where a tracer claims a nested run
(``agent_contract.scope.nested_run``, inside the manager's call scope; a ``CodeAgent``'s code,
which smolagents runs on a thread of its own, in a copy of the pull's context, its
``python_interpreter`` call's span current: ``_code_in_context``), it runs the same task
with ``stream=True``, reads it as this adapter reads any run into that nested run (pulled on
a worker thread of its own, from a loop of its own on the calling thread, which smolagents'
calls never run a loop on), and returns
the final answer, as ``run`` does. Anywhere else it is smolagents' own ``run``.

Every smolagents item goes to ``sink`` untouched (the ``FinalAnswerStep`` last: its
``output`` is the run's answer). Stopping early or cancelling calls ``agent.interrupt()``;
the step in flight finishes on its thread and the run stops before the next. A run the
application stops with ``agent.interrupt()`` (a step callback, a tool, another thread) raises
smolagents' ``AgentError`` ("Agent interrupted."), the same object; before it the adapter
yields a fatal ``Error`` of type ``CancelledError``, so the run ends ``cancelled``. A model error
raises smolagents' ``AgentGenerationError`` (the provider's error as its ``__cause__``).
Needs ``smolagents`` (extra ``smolagents``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from agent_contract.events import (
    AgentEvent,
    FunctionCall,
    LLMCallEnd,
    StepBoundary,
    TextDelta,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, inner_tool, nested_run, tool_scope
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._endpoint import address_of, at_endpoint, client_endpoint
from agent_contract.sources._failure import Error as ContentError
from agent_contract.sources._failure import cancelled_run, error_name, failed_result
from agent_contract.sources._history import call_start, smolagents_messages
from agent_contract.sources._raw_usage import usage_from_raw
from agent_contract.sources._require import expect, require
from agent_contract.sources._stream import Sink, read_events
from agent_contract.sources._thread import Channel, iterate_in_thread

__all__ = ["smolagents_events"]

_PROVIDERS = {
    "OpenAIModel": "openai", "OpenAIServerModel": "openai", "AzureOpenAIModel": "azure.ai.openai",
    "AzureOpenAIServerModel": "azure.ai.openai", "AmazonBedrockModel": "aws.bedrock",
    "AmazonBedrockServerModel": "aws.bedrock", "InferenceClientModel": "huggingface",
    "TransformersModel": "transformers", "VLLMModel": "vllm", "MLXModel": "mlx",
}  # fmt: skip
_PRIVATE = frozenset({"api_key", "client", "client_kwargs", "headers", "extra_headers"})
_SIMPLE = (str, int, float, bool)
_HINT = "Make one with smolagents.ToolCallingAgent(tools=..., model=...) or CodeAgent(...)."


async def smolagents_events(
    agent: Any, task: str, *, sink: Sink | None = None, **run: Any
) -> AsyncIterator[AgentEvent]:
    """Run ``agent`` on ``task`` (``run`` goes to ``agent.run``), yielding its events."""
    framework_started(__name__)  # before the framework makes any request
    require("smolagents")
    expect(agent, "smolagents_events", "a smolagents agent", "run", "model", "tools", hint=_HINT)
    _scope_tools(agent)
    read = _read(agent, lambda: agent.run(task, stream=True, **run), sink)
    try:
        async for event in read:
            yield event
    finally:
        await read.aclose()


async def _read(
    agent: Any, open_items: Callable[[], Iterator[Any]], sink: Sink | None
) -> AsyncGenerator[AgentEvent, None]:
    """The events of the run ``open_items()`` starts, pulled on a worker thread, with the
    model requests its hooked model hears there (module doc)."""
    reader = _Reader(agent)
    _hook_model(getattr(agent, "model", None))
    channel = Channel()
    workers: list[int] = []

    def heard(message: _Request | _Response | _Unyielded) -> None:
        if isinstance(message, _Unyielded):  # this agent's own step, on this thread
            if message.agent is agent:
                channel.emit(message)
        elif not reader.tools:  # else a managed agent's call, inside one of the step's tools
            channel.emit(message)

    def start() -> Iterator[Any]:
        workers.append(threading.get_ident())  # this run's worker thread: its model calls
        _HEARD[workers[0]] = heard
        return open_items()

    items = iterate_in_thread(start, agent.interrupt, channel)
    try:
        async for event in read_events(items, reader.read, _agents_own(sink)):
            yield event
    except Exception as error:
        if _interrupted(agent, error):  # agent.interrupt() stopped it: told, then raised
            yield cancelled_run("interrupt()")
        raise
    finally:
        await items.aclose()
        for worker in workers:
            _HEARD.pop(worker, None)


def _code_in_context() -> None:
    """smolagents' local executor runs a CodeAgent's code on a thread of a
    ``ThreadPoolExecutor`` it makes for each code run (its time limit), which gets no context:
    the code's tools and managed agents ran outside the run (a tool's own spans a trace of
    their own, a managed agent no nested run). The executor module's ``ThreadPoolExecutor``
    becomes, once, one that runs what it is handed in a copy of the submitting thread's
    context, as ``asyncio.to_thread`` does; the time limit and everything else are
    smolagents' as before."""
    module = sys.modules.get("smolagents.local_python_executor")
    pool = getattr(module, "ThreadPoolExecutor", None)
    if not isinstance(pool, type) or getattr(pool, "_agent_contract_context", False):
        return

    class InContext(pool):  # type: ignore[misc, valid-type]
        _agent_contract_context = True

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)

    InContext.__name__ = InContext.__qualname__ = pool.__name__
    module.ThreadPoolExecutor = InContext  # type: ignore[union-attr]


def _agents_own(sink: Sink | None) -> Sink | None:
    """``sink`` given only smolagents' own items (not the requests and responses heard)."""
    if sink is None:
        return None

    def own(item: Any) -> None:
        if not isinstance(item, (_Request, _Response)):
            sink(item)

    return own


def _interrupted(agent: Any, error: Exception) -> bool:
    """smolagents raised its ``AgentError`` because ``agent.interrupt()`` was called (its
    switch, which each run resets, is on): a cancel of the run, not a failure in it."""
    return type(error).__name__ == "AgentError" and getattr(agent, "interrupt_switch", None) is True


def _server(model: Any) -> tuple[str, int | None] | None:
    """The server a smolagents model calls: a ``LiteLLMModel``'s ``api_base`` when given, else
    its SDK client's (an ``OpenAIModel``'s OpenAI client, an ``AmazonBedrockModel``'s
    botocore one); None for a local model or a LiteLLM provider's default."""
    try:
        api_base = getattr(model, "api_base", None)
        client = getattr(model, "client", None)
    except Exception:
        return None
    return address_of(api_base) if isinstance(api_base, str) else client_endpoint(client)


class _Request:
    """A model request the hooked model heard (a copy of its messages), sent into the stream."""

    __slots__ = ("messages",)

    def __init__(self, messages: tuple[Any, ...]) -> None:
        self.messages = messages


class _Response:
    """A model response the hooked model returned (or finished streaming), sent into the
    stream: its text when not streamed (streamed text came as deltas), and the answer of the
    ``final_answer`` call it made, if any."""

    __slots__ = ("answer", "text")

    def __init__(self, text: str | None, answer: str | None) -> None:
        self.text, self.answer = text, answer


class _Unyielded:
    """A step ``agent``'s step callbacks raised on: smolagents never yields it (module doc)."""

    __slots__ = ("agent", "step")

    def __init__(self, agent: Any, step: Any) -> None:
        self.agent, self.step = agent, step


_HEARD: dict[int, Callable[[_Request | _Response | _Unyielded], None]] = {}
"""The running adapters' ears, by their worker thread: a model call there is that run's."""


def _hook_model(model: Any) -> None:
    """Wrap ``generate`` and ``generate_stream`` of ``model`` once (module doc)."""
    if model is None or getattr(model, "_agent_contract_hooked", False):
        return
    for name, streams in (("generate", False), ("generate_stream", True)):
        method = getattr(model, name, None)
        if method is not None:
            setattr(model, name, _heard_by_run(method, streams))
    model._agent_contract_hooked = True


def _heard_by_run(method: Callable[..., Any], streams: bool) -> Callable[..., Any]:
    def hooked(messages: Any, *args: Any, **kwargs: Any) -> Any:
        heard = _HEARD.get(threading.get_ident())
        if heard is None:
            return method(messages, *args, **kwargs)
        heard(_Request(tuple(messages)))
        if streams:
            return _streamed(method(messages, *args, **kwargs), heard)
        message = method(messages, *args, **kwargs)
        content = getattr(message, "content", None)
        calls = getattr(message, "tool_calls", None) or ()
        heard(_Response(content if isinstance(content, str) else None, _final_answer(calls)))
        return message

    return hooked


def _streamed(deltas: Iterator[Any], heard: Callable[[_Response], None]) -> Iterator[Any]:
    """``deltas`` handed on unchanged; once they are all out, the response is heard, with
    the answer of the ``final_answer`` call the deltas built (smolagents' accumulation:
    a call's name and id as they come, its arguments appended, by index)."""
    calls: dict[Any, list[Any]] = {}  # index -> [name, arguments]
    for delta in deltas:
        for part in getattr(delta, "tool_calls", None) or ():
            function = getattr(part, "function", None)
            call = calls.setdefault(getattr(part, "index", None), ["", ""])
            name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
            if isinstance(name, str) and name:
                call[0] = name
            if isinstance(arguments, str):
                call[1] += arguments
        yield delta
    heard(_Response(None, _final_answer(_Call(n, a) for n, a in calls.values())))


class _Call:
    """A streamed call, accumulated (the shape of smolagents' ``ChatMessageToolCall``)."""

    __slots__ = ("function",)

    def __init__(self, name: str, arguments: str) -> None:
        self.function = FunctionCall(name, arguments)


def _final_answer(calls: Iterable[Any]) -> str | None:
    """The answer a ``final_answer`` call among ``calls`` gives, as smolagents reads it: its
    ``answer`` argument (its arguments as JSON, or as they are when they do not parse)."""
    for call in calls:
        function = getattr(call, "function", None)
        if getattr(function, "name", None) != "final_answer":
            continue
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return arguments
        if isinstance(arguments, dict) and "answer" in arguments:
            arguments = arguments["answer"]
        return arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    return None


def _scope_tools(agent: Any) -> None:
    """Run each tool call of ``agent`` under its call's scope, and each managed agent as a
    nested run (module doc); once per agent."""
    if hasattr(agent, "python_executor"):
        _code_in_context()
        _code_tools_told(agent)
    _tell_unyielded(agent)
    _forwards_told(agent)
    managed = getattr(agent, "managed_agents", None)
    for member in managed.values() if isinstance(managed, dict) else ():
        _nest(member)
    execute = getattr(agent, "execute_tool_call", None)
    if execute is None or getattr(execute, "_agent_contract_scoped", False):
        return

    def scoped(tool_name: str, arguments: Any) -> Any:
        if tool_name == "final_answer":  # the answer, not a call
            return execute(tool_name, arguments)
        mcp = _mcp_server(agent, tool_name)
        here = _BODY.get()
        token = _BODY.set((agent, False))  # the next ``forward`` is this call's own
        try:
            if here is not None and here[0] is agent and here[1]:  # in a body of its own tool
                with inner_tool(tool_name, arguments, mcp=mcp) as call:
                    result = execute(tool_name, arguments)
                    call.result(result, isinstance(result, BaseException))
                return result
            with tool_scope(None, tool_name, arguments, mcp=mcp):
                return execute(tool_name, arguments)
        finally:
            _BODY.reset(token)

    scoped._agent_contract_scoped = True  # type: ignore[attr-defined]
    agent.execute_tool_call = scoped


_BODY: contextvars.ContextVar[tuple[Any, bool] | None] = contextvars.ContextVar(
    "agent_contract_smolagents_body", default=None
)
"""Where a tool of an agent the adapter scopes runs here: ``(agent, False)`` as its call starts
(the next ``forward`` is the call's own body), ``(agent, True)`` inside that body, where a tool
run (its ``forward``, or the agent's ``execute_tool_call``) is one no model asked for, an inner
tool (``_forwards_told``). A managed agent's calls start its own (its ``execute_tool_call``)."""


def _forwards_told(agent: Any) -> None:
    """Wrap the ``forward`` of each of ``agent``'s tools once (an instance attribute: smolagents'
    ``Tool.__call__`` calls it): called inside a body of one of the agent's tools (``_BODY``),
    a tool ``other(...)`` runs is an ``inner_tool`` of that body, its arguments (the positional
    ones named by its inputs) and result told; anywhere else it only runs the tool."""
    tools = getattr(agent, "tools", None)
    for name, tool in tools.items() if isinstance(tools, dict) else ():
        forward = getattr(tool, "forward", None)
        if name == "final_answer" or not callable(forward):
            continue
        if getattr(forward, "_agent_contract_told", False):
            continue
        try:
            tool.forward = _told_forward(name, tool, forward)
        except Exception:  # a tool that takes no attributes: its inner runs untold
            continue


def _told_forward(name: str, tool: Any, forward: Callable[..., Any]) -> Callable[..., Any]:
    inputs = getattr(tool, "inputs", None)
    names = list(inputs) if isinstance(inputs, dict) else []

    @functools.wraps(forward)
    def told(*args: Any, **kwargs: Any) -> Any:
        here = _BODY.get()
        if here is None:  # no tool of an agent's runs here
            return forward(*args, **kwargs)
        if not here[1]:  # the call's own body
            token = _BODY.set((here[0], True))
            try:
                return forward(*args, **kwargs)
            finally:
                _BODY.reset(token)
        arguments = {**dict(zip(names, args, strict=False)), **kwargs}
        with inner_tool(name, arguments) as call:
            result = forward(*args, **kwargs)
            call.result(result, isinstance(result, BaseException))
        return result

    told._agent_contract_told = True  # type: ignore[attr-defined]
    return told


def _code_tools_told(agent: Any) -> None:
    """Wrap ``agent.python_executor.send_tools`` once (an instance attribute; smolagents' local
    executor only: a remote one sends its tools as code): each tool the CodeAgent's code calls
    runs as an ``inner_tool`` of the code's ``python_interpreter`` call, its arguments (the
    positional ones named by the tool's inputs) and its result told; ``final_answer`` is the
    answer and a managed agent a nested run (``_nest``), as before. Outside a traced run the
    wrapper only calls the tool."""
    executor: Any = getattr(agent, "python_executor", None)
    send = getattr(executor, "send_tools", None)
    if type(executor).__name__ != "LocalPythonExecutor" or not callable(send):
        return
    if getattr(send, "_agent_contract_told", False):
        return

    def sent(tools: Any, *args: Any, **kwargs: Any) -> Any:
        managed = getattr(agent, "managed_agents", None)
        if isinstance(tools, dict):
            tools = {
                name: tool
                if name == "final_answer"
                or (isinstance(managed, dict) and name in managed)
                or not callable(tool)
                else _told_tool(name, tool)
                for name, tool in tools.items()
            }
        return send(tools, *args, **kwargs)

    sent._agent_contract_told = True  # type: ignore[attr-defined]
    try:
        executor.send_tools = sent
    except Exception:  # an executor that takes no attributes: its tools untold
        return


def _told_tool(name: str, tool: Any) -> Callable[..., Any]:
    """``tool`` as a CodeAgent's code calls it, run as an inner tool (``_code_tools_told``);
    its attributes (``name``, ``inputs``...) kept for code that reads them."""
    inputs = getattr(tool, "inputs", None)
    names = list(inputs) if isinstance(inputs, dict) else []

    @functools.wraps(tool)
    def told(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], dict):
            arguments: Any = args[0]  # smolagents takes one dict of the inputs as its kwargs
        else:
            arguments = {**dict(zip(names, args, strict=False)), **kwargs}
        with inner_tool(name, arguments) as call:
            token = _BODY.set((None, False))  # its ``forward`` is its own body (``_BODY``)
            try:
                result = tool(*args, **kwargs)
            finally:
                _BODY.reset(token)
            call.result(result, isinstance(result, BaseException))
        return result

    return told


def _tell_unyielded(agent: Any) -> None:
    """Wrap ``agent.step_callbacks.callback`` once (an instance attribute): smolagents runs the
    callbacks before it yields the step, so a callback that raises ends the run with the step
    never yielded, its call's usage unknown. The step is then told first, as if yielded, and
    the exception goes on, the same object."""
    registry: Any = getattr(agent, "step_callbacks", None)
    callback = getattr(registry, "callback", None)
    if callback is None or getattr(callback, "_agent_contract_told", False):
        return

    def told(memory_step: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return callback(memory_step, *args, **kwargs)
        except BaseException:
            heard = _HEARD.get(threading.get_ident())
            if heard is not None:  # a run this module reads: the step is told before the end
                heard(_Unyielded(agent, memory_step))
            raise

    told._agent_contract_told = True  # type: ignore[attr-defined]
    registry.callback = told


def _mcp_server(agent: Any, tool_name: Any) -> McpServer | None:
    """An MCP server's tool (mcpadapt's, ``MCPClient``'s) is an MCP call, to a server it does
    not name; ``None``: another tool."""
    tools = getattr(agent, "tools", None)
    tool = tools.get(tool_name) if isinstance(tools, dict) else None
    return McpServer() if type(tool).__name__ == "MCPAdaptTool" else None


def _nest(agent: Any) -> None:
    """Set ``run`` on a managed ``agent``: a nested run where a tracer claims it (module doc)."""
    run = getattr(agent, "run", None)
    if run is None or getattr(run, "_agent_contract_nested", False):
        return

    def nested(task: Any, stream: bool = False, *args: Any, **kwargs: Any) -> Any:
        wrap = None
        if not stream and not args and not kwargs.get("return_full_result"):
            wrap = nested_run(getattr(agent, "name", None))
        if wrap is None or _loop_running():
            return run(task, stream, *args, **kwargs)
        items = run(task, stream=True, **kwargs)
        return asyncio.run(_drained(wrap, agent, items))

    nested._agent_contract_nested = True  # type: ignore[attr-defined]
    agent.run = nested
    _scope_tools(agent)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _drained(wrap: Any, agent: Any, items: Iterator[Any]) -> Any:
    """Read a managed agent's streamed run into the tracer's nested run; its final answer."""
    final: list[Any] = []

    def keep(item: Any) -> None:
        if type(item).__name__ == "FinalAnswerStep":
            final.append(item.output)

    async for _ in wrap(_read(agent, lambda: items, keep)):
        pass
    return final[-1] if final else None


class _Reader:
    """One run's state: the open model call, the step's unanswered tool calls."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.calling = False  # an LLMCallStart was yielded and not yet ended
        self.tools: dict[str, str] = {}  # the step's calls without output: id -> name
        self.final: set[str] = set()  # ids of final_answer calls
        self.answered = False  # the run's answer was given as text
        self.step = 0
        self.last: Any = None  # the last step read (smolagents may yield it again, below)

    def read(self, item: Any) -> Iterator[AgentEvent]:
        """The events of one item of the run's channel: a request or response the model
        hooks heard, or an item of smolagents' own stream."""
        if isinstance(item, _Request):
            yield from self.request(item.messages)
        elif isinstance(item, _Response):
            yield from self.response(item)
        elif isinstance(item, _Unyielded):
            yield from self.feed(item.step)
        else:
            yield from self.feed(item)

    def request(self, messages: tuple[Any, ...]) -> Iterator[AgentEvent]:
        """A model request starts: its call opens (one left open first ends)."""
        yield from self._end()
        yield self._start(messages)

    def response(self, response: _Response) -> Iterator[AgentEvent]:
        """The open call's response is in: its text (unless streamed as deltas), the answer of
        the ``final_answer`` call it made (the run's answer, told here once), then its end."""
        if not self.calling:
            return
        if response.text:
            yield TextDelta(text=response.text)
        if response.answer is not None and not self.answered:
            self.answered = True
            yield TextDelta(text=response.answer)
        yield from self._end()

    def _start(self, messages: tuple[Any, ...]) -> AgentEvent:
        self.calling = True
        model = self.agent.model
        name = getattr(model, "model_id", None)
        kwargs = getattr(model, "kwargs", None)
        params = {
            k: v for k, v in (kwargs if isinstance(kwargs, dict) else {}).items()
            if k not in _PRIVATE and isinstance(v, _SIMPLE)
        }  # fmt: skip
        params["stream"] = bool(getattr(self.agent, "stream_outputs", False))
        provider = _PROVIDERS.get(type(model).__name__)
        if provider is None and isinstance(name, str) and "/" in name:
            provider = name.split("/", 1)[0]  # LiteLLM's "provider/model"
        model_name = name if isinstance(name, str) else None
        start = call_start(model_name, provider, params, smolagents_messages, messages)
        return at_endpoint(start, _server(model))

    def feed(self, item: Any) -> Iterator[AgentEvent]:
        kind = type(item).__name__
        if kind == "ChatMessageStreamDelta":
            if item.content:
                yield TextDelta(text=item.content)
        elif kind == "ToolCall":
            if item.name == "final_answer":  # the answer: its text is the call's output
                self.final.add(item.id)
                return
            yield from self._end()
            self.tools[item.id] = item.name
            yield from tool_call(item.id, item.name, item.arguments)
        elif kind == "ToolOutput":
            if item.id in self.final or item.is_final_answer:
                yield from self._answer(item.output)
            elif item.id in self.tools:
                name, output = self.tools.pop(item.id), item.output
                if isinstance(output, BaseException):  # returned, not raised: it failed
                    yield failed_result(item.id, item.observation, name, error_name(output))
                else:
                    yield ToolResult(tool_call_id=item.id, content=output, name=name)
        elif kind == "ActionOutput":
            if item.is_final_answer:
                yield from self._answer(item.output)
        elif kind in ("ActionStep", "PlanningStep"):
            if item is self.last:  # yielded again: the step of max_steps reached (_limit)
                item = self._limit()
                if item is None:
                    return
            self.last = item
            yield from self._step(item)
        elif kind == "FinalAnswerStep":
            yield from self._end()
            yield from self._answer(item.output)

    def _end(self) -> Iterator[AgentEvent]:
        if self.calling:
            self.calling = False
            yield LLMCallEnd()

    def _answer(self, output: Any) -> Iterator[AgentEvent]:
        if not self.answered and output is not None:
            self.answered = True
            yield TextDelta(text=output if isinstance(output, str) else str(output))

    def _limit(self) -> Any:
        """The step that ended a run at ``max_steps``, or ``None``.

        There smolagents asks the model for a final answer (``provide_final_answer``: the
        call's text is the run's answer) and keeps that request's step in its memory (its
        usage, its ``AgentMaxStepsError``), but yields the step before it again instead. Read
        as a step of its own, the repeat told the step before's usage twice (on the final
        call) and the answer again after the last step, alone in a step of its own. The step
        smolagents kept is read instead; a repeat that is not this is passed over."""
        memory = getattr(getattr(self.agent, "memory", None), "steps", None)
        step = memory[-1] if isinstance(memory, list) and memory else None
        if step is self.last or type(getattr(step, "error", None)).__name__ != _MAX_STEPS:
            return None
        return step

    def _step(self, step: Any) -> Iterator[AgentEvent]:
        if getattr(step, "model_output_message", None) is None and self.calling:
            return  # the model call raised: smolagents yields the step, then re-raises
        yield from self._end()
        error = getattr(step, "error", None)
        if error is None and self.tools and getattr(step, "observations", None) is None:
            # a tool raised past smolagents (a BaseException: CancelledError, KeyboardInterrupt):
            # it yields the step, then re-raises: no result is known, the calls stay open for
            # the run's end to mark, and the step too (only the model's usage is told)
            usage = _usage(step)
            if usage is not None:
                yield usage
            return
        failed = _failed_call(self.tools, error) if error is not None else None
        for call_id, name in self.tools.items():
            if call_id == failed:
                yield failed_result(call_id, str(error), name, error_name(_cause(error)))
            elif error is None:
                yield ToolResult(tool_call_id=call_id, content=step.observations, name=name)
            # else: smolagents dropped this call's result when another call raised; no
            # result is known, so it stays open and ends with the step, marked incomplete
        if type(error).__name__ == _MAX_STEPS:  # its call's text was the run's answer
            self.answered = True
        if error is not None and failed is None:  # no call to carry it: the step's error
            # smolagents hands the model this text at its next step (its error feedback,
            # which quotes the model's output: a parsing error its whole answer): content
            yield ContentError(message=str(error), error_type=type(error).__name__)
        self.tools.clear()
        self.final.clear()
        usage = _usage(step)
        if usage is not None:
            yield usage
        yield StepBoundary(index=self.step)
        self.step += 1


_MAX_STEPS = "AgentMaxStepsError"
"""The error of the step that ended a run at ``max_steps`` (``_Reader._limit``)."""


def _failed_call(calls: dict[str, str], error: BaseException) -> str | None:
    """The open call whose tool raised ``error``: smolagents names it in the message
    (``Error executing tool 'name'``, ``Unknown tool name``), not by id; the first open call of
    that name (the only one, when one tool runs: a CodeAgent's code run, a single call)."""
    if len(calls) == 1:
        return next(iter(calls))
    text = str(error)
    for call_id, name in calls.items():
        if f"tool '{name}'" in text or f"tool {name}," in text:
            return call_id
    return None


def _cause(error: Any) -> Any:
    """The tool's own exception behind smolagents' ``AgentToolExecutionError`` (raised ``from``
    it), as ``error.type`` names a wrapper's inner error; behind a CodeAgent's
    ``AgentExecutionError`` (raised while handling its executor's error, not ``from`` it), the
    executor's: ``ExecutionTimeoutError`` for code that ran out of its ``timeout_seconds``,
    and for an ``InterpreterError`` the code's own exception it reports (a tool's), if any; the
    error itself otherwise."""
    cause = error.__cause__
    if isinstance(cause, BaseException):
        return cause
    if type(error).__name__ == "AgentExecutionError":
        inner = error.__context__
        if type(inner).__name__ == "InterpreterError":
            raised = inner.__context__
            return raised if isinstance(raised, Exception) else inner
        if type(inner).__name__ == "ExecutionTimeoutError":
            return inner
    return error


def _usage(step: Any) -> Usage | None:
    message = getattr(step, "model_output_message", None)
    usage = usage_from_raw(getattr(message, "raw", None))
    if usage is not None:
        return usage
    counted = getattr(step, "token_usage", None)
    if counted is None:
        return None
    return Usage(
        input_tokens=counted.input_tokens, output_tokens=counted.output_tokens,
        total_tokens=counted.total_tokens,
    )  # fmt: skip

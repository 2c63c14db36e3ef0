"""Agno: ``agent.arun(stream=True, stream_events=True)`` as contract events.

Agno streams a run as dataclass events named by their ``event`` field, read by name (nothing
of Agno is imported here):

* ``ModelRequestStarted`` opens an LLM call (``LLMCallStart`` with the model id and the
  provider Agno names, lower-cased); a ``StepBoundary`` comes first when tools ran since the
  call before, so a step is one model call plus the tools it asked for.
* ``RunContent``: ``content`` text becomes ``TextDelta``, ``reasoning_content`` a
  ``ReasoningDelta``; its ``model_provider_data`` carries the provider's response id.
* ``ModelRequestCompleted`` closes the call: its token counts (cache reads and writes,
  reasoning) become ``Usage``, then ``LLMCallEnd``. Agno does not pass the finish reason or
  the response's model name on, so the call ends without them.
* ``ToolCallStarted`` is a ``ToolCall`` (the model's id, name and arguments), once per id;
  ``ToolCallCompleted`` its ``ToolResult`` (``tool_call_error`` marks a tool that raised; the
  ``ToolCallError`` that follows says nothing more). Agno keeps only the error's text, so the
  scope hook notes the class of what the tool raised (by its name and arguments, Agno gives a
  hook no call id) and the failed result's ``error_type`` names it. A tool that returns an
  exception instead of raising it (Agno hands the model its text, as a success) failed the
  same way: the hook notes the class of what it returned. A call Agno refuses
  without running it (a name the agent lacks, arguments it cannot read) has no tool event:
  as the next request starts, a tool message Agno added since the request before that
  answers a call no ``ToolCallStarted`` told is that call and its failed result (from the
  run's kept messages, below), its ``error_type`` Agno's outcome (``tool_not_found``,
  ``invalid_arguments``).
* ``RunPaused``: a call waits for the user (a tool with ``requires_confirmation``,
  ``requires_user_input`` or ``external_execution=True``; Agno tells no ``ToolCallStarted``
  for it): its ``ToolCall``, then one ``InterruptFinal`` per call waiting (``interrupt_id``
  the call's id, ``reason`` ``confirmation``, ``user_input`` or ``external_execution``), so
  the run ends ``interrupted``, each such call cut short.
* ``RunError``: Agno reports a failed run as an event and ends the stream without raising. The
  adapter raises :class:`AgnoRunError` with its message and ``error_type``, so the run ends in
  error exactly once, as a raised exception does for every other agent.
* ``RunCancelled`` (``Agent.cancel_run(run_id)``, from a tool or another thread): Agno ends
  the stream without raising; the adapter yields a fatal ``Error`` of type ``CancelledError``,
  so the run ends ``cancelled``, as a cancelled task does.

A ``Workflow`` streams its steps' runs in its own stream (``WorkflowStarted``, ``StepStarted``,
the step agent's or team's run, whose ``workflow_run_id`` is the workflow's, ``StepCompleted``):
it is one run, each step's run read into it from its ``RunStarted`` on (its calls a step of
their own after a ``PhaseMarker`` naming the workflow step); the run's answer is what the
workflow returns (``WorkflowCompleted``: a ``MessageFinal``, or a ``StructuredFinal``), a
function step's output too. Steps a ``Parallel`` runs at once are read one at a time
(``_Steps``); the hooks below go on every agent and team the workflow's steps run, at any
depth, and each goes on past a tool call only once it is told, as a member does (``_Taker``).
A team run by a step names the workflow's run to its tools (its ``run_context``): the
workflow's run id is served too.

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through Agno's own
seam: the adapter puts one hook first in ``agent.tool_hooks`` (once per agent; outside a
traced run it does nothing), which Agno wraps around every tool execution and the
application's own hooks, sync or async, in the body's own context. Agno does not give a
hook the call's id, so the hook names the tool and its arguments, which pick the call
(``agent_contract.scope``). A tool a hooked tool's body runs itself, through Agno's own
``FunctionCall.execute``/``aexecute`` (a ``Function`` of no run, or of the calling tool's
run), is asked for by no model: it runs as an ``inner_tool``, a span of its own under the
calling tool's, with its result (before, its scope took the run's next call of that name, or
opened a span in the step that no event ended). A tool of another run there (a member, an
agent the body runs) is that run's, scoped as above. A tool of an ``MCPTools``
toolkit of the agent (or team) running it is scoped with its server (``McpServer``: the name
the server gives itself, else the toolkit's, the protocol version and the HTTP session, from
its client); a ``MultiMCPTools``'s as an MCP tool of an unnamed server.

A ``Team`` streams the same events named ``Team...`` (``TeamModelRequestStarted``...), read
alike: the leader's calls are the run's. A member's run (another ``run_id``, with the run's own
as ``parent_run_id``) comes in the same stream, from inside the delegation tool that runs it:
each is a nested run of its own (``agent_contract.scope.nested_run``, named after the member)
under that call's span, the delegation to that member (by ``member_id``) among the open ones,
else the oldest; it keeps its calls, tokens and answer, and the leader's run its own. A member
of a member (a sub-team's) nests the same way under its sub-team's delegation, at any depth;
the scope hook is added to every member's tools too. Agno drains a delegation's member events
in a task of its own, ahead of the stream: the hook hands Agno that generator wrapped so that
a member waits, after each ``ToolCallStarted``, until the adapter has taken it (``_Taker``),
so the tool's scope finds its call in the member's run. With no tracer claiming them, members
stay out. A member run that fails (its ``RunError``) fails its delegation's call too, with the
same ``error_type``: Agno hands the leader the error's text as the call's result, and the
run goes on. A delegation that shows its result (``TeamMode.route``) has Agno stream the
member's text as the team's own content: it is the member's call's text too, told there while
that call is open, and the team's answer. An event the adapter cannot read (a field of a
shape it does not read) is skipped and told (``_stream.told``), as ``read_events`` skips one,
the team's or a member's; the events after it are read. ``sink`` receives every Agno event
untouched, in order. Closing the stream early closes Agno's generator (which cancels the run).
An agent's reasoning agent (its ``reasoning_model``'s, or its ``reasoning_agent``), which Agno
runs streamed inside the run and of which it tells only the text, is a run nested where Agno
reasons, its model request a call with its tokens (``_nest_reasoning``).
The requests Agno makes beside the agent's own, unstreamed and untold in the stream (its
``MemoryManager``'s, a session summary's), are side calls (``SideCallStart``) with their tokens,
told once no request of the run's is open (``_watch_side_requests``), each tool they ran (the
memory manager's) a call with its result; a team member's in its own nested run
(``_member_asides``); a tool body's own model requests stay its own. An agent's
``output_model``'s request, which Agno tells only as its text, is told the same way, as the
run's own last call (``_watch_output_model``); the agent model's text it rewrites
(``RunIntermediateContent``) is its call's. A request of the agent's model that falls back
to its ``fallback_models`` fails its call with the class Agno moved on from, and the next
call names the fallback model (``_watch_fallbacks``).
Needs ``agno`` (extra ``agno``)."""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from collections.abc import AsyncIterator
from contextvars import ContextVar
from inspect import isasyncgen, isawaitable
from typing import Any

from agent_contract.agent.events import InterruptFinal, MessageFinal, StreamEvent
from agent_contract.events import (
    AgentEvent,
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, inner_tool, tool_scope
from agent_contract.sources import _conversation
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._endpoint import (
    Endpoint,
    address_of,
    at_endpoint,
    held_endpoint,
    sdk_default,
)
from agent_contract.sources._failure import cancelled_run, error_name, failed_result
from agent_contract.sources._history import agno_messages, call_start
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import Pushed, through
from agent_contract.sources._require import expect, require
from agent_contract.sources._stream import Sink, told
from agent_contract.sources._structured import structured_final
from agent_contract.sources._watched import failed_call, watched

__all__ = ["AgnoRunError", "agno_events"]


class AgnoRunError(RuntimeError):
    """An Agno run reported an error (a ``RunError`` event) instead of raising one."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


_HINT = "Make one with agno.agent.Agent(model=..., tools=...)."


async def agno_events(
    agent: Any, input: Any, *, sink: Sink | None = None, **run: Any
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` on ``input`` (``run`` goes to ``arun``), yielding contract events."""
    require("agno")
    expect(agent, "agno_events", "an agno Agent, Team or Workflow", "arun", hint=_HINT)
    # before the framework makes any request (read once the agent is known to be one); the
    # session it keeps the run's history in
    session = run.get("session_id") or getattr(agent, "session_id", None)
    framework_started(__name__, session)
    agents: dict[int, Any] = {}  # the agents and teams the run may run, by id()
    for runner in _runners(agent, set()):
        found: dict[int, Any] = {}
        _add_scope_hook(runner, found)
        agents.update(found)
        if runner is not agent:  # a workflow step's: kept in step as a member is
            _stepping_arun(runner)
        pre = list(getattr(runner, "pre_hooks", None) or ())
        if agent_contract_request_messages not in pre:
            runner.pre_hooks = [*pre, agent_contract_request_messages]
    _nest_reasoning()
    _watch_side_requests()
    _watch_fallbacks()
    for runner in _runners(agent, set()):
        _watch_output_model(runner)
    stream = agent.arun(input, stream=True, stream_events=True, **run)
    taker = _Taker()
    state = _State()
    state.agents = agents
    side: deque[AgentEvent] = deque()
    members = _Members(state, taker, side)
    steps = _Steps()
    error: BaseException | None = None
    try:
        async for event in _asking_aside(stream, side, state.fell):
            if session is None and (session := _conversation.id_of(event)) is not None:
                framework_started(__name__, session)  # the one Agno made as the run started
            if sink is not None and getattr(event, "pre_hook_name", None) != _HOOK_NAME:
                sink(event)
            for aside in _drained(side, state):
                yield aside
            for item in steps.order(event) if state.workflow is not None else (event,):
                async for out in _read(item, state, members, taker):
                    yield out
        for item in steps.rest():  # (a step the workflow left unfinished)
            async for out in _read(item, state, members, taker):
                yield out
        for aside in _drained(side, state):
            yield aside
    except BaseException as raised:
        error = raised
        raise
    finally:
        taker.close()
        await members.close(error)
        for run_id in state.runs:
            _CONTEXTS.pop(run_id, None)
            _RAISED.pop(run_id, None)
            _RETURNED.pop(run_id, None)
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def _nest_reasoning() -> None:
    """Make the reasoning agent Agno runs inside a run (its ``reasoning_model``'s, or the
    ``reasoning_agent`` given) a nested run where a tracer claims it: Agno reads that agent's
    own streamed events (``arun(stream=True, stream_events=True)``) and tells the run only
    its reasoning text, so the reasoning model's request, its tokens included, was in no span.
    ``ReasoningManager._get_reasoning_agent`` is set once, on the class; the agent it returns
    gets its ``arun`` wrapped once (an instance attribute) so that each streamed run's events
    pass on to Agno unchanged and are read, as any Agno run, into a run nested where Agno
    reasons (``agent_contract.sources._nested.through``). Anywhere else it is Agno's."""
    try:
        from agno.reasoning.manager import ReasoningManager
    except ImportError:  # a version without it: no reasoning agent to follow
        return
    original = getattr(ReasoningManager, "_get_reasoning_agent", None)
    if original is None or getattr(original, "_agent_contract_nesting", False):
        return  # (a version that makes its reasoning agent elsewhere: Agno's own)

    @functools.wraps(original)
    def reasoning_agent(self: Any, model: Any) -> Any:
        made = original(self, model)
        _nested_arun(made)
        return made

    reasoning_agent._agent_contract_nesting = True  # type: ignore[attr-defined]
    ReasoningManager._get_reasoning_agent = reasoning_agent  # type: ignore[method-assign]


def _nested_arun(agent: Any) -> None:
    """``agent.arun`` reading each streamed run of it into a nested run (``_nest_reasoning``)."""
    arun = getattr(agent, "arun", None)
    if arun is None or getattr(arun, "_agent_contract_nested", False):
        return

    def nested(*args: Any, **kwargs: Any) -> Any:
        items = arun(*args, **kwargs)
        if not (kwargs.get("stream") and kwargs.get("stream_events")) or not isasyncgen(items):
            return items  # not streamed: no events to read
        return through(getattr(agent, "name", None) or _REASONING, items, _State().feed)

    nested._agent_contract_nested = True  # type: ignore[attr-defined]
    agent.arun = nested


_REASONING = "reasoning"
"""The name of a reasoning agent's nested run when Agno gives it none."""


_SIDE: ContextVar[deque[AgentEvent] | None] = ContextVar("agent_contract_agno_side", default=None)
"""Where the side requests made here go (``_watch_side_requests``): set while Agno computes
the next event of a run an adapter reads, so the tasks Agno starts then (its memory manager's)
carry it; ``None`` in the run's tool bodies, whose own model requests are theirs."""


async def _asking_aside(
    stream: AsyncIterator[Any], side: deque[AgentEvent], fell: list[tuple[str, list[Any]]]
) -> AsyncIterator[Any]:
    """Agno's events, each computed with ``_SIDE`` set to ``side`` and ``_FELL`` to ``fell``
    (reset before it is handed on: the context they are set in is the consumer's)."""
    while True:
        token, falling = _SIDE.set(side), _FELL.set(fell)
        try:
            event = await stream.__anext__()
        except StopAsyncIteration:
            return
        finally:
            _FELL.reset(falling)
            _SIDE.reset(token)
        yield event


_FELL: ContextVar[list[tuple[str, list[Any]]] | None] = ContextVar(
    "agent_contract_agno_fell", default=None
)
"""Where the requests that fell back are noted (``_watch_fallbacks``): the class of the error
the agent's model failed with, and the fallback models Agno tries, in order."""


def _watch_fallbacks() -> None:
    """Note, within a run an adapter reads, each request of the agent's model that failed and
    moved on to its ``fallback_models``: Agno tells only a second ``ModelRequestStarted``,
    named after the agent's model, and never the failure, so the failed request looked
    answered and the fallback's was named after the model that failed. Agno's module function
    that tries the fallbacks is given the error and the models, wrapped once (on the module);
    ``_State.start`` reads what it noted. Anywhere else it is Agno's."""
    try:
        from agno.models import fallback
    except ImportError:  # a version without fallbacks: none to tell
        return
    for name in ("_atry_fallback_models_stream", "_try_fallback_models_stream"):
        original = getattr(fallback, name, None)
        if original is None or getattr(original, "_agent_contract_fell", False):
            continue

        def noting(models: Any, error: Any, *args: Any, _original: Any = original,
                   **kwargs: Any) -> Any:  # fmt: skip
            fell = _FELL.get()
            if fell is not None and isinstance(models, list):
                tried = [(getattr(m, "id", None), _server(m)) for m in models]
                fell.append((error_name(error), tried))
            return _original(models, error, *args, **kwargs)

        noting._agent_contract_fell = True  # type: ignore[attr-defined]
        setattr(fallback, name, functools.wraps(original)(noting))


def _drained(side: deque[AgentEvent], state: _State) -> list[AgentEvent]:
    """The side requests made since, told whole while no request of the run's is open."""
    out: list[AgentEvent] = []
    while side and not state.calling:
        out.append(side.popleft())
    return out


def _watch_side_requests() -> None:
    """Tell the model requests Agno makes beside the agent's own as side calls
    (``SideCallStart``): its memory manager (``update_memory_on_run``, a ``MemoryManager``),
    session summaries, and any other unstreamed request of a run an adapter reads. Agno
    makes them on a copy of the manager's model, unstreamed, in tasks of their own, and
    tells nothing of them in the run's stream, while the provider instrumentations stand
    down inside the run: a billed request and its tokens were in no span. Agno's model base
    class makes each request in ``_aprocess_model_response`` (``_process_model_response``
    synchronously), wrapped once on the class: where ``_SIDE`` is set (``_asking_aside``)
    each request's call, with its usage, is kept for the run (``_drained``); anywhere else
    it is Agno's, unchanged."""
    try:
        from agno.models.base import Model
    except ImportError:  # a version without it: no side requests to follow
        return
    for name, wrap in (("_aprocess_model_response", _side_async),
                       ("_process_model_response", _side_sync),
                       ("aresponse", _side_tools_async), ("response", _side_tools_sync),
                       ("arun_function_calls", _tools_async),
                       ("run_function_calls", _tools_sync)):  # fmt: skip
        original = getattr(Model, name, None)
        if original is not None and not getattr(original, "_agent_contract_side", False):
            watched = functools.wraps(original)(wrap(original))
            watched._agent_contract_side = True  # type: ignore[attr-defined]
            setattr(Model, name, watched)


_SIDE_TOOLS: ContextVar[deque[AgentEvent] | None] = ContextVar(
    "agent_contract_agno_side_tools", default=None
)
"""Where the tools a side request asked for go (``_side_tools_async``): set while Agno's
unstreamed ``aresponse`` (``response``) runs with ``_SIDE`` set, the loop in which a side
model's requests and their tools are made (a ``MemoryManager``'s ``add_memory``...); the
agent's own tools run in its streamed loop, under their scope hook, and are told by Agno."""


def _side_tools_async(original: Any) -> Any:
    async def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        side = _SIDE.get()
        if side is None:
            return await original(self, *args, **kwargs)
        token = _SIDE_TOOLS.set(side)
        try:
            return await original(self, *args, **kwargs)
        finally:
            _SIDE_TOOLS.reset(token)

    return watched


def _side_tools_sync(original: Any) -> Any:
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        side = _SIDE.get()
        if side is None:
            return original(self, *args, **kwargs)
        token = _SIDE_TOOLS.set(side)
        try:
            return original(self, *args, **kwargs)
        finally:
            _SIDE_TOOLS.reset(token)

    return watched


def _tools_async(original: Any) -> Any:
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        items = original(self, *args, **kwargs)
        side = _SIDE_TOOLS.get()
        if side is None or not isasyncgen(items):
            return items
        return _side_tools_told(items, side)

    return watched


async def _side_tools_told(items: Any, side: deque[AgentEvent]) -> AsyncIterator[Any]:
    """Each item of a side request's tool run, unchanged; each tool that completed is told
    to ``side`` whole, its call and result (``_side_tool``)."""
    try:
        async for item in items:
            side.extend(_side_tool(item))
            yield item
    finally:
        await items.aclose()


def _tools_sync(original: Any) -> Any:
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        side = _SIDE_TOOLS.get()
        if side is None:
            return original(self, *args, **kwargs)

        def told() -> Any:
            items = original(self, *args, **kwargs)
            try:
                for item in items:
                    side.extend(_side_tool(item))
                    yield item
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    close()

        return told()

    return watched


def _side_tool(item: Any) -> tuple[AgentEvent, ...]:
    """The call and result of a tool a side request asked for, once Agno ran it (its
    ``tool_call_completed`` response, which carries both): told whole, so no request of the
    run's is told inside it. Agno's memory tools catch their own errors and answer with text."""
    if getattr(item, "event", None) != "ToolCallCompleted":  # (ModelResponseEvent's value)
        return ()
    out: list[AgentEvent] = []
    for tool in getattr(item, "tool_executions", None) or ():
        call_id = getattr(tool, "tool_call_id", None)
        if call_id is None:
            continue
        out += tool_call(call_id, tool.tool_name, tool.tool_args)
        out.append(_result(tool, None))
    return tuple(out)


def _side_async(original: Any) -> Any:
    async def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        side = _SIDE.get()
        if side is None or _own(kwargs):
            return await original(self, *args, **kwargs)
        start = _side_start(self, args, kwargs)
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as error:
            side.extend((start, *failed_call(error)))
            raise
        side.extend((start, *_side_answered(start, args, kwargs)))
        return result

    return watched


def _side_sync(original: Any) -> Any:
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        side = _SIDE.get()
        if side is None or _own(kwargs):
            return original(self, *args, **kwargs)
        start = _side_start(self, args, kwargs)
        try:
            result = original(self, *args, **kwargs)
        except BaseException as error:
            side.extend((start, *failed_call(error)))
            raise
        side.extend((start, *_side_answered(start, args, kwargs)))
        return result

    return watched


def _own(kwargs: dict[str, Any]) -> bool:
    """Whether an unstreamed request is the run's own: one its streamed loop makes unstreamed
    (an ``output_schema`` answered through the provider's structured outputs, which Agno does
    not stream), told by its ``ModelRequestStarted`` and ``ModelRequestCompleted`` events. Agno
    hands such a request the run's output (``run_response``); a side request (a memory
    manager's, a summary's, a parser model's) is made with none."""
    return kwargs.get("run_response") is not None


def _side_start(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, side: bool = True
) -> LLMCallStart:
    """The call of a side request to ``model`` (``_process_model_response``'s arguments; the
    agent's own call, not ``side``, for its output model's)."""
    messages = kwargs.get("messages", args[0] if args else None)
    provider = getattr(model, "provider", None)
    provider = provider.lower() if isinstance(provider, str) and provider else None
    model_id = getattr(model, "id", None)
    request = tuple(messages) if isinstance(messages, list) else ()
    return call_start(model_id if isinstance(model_id, str) else None, provider,
                      {"stream": not side}, agno_messages, request, side=side)  # fmt: skip


def _watch_output_model(agent: Any) -> None:
    """Tell the request of ``agent``'s ``output_model`` (the model that writes the answer
    from the run's messages, once the agent's model is done) as a call of the run: Agno
    streams it (``aresponse_stream`` on that model) and tells only its text, between its
    ``OutputModelResponseStarted`` and ``...Completed``, no request event, so its request and
    tokens were in no span. Its ``aresponse_stream`` is wrapped once (an instance attribute):
    within a run an adapter reads (``_SIDE`` set) its items pass on unchanged and, once they
    ended, its call (the messages, the answer, the usage Agno's own request-completed item
    carries) is told whole, as a side request is (``_drained``), the run's last own call, whose
    answer is the run's. Anywhere else it is Agno's."""
    model: Any = getattr(agent, "output_model", None)
    stream = getattr(model, "aresponse_stream", None)
    if stream is None or getattr(stream, "_agent_contract_output", False):
        return

    def watched(*args: Any, **kwargs: Any) -> Any:
        items = stream(*args, **kwargs)
        told = _SIDE.get()
        if told is None or not isasyncgen(items):
            return items
        return _answered(items, _side_start(model, args, kwargs, side=False), told)

    watched._agent_contract_output = True  # type: ignore[attr-defined]
    try:
        model.aresponse_stream = watched
    except Exception:  # a model that takes no attribute stays unwatched
        return


def _answered(
    items: AsyncIterator[Any], start: LLMCallStart, told: deque[AgentEvent]
) -> AsyncIterator[Any]:
    """Every item of an output model's stream, unchanged; its call's events go to ``told``
    whole once the stream ended (``_watch_output_model``, ``_watched``): its text told as one,
    its usage by its ``ModelRequestCompleted``."""
    said: list[str] = []

    def read(item: Any) -> tuple[AgentEvent, ...]:
        kind = getattr(item, "event", None)
        content = getattr(item, "content", None)
        if kind == "AssistantResponse" and isinstance(content, str):
            said.append(content)
        elif kind == "ModelRequestCompleted":
            return (_usage(item, start.model),)
        return ()

    def ended() -> list[AgentEvent]:
        text = [TextDelta(text="".join(said))] if said else []
        return [*text, LLMCallEnd(model=start.model)]

    return watched(items, start, told, read, ended)


def _side_answered(
    start: LLMCallStart, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[AgentEvent, ...]:
    """A side request's answer: its text and usage, read off the assistant message Agno
    filled in (its ``metrics`` this request's)."""
    message = kwargs.get("assistant_message", args[1] if len(args) > 1 else None)
    out: list[AgentEvent] = []
    content = getattr(message, "content", None)
    if isinstance(content, str) and content:
        out.append(TextDelta(text=content))
    metrics = getattr(message, "metrics", None)
    if metrics is not None:
        out.append(_usage(metrics, start.model))
    data = getattr(message, "provider_data", None)
    response_id = data.get("id") if isinstance(data, dict) else None
    response_id = response_id if isinstance(response_id, str) else None
    out.append(LLMCallEnd(model=start.model, response_id=response_id))
    return tuple(out)


def _usage(counts: Any, model: str | None) -> Usage:
    """The token counts Agno keeps (a request's event, or a message's metrics)."""
    return Usage(
        input_tokens=counts.input_tokens, output_tokens=counts.output_tokens,
        total_tokens=counts.total_tokens, cache_read_tokens=counts.cache_read_tokens or None,
        cache_creation_tokens=counts.cache_write_tokens or None,
        reasoning_tokens=counts.reasoning_tokens or None, model=model,
    )  # fmt: skip


async def _read(
    item: Any, state: _State, members: _Members, taker: _Taker
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """One Agno event read: a member's into its nested run, else the run's own (module doc),
    live or held for its workflow step (``_Steps``) alike."""
    if members.claims(item):
        await members.feed(item)
        taker.took(item)
        return
    for out in told(state.feed, item, passing=AgnoRunError):  # an odd one skipped
        yield out
    taker.took(item)  # its call told: a workflow step's tool may run (``_stepping_arun``)
    if not state.calling and getattr(item, "event", None) == "TeamRunContent":
        await members.echo(item)  # a member's text, told as the team's?
    if state.run_id is not None:
        taker.serve(state.run_id)
    if state.workflow is not None:  # a step's team names the workflow's run to its tools
        taker.serve(state.workflow)


_STEPS = ("agent", "team", "steps", "else_steps", "choices")
"""Where an Agno workflow's steps keep what they run: a ``Step``'s agent or team, the steps of a
``Parallel``, ``Loop``, ``Condition`` (and its else branch), ``Steps``, a ``Router``'s choices."""


def _runners(agent: Any, seen: set[int]) -> list[Any]:
    """The agents and teams ``agent`` runs itself: ``agent`` (an agent or team: it has tool
    hooks), else those a workflow's steps run, at any depth."""
    if id(agent) in seen:
        return []
    seen.add(id(agent))
    if hasattr(agent, "tool_hooks"):
        return [agent]
    found: list[Any] = []
    for name in _STEPS:
        value = getattr(agent, name, None)
        for part in value if isinstance(value, (list, tuple)) else (value,):
            if (part is not None and not callable(part)) or hasattr(part, "tool_hooks"):
                found += _runners(part, seen)
    return found


def _add_scope_hook(agent: Any, seen: dict[int, Any]) -> None:
    """Put the scope hook first in ``agent``'s tool hooks and in its members', at any depth
    (a team's members run their tools under their own hooks, not the team's). Agno chains
    them first outermost: the application's hooks run inside the call's scope, so one that
    raises fails the call by its class, and the call is picked by the arguments the model
    gave, before any hook changed them."""
    if id(agent) in seen:
        return
    seen[id(agent)] = agent
    hooks = list(getattr(agent, "tool_hooks", None) or ())
    if _scope_hook not in hooks:
        agent.tool_hooks = [_scope_hook, *hooks]
    for member in getattr(agent, "members", None) or ():
        _stepping_arun(member, aside=True)
        _add_scope_hook(member, seen)


def _mcp_server(function_name: str, agent: Any, team: Any) -> McpServer | None:
    """The MCP server of the tool named ``function_name`` when an ``MCPTools`` or
    ``MultiMCPTools`` toolkit of the agent (or team) running it provides it (``None``: another
    tool). A ``MultiMCPTools`` does not say which of its servers: the call is an MCP one, its
    server unknown."""
    for owner in (agent, team):
        tools = getattr(owner, "tools", None)
        for toolkit in tools if isinstance(tools, (list, tuple)) else ():  # not a factory
            kinds = {c.__name__ for c in type(toolkit).__mro__}
            functions = getattr(toolkit, "functions", None)
            if not kinds & {"MCPTools", "MultiMCPTools"} or not isinstance(functions, dict):
                continue
            if isinstance(function_name, str) and function_name in functions:
                if "MCPTools" not in kinds:
                    return McpServer()
                return server_of(getattr(toolkit, "session", None), getattr(toolkit, "name", None))
    return None


def _scope_hook(
    function_name: str,
    function_call: Any,
    arguments: dict[str, Any],
    run_context: Any = None,
    team: Any = None,
    agent: Any = None,
) -> Any:
    """Agno's tool hook: the rest of the chain (the tool) runs under its call's scope.

    Sync on purpose: Agno skips async hooks for sync tools. In an async chain the next step
    returns an awaitable, awaited here inside the scope (entered in this same task). A team's
    delegation returns the member's events as an async generator, which Agno drains in a
    task of its own, ahead of the stream: within a traced run it goes in step with the
    adapter (``_Taker``)."""
    mcp = _mcp_server(function_name, agent, team)
    run_id = getattr(run_context, "run_id", None)
    body = _BODY.get()
    inner = body is not _OUTSIDE and (run_id is None or run_id == body)  # (module doc)
    scope = (
        inner_tool(function_name, arguments, mcp=mcp)
        if inner
        else tool_scope(None, function_name, arguments, mcp=mcp)
    )
    scope.__enter__()
    call = None if inner else (run_id, function_name, arguments)
    aside = _SIDE.set(None)  # the body's own model requests are its own (``_SIDE``)
    here = _BODY.set(run_id)
    try:
        result = function_call(**arguments)
    except BaseException as error:
        if call is not None:
            _raised(*call, error)
        scope.__exit__(type(error), error, error.__traceback__)
        raise
    finally:
        _BODY.reset(here)
        _SIDE.reset(aside)
    stepping = getattr(team, "stream_member_events", True) is not False
    taker = _TAKERS.get(run_id) if stepping else None
    if isawaitable(result):
        return _awaited(scope, result, taker, call, run_id)
    _returned(scope, result, call)
    scope.__exit__(None, None, None)
    return _stepped(result, taker)


_OUTSIDE = object()
_BODY: ContextVar[Any] = ContextVar("agent_contract_agno_body", default=_OUTSIDE)
"""The run id of the hooked tool whose body runs here (``None``: a tool of no run);
``_OUTSIDE`` outside any: a tool the hook scopes inside a body of its own run, or of none, is
an inner tool of that body (module doc)."""


def _returned(scope: Any, value: Any, call: tuple[Any, str, dict[str, Any]] | None) -> None:
    """Tell what a tool returned: an exception, returned rather than raised, failed it all the
    same (noted for the run's call; an inner tool is told it)."""
    if call is None:
        scope.result(value, value if isinstance(value, Exception) else False)
    elif isinstance(value, Exception):
        _raised(*call, value, returned=True)


def _stepped(result: Any, taker: _Taker | None) -> Any:
    """A delegation's member events in step with the adapter (``_Taker``), when traced."""
    return taker.stepped(result) if taker is not None and isasyncgen(result) else result


async def _awaited(
    scope: Any,
    result: Any,
    taker: _Taker | None,
    call: tuple[Any, str, dict[str, Any]] | None,
    run_id: Any,
) -> Any:
    """An async tool's body awaited inside its scope (``call``: the run's call it is, ``None``
    for an inner tool)."""
    aside = _SIDE.set(None)  # the body's own model requests are its own (``_SIDE``)
    here = _BODY.set(run_id)
    try:
        value = await result
    except BaseException as error:
        if call is not None:
            _raised(*call, error)
        _BODY.reset(here)
        _SIDE.reset(aside)
        if call is None:  # (the run's call is named by its result, as before)
            scope.__exit__(type(error), error, error.__traceback__)
        else:
            scope.__exit__(None, None, None)
        raise
    _BODY.reset(here)
    _SIDE.reset(aside)
    _returned(scope, value, call)
    scope.__exit__(None, None, None)
    return _stepped(value, taker)


_RAISED: dict[Any, dict[tuple[str, str], list[str]]] = {}
"""run_id of each run an adapter reads -> the class of each exception its tools raised, by
the call's tool name and arguments (Agno hands a hook no call id), oldest first. Agno turns
the exception into text; its ``ToolCallCompleted`` says only ``tool_call_error``."""

_RETURNED: dict[Any, dict[tuple[str, str], list[str]]] = {}
"""The same for the exceptions its tools returned instead of raising (Agno hands the model
their text as a result, ``tool_call_error`` unset)."""


def _call_key(name: Any, arguments: Any) -> tuple[str, str]:
    return str(name), json.dumps(arguments, sort_keys=True, default=repr)


def _raised(
    run_id: Any, name: str, arguments: Any, error: BaseException, *, returned: bool = False
) -> None:
    """Note that a tool of run ``run_id`` (one an adapter reads) raised ``error`` (or
    ``returned`` it)."""
    if run_id in _CONTEXTS and isinstance(error, Exception):  # Agno catches only these
        by_call = (_RETURNED if returned else _RAISED).setdefault(run_id, {})
        by_call.setdefault(_call_key(name, arguments), []).append(error_name(error))


_STEPPER: ContextVar[_Taker | None] = ContextVar("agent_contract_agno_stepper", default=None)
"""The ``_Taker`` of the delegation running here: set where Agno runs a delegation's body, so
that the tasks a broadcast starts for its members (``delegate_task_to_members``: each member
streamed by a task of its own into a queue, ahead of the stream) run in it, and each member's
own stream is kept in step there (``_stepping_arun``)."""


def _stepping_arun(member: Any, *, aside: bool = False) -> None:
    """Keep ``member``'s streamed runs in step with the adapter reading its team (``_Taker``)
    where a delegation runs it: its ``arun`` (an instance attribute, set once) hands back the
    member's stream wrapped by that delegation's taker. A broadcast streams its members from
    tasks of its own that queue their events ahead of the team's stream, past the wrapper
    around the delegation's merged events, so a member's tool started before the adapter had
    read its ``ToolCallStarted``: its scope found no call in the member's run (not started
    yet) and its body opened a span of its own in the team's step, the call told twice.
    A workflow's step agent or team is kept in step the same way, by the taker of the adapter
    reading the workflow (the run its ``run_context`` names): a ``Parallel``'s step held
    (``_Steps``) ran its tools before its calls were told, so their spans opened early in the
    live step's step. A team's member (``aside``) makes its side requests in its own run
    (``_member_asides``). Anywhere else ``arun`` is Agno's."""
    original = getattr(member, "arun", None)
    if original is None or getattr(original, "_agent_contract_stepping", False):
        return

    def arun(*args: Any, **kwargs: Any) -> Any:
        taker = _STEPPER.get() or _TAKERS.get(getattr(kwargs.get("run_context"), "run_id", None))
        items = original(*args, **kwargs)
        if aside and taker is not None and isasyncgen(items):
            items = _member_asides(items)
        return _stepped(items, taker)

    arun._agent_contract_stepping = True  # type: ignore[attr-defined]
    try:
        member.arun = arun
    except Exception:  # an agent that takes no attribute: its members run unheld, as before
        return


async def _member_asides(items: Any) -> AsyncIterator[Any]:
    """A team member's streamed run, each event computed with ``_SIDE`` set to a queue of
    the member's own (kept in ``_SIDES`` by its run id), so the requests its memory manager
    and session summaries make (and their tools) are told in the member's nested run
    (``_Members``), not in the step of the leader whose stream Agno drains it in."""
    side: deque[AgentEvent] = deque()
    named = False
    try:
        while True:
            token = _SIDE.set(side)
            try:
                item = await items.__anext__()
            except StopAsyncIteration:
                return
            finally:
                _SIDE.reset(token)
            run_id = getattr(item, "run_id", None)
            if not named and run_id is not None:  # its first event is its own run's
                named = True
                _SIDES.setdefault(run_id, side)
            yield item
    finally:
        await items.aclose()


_SIDES: dict[Any, deque[AgentEvent]] = {}
"""run id of a team member's run an adapter reads -> its side requests (``_member_asides``)."""

_TAKERS: dict[Any, _Taker] = {}
"""run_id of each run an adapter reads (a member's too) -> that adapter's ``_Taker``."""
_WAIT = 30.0
"""At most this long (seconds) a member waits for the adapter to take one of its tool calls."""


class _Taker:
    """Keeps a team's members in step with the adapter reading the team's stream.

    Agno drains a delegation's generator (the member's events) in a task of its own and
    queues them for the team's stream, so a member's tool can start before the adapter has
    read its ``ToolCallStarted``, and its scope would find no call. Within a traced run the
    hook hands Agno ``stepped(generator)`` instead, which, after passing on a member's
    ``ToolCallStarted``, waits until the adapter has taken it before the member goes on (to
    run that tool). Nothing is held once the adapter stops reading."""

    __slots__ = ("_runs", "_waiting")

    def __init__(self) -> None:
        self._runs: set[Any] = set()
        self._waiting: dict[int, tuple[Any, asyncio.Event]] = {}

    def serve(self, run_id: Any) -> None:
        """Keep the members of run ``run_id`` in step with this adapter."""
        if run_id not in self._runs:
            self._runs.add(run_id)
            _TAKERS[run_id] = self

    def took(self, event: Any) -> None:
        found = self._waiting.pop(id(event), None)
        if found is not None and found[0] is event:
            found[1].set()

    def close(self) -> None:
        for run_id in self._runs:
            if _TAKERS.get(run_id) is self:
                del _TAKERS[run_id]
        self._runs.clear()
        waiting, self._waiting = self._waiting, {}
        for _, taken in waiting.values():
            taken.set()

    async def stepped(self, items: Any) -> AsyncIterator[Any]:
        if self._runs:  # (where the delegation's body runs: the member tasks it starts too)
            _STEPPER.set(self)
        try:
            async for item in items:
                taken = None
                if str(getattr(item, "event", "")).endswith("ToolCallStarted") and self._runs:
                    found = self._waiting.get(id(item))
                    if found is None or found[0] is not item:
                        found = self._waiting[id(item)] = (item, asyncio.Event())
                    taken = found[1]
                yield item
                if taken is not None:
                    try:
                        await asyncio.wait_for(taken.wait(), _WAIT)
                    except asyncio.TimeoutError:
                        self._waiting.pop(id(item), None)
        finally:
            await items.aclose()


# run_id of each run an adapter reads -> its RunContext, once its pre-hooks ran (else None).
_CONTEXTS: dict[Any, Any] = {}
_SDK_DEFAULTS = {
    "agno.models.openai.chat.OpenAIChat": "openai",
    "agno.models.openai.responses.OpenAIResponses": "openai",
    "agno.models.anthropic.claude.Claude": "anthropic",
}
"""The SDK whose default server an Agno model given no base URL calls, by the model's class
(another class's default is not known here)."""


def _server(model: Any) -> Endpoint | None:
    """The server an Agno ``model`` sends to: its SDK client once made (or given), else the
    base URL it makes one with (in its ``client_params``, its own, an Azure model's
    ``azure_endpoint``), else that SDK's default for ``OpenAIChat``, ``OpenAIResponses`` and
    ``Claude``: Agno makes the client only as the first request goes out. A property that
    raises costs only the server."""
    found = held_endpoint(model, ("async_client", "client"))
    if found is not None:
        return found
    try:
        params = getattr(model, "client_params", None)
        given = params.get("base_url") if isinstance(params, dict) else None
        if given is not None:
            return address_of(given)
        found = held_endpoint(model, (), ("base_url", "azure_endpoint"))
        kind = type(model)
        sdk = _SDK_DEFAULTS.get(f"{kind.__module__}.{kind.__qualname__}")
    except Exception:
        return None
    return found if found is not None or sdk is None else sdk_default(sdk)


def _requested(agents: dict[int, Any], event: Any) -> Endpoint | None:
    """The server of the model that makes the request ``event`` starts: the model of the agent
    or team among ``agents`` that Agno names by its id (``team_id``, ``agent_id``); None when
    none is, or two of that id call different servers."""
    try:
        wanted = getattr(event, "team_id", None) or getattr(event, "agent_id", None)
        servers = {
            _server(getattr(runner, "model", None))
            for runner in agents.values()
            if wanted and getattr(runner, "id", None) == wanted
        }
    except Exception:
        return None
    return servers.pop() if len(servers) == 1 else None


def agent_contract_request_messages(run_context: Any) -> None:
    """Agno's pre-hook: keeps the ``RunContext`` of a run an adapter reads (module doc).

    Agno sets ``run_context.messages`` to the live list its model is sent, after the
    pre-hooks; at each ``ModelRequestStarted`` it holds that request, unless parallel tools
    left a stale copy there (``_State.messages``). The hook's own
    ``PreHookStarted`` / ``PreHookCompleted`` events are kept from ``sink``.
    """
    run_id = getattr(run_context, "run_id", None)
    if run_id in _CONTEXTS:
        _CONTEXTS[run_id] = run_context


_HOOK_NAME = agent_contract_request_messages.__name__


class _State:
    """The run being read: its id, the open call's response id, tools seen and step."""

    __slots__ = (
        "agents", "calling", "failed_members", "fallbacks", "fell", "live", "model", "open_calls",
        "parsed", "phase_name", "read", "response_id", "run_id", "runs", "said", "seen",
        "server", "step", "tools_ran", "workflow",
    )  # fmt: skip

    def __init__(self) -> None:
        self.live: list[Any] | None = None  # the run's message list, as its model is sent it
        self.read = 0  # how much of ``live`` the requests so far were sent
        self.open_calls: dict[str, tuple[str, Any]] = {}  # call id -> name, arguments
        self.failed_members: dict[str, str] = {}  # delegation call id -> its member's error
        self.run_id: str | None = None
        self.response_id: str | None = None
        self.seen: set[str] = set()
        self.step = 0
        self.tools_ran = False
        self.calling = False  # a model request of the run is open
        self.said = False  # a model request was told
        self.workflow: str | None = None  # the workflow's run id, when it is one
        self.runs: list[Any] = []  # the run ids read: the run's, or each workflow step's
        self.phase_name: str | None = None  # the workflow step named last
        self.fell: list[tuple[str, list[Any]]] = []  # requests that fell back (_watch_fallbacks)
        # the fallback models still to try for the open request: each one's id and server
        self.fallbacks: list[tuple[Any, Endpoint | None]] = []
        self.model: str | None = None  # the open call's model, when a fallback's
        self.server: Endpoint | None = None  # the server of that fallback model
        self.agents: dict[int, Any] = {}  # the run's agents and teams, any depth (``_requested``)
        # the open call's answer came as the value Agno parsed (an ``output_schema``), no text
        # told: the model's text is told as the call ends (``_said``)
        self.parsed = False

    def feed(self, event: Any) -> tuple[AgentEvent | StreamEvent, ...]:
        kind = getattr(event, "event", None)
        if isinstance(kind, str) and kind.startswith("Team"):  # a team's own events
            kind = kind[4:]
        if kind == "RunStarted" and self.run_id is None:
            self.follow(event.run_id)
            return ()
        if self.workflow is not None:
            workflow = self.stepped(kind, event)
            if workflow is not None:
                return workflow
        elif kind == "WorkflowStarted" and self.run_id is None:
            self.workflow = event.run_id
            return ()
        if kind == "RunIntermediateContent" and getattr(event, "run_id", None) is None:
            # the model's text an output model rewrites (Agno names no run on it): its call's
            content = event.content
            return (TextDelta(text=content),) if isinstance(content, str) and content else ()
        if self.run_id is not None and getattr(event, "run_id", self.run_id) != self.run_id:
            return ()  # a member's or nested run's event
        if kind == "RunContent":
            return _content(self, event)
        if kind == "RunCompleted" and not isinstance(event.content, str):
            final = structured_final(event.content)  # an output_schema's value
            return () if final is None else (final,)
        if kind == "ModelRequestStarted":
            return self.start(event)
        if kind == "ModelRequestCompleted":
            return self.end(event)
        if kind == "ToolCallStarted":
            return self.call(event.tool)
        if kind == "ToolCallCompleted":
            self.tools_ran = True
            call_id = str(event.tool.tool_call_id)
            self.open_calls.pop(call_id, None)
            failed = self.failed_members.pop(call_id, None)
            if failed is not None:  # a member it ran failed: Agno hands the leader its text
                tool = event.tool
                return (failed_result(call_id, tool.result, tool.tool_name, failed),)
            return (_result(event.tool, self.run_id),)
        if kind == "RunPaused":  # calls waiting for the user: the run ends interrupted
            return self.paused(getattr(event, "tools", None) or ())
        if kind == "RunCancelled":  # Agent.cancel_run(run_id): the run ends cancelled
            return (cancelled_run("cancel_run"),)
        if kind == "RunError":
            if self.workflow is not None:  # a step's: Agno retries or skips the step, goes on
                return self.step_failed(event)
            raise AgnoRunError(str(event.content or "the Agno run failed"), event.error_type)
        return ()

    def step_failed(self, event: Any) -> tuple[AgentEvent, ...]:
        """A workflow step's run failed (its ``RunError``): its open call fails with it and
        ends, and the workflow goes on, as Agno's does (it runs the step again, up to its
        ``max_retries``, then skips it)."""
        error_type = event.error_type if isinstance(event.error_type, str) else None
        out: list[AgentEvent] = [
            Error(message=str(event.content or "the Agno run failed"), error_type=error_type)
        ]
        if self.calling:
            self.calling = False
            out.append(LLMCallEnd())
        return tuple(out)

    def follow(self, run_id: Any) -> None:
        """Read the run ``run_id`` from here: the run's own, or a workflow step's (the next
        request then starts a step of its own)."""
        self.run_id = run_id
        self.runs.append(run_id)
        _CONTEXTS[run_id] = None  # its pre-hook keeps the run's context
        self.live, self.read = None, 0
        self.tools_ran = self.tools_ran or self.said

    def stepped(self, kind: Any, event: Any) -> tuple[AgentEvent | StreamEvent, ...] | None:
        """A workflow's own event (``None``: another): a step starting is a phase named after
        it; the run a step starts (its agent's or team's, the workflow's run id its
        ``workflow_run_id``) is read from here on as the workflow's."""
        if kind == "StepStarted" and event.run_id == self.workflow:
            return self.phase(event)
        if kind == "WorkflowCompleted" and event.run_id == self.workflow:
            answer = event.content  # what the workflow returns (its last step's output)
            if isinstance(answer, str):
                return (MessageFinal(text=answer),)
            final = structured_final(answer)
            return () if final is None else (final,)
        if (
            kind == "RunStarted"
            and getattr(event, "workflow_run_id", None) == self.workflow
            and getattr(event, "parent_run_id", None) is None
        ):
            self.follow(event.run_id)
            return self.phase(event)  # (a step run again tells no StepStarted)
        return None

    def phase(self, event: Any) -> tuple[AgentEvent, ...]:
        """A phase naming the workflow step ``event`` is of, unless it is the one told last."""
        name = getattr(event, "step_name", None)
        if not isinstance(name, str) or not name or name == self.phase_name:
            return ()
        self.phase_name = name
        return (PhaseMarker(name=name),)

    def start(self, event: Any) -> tuple[AgentEvent, ...]:
        self.response_id = None
        provider = event.model_provider
        model = event.model or None
        if self.calling:  # the open request failed: Agno moved on to a fallback model
            return (*self.fell_back(), *self.start(event))
        self.calling = self.said = True
        server = self.server
        if self.model is not None:  # a fallback's (Agno names the agent's model)
            model = self.model
        else:
            server = _requested(self.agents, event)
        provider = provider.lower() if isinstance(provider, str) and provider else None
        before = self.live
        request = self.messages(getattr(_CONTEXTS.get(self.run_id), "messages", None))
        refused: tuple[AgentEvent, ...] = ()
        if request is not None:
            if request is before:  # what Agno added since the request before: its calls
                refused = self.refused(request[self.read :])
            self.read = len(request)
        start = (
            LLMCallStart(model=model, provider=provider, params={"stream": True})
            if request is None
            else call_start(model, provider, {"stream": True}, agno_messages, tuple(request))
        )
        start = at_endpoint(start, server)
        if not self.tools_ran and not refused:
            return (start,)
        boundary = StepBoundary(index=self.step)
        self.step, self.tools_ran = self.step + 1, False
        return (*refused, boundary, start)

    def refused(self, added: list[Any]) -> tuple[AgentEvent, ...]:
        """The calls Agno refused without running them, told from the messages it added for
        the model: a tool message answering a call no ``ToolCallStarted`` told (a name the
        agent lacks, arguments Agno could not read) is that call and its failed result,
        ``error.type`` Agno's outcome. Agno emits no tool event for them."""
        asked: dict[str, Any] = {}
        out: list[AgentEvent] = []
        for message in added:
            for call in getattr(message, "tool_calls", None) or ():
                if isinstance(call, dict) and call.get("id") is not None:
                    asked[str(call["id"])] = call.get("function")
            call_id = getattr(message, "tool_call_id", None)
            if getattr(message, "role", None) != "tool" or call_id is None:
                continue
            call_id = str(call_id)
            if call_id in self.seen or call_id not in asked:
                continue
            self.seen.add(call_id)
            function = asked[call_id] if isinstance(asked[call_id], dict) else {}
            name = getattr(message, "tool_name", None) or function.get("name")
            name = name if isinstance(name, str) else None
            arguments = function.get("arguments")
            arguments = arguments if isinstance(arguments, str) else ""
            content = getattr(message, "content", None)
            out.append(ToolCall(id=call_id, function=FunctionCall(name or "", arguments)))
            out.append(failed_result(call_id, content, name, _refusal(content)))
        return tuple(out)

    def messages(self, found: Any) -> list[Any] | None:
        """The list the model is sent, given what the run's context holds (``found``).

        Agno swaps ``run_context.messages`` for a shallow copy around each tool hook, on the
        tool's thread, and puts back what it found after the hook. Two tools in parallel can
        each put back the other's copy last: the context is left on a copy of the request
        before the tools' results, while Agno's model goes on with the live list (which only
        grows between requests). A list that is a copy of the start of the live one is such a
        copy: the live one is read. Another list (a retry's, a compacted history) is the new
        live one."""
        if not isinstance(found, list):
            return self.live
        live = self.live
        if live is not None and found is not live and _copies_the_start(found, live):
            return live
        self.live = found
        return found

    def end(self, event: Any) -> tuple[AgentEvent, ...]:
        model = self.model or event.model or None
        usage = _usage(event, model)
        said = _said(self.live) if self.parsed else None
        self.calling, self.model, self.fallbacks, self.parsed = False, None, [], False
        self.server = None
        end = LLMCallEnd(model=model, response_id=self.response_id)
        return (TextDelta(text=said), usage, end) if said else (usage, end)

    def fell_back(self) -> tuple[AgentEvent, ...]:
        """The open request failed and Agno tries the next fallback model: the call fails
        with the error Agno moved on from (the agent's model's, noted by
        ``_watch_fallbacks``; a fallback's own failure Agno keeps to itself), and the next
        call is the next fallback model's."""
        kind = "ModelProviderError"  # (Agno moves on from these only)
        if self.model is None and self.fell:  # the agent's model failed
            kind, self.fallbacks = self.fell.pop(0)
        self.calling = False
        self.model, self.server = self.fallbacks.pop(0) if self.fallbacks else (None, None)
        message = "the request failed; Agno moved on to a fallback model"
        return (Error(message=message, error_type=kind), LLMCallEnd())

    def paused(self, tools: Any) -> tuple[AgentEvent | InterruptFinal, ...]:
        """The run paused on calls waiting for the user (module doc): each one's call (Agno
        tells none for them), then one ``InterruptFinal`` each."""
        calls: list[AgentEvent] = []
        pauses: list[InterruptFinal] = []
        for tool in tools:
            reason = next((word for flag, word in _PAUSES if getattr(tool, flag, None)), None)
            call_id = getattr(tool, "tool_call_id", None)
            if reason is None or call_id is None:
                continue
            calls += self.call(tool)
            payload = {"tool": tool.tool_name, "arguments": tool.tool_args}
            pauses.append(InterruptFinal(interrupt_id=str(call_id), payload=payload, reason=reason))
        return (*calls, *pauses)

    def call(self, tool: Any) -> tuple[AgentEvent, ...]:
        call_id = tool.tool_call_id
        if call_id in self.seen:
            return ()
        self.seen.add(call_id)
        self.open_calls[str(call_id)] = (tool.tool_name, tool.tool_args or {})
        # (Agno reads arguments in Python's notation too: a set JSON has no form for)
        return tool_call(call_id, tool.tool_name, tool.tool_args)


def _copies_the_start(copy: list[Any], live: list[Any]) -> bool:
    """``copy`` holds the same objects as the start of ``live`` (a shallow copy taken before
    ``live`` grew)."""
    return len(copy) <= len(live) and all(a is b for a, b in zip(copy, live, strict=False))


class _Steps:
    """The steps of a workflow, one at a time: steps running at once (a ``Parallel``) stream
    their runs' events interleaved, and the contract tells one call at a time, so the first
    step to start is read live and each other one's events (by ``step_id``) are held until
    the live step completes (``StepCompleted``), then read whole, in the order they started:
    each call with its own text and tokens, its span starting when it is told. A held step's
    agent or team waits at each tool call until the adapter has told it (``_stepping_arun``),
    so the held steps are read as soon as the live one completes."""

    __slots__ = ("done", "held", "live")

    def __init__(self) -> None:
        self.held: dict[Any, list[Any]] = {}  # step id -> its events held, oldest step first
        self.live: Any = None  # the step read live
        self.done = False  # it has completed

    def order(self, event: Any) -> list[Any]:
        """The events to read now, ``event`` included unless it is held. A container's own
        events (a ``Parallel``'s, a ``Loop``'s...) carry its id as ``step_id`` but belong to
        no one step: read as they come, they neither take nor wait for the live slot."""
        kind = getattr(event, "event", None)
        container = isinstance(kind, str) and kind.startswith(_CONTAINERS)
        step = None if container else getattr(event, "step_id", None)
        if step is not None and step != self.live:
            if self.live is not None and not self.done:
                self.held.setdefault(step, []).append(event)
                return []
            self.live, self.done = step, False  # the next step to start goes live
        out = [event]
        if _completes(event, self.live):  # the held steps now, not at the next event: a held
            self.done = True  # step's tool waits to be told (``_stepping_arun``)
            out += self.release()
        elif step is not None and self.done:  # the step runs again (Agno retries it)
            self.done = False
        return out

    def release(self) -> list[Any]:
        """The held steps, oldest first, while the one before has completed."""
        out: list[Any] = []
        while self.held and self.done:
            self.live, events = next(iter(self.held.items()))
            del self.held[self.live]
            self.done = any(_completes(e, self.live) for e in events)
            out += events
        return out

    def rest(self) -> list[Any]:
        """Every event still held (the stream ended): oldest step first."""
        self.done = True
        return self.release()


_CONTAINERS = ("Parallel", "Loop", "Condition", "Router", "StepsExecution")
"""How the events of the workflow's containers of steps are named (``ParallelExecutionStarted``,
``LoopIterationCompleted``...): each carries the container's id as its ``step_id``."""


_STEP_ENDS = frozenset({
    "StepCompleted", "RunCompleted", "RunError", "RunCancelled",
    "TeamRunCompleted", "TeamRunError", "TeamRunCancelled",
})  # fmt: skip
"""A step's end: its ``StepCompleted``, or the end of the run it started (not a member's):
a step whose run failed in a ``Parallel`` has no ``StepCompleted`` (Agno keeps its failure to
itself), and a run Agno retries runs the step again."""


def _completes(event: Any, step: Any) -> bool:
    return (
        getattr(event, "event", None) in _STEP_ENDS
        and event.step_id == step
        and getattr(event, "parent_run_id", None) is None
    )


class _Members:
    """The member runs of a team's run, each a nested run under its delegation (module doc).

    A delegation that shows its result (``TeamMode.route``, a tool's ``show_result``) makes
    Agno stream the member's text as the team's own content (the team's run id), so the
    member's open call hears it only from the team's stream (``echo``)."""

    __slots__ = ("_calls", "_runs", "_side", "_taken", "_taker", "_team")

    def __init__(self, team: _State, taker: _Taker, side: deque[AgentEvent]) -> None:
        self._team = team
        self._taker = taker
        self._side = side  # the team's own side requests (a member run told nowhere else)
        self._runs: dict[Any, tuple[Pushed | None, _State]] = {}  # member run id -> its run
        self._calls: dict[Any, tuple[_State, str]] = {}  # member run id -> its delegation
        self._taken: set[str] = set()  # delegations a member run took (one each, in order)

    def claims(self, event: Any) -> bool:
        """A member's event: another run than the team's, started under it."""
        run_id = getattr(event, "run_id", None)
        team = self._team.run_id
        if team is None or run_id is None or run_id == team:
            return False
        return run_id in self._runs or getattr(event, "parent_run_id", None) is not None

    async def feed(self, event: Any) -> None:
        run_id = event.run_id
        found = self._runs.get(run_id)
        if found is None:
            found = self._runs[run_id] = (self._start(event), _State())
            found[1].agents = self._team.agents
            if found[0] is not None:
                self._taker.serve(run_id)
        nested, state = found
        ends = getattr(event, "event", None) in _RUN_ENDS
        if nested is None:  # no run of its own to tell its side requests in: the team's
            self._side.extend(_member_side(run_id, state, ends=True))
            return
        try:
            out = told(state.feed, event, passing=AgnoRunError)  # an odd event skipped
        except AgnoRunError as error:
            await nested.push(_member_side(run_id, state, ends=True))
            await nested.end(error)
            delegation = self._calls.get(run_id)
            if delegation is not None:  # its delegation fails with it (module doc)
                delegation[0].failed_members[delegation[1]] = error_name(error)
            return
        await nested.push(out)
        await nested.push(_member_side(run_id, state, ends=ends))
        if ends:
            await nested.end()

    async def echo(self, event: Any) -> None:
        """The team's own text (``event``, its content) while no request of the team's is
        open and a member's is: the member's text Agno streams as the team's (the class doc),
        told in that member's call too (the latest member speaking); the team keeps it as its
        answer."""
        if event.run_id != self._team.run_id:
            return
        for nested, state in reversed(self._runs.values()):
            if nested is not None and state.calling:
                await nested.push(told(_content, state, event))
                return

    def _start(self, event: Any) -> Pushed | None:
        parent = getattr(event, "parent_run_id", None)
        if parent == self._team.run_id:
            team = self._team
        else:  # a sub-team's member: under that sub-team's delegation, in its nested run
            found = self._runs.get(parent)
            if found is None or found[0] is None:
                return None
            team = found[1]
        name = getattr(event, "agent_name", None) or getattr(event, "team_name", None)
        call_id = self._delegation(team, event, name)
        if call_id is None:
            return None
        self._taken.add(call_id)
        self._calls[event.run_id] = (team, call_id)
        with tool_scope(call_id, team.open_calls[call_id][0]):
            return Pushed.start(name)

    def _delegation(self, team: _State, event: Any, name: Any) -> str | None:
        """The open delegation to this member (by ``member_id``), else the oldest open one."""
        wanted = {str(v).lower() for v in (getattr(event, "agent_id", None), name) if v}
        open_calls = team.open_calls
        for call_id, (_, args) in open_calls.items():
            member = args.get("member_id") if isinstance(args, dict) else None
            if call_id not in self._taken and str(member).lower() in wanted:
                return call_id
        for call_id, (tool, _) in open_calls.items():
            if tool.startswith("delegate_task_to_member") and (
                tool == "delegate_task_to_members" or call_id not in self._taken
            ):
                return call_id
        return None

    async def close(self, error: BaseException | None) -> None:
        """The team's run ended: so do the member runs still open, innermost first."""
        for run_id, (nested, state) in reversed(self._runs.items()):
            if nested is not None:
                await nested.push(_member_side(run_id, state, ends=True))
                await nested.end(error)
        self._runs.clear()


def _member_side(run_id: Any, state: _State, *, ends: bool) -> list[AgentEvent]:
    """A member run's side requests made since (``_member_asides``), told whole while no
    request of its own is open; all that is left once it ``ends``."""
    side = _SIDES.pop(run_id, None) if ends else _SIDES.get(run_id)
    if side is None:
        return []
    return list(side) if ends else _drained(side, state)


_RUN_ENDS = frozenset({"RunCompleted", "RunCancelled", "RunError", "RunPaused"})

# What a paused call waits for: the flag Agno sets on its ToolExecution, and its reason.
_PAUSES = (
    ("requires_confirmation", "confirmation"),
    ("requires_user_input", "user_input"),
    ("external_execution_required", "external_execution"),
)


def _content(state: _State, event: Any) -> tuple[AgentEvent, ...]:
    data = event.model_provider_data
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        state.response_id = data["id"]
    out: list[AgentEvent] = []
    if isinstance(event.reasoning_content, str) and event.reasoning_content:
        out.append(ReasoningDelta(text=event.reasoning_content))
    if isinstance(event.content, str) and event.content:
        out.append(TextDelta(text=event.content))
        state.parsed = False  # the call's text is told as it came
    elif event.content is not None and state.calling:
        state.parsed = True  # an output_schema's value, parsed: its text told at the end
    return tuple(out)


def _said(messages: Any) -> str | None:
    """The text of the model's answer an ``output_schema`` run got whole (Agno streams only
    the value it parsed): the content of the run's last message, the model's, once its
    request completed."""
    last = messages[-1] if isinstance(messages, list) and messages else None
    content = getattr(last, "content", None)
    return content if getattr(last, "role", None) == "assistant" and isinstance(content, str) else (
        None
    )  # fmt: skip


# The texts Agno hands the model for a call it refuses to run (agno.models.base and
# agno.utils.functions): its outcome, as error.type.
_REFUSALS = (
    ("Error: The requested tool does not exist or is not available.", "tool_not_found"),
    ("Error while decoding function arguments:", "invalid_arguments"),
    ("Function arguments are not a valid JSON object.", "invalid_arguments"),
)


def _refusal(content: Any) -> str:
    if isinstance(content, str):
        for text, outcome in _REFUSALS:
            if content.startswith(text):
                return outcome
    return "tool_error"


def _result(tool: Any, run_id: Any) -> ToolResult:
    call_id = str(tool.tool_call_id)
    key = _call_key(tool.tool_name, tool.tool_args or {})
    if tool.tool_call_error:
        raised = _RAISED.get(run_id, {}).get(key)
        kind = raised.pop(0) if raised else "tool_error"
        return failed_result(call_id, tool.result, tool.tool_name, kind)
    returned = _RETURNED.get(run_id, {}).get(key)
    if returned:  # the tool returned an exception: Agno told its text as a result
        return failed_result(call_id, tool.result, tool.tool_name, returned.pop(0))
    return ToolResult(tool_call_id=call_id, content=tool.result, name=tool.tool_name)

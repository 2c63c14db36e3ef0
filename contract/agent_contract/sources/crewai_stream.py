"""CrewAI: a crew's or an agent's ``kickoff`` as contract events.

CrewAI has no stream: it announces what it does on its event bus. The bus's listeners run on
a thread pool, two at a time, so they can see a tool finish before it started; and
``scoped_handlers()`` takes every other listener off the bus for its duration, so one run's
scope would silence a concurrent run's and the user's. The adapter listens instead at the
bus's own per-run seam, ``crewai.events.stream_context.add_stream_sink``: the bus calls each
sink synchronously, on the thread that emits, in emission order, for the events emitted in
the sink's ``contextvars`` context (CrewAI copies that context into the threads it runs
parallel tools on). Each run registers its sink in its own context, so concurrent runs stay
apart; a run started inside another's tool inherits the outer sink too, which drops what the
inner run emits (each sink takes only events of the innermost run of the context). Nothing
is pending when ``kickoff`` returns: the events are all queued by then (no ``flush()``
needed, and none lost at the end of the run).

``kickoff`` runs on a daemon thread of its own (a copy of the consumer's context), so the event
loop never blocks; ``crewai_async_events`` runs CrewAI's native ``akickoff`` instead, as a task
on the consumer's own loop (so what CrewAI awaits stays on the loop it was made on), cancelled
when the consumer stops. Either way the events cross to the consumer through a queue, one by
one as they happen (a tool CrewAI starts on the loop's own thread does not wait for the
consumer to catch up: it cannot run until that tool's task yields):

* ``AgentExecutionStartedEvent`` (an agent starts a task: a crew's next task, its next agent, a
  task retried after its guardrail refused the answer, a flow's next crew) and
  ``LiteAgentExecutionStartedEvent`` (an agent kicked off with no crew, as a flow's method
  does) start a step
  (a ``StepBoundary`` when a call came since the last one), after a ``PhaseMarker`` naming the
  agent's role when another agent worked before (a lone agent's run, or a coworker's nested
  run, is already named after it); agents working at once (``async_execution`` tasks) share
  the step, named after the first. A guardrail refusing the answer
  (``LLMGuardrailCompletedEvent`` with ``success=False``, before the task's retry) is an
  ``Error`` of the step that gave it, ``guardrail_rejected``, its feedback content;
* ``LLMCallStartedEvent``, which CrewAI emits as it starts the model request, opens a call
  (``LLMCallStart``: CrewAI's model name, its sampling parameters and the messages it sends;
  a ``StepBoundary`` first when tools ran since the call before);
  ``LLMStreamChunkEvent`` / ``LLMThinkingChunkEvent`` (``stream=True``) are ``TextDelta`` /
  ``ReasoningDelta``;
* ``LLMCallCompletedEvent`` closes it: a text response is the call's ``TextDelta`` (when it
  did not stream), a list of native tool calls their ``ToolCall``\\ s (the model's ids), then
  its ``Usage`` (CrewAI's usage dict: ``prompt_tokens``, ``cached_prompt_tokens``,
  ``reasoning_tokens``..., as its provider classes fill it; a ``CallUsage`` naming the call, as
  agents working at once have their calls open together) and ``LLMCallEnd``. A call whose
  function the LLM runs itself (``available_functions``: an agent's ``reasoning`` plan)
  completes with no usage, though its LLM counted it before: the sink reads the LLM's
  counters (``get_token_usage_summary``) as the call starts and as it ends, and the difference
  (``UsageMetrics.delta_since``, CrewAI's own per-call reading) is the call's usage.
  ``LLMCallFailedEvent`` (a request refused before its first chunk too) marks the call failed:
  CrewAI emits it while handling the exception, so the sink reads its class there. The call
  stays open: when the error comes out of ``kickoff`` it ends the call with that exception;
  when CrewAI retries instead (its agent retries a failed request), the next request ends it
  first, with an ``Error`` naming that class;
* ``ToolUsageStartedEvent`` is matched to the model's call by name and arguments (a
  ``ToolCall`` with an id of the adapter's when CrewAI parsed the call from text, ReAct style);
  ``ToolUsageFinishedEvent`` is its ``ToolResult``, ``ToolUsageErrorEvent`` (the tool raised)
  an error ``ToolResult`` (``error_type``: the exception's class; ``ValidationError`` for
  CrewAI's ``ValueError`` of arguments failing the tool's schema, raised from pydantic's).
  CrewAI hands the error back to the model, and the run goes on (unless its
  ``tool_failure_policy`` is ``"raise"``). A failure CrewAI reports on ``failure`` (a tool
  returning a ``ToolFailure``, a name the agent lacks, a usage limit...) is an error
  ``ToolResult`` too, its ``error_type`` the failure's ``code`` (the failing system's
  identifier), else CrewAI's ``reason``; ``tool_not_found`` for an unknown name, whose
  ``code`` CrewAI fills with the name the model made up. A delegation tool (``Delegate work
  to coworker``, ``Ask question to coworker``) returns CrewAI's error text instead of
  raising: a coworker the agent lacks is ``coworker_not_found``, a coworker that raised
  ``coworker_failed`` (the text read from CrewAI's own translations). A call a
  ``before_tool_call`` hook blocked (CrewAI runs no tool and answers with its own text,
  reporting no failure) fails ``guardrail_rejected``: the hook's dispatch inside the tool
  (``HookDispatchedEvent``, ``pre_tool_call``, ``aborted``) names it. The model's call is
  matched by the name CrewAI runs, which it sanitizes (``Get Weather`` runs ``get_weather``).

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through the same
sink: CrewAI calls it on the thread that runs the tool, in that thread's context, with
``ToolUsageStartedEvent`` just before the tool and ``ToolUsageFinishedEvent`` /
``ToolUsageErrorEvent`` just after, so the sink enters the scope at the first and leaves it at
the second (paired by CrewAI's ``started_event_id``). The events carry no call id: the tool's
name and arguments pick the call. Before entering, the tool's thread waits until the consumer
has taken every event queued before it: CrewAI's threads run ahead of a loaded consumer, and
a scope entered before the consumer has read the call's step would put the tool on the run.

What CrewAI emits while one of the run's tools runs (the coworker a hierarchical crew's
delegation tool runs, any agent run inside a tool) is that tool's work, not the run's: the sink
marks the context the tool runs in (``_INSIDE``, set at its ``ToolUsageStartedEvent`` and reset
at its end), and the consumer reads those events, as any CrewAI run, into a nested run
(``agent_contract.scope.nested_run``) under the call's span, started inside the call's scope at
the first of them, named after its agent's role and ended before the call's result (the
events of CrewAI's MCP client, an agent's ``mcps`` connecting to and calling the server, and
the dispatch of its tool hooks around the tool are the tool's own and start none). A tool
CrewAI's MCP client made (``MCPNativeTool``, ``MCPToolWrapper``), found among the tools of the
executor emitting its start (or of its agent), is scoped with its server (``McpServer``: the
name CrewAI gave it). Its own tools are scoped as the run's are, and what runs inside them
nests again, at any depth (the context holds the path of tools it runs in).

An event the reader cannot read (a field of a shape it does not read) is skipped and told
(``_stream.told``: what it gave before is kept), the run's or a nested run's, as
``read_events`` skips one; the events after it are read, and so is the run's end. Where the
sink's own reading fails on an event (its tool's scope), nothing reaches CrewAI's ``emit``:
the event is still read, and an ``Error`` (``unreadable_chunk``) follows it.

The ``kickoff`` result's text (``raw``) is the run's answer where it is not the last call's
text: an ``after_llm_call`` hook replaced the model's response (a redaction, CrewAI's own
example of one), or CrewAI took the answer out of the model's text. A structured result (an
agent's ``response_format``, the last task's ``output_pydantic`` or ``output_json``: its
``pydantic`` or ``json_dict``) is the run's answer as JSON (a ``StructuredFinal``).

Every CrewAI event of the run goes to ``sink`` untouched, then the ``kickoff`` result last.
Stopping early or cancelling stops delivering at once and takes the sink off; CrewAI has no
stop switch, so the step in flight finishes on its thread. Needs ``crewai`` (extra ``crewai``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from agent_contract.agent.events import MessageFinal, StreamEvent, StructuredFinal
from agent_contract.events import (
    AgentEvent,
    Error,
    FunctionCall,
    LLMCallEnd,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, inner_tool, tool_scope
from agent_contract.sources._arguments import arguments_text, tool_call
from agent_contract.sources._call_usage import CallUsage
from agent_contract.sources._endpoint import Endpoint, at_endpoint, held_endpoint
from agent_contract.sources._failure import Error as ContentError
from agent_contract.sources._failure import error_name, failed_result
from agent_contract.sources._history import call_start, crewai_messages
from agent_contract.sources._nested import Pushed
from agent_contract.sources._raw_usage import get
from agent_contract.sources._require import expect, require
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._stream import Sink, told, unreadable
from agent_contract.sources._structured import structured_final

__all__ = ["crewai_async_events", "crewai_events"]

_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "stop_sequences",
           "frequency_penalty", "presence_penalty", "n", "stream")  # fmt: skip
_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_prompt_tokens",
          "cache_creation_tokens", "reasoning_tokens")  # fmt: skip
_EVENT, _DONE, _FAILED, _CAUGHT_UP = "event", "done", "failed", "caught up"
_CALL_ENDS = ("LLMCallCompletedEvent", "LLMCallFailedEvent")
_TOOL_ENDS = ("ToolUsageFinishedEvent", "ToolUsageErrorEvent")
_TOOLS_OWN = ("MCPEvent", "HookDispatchedEvent")  # a tool's own work, no agent's (_tools_own)
_RUN: contextvars.ContextVar[object] = contextvars.ContextVar("crewai_run")
"""The innermost run of this context: a run inside a tool inherits the outer run's sink too."""
Path = tuple[str, ...]
"""Where an event belongs: the ``ToolUsageStartedEvent`` ids of the tools it runs inside, the
run's own tool first (``()``: the run's own event)."""
_INSIDE: contextvars.ContextVar[tuple[object, Path] | None] = contextvars.ContextVar(
    "crewai_tool", default=None
)
"""The run and the tools running in this context, outermost first: what CrewAI emits meanwhile
is the innermost tool's work (a coworker a delegation runs), not the run's."""


_HINT = "Make one with crewai.Crew(agents=..., tasks=...)."

_OWN: dict[str, str] = {}
"""The ``ToolUsageStartedEvent`` id of each tool CrewAI has started whose own ``run`` has not
yet begun -> its name (``_plain``): that ``run`` is the call's body; any other tool run while
a tool of the run is running is run by its body, an inner tool (``_runs_told``)."""


def _plain(name: Any) -> str:
    """A tool name as CrewAI sanitizes it for the model (``Get Weather``: ``get_weather``)."""
    return re.sub(r"\W+", "_", str(name).lower()).strip("_")


def _runs_told(runner: Any) -> None:
    """Wrap ``run`` of each tool the runner's agents have (an instance attribute, once; the
    agent's own, a crew's agents', its tasks' and its manager's): run inside the body of a
    tool of a run read here (``_INSIDE``), by no ``ToolUsageStartedEvent`` of its own
    (``_OWN``), a tool is asked for by no model: an ``inner_tool`` of that body, a span of its
    own under the calling tool's, with its arguments, result and failure (before, it had no
    span). Anywhere else it only runs the tool."""
    agents = getattr(runner, "agents", None) or ()
    tasks = getattr(runner, "tasks", None) or ()
    owners = [runner, *agents, *tasks, getattr(runner, "manager_agent", None)]
    for owner in owners:
        tools = getattr(owner, "tools", None)
        for tool in tools if isinstance(tools, list) else ():
            run = getattr(tool, "run", None)
            if not callable(run) or getattr(run, "_agent_contract_told", False):
                continue
            try:
                object.__setattr__(tool, "run", _told_run(_plain(getattr(tool, "name", "")), run))
            except Exception:  # a tool that takes no attributes: what its body runs untold
                continue


def _told_run(name: str, run: Any) -> Any:
    def told(*args: Any, **kwargs: Any) -> Any:
        inside = _INSIDE.get()
        if inside is None or not inside[1]:  # no tool of a run read here runs here
            return run(*args, **kwargs)
        key = inside[1][-1]
        if _OWN.get(key) == name:  # the started call's own body
            _OWN.pop(key, None)
            return run(*args, **kwargs)
        with inner_tool(name, kwargs if kwargs or not args else None) as call:
            result = run(*args, **kwargs)
            call.result(result)
        return result

    told._agent_contract_told = True  # type: ignore[attr-defined]
    return told


def crewai_events(
    runner: Any, *args: Any, sink: Sink | None = None, **kickoff: Any
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``runner.kickoff(*args, **kickoff)`` (a ``Crew`` or an ``Agent``) as events, on a
    thread of its own."""
    expect(runner, "crewai_events", "a crewai.Crew or crewai.Agent", "kickoff", hint=_HINT)
    return _events(runner, "kickoff", args, kickoff, sink)


def crewai_async_events(
    runner: Any, *args: Any, sink: Sink | None = None, **kickoff: Any
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``await runner.akickoff(*args, **kickoff)`` (CrewAI's native async kickoff of a
    ``Crew``, an ``Agent``, a ``Flow``) as events: a task on the consumer's own loop, so the
    clients it awaits stay on the loop they were made on."""
    expect(runner, "crewai_async_events", "a crewai.Crew or crewai.Agent", "akickoff", hint=_HINT)
    return _events(runner, "akickoff", args, kickoff, sink)


async def _events(
    runner: Any, entry: str, args: Any, kickoff: Any, sink: Sink | None
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """The run of ``runner``'s ``entry`` (``kickoff`` on a thread, ``akickoff`` as a task)."""
    module = "crewai.events.stream_context"
    add_stream_sink, reset_stream_sinks = require(module, "add_stream_sink", "reset_stream_sinks")
    framework_started(__name__)  # before the framework makes any request
    _runs_told(runner)  # (once CrewAI is known to be there: it reads the runner's tools)

    loop = asyncio.get_running_loop()
    home = threading.get_ident()  # the loop's thread: a tool started there cannot wait
    items: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stopped = threading.Event()

    def put(kind: str, value: Any) -> bool:
        if stopped.is_set():
            return False
        try:
            loop.call_soon_threadsafe(items.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody waits any more
            return False
        return True

    def caught_up() -> None:
        """On the tool's thread: wait until the consumer has taken every event queued so far,
        so the tool's scope finds the step and call those events open (a loaded consumer
        lags CrewAI's threads; the early span would land on the run). Never once stopped."""
        if threading.get_ident() == home:  # akickoff's own task: the consumer runs after it
            return
        taken = threading.Event()
        if put(_CAUGHT_UP, taken):
            while not taken.wait(0.05) and not stopped.is_set():
                pass

    me = object()
    scopes = OpenScopes()
    # id(failed event) -> its exception; id(completed) -> usage; id(started) -> its server
    raised: dict[int, Any] = {}
    reader = _Reader(raised, _role(runner))
    tools = _Inside(me)
    nested = _Nested(reader, raised)
    counters: dict[Any, Any] = {}  # open call id -> its LLM's counters as it started

    def listen(source: Any, event: Any) -> None:
        if _RUN.get() is not me:  # a run streamed inside one of this run's tools: its own
            return
        kind = type(event).__name__
        if kind == "LLMCallFailedEvent":  # emitted in an ``except`` block
            raised[id(event)] = sys.exc_info()[1]
        elif kind in _CALL_ENDS:  # (CrewAI counts a call before it completes: module doc)
            spent = _spent(source, counters.pop(getattr(event, "call_id", None), None))
            if spent is not None and kind == "LLMCallCompletedEvent":
                raised[id(event)] = spent
        elif kind == "LLMCallStartedEvent":
            counters[getattr(event, "call_id", None)] = _counted(source)
            if (server := _server(source)) is not None:
                raised[id(event)] = server
        inside: Path = ()
        try:  # inside CrewAI's emit: what our reading raises must not reach CrewAI
            inside = tools.inside(event)  # the run's own event, or a nested run's at any depth
            called = None
            if type(event).__name__ == "ToolUsageStartedEvent":
                caught_up()
                called = reader.called(event) if not inside else None  # the model's own name
            _scope(scopes, event, called, source)
            tools.enter(event, inside)
        except Exception:  # still read by the consumer, the failure told after it
            put(_EVENT, (event, inside, True))
        else:
            put(_EVENT, (event, inside, False))

    @contextmanager
    def outcome_told() -> Iterator[None]:
        """Around the kickoff (on a thread or as a task): our sink on, and its failure handed
        to the consumer as the same object."""
        _RUN.set(me)
        token = add_stream_sink(listen)
        try:
            yield
        except BaseException as exc:  # handed to the consumer as the same object
            put(_FAILED, exc)
        finally:
            reset_stream_sinks(token)

    def run() -> None:
        with outcome_told():
            put(_DONE, runner.kickoff(*args, **kickoff))

    async def arun() -> None:
        with outcome_told():
            put(_DONE, await runner.akickoff(*args, **kickoff))

    context = contextvars.copy_context()
    ended: BaseException | None = None
    task: asyncio.Task[None] | None = None
    try:
        if entry == "akickoff":
            task = context.run(asyncio.create_task, arun())  # (3.10: no context=)
        else:
            thread = threading.Thread(target=context.run, args=(run,), name="crewai-run")
            thread.daemon = True
            thread.start()
        while True:
            kind, value = await items.get()
            if kind == _CAUGHT_UP:
                value.set()
                continue
            if kind == _FAILED:
                raise value
            if kind == _DONE:
                if sink is not None:
                    sink(value)
                await nested.close(None)
                for event in told(reader.finish, value):
                    yield event
                return
            event, inside, unheard = value
            if sink is not None:
                sink(event)
            await nested.ended(inside, event)
            if inside:  # CrewAI's work inside one of the run's tools
                await nested.feed(inside, event, unheard)
                continue
            for out in told(reader.feed, event):  # an odd event skipped and told
                yield out
            if unheard:  # the sink's reading failed on it (its tool's scope): told
                yield unreadable()
    except (Exception, asyncio.CancelledError) as error:
        ended = error
        raise
    finally:
        stopped.set()
        if task is not None and not task.done():  # stopped early: CrewAI's task stops too
            task.cancel()
        with suppress(Exception):
            await nested.close(ended)


_MCP_TOOLS = frozenset({"MCPNativeTool", "MCPToolWrapper"})
"""The tools CrewAI's MCP client makes of a server's (an agent's ``mcps``)."""


def _server(llm: Any) -> Endpoint | None:
    """The server a CrewAI ``llm`` (the source of its call's events) sends to: a native
    provider's SDK client (OpenAI's, Anthropic's, Bedrock's botocore one; made with the LLM),
    else the ``base_url`` or ``api_base`` (an Azure LLM's ``endpoint``) it was given; None for
    a LiteLLM-backed LLM on its provider's default."""
    return held_endpoint(llm, ("_client", "_async_client"), ("base_url", "api_base", "endpoint"))


def _mcp_server(source: Any, event: Any) -> McpServer | None:
    """The server of the tool ``event`` starts, if CrewAI's MCP client made it: looked up by
    the name CrewAI runs among the tools of ``source`` (the executor emitting it) and of its
    agent. Never raises."""
    try:
        from crewai.utilities.string_utils import (  # type: ignore[import-not-found,unused-ignore]
            sanitize_tool_name,
        )

        for holder in (source, getattr(event, "from_agent", None), getattr(event, "agent", None)):
            for attribute in ("original_tools", "tools"):
                tools = getattr(holder, attribute, None)
                for tool in tools if isinstance(tools, list) else ():
                    if type(tool).__name__ not in _MCP_TOOLS:
                        continue
                    if sanitize_tool_name(str(tool.name)) == event.tool_name:
                        server = getattr(tool, "server_name", None)
                        return McpServer(name=server if isinstance(server, str) else None)
    except Exception:  # a version without these names: a plain tool
        return None
    return None


def _tools_own(event: Any) -> bool:
    """Whether ``event`` tells of the tool's own work rather than of an agent run inside it:
    CrewAI's MCP client (an agent's ``mcps``) emits its connection and request events
    (``MCPEvent``'s family) from inside the tool that calls the server, and its hook dispatch
    (``HookDispatchedEvent``) from inside the tool its tool hooks run around."""
    return any(c.__name__ in _TOOLS_OWN for c in type(event).__mro__)


def _blocks(event: Any) -> bool:
    """Whether ``event`` says a ``before_tool_call`` hook blocked the tool it runs in."""
    return (
        type(event).__name__ == "HookDispatchedEvent"
        and getattr(event, "interception_point", None) == "pre_tool_call"
        and getattr(event, "outcome", None) == "aborted"
    )


def _scope(scopes: OpenScopes, event: Any, called: str | None = None, source: Any = None) -> None:
    """Enter a tool's scope as CrewAI starts it (as ``called``, the name the model called it
    by, when CrewAI sanitized it; ``source``: what emitted it), leave it as the tool ends
    (module doc)."""
    kind = type(event).__name__
    if kind == "ToolUsageStartedEvent":
        name = called or event.tool_name
        mcp = _mcp_server(source, event)
        scopes.enter(event.event_id, None, name, arguments_text(event.tool_args), mcp=mcp)
    elif kind in _TOOL_ENDS:
        scopes.exit(getattr(event, "started_event_id", None))


class _Inside:
    """The sink's side: ``_INSIDE`` set in the context a tool runs in (the run's, or a nested
    run's at any depth), from its ``ToolUsageStartedEvent`` to its end (the same thread and
    context, as its scope)."""

    __slots__ = ("_run", "_tokens")

    def __init__(self, run: object) -> None:
        self._run = run
        self._tokens: dict[str, contextvars.Token[tuple[object, Path] | None]] = {}

    def inside(self, event: Any) -> Path:
        """Where ``event`` belongs (``Path``): a tool's own end belongs where the tool did."""
        current = _INSIDE.get()
        if current is None or current[0] is not self._run:  # a run streamed in a tool: its own
            return ()
        path = current[1]
        started = getattr(event, "started_event_id", 0)
        if type(event).__name__ in _TOOL_ENDS and path and started == path[-1]:
            token = self._tokens.pop(path[-1], None)
            try:
                _INSIDE.reset(token) if token is not None else _INSIDE.set(None)
            except ValueError:  # reset in another context than it was set in
                _INSIDE.set((self._run, path[:-1]) if len(path) > 1 else None)
            _OWN.pop(path[-1], None)
            return path[:-1]
        return path

    def enter(self, event: Any, path: Path) -> None:
        if type(event).__name__ == "ToolUsageStartedEvent":
            key = str(event.event_id)
            _OWN[key] = _plain(getattr(event, "tool_name", ""))
            self._tokens[key] = _INSIDE.set((self._run, (*path, key)))


class _Nested:
    """The consumer's side: what CrewAI runs inside a tool (the coworker a delegation tool
    runs, an agent a tool kicks off) is a nested run under that tool's span, read as any
    CrewAI run and named after its agent, started at its first event (inside the call's
    scope) and ended with the tool, before its result; at any depth (a ``Path`` each). Nothing
    traces it: its events are not the run's."""

    __slots__ = ("_raised", "_reader", "_runs")

    def __init__(self, reader: _Reader, raised: dict[int, Any]) -> None:
        self._reader = reader
        self._raised = raised
        self._runs: dict[Path, tuple[Pushed | None, _Reader]] = {}  # path -> its run

    def _reader_of(self, path: Path) -> _Reader | None:
        if not path:
            return self._reader
        found = self._runs.get(path)
        return found[1] if found is not None and found[0] is not None else None

    async def feed(self, inside: Path, event: Any, unheard: bool = False) -> None:
        """Read ``event`` into the run at ``inside`` (``unheard``: the sink failed on it,
        told after its events)."""
        if _blocks(event) and (owner := self._reader_of(inside[:-1])) is not None:
            owner.blocked.add(inside[-1])  # its result is the hook's refusal (module doc)
        found = self._runs.get(inside)
        if found is None:
            if _tools_own(event):  # the tool's own MCP request or hook: no agent runs in it
                return
            role = _role(getattr(event, "agent", None)) or _role(event)
            found = self._runs[inside] = (self._start(inside, role), _Reader(self._raised, role))
        run, reader = found
        if run is not None:
            await run.push(told(reader.feed, event))
            if unheard:
                await run.push((unreadable(),))
        else:
            self._raised.pop(id(event), None)

    def _start(self, inside: Path, role: str | None) -> Pushed | None:
        parent = self._reader_of(inside[:-1])
        call = parent.started.get(inside[-1]) if parent is not None else None
        if call is None:
            return None
        with tool_scope(call[0], call[1]):
            return Pushed.start(role)

    async def ended(self, inside: Path, event: Any) -> None:
        """``event`` of the run at ``inside``: a tool's end ends what ran inside it first
        (innermost first)."""
        kind = type(event).__name__
        if kind not in _TOOL_ENDS:
            return
        key = str(getattr(event, "started_event_id", None))
        owner = self._reader_of(inside)
        if owner is not None:
            owner.started.pop(key, None)
        tool = (*inside, key)
        below = sorted((p for p in self._runs if p[: len(tool)] == tool), key=len, reverse=True)
        error = getattr(event, "error", None) if kind == "ToolUsageErrorEvent" else None
        for path in below:
            run, reader = self._runs.pop(path)
            if run is not None:
                await run.push(told(reader.finish, None))
                await run.end(error if isinstance(error, BaseException) and path == tool else None)

    async def close(self, error: BaseException | None) -> None:
        """The run ended: so do the nested runs still open, innermost first."""
        runs, self._runs = self._runs, {}
        for path in sorted(runs, key=len, reverse=True):
            run, reader = runs[path]
            if run is not None:
                await run.push(told(reader.finish, None))
                await run.end(error)


class _Reader:
    """One run's state: the open call, the model's tool calls waiting for CrewAI to run them."""

    def __init__(self, raised: dict[int, Any], role: str | None = None) -> None:
        self.calls: dict[str, str] = {}  # open LLM call ids (CrewAI's) -> model name
        self.streamed: set[str] = set()  # calls whose text came as chunks
        self.waiting: list[tuple[str, str, str]] = []  # (id, name, arguments) not yet started
        self.running: list[tuple[str, str, str]] = []  # started, not finished
        self.tools_ran = False
        self.asked = False  # a model call started in this step
        self.working = 0  # agents working on a task now (more than one: async_execution)
        self.phase = role  # the agent working now (a lone agent's, or a nested run's: its name)
        self.step = 0
        self.made = 0  # ids the adapter made (ReAct calls)
        self.answered = False
        self.text: str | None = None  # the last call's text answer
        self.raised = raised  # id(event) -> what the sink heard of it (shared): a failed
        # call's exception, a completed call's usage counted by its LLM, a started call's
        # server (its LLM's: ``_server``)
        self.started: dict[str, tuple[str, str]] = {}  # tool's started event id -> (call id, name)
        self.failed: tuple[str, str, str | None] | None = None  # (call id, type, message)
        self.blocked: set[str] = set()  # started event ids of calls a hook blocked

    def feed(self, event: Any) -> Iterator[AgentEvent]:
        kind = type(event).__name__
        handle = getattr(self, f"_{kind}", None)
        if handle is not None:
            yield from handle(event)

    def finish(self, result: Any) -> Iterator[AgentEvent | StreamEvent]:
        """The run ended with ``result`` (``kickoff``'s; ``None``: a nested run's end): its
        structured answer is the run's; else its text (``raw``) is told when no model text
        was one, and is the run's answer when it is not the last call's text (module doc)."""
        yield from self._end_failed()
        structured = _structured(result)
        if structured is not None:
            yield structured
            return
        raw = getattr(result, "raw", None)
        if not isinstance(raw, str) or not raw:
            return
        if not self.answered:
            yield TextDelta(text=raw)
        elif raw != self.text:  # an after_llm_call hook's replacement (module doc)
            yield MessageFinal(text=raw)

    def _AgentExecutionStartedEvent(self, event: Any) -> Iterator[AgentEvent]:
        """An agent starts a task (a crew's next task, its next agent, a task's retry after its
        guardrail refused the answer, a flow's next crew): a step of its own, after a
        ``PhaseMarker`` naming the agent when it is not the one that worked before. Agents
        working at once (``async_execution`` tasks) share the step, and name none."""
        self.working += 1
        if self.working > 1:
            return
        yield from self._end_failed()
        if self.asked:
            yield from self._boundary()
        role = _role(getattr(event, "agent", None)) or _role(event)  # (a lite one: agent_info)
        if role is not None and role != self.phase:
            self.phase = role
            yield PhaseMarker(name=role)

    def _AgentExecutionCompletedEvent(self, event: Any) -> Iterator[AgentEvent]:
        self.working = max(0, self.working - 1)
        yield from ()

    _AgentExecutionErrorEvent = _AgentExecutionCompletedEvent
    # an agent kicked off with no crew (``Agent.kickoff``, a flow's method running one): the same
    _LiteAgentExecutionStartedEvent = _AgentExecutionStartedEvent
    _LiteAgentExecutionCompletedEvent = _AgentExecutionCompletedEvent
    _LiteAgentExecutionErrorEvent = _AgentExecutionCompletedEvent

    def _LLMGuardrailCompletedEvent(self, event: Any) -> Iterator[AgentEvent]:
        """A guardrail (a task's, or an agent's) refused the answer: CrewAI hands its feedback
        to the agent, which answers again in a step of its own; the step that gave the
        refused answer fails ``guardrail_rejected``. The feedback is content (it often
        quotes the answer)."""
        if getattr(event, "success", True) is not False:
            return
        feedback = getattr(event, "error", None)
        told = feedback if isinstance(feedback, str) and feedback else "guardrail_rejected"
        yield ContentError(message=told, error_type="guardrail_rejected")

    def _boundary(self) -> Iterator[AgentEvent]:
        self.tools_ran = self.asked = False
        yield StepBoundary(index=self.step)
        self.step += 1

    def _LLMCallStartedEvent(self, event: Any) -> Iterator[AgentEvent]:
        yield from self._end_failed()
        if self.tools_ran:
            yield from self._boundary()
        self.asked = True
        params = {k: v for k in _PARAMS if (v := getattr(event, k, None)) is not None}
        self.calls[event.call_id] = event.model
        messages = getattr(event, "messages", None)
        copy = tuple(messages) if isinstance(messages, list) else messages
        start = call_start(event.model, None, params, crewai_messages, copy)
        start.call_id = event.call_id
        yield at_endpoint(start, self.raised.pop(id(event), None))

    def _LLMCallFailedEvent(self, event: Any) -> Iterator[AgentEvent]:
        error = self.raised.pop(id(event), None)
        if self.failed is not None and self.failed[0] == event.call_id:
            return  # CrewAI reports a failure once per layer it passes through
        if event.call_id in self.calls:
            yield from self._end_failed()
            kind = error_name(error) if error is not None else "llm_call_failed"
            message = getattr(event, "error", None)
            self.failed = (event.call_id, kind, message if isinstance(message, str) else None)

    def _end_failed(self) -> Iterator[AgentEvent]:
        """End the call that failed and was not the run's end (CrewAI went on)."""
        if self.failed is None:
            return
        call_id, kind, message = self.failed
        self.failed = None
        model = self.calls.pop(call_id, None)
        yield Error(message=message or kind, error_type=kind)
        yield LLMCallEnd(model=model, call_id=call_id)

    def _LLMStreamChunkEvent(self, event: Any) -> Iterator[AgentEvent]:
        if event.call_id in self.calls and event.chunk and event.tool_call is None:
            self.streamed.add(event.call_id)
            yield TextDelta(text=event.chunk)

    def _LLMThinkingChunkEvent(self, event: Any) -> Iterator[AgentEvent]:
        if event.call_id in self.calls and event.chunk:
            yield ReasoningDelta(text=event.chunk)

    def _LLMCallCompletedEvent(self, event: Any) -> Iterator[AgentEvent]:
        counted = self.raised.pop(id(event), None)  # its LLM's count, when CrewAI gave none
        if event.call_id not in self.calls:
            return
        model = self.calls.pop(event.call_id)
        response = event.response
        if isinstance(response, str):
            self.text = response
            if response and event.call_id not in self.streamed:
                self.answered = True
                yield TextDelta(text=response)
        elif isinstance(response, list):
            for call in response:
                found = _native_call(call)
                if found is not None:
                    self.waiting.append(found)
                    yield ToolCall(id=found[0], function=FunctionCall(found[1], found[2]))
        self.streamed.discard(event.call_id)
        usage = _usage(event.usage, event.call_id) or _usage(counted, event.call_id)
        if usage is not None:
            yield usage
        yield LLMCallEnd(
            model=model, call_id=event.call_id, finish_reason=event.finish_reason,
            response_id=event.response_id,
        )  # fmt: skip

    def called(self, event: Any) -> str | None:
        """The name the model called the tool ``event`` starts by (on the tool's thread, once
        the consumer caught up: ``waiting`` holds the model's calls; a copy is read)."""
        name, args = event.tool_name, arguments_text(event.tool_args)
        for _, n, a in list(self.waiting):
            if _runs_as(n, name) and _same(a, args):
                return n
        return None

    def _ToolUsageStartedEvent(self, event: Any) -> Iterator[AgentEvent]:
        self.tools_ran = True
        name, args = event.tool_name, arguments_text(event.tool_args)
        for i, (call_id, n, a) in enumerate(self.waiting):
            if _runs_as(n, name) and _same(a, args):
                self.running.append(self.waiting.pop(i))
                self.started[event.event_id] = (call_id, name)
                return
        self.made += 1
        call_id = f"crewai_{self.made}"
        self.running.append((call_id, name, args))
        self.started[event.event_id] = (call_id, name)
        yield from tool_call(call_id, name, event.tool_args)

    def _ToolUsageFinishedEvent(self, event: Any) -> Iterator[AgentEvent]:
        found = self._take(event)
        if found is None:
            return
        failure = getattr(event, "failure", None)  # a ToolFailure the tool returned
        kind = _failure_type(failure) if failure is not None else _delegation_failed(event)
        started = str(getattr(event, "started_event_id", None))
        if started in self.blocked:  # a before_tool_call hook blocked it (module doc)
            self.blocked.discard(started)
            kind = "guardrail_rejected"
        if kind is None:
            yield ToolResult(tool_call_id=found[0], content=event.output, name=found[1])
        else:
            yield failed_result(found[0], event.output, found[1], kind)

    def _ToolUsageErrorEvent(self, event: Any) -> Iterator[AgentEvent]:
        found = self._take(event)
        if found is not None:
            error = event.error
            yield failed_result(found[0], str(error), found[1], _error_type(error))

    def _take(self, event: Any) -> tuple[str, str, str] | None:
        name, args = event.tool_name, arguments_text(event.tool_args)
        for i, (_, n, a) in enumerate(self.running):
            if _runs_as(n, name) and _same(a, args):
                return self.running.pop(i)
        return None


def _structured(result: Any) -> StructuredFinal | None:
    """The structured answer of a ``kickoff`` result (an agent's ``response_format``, a
    task's ``output_pydantic`` or ``output_json``), as JSON; ``None`` for a text answer."""
    return structured_final(getattr(result, "pydantic", None) or getattr(result, "json_dict", None))


def _role(agent: Any) -> str | None:
    """The role of a CrewAI agent (or of the event naming one: ``agent_role``, ``agent_info``),
    if it has one (a crew or a flow has none)."""
    info = getattr(agent, "agent_info", None)
    role = (getattr(agent, "agent_role", None) or getattr(agent, "role", None)
            or (info.get("role") if isinstance(info, dict) else None))  # fmt: skip
    return role if isinstance(role, str) and role else None


def _counted(llm: Any) -> Any:
    """The lifetime token counters of the LLM that emitted a call's start (CrewAI's
    ``UsageMetrics``), or None for a source that keeps none."""
    summary = getattr(llm, "get_token_usage_summary", None)
    if not callable(summary):
        return None
    try:
        return summary()
    except Exception:  # an LLM of another shape: nothing counted
        return None


def _spent(llm: Any, before: Any) -> dict[str, Any] | None:
    """What the LLM counted since ``before`` (its counters as the call started), CrewAI's own
    per-call reading (``UsageMetrics.delta_since``); None when nothing can be read."""
    if before is None or not hasattr(before, "delta_since"):
        return None
    after = _counted(llm)
    try:
        spent = after.delta_since(before) if after is not None else None
        return spent.model_dump() if spent is not None else None
    except Exception:  # counters of another shape: nothing read
        return None


def _usage(usage: Any, call_id: Any) -> Usage | None:
    """CrewAI's usage dict, the same keys for every provider (its ``UsageMetrics`` names), of
    the call ``call_id`` (agents working at once have their calls open together)."""
    counts = {key: get(usage, key) for key in _USAGE}
    counts = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    if not counts.get("prompt_tokens") and not counts.get("completion_tokens"):
        return None
    return CallUsage(
        call_id=call_id if isinstance(call_id, str) else None,
        input_tokens=counts.get("prompt_tokens"), output_tokens=counts.get("completion_tokens"),
        total_tokens=counts.get("total_tokens"),
        cache_read_tokens=counts.get("cached_prompt_tokens") or None,
        cache_creation_tokens=counts.get("cache_creation_tokens") or None,
        reasoning_tokens=counts.get("reasoning_tokens") or None,
    )  # fmt: skip


def _native_call(call: Any) -> tuple[str, str, str] | None:
    """``(id, name, arguments)`` of a provider's tool call, a dict or the SDK's object."""
    function = call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
    call_id = call.get("id") if isinstance(call, dict) else getattr(call, "id", None)
    if function is None or not isinstance(call_id, str):
        return None
    name = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
    args = (
        function.get("arguments") if isinstance(function, dict)
        else getattr(function, "arguments", None)
    )  # fmt: skip
    if not isinstance(name, str):
        return None
    return call_id, name, arguments_text(args)


def _runs_as(called: str, name: Any) -> bool:
    """Whether the model's call of ``called`` is CrewAI's run of tool ``name``: CrewAI runs
    the name sanitized (its ``sanitize_tool_name``: lower case, ``a-z0-9_``)."""
    if called == name:
        return True
    try:
        from crewai.utilities.string_utils import (  # type: ignore[import-not-found,unused-ignore]
            sanitize_tool_name,
        )
    except ImportError:
        return False
    try:
        return bool(sanitize_tool_name(called) == name)
    except Exception:  # a name CrewAI cannot sanitize: not this tool
        return False


def _same(a: str, b: str) -> bool:
    """Two argument texts mean the same (JSON compared as values, else as text). Each value is
    first written by the adapters' rule, as the tool's start writes CrewAI's ``tool_args``: a
    model's ``NaN`` is then the ``null`` its parsed arguments were written with."""
    if a == b:
        return True
    try:
        return bool(_written(a) == _written(b))
    except (ValueError, RecursionError):
        return False


def _written(text: str) -> Any:
    """``text``'s JSON value as the arguments rule writes it (``arguments_text``)."""
    value = json.loads(text)
    return value if isinstance(value, str) else json.loads(arguments_text(value))


def _failure_type(failure: Any) -> str:
    """``error.type`` of a failure CrewAI reports on a finished tool (``ToolFailure``): its
    ``code`` (the failing system's identifier), else its ``reason`` (CrewAI's category); a
    name the agent lacks is ``tool_not_found`` (its ``code`` is that name: unbounded)."""
    reason = getattr(failure, "reason", None)
    value = getattr(reason, "value", reason)
    if value == "unknown_tool":
        return "tool_not_found"
    code = getattr(failure, "code", None)
    if isinstance(code, str) and code:
        return code
    return value if isinstance(value, str) and value else "tool_error"


_DELEGATIONS = frozenset({"delegate_work_to_coworker", "ask_question_to_coworker"})
_DELEGATION_FAILURES = (("agent_tool_unexisting_coworker", "coworker_not_found"),
                        ("agent_tool_execution_error", "coworker_failed"))  # fmt: skip
"""CrewAI's texts (its translations' keys) a delegation tool returns instead of raising, and
the ``error.type`` each is."""


def _delegation_failed(event: Any) -> str | None:
    """``error.type`` of a delegation tool's failure, which CrewAI returns as text (a coworker
    the agent named does not exist, or the coworker raised), else None. Never raises."""
    output = getattr(event, "output", None)
    if getattr(event, "tool_name", None) not in _DELEGATIONS or not isinstance(output, str):
        return None
    try:
        from crewai.utilities.i18n import (  # type: ignore[import-not-found,unused-ignore]
            I18N_DEFAULT,
        )

        for key, kind in _DELEGATION_FAILURES:
            opening = str(I18N_DEFAULT.errors(key)).split("{", 1)[0].strip()
            if opening and output.strip().startswith(opening):
                return kind
    except Exception:  # a version without these names: the tool's text is its result
        return None
    return None


_INVALID_ARGUMENTS = " arguments validation failed: "
"""CrewAI's text of the ``ValueError`` it raises from an ``args_schema``'s validation error."""


def _error_type(error: Any) -> str:
    """``error.type`` of what a tool raised: its class; CrewAI's ``ValueError`` for arguments
    failing the tool's schema is the validation error it was raised from."""
    if not isinstance(error, BaseException):
        return "tool_error"
    cause = error.__cause__
    if type(error) is ValueError and cause is not None and _INVALID_ARGUMENTS in str(error):
        return error_name(cause)
    return error_name(error)

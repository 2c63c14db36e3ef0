"""AutoGen AgentChat: an agent's or team's ``run_stream`` as contract events.

AutoGen streams the messages of a run (pydantic models read by class name; nothing of AutoGen
is imported here). Its stream has no model-call-start event, so the adapter hears each
request at the model client: it gives each agent (each member of a team, each agent used as a
tool) a thin stand-in for its ``_model_client`` that notes the messages of every ``create`` /
``create_stream`` call and hands the call on unchanged (everything else is the client's own).
The stream reaches the adapter only with the call's first output, so the LLM call
(``LLMCallStart``, with the noted messages) opens at the first
``ModelClientStreamingChunkEvent`` or ``ThoughtEvent`` of a response, else when the response
itself arrives; a request that raises before any output (a 429) opens its call as the error
comes out, so the error lands on that call, as does one cancelled before any output (the
run's ``CancellationToken``, the caller's time limit): it was sent, and is cut short. It
closes at the response:

* ``ModelClientStreamingChunkEvent`` (with ``model_client_stream=True``) is a ``TextDelta``,
  or a ``ReasoningDelta`` between ``<think>`` tags: AutoGen's OpenAI client streams the
  model's ``reasoning_content`` so, and an R1 model writes its reasoning so, before the answer.
  ``ThoughtEvent`` is AutoGen's ``CreateResult.thought``, which its clients fill with the text
  a model said beside tool calls, else with an answer's reasoning. After chunks it repeats
  them, and adds nothing. With nothing streamed, the response after it says which it is: text
  before tool calls (``TextDelta``), else reasoning (``ReasoningDelta``).
* ``ToolCallRequestEvent`` is the response asking for tools: a ``ToolCall`` per
  ``FunctionCall`` (the model's ids), its ``models_usage`` a ``Usage``, then ``LLMCallEnd``.
  A chat message from an agent carrying ``models_usage`` (``TextMessage``,
  ``StructuredMessage``, ``HandoffMessage``...) is a response in text and ends its call the
  same way. AutoGen's ``RequestUsage`` has prompt and completion tokens only: cache and
  reasoning counts do not reach its events.
* ``ToolCallExecutionEvent``: each ``FunctionExecutionResult`` a ``ToolResult`` by
  ``call_id`` (``is_error`` marks a tool that raised); the next model call starts a new step.
  An agent that does not reflect on its tools' results (``reflect_on_tool_use=False``)
  answers with them: its ``ToolCallSummaryMessage`` (the results in its
  ``tool_call_summary_format``) is text told after the call, the run's answer.
* A ``CodeExecutorAgent`` tells its request for code by a ``CodeGenerationEvent`` (a response
  in text, its usage the one its noting client saw returned: the event has none), and the
  code's run by a ``CodeExecutionEvent``: a ``code_execution`` call of that response (AutoGen
  gives it no id: ``code_execution_<n>``), the code its arguments, the output its result,
  failed on a non-zero exit code. A ``TextMessage`` no model call carries (a custom agent's
  reply, a model-less ``CodeExecutorAgent``'s output) is text after the call, the answer.
  AutoGen keeps only a failure's text; ``AssistantAgent``'s own outcomes are read from its
  fixed texts (``tool_not_found``: a name no workbench has; ``JSONDecodeError``: arguments
  that do not parse), and a tool's exception is seen by its scope (below).
* In a team, the first speaker and each message from another agent than the one before yield
  a ``PhaseMarker`` named after it (a change of speaker starts a new step, after a model
  call), so the trace shows who spoke, every step naming its speaker; the
  task's own message (``source="user"``) and the final ``TaskResult`` go to ``sink`` only.
* A team's own model calls (a ``SelectorGroupChat`` picking the next speaker, Magentic-One's
  orchestrator) reach the stream not at all, or as chunks and a selection without usage: the
  team's ``_model_client`` (each team's, teams as members included) becomes a stand-in that
  records each call whole as it ends, before AutoGen makes the team's manager with it, with
  the number of items the team had put in its output queue when the call started (the
  queue's ``put_nowait`` counts them). The manager runs ahead of the reader, so that number
  places the call among the stream's items: once the reader is past them, it is a call of its
  own (messages, answer, usage; it lasts no time) in a step after a ``PhaseMarker`` named
  after the team's manager; the manager's own items pass to ``sink`` only. A call that raised
  opens as the run's error comes out, which ends it. A selector's picks are side calls
  (``SideCallStart``): the run's model, input and answer stay its members' (Magentic-One's
  orchestrator's calls are the team's own: its last one answers).

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call. AutoGen has no
public tool-wrapping seam; every tool of an ``AssistantAgent`` (MCP workbenches' too) runs
through one of its workbenches' ``call_tool`` / ``call_tool_stream`` with the call's id, so the
adapter wraps those two methods on each workbench of the agent (or of each member of a team,
a ``SocietyOfMindAgent``'s team included) once, as instance attributes: the body, and the
tasks AutoGen starts for it, run under the call's span. Outside a traced run the wrappers do
nothing. Handoff tools are not tools. A sync ``FunctionTool`` runs on the loop's executor,
whose threads AutoGen gives no context (``run_in_executor`` of the bare function), so the
adapter makes each such tool's function, once, a coroutine function that runs the same
function on the same executor in a copy of the calling task's context (each call its own copy:
parallel calls of one tool each run under their own span); its signature, arguments,
cancellation and result are AutoGen's as before. The workbench turns what a tool raises
(its body, or arguments failing its validation) into text inside ``call_tool``, out of that
scope's sight, so each tool's ``run_json`` is wrapped once too (an instance attribute) to run
under its call's scope: the tracer sees the exception leave it and names the failure by its
class, while the model gets AutoGen's text as before.

A lone agent runs at its reader's pace (``run_stream`` is its own generator), so a tool starts
only after the reader has read the response asking for it. A team does not: its members run
in tasks of the team's runtime, ahead of the reader, and a member's tool would start before
the reader had the step of its request, its span landing in the run or in another member's
step. So in a traced run a member's tool first waits until the run's reader (or the nested
run's, for a team used as a tool) has handed on all the events of the response asking for it,
as a lone agent's does by AutoGen's own design; a few turns of the loop with a reader that
keeps reading. Nothing waits when no tracer records the run, nor once its reader has ended
(closing the stream releases every waiting tool before AutoGen's close waits for them).

An agent or team used as a tool (``AgentTool``, ``TeamTool``) runs inside its call's
``call_tool_stream``, whose items AutoGen also puts in the outer agent's stream. The wrapper
reads them there, in the tool's task under its span, as a nested run of their own
(``agent_contract.scope.nested_run``, named after the inner agent or team, read as this
adapter reads any run), and the outer run passes over them: each nested run keeps its calls,
tokens and answer under its own tool, parallel calls included, at any depth. With no tracer
claiming the nested run they stay in the outer run, as before.

The model name comes from the agent's model client where it keeps one (``_create_args``
of the OpenAI clients); ``model=`` overrides it. ``sink`` receives every AutoGen item
untouched, in order. Closing the stream early closes AutoGen's generator. Needs
``autogen-agentchat`` (extra ``autogen-agentchat``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from agent_contract.events import (
    AgentEvent,
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
from agent_contract.scope import McpServer, framework_started, nested_run, tool_scope
from agent_contract.sources._endpoint import Endpoint, at_endpoint, client_endpoint
from agent_contract.sources._failure import failed_result
from agent_contract.sources._history import SideCallStart, autogen_messages, call_start
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import TAKEN, through
from agent_contract.sources._raw_usage import is_count
from agent_contract.sources._require import expect, require
from agent_contract.sources._server_tools import CODE_EXECUTION
from agent_contract.sources._stream import Sink, read_events

__all__ = ["autogen_events"]

_THINK, _THOUGHT = "<think>", "</think>"
_NOT_A_RESPONSE = frozenset({"TaskResult", "UserInputRequestedEvent"})


_TAKES = "an AutoGen AgentChat agent or team"
_HINT = "Make one with autogen_agentchat.agents.AssistantAgent(name, model_client=...)."


async def autogen_events(
    agent: Any, task: Any, *, model: str | None = None, sink: Sink | None = None, **run: Any
) -> AsyncIterator[AgentEvent]:
    """Run ``agent`` (an agent or a team) on ``task`` with ``run_stream``, yielding events."""
    framework_started(__name__)  # before the framework makes any request
    require("autogen_agentchat")
    expect(agent, "autogen_events", _TAKES, "run_stream", "save_state", hint=_HINT)
    _scope_workbenches(agent, set())
    requests = _activate(_note_requests(agent, {}))
    gate = _Gate.open(agent)
    stream = agent.run_stream(task=task, **run)
    state = _State(model or _model_name(agent), requests, agent)

    def read(item: Any) -> Iterator[AgentEvent]:
        state.got += 1
        if TAKEN.take(item):  # a nested run's, recorded under its tool already
            return
        try:
            yield from state.feed(item)
        finally:
            gate.read(item)  # its tools may start, read or not

    try:
        async for out in read_events(stream, read, sink):  # an item of odd fields skipped
            yield out
    except (Exception, asyncio.CancelledError):
        # a request that failed (or was cancelled: a CancellationToken, the caller's time
        # limit) before its first output: its call
        for out in state.refused():
            yield out
        raise
    finally:
        _activate(requests, on=False)
        state.end()
        gate.close()  # before AutoGen's close, which waits for the team's tasks to finish
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def _scope_workbenches(agent: Any, seen: set[int]) -> None:
    """Wrap ``call_tool`` of every workbench of ``agent`` and its team's members (module doc)."""
    if id(agent) in seen:
        return
    seen.add(id(agent))
    for workbench in getattr(agent, "_workbench", None) or ():
        if getattr(workbench, "_agent_contract_scoped", False):
            continue
        call_tool = getattr(workbench, "call_tool", None)
        call_tool_stream = getattr(workbench, "call_tool_stream", None)

        async def scoped_call(
            name: str, arguments: Any = None, cancellation_token: Any = None,
            call_id: str | None = None, _call: Any = call_tool, _bench: Any = workbench,
        ) -> Any:  # fmt: skip
            await _Gate.wait(_bench, call_id)
            with tool_scope(call_id, name, mcp=_mcp_server(_bench)):
                return await _call(name, arguments, cancellation_token, call_id)

        async def scoped_stream(
            name: str, arguments: Any = None, cancellation_token: Any = None,
            call_id: str | None = None, _stream: Any = call_tool_stream, _bench: Any = workbench,
        ) -> Any:  # fmt: skip
            await _Gate.wait(_bench, call_id)
            with tool_scope(call_id, name, mcp=_mcp_server(_bench)):
                async for item in _stream(name, arguments, cancellation_token, call_id):
                    yield item

        # AutoGen 0.7's McpWorkbench has no call_tool_stream: wrap what the workbench has
        if callable(call_tool):
            workbench.call_tool = scoped_call
        if callable(call_tool_stream):
            workbench.call_tool_stream = scoped_stream
        workbench._agent_contract_scoped = True
        for tool in getattr(workbench, "_tools", None) or ():  # agents and teams used as tools
            _in_context(tool)
            runner = getattr(tool, "_task_runner", None)
            if runner is None:
                _scoped_run(tool)
            else:
                _nest(tool)
                _scope_workbenches(runner, seen)
    for member in _members(agent):
        _scope_workbenches(member, seen)


def _mcp_server(workbench: Any) -> McpServer | None:
    """The MCP server of an ``McpWorkbench`` (``None``: another workbench), read as its call
    starts (the workbench connects on its first use): its ``initialize_result``'s."""
    if not any(c.__name__ == "McpWorkbench" for c in type(workbench).__mro__):
        return None
    return server_of(workbench)


def _in_context(tool: Any) -> None:
    """A sync ``FunctionTool``'s function made a coroutine function running it on the loop's
    executor in a copy of the caller's context, once (module doc)."""
    func = getattr(tool, "_func", None)
    if type(tool).__name__ != "FunctionTool" or not callable(func):
        return
    if asyncio.iscoroutinefunction(func) or getattr(func, "_agent_contract_context", False):
        return

    @functools.wraps(func)
    async def in_context(*args: Any, **kwargs: Any) -> Any:
        context = contextvars.copy_context()  # the calling task's: its call's scope
        call = functools.partial(context.run, func, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(None, call)

    in_context._agent_contract_context = True  # type: ignore[attr-defined]
    tool._func = in_context


def _scoped_run(tool: Any) -> None:
    """A tool's ``run_json`` run under its call's scope too, once (an instance attribute): the
    workbench turns what the body raises (arguments failing the tool's validation included)
    into text inside ``call_tool``, where the workbench's own scope never sees it; this one
    does, so a tracer names the failure by the exception's class. Arguments, result and
    exception are AutoGen's as before."""
    run_json = getattr(tool, "run_json", None)
    if not callable(run_json) or getattr(run_json, "_agent_contract_scoped", False):
        return

    @functools.wraps(run_json)
    async def scoped(args: Any, cancellation_token: Any, call_id: str | None = None) -> Any:
        with tool_scope(call_id, getattr(tool, "name", None)):
            return await run_json(args, cancellation_token, call_id=call_id)

    scoped._agent_contract_scoped = True  # type: ignore[attr-defined]
    try:
        tool.run_json = scoped
    except (AttributeError, TypeError, ValueError):  # a tool class refusing attributes
        return


def _members(agent: Any) -> list[Any]:
    """What runs inside ``agent``'s turn and speaks in its stream: a team's members, a
    ``SocietyOfMindAgent``'s team."""
    members = list(getattr(agent, "_participants", None) or ())
    team = getattr(agent, "_team", None)
    if team is not None and hasattr(team, "run_stream"):
        members.append(team)
    return members


def _nest(tool: Any) -> None:
    """Wrap ``run_json_stream`` of an agent or team used as a tool (once, as an instance
    attribute): its run is a nested run (module doc). Read there, not from the workbench,
    which hands each item on only when the next one comes: a tool of the inner agent would
    start before the nested run had read the call asking for it."""
    if getattr(tool, "_agent_contract_nested", False):
        return
    run_json_stream = tool.run_json_stream

    async def nested(args: Any, cancellation_token: Any, call_id: str | None = None) -> Any:
        runner = tool._task_runner
        inner = _Inner(runner)
        items = run_json_stream(args, cancellation_token, call_id=call_id)
        try:  # under its call's scope too, as ``_scoped_run``: what the run raises is named
            with tool_scope(call_id, getattr(tool, "name", None)):
                async for item in through(getattr(runner, "name", None), items, inner.feed):
                    yield item
        finally:
            _activate(inner.state.requests, on=False)
            inner.state.end()
            inner.gate.close()

    tool.run_json_stream = nested
    tool._agent_contract_nested = True


class _Inner:
    """The run inside an agent tool, read as any run is; its items are marked taken."""

    __slots__ = ("gate", "state")

    def __init__(self, runner: Any) -> None:
        self.state = _State(_model_name(runner), _activate(_note_requests(runner, {})), runner)
        self.gate = _Gate.open(runner)

    def feed(self, item: Any) -> Iterator[AgentEvent]:
        """The item's events; once the nested run recorded them all, its tools may start."""
        self.state.got += 1
        names = {base.__name__ for base in type(item).__mro__}
        if not names & {"BaseAgentEvent", "BaseChatMessage"} or item in TAKEN:
            return  # the tool's own result; an item of a run nested deeper, recorded there
        TAKEN.add(item)
        try:
            yield from self.state.feed(item)
        finally:
            self.gate.read(item)  # its tools may start, read or not


class _Gate:
    """A team's tools wait here until the run's reader has handed on the response asking for
    them (see the module doc): one per reader (a run, a nested run), set on the workbenches of
    the agent or team it reads and of the team's members, deeper teams included (not on those
    of agents used as tools: their own nested run reads those). Only while a tracer records
    the run (none: nothing to order, so nothing waits), and until the reader ends."""

    __slots__ = ("_credit", "_waiting", "live")

    def __init__(self, live: bool) -> None:
        self.live = live
        self._credit: dict[str, int] = {}  # calls read, their tools not started yet (by id)
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    @classmethod
    def open(cls, agent: Any) -> _Gate:
        """The gate of a reader starting on ``agent``, live when a tracer claims the run."""
        gate = cls(nested_run() is not None)
        if gate.live:
            _set_gate(agent, gate, set())
        return gate

    @staticmethod
    async def wait(workbench: Any, call_id: str | None) -> None:
        """Until the reader of ``workbench``'s run has handed on call ``call_id``."""
        gate = getattr(workbench, "_agent_contract_gate", None)
        if not isinstance(gate, _Gate) or not gate.live or not call_id:
            return
        credit = gate._credit.get(call_id, 0)
        if credit:
            gate._credit[call_id] = credit - 1
            return
        waiter = asyncio.get_running_loop().create_future()
        gate._waiting.setdefault(call_id, []).append(waiter)
        await waiter

    def read(self, item: Any) -> None:
        """The reader handed on ``item``'s events: the tools it asked for may start."""
        if not self.live or type(item).__name__ != "ToolCallRequestEvent":
            return
        for call in item.content:
            call_id = getattr(call, "id", None)
            if not isinstance(call_id, str) or not call_id:
                continue
            waiting = [w for w in self._waiting.get(call_id, ()) if not w.done()]
            if waiting:
                waiting[0].set_result(None)
                self._waiting[call_id] = waiting[1:]
            else:
                self._credit[call_id] = self._credit.get(call_id, 0) + 1

    def close(self) -> None:
        """The reader ended: nothing waits any more."""
        self.live = False
        waiting, self._waiting, self._credit = self._waiting, {}, {}
        for waiters in waiting.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)


def _set_gate(agent: Any, gate: _Gate, seen: set[int]) -> None:
    if id(agent) in seen:
        return
    seen.add(id(agent))
    for workbench in getattr(agent, "_workbench", None) or ():
        workbench._agent_contract_gate = gate
    for member in _members(agent):
        _set_gate(member, gate, seen)


class _Noted(list[tuple[Any, ...]]):
    """One agent's model requests not yet shown by an event: copies of their messages, oldest
    first, and the usage of the last one answered (``usage``: a ``CodeExecutorAgent`` tells
    its code's request by a ``CodeGenerationEvent``, which carries none). Noted only while a
    run of the adapter is active (``active``)."""

    active = False

    def __init__(self) -> None:
        super().__init__()
        self.usage: Any = None


class _NotingClient:
    """An agent's model client, noting each request's messages; the rest is the client's."""

    def __init__(self, client: Any, noted: _Noted) -> None:
        self._agent_contract_client = client
        self._agent_contract_noted = noted

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent_contract_client, name)

    def _note(self, messages: Any) -> None:
        noted = self._agent_contract_noted
        if noted.active:
            noted.append(tuple(messages))

    def create_stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self._note(messages)
        items = self._agent_contract_client.create_stream(messages, *args, **kwargs)
        noted = self._agent_contract_noted
        return _usage_kept(items, noted) if noted.active else items

    async def create(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self._note(messages)
        result = await self._agent_contract_client.create(messages, *args, **kwargs)
        noted = self._agent_contract_noted
        if noted.active:
            noted.usage = getattr(result, "usage", None)
        return result


async def _usage_kept(items: Any, noted: _Noted) -> AsyncIterator[Any]:
    """A streamed request's items, unchanged; the usage of its ``CreateResult`` (the last
    item) kept in ``noted``."""
    try:
        async for item in items:
            if type(item).__name__ == "CreateResult":
                noted.usage = getattr(item, "usage", None)
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


def _note_requests(agent: Any, out: dict[str, _Noted]) -> dict[str, _Noted]:
    """Give ``agent`` and its team's members a noting model client (once each); their notes
    by agent name."""
    client = getattr(agent, "_model_client", None)
    name = getattr(agent, "name", None)
    if client is not None and isinstance(name, str) and name not in out:
        if not isinstance(client, _NotingClient):
            client = agent._model_client = _NotingClient(client, _Noted())
        out[name] = client._agent_contract_noted
    for member in _members(agent):
        _note_requests(member, out)
    return out


def _activate(requests: dict[str, _Noted], *, on: bool = True) -> dict[str, _Noted]:
    """Start noting ``requests`` afresh (a run starts), or stop (it ended)."""
    for noted in requests.values():
        noted.clear()
        noted.active = on
    return requests


class _Puts:
    """How many items AutoGen put in a team's output queue: the place of a team's own call
    among the items of the stream (the stream yields them in that order)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    @classmethod
    def of(cls, team: Any) -> _Puts | None:
        """The counter of ``team``'s output queue, counting afresh from the run starting: the
        queue is the team's for its life, and a team run again (AutoGen's way to continue a
        conversation) starts its stream's items from the first again, while the queue held
        items the last run did not yield (its termination notices)."""
        queue = getattr(team, "_output_message_queue", None)
        if queue is None or not callable(getattr(queue, "put_nowait", None)):
            return None
        puts = getattr(queue, "_agent_contract_puts", None)
        if isinstance(puts, cls):
            puts.count = 0
        else:
            puts = queue._agent_contract_puts = cls()
            put_nowait = queue.put_nowait

            def counted(item: Any) -> Any:  # ``put`` puts through it too
                puts.count += 1
                return put_nowait(item)

            queue.put_nowait = counted
        return puts


class _Made(list[tuple[int, Any, Any, BaseException | None]]):
    """A team's own model calls made and not yet reported: ``(after, messages, result,
    error)``, ``after`` the number of the stream's items put before the call started. Recorded
    only while a run of the adapter reads the team (``active``). ``side``: they pick the next
    speaker (a ``SelectorGroupChat``'s), side calls beside the members' own."""

    active = False
    puts: _Puts | None = None
    side = False


class _MakingClient(_NotingClient):
    """A team's own model client (a ``SelectorGroupChat``'s speaker selection, Magentic-One's
    orchestrator): its calls reach the team's stream not at all (or as text without usage),
    so each is recorded whole, as it ends, for the reader to report (``_State._team``)."""

    def __init__(self, client: Any, made: _Made) -> None:
        super().__init__(client, _Noted())
        self._agent_contract_made = made

    def _after(self) -> int:
        puts = self._agent_contract_made.puts
        return puts.count if puts is not None else 0

    def _made(
        self, after: int, messages: Any, result: Any, error: BaseException | None = None
    ) -> None:
        if self._agent_contract_made.active:
            self._agent_contract_made.append((after, tuple(messages), result, error))

    async def create_stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        after, result = self._after(), None
        try:
            async for chunk in self._agent_contract_client.create_stream(messages, *args, **kwargs):
                result = chunk
                yield chunk
        except Exception as error:
            self._made(after, messages, None, error)
            raise
        self._made(after, messages, result)

    async def create(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        after = self._after()
        try:
            result = await self._agent_contract_client.create(messages, *args, **kwargs)
        except Exception as error:
            self._made(after, messages, None, error)
            raise
        self._made(after, messages, result)
        return result


def _team_clients(
    agent: Any, puts: _Puts | None, out: dict[str, list[_Made]]
) -> dict[str, list[_Made]]:
    """Each team's own model client (``agent``'s, its teams as members') made a recording one
    (once; before its first run, when AutoGen makes the team's manager with it), recording
    afresh: the calls each makes, by its manager's name, as it signs its items; ``puts``: the
    counter of the read team's output queue, which places them among the stream's items."""
    client = getattr(agent, "_model_client", None)
    name = getattr(agent, "_group_chat_manager_name", None)
    members = _members(agent)
    if client is not None and isinstance(name, str) and hasattr(agent, "_participants"):
        if not isinstance(client, _MakingClient):
            client = agent._model_client = _MakingClient(client, _Made())
        made: _Made = client._agent_contract_made
        made.clear()
        made.active, made.puts = True, puts
        made.side = any(kind.__name__ == "SelectorGroupChat" for kind in type(agent).__mro__)
        out.setdefault(name, []).append(made)
    for member in members:
        _team_clients(member, puts, out)
    return out


def _servers(agent: Any, out: dict[str, Endpoint]) -> dict[str, Endpoint]:
    """The server each speaker of ``agent`` calls, by the name its items are signed with (an
    agent's, a team manager's): its model client's SDK client's (an ``OpenAIChatCompletionClient``'s
    or Azure's OpenAI client, an ``AnthropicChatCompletionClient``'s), none for a client holding
    no SDK client (a replay client); a property that raises costs only its server."""
    try:
        client = getattr(agent, "_model_client", None)
        client = getattr(client, "_agent_contract_client", client)
        name = getattr(agent, "_group_chat_manager_name", None) or getattr(agent, "name", None)
        found = client_endpoint(getattr(client, "_client", None))
    except Exception:
        found = None
    if found is not None and isinstance(name, str):
        out.setdefault(name, found)
    for member in _members(agent):
        _servers(member, out)
    return out


def _model_name(agent: Any) -> str | None:
    client = getattr(agent, "_model_client", None)
    client = getattr(client, "_agent_contract_client", client)
    args = getattr(client, "_create_args", None)
    name = args.get("model") if isinstance(args, dict) else None
    return name if isinstance(name, str) else None


class _State:
    __slots__ = ("called", "code", "got", "group", "model", "open", "ran", "reasoned",
                 "requests", "said", "servers", "source", "step", "team", "texted", "thinking",
                 "thought", "tools_ran")  # fmt: skip

    def __init__(self, model: str | None, requests: dict[str, _Noted], team: Any = None) -> None:
        self.model = model
        self.requests = requests
        self.team = _team_clients(team, _Puts.of(team), {})  # the teams' own calls, by name
        self.group = bool(_members(team))  # several speak: the first one is named too
        self.servers = _servers(team, {})  # the server each speaker's model calls, by name
        self.got = 0  # the stream's items read (the last one included)
        self.open = False
        self.texted = False  # the open call streamed text
        self.reasoned = False  # the open call streamed reasoning
        self.thinking = False  # the open call's chunks are inside <think> tags
        self.said: list[str] = []  # the open call's streamed text
        self.thought: str | None = None  # a thought no chunk showed, its kind not known yet
        self.called = False  # the current step has a model call (or an answer no model said)
        self.source: str | None = None
        self.step = 0
        self.tools_ran = False
        self.code = ""  # the code a CodeExecutorAgent's model wrote last
        self.ran = 0  # code executions told

    def feed(self, item: Any) -> list[AgentEvent]:
        kind = type(item).__name__
        source = getattr(item, "source", None)
        if kind in _NOT_A_RESPONSE or source in (None, "user"):
            return []
        out: list[AgentEvent] = []
        if self.team:
            self._team(out)
            if source in self.team:  # a manager's chunks, selection: its recorded calls say it
                return out
        self._speaker(source, out)
        if self.thought is not None and kind != "ThoughtEvent":
            self._held(out, beside_calls=kind == "ToolCallRequestEvent")
        if kind == "ToolCallExecutionEvent":
            self.tools_ran = True
            out += [_result(result) for result in item.content]
        elif kind == "ToolCallSummaryMessage":  # no reflection: the results are the answer
            if isinstance(item.content, str) and item.content:
                out.append(TextDelta(text=item.content))  # after the call: no model said it
        elif kind == "ModelClientStreamingChunkEvent":
            self._open(out)
            if item.content:
                self._chunk(item.content, out)
        elif kind == "ThoughtEvent":
            self._open(out)
            if item.content:
                self._thought(item.content, out)
        elif kind == "ToolCallRequestEvent":
            self._open(out)
            out += [_call(call) for call in item.content]
            self._close(out, item.models_usage)
        elif kind == "CodeGenerationEvent":  # a CodeExecutorAgent's request, answered
            self._open(out)
            if isinstance(item.content, str) and item.content and not self.texted:
                out.append(TextDelta(text=item.content))
            blocks = getattr(item, "code_blocks", None) or ()
            self.code = "\n".join(str(getattr(block, "code", "")) for block in blocks)
            noted = self.requests.get(self.source or "")
            usage = None
            if noted is not None:
                usage, noted.usage = noted.usage, None
            self._close(out, usage)
        elif kind == "CodeExecutionEvent":
            out += self._executed(item.result)
        elif getattr(item, "models_usage", None) is not None or (self.open and _is_message(item)):
            self._open(out)
            text = item.content if kind == "TextMessage" else None
            if text and isinstance(text, str) and not self.texted:  # a response not streamed
                out.append(TextDelta(text=text))
            self._close(out, item.models_usage)
        elif kind == "TextMessage" and isinstance(item.content, str) and item.content:
            out.append(TextDelta(text=item.content))  # no model said it: an agent's own answer
            self.called = True  # its step: the next speaker's starts a new one
        return out

    def _executed(self, result: Any) -> list[AgentEvent]:
        """A ``CodeExecutorAgent``'s run of the code its model wrote (its ``CodeResult``): a
        ``code_execution`` call of that request, the code its arguments, the output its
        result, failed (``tool_error``) on a non-zero exit code. AutoGen gives it no id."""
        self.ran += 1
        self.tools_ran = True
        call_id = f"code_execution_{self.ran}"
        arguments = json.dumps({"code": self.code})
        call = ToolCall(id=call_id, function=FunctionCall(CODE_EXECUTION, arguments))
        output = getattr(result, "output", None)
        if getattr(result, "exit_code", 0) != 0:
            return [call, failed_result(call_id, output, CODE_EXECUTION, "tool_error")]
        return [call, ToolResult(tool_call_id=call_id, content=output, name=CODE_EXECUTION)]

    def _chunk(self, text: str, out: list[AgentEvent]) -> None:
        """A streamed chunk: reasoning between ``<think>`` tags, else text. AutoGen's OpenAI
        client marks ``reasoning_content`` so, and an R1 model writes so: always before the
        answer, so only a chunk opening with the tag before any text starts reasoning (a text
        naming the tag stays text)."""
        if not self.thinking and not self.texted and text.startswith(_THINK):
            self.thinking, text = True, text[len(_THINK) :]
        if self.thinking:
            end = text.find(_THOUGHT)
            reasoning, text = (text, "") if end < 0 else (text[:end], text[end + len(_THOUGHT) :])
            self.thinking = end < 0
            if reasoning:
                self.reasoned = True
                out.append(ReasoningDelta(text=reasoning))
        if text:
            self.texted = True
            self.said.append(text)
            out.append(TextDelta(text=text))

    def _thought(self, thought: str, out: list[AgentEvent]) -> None:
        """AutoGen's thought: a tool-calling response's text, or an answer's reasoning (its
        clients' meaning). After chunks it repeats them (the text beside the calls, or the
        reasoning streamed between tags): only a thought they did not show is reasoning. With
        nothing streamed, the response that follows says which it is (``_held``)."""
        if not (self.texted or self.reasoned):
            self.thought = (self.thought or "") + thought
        elif not self.reasoned and thought.strip() != "".join(self.said).strip():
            out.append(ReasoningDelta(text=thought))

    def _held(self, out: list[AgentEvent], *, beside_calls: bool = False) -> None:
        """The thought no chunk showed: the text beside tool calls, else the reasoning."""
        thought, self.thought = self.thought or "", None
        if beside_calls:
            self.texted = True
            out.append(TextDelta(text=thought))
        else:
            self.reasoned = True
            out.append(ReasoningDelta(text=thought))

    def _speaker(self, source: Any, out: list[AgentEvent]) -> None:
        if source == self.source:
            return
        if self.source is not None and self.called and not self.open:  # a new speaker: a new step
            out.append(StepBoundary(index=self.step))
            self.step, self.tools_ran, self.called = self.step + 1, False, False
        if self.source is not None or self.group:  # a lone agent's own name is the run's
            out.append(PhaseMarker(name=str(source)))
        self.source = source

    def end(self) -> None:
        """The run ended: the teams' calls are no longer recorded."""
        for made in (made for team in self.team.values() for made in team):
            made.active = False
            made.clear()

    def _team(self, out: list[AgentEvent], *, failed: bool = False) -> None:
        """The teams' own calls that started before the item just read (``_MakingClient``),
        each a whole call in a step of its team's manager; ``failed``: the run failed, and a
        call that raised opens (the error ends it)."""
        for name, team in self.team.items():
            for made in team:
                while made and (failed or (made[0][3] is None and made[0][0] < self.got)):
                    _, messages, result, error = made.pop(0)
                    self._speaker(name, out)
                    self._open(out, messages, side=made.side)
                    if error is not None:
                        return
                    content = getattr(result, "content", None)
                    if isinstance(content, str) and content:
                        out.append(TextDelta(text=content))
                    self._close(out, getattr(result, "usage", None))

    def _open(self, out: list[AgentEvent], messages: Any = None, *, side: bool = False) -> None:
        if self.open:
            return
        if self.tools_ran:
            out.append(StepBoundary(index=self.step))
            self.step, self.tools_ran = self.step + 1, False
        self.called = True
        noted = self.requests.get(self.source or "")
        if messages is None and noted:
            messages = noted.pop(0)
        start: LLMCallStart
        if messages is not None:
            start = call_start(self.model, None, {"stream": True}, autogen_messages, messages,
                               side=side)  # fmt: skip
        else:
            kind = SideCallStart if side else LLMCallStart
            start = kind(model=self.model, params={"stream": True})
        out.append(at_endpoint(start, self.servers.get(self.source or "")))
        self.open, self.texted, self.reasoned, self.thinking = True, False, False, False
        self.said.clear()

    def refused(self) -> list[AgentEvent]:
        """The run failed: a request no output showed yet (the one that raised) opens its
        call, which the error then ends."""
        out: list[AgentEvent] = []
        if self.thought is not None:  # the call that failed had said it
            self._held(out)
        if self.team and not self.open:
            self._team(out, failed=True)
        if not self.open:
            for name, noted in self.requests.items():
                if noted:
                    self._speaker(name, out)
                    self._open(out)
                    break
        return out

    def _close(self, out: list[AgentEvent], usage: Any) -> None:
        if usage is not None:
            prompt, completion = usage.prompt_tokens, usage.completion_tokens
            both = is_count(prompt) and is_count(completion)  # a sum of counts only
            out.append(Usage(input_tokens=prompt, output_tokens=completion,
                             total_tokens=prompt + completion if both else None,
                             model=self.model))  # fmt: skip
        out.append(LLMCallEnd(model=self.model))
        self.open = False


def _is_message(item: Any) -> bool:
    return any(base.__name__ == "BaseChatMessage" for base in type(item).__mro__)


def _call(call: Any) -> ToolCall:
    return ToolCall(id=call.id, function=FunctionCall(call.name, call.arguments))


def _result(result: Any) -> ToolResult:
    call_id, content, name = str(result.call_id), result.content, result.name
    if result.is_error:  # AssistantAgent's own outcomes: a call no workbench has, bad JSON
        if content == f"Error: tool '{name}' not found in any workbench":
            return failed_result(call_id, content, name, "tool_not_found")
        if isinstance(content, str) and _JSON_ERROR.match(content):
            return failed_result(call_id, content, name, "JSONDecodeError")
    return ToolResult(tool_call_id=call_id, content=content, name=name,
                      is_error=bool(result.is_error))  # fmt: skip


# AssistantAgent's text for arguments json.loads refused: "Error: " and the JSONDecodeError's
# own message, "<what>: line <n> column <n> (char <n>)".
_JSON_ERROR = re.compile(r"Error: [^\n]+: line \d+ column \d+ \(char \d+\)\Z")

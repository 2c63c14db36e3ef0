"""Strands Agents: ``Agent.stream_async`` dict events as contract events.

Strands yields dicts; the adapter reads three kinds by key (nothing of Strands is imported):

* ``{"event": ...}``: the model's Converse stream, raw. ``messageStart`` opens an LLM call
  (``LLMCallStart`` with the model's ``model_id`` and the messages Strands sends: the system
  prompt and messages the request's ``stream`` was called with, noted as it was called, for
  the stream shows a request late: after a context overflow's trimming, or, from a team's
  queue, after the node's agent went on; a ``StepBoundary`` first when tools ran since the
  call before); ``contentBlockDelta`` text is a ``TextDelta``, its
  ``reasoningContent`` text a ``ReasoningDelta``; ``messageStop`` gives the stop reason and
  ``metadata`` the usage.
* ``{"message": ...}``: a whole message. The assistant's closes the call: its ``toolUse``
  blocks are ``ToolCall``\\ s (Strands' ``toolUseId``), then ``Usage`` and ``LLMCallEnd``. A
  user message's ``toolResult`` blocks are ``ToolResult``\\ s (``status="error"`` an error
  result, which Strands makes of a tool that raised; its ``error_type`` is the class of the
  exception the adapter's ``AfterToolCallEvent`` hook heard, else the one the ``@tool``
  decorator's message names, which it leaves out for a ``ValueError``; ``tool_not_found`` and
  ``ValidationError`` for Strands' own texts of an unknown name and arguments failing
  validation, a ``@tool``'s or the structured output tool's; ``agent_not_found`` for a
  ``Swarm``'s handoff to an agent it lacks).
* A call a hook cancelled (``BeforeToolCallEvent.cancel_tool``: a check refusing it before
  it ran, or an approval refused after an interrupt) is a failed result
  ``guardrail_rejected`` (the adapter's ``AfterToolCallEvent`` hook hears its
  ``cancel_message``), the text the model is told unchanged. So is every call of a batch a
  ``BeforeToolsEvent`` hook cancels (``cancel``); a call Strands answers without running it
  because ``agent.cancel()`` was called (before the batch, or before its turn in a sequential
  batch) is a failed result ``CancelledError``. Both are read by hooks on the batch's
  ``BeforeToolsEvent`` and ``AfterToolsEvent``, matched by Strands' text for them.
* The final ``result`` of a run an interrupt paused (``event.interrupt()`` in a hook, or
  ``tool_context.interrupt()`` in a tool: ``stop_reason == "interrupt"``) gives one
  ``InterruptFinal`` per interrupt (``interrupt_id`` the id to resume with, ``payload`` its
  reason, ``reason`` its name): the run ends ``interrupted``, the call it paused cut short.
* The final ``result`` of a run with ``structured_output_model`` (the model answered by
  calling Strands' structured output tool, a tool of the run, and no text told the answer)
  gives a ``StructuredFinal``: the run's answer is its ``structured_output``, as JSON.
* A turn an ``AfterToolsEvent`` hook ended right after its tools ran (``end_turn``; Strands'
  delegation does so with a delegate's answer) asks the model nothing more: the message it
  ends with, in the final ``result`` only, is the run's answer (a ``MessageFinal``).
* A run ``agent.cancel()`` stopped (its final ``result``'s ``stop_reason == "cancelled"``)
  ends with a fatal ``Error`` of type ``CancelledError``: the run ends ``cancelled``, as a
  cancelled task does; the text ``agent.cancel(message)`` gives the model is not its message.
* The rest (``data`` and ``reasoningText`` repeat the raw deltas; ``current_tool_use``,
  lifecycle flags, a finished run's ``result``) go to ``sink`` only.

**Model requests.** Strands streams nothing before the model's first event, but fires
``BeforeModelCallEvent`` as it starts each request and ``AfterModelCallEvent`` (with the
``exception``) when one fails. The adapter's hooks (below) count them, so a request that fails
before its first event (a 429) still has its call: the adapter opens it with the request's
messages as the error comes out of the run, which ends it with that exception; a refused
attempt Strands retries is a call of its own, ended with an ``Error`` naming its class. A
response Strands drops to ask the model again (an ``AfterModelCallEvent`` hook setting
``retry``) sends no message: the next ``messageStart`` ends its call, with its usage. One that
raised mid-stream (the hook heard the exception) fails its call with that class, in the same
step; one that answered was refused by the hook: its step fails ``output_rejected`` and the
request asked again is the next step; its tool calls never ran: its call ends with an
``UnrunCallsEnd`` holding them (read from the message the hook heard), in its output and no
tool's span. A request a
``BeforeModelCallEvent`` hook cancels (``cancel``) calls no model: Strands answers with the
hook's text, an assistant message with no call open, which is no call; the last such text with
no model call after it is the run's answer (a ``MessageFinal`` at the end). A hook that raises
after a response came whole (its ``messageStop`` streamed) fails the run, not the call: the
call ends answered, with its usage and its tool calls (``UnrunCallsEnd``: none ran), before
the exception comes out.

**Side requests.** Strands asks the model outside the agent loop too, with no hook and no
stream event: a ``SummarizingConversationManager`` summarising the conversation (on a context
overflow, or proactively as a request starts, on the agent's ``aux_model`` or with a
``summarization_agent`` of its own), and the other auxiliary calls made on the agent's
``aux_model`` (a steering or goal judge). Each is a billed request; the providers'
spans stand down inside the run, so it was nowhere. The adapter wraps the ``stream`` of the
agent's ``model``, its ``aux_model`` and its summarization agent's model once (an instance
attribute): a request made while none of the loop's is waiting (its ``BeforeModelCallEvent``
counted, no event of it shown yet) is a side request, its items passed on unchanged and told
as a call of its own (its messages, text, stop reason and usage) in the run's stream before
Strands' next item, in the step it was made in: its span is timed then, as Strands' loop,
waiting on it, yields nothing meanwhile. The loop's own requests pass through untouched,
noting the model each goes to: a ``ModelRouter`` (the agent's ``model``, whose candidates are
watched too) picks one per request and falls back to the next when one fails, so each call
names the model its request went to, not the agent's first candidate.

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through Strands'
own seam: hook callbacks added once to the agent's ``hooks`` (outside a traced run they do
nothing). Strands fires ``BeforeToolCallEvent`` and ``AfterToolCallEvent`` inline in the
call's own task, around the tool (a sync tool's thread copies that context), with the
call's ``toolUseId``, on every path but one: a body raising ``CancelledError`` ends its task
with no result and no ``AfterToolCallEvent``, so the tool's wrapped ``stream`` (below) leaves
the call's scope then, failed when the body raised it itself, cut short when its task was
cancelled. Strands' own tracer
(on when a global provider is set) makes its own tool span current around the tool's
``stream``, after those hooks: so the first hook also wraps the selected tool's ``stream``
once (an instance attribute) in the call's scope, and the body runs under our span. A tool of
an ``MCPClient`` (an ``MCPAgentTool``) is scoped with its server (``McpServer``: the name the
server gives itself and the protocol version, from the client's session).

A call Strands runs in the background (``Agent(background_tasks=...)``; the model asks with
``_background_execution``) is admitted with its ``BeforeToolCallEvent``, then answered at once
with a dispatch acknowledgement (no ``AfterToolCallEvent``), and its tool runs later on
Strands' background runtime, its ``AfterToolCallEvent`` fired there; the result reaches the
model as a synthetic ``strands_manage_background_task`` exchange the stream never shows. The
adapter wraps the agent's background plugin's ``submit_tool_call`` and its task manager's
``_execute_tool`` and ``_on_task_updated`` once (instance attributes): the context of the
dispatch (the call's scope current) is kept, the body runs in a task made in it (so under the
call's span), the acknowledgement is no ``ToolResult``, and the task's final snapshot is the
call's ``ToolResult`` (its answer; failed with the class it raised, ``timeout``,
``CancelledError``), told before the next item as side requests are. While a background call
runs no ``StepBoundary`` is told (its step, the tool span's parent, goes on); a call still
running when the run's items end is left open: the run's end ends it, incomplete. A task an
interrupt in its body paused (``tool_context.interrupt``: the run ends interrupted, the call
cut short) is resumed by the run given the responses: that run holds the call from then on
(its body, then its result), as a foreground call resumed is.

A direct tool call (``agent.tool.weather(...)``, no loop cycle in its invocation state) is no
call of the run: it runs as an ``inner_tool`` (``agent_contract.scope``), so made in a tool's
body it is a tool span under that call's, with its arguments and result (failed with the
exception Strands caught), and the calling tool's span ends after it (outside a run nothing
records it).

An agent used as a tool (``agent.as_tool()``) streams its run inside the call, each of its
events wrapped in an ``AgentAsToolStreamEvent`` that also reaches the outer stream (where the
adapter passes over it; a delegation tool's, ``as_tool(delegate=True)``, reach it unwrapped,
and are passed over too: ``_delegated``). The adapter wraps that tool's ``stream`` once (an
instance attribute) and reads the inner events there, in the call's task, as a nested run
(``agent_contract.scope.nested_run``, named after the agent) with that run's context current,
so the inner agent's own tools scope under it; at any depth. Its hooks are added as above.
An agent a tool body starts itself (``expert(q)``, ``await expert.invoke_async(q)``, its
``stream_async``: not through ``as_tool()``) is that call's work too: ``Agent.stream_async``,
set once on the class, reads it the same way, as a nested run under the tool's span, only in
the body of a tool of an agent a run here reads and with a tracer claiming it; its items reach
the body unchanged, and its exception too, after its run ended with it. Anywhere else (this
module's own runs included) ``stream_async`` is Strands', untouched.

A multi-agent run (a ``Swarm``, a ``Graph``, a team as a graph's node) is one run: its
``multiagent_node_stream`` items carry each node's agent items, read as that agent's (its hooks
added as above); each node's turn is steps after a ``PhaseMarker`` naming it (a team inside a
graph: ``crew/writer``). A graph's parallel nodes stream side by side: one node is told at a
time, the others' events held in order until it stops, so each call is told whole. A node
that fails ends its open call with the exception's ``Error``: the team raises it (a
``Graph``), or keeps it in its result (a ``Swarm``), and then the ``Error`` is ``fatal``.

Usage: Strands normalises every provider to Bedrock's names, but ``inputTokens`` means what
the provider says: Bedrock and Anthropic leave cache reads and writes out (their
``totalTokens`` adds them back), OpenAI counts them in. Input tokens here include the cache,
as the GenAI conventions say: the cache counts are added when ``totalTokens`` shows they were
left out. Needs ``strands-agents`` (extra ``strands-agents``).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import suppress
from contextvars import Context, ContextVar, copy_context
from typing import Any
from weakref import WeakKeyDictionary, WeakSet

from agent_contract.agent.events import InterruptFinal, MessageFinal, StreamEvent, StructuredFinal
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
from agent_contract.scope import (
    InnerCall,
    McpServer,
    framework_started,
    inner_tool,
    nested_run,
    tool_scope,
)
from agent_contract.sources import _conversation
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._endpoint import (
    Endpoint,
    address_of,
    at_endpoint,
    held_endpoint,
    sdk_default,
)
from agent_contract.sources._failure import CANCELLED, cancelled_run, error_name, failed_result
from agent_contract.sources._history import call_start, converse_text, strands_messages
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import Taken, through
from agent_contract.sources._require import expect, require
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._stream import Sink, read_events
from agent_contract.sources._structured import structured_final
from agent_contract.sources._unrun import UnrunCallsEnd, unrun_call
from agent_contract.sources._watched import watched

__all__ = ["strands_events"]

# A ``@tool`` function's exception, as Strands' decorator reports it to the model.
_DECORATOR_ERROR = re.compile(r"Error: ([A-Za-z_][A-Za-z0-9_.]{0,127}) - ")
# Strands' own texts for a call it runs no body for: a name the agent lacks (its executor),
# arguments failing the ``@tool``'s validation (raised from pydantic's ValidationError).
_OWN_OUTCOMES = (
    ("Unknown tool: ", "tool_not_found"),
    ("Error: Validation failed for input parameters: ", "ValidationError"),
)
# Strands' own texts its tools answer with, raising nothing: the structured output tool's for
# arguments failing its model's validation, a ``Swarm``'s ``handoff_to_agent`` for a name the
# swarm lacks.
_OWN_TEXTS = (
    (re.compile(r"Validation failed for [A-Za-z_][A-Za-z0-9_]{0,127}\. Please fix "),
     "ValidationError"),
    (re.compile(r"Error: Agent '.{0,256}' not found in swarm\Z", re.DOTALL), "agent_not_found"),
)  # fmt: skip


# Strands' own texts for the calls of a batch it answers without running them: a
# ``BeforeToolsEvent`` hook's ``cancel=True``, and ``agent.cancel()`` before a call ran.
_HOOK_CANCEL = "Tool cancelled by hook"
_AGENT_CANCEL = "Tool execution cancelled"

_HINT = "Make one with strands.Agent(model=..., tools=...)."

# The failure of a step whose answer an ``AfterModelCallEvent`` hook refused (``retry``).
_DROPPED = "an AfterModelCallEvent hook dropped the response and asked the model again"


async def strands_events(
    agent: Any, prompt: Any = None, *, sink: Sink | None = None, **run: Any
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` on ``prompt`` with ``stream_async`` (``run`` passed on), as events."""
    expect(agent, "strands_events", "a strands.Agent", "stream_async", hint=_HINT)
    # before the framework makes any request (read once the agent is known to be one); the
    # session its session manager keeps (an agent's, private; a swarm's or graph's)
    manager = _conversation.id_of(agent, "_session_manager") or _conversation.id_of(
        agent, "session_manager"
    )
    framework_started(__name__, _conversation.id_of(manager))
    if _is_team(agent):
        async for out in _team_events(agent, prompt, sink, run):
            yield out
        return
    requests = _add_hooks(agent)
    requests.reset()
    _nest_agent_tools(agent)
    body = _IN_BODY.set(False)  # this run is read here: never a nested one (_nest_started)
    try:
        stream = agent.stream_async(prompt, **run)
    finally:
        _IN_BODY.reset(body)
    state = _State(_model_id(agent), agent, requests)

    try:
        async for out in read_events(stream, state.read, sink):  # an item of odd fields skipped
            yield out
        for last in state.finish():
            yield last
    except Exception:
        for out in state.refused():
            yield out
        raise
    finally:
        requests.side = None
        await stream.aclose()


def _is_team(agent: Any) -> bool:
    """A ``Swarm`` or ``Graph`` (a multi-agent base): its ``nodes`` run agents."""
    return isinstance(getattr(agent, "nodes", None), dict) and not hasattr(agent, "tool_registry")


async def _team_events(
    team: Any, prompt: Any, sink: Sink | None, run: dict[str, Any]
) -> AsyncIterator[AgentEvent]:
    """A ``Swarm`` or ``Graph`` run: one run, each node's turn steps after a phase naming it
    (module doc)."""
    reader = _Team(team)
    members = _members(team)
    hooked = _hooked(members)
    for requests in hooked:  # now: a node's requests come before its first item is read
        requests.reset()
    with suppress(TypeError):  # (an unhashable look-alike: nothing nests it)
        _READ.update(members)  # their runs are this one's, never nested ones (_nest_started)
    stream = team.stream_async(prompt, **run)
    try:
        async for out in read_events(stream, reader.read, sink):  # an item of odd fields skipped
            yield out
        for out in reader.finish():
            yield out
    except Exception:
        for out in reader.finish(failed=True):
            yield out
        raise
    finally:
        for requests in [*hooked, *(state.requests for state in reader.nodes.values())]:
            requests.side = None
        with suppress(TypeError):
            _READ.difference_update(members)
        await stream.aclose()


def _hooked(agents: list[Any]) -> list[_Requests]:
    """The requests of each of ``agents`` that ``_add_hooks`` hooked."""
    found: list[_Requests] = []
    for agent in agents:
        with suppress(TypeError):  # (an unhashable look-alike: never hooked)
            requests = _HOOKED.get(agent)
            if requests is not None:
                found.append(requests)
    return found


def _members(team: Any) -> list[Any]:
    """The agents of ``team``'s nodes, at any depth."""
    nodes = getattr(team, "nodes", None)
    found: list[Any] = []
    for node in list(nodes.values()) if isinstance(nodes, dict) else ():
        agent = getattr(node, "executor", None)
        if agent is not None:
            found += _members(agent) if _is_team(agent) else [agent]
    return found


class _Team:
    """A multi-agent run's items as one run's events.

    Each node (an agent, or a team of its own: its path ``outer/inner`` names it) is read by
    a ``_State`` of its own. One node is told at a time: a node started while another is
    being told (a ``Graph``'s parallel nodes stream side by side) is held, its events kept in
    order, until the one told stops; so each call is whole, with its own text, tools and
    tokens. Each node's turn starts a step after a ``PhaseMarker`` naming it. A node that
    failed ends its open call with the exception's ``Error`` when the team goes on or ends
    without raising (a ``Swarm`` keeps a node's exception in its result): ``fatal`` when the
    team's result says it failed; a team that raises ends the call with its exception."""

    __slots__ = (
        "failures", "held", "live", "nodes", "phase", "step", "stopped", "team", "told", "waiting",
    )  # fmt: skip

    def __init__(self, team: Any) -> None:
        self.team = team
        self.nodes: dict[str, _State] = {}  # node path -> its reader
        _add_team_hooks(team)
        self.held: dict[str, list[AgentEvent]] = {}  # node path -> events not told yet
        self.waiting: list[str] = []  # started nodes not told yet, in the order they started
        self.stopped: set[str] = set()  # of those, the ones that stopped
        self.live: str | None = None  # the node told now
        self.phase: str | None = None
        self.step = 0
        self.told = False  # events since the last step boundary
        self.failures: list[tuple[str, BaseException]] = []

    def read(self, item: Any) -> list[AgentEvent]:
        """The events the team's stream item ``item`` completes (its dicts are read)."""
        return self.feed(item) if isinstance(item, dict) else []

    def feed(self, item: dict[str, Any], prefix: str = "", team: Any = None) -> list[AgentEvent]:
        kind = item.get("type")
        node = item.get("node_id")
        team = self.team if team is None else team
        path = f"{prefix}{node}" if isinstance(node, str) else None
        if kind == "multiagent_node_stream" and path is not None:
            inner = item.get("event")
            if not isinstance(inner, dict):
                return []
            if str(inner.get("type", "")).startswith("multiagent_"):  # a team as a node
                return self.feed(inner, f"{path}/", _executor(team, node))
            return self._node(path, self._state(path, team, node).feed(inner))
        if kind == "multiagent_node_start" and path is not None:
            if str(item.get("node_type")) != "multiagent":
                self._state(path, team, node)
                self._wait(path)
            return self._next()
        if kind == "multiagent_node_stop" and path is not None:
            return self._stop(path, item.get("node_result"))
        if kind == "multiagent_result" and not prefix:
            result = item.get("result")
            status = getattr(getattr(result, "status", None), "value", None)
            return self._failed(fatal=status == "failed")
        return []

    def finish(self, *, failed: bool = False) -> list[AgentEvent]:
        """The run ended: every node not told yet is told, in order; ``failed``: the team
        raised, and the call open stays open for its exception."""
        out: list[AgentEvent] = []
        for path in self.waiting:  # the one told now first
            if failed and path in self.nodes:
                self.held[path] += self.nodes[path].refused()
            out += self._switch(path)
        self.waiting, self.live = [], None
        return out + ([] if failed else self._failed(fatal=False))

    def _state(self, path: str, team: Any, node: Any) -> _State:
        known = self.nodes.get(path)
        if known is not None:
            return known
        agent = _executor(team, node)
        requests = _add_hooks(agent) if agent is not None else _Requests()
        if requests.side is None:  # a node the team's start did not reset (_team_events)
            requests.reset()
        state = _State(_model_id(agent), agent, requests)
        self.nodes[path] = state
        return state

    def _wait(self, path: str) -> None:
        if path not in self.waiting:
            self.waiting.append(path)
            self.held.setdefault(path, [])

    def _node(self, path: str, events: list[AgentEvent]) -> list[AgentEvent]:
        self._wait(path)  # (a node the team never announced: told as it comes)
        self.held[path] += events
        return self._next()

    def _next(self) -> list[AgentEvent]:
        """Tell the node told now, else the first one waiting; a node told whole that had
        stopped hands over to the next."""
        out: list[AgentEvent] = []
        while True:
            if self.live is None:
                if not self.waiting:
                    return out
                self.live = self.waiting[0]
            out += self._switch(self.live)
            if self.live not in self.stopped:
                return out
            self.stopped.discard(self.live)
            self.waiting.remove(self.live)
            self.live = None

    def _switch(self, path: str) -> list[AgentEvent]:
        events, self.held[path] = self.held.get(path, []), []
        if not events:
            return []
        out: list[AgentEvent] = []
        if path != self.phase:
            if self.told:
                out.append(StepBoundary(index=self.step))
                self.step, self.told = self.step + 1, False
            out.append(PhaseMarker(name=path))
            self.phase = path
        for event in events:
            if isinstance(event, StepBoundary):
                event = StepBoundary(index=self.step)
                self.step, self.told = self.step + 1, False
            else:
                self.told = True
            out.append(event)
        return out

    def _stop(self, path: str, result: Any) -> list[AgentEvent]:
        error = getattr(result, "result", None)
        if isinstance(error, BaseException):
            self.failures.append((path, error))
        self._wait(path)
        self.stopped.add(path)
        return self._next()

    def _failed(self, *, fatal: bool) -> list[AgentEvent]:
        """The failed nodes' open calls end with their exceptions (the class docstring)."""
        out: list[AgentEvent] = []
        failures, self.failures = self.failures, []
        for path, error in failures:
            state = self.nodes.get(path)
            if state is None:
                continue
            self.held[path] = state.refused()
            out += self._switch(path)
            kind = error_name(error)
            out.append(Error(message=str(error) or kind, error_type=kind, fatal=fatal))
            if state.open:
                out.append(LLMCallEnd())
                state.open = False
            self.told = True
        return out


def _executor(team: Any, node: Any) -> Any:
    nodes = getattr(team, "nodes", None)
    found = nodes.get(node) if isinstance(nodes, dict) else None
    return getattr(found, "executor", None)


def _add_team_hooks(team: Any) -> None:
    """Hook every agent of ``team``'s nodes (at any depth) as a lone agent is hooked."""
    nodes = getattr(team, "nodes", None)
    for found in list(nodes.values()) if isinstance(nodes, dict) else ():
        agent = getattr(found, "executor", None)
        if agent is None:
            continue
        if _is_team(agent):
            _add_team_hooks(agent)
        elif getattr(agent, "hooks", None) is not None:
            _add_hooks(agent)
            _nest_agent_tools(agent)


def _scope_body(tool: Any) -> None:
    """Wrap ``tool``'s ``stream`` once (an instance attribute) in its call's scope: Strands
    runs it inside its own tool span (current there when Strands traces to a real provider),
    so the hook's scope alone would leave the body under Strands' span, not the call's."""
    if tool is None or getattr(tool, "_agent_contract_scoped", False):
        return
    stream = getattr(tool, "stream", None)
    if not callable(stream):
        return

    # an agent tool's run is read by its own wrapper (``_nest_agent_tools``), not as one the
    # body starts (``_nest_started``)
    body = getattr(tool, "_agent", None) is None

    async def scoped(tool_use: Any, invocation_state: Any, *args: Any, **kwargs: Any) -> Any:
        use = tool_use if isinstance(tool_use, dict) else {}
        marked = _IN_BODY.set(body)  # a sync body's thread copies the context with it
        try:
            if _direct(invocation_state):  # no call of the run: a tool of its caller's
                with inner_tool(use.get("name"), use.get("input"), mcp=_mcp_server(tool)) as call:
                    async for item in stream(tool_use, invocation_state, *args, **kwargs):
                        _told_result(call, item)  # (Strands stops pulling at the result)
                        yield item
            else:
                with tool_scope(use.get("toolUseId"), use.get("name"), mcp=_mcp_server(tool)):
                    async for item in stream(tool_use, invocation_state, *args, **kwargs):
                        yield item
        except asyncio.CancelledError as cancelled:
            # Strands drops such a call (no result, no AfterToolCallEvent): the hook's scope
            # ends here, failed if the body raised it itself, else cut short (its task's)
            _SCOPES.exit(id(tool_use), cancelled)
            raise
        finally:
            with suppress(ValueError):  # closed from another context: that one never saw it
                _IN_BODY.reset(marked)

    try:
        tool.stream = scoped
        tool._agent_contract_scoped = True
    except Exception:  # a tool that takes no attributes keeps the hook's scope only
        return


def _told_result(call: InnerCall, item: Any) -> None:
    """A direct call's result, when ``item`` is it (Strands' ``ToolResultEvent``): its content,
    failed when its status is ``error`` (named by the exception Strands caught, if any)."""
    if not isinstance(item, dict) or item.get("type") != "tool_result":
        return
    result = getattr(item, "tool_result", None)
    if isinstance(result, dict):
        failed = result.get("status") == "error"
        caught = getattr(item, "exception", None) if failed else None
        call.result(result.get("content"), caught if isinstance(caught, BaseException) else failed)


def _direct(invocation_state: Any) -> bool:
    """A direct tool call (``agent.tool.weather(...)``): Strands runs it outside its agent loop,
    with no loop cycle in its invocation state (Strands tells it so too). No model asked for
    it, so it is no call of the run: an inner tool (``agent_contract.scope.inner_tool``), made
    in a tool's body a span under that call's (module doc)."""
    return isinstance(invocation_state, dict) and "event_loop_cycle_id" not in invocation_state


def _mcp_server(tool: Any) -> McpServer | None:
    """The MCP server of a Strands ``MCPAgentTool`` (``None``: another tool), as its client's
    session knows it."""
    if tool is None or type(tool).__name__ != "MCPAgentTool":
        return None
    return server_of(getattr(getattr(tool, "mcp_client", None), "_background_thread_session", None))


_READ: WeakSet[Any] = WeakSet()
"""The member agents of the teams a run here reads now (``_team_events``): the team runs
them in tasks of its own, which may be in a tool body's context."""

_IN_BODY: ContextVar[bool] = ContextVar("agent_contract_strands_tool_body", default=False)
"""Set while the body of a tool of an agent a run of ours reads runs (``_scope_body``): an
agent started there is that call's work, a nested run (``_nest_started``)."""


def _read_here(agent: Any) -> bool:
    """``agent`` is a member of a team a run here reads (its run is that one's)."""
    try:
        return agent in _READ
    except TypeError:  # an agent class without a hash: no team of ours holds it
        return False


def _nest_started() -> None:
    """Make ``Agent.stream_async`` (which ``agent(...)`` and ``invoke_async`` run through;
    the deprecated ``structured_output`` does not) record an agent a tool body starts itself
    (module doc): in a tool body of a run this module reads, with a tracer claiming it
    (``nested_run``), its items pass on unchanged while they are read as a run nested under
    the tool's span. Set once, on the class; anywhere else ``stream_async`` is Strands'."""
    Agent = require("strands", "Agent")
    original = Agent.stream_async
    if getattr(original, "_agent_contract_nesting", False):
        return

    @functools.wraps(original)
    def stream_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _IN_BODY.get() or _read_here(self):
            return original(self, *args, **kwargs)
        name = getattr(self, "name", None)
        if nested_run(name) is None:
            return original(self, *args, **kwargs)
        requests = _add_hooks(self)
        requests.reset()
        _nest_agent_tools(self)
        state = _State(_model_id(self), self, requests)

        def failed() -> list[AgentEvent]:
            out = state.refused()  # the requests that failed before any event (module doc)
            requests.side = None
            return out

        def finish() -> list[AgentEvent | StreamEvent]:
            out = state.finish()
            requests.side = None
            return out

        body = _IN_BODY.set(False)  # what this run's loop starts is not the body's
        try:
            items = original(self, *args, **kwargs)
        finally:
            _IN_BODY.reset(body)
        return through(name, items, state.read, finish, failed)

    stream_async._agent_contract_nesting = True  # type: ignore[attr-defined]
    Agent.stream_async = stream_async


def _nest_agent_tools(agent: Any) -> None:
    """Wrap ``stream`` of each agent used as a tool (``agent.as_tool()``) of ``agent``, once,
    as an instance attribute: its run is a nested run (module doc), at any depth."""
    registry = getattr(getattr(agent, "tool_registry", None), "registry", None)
    for tool in list(registry.values()) if isinstance(registry, dict) else ():
        inner = getattr(tool, "_agent", None)
        if inner is None or getattr(tool, "_agent_contract_nested", False):
            continue
        stream = tool.stream

        def nested(
            tool_use: Any, invocation_state: Any, *args: Any, _stream: Any = stream,
            _inner: Any = inner, tool: Any = tool, **kwargs: Any,
        ) -> Any:  # fmt: skip
            items = _stream(tool_use, invocation_state, *args, **kwargs)
            requests = _add_hooks(_inner)
            requests.reset()
            state = _State(_model_id(_inner), _inner, requests)
            use_id = tool_use.get("toolUseId") if isinstance(tool_use, dict) else None
            failed: list[AgentEvent] = []

            def finish() -> list[AgentEvent]:
                out = state.drain([]) + failed
                requests.side = None
                return out

            delegate = getattr(tool, "delegate", False) is True  # (read as the call runs)

            def read(item: Any) -> list[AgentEvent]:
                if delegate:  # Strands also puts its items in the outer stream (_delegated)
                    _DELEGATED.add(_told_value(item))
                return _inner_events(state, item, use_id, failed)

            return through(getattr(_inner, "name", None), items, read, finish)

        tool.stream = nested
        tool._agent_contract_nested = True
        _nest_agent_tools(inner)


_DELEGATED = Taken()
"""What a delegation tool's nested run told (``agent.as_tool(delegate=True)``): Strands' own
delegation middleware also puts each of the delegate's items, unwrapped, in the outer agent's
stream (a copy sharing its values), where the outer reader passes over them."""

_TOLD_KEYS = ("event", "message", "result")
"""The keys of the delegate's items that tell something (its model's raw events, its
messages, its result), each an object of its own that the outer copy shares."""


def _told_value(item: Any) -> Any:
    """The object an agent-as-tool's stream event ``item`` tells (its inner item's raw event,
    message or result), else ``None``."""
    event = item.get("tool_stream_event") if isinstance(item, dict) else None
    data = event.get("data") if isinstance(event, dict) else None
    if not isinstance(data, dict):
        return None
    for key in _TOLD_KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            return value
    return None


def _delegated(item: dict[str, Any]) -> bool:
    """``item`` of the outer stream is the copy of a delegate's item its nested run told."""
    return any(key in item and _DELEGATED.take(item[key]) for key in _TOLD_KEYS)


def _inner_events(
    state: _State, item: Any, use_id: Any = None, failed: list[AgentEvent] | None = None
) -> list[AgentEvent]:
    """The events of the agent-as-tool's own stream event that ``item`` carries, if any.

    Strands catches what the agent raised and ends the tool with an error result (``Agent
    error: ...``): the nested run ends in error (its open call with it; the ``Error`` goes to
    ``failed``, told when the items end), named by the exception its hooks heard last, and so
    does the call's result in the outer run."""
    if type(item).__name__ != "AgentAsToolStreamEvent":
        result = item.get("tool_result") if isinstance(item, dict) else None
        if not isinstance(result, dict) or result.get("status") != "error":
            return []
        if result.get("toolUseId") != use_id or use_id is None:
            return []
        error = state.requests.error
        kind = error_name(error) if error is not None else "tool_error"
        _failed_agent_tool(str(use_id), kind)
        text = converse_text(result.get("content") or [])
        if failed is not None:
            failed.append(Error(message=str(text) or kind, error_type=kind, fatal=True))
        return []
    data = item.get("tool_stream_event", {}).get("data") if isinstance(item, dict) else None
    return list(state.feed(data)) if isinstance(data, dict) else []


def _model_id(agent: Any) -> str | None:
    return _config_id(getattr(agent, "model", None))


_OPENAI_MODELS = ("strands.models.openai.OpenAIModel",
                  "strands.models.openai_responses.OpenAIResponsesModel")  # fmt: skip
"""Strands' models that make an OpenAI client per request (when given none), from their
``client_args``: the SDK's default server when those name no ``base_url``."""


def _server(model: Any) -> Endpoint | None:
    """The server a Strands ``model`` sends to: its SDK client (an ``AnthropicModel``'s, a
    ``BedrockModel``'s botocore client, the one an OpenAI model was given), else the
    ``base_url`` or ``api_base`` in its ``client_args`` (a ``LiteLLMModel``'s), else the OpenAI
    SDK's default for ``OpenAIModel`` and ``OpenAIResponsesModel`` (none on Bedrock Mantle,
    whose URL Strands derives); None for another model. A property that raises costs only
    the server."""
    found = held_endpoint(model, ("client", "_custom_client"))
    if found is not None:
        return found
    try:
        args = getattr(model, "client_args", None)
        args = args if isinstance(args, dict) else {}
        given = args.get("base_url") or args.get("api_base")
        if given is not None:
            return address_of(given)
        kind = type(model)
        mantle = getattr(model, "_bedrock_mantle_config", None)
    except Exception:
        return None
    openai = f"{kind.__module__}.{kind.__qualname__}" in _OPENAI_MODELS and mantle is None
    return sdk_default("openai") if openai else None


def _config_id(model: Any) -> str | None:
    """The ``model_id`` of a Strands model's config, if it has one."""
    try:
        config = model.get_config() if model is not None else None
    except Exception:  # a model without a readable config still streams
        config = None
    name = config.get("model_id") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None


class _Sent:
    """What one model request of the loop sent: the agent's system prompt and messages as its
    ``BeforeModelCallEvent`` found them, then as the model's ``stream`` was called with them
    (after Strands added a continuation's input, a middleware's changes), and that model."""

    __slots__ = ("messages", "model", "server", "streamed", "system", "watched")

    def __init__(
        self,
        model: str | None,
        system: Any,
        messages: tuple[Any, ...],
        server: Endpoint | None = None,
    ) -> None:
        self.model, self.system, self.messages = model, system, messages
        self.server = server  # the server of the model whose stream was called (``_server``)
        self.watched = self.streamed = False  # its stream seen called; an item of it came


async def _streaming(items: AsyncIterator[Any], sent: _Sent) -> AsyncIterator[Any]:
    """Every item of a loop request's stream, unchanged, noting on ``sent`` that one came: a
    request that fails before any is a call the stream never shows (``_Requests.after``),
    whenever the adapter reads the items the agent streamed meanwhile (a team's queue)."""
    try:
        async for item in items:
            sent.streamed = True
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if callable(close):
            await close()


class _Requests:
    """An agent's model requests the hooks heard and the stream has not shown yet."""

    __slots__ = ("admitted", "answered", "background", "dispatched", "error", "failed", "midway",
                 "model", "sent", "side", "started")  # fmt: skip

    def __init__(self) -> None:
        self.started = 0  # started, no event of theirs seen yet
        # what each of those sent, in order: the stream shows a request's first event late (a
        # context overflow trims the messages before the retry's; a team's node streams into
        # a queue while its agent goes on), so its call opens with what it sent, not with the
        # agent's messages as they are by then
        self.sent: deque[_Sent] = deque()
        # of those, the ones that raised, in order, with the model each was streamed from
        self.failed: list[tuple[BaseException, str | None, _Sent | None]] = []
        self.error: BaseException | None = None  # the last request's that raised
        self.midway: BaseException | None = None  # the open call's, raised after its events
        # the side requests' events not told yet, while a run of ours reads the agent (else
        # None); filled from the thread Strands makes a side request in (module doc)
        self.side: deque[AgentEvent] | None = None
        self.model: str | None = None  # the model the latest request was streamed from
        self.answered: Any = None  # the open call's response's message, as Strands made it
        # background tool calls (``_watch_background``; ``None``: the agent runs none): the
        # context each was dispatched in, by call id, until its task settles; the calls whose
        # dispatch acknowledgement the stream has not shown yet; the hook's scope key of each
        # call admitted and not yet dispatched or ended
        self.background: dict[str, Context] | None = None
        self.dispatched: set[str] = set()
        self.admitted: dict[Any, object] = {}

    def reset(self) -> None:
        """A run of ours starts reading the agent."""
        self.started, self.failed, self.error, self.model, self.side = 0, [], None, None, deque()
        self.answered, self.sent = None, deque()
        if self.background is not None:  # a task of a run before settles in no run of ours
            self.background, self.dispatched = {}, set()

    def before(self, event: Any) -> None:
        self.started += 1
        agent = getattr(event, "agent", None)
        messages = tuple(getattr(agent, "messages", None) or ())
        self.sent.append(_Sent(None, getattr(agent, "system_prompt", None), messages))
        _ASKING.set(self)  # the request this task makes next is this agent's (_watch_model)

    def opened(self) -> _Sent | None:
        """The oldest request not shown yet: its first event opens its call."""
        self.started = max(self.started - 1, 0)
        return self.sent.popleft() if self.sent else None

    def after(self, event: Any) -> None:
        response = getattr(event, "stop_response", None)
        if response is not None:  # (a hook that raised on it is told again with no response)
            self.answered = getattr(response, "message", None)
        error = getattr(event, "exception", None)
        if isinstance(error, BaseException):
            self.error = error
        newest = self.sent[-1] if self.sent else None
        # its stream seen called: whether no item came; else as the stream shows it: no event
        # of it read yet
        watched = newest is not None and newest.watched
        unshown = not newest.streamed if newest is not None and watched else self.started > 0
        if isinstance(error, BaseException) and unshown:  # failed before any event
            self.started = max(self.started - 1, 0)
            self.failed.append((error, self.model, self.sent.pop() if self.sent else None))
        elif isinstance(error, BaseException):  # the open call's, mid-stream
            self.midway = error


_HOOKED: WeakKeyDictionary[Any, _Requests] = WeakKeyDictionary()

_ASKING: ContextVar[_Requests | None] = ContextVar("agent_contract_strands_asking", default=None)
"""The requests of the agent whose ``BeforeModelCallEvent`` this task heard last: the model
request it makes next is that agent's (a model shared by a team's nodes streaming at once)."""

_SCOPES = OpenScopes()
"""The tool calls the hooks entered, by ``id`` of their ``tool_use`` (every agent's: a tool's
wrapped ``stream`` leaves its call's when Strands drops the call, ``_scope_body``)."""


def _add_hooks(agent: Any) -> _Requests:
    """Hook ``agent``'s model requests and scope each tool call (module doc), once per agent;
    the agent's requests."""
    requests = _HOOKED.get(agent)
    if requests is not None:
        return requests
    requests = _Requests()
    hooks = getattr(agent, "hooks", None)
    if hooks is None:
        return requests
    # A look-alike without hooks runs on its stream alone, Strands not installed.
    AfterModelCallEvent, AfterToolCallEvent, BeforeModelCallEvent, BeforeToolCallEvent = require(
        "strands.hooks",
        "AfterModelCallEvent",
        "AfterToolCallEvent",
        "BeforeModelCallEvent",
        "BeforeToolCallEvent",
    )

    scopes = _SCOPES

    def key(event: Any) -> object:
        return id(event.tool_use)  # the same dict before and after, one per call

    def before(event: Any) -> None:
        use = event.tool_use
        tool = getattr(event, "selected_tool", None)
        _scope_body(tool)
        if _direct(getattr(event, "invocation_state", None)):  # its caller's work, no call
            return
        scopes.enter(key(event), use.get("toolUseId"), use.get("name"), mcp=_mcp_server(tool))
        if requests.background is not None:  # Strands may dispatch it (_watch_background)
            requests.admitted[use.get("toolUseId")] = key(event)

    def after(event: Any) -> None:
        if _direct(getattr(event, "invocation_state", None)):
            return
        call_id = event.tool_use.get("toolUseId")
        if isinstance(getattr(event, "cancel_message", None), str) and isinstance(call_id, str):
            _failed_agent_tool(call_id, "guardrail_rejected")  # its result names it (_result)
        elif isinstance(call_id, str):  # the exception it raised, if any (the last attempt's)
            _raised(call_id, getattr(event, "exception", None))
        # with background tasks Strands hands this event a copy of the call's ``tool_use``
        admitted = requests.admitted.pop(call_id, None)
        scopes.exit(key(event) if admitted is None else admitted)

    hooks.add_callback(BeforeToolCallEvent, before)
    hooks.add_callback(AfterToolCallEvent, after)
    _add_batch_hooks(hooks)
    hooks.add_callback(BeforeModelCallEvent, requests.before)
    hooks.add_callback(AfterModelCallEvent, requests.after)
    _HOOKED[agent] = requests
    _watch_background(agent, requests)
    _nest_started()
    for model in _side_models(agent):
        _watch_model(model, requests)
    return requests


def _side_models(agent: Any) -> list[Any]:
    """The models ``agent``'s requests go to, each once: its ``model``, its ``aux_model`` and
    its conversation manager's ``summarization_agent``'s model (module doc)."""
    try:
        aux = getattr(agent, "aux_model", None)
    except Exception:  # a look-alike's property failing: no side model to watch
        aux = None
    summarizer = getattr(getattr(agent, "conversation_manager", None), "summarization_agent", None)
    models = [getattr(agent, "model", None), aux, getattr(summarizer, "model", None)]
    models += _candidates(getattr(agent, "_model_router", None))
    return list({id(m): m for m in models if m is not None}.values())


def _candidates(router: Any) -> list[Any]:
    """The models a ``ModelRouter`` routes the agent's requests among, nested ones too."""
    found: list[Any] = []
    for candidate in getattr(router, "candidates", None) or ():
        model = getattr(candidate, "model", None)
        found += _candidates(model) if hasattr(model, "candidates") else [model]
    return found


_ASKERS: WeakKeyDictionary[Any, list[_Requests]] = WeakKeyDictionary()
"""Each watched model -> the requests of the agents hooked that use it (module doc)."""


def _watch_model(model: Any, requests: _Requests) -> None:
    """Wrap ``model``'s ``stream`` once (an instance attribute) to tell its side requests
    (module doc): a request made while no agent using it has one of its loop's waiting."""
    if model is None:
        return
    try:
        askers = _ASKERS.setdefault(model, [])
    except TypeError:  # a model that takes no weak reference stays unwatched
        return
    askers.append(requests)
    if len(askers) > 1:
        return
    stream = getattr(model, "stream", None)
    if not callable(stream):
        return

    def watched(*args: Any, **kwargs: Any) -> Any:
        items = stream(*args, **kwargs)
        mine = _ASKING.get()
        if mine is not None and mine.started > 0 and any(a is mine for a in askers):
            asking = [mine]
        else:
            asking = [asker for asker in askers if asker.started > 0]
        messages = kwargs.get("messages", args[0] if args else None)
        system = kwargs.get("system_prompt", args[2] if len(args) > 2 else None)
        for asker in asking:  # the loop's own request: the model it goes to (module doc)
            asker.model = _config_id(model)
        if len(asking) == 1 and asking[0].sent:  # and what it sent
            sent = asking[0].sent[-1] = _Sent(
                asking[0].model, system, tuple(messages or ()), _server(model)
            )
            if hasattr(items, "__aiter__"):  # (a look-alike's other value passes as it is)
                sent.watched = True
                return _streaming(items, sent)
        if asking:
            return items
        told = next((asker.side for asker in askers if asker.side is not None), None)
        if told is None:  # no run of ours reads an agent using it
            return items
        start = call_start(_config_id(model), None, {"stream": True}, strands_messages, system,
                           tuple(messages or ()), side=True)  # fmt: skip
        return _side(items, start, told)

    try:
        model.stream = watched
    except Exception:  # a model that takes no attributes stays unwatched
        return


def _side(
    items: AsyncIterator[Any], start: LLMCallStart, told: deque[AgentEvent]
) -> AsyncIterator[Any]:
    """Every item of a side request's stream, unchanged; its call's events go to ``told``
    (module doc, ``_watched``): its text and reasoning as they come, its usage and stop
    reason at its end."""
    heard: dict[str, Any] = {}

    def read(item: Any) -> list[AgentEvent]:
        raw = item if isinstance(item, dict) else {}
        if isinstance(raw.get("messageStop"), dict):
            heard["stop"] = raw["messageStop"].get("stopReason")
        if isinstance(raw.get("metadata"), dict):
            heard["usage"] = raw["metadata"].get("usage")
        return _deltas(raw)

    def ended() -> list[AgentEvent]:
        usage = heard.get("usage")
        counted = [_usage(usage, start.model)] if isinstance(usage, dict) else []
        return [*counted, LLMCallEnd(model=start.model, finish_reason=heard.get("stop"))]

    return watched(items, start, told, read, ended)


def _watch_background(agent: Any, requests: _Requests) -> None:
    """Trace the calls ``agent`` runs in the background (``Agent(background_tasks=...)``), once
    per agent (module doc): its background plugin's ``submit_tool_call``, its task manager's
    ``_execute_tool``, ``_on_task_updated`` and ``resume``, wrapped as instance attributes. A
    Strands without background tasks, or an agent not given them, has nothing to wrap."""
    plugin = getattr(agent, "_background_tasks", None)
    manager = getattr(plugin, "_manager", None)
    submit = getattr(plugin, "submit_tool_call", None)
    execute = getattr(manager, "_execute_tool", None)
    updated = getattr(manager, "_on_task_updated", None)
    resume = getattr(manager, "resume", None)
    if plugin is None or manager is None or not callable(submit) or not callable(execute):
        return
    requests.background = {}
    scopes = _SCOPES

    async def submitted(tool_use: Any, *args: Any, **kwargs: Any) -> Any:
        # in the admitting task, the hook's scope current: the body runs in this context.
        # Kept before the task is submitted: Strands may start it (and end it) before
        # ``submit_tool_call`` returns here
        use = tool_use if isinstance(tool_use, dict) else {}
        call_id = use.get("toolUseId")
        running = requests.background if requests.side is not None else None
        kept = call_id if running is not None and isinstance(call_id, str) else None
        if running is not None and kept is not None:
            running[kept] = copy_context()
            requests.dispatched.add(kept)
        answer: Any = None
        try:
            answer = await submit(tool_use, *args, **kwargs)
        finally:  # Strands fires no AfterToolCallEvent for a dispatch: its scope ends here
            scopes.exit(requests.admitted.pop(call_id, None))
            refused = not isinstance(answer, dict) or answer.get("status") != "success"
            if kept is not None and refused and running is not None:  # told as any call's
                running.pop(kept, None)
                requests.dispatched.discard(kept)
        return answer

    async def executed(tool: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        use = getattr(context, "tool_use", None)
        call_id = use.get("toolUseId") if isinstance(use, dict) else None
        running = requests.background
        dispatched_in = running.get(call_id) if running is not None and call_id else None
        work = execute(tool, context, *args, **kwargs)
        if dispatched_in is None:  # dispatched outside a run of ours
            return await work
        # a task made in that context runs in a copy of it (a cancel of this one, Strands'
        # timeout or cancel, cancels the one it awaits)
        return await dispatched_in.run(asyncio.ensure_future, work)

    async def resumed(task_id: Any, *args: Any, **kwargs: Any) -> Any:
        # a run of ours resuming a task an interrupt paused (its responses given): the call
        # is this run's now, its body run in this context, its result told here
        running = requests.background if requests.side is not None else None
        task = await manager.get(task_id) if running is not None else None
        call_id = task.get("tool_use_id") if isinstance(task, dict) else None
        if running is not None and isinstance(call_id, str):
            running[call_id] = copy_context()
        return await resume(task_id, *args, **kwargs)  # type: ignore[misc]  # (wrapped if callable)

    def settled(task: Any) -> None:  # on Strands' background runtime thread
        try:  # told before the plugin's own snapshot shows it, which the agent's loop waits on
            running, told = requests.background, requests.side
            call_id = task.get("tool_use_id") if isinstance(task, dict) else None
            found = call_id if isinstance(call_id, str) else None
            if running and found in running and task.get("status") in _SETTLED:
                del running[found]
                if told is not None and found is not None:
                    told.append(_settled(found, task))
        finally:
            if callable(updated):
                updated(task)

    plugin.submit_tool_call = submitted
    manager._execute_tool = executed
    manager._on_task_updated = settled
    if callable(resume) and callable(getattr(manager, "get", None)):
        manager.resume = resumed


_SETTLED = frozenset(("completed", "failed", "cancelled"))
"""A background task's final statuses."""


def _settled(call_id: str, task: dict[str, Any]) -> ToolResult:
    """The result of the background call ``call_id`` its final task snapshot ``task`` tells:
    the tool's own answer; failed as a call run in the foreground is (the class it raised),
    ``timeout`` past the task's time limit, ``CancelledError`` cancelled."""
    result = task.get("result")
    content = converse_text((result.get("content") if isinstance(result, dict) else None) or [])
    raised = _RAISED.pop(call_id, None)
    status = task.get("status")
    if status == "completed":
        return ToolResult(tool_call_id=call_id, content=content)
    error = task.get("error")
    error = error if isinstance(error, dict) else {}
    said = content or error.get("message")
    if status == "cancelled":
        return failed_result(call_id, said, None, CANCELLED)
    kind = "timeout" if error.get("type") == "timeout" else _error_type(content, raised)
    return failed_result(call_id, said, None, kind)


def _add_batch_hooks(hooks: Any) -> None:
    """Name the calls Strands answers for a whole batch without running them (module doc): a
    ``BeforeToolsEvent`` hook's ``cancel`` (``guardrail_rejected``) and ``agent.cancel()``
    (``CancelledError``). The batch's ``BeforeToolsEvent`` is read at its ``AfterToolsEvent``,
    once every hook had its say, before the results reach the stream. A Strands without batch
    events has none to name."""
    module = require("strands.hooks")
    BeforeToolsEvent = getattr(module, "BeforeToolsEvent", None)
    AfterToolsEvent = getattr(module, "AfterToolsEvent", None)
    if BeforeToolsEvent is None or AfterToolsEvent is None:
        return
    batch: list[Any] = [None]  # this agent's batch (one at a time per agent)

    def before(event: Any) -> None:
        batch[0] = event

    def after(event: Any) -> None:
        asked, batch[0] = batch[0], None
        cancel = getattr(asked, "cancel", False)
        if cancel:
            kind, told = "guardrail_rejected", cancel if isinstance(cancel, str) else _HOOK_CANCEL
        elif _cancelled(getattr(event, "agent", None)):
            kind, told = CANCELLED, _AGENT_CANCEL
        else:
            return
        for block in (getattr(event, "message", None) or {}).get("content") or ():
            result = block.get("toolResult") if isinstance(block, dict) else None
            if not isinstance(result, dict) or result.get("status") != "error":
                continue
            call_id = result.get("toolUseId")
            if isinstance(call_id, str) and converse_text(result.get("content") or []) == told:
                _failed_agent_tool(call_id, kind)

    hooks.add_callback(BeforeToolsEvent, before)
    hooks.add_callback(AfterToolsEvent, after)


def _cancelled(agent: Any) -> bool:
    """``agent.cancel()`` was called in this invocation (its ``cancel_signal``, set until the
    invocation ends)."""
    signal = getattr(agent, "cancel_signal", None)
    is_set = getattr(signal, "is_set", None)
    return callable(is_set) and is_set() is True


class _State:
    __slots__ = ("agent", "default", "model", "open", "requests", "said", "step", "stop",
                 "tools_ran", "usage")  # fmt: skip

    def __init__(self, model: str | None, agent: Any, requests: _Requests) -> None:
        self.default = model  # the agent's model
        self.model = model  # the open call's
        self.agent = agent
        self.requests = requests
        self.open = self.tools_ran = False
        self.step = 0
        self.stop: str | None = None
        self.usage: dict[str, Any] | None = None
        self.said: str | None = None  # a hook's answer for a request it cancelled (module doc)

    def read(self, item: Any) -> Iterator[AgentEvent | StreamEvent]:
        """The events of one item of the agent's ``stream_async``, its final ``result`` too
        (none for a delegate's item its nested run told: ``_delegated``)."""
        if isinstance(item, dict) and not (_DELEGATED and _delegated(item)):
            yield from self.feed(item)
            self._ended_turn(item)
            yield from _paused(item)
            if (answer := _structured(item)) is not None:
                yield answer
            if _stopped(item):
                yield cancelled_run("agent.cancel()")

    def _ended_turn(self, item: dict[str, Any]) -> None:
        """A final ``result`` ending the turn right after tools ran, no model asked after
        them: an ``AfterToolsEvent`` hook's ``end_turn`` (Strands' delegation to an
        ``as_tool(delegate=True)`` agent sets it to the delegate's answer). The message it
        ends with, told in no other item, is the run's answer (module doc)."""
        result = item.get("result") if len(item) == 1 else None
        if result is None or not self.tools_ran or self.open:
            return
        if getattr(result, "stop_reason", None) != "end_turn":
            return
        message = getattr(result, "message", None)
        blocks = message.get("content") if isinstance(message, dict) else None
        text = converse_text(blocks) if isinstance(blocks, list) else None
        if isinstance(text, str) and text:
            self.said = text

    def finish(self) -> list[AgentEvent | StreamEvent]:
        """The run's items ended: the side requests not told yet, and a hook's answer when
        it answered last, no model after it (module doc)."""
        out: list[AgentEvent | StreamEvent] = [*self.drain([])]
        if self.said is not None:
            out.append(MessageFinal(text=self.said))
        return out

    def feed(self, item: dict[str, Any]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        if self.requests.failed and not item.get("force_stop"):  # Strands retried them
            for error, model, sent in self.requests.failed:
                self._start(out, model, sent)
                kind = error_name(error)
                out += [Error(message=str(error) or kind, error_type=kind), LLMCallEnd()]
                self.open = False
            self.requests.failed.clear()
        self.drain(out)
        raw = item.get("event")
        if isinstance(raw, dict):
            out += self._raw(raw)
        else:
            message = item.get("message")
            if isinstance(message, dict) and len(item) == 1:
                out += self._message(message)
        return self.drain(out)

    def drain(self, out: list[AgentEvent]) -> list[AgentEvent]:
        """``out`` with the side requests made since (module doc), while no call is open."""
        told = self.requests.side
        while told and not self.open:
            event = told.popleft()
            if isinstance(event, ToolResult):  # a background call settled (_watch_background)
                self.tools_ran = True
            out.append(event)
        return out

    def refused(self) -> list[AgentEvent]:
        """The run failed: a call whose response came whole (its ``messageStop`` streamed)
        ends as answered, with its usage and the tool calls it asked for, which never ran, for
        what failed came after it (an ``AfterModelCallEvent`` hook raising); the requests
        that failed before any event open their calls (those before the last end with their
        own error; the last one, the run's, stays open and ends with the exception, unless a
        side request came after it: a summary failing after an overflow, whose call holds its
        own failure), then the side requests."""
        out: list[AgentEvent] = []
        if self.open and self.stop is not None:  # (Strands tells its hooks that exception too)
            self.requests.midway = None
            if self.usage is not None:
                out.append(_usage(self.usage, self.model))
            out.append(_answered_end(self.requests.answered, self.model, self.stop))
            self.open = False
        failed, self.requests.failed = self.requests.failed, []
        last = len(failed) - (0 if self.requests.side else 1)
        for i, (error, model, sent) in enumerate(failed):
            self._start(out, model, sent)
            if i < last:
                kind = error_name(error)
                out += [Error(message=str(error) or kind, error_type=kind), LLMCallEnd()]
                self.open = False
        return self.drain(out)

    def _raw(self, raw: dict[str, Any]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        if "messageStart" in raw:
            if self.open:  # its response was dropped, the model asked again (module doc)
                out += self._dropped()
            self._open(out)
        elif "contentBlockDelta" in raw:
            self._open(out)
            out += _deltas(raw)
        elif "messageStop" in raw:
            self.stop = raw["messageStop"].get("stopReason")
        elif "metadata" in raw:
            usage = raw["metadata"].get("usage")
            self.usage = usage if isinstance(usage, dict) else None
        return out

    def _dropped(self) -> list[AgentEvent]:
        """The open call's response, which Strands dropped (no message of it came) to ask the
        model again: failed with the exception it raised mid-stream, else answered and
        refused by an ``AfterModelCallEvent`` hook (``retry``), its step failed
        ``output_rejected`` and the request asked again the next step (module doc)."""
        out: list[AgentEvent] = []
        if self.usage is not None:  # billed: its tokens stay on it
            out.append(_usage(self.usage, self.model))
        error, self.requests.midway = self.requests.midway, None
        if error is not None:
            kind = error_name(error)
            out += [Error(message=str(error) or kind, error_type=kind), LLMCallEnd()]
        else:  # the calls it asked for never ran: its output, no tool's (the module doc)
            out.append(_answered_end(self.requests.answered, self.model, self.stop))
            out.append(Error(message=_DROPPED, error_type="output_rejected"))
            self.tools_ran = True  # the request asked again starts the next step
        self.open = False
        return out

    def _open(self, out: list[AgentEvent]) -> None:
        if self.open:
            return
        self._start(out, sent=self.requests.opened())

    def _start(
        self, out: list[AgentEvent], model: str | None = None, sent: _Sent | None = None
    ) -> None:
        """Open a call of the request that ``sent`` it (its messages: ``_Requests.sent``), of
        ``model`` (a failed request's), else of the model the request was streamed from (a
        router's pick: module doc), else the agent's."""
        picked = sent.model if sent is not None else None
        self.model = model or picked or self.requests.model or self.default
        server = sent.server if sent is not None else None
        if server is None and not (model or picked or self.requests.model):  # the agent's
            server = _server(getattr(self.agent, "model", None))
        if self.tools_ran and not self.requests.background:  # (its call's step goes on)
            out.append(StepBoundary(index=self.step))
            self.step, self.tools_ran = self.step + 1, False
        if sent is not None:
            messages, system = sent.messages, sent.system
        else:  # a request no hook heard (a look-alike's): the agent's, as they are now
            messages = tuple(getattr(self.agent, "messages", None) or ())
            system = getattr(self.agent, "system_prompt", None)
        start = call_start(self.model, None, {"stream": True}, strands_messages, system, messages)
        out.append(at_endpoint(start, server))
        self.open, self.stop, self.usage, self.said = True, None, None, None
        self.requests.midway = self.requests.answered = None

    def _message(self, message: dict[str, Any]) -> list[AgentEvent]:
        blocks = message.get("content") or []
        out: list[AgentEvent] = []
        # the model's message has the role its ``messageStart`` named, whatever it was (a
        # plugin's ``None``); the tool results' message is the user's
        if message.get("role") != "user":
            if not self.open:  # no model's: a hook cancelled the request (module doc)
                self.requests.opened()
                texts = [b.get("text") for b in blocks if isinstance(b, dict)]
                self.said = "".join(t for t in texts if isinstance(t, str)) or None
                return out
            for block in blocks:
                use = block.get("toolUse") if isinstance(block, dict) else None
                if isinstance(use, dict):
                    out += tool_call(use.get("toolUseId"), use.get("name"), use.get("input"))
            if self.usage is not None:
                out.append(_usage(self.usage, self.model))
            out.append(LLMCallEnd(model=self.model, finish_reason=self.stop))
            self.open = False
            return out
        dispatched = self.requests.dispatched
        for block in blocks:
            result = block.get("toolResult") if isinstance(block, dict) else None
            if not isinstance(result, dict):
                continue
            if dispatched and result.get("toolUseId") in dispatched:  # an acknowledgement
                dispatched.discard(result.get("toolUseId"))
                continue
            self.tools_ran = True
            out.append(_result(result))
        return out


def _answered_end(message: Any, model: Any, stop: Any) -> LLMCallEnd:
    """The end of a response Strands dropped after it came whole, with its ``toolUse``
    blocks (its message, as the ``AfterModelCallEvent`` hook heard it) as calls that never
    ran."""
    blocks = message.get("content") if isinstance(message, dict) else None
    unrun = []
    for block in blocks if isinstance(blocks, list) else ():
        use = block.get("toolUse") if isinstance(block, dict) else None
        if isinstance(use, dict):
            unrun.append(unrun_call(use.get("toolUseId"), use.get("name"), use.get("input")))
    if not unrun:
        return LLMCallEnd(model=model, finish_reason=stop)
    return UnrunCallsEnd(model=model, finish_reason=stop, unrun=tuple(unrun))


def _deltas(raw: dict[str, Any]) -> list[AgentEvent]:
    """The text and reasoning a raw ``contentBlockDelta`` event carries."""
    block = raw.get("contentBlockDelta")
    delta = (block.get("delta") if isinstance(block, dict) else None) or {}
    out: list[AgentEvent] = []
    text = delta.get("text")
    if isinstance(text, str) and text:
        out.append(TextDelta(text=text))
    thought = (delta.get("reasoningContent") or {}).get("text")
    if isinstance(thought, str) and thought:
        out.append(ReasoningDelta(text=thought))
    return out


def _usage(usage: dict[str, Any], model: str | None) -> Usage:
    given, output = _count(usage, "inputTokens"), _count(usage, "outputTokens")
    read, wrote = (
        _count(usage, "cacheReadInputTokens") or 0,
        _count(usage, "cacheWriteInputTokens") or 0,
    )
    total = _count(usage, "totalTokens")
    left_out = (read or wrote) and given is not None and output is not None
    if left_out and total == given + output + read + wrote:  # type: ignore[operator]
        given += read + wrote  # type: ignore[operator]  # the provider left the cache out
    return Usage(
        input_tokens=given, output_tokens=output, total_tokens=total,
        cache_read_tokens=read or None, cache_creation_tokens=wrote or None, model=model,
    )  # fmt: skip


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) else None


_FAILED_AGENT_TOOLS: dict[str, str] = {}
"""The call id of an agent-as-tool whose run failed -> the class it failed with (read once by
the outer run's result; one no run of ours reads, its outer agent run on its own, is dropped
once :data:`_FAILED_KEPT` wait)."""
_FAILED_KEPT = 1024


def _failed_agent_tool(call_id: str, kind: str) -> None:
    if len(_FAILED_AGENT_TOOLS) >= _FAILED_KEPT:  # never read: the oldest are long gone
        _FAILED_AGENT_TOOLS.clear()
    _FAILED_AGENT_TOOLS[call_id] = kind


_RAISED: dict[str, str] = {}
"""The call id of a tool whose body raised -> the exception's class, as its
``AfterToolCallEvent`` hook heard it (read once by its result, kept as
:data:`_FAILED_AGENT_TOOLS` is): the ``@tool`` decorator writes the class into the text only
for what is not a ``ValueError`` (``Error: {class} - {message}``, else ``Error: {message}``)."""


def _raised(call_id: str, error: Any) -> None:
    if not isinstance(error, Exception):
        _RAISED.pop(call_id, None)  # a retried call that answered at last
        return
    if len(_RAISED) >= _FAILED_KEPT:  # never read: the oldest are long gone
        _RAISED.clear()
    _RAISED[call_id] = error_name(error)


def _paused(item: dict[str, Any]) -> list[InterruptFinal]:
    """The interrupts a run's final ``result`` paused on (module doc)."""
    result = item.get("result") if len(item) == 1 else None
    if getattr(result, "stop_reason", None) != "interrupt":
        return []
    return [
        InterruptFinal(
            interrupt_id=str(pause.id),
            payload=getattr(pause, "reason", None),
            reason=name if isinstance(name := getattr(pause, "name", None), str) else None,
        )
        for pause in getattr(result, "interrupts", None) or ()
        if getattr(pause, "id", None) is not None
    ]


def _structured(item: dict[str, Any]) -> StructuredFinal | None:
    """The run's answer when its final ``result`` holds a ``structured_output`` (a run with
    ``structured_output_model``: the model called Strands' output tool, and no text told the
    answer): the output Strands validated, as JSON (module doc)."""
    result = item.get("result") if len(item) == 1 else None
    return structured_final(getattr(result, "structured_output", None))


def _stopped(item: dict[str, Any]) -> bool:
    """The run's final ``result`` says ``agent.cancel()`` stopped it (``stop_reason ==
    "cancelled"``): it ends ``cancelled``, as a cancelled task does (module doc)."""
    result = item.get("result") if len(item) == 1 else None
    return getattr(result, "stop_reason", None) == "cancelled"


def _result(result: dict[str, Any]) -> ToolResult:
    content = converse_text(result.get("content") or [])
    call_id = str(result.get("toolUseId") or "")
    raised = _RAISED.pop(call_id, None)
    if result.get("status") == "error":
        kind = _FAILED_AGENT_TOOLS.pop(call_id, None) or _error_type(content, raised)
        return failed_result(call_id, content, None, kind)
    return ToolResult(tool_call_id=call_id, content=content)


def _error_type(content: Any, raised: str | None = None) -> str:
    """An error result's type: Strands' own outcome its text names (a name the agent lacks,
    arguments failing validation), else the class of the exception the tool raised (its hook
    heard it: ``raised``), else the class a ``@tool``'s error text names (Strands writes
    ``Error: {class} - {message}``), else ``tool_error``."""
    if not isinstance(content, str):
        return raised or "tool_error"
    for text, outcome in _OWN_OUTCOMES:
        if content.startswith(text):
            return outcome
    for pattern, outcome in _OWN_TEXTS:
        if pattern.match(content):
            return outcome
    if raised:
        return raised
    found = _DECORATOR_ERROR.match(content)
    return found.group(1) if found is not None else "tool_error"

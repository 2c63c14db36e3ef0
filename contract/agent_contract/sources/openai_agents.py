"""The OpenAI Agents SDK: ``Runner.run_streamed(...).stream_events()`` as contract events.

Its stream carries three kinds of event, read by their ``type``:

* ``raw_response_event``: the model's own Responses API events, read by the Responses
  source's reader. ``response.created`` opens an LLM call (``LLMCallStart`` with the model and
  model settings the SDK resolves for the current agent: ``RunConfig.model`` over the agent's,
  ``RunConfig.model_settings`` over its settings; a ``StepBoundary`` first when a call came
  before, so each step is one model call plus the tools it asked for); ``response.completed``
  (or failed, incomplete) closes it with ``Usage`` and ``LLMCallEnd``. Tool calls, handoffs included
  (``transfer_to_<agent>``), come from the response's ``function_call`` items; a tool the
  provider ran inside the response (a hosted tool: web search, file search, code interpreter,
  hosted MCP, image generation) is, as the reader tells it, a ``server_tool_call`` part of
  the call's output (``ServerToolCallsEnd``), no tool call: the SDK's ``tool_called`` item
  for it repeats the raw item.
* ``run_item_stream_event``: ``tool_output`` and ``handoff_occured`` items are the calls'
  results (``ToolResult`` by ``call_id``); the other items repeat what the raw events
  said, but for a message item after a turn's results with no response before it: the final
  output a ``max_turns`` error handler gave, the run's answer (``MessageFinal``). A run that
  ends on a turn's results (a tool ended it: ``tool_use_behavior``) has the SDK's final
  output, the tools', as its answer (``MessageFinal``, or ``StructuredFinal``). An agent
  with an ``output_type`` (not ``str``) asks for a JSON answer of its schema: its requests'
  ``output_type`` param is ``json``, and the run's answer is the final output the SDK
  validated, as JSON (``StructuredFinal``), the chat span keeping the model's text.
  A tool that raised under the SDK's default failure handler returns text like any other
  result: the adapter adds its own ``RunConfig.tool_error_formatter`` (the SDK's hook for
  exactly those failures, handing it the exception and the call id; a formatter the caller
  set still formats the message), so that result is an error whose ``error_type`` is the
  exception's class (``tool_not_found`` for a call to a tool the agent lacks). A tool with a
  ``failure_error_function`` of its own calls no formatter: the SDK's
  ``maybe_invoke_function_tool_failure_error_function``, through which every function tool's
  failure handler is called, is wrapped once to note the call's exception too (the handler's
  text unchanged). A tool whose ``timeout`` ran out (its result the SDK's timeout message or
  its ``timeout_error_function``'s) is a ``ToolTimeoutError``: the run hooks time each call
  of a tool with a timeout, from ``on_tool_start`` to ``on_tool_end``. A tool with no
  failure handler (``failure_error_function=None``) makes the SDK raise out of the run; the
  same wrapped function hears each such call's exception first, so when the run fails, every
  call whose tool raised (parallel calls too) is told as a failed result of its own class.
  A call whose approval was refused (``needs_approval``, then ``RunState.reject`` and the run
  resumed) never runs: the SDK answers it with the rejection text (its own, the formatter's
  or the caller's ``rejection_message``), built by ``function_rejection_item``, which is
  wrapped once to note the call; its result is failed as ``approval_rejected`` (the SDK's own
  name for that outcome) and named for its tool (the resumed run never saw it asked). A call a
  tool guardrail refuses with ``reject_content`` (an input guardrail's: the tool never runs;
  an output guardrail's: its output replaced) is failed as ``guardrail_rejected``, noted by
  the SDK's ``_execute_tool_input_guardrails`` / ``_execute_tool_output_guardrails``, each
  wrapped once; a guardrail's ``raise_exception`` ends the run with its tripwire's class.
* ``agent_updated_stream_event``: the run starts with, or hands off to, an agent; it becomes a
  ``PhaseMarker`` named after that agent, so the trace shows who answered each step.

The SDK's streamed events begin with the model's response, so a request refused before it
(a 429) would show no call: run hooks the adapter adds (``on_llm_start``, beside the caller's
own ``hooks``, which still get every callback) say the request started, and a run failing
before its ``response.created`` still has that call, which carries the error. An attempt the
runner's retry policy runs again (``ModelSettings.retry``) streams nothing either: the
runner's ``_evaluate_retry`` (wrapped once) notes what it raised when it decides to retry, and
each such attempt is told as a failed call before the request's next one.

Each function tool's body (an MCP server's tools included) runs under
``agent_contract.scope.tool_scope`` of its call. The SDK has no tool-wrapping seam, but it runs
each function tool in a task of its own and calls the run's ``RunHooks.on_tool_start`` (with
the call's ``ToolContext``) in that task just before it starts the body in a child task; the
adapter passes run hooks (wrapping the caller's ``hooks=``, which still see every call) whose
``on_tool_start`` enters the scope right there, synchronously, so the body's task inherits it.
The scope ends with the tool's task. Computer, shell and custom tools are not scoped. A tool
of one of the agent's MCP servers (its origin says so) is scoped with the server
(``McpServer``: the name the server gives itself, else the SDK's name for it; the session's
protocol version and id where the session has them).

An agent run inside a tool body is a run of its own, nested under that tool's span: the SDK's
``agent.as_tool()`` (and a function tool of the caller's that calls ``Runner.run``) runs it
unstreamed, so no stream shows it. ``Runner.run`` goes through the SDK's default agent runner,
so the adapter installs one (once, wrapping the one it finds; the SDK's
``set_default_agent_runner``) that, only inside the body of a function tool of a run streamed
here and only when a tracer claims it (``agent_contract.scope.nested_run``), runs that agent
with ``Runner.run_streamed`` through this adapter instead: same arguments, same agent, the
result the same data (a ``RunResultStreaming``, complete), and the tracer records its events as
a nested run, with its own calls, tokens and answer; ``Runner.run_sync`` there (a sync tool,
on the SDK's thread, or a thread the tool hands it to) runs that same ``run`` on its thread's
loop, as the SDK's own ``run_sync`` does. Everywhere else ``Runner.run`` is left as it was. A
runner the caller installs later replaces it (nested runs are then not recorded). A tool body
that streams an agent itself (``Runner.run_streamed`` and its ``stream_events()``, as
``as_tool(on_stream=...)`` does to hand its callback each event) gets the SDK's own events,
unchanged, while the adapter reads them into a nested run under the tool's span the same way
(they were recorded nowhere).

``on_result`` receives the ``RunResultStreaming`` before streaming starts, so the caller keeps
everything the SDK returned (``final_output``, ``new_items``, ``raw_responses``). Closing the
stream early cancels the run. A run the application cancels (``result.cancel()`` on the
result ``on_result`` hands it: ``immediate``, or ``after_turn`` before the run had its answer)
ends with a fatal ``Error`` of type ``CancelledError``: the run ends ``cancelled``. Needs
``openai-agents`` (extra ``openai-agents``).

A run that stops for approval (a ``needs_approval`` tool's call: the SDK ends the stream with
the call in ``result.interruptions``) yields one ``InterruptFinal`` per call waiting
(``interrupt_id`` the call's id, ``reason`` ``approval``): the run ends ``interrupted``, the
call cut short, as a paused graph does; resumed from ``result.to_state()``, the call it
approved runs in the resumed run.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from contextvars import ContextVar
from time import monotonic
from types import new_class
from typing import Any

from agent_contract.agent.events import InterruptFinal, MessageFinal, StreamEvent
from agent_contract.events import (
    AgentEvent,
    LLMCallEnd,
    LLMCallStart,
    PhaseMarker,
    StepBoundary,
    ToolResult,
)
from agent_contract.scope import McpServer, framework_started, nested_run, tool_scope
from agent_contract.sources import _conversation
from agent_contract.sources._endpoint import at_endpoint, base_url_of
from agent_contract.sources._failure import Error, cancelled_run, error_name, failed_result
from agent_contract.sources._history import call_start, responses_messages
from agent_contract.sources._nested import through
from agent_contract.sources._provider_names import OPENAI, openai_client_provider
from agent_contract.sources._require import expect, require
from agent_contract.sources._stream import closed, read_events
from agent_contract.sources._structured import structured_final
from agent_contract.sources.openai_responses import ResponsesReader

__all__ = ["openai_agents_events"]

_RESULTS = frozenset({"tool_output", "handoff_occured", "handoff_occurred"})
_ASKED = frozenset({"tool_called", "handoff_requested"})
_OTHER_HANDOFF = "Multiple handoffs detected, ignoring this one."
"""The SDK's answer to each handoff a response asked for beyond the first, which it takes."""


@dataclasses.dataclass(slots=True)
class _Body:
    """The function tool whose body runs (in its task, see ``_scoping_hooks``): its call, and
    the failures of its run, where an agent tool's failed nested run is noted (the SDK turns
    it into text with the tool's own ``failure_error_function``, which calls no formatter)."""

    call_id: str
    agent_tool: bool
    failures: dict[str, str]
    raised: dict[str, BaseException]
    """Call id -> the exception a tool with no failure handler raised (it ends the run)."""


_IN_TOOL: ContextVar[_Body | None] = ContextVar("agent_contract_openai_agents_tool", default=None)


_HINT = "Make one with agents.Agent(name=..., instructions=..., ...)."

_Refusals = dict[str, tuple[str | None, str]]
"""Call id -> the tool's name and why the SDK refused the call (its outcome's name)."""

_REJECTED: ContextVar[_Refusals | None] = ContextVar(
    "agent_contract_openai_agents_rejected", default=None
)
"""The run's refused calls, set as ``Runner.run_streamed`` makes the run's task (which copies
it): where the SDK's refusals in that run are noted."""

_RETRIED: ContextVar[list[BaseException] | None] = ContextVar(
    "agent_contract_openai_agents_retried", default=None
)
"""What each model request the SDK's retry policy runs again raised, set as ``_REJECTED`` is:
where the run's retried attempts are noted, until the reader tells them."""


async def openai_agents_events(
    agent: Any,
    input: Any,
    *,
    on_result: Callable[[Any], object] | None = None,
    **run: Any,
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` on ``input`` with ``Runner.run_streamed`` (``run`` passed on), as events."""
    require("agents", "Runner", "RunHooks", "RunConfig")
    expect(agent, "openai_agents_events", "an agents.Agent", "handoffs", "tools", hint=_HINT)
    # before the framework makes any request (read once the agent is known to be one); the
    # conversation the provider or a session keeps
    conversation = run.get("conversation_id") or _conversation.id_of(run.get("session"))
    framework_started(__name__, conversation)
    from agents import Runner

    _install_nesting()
    reading = _Reading(agent)
    result: Any = reading.started(Runner.run_streamed, agent, input, run)
    if on_result is not None:
        on_result(result)
    try:
        async for out in read_events(result.stream_events(), reading.feed):
            yield out
        if _cancelled(result):
            yield cancelled_run("result.cancel()")
        for pause in _paused(result):
            yield pause
        answer = reading.tools_answer(result) or structured_final(result.final_output)
        if answer is not None:
            yield answer
    except Exception as exc:
        for out in reading.failed(exc):
            yield out
        raise
    finally:
        if not result.is_complete:
            result.cancel()


def _paused(result: Any) -> list[InterruptFinal]:
    """A run paused for approval (a ``needs_approval`` tool's call, its ``interruptions``):
    one ``InterruptFinal`` per call waiting, its id the call's (what ``RunState.approve`` and
    ``reject`` answer), so the run ends ``interrupted``, the call cut short."""
    out = []
    for item in getattr(result, "interruptions", None) or ():
        raw = getattr(item, "raw_item", None)
        call_id = _field(raw, "call_id")
        if call_id is None:
            continue
        name = getattr(item, "tool_name", None) or _field(raw, "name")
        payload = {"tool": name, "arguments": _field(raw, "arguments")}
        out.append(InterruptFinal(interrupt_id=str(call_id), payload=payload, reason="approval"))
    return out


def _cancelled(result: Any) -> bool:
    """The application stopped the run with ``result.cancel()`` (``on_result`` hands it the
    result): ``immediate``, or ``after_turn`` before the run had its answer. The SDK keeps
    the mode only in ``_cancel_mode``; an SDK without it tells no cancel."""
    mode = getattr(result, "_cancel_mode", None)
    if mode == "after_turn":
        return getattr(result, "final_output", None) is None
    return mode == "immediate"


class _Reading:
    """One run's SDK stream events read as contract events (the state between them)."""

    __slots__ = (
        "answered", "asked", "concluded", "config", "current", "ended", "failures", "open",
        "raised", "reader", "rejected", "requested", "retried", "running", "step",
    )  # fmt: skip

    def __init__(self, agent: Any) -> None:
        self.failures: dict[str, str] = {}  # call id -> the class of the error its text reports
        self.running: dict[str, str] = {}  # call id -> tool name, for each function tool running
        self.asked: dict[str, bool] = {}  # call id -> a handoff's, each call with no result read
        self.ended: dict[str, Any] = {}  # call id -> what its tool returned (``on_tool_end``)
        self.raised: dict[str, BaseException] = {}  # call id -> what its tool raised out of the run
        self.rejected: _Refusals = {}  # each call an approval or a guardrail refused
        self.requested: list[tuple[Any, Any, Any]] = []  # each request: agent, prompt, items
        self.retried: list[BaseException] = []  # what each attempt the SDK retried raised
        self.current, self.step = agent, 0
        self.reader: ResponsesReader | None = None
        self.open = False  # a model response begun and not ended
        self.answered = False  # a result read since the last response began
        self.concluded = False  # the run's answer told by a message no model wrote
        self.config: Any = None  # the run's ``RunConfig`` (its model and settings win)

    def prepared(self, run: dict[str, Any]) -> dict[str, Any]:
        """``run``'s arguments with the hooks and the error formatter that feed this reading."""
        announcing = _announcing(run.get("hooks"), self.requested)
        hooks = _scoping_hooks(announcing, self.failures, self.running, self.raised, self.ended)
        run = _noting_failures({**run, "hooks": hooks}, self.failures)
        self.config = run["run_config"]
        return run

    def started(self, run_streamed: Any, agent: Any, input: Any, run: dict[str, Any]) -> Any:
        """``run_streamed(agent, input, ...)`` with ``run`` prepared; the task it makes for the
        run notes the calls whose approval was refused into this reading."""
        token, again = _REJECTED.set(self.rejected), _RETRIED.set(self.retried)
        try:
            return run_streamed(agent, input, **self.prepared(run))
        finally:
            _RETRIED.reset(again)
            _REJECTED.reset(token)

    def feed(self, event: Any) -> Iterator[AgentEvent | StreamEvent]:
        """The events ``event`` completes, each yielded as it is read: an event of fields
        this cannot read loses only what follows that point (``read_events`` skips the rest)."""
        kind = event.type
        if kind == "raw_response_event":
            data = event.data
            if data.type == "response.created":
                if self.reader is not None:
                    yield StepBoundary(index=self.step)
                    self.step += 1
                yield from self._attempts()
                self.reader = ResponsesReader()
                self.answered = False
                request = self.requested.pop(0) if self.requested else (self.current, None, None)
                self.open = True
                yield _start(self.current, request, self.config)
            reader = self.reader
            if reader is None:
                return
            yield from reader.feed(data)
            if reader.done:
                self.open = False
                self.reader = ResponsesReader()  # a closed call: later raw events start afresh
                yield from closed(reader.close)
        elif kind == "run_item_stream_event":
            name = event.name
            if name in _RESULTS:
                result = _result(event.item, self.failures, self.rejected)
                self.asked.pop(result.tool_call_id, None)
                self.ended.pop(result.tool_call_id, None)
                self.answered = True
                yield result
            elif name == "message_output_created" and self.answered and not self.open:
                self.concluded = True
                yield _answer(event.item)  # a message no model wrote (module doc)
            elif name in _ASKED and _field(event.item.raw_item, "type") == "function_call":
                call_id = str(_field(event.item.raw_item, "call_id") or "")
                self.asked[call_id] = name == "handoff_requested"
        elif kind == "agent_updated_stream_event":
            if self.asked:  # a handoff: its turn's results the stream did not show
                yield from self.handed_off(event.new_agent)
            self.current = event.new_agent
            yield PhaseMarker(name=str(self.current.name))

    def handed_off(self, to: Any) -> list[AgentEvent]:
        """The results of the handoff's turn that its ``input_filter`` kept from the stream.

        The SDK streams a turn's results after the handoff's input filter ran, and only the
        items it left (``handoff_filters.remove_all_tools`` leaves none): the handoff's own
        answer, the other function tools' and the other handoffs' were never streamed, and
        their calls ended cut short. Every call of that turn had its answer by then: a
        function tool's is what ``on_tool_end`` heard, the handoff's the SDK's transfer
        message (the first handoff asked is the one taken), any other handoff's the SDK's
        fixed text."""
        out: list[AgentEvent] = []
        taken = False
        asked, self.asked = self.asked, {}
        for call_id, handoff in asked.items():
            if handoff:
                content = _OTHER_HANDOFF if taken else json.dumps({"assistant": str(to.name)})
                taken = True
            elif call_id in self.ended:
                content = self.ended.pop(call_id)
            else:  # a call this turn never ran (an approval pending): left as it was
                continue
            out.append(_told(call_id, content, self.failures, self.rejected))
        self.answered = self.answered or bool(out)
        return out

    def failed(self, exc: BaseException) -> list[AgentEvent]:
        """The run raised ``exc``: the call it failed, told. An agent's guardrail tripping
        fails no call: the response in flight, which the SDK cancels, ends cut short before
        the exception ends the run (which it fails with the step it stopped), and a request
        not yet answered shows no call."""
        out: list[AgentEvent] = []
        if _tripped(exc):
            if self.open:
                self.open = False
                out.append(LLMCallEnd())
            return out
        if self._between_turns():  # ``MaxTurnsExceeded``: the turns it ran are whole
            return [StepBoundary(index=self.step)]
        for call_id, error in self.raised.items():  # each call whose tool raised, parallel too
            name = self.running.pop(call_id, None)
            if name is not None:
                text = str(exc) if exc.__cause__ is error else f"Error running tool {name}"
                out.append(failed_result(call_id, text, name, error_name(error)))
        failed = _raised_by_tool(exc, self.running)
        if failed is not None:  # a tool without a failure handler raised: its call failed
            out.append(failed)
        if self.requested:  # refused before its response began: the call is shown, and fails
            if self.reader is not None:
                out.append(StepBoundary(index=self.step))
            out.extend(self._attempts())
            out.append(_start(self.requested[0][0], self.requested[0], self.config))
        return out

    def _attempts(self) -> Iterator[AgentEvent]:
        """The attempts of the coming request that failed and the SDK's retry policy ran again
        (``ModelSettings.retry``; the SDK streams nothing of them): each a call of its own with
        that request's messages, failed with what it raised, in the step of the one after."""
        failed, self.retried[:] = list(self.retried), []
        request = self.requested[0] if self.requested else (self.current, None, None)
        for error in failed:
            kind = error_name(error)
            yield _start(request[0], request, self.config)
            yield Error(message=str(error) or kind, error_type=kind)
            yield LLMCallEnd()

    def tools_answer(self, result: Any) -> StreamEvent | None:
        """The run's answer when its tools gave it (``tool_use_behavior``:
        ``"stop_on_first_tool"``, ``StopAtTools``, a function's ``ToolsToFinalOutputResult``):
        the stream ended on a turn's results, with no response or message after them (the SDK
        makes none), and the SDK's final output is what the tools gave, a text
        (``MessageFinal``) or structured (``StructuredFinal``). Else ``None``: the last
        model call's text (or a message no model wrote) is the answer."""
        if not self.answered or self.open or self.concluded or self.asked or self.requested:
            return None
        output = getattr(result, "final_output", None)
        if isinstance(output, str):
            return MessageFinal(text=output)
        return structured_final(output)

    def _between_turns(self) -> bool:
        """Whether the run stopped between turns: its last response ended, every call it asked
        for answered (one at least: a turn with no calls was the answer), no tool still
        running and no request announced. The SDK raises ``MaxTurnsExceeded`` there, as the
        turn past the limit starts: that step is whole, and only the run fails."""
        return (
            self.answered
            and not self.open
            and not self.asked
            and not self.running
            and not self.raised
            and not self.requested
        )


def _answer(item: Any) -> MessageFinal:
    """The run's answer that a ``message_output_created`` item with no response before it
    carries: the final output a ``max_turns`` error handler gave (the SDK makes its message
    item itself), its text as ``ItemHelpers.text_message_output`` reads it."""
    content = _field(getattr(item, "raw_item", None), "content") or ()
    text = "".join(t for part in content if isinstance(t := _field(part, "text"), str))
    return MessageFinal(text=text)


def _tripped(exc: BaseException) -> bool:
    """Whether ``exc`` is an agent's input or output guardrail tripping (a tool's guardrail
    stops its call, which is then the call that failed)."""
    from agents.exceptions import InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered

    return isinstance(exc, (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered))


_HOOKS = ("on_llm_end", "on_agent_start", "on_agent_end", "on_handoff", "on_tool_start",
          "on_tool_end")  # fmt: skip


def _announcing(theirs: Any, requested: list[Any]) -> Any:
    """Run hooks noting each model request (its agent, system prompt and input items) in
    ``requested``, and passing every callback on to the caller's own ``theirs`` (when given)."""
    from agents import RunHooks

    async def on_llm_start(self: Any, context: Any, agent: Any, *args: Any) -> None:
        requested.append((agent, *args[:2]) if len(args) >= 2 else (agent, None, None))
        if theirs is not None:
            await theirs.on_llm_start(context, agent, *args)

    def passed_on(name: str) -> Any:
        async def hook(self: Any, *args: Any, **kwargs: Any) -> None:
            if theirs is not None:
                await getattr(theirs, name)(*args, **kwargs)

        return hook

    methods = {name: passed_on(name) for name in _HOOKS} | {"on_llm_start": on_llm_start}
    return new_class("AnnouncingHooks", (RunHooks,), exec_body=lambda ns: ns.update(methods))()


def _scoping_hooks(
    hooks: Any,
    failures: dict[str, str],
    running: dict[str, str],
    raised: dict[str, BaseException],
    ended: dict[str, Any],
) -> Any:
    """Run hooks entering each function tool's scope in its task, then calling ``hooks``."""
    from agents import FunctionTool, RunHooks

    inner = hooks if hooks is not None else RunHooks()
    timed: dict[str, tuple[float, float]] = {}  # call id -> (its start, its tool's timeout)

    class ScopingHooks(RunHooks[Any]):
        def on_tool_start(self, context: Any, agent: Any, tool: Any) -> Any:
            # Not async on purpose: this runs in the tool's own task, before the SDK creates
            # the body's task from it (see the module docstring).
            if isinstance(tool, FunctionTool):
                call_id = getattr(context, "tool_call_id", None)
                agent_tool = bool(getattr(tool, "_is_agent_tool", False))
                _IN_TOOL.set(_Body(str(call_id or ""), agent_tool, failures, raised))  # nested runs
                name = getattr(context, "tool_name", None) or tool.name
                running[str(call_id)] = str(tool.name)
                limit = getattr(tool, "timeout_seconds", None)
                if limit and getattr(tool, "timeout_behavior", None) == "error_as_result":
                    timed[str(call_id)] = (monotonic(), float(limit))
                tool_scope(call_id, name, mcp=_mcp_server(agent, tool)).__enter__()
            return inner.on_tool_start(context, agent, tool)

        def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> Any:
            # Not async on purpose either: the SDK calls it right after it hands the result on,
            # before the stream can read it, so a timeout is noted before its result is read.
            call_id = str(getattr(context, "tool_call_id", None))
            running.pop(call_id, None)
            ended[call_id] = result  # its stream item's output (a handoff's filter may drop it)
            started, limit = timed.pop(call_id, (None, 0.0))
            if started is not None and monotonic() - started >= limit:  # the SDK's wait ran out
                failures.setdefault(call_id, "ToolTimeoutError")
            return inner.on_tool_end(context, agent, tool, result)

        def on_llm_start(self, *args: Any, **kwargs: Any) -> Any:
            return inner.on_llm_start(*args, **kwargs)

        def on_llm_end(self, *args: Any, **kwargs: Any) -> Any:
            return inner.on_llm_end(*args, **kwargs)

        def on_agent_start(self, *args: Any, **kwargs: Any) -> Any:
            return inner.on_agent_start(*args, **kwargs)

        def on_agent_end(self, *args: Any, **kwargs: Any) -> Any:
            return inner.on_agent_end(*args, **kwargs)

        def on_handoff(self, *args: Any, **kwargs: Any) -> Any:
            return inner.on_handoff(*args, **kwargs)

    return ScopingHooks()


def _mcp_server(agent: Any, tool: Any) -> McpServer | None:
    """The MCP server ``tool`` comes from (``None``: a local tool), as far as it is known."""
    from agents.tool import get_function_tool_origin

    origin = get_function_tool_origin(tool)
    if getattr(getattr(origin, "type", None), "value", None) != "mcp":
        return None
    label = getattr(origin, "mcp_server_name", None)
    servers = getattr(agent, "mcp_servers", None) or ()
    labelled = [s for s in servers if getattr(s, "name", None) == label]
    if len(labelled) > 1:  # servers named alike (the SDK's "stdio: npx" for two npm servers):
        return McpServer()  # not guessed; the session the call goes on names its server
    server = labelled[0] if labelled else None
    session = getattr(server, "session", None)
    info = getattr(session, "server_info", None)
    session_id = getattr(server, "_get_session_id", None)  # streamable HTTP only
    return McpServer(
        name=getattr(info, "name", None) or label,
        session_id=_text(session_id() if callable(session_id) else None),
        protocol_version=_text(getattr(session, "protocol_version", None)),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _install_nesting() -> None:
    """Make the SDK's default agent runner one that streams, through this adapter, each
    ``Runner.run`` made in a tool body of a run streamed here (see the module docstring)."""
    try:
        from agents.run import AgentRunner, get_default_agent_runner, set_default_agent_runner
    except ImportError:  # an SDK without the seam: nested runs stay unrecorded
        return
    current = get_default_agent_runner()
    if not getattr(current, "_agent_contract_nesting", False):
        set_default_agent_runner(_nesting_runner(AgentRunner, current))
    _install_failure_noting()
    _install_rejection_noting()
    _install_guardrail_noting()
    _install_retry_noting()


def _install_failure_noting() -> None:
    """Note each tool failure a ``failure_error_function`` turns into text (see the module
    docstring): the SDK's ``maybe_invoke_function_tool_failure_error_function``, which every
    function tool's invoker calls with the exception and the call's ``ToolContext``, wrapped
    once; it returns what the SDK's returns. Outside a tool body of a run streamed here it
    only passes the call on. The SDK's tool runner imports it by name for a tool whose body
    was cancelled (``CancelledError``, which no formatter hears): its name there is wrapped
    too, so a cancelled call is a failure of that class like any other."""
    import importlib

    for path in ("agents.tool", "agents.run_internal.tool_execution"):
        try:
            module = importlib.import_module(path)
        except ImportError:  # an SDK laid out otherwise: its formatter still hears the rest
            continue
        _note_failures_in(module)


def _note_failures_in(module: Any) -> None:
    """``module``'s name for the SDK's failure handler caller, wrapped (once)."""
    current = getattr(module, "maybe_invoke_function_tool_failure_error_function", None)
    if current is None or getattr(current, "_agent_contract_noting", False):
        return  # an SDK without it (its formatter still sees the default handler's failures)

    async def noting(*args: Any, **kwargs: Any) -> Any:
        result = await current(*args, **kwargs)
        body, error = _IN_TOOL.get(), kwargs.get("error")
        call_id = getattr(kwargs.get("context"), "tool_call_id", None)
        if body is not None and error is not None and call_id is not None:
            if result is not None:
                body.failures.setdefault(str(call_id), error_name(error))
            elif isinstance(error, Exception):  # no handler: the SDK raises it out of the run
                body.raised.setdefault(str(call_id), error)
        return result

    noting._agent_contract_noting = True  # type: ignore[attr-defined]
    module.maybe_invoke_function_tool_failure_error_function = noting


def _install_rejection_noting() -> None:
    """Note each function call whose approval was refused (``needs_approval``, a
    ``RunState.reject``): the SDK answers it with ``function_rejection_item`` (the rejection
    text, its own or the caller's), which no formatter hears when the caller gave the text, so
    every module's name for it is wrapped (once); it returns what the SDK's returns."""
    import importlib

    for path in (
        "agents.run_internal.items",
        "agents.run_internal.turn_resolution",
        "agents.run_internal.tool_execution",
    ):
        try:
            module = importlib.import_module(path)
        except ImportError:  # an SDK laid out otherwise: its formatter still hears most
            continue
        current = getattr(module, "function_rejection_item", None)
        if current is None or getattr(current, "_agent_contract_noting", False):
            continue
        module.function_rejection_item = _noting_rejection(current)  # type: ignore[attr-defined]


def _install_retry_noting() -> None:
    """Note each model request the SDK's retry policy runs again (``ModelSettings.retry``):
    its runner asks ``_evaluate_retry`` by its module's name whether to, with what the request
    raised; wrapped (once), returning the SDK's decision unchanged."""
    try:
        from agents.run_internal import model_retry as module
    except ImportError:  # an SDK without runner-managed retries: nothing to note
        return
    current = getattr(module, "_evaluate_retry", None)
    if current is None or getattr(current, "_agent_contract_noting", False):
        return

    async def noting(*args: Any, **kwargs: Any) -> Any:
        decision = await current(*args, **kwargs)
        retried, error = _RETRIED.get(), kwargs.get("error")
        if retried is not None and isinstance(error, BaseException):
            with suppress(Exception):  # a decision of another shape: nothing noted
                if decision.retry:
                    retried.append(error)
        return decision

    noting._agent_contract_noting = True  # type: ignore[attr-defined]
    module._evaluate_retry = noting


def _install_guardrail_noting() -> None:
    """Note each function call a tool guardrail refused with ``reject_content``: an input
    guardrail's (the tool never runs, no hook hears it) or an output guardrail's (the tool's
    output is replaced). The SDK's tool runner calls ``_execute_tool_input_guardrails`` and
    ``_execute_tool_output_guardrails`` by their module's names: each wrapped (once), returning
    what the SDK's returns; the call is failed as ``guardrail_rejected``."""
    try:
        from agents.run_internal import tool_execution as module
    except ImportError:  # an SDK laid out otherwise: guardrail refusals stay unmarked
        return
    for name, refused in (
        ("_execute_tool_input_guardrails", lambda result: result is not None),
        ("_execute_tool_output_guardrails", lambda result: getattr(result, "is_rejection", False)),
    ):
        current = getattr(module, name, None)
        if current is not None and not getattr(current, "_agent_contract_noting", False):
            setattr(module, name, _noting_guardrail(current, refused))


def _noting_guardrail(
    current: Callable[..., Any], refused: Callable[[Any], bool]
) -> Callable[..., Any]:
    async def noting(*args: Any, **kwargs: Any) -> Any:
        result = await current(*args, **kwargs)
        rejected, context = _REJECTED.get(), kwargs.get("tool_context")
        call_id = getattr(context, "tool_call_id", None)
        if rejected is not None and call_id is not None and refused(result):
            name = _text(getattr(kwargs.get("func_tool"), "name", None))
            rejected[str(call_id)] = (name, "guardrail_rejected")
        return result

    noting._agent_contract_noting = True  # type: ignore[attr-defined]
    return noting


def _noting_rejection(current: Callable[..., Any]) -> Callable[..., Any]:
    def noting(agent: Any, tool_call: Any, *args: Any, **kwargs: Any) -> Any:
        item = current(agent, tool_call, *args, **kwargs)
        rejected, call_id = _REJECTED.get(), _field(tool_call, "call_id")
        if rejected is not None and call_id is not None:  # (a guardrail's noted first)
            refusal = (_text(_field(tool_call, "name")), "approval_rejected")
            rejected.setdefault(str(call_id), refusal)
        return item

    noting._agent_contract_noting = True  # type: ignore[attr-defined]
    return noting


def _raised_by_tool(exc: BaseException, running: dict[str, str]) -> ToolResult | None:
    """The failed result of the call whose tool raised ``exc``: a function tool without a
    failure handler (``failure_error_function=None``) makes the SDK end the run with its own
    ``UserError("Error running tool <name>: ...")`` raised from the tool's exception. The call
    is the one running tool of that name, its ``error_type`` the tool's own exception's class;
    ``None`` when ``exc`` is not that, or the call is not known for sure."""
    cause = exc.__cause__
    if cause is None or not str(exc).startswith("Error running tool "):
        return None
    calls = [
        cid for cid, name in running.items() if str(exc).startswith(f"Error running tool {name}: ")
    ]
    if len(calls) != 1:
        return None
    return failed_result(calls[0], str(exc), running.pop(calls[0]), error_name(cause))


def _nesting_runner(base: type, inner: Any) -> Any:
    """An ``AgentRunner`` passing every call to ``inner``, except a ``Runner.run`` in a tool
    body that a tracer claims: that run is streamed through this adapter into the tracer; a
    ``Runner.run_streamed`` there is read as the body streams it, into a nested run too."""

    async def run(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        body = _IN_TOOL.get()
        wrap = nested_run(getattr(starting_agent, "name", None)) if body is not None else None
        if body is None or wrap is None:
            return await inner.run(starting_agent, input, **kwargs)
        token = _IN_TOOL.set(None)  # the nested run's own tools set theirs in their tasks
        try:
            kept: list[Any] = []
            async for _ in wrap(openai_agents_events(starting_agent, input, on_result=kept.append,
                                                     **kwargs)):  # fmt: skip
                pass
            return kept[0]
        except Exception as exc:
            if body.agent_tool:  # as_tool lets it out of the body: the tool call failed
                body.failures[body.call_id] = error_name(exc)
            raise
        finally:
            _IN_TOOL.reset(token)

    def run_sync(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        # in a tool body (a sync tool's thread, or one it hands the run to): the SDK's own
        # run_sync runs ``self.run`` on that thread's loop, so the run nests as ``run`` does
        name = getattr(starting_agent, "name", None)
        if _IN_TOOL.get() is None or nested_run(name) is None:
            return inner.run_sync(starting_agent, input, **kwargs)
        return base.run_sync(self, starting_agent, input, **kwargs)  # type: ignore[attr-defined]

    def run_streamed(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        name = getattr(starting_agent, "name", None)
        if _IN_TOOL.get() is None or nested_run(name) is None:
            return inner.run_streamed(starting_agent, input, **kwargs)
        reading = _Reading(starting_agent)  # a tool body streams an agent itself: nested too
        token = _IN_TOOL.set(None)  # the run's task: its own tools set theirs
        try:
            result = reading.started(inner.run_streamed, starting_agent, input, kwargs)
        finally:
            _IN_TOOL.reset(token)
        events = result.stream_events

        def stream_events() -> AsyncIterator[Any]:
            return through(name, events(), reading.feed)

        result.stream_events = stream_events
        return result

    methods = {"run": run, "run_sync": run_sync, "run_streamed": run_streamed,
               "_agent_contract_nesting": True, "inner": inner}  # fmt: skip
    return new_class("NestingRunner", (base,), exec_body=lambda ns: ns.update(methods))()


def _start(agent: Any, request: tuple[Any, Any, Any], config: Any = None) -> LLMCallStart:
    """The call ``agent`` makes in a run of ``config`` (its ``RunConfig``); ``request`` is what
    ``on_llm_start`` said it sends (its ``system_prompt`` and ``input_items``), read only now,
    once."""
    _, instructions, items = request
    model, settings = _resolved(agent, config)
    name = model if isinstance(model, str) else getattr(model, "model", None)
    params = {k: v for k, v in settings.items() if v is not None}
    name, params = name if isinstance(name, str) else None, {**params, "stream": True}
    if getattr(agent, "output_type", None) not in (None, str):  # the SDK asks for its schema
        params["output_type"] = "json"
    client = _client(model)
    provider = OPENAI if client is None else openai_client_provider(client)
    if items is None:
        start = LLMCallStart(model=name, provider=provider, params=params)
    else:
        items = items if isinstance(items, str) else tuple(items)
        start = call_start(name, provider, params, responses_messages, instructions, items)
    return at_endpoint(start, base_url_of(client))


def _client(model: Any) -> Any:
    """The OpenAI SDK client ``model`` calls (its provider, Azure OpenAI for the SDK's Azure
    clients, and its server, the client's base URL): a model object's own client, or the
    SDK's default one for a model given by name; None when neither is known."""
    try:
        client = None if isinstance(model, str) else getattr(model, "_client", None)
        if client is None:
            shared = sys.modules.get("agents.models._openai_shared")
            client = shared.get_default_openai_client() if shared is not None else None
    except Exception:  # a model or an SDK revision that answers otherwise: the default
        client = None
    return client


def _resolved(agent: Any, config: Any) -> tuple[Any, dict[str, Any]]:
    """The model ``agent``'s call goes to and its settings, as the SDK resolves them for a
    run of ``config``: ``RunConfig.model`` (a ``Model`` or a name) overrides every agent's, no
    model at all is the SDK's default; ``RunConfig.model_settings``' non-null values override
    the agent's (the SDK's own ``get_model_settings`` where it has it)."""
    model = getattr(config, "model", None)
    if model is None:
        model = agent.model
    if model is None:
        from agents.models import get_default_model

        model = get_default_model()
    try:
        from agents.run_internal.turn_preparation import get_model_settings

        settings = get_model_settings(agent, config)
    except Exception:  # an SDK without it, or no config: the settings merged as documented
        settings = agent.model_settings
        theirs = getattr(config, "model_settings", None)
        if theirs is not None:
            settings = settings.resolve(theirs) if settings is not None else theirs
    return model, settings.to_json_dict() if settings is not None else {}


def _noting_failures(run: dict[str, Any], failures: dict[str, str]) -> dict[str, Any]:
    """``run`` with a ``RunConfig`` whose ``tool_error_formatter`` notes each failed call.

    The SDK calls that formatter for a tool exception its default failure handler turns into
    text, and for a call to a tool the agent does not have; it returns what the caller's own
    formatter returns (``None``: the SDK's default message), so the model sees the same text.
    """
    from agents import RunConfig

    config = run.get("run_config")
    if config is None:
        config = RunConfig()
    elif isinstance(config, dict):
        config = RunConfig(**config)
    theirs = config.tool_error_formatter
    # A nested run inherits the outer run's config, and so its formatter: note in this run only.
    theirs = getattr(theirs, "_agent_contract_theirs", theirs)

    def formatter(args: Any) -> Any:
        if args.kind == "tool_exception":
            failures[str(args.call_id)] = error_name(args.error) if args.error else "tool_exception"
        elif args.kind == "tool_not_found":
            failures[str(args.call_id)] = "tool_not_found"
        return theirs(args) if theirs is not None else None

    formatter._agent_contract_theirs = theirs  # type: ignore[attr-defined]
    return {**run, "run_config": dataclasses.replace(config, tool_error_formatter=formatter)}


def _result(item: Any, failures: dict[str, str], rejected: _Refusals) -> ToolResult:
    raw = item.raw_item
    output = getattr(item, "output", None)
    call_id = str(_field(raw, "call_id") or "")
    content = output if output is not None else _field(raw, "output")
    return _told(call_id, content, failures, rejected)


def _told(call_id: str, content: Any, failures: dict[str, str], rejected: _Refusals) -> ToolResult:
    """Call ``call_id``'s result, failed as its refusal or noted failure says."""
    if call_id in rejected:  # refused: the SDK's own outcome (a resumed run's call was asked
        failures.pop(call_id, None)  # in the run before: named here)
        name, outcome = rejected.pop(call_id)
        return failed_result(call_id, content, name, outcome)
    failure = failures.pop(call_id, None)
    if failure is not None:
        return failed_result(call_id, content, None, failure)
    return ToolResult(tool_call_id=call_id, content=content)


def _field(raw: Any, key: str) -> Any:
    """A field of a raw item, which the SDK gives as a dict or as a model."""
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key, None)

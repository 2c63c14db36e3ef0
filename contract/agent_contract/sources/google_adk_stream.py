"""Google ADK: ``Runner.run_async`` events as contract events.

ADK streams a run as ``Event`` objects (an ``LlmResponse`` plus ``author`` and ``partial``),
read by field (ADK is imported only to build a runner or a message when the caller passes an
agent or a string):

* A model's event (``content.role == "model"``) opens an LLM call when none is open
  (``LLMCallStart`` with the request's model name and messages). ADK streams no call-start
  event: the adapter's plugin hears each request in its ``before_model_callback`` (the
  ``LlmRequest``: its ``model``, and its ``contents`` and system instruction become
  ``LLMCallStart.messages``), but the event stream reaches the adapter only with the model's
  first partial (with ``StreamingMode.SSE``, the default here) or, unstreamed, its response,
  so the call opens there. The model is the one the request names (an agent of a
  ``Workflow`` graph is not found by name from the root), else the authoring agent's. A
  request that raises before any output (a 429) still has its call: ADK reports the failure
  as an event with its ``error_code`` (below) before the exception comes out of the run.
  Partial events' text parts are ``TextDelta``, ``thought`` parts ``ReasoningDelta``.
* The model's final event (not ``partial``) closes the call: its ``function_call`` parts are
  ``ToolCall``\\ s (the model's ids, or the ``adk-`` ids ADK gives calls without one), its
  ``usage_metadata`` a ``Usage`` and its ``model_version`` and ``finish_reason`` the
  ``LLMCallEnd``. Gemini counts thinking apart from the candidates: output tokens are
  ``candidates_token_count + thoughts_token_count`` (reasoning included, as OpenAI counts
  it), reasoning tokens ``thoughts_token_count``, cache reads ``cached_content_token_count``
  (already inside the prompt count). ADK's OpenAI models count the thoughts inside the
  candidates (the total says so: prompt and candidates alone make it); output tokens are then
  the candidates. Unstreamed, its text parts become the deltas.
* An event's ``error_code`` (a model that refused or failed) is an ``Error`` on the call,
  which ends with the next event or the end of the stream: when ADK raises the failure after
  reporting it (a 429), the call is still open, so the run's exception lands on the chat
  span that failed, not on its step. ADK reports any failure leaving an agent's node that
  way, a tool's exception too: an error event while no model request is waiting (the plugin
  notes each request, below) is no model's. One naming the class of a tool failure the
  plugin heard is that failure on its way out of the run (nothing is yielded: the tool's
  scope was told the exception, and the run's end marks the call with it); another is an
  ``Error`` of the run.
* ``function_response`` parts are ``ToolResult``\\ s by id. A call whose tool raised (the
  plugin's ``on_tool_error_callback`` hears it first, before the agent's own) is an error
  result of that exception's class, whatever the agent's ``on_tool_error_callback`` made of
  it (a ``ValueError`` of ADK's for a name the agent lacks is ``tool_not_found``). A
  response holding an ``error`` and no ``result``, or a ``status`` of ``"error"`` (the shape
  ADK's documentation gives tools reporting their own failure), is an error result too:
  ``ValidationError`` and ``tool_not_found`` for ADK's own texts of arguments failing
  validation or missing and of an unknown name, else ``tool_error``. A result the tool's own
  ADK hook reads as an error (``_detect_error_in_response``: an ``McpTool``'s result with
  ``isError``, ``MCP_TOOL_ERROR``) is an error result of that type (the plugin's
  ``after_tool_callback`` asks the hook). The next model call starts a new step.
* A model call of another agent than the one before (a ``transfer_to_agent``, a workflow's
  sub-agent) yields a ``PhaseMarker`` named after it (none for the run's own agent at the
  start, as a lone agent has none); where agents take turns (a ``SequentialAgent``, a
  ``LoopAgent``, a transfer: no tool call unanswered) it starts a step of its own, as does
  an agent's call after its call before answered (a ``LoopAgent``'s next round of it). A
  ``ParallelAgent``'s agents stream side by side, their events interleaved: while one agent's
  model call is open the others' events are held, in order, and read once it ends, so each
  call is told whole (its text, tokens and request); agents side by side share the step.
  When one agent's model raises and the run raises it (the plugin's
  ``on_model_error_callback`` notes whose model raised which exception), that agent's call
  opens if another's streams or none does (its request, its held text): the run's exception
  lands on it, the sibling's call cut short, not failed.
* Code an agent's code executor runs on the agent's side (``UnsafeLocalCodeExecutor``, a
  container's, Vertex's; not ``BuiltInCodeExecutor``, whose code the model's own tool runs in
  the request, its result in the same response): ADK cuts the model's final response at its
  first code block, rebuilt without the model's usage (the call's usage is then the whole
  response's the plugin heard), runs it, and streams its result as content of role
  ``model`` that no model made. Each ``executable_code`` part of such a final response is a
  ``ToolCall`` named ``code_execution`` (its ``code`` and ``language`` the arguments; the id
  ``code-{event id}-{index}``), and the result event its ``ToolResult`` (failed,
  ``tool_error``, unless its outcome is ``OUTCOME_OK``), no call; the model asked again is
  the next step. The code Gemini's own tool ran (``BuiltInCodeExecutor``: its
  ``executable_code`` and ``code_execution_result`` in one response), and the tools Gemini
  ran on its side (``tool_call`` and ``tool_response`` parts: a search, URL context; a
  Google Search it grounded its answer in, told only by the event's ``grounding_metadata``),
  end that call with a ``ServerToolCallsEnd``: ``server_tool_call`` parts of its output, no
  tool call.
* A call a ``before_tool_callback`` answered in ADK's error shape before its tool ran (a
  guard refusing it: the plugin wraps each tool's ``run_async`` once to note the calls it
  runs) is a failed result ``guardrail_rejected``, the text the model is told unchanged; any
  other answer of a callback, before or after the tool, is the call's result, failed only in
  ADK's error shapes (``tool_error``). A callback before the tool raising (the agent's,
  another plugin's) ends the run with no tool run and no answer: when the run raises an
  exception no model raised, each call of its session whose scope is open and whose tool
  never ran fails with it; a call whose tool runs is cut short by the run's end.
* Content shaped as a model's answer that no model gave (no request waiting, no call open:
  a ``before_agent_callback`` answering for the agent, which is skipped, or an
  ``after_agent_callback`` replacing its answer) is no call: the last such text with no
  model call after it is the run's answer (a ``MessageFinal`` at the end). A
  ``before_model_callback``'s response stays a call, as ADK's own tracing keeps it (the
  plugin heard the request before the agent's callback answered it). A streamed call whose
  final response says other text than its partials did (an ``after_model_callback``
  replacing it: a redaction, a rewrite) keeps what the model streamed on its call, and the
  final text is the run's answer when no model spoke after it, as the agent's answer. So is
  the response of a tool that skips the summary (``tool_context.actions.skip_summarization``:
  ADK asks the model nothing more, that response is the agent's final one): a lone tool's
  value (the ``result`` ADK wraps a value that is no dict in), its text as it is, else as
  JSON. ``exit_loop``'s, which is nothing (the loop ends on the tool's call, no model
  answering after it), leaves the answer to the last final response with text any agent gave
  (a model's, or a callback's for it): the loop's last draft, as ADK's own final responses
  show it, not the call of ``exit_loop``. The final text of an agent given an
  ``output_schema`` is JSON ADK validates as that model (and keeps under ``output_key``): the
  run's answer, when no model spoke after it, is that value (a ``StructuredFinal``, dumped as
  ADK keeps it), the call keeping the text; text the schema refuses makes ADK raise.
* A callback raising after the model answered whole (an ``after_model_callback``): ADK never
  streams that response, and reports the exception as an error event of the agent before it
  comes out of the run. The plugin's ``after_model_callback`` (the first to hear it) notes each
  whole response until its event shows; such an error event finds its agent's response
  unshown: the call ends answered with it (its text when unstreamed, its usage), and the
  error is the run's, so the exception fails the step, not the call.
* A run ADK pauses is a run ended ``interrupted``: a call of a tool that needs confirmation
  (``require_confirmation``, or its body's ``tool_context.request_confirmation``) makes ADK
  add an ``adk_request_confirmation`` call of its own (no model's: no chat span, no tool
  span), and a long-running tool (``LongRunningFunctionTool``) returning nothing leaves its
  call unanswered. Each such id (ADK's ``long_running_tool_ids``) still unanswered when the
  stream ends is an ``InterruptFinal`` (``interrupt_id`` the id the client answers to resume,
  ``payload`` ADK's arguments: the original call and the hint). The confirmation gate's own
  answer (``{"error": "This tool call requires confirmation..."}``) is no result: the call
  waits, cut short (``agent_otel.incomplete``), not failed. Resumed with a rejection, ADK's
  ``{"error": "This tool call is rejected."}`` is a failed result ``approval_rejected`` (the
  Agents SDK's name for that outcome).

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through ADK's own
seam: a plugin (first in the runner's plugins, added once per runner; outside a traced run it
does nothing; its ``before_model_callback`` notes the requests above, by session) whose
``before_tool_callback`` enters the scope, with the call's
``function_call_id``, and whose ``after_tool_callback`` / ``on_tool_error_callback`` leave it
(ADK tells the latter a cancelled call too, then drops its result: a body that raised
``CancelledError`` itself fails its call, one whose task was cancelled is cut short).
ADK awaits them in the call's own task, around the tool (a sync tool's thread copies that
context), so what the body opens nests under its span. An ``McpToolset``'s tool (an
``McpTool``) is scoped with its server (``McpServer``: the name the server gives itself and
the protocol version, from a session of the tool's session pool).

An ``AgentTool`` runs its agent on a runner of its own inside the call, which inherits the
plugins: that runner's run is a nested run (``agent_contract.scope.nested_run``, opened at its
``before_run_callback`` inside the call's scope) fed each event it yields
(``on_event_callback``, read as any ADK run) and ended at ``after_run_callback``, or with the
call. The nested agent's own tools are scoped as the run's are: their calls are that run's
(the tracer finds a call among the runs nested in the one the context carries), so an
``AgentTool`` inside it nests again, at any depth. A runner a tool body makes and runs itself
(``InMemoryRunner(agent=expert).run_async(...)``) inherits nothing: ``Runner.run_async``, set
once on the class, puts the plugin first on it when it runs in a tool body of a run read here,
so its run nests the same way; anywhere else ``run_async`` is ADK's, untouched.

``agent`` is a ``Runner``, an agent or a workflow node that is no agent (ADK 2's
``Workflow`` graph: run by a fresh ``InMemoryRunner``, ``node=`` for the graph); with no
``session_id`` a session is created. ``run`` goes to ``run_async`` (``run_config``...).
``sink`` receives every ADK event untouched. Closing the stream early closes ADK's generator.
Needs ``google-adk`` (extra ``google-adk``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

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
from agent_contract.scope import McpServer, framework_started
from agent_contract.sources._arguments import tool_call
from agent_contract.sources._endpoint import Endpoint, at_endpoint, held_endpoint, sdk_default
from agent_contract.sources._failure import error_name, failed_result
from agent_contract.sources._history import call_start, google_adk_messages
from agent_contract.sources._mcp import server_of
from agent_contract.sources._nested import Pushed
from agent_contract.sources._raw_usage import counted, is_count
from agent_contract.sources._require import expect, require
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._server_tools import (
    CODE_EXECUTION,
    ServerToolCallsEnd,
    gemini_grounding,
    gemini_server_calls,
)
from agent_contract.sources._stream import Sink, read_events, told
from agent_contract.sources._structured import structured_final

__all__ = ["google_adk_events"]


_HINT = "Make one with google.adk.agents.LlmAgent(name=..., model=...)."


async def google_adk_events(
    agent: Any,
    new_message: Any,
    *,
    user_id: str = "user",
    session_id: str | None = None,
    sink: Sink | None = None,
    **run: Any,
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` (a ``Runner`` or an agent) on ``new_message``, yielding contract events."""
    framework_started(__name__, session_id)  # before the framework makes any request
    require("google.adk.runners", "InMemoryRunner")
    node = _node(agent)  # a workflow graph (ADK 2's ``Workflow``), which has no run_async
    if not node:
        expect(agent, "google_adk_events", "a google.adk Runner, agent or workflow node",
               "run_async", hint=_HINT)  # fmt: skip
    runner = agent if hasattr(agent, "run_async") and hasattr(agent, "session_service") else None
    if runner is None:
        from google.adk.runners import InMemoryRunner  # type: ignore[import-untyped,unused-ignore]

        if node:
            runner = InMemoryRunner(node=agent, app_name=str(agent.name))
        else:
            runner = InMemoryRunner(agent=agent, app_name=str(agent.name))
    requests, failures, watched, raised, whole, unrun = _add_plugin(runner)
    if session_id is None:
        session = await runner.session_service.create_session(
            app_name=runner.app_name, user_id=user_id
        )
        session_id = session.id
        framework_started(__name__, session_id)  # its conversation too, before any request
    if isinstance(new_message, str):
        from google.genai import types  # type: ignore[import-untyped,unused-ignore]

        new_message = types.Content(role="user", parts=[types.Part(text=new_message)])
    if "run_config" not in run:
        from google.adk.agents.run_config import (  # type: ignore[import-untyped,attr-defined,unused-ignore]
            RunConfig,
            StreamingMode,
        )

        run["run_config"] = RunConfig(streaming_mode=StreamingMode.SSE)
    stream = runner.run_async(
        user_id=user_id, session_id=session_id, new_message=new_message, **run
    )
    state = _State(runner.agent, requests.setdefault(session_id, []), failures, watched=watched,
                   whole=whole.setdefault(session_id, []))  # fmt: skip
    models = raised.setdefault(session_id, [])
    try:
        try:
            async for out in read_events(stream, state.feed, sink):  # an odd event skipped
                yield out
        except Exception as error:  # told on the call of the model that raised it, then raised
            model_of = next((a for e, a in models if e is error), None)
            if model_of is None:  # no model's: a tool callback's, before its tool ran (module doc)
                unrun(session_id, error)
            for out in state.raised(model_of):
                yield out
            raise
        for last in state.end():
            yield last
    finally:
        requests.pop(session_id, None)
        raised.pop(session_id, None)
        whole.pop(session_id, None)
        await stream.aclose()


_PLUGIN = "agent_contract_tool_scope"


def _asked(config: Any) -> dict[str, Any]:
    """The output format a request's ``GenerateContentConfig`` asks Gemini for, as the call's
    ``output_type`` param: ``json`` for a JSON answer (``response_mime_type``
    ``application/json``, which an agent's ``output_schema`` sets with its schema)."""
    mime = getattr(config, "response_mime_type", None)
    schema = getattr(config, "response_schema", None) or getattr(
        config, "response_json_schema", None
    )
    if mime == "application/json" or (schema is not None and mime is None):
        return {"output_type": "json"}
    return {"output_type": "text"} if mime == "text/plain" else {}


Request = tuple[Any, Any, Any, tuple[Any, ...], dict[str, Any]]
"""A model request: the agent making it, the model it names, its system instruction, a copy
of its contents (``google_adk_messages``) and the params its config tells (``_asked``)."""
Requests = dict[str, list[Request]]
"""The model requests a runner's plugin heard and no event has shown yet, by session id."""
Raised = dict[str, list[tuple[BaseException, Any]]]
"""The exceptions models raised (``on_model_error_callback``) and the agent of each, by
session id: the run's exception names the call that failed (``_State.raised``)."""
Whole = dict[str, list[tuple[Any, Any]]]
"""The models' whole responses (``after_model_callback``, before the agent's) no event has
shown yet, with the agent of each, by session id: a callback raising after it (module doc)."""


Unrun = Callable[[str, BaseException], None]
"""Fails the calls of a session whose scope is open and whose tool never ran with the run's
exception (``_add_plugin``)."""


def _add_plugin(runner: Any) -> tuple[Requests, dict[str, str], bool, Raised, Whole, Unrun]:
    """Put the plugin noting model requests and scoping each tool call (module doc) first in
    ``runner``'s plugins; its notes of requests, by session, and of the exception classes of
    failed tool calls, by call id; whether it is there (a runner with no plugins has none);
    its notes of the models' exceptions and of their whole responses, by session; what fails
    the calls a callback's exception ended before their tools ran."""
    plugins = getattr(getattr(runner, "plugin_manager", None), "plugins", None)
    if not isinstance(plugins, list):
        return {}, {}, False, {}, {}, _unrun_none
    for plugin in plugins:
        if plugin.name == _PLUGIN:
            return (plugin.requests, plugin.failures, True, plugin.raised, plugin.whole,
                    plugin.unrun)  # fmt: skip
    _plug_started_runners()
    from google.adk.plugins.base_plugin import BasePlugin  # type: ignore[import-untyped,unused-ignore]
    from google.adk.tools.base_tool import BaseTool  # type: ignore[import-untyped,unused-ignore]

    scopes = OpenScopes()
    nested: dict[Any, tuple[Pushed, _State, str, Any]] = {}  # invocation id -> its nested run
    entered: dict[int, Any] = {}  # each open scope's key -> its call's session id

    def unrun(session: str, error: BaseException) -> None:
        """A callback before the tool (another plugin's, the agent's) raised ``error``, which
        ends the run: ADK never runs the tool nor answers the call, so the call fails with
        it, as a tool raising it would (a call whose tool runs is cut short by the run's
        end)."""
        for key, of in list(entered.items()):
            if of == session and key not in _RAN:
                del entered[key]
                scopes.exit(key, error)

    class ToolScopes(BasePlugin):  # type: ignore[misc,unused-ignore]
        requests: Requests
        failures: dict[str, str]
        raised: Raised
        whole: Whole
        unrun: Unrun

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            session = getattr(callback_context.session, "id", None)
            noted = self.requests.get(session) if isinstance(session, str) else None
            if noted is not None:  # a traced run's session
                system = getattr(llm_request.config, "system_instruction", None)
                agent = getattr(callback_context, "agent_name", None)
                model = getattr(llm_request, "model", None)
                contents = tuple(llm_request.contents or ())
                noted.append((agent, model, system, contents, _asked(llm_request.config)))

        async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
            if getattr(llm_response, "partial", False):
                return
            session = getattr(callback_context.session, "id", None)
            noted = self.whole.get(session) if isinstance(session, str) else None
            if noted is not None:  # a traced run's session: the response as the model gave it
                noted.append((getattr(callback_context, "agent_name", None), llm_response))

        async def on_model_error_callback(
            self, *, callback_context: Any, llm_request: Any, error: Any
        ) -> None:
            session = getattr(callback_context.session, "id", None)
            noted = self.raised.get(session) if isinstance(session, str) else None
            if noted is not None:  # a traced run's session: whose model raised it
                noted.append((error, getattr(callback_context, "agent_name", None)))

        async def before_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any
        ) -> None:
            call_id = getattr(tool_context, "function_call_id", None)
            scopes.enter(id(tool_context), call_id, getattr(tool, "name", None),
                         mcp=_mcp_server(tool))  # fmt: skip
            entered[id(tool_context)] = getattr(getattr(tool_context, "session", None), "id", None)
            _watch(tool)
            _CALL.set(call_id if isinstance(call_id, str) else "")  # a runner in it nests

        async def after_tool_callback(
            self, *, tool: Any = None, tool_context: Any, result: Any = None, **kwargs: Any
        ) -> None:
            call_id = getattr(tool_context, "function_call_id", None)
            kind = _detected(tool, result)
            if not kind and _answered_before(tool, tool_context, result):
                kind = "guardrail_rejected"  # a before_tool_callback refused it (module doc)
            _RAN.discard(id(tool_context))
            if kind is not None and isinstance(call_id, str):  # (an exception heard first wins)
                self.failures.setdefault(call_id, kind)  # its result names it (_result)
            await _end_nested(nested, tool_context, None)
            entered.pop(id(tool_context), None)
            scopes.exit(id(tool_context))

        async def on_tool_error_callback(
            self, *, tool: Any = None, tool_context: Any, error: Any = None, **kwargs: Any
        ) -> None:
            call_id = getattr(tool_context, "function_call_id", None)
            _RAN.discard(id(tool_context))
            failed = error if isinstance(error, Exception) else None  # not a cancellation
            if isinstance(call_id, str) and failed is not None:
                # its result names it (_result); ADK's own lookup failure: a bare BaseTool
                unknown = type(tool) is BaseTool and isinstance(failed, ValueError)
                self.failures[call_id] = "tool_not_found" if unknown else error_name(failed)
            await _end_nested(nested, tool_context, error)
            # a cancellation too (ADK tells it here, then drops the call): the scope tells the
            # body's own CancelledError (a failure) from a cancel of its task (cut short)
            entered.pop(id(tool_context), None)
            scopes.exit(id(tool_context), error if isinstance(error, BaseException) else None)

        async def before_run_callback(self, *, invocation_context: Any) -> None:
            session = getattr(invocation_context.session, "id", None)
            call_id = _CALL.get()
            if call_id is None or not isinstance(session, str) or session in self.requests:
                return  # not a runner inside a tool of a run read here (or that run itself)
            run = Pushed.start(getattr(invocation_context.agent, "name", None))
            if run is not None:
                requests = self.requests.setdefault(session, [])
                state = _State(invocation_context.agent, requests, self.failures,
                               whole=self.whole.setdefault(session, []))  # fmt: skip
                nested[invocation_context.invocation_id] = (run, state, call_id, session)

        async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
            found = nested.get(invocation_context.invocation_id)
            if found is not None:  # an odd event skipped and told, as ``read_events`` does
                await found[0].push(told(found[1].feed, event))

        async def after_run_callback(self, *, invocation_context: Any) -> None:
            found = nested.pop(invocation_context.invocation_id, None)
            if found is not None:
                self.requests.pop(found[3], None)
                self.whole.pop(found[3], None)
                await found[0].push(told(found[1].end))
                await found[0].end()

    plugin = ToolScopes(name=_PLUGIN)
    plugin.requests, plugin.failures, plugin.raised, plugin.whole = {}, {}, {}, {}
    plugin.unrun = unrun
    plugins.insert(0, plugin)
    return plugin.requests, plugin.failures, True, plugin.raised, plugin.whole, unrun


def _unrun_none(session: str, error: BaseException) -> None:
    """A runner without plugins: no call was scoped."""


_CALL: ContextVar[str | None] = ContextVar("agent_contract_google_adk_call", default=None)
"""The id of the tool call whose body runs (set in its task by the plugin)."""


def _plug_started_runners() -> None:
    """Make ``Runner.run_async`` put the plugin on a runner a tool body makes and runs itself
    (module doc), so its run nests as an ``AgentTool``'s does: only in a tool body of a run
    read here (``_CALL``); anywhere else ``run_async`` is ADK's, untouched. Set once, on the
    class."""
    Runner = require("google.adk.runners", "Runner")
    original = Runner.run_async
    if getattr(original, "_agent_contract_plugging", False):
        return

    @functools.wraps(original)
    def run_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _CALL.get() is not None:
            _add_plugin(self)  # once per runner; it does nothing outside a traced run
        return original(self, *args, **kwargs)

    run_async._agent_contract_plugging = True  # type: ignore[attr-defined]
    Runner.run_async = run_async


def _invocation(tool_context: Any) -> Any:
    return getattr(getattr(tool_context, "_invocation_context", None), "invocation_id", None)


async def _end_nested(nested: dict[Any, Any], tool_context: Any, error: Any) -> None:
    """A tool call ended: the nested runs it started and that are still open end with it."""
    call_id = getattr(tool_context, "function_call_id", None)
    for invocation, (run, _, parent, _) in list(nested.items()):
        if parent == call_id:
            del nested[invocation]
            await run.end(error if isinstance(error, BaseException) else None)


class _State:
    __slots__ = ("answered", "asked", "called", "coding", "failed", "failures", "held", "last",
                 "live", "open", "paused", "phase", "requests", "root", "said", "step",
                 "streamed", "text", "tools_ran", "watched", "whole")  # fmt: skip

    def __init__(
        self,
        root: Any,
        requests: list[Request],
        failures: dict[str, str],
        *,
        watched: bool = True,
        whole: list[tuple[Any, Any]] | None = None,
    ) -> None:
        self.root = root
        self.requests = requests
        self.whole = [] if whole is None else whole  # the responses no event showed (Whole)
        self.failures = failures
        self.watched = watched  # the plugin notes the requests (else any error is a model's)
        name = getattr(root, "name", None)
        self.phase: str | None = name if isinstance(name, str) else None  # whose calls now
        self.live: str | None = None  # the agent whose model call is open
        self.held: list[Any] = []  # other agents' events meanwhile, in order
        self.asked: set[str] = set()  # the ids of the tool calls told, not answered yet
        self.open = self.streamed = self.tools_ran = self.called = False
        self.answered = False  # the last call answered: its agent's next call is a new turn
        self.step = 0
        self.failed: LLMCallEnd | None = None  # the end of a failed call, held (module doc)
        self.paused: dict[str, Any] = {}  # ids ADK waits on (module doc) -> what they carry
        # the answer no model call told, none since: an agent callback's, a callback's
        # replacement, a tool's that skips the summary (module doc)
        self.said: MessageFinal | StructuredFinal | None = None
        self.last: str | None = None  # the text of the last final response with text
        self.text = ""  # the text the open call's partials streamed
        self.coding: list[str] = []  # the code runs told, no result yet (module doc)

    def end(self) -> list[AgentEvent | StreamEvent]:
        """The stream ended: the held end, then a pause for each id still unanswered."""
        out: list[AgentEvent | StreamEvent] = [*self.finish(), *self.release()]
        out += [InterruptFinal(interrupt_id=key, payload=payload, reason=_reason(payload))
                for key, payload in self.paused.items()]  # fmt: skip
        if self.said is not None and not self.paused:  # no model answered last (module doc)
            out.append(self.said)
        self.paused.clear()
        return out

    def raised(self, agent: Any) -> list[AgentEvent]:
        """The run raised the exception ``agent``'s model raised (the plugin heard it), while
        another agent's call streams (a ``ParallelAgent``'s branches side by side) or none
        does: that agent's call opens (its request, its held text), the newest call, where
        the run's exception lands; the other agent's call stays open, cut short by the run's
        end. The others' held events are cut short with their branches. A call that read
        ADK's error event for it already holds the failure (``failed``): nothing to tell."""
        if not isinstance(agent, str) or self.failed or (self.open and agent == self.live):
            return []
        out: list[AgentEvent] = []
        mine = [event for event in self.held if event.author == agent]
        self.held.clear()
        self.open = False  # (the call open stays open: the run's end cuts it short)
        self._open(out, agent, held=True)
        for event in mine:
            self._read(out, event, held=True)
        return out

    def finish(self) -> list[AgentEvent]:
        """The held end of a failed call, once the run goes on or ends without raising."""
        held, self.failed = self.failed, None
        return [held] if held is not None else []

    def release(self) -> list[AgentEvent]:
        """The events held while a call streamed that may be told now, each agent's in order,
        until none may (module doc)."""
        out: list[AgentEvent] = []
        self._release(out)
        return out

    def _release(self, out: list[AgentEvent]) -> None:
        while True:
            ready = next((i for i, e in enumerate(self.held) if self._tells(e.author)), None)
            if ready is None:
                return
            self._read(out, self.held.pop(ready), held=True)

    def _tells(self, author: Any) -> bool:
        """Whether an event of ``author`` may be told now: no call is open, or it is the
        calling agent's, or no agent's."""
        return self.live is None or author == self.live or not author or author == "user"

    def feed(self, event: Any) -> Iterator[AgentEvent]:
        """The events ``event`` completes. Where reading it fails, those it completed before
        (a call's start: the state has that call open) are given first, and the call ends when
        the event was its last, then the failure, so the skip that reads this
        (``read_events``, ``told``) keeps them."""
        out: list[AgentEvent] = self.finish()
        try:
            if not self.held and self._tells(event.author):
                self._read(out, event)
            else:  # another agent's, while one agent's call streams (or after)
                self.held.append(event)
                self._release(out)
        except Exception:
            if self.open and not event.partial and event.author == self.live:
                self.open, self.live = False, None  # its call's last event: the call ends
                out.append(LLMCallEnd())
            yield from out
            raise
        yield from out

    def _read(self, out: list[AgentEvent], event: Any, *, held: bool = False) -> None:
        """Add what ``event`` completes to ``out``."""
        author = event.author
        content = event.content
        parts = (content.parts if content is not None else None) or ()
        role = content.role if content is not None else None
        for key in getattr(event, "long_running_tool_ids", None) or ():
            if isinstance(key, str):
                self.paused.setdefault(key, None)
        results = [p.function_response for p in parts if p.function_response is not None]
        if results:
            self.tools_ran = True
            for response in results:
                key = str(response.id or "")
                self.paused.pop(key, None)
                self.asked.discard(key)
                if _waiting(response):  # the gate's own answer: the call waits (module doc)
                    self.failures.pop(key, None)  # (the error its hook read in that answer)
                else:
                    out.append(_result(response, self.failures))
            if getattr(getattr(event, "actions", None), "skip_summarization", False) is True:
                # the tools answered, else (exit_loop) the last final text (module doc)
                last = MessageFinal(text=self.last) if self.last is not None else None
                self.said = _direct(results) or self.said or last
            return
        ran = [p.code_execution_result for p in parts if p.code_execution_result is not None]
        if ran and len(ran) == len(parts) and role == "model" and event.usage_metadata is None:
            # the code the agent's executor ran: its result, no model's (module doc)
            self.tools_ran = True
            for result in ran:
                if self.coding:
                    out.append(_code_result(self.coding.pop(0), result))
            return
        asks = [p.function_call for p in parts if _asks_confirmation(p.function_call)]
        if asks and len(asks) == len(parts):  # ADK's own call, no model's (module doc)
            for ask in asks:
                self.paused[str(ask.id or "")] = ask.args
            return
        if role is None and event.error_code and (whole := self._unshown(author)) is not None:
            # the model answered whole, a callback raised after it (module doc)
            self._open(out, author, held=held)
            if not self.streamed:
                out += _texts(whole.content.parts if whole.content is not None else ())
            self._close(out, whole, whole.content.parts if whole.content is not None else ())
            out += self._node_failed(event)
            return
        if role is None and event.error_code and not self._model_failed():
            out += self._node_failed(event)
            return
        if _answered(role, event, parts) and not self._model_failed():  # an agent callback's
            self.said = MessageFinal(
                text="".join(p.text for p in parts if p.text and not p.thought)
            )
            self.last = self.said.text or self.last
            return
        if role == "model" or event.usage_metadata is not None or event.error_code:
            self._open(out, author, held=held)
            if event.partial:
                told = _texts(parts)
                self.streamed = True
                self.text += _answer(told)
                out += told
            else:
                final = _texts(parts)
                if not self.streamed:
                    out += final
                heard = self._unshown(author)  # its whole response, shown now
                self._close(out, event, parts, heard)
                answer = _answer(final)
                if self.answered and answer:  # a final response (no call asked, no error)
                    self.last = answer
                if self.streamed and answer and answer != self.text:
                    self.said = MessageFinal(text=answer)  # a callback replaced it (module doc)
                if self.answered and answer:  # an ``output_schema``'s value (module doc)
                    self.said = _schema_answer(_agent(self.root, author), answer) or self.said

    def _unshown(self, author: Any) -> Any:
        """Take the first whole response of ``author``'s model no event showed, if any."""
        found = next((i for i, (agent, _) in enumerate(self.whole) if agent == author), None)
        return self.whole.pop(found)[1] if found is not None else None

    def _model_failed(self) -> bool:
        """Whether an error event with no content is a model's: a call open, or a request
        the plugin heard and no event showed yet (a 429 before any output)."""
        return self.open or bool(self.requests) or not self.watched

    def _node_failed(self, event: Any) -> list[AgentEvent]:
        """An error event no model made (module doc): a tool's failure leaving the run, or an
        ``Error`` of the run's own."""
        code = str(event.error_code)
        for call_id, kind in list(self.failures.items()):
            if kind == code:  # a tool's exception, heard by the plugin, told to its scope
                del self.failures[call_id]
                return []
        return [Error(message=str(event.error_message or code), error_type=code)]

    def _request(self, author: Any) -> Request | None:
        """The request of ``author``'s call, the first it made that no event showed yet (the
        agents of a ``ParallelAgent`` ask side by side); else the first of any."""
        found = next((i for i, r in enumerate(self.requests) if r[0] == author), 0)
        return self.requests.pop(found) if self.requests else None

    def _open(self, out: list[AgentEvent], author: str | None, *, held: bool) -> None:
        if self.open:
            return
        request = self._request(author)
        agent = str(author) if author and author != "user" else self.phase
        # agents taking turns (a sequence, a loop, a transfer) each get steps of their own;
        # agents side by side (held, or with calls unanswered) share the step (module doc)
        turns = (self.called and (agent != self.phase or self.answered) and not held
                 and not self.asked)  # fmt: skip
        if self.tools_ran or turns:
            out.append(StepBoundary(index=self.step))
            self.step, self.tools_ran = self.step + 1, False
        if agent != self.phase:  # another agent's call (a transfer, a workflow's sub-agent)
            out.append(PhaseMarker(name=str(agent)))
            self.phase = agent
        self.live, self.called, self.said, self.answered = agent, True, None, False
        params: dict[str, Any] = {"stream": True}
        start: LLMCallStart
        if request is None:
            start = LLMCallStart(model=_model(self.root, author), params=params)
        else:  # the model the request names (an agent of a graph, which has no find_agent)
            model = request[1] if isinstance(request[1], str) and request[1] else None
            model = model or _model(self.root, author)
            params.update(request[4])
            start = call_start(model, None, params, google_adk_messages, *request[2:4])
        out.append(at_endpoint(start, _server(self.root, author)))
        self.open, self.streamed, self.text = True, False, ""

    def _close(self, out: list[AgentEvent], event: Any, parts: Any, heard: Any = None) -> None:
        """End the open call with its final ``event`` (``parts`` its content's); ``heard``: the
        whole response the plugin heard, whose usage counts when ADK rebuilt the event
        without it (a code executor's cut of it: module doc)."""
        for part in parts:
            call = part.function_call
            if call is not None:
                out += tool_call(call.id, call.name, call.args)
                self.asked.add(str(call.id or ""))
        code = _code_runs(event, parts)
        for i, ran in enumerate(code):
            call_id = f"code-{event.id}-{i}"
            out += tool_call(call_id, CODE_EXECUTION, ran)
            self.coding.append(call_id)
        usage = event.usage_metadata
        if usage is None and heard is not None:
            usage = getattr(heard, "usage_metadata", None)
        if usage is not None:
            out.append(_usage(usage, event.model_version or getattr(heard, "model_version", None)))
        finish = event.finish_reason
        reason = str(getattr(finish, "value", finish)) if finish is not None else None
        done = {"model": event.model_version, "finish_reason": reason}
        # the tools Gemini ran in the request (its search, its code with its result beside)
        served = () if code else gemini_server_calls(parts)
        served += gemini_grounding(getattr(event, "grounding_metadata", None), served)
        end = ServerToolCallsEnd(**done, calls=served) if served else LLMCallEnd(**done)
        self.open, self.live = False, None
        asked = bool(code) or any(p.function_call for p in parts)
        self.answered = not event.error_code and not asked
        if event.error_code:
            message = str(event.error_message or event.error_code)
            out.append(Error(message=message, error_type=str(event.error_code)))
            self.failed = end
        else:
            out.append(end)


def _provider_ran(parts: Any) -> bool:
    """Whether a response tells code Gemini's own code execution tool ran within the request
    (``BuiltInCodeExecutor``): a ``code_execution_result`` beside the code."""
    return any(p.code_execution_result is not None for p in parts)


def _code_runs(event: Any, parts: Any) -> list[dict[str, Any]]:
    """The code blocks of a model's final ``event`` that the agent's executor runs next (its
    response cut at them, no result in it: a result beside them is the model's own code
    tool's, run in the request), as tool arguments."""
    if _provider_ran(parts):
        return []
    runs = []
    for part in parts:
        code = part.executable_code
        if code is not None:
            language = getattr(code.language, "value", code.language)
            runs.append({"code": code.code, "language": language})
    # (an event has an id; a response the plugin heard, closing a call, has none)
    return runs if runs and getattr(event, "id", None) else []


def _code_result(call_id: str, result: Any) -> ToolResult:
    """The result of code an agent's executor ran: failed (``tool_error``) unless its outcome
    is ``OUTCOME_OK`` (ADK writes the code's stderr as a failed outcome's output)."""
    outcome = getattr(result.outcome, "value", result.outcome)
    if outcome != "OUTCOME_OK":
        return failed_result(call_id, result.output, CODE_EXECUTION, "tool_error")
    return ToolResult(tool_call_id=call_id, content=result.output, name=CODE_EXECUTION)


def _direct(results: list[Any]) -> MessageFinal | StructuredFinal | None:
    """The answer of tools that skip the summary (module doc): a lone tool's value (the
    ``result`` ADK wraps a value that is no dict in), its text as it is; several tools'
    responses together; ``None`` when they answered nothing (``exit_loop``)."""
    values = [r.response for r in results if r.response and r.response != {"result": None}]
    if len(values) != 1:
        return structured_final(values) if values else None
    value = values[0]
    if isinstance(value, dict) and len(value) == 1 and "result" in value:
        value = value["result"]
    return MessageFinal(text=value) if isinstance(value, str) else structured_final(value)


def _answered(role: Any, event: Any, parts: Any) -> bool:
    """Whether ``event`` is content shaped as a model's answer, whole, with nothing a model
    call carries (no usage, no error, no function call): an agent callback's answer when no
    model request is waiting (module doc)."""
    return (
        role == "model"
        and not event.partial
        and event.usage_metadata is None
        and not event.error_code
        and any(p.text for p in parts)
        and not any(p.function_call or p.function_response for p in parts)
    )


_RAN: set[int] = set()
"""The ``id`` of each call's ``ToolContext`` whose tool ran (its ``run_async`` was called),
until the call ends: a call ending without it was answered before its tool ran."""


def _watch(tool: Any) -> None:
    """Wrap ``tool``'s ``run_async`` once (an instance attribute) to note each call it runs."""
    if tool is None or getattr(tool, "_agent_contract_watched", False):
        return
    run_async = getattr(tool, "run_async", None)
    if not callable(run_async):
        return

    async def noted(*args: Any, **kwargs: Any) -> Any:
        context = kwargs.get("tool_context")
        if context is not None:
            _RAN.add(id(context))
        return await run_async(*args, **kwargs)

    try:
        tool.run_async = noted
        tool._agent_contract_watched = True
    except Exception:  # a tool that takes no attributes: nothing noted, nothing read
        return


def _answered_before(tool: Any, tool_context: Any, result: Any) -> bool:
    """Whether a callback answered the call before its tool ran, in ADK's error shape (a
    guard refusing it); the confirmation gate's own answers are the gate's (module doc)."""
    if not getattr(tool, "_agent_contract_watched", False) or id(tool_context) in _RAN:
        return False
    if not isinstance(result, dict) or result.get("error") in (_GATE_WAITS, _GATE_REJECTED):
        return False
    return _error_shaped(result)


def _error_shaped(body: dict[str, Any]) -> bool:
    """ADK's error shapes: an ``error`` and no ``result``, or a ``status`` of ``"error"``."""
    status = body.get("status")
    if body.get("error") is not None and "result" not in body:
        return True
    return type(status) is str and status.lower() == "error"


_CONFIRMATION = "adk_request_confirmation"  # ADK's name for its call asking the user
_GATE_WAITS = "This tool call requires confirmation, please approve or reject."
_GATE_REJECTED = "This tool call is rejected."


def _asks_confirmation(call: Any) -> bool:
    return call is not None and getattr(call, "name", None) == _CONFIRMATION


def _waiting(response: Any) -> bool:
    """Whether a response is ADK's confirmation gate holding the call (not a result)."""
    body = response.response
    return isinstance(body, dict) and len(body) == 1 and body.get("error") == _GATE_WAITS


def _reason(payload: Any) -> str:
    """A pause's reason: a confirmation asked, else a long-running call not answered yet."""
    asked = isinstance(payload, dict) and "toolConfirmation" in payload
    return "tool_confirmation" if asked else "long_running_tool"


def _node(agent: Any) -> bool:
    """Whether ``agent`` is an ADK workflow node that is no agent (a ``Workflow``): run by a
    runner made with ``node=``, as ADK's own runners take it."""
    if hasattr(agent, "run_async"):
        return False
    try:
        from google.adk.workflow import BaseNode  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # ADK not installed: no node of it either
        return False
    return isinstance(agent, BaseNode)


def _agent(root: Any, author: str | None) -> Any:
    """The agent named ``author`` under ``root`` (``root`` when none is found)."""
    if author and getattr(root, "name", None) != author:
        find = getattr(root, "find_agent", None)
        return (find(author) if find is not None else None) or root
    return root


def _schema_answer(agent: Any, text: str) -> StructuredFinal | None:
    """The final answer of an agent given an ``output_schema``: the value ADK validates its
    text as and keeps (``model_validate_json``, dumped without ``None`` fields), as JSON
    (module doc); ``None`` for another agent, or text the schema refuses (ADK raises)."""
    validate = getattr(getattr(agent, "output_schema", None), "model_validate_json", None)
    if not callable(validate):
        return None
    try:
        return structured_final(validate(text).model_dump(exclude_none=True))
    except Exception:
        return None


def _model(root: Any, author: str | None) -> str | None:
    agent = _agent(root, author)
    model = getattr(agent, "model", None)
    name = model if isinstance(model, str) else getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def _server(root: Any, author: str | None) -> Endpoint | None:
    """The server the model of the agent named ``author`` sends to: a ``Gemini``'s
    google-genai client when given one, else its ``base_url``; an ``OpenAILlm``'s (or
    ``OpenAIResponsesLlm``'s) OpenAI client, else its ``base_url``, else the OpenAI SDK's
    default. None for a model named by a string, or a ``Gemini`` on its own client (made per
    event loop from the environment and Google Cloud's defaults, not read here). A property
    that raises costs only the server."""
    try:
        model = getattr(_agent(root, author), "model", None)
        if model is None or isinstance(model, str):
            return None
        found = held_endpoint(model, ("client",), ("base_url",))
        openai = type(model).__module__.startswith("google.adk.integrations.openai")
    except Exception:
        return None
    return found if found is not None or not openai else sdk_default("openai")


def _texts(parts: Any) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    for part in parts:
        text = part.text
        if isinstance(text, str) and text:
            out.append(ReasoningDelta(text=text) if part.thought else TextDelta(text=text))
    return out


def _answer(told: list[AgentEvent]) -> str:
    """The answer's text among the deltas ``_texts`` made (its reasoning left out)."""
    return "".join(event.text for event in told if isinstance(event, TextDelta))


def _usage(usage: Any, model: str | None) -> Usage:
    candidates, thoughts = usage.candidates_token_count, usage.thoughts_token_count
    output = None
    if candidates is not None or thoughts is not None:
        # a sum of counts only: a bad candidates count stays as it is, a bad thoughts count
        # adds nothing (each is dropped and counted where it is recorded)
        output = candidates if candidates is not None and not is_count(candidates) else None
        if output is None:
            output = counted(candidates, thoughts)
    if thoughts and candidates is not None and _thoughts_inside(usage):
        output = candidates
    return Usage(
        input_tokens=usage.prompt_token_count, output_tokens=output,
        total_tokens=usage.total_token_count, cache_read_tokens=usage.cached_content_token_count,
        reasoning_tokens=thoughts, model=model,
    )  # fmt: skip


def _thoughts_inside(usage: Any) -> bool:
    """Whether the candidates already count the thoughts: ADK's OpenAI models (``OpenAILlm``,
    the Responses one) put OpenAI's ``completion_tokens`` (reasoning included) in the
    candidates and its reasoning tokens in the thoughts too, and the total then leaves no room
    for the thoughts apart (Gemini's total counts them on top of the candidates)."""
    parts = (usage.prompt_token_count, getattr(usage, "tool_use_prompt_token_count", None),
             usage.candidates_token_count)  # fmt: skip
    total = usage.total_token_count
    if not isinstance(total, int) or not all(p is None or isinstance(p, int) for p in parts):
        return False
    return sum(p or 0 for p in parts) == total


# ADK's own texts for a call it ran no body for (``FunctionTool`` and its flow), by outcome.
_OWN_OUTCOME = re.compile(
    r"Invoking `[^`]{0,256}\(\)` failed (?:(due to argument validation errors)"
    r"|(as the following mandatory input parameters are not present)"
    r"|(as no tool with that name is available))"
)
_OUTCOMES = ("ValidationError", "ValidationError", "tool_not_found")


def _result(response: Any, failures: dict[str, str]) -> ToolResult:
    """A call's result; an error (module doc) named by the exception the plugin heard of, else
    by ADK's own text."""
    body = response.response
    call_id = str(response.id or "")
    name = response.name
    error_type = failures.pop(call_id, None)
    if error_type:  # the tool raised (whatever a callback answered for it), or its hook named it
        return failed_result(call_id, body, name, error_type)
    if not isinstance(body, dict):
        return ToolResult(tool_call_id=call_id, content=body, name=name, is_error=error_type == "")
    error = body.get("error")
    if not (error_type == "" or _error_shaped(body)):
        return ToolResult(tool_call_id=call_id, content=body, name=name, is_error=False)
    if error == _GATE_REJECTED and len(body) == 1:  # the user refused the call (module doc)
        return failed_result(call_id, body, name, "approval_rejected")
    own = _OWN_OUTCOME.match(error) if type(error) is str else None
    if own is None or not own.lastindex:  # the tracer's own word for it: tool_error
        return ToolResult(tool_call_id=call_id, content=body, name=name, is_error=True)
    return failed_result(call_id, body, name, _OUTCOMES[own.lastindex - 1])


def _detected(tool: Any, result: Any) -> str | None:
    """The error type a tool's own ADK hook reads in its result (``_detect_error_in_response``:
    an ``McpTool``'s ``MCP_TOOL_ERROR`` for a result with ``isError``, a skill tool's code),
    as ADK's own telemetry reads it; ``""``: an error ADK names only ``TOOL_ERROR`` (the
    result's shape names it, ``_result``); None: no error."""
    detector = getattr(tool, "_detect_error_in_response", None)
    if detector is None or not callable(detector):
        return None
    try:
        kind = detector(result)
    except Exception:  # ADK's telemetry swallows it too: no error read
        return None
    if type(kind) is not str or not kind:
        return None
    return "" if kind == "TOOL_ERROR" else kind


def _mcp_server(tool: Any) -> McpServer | None:
    """The MCP server of an ``McpTool`` (an ``McpToolset``'s; ``None``: another tool), as a
    session of its session manager's pool knows it (ADK opens one per set of headers, all to
    that server; none open yet: the server unknown)."""
    if not any(c.__name__ == "McpTool" for c in type(tool).__mro__):
        return None
    pool = getattr(getattr(tool, "_mcp_session_manager", None), "_sessions", None)
    try:
        entries = list(pool.values()) if isinstance(pool, dict) else []
    except Exception:  # the pool changed while read
        entries = []
    session = next((e[0] for e in entries if isinstance(e, tuple) and e), None)
    return server_of(session)

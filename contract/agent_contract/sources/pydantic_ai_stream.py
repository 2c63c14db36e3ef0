"""pydantic-ai: an agent run's event stream, node by node, as contract events.

``pydantic_ai_events(agent, prompt, ...)`` drives ``agent.iter()``, the run's graph, and
streams each node's own events (``node.stream(run.ctx)``):

* a model request node is one LLM call (none when the run's ``usage_limits`` stop it before
  its request: pydantic-ai raises ``UsageLimitExceeded`` there, and the run carries it; a
  response past a token limit, which pydantic-ai raises once the response has come, ends its
  call whole, with its tokens, before the run fails):
  ``LLMCallStart`` (the model's name, its ``system`` as provider, as params the model
  settings pydantic-ai merges: the model's own, the agent's over them, the run's over both,
  ``_settings``), then each text and thinking part's
  content, its start included, as ``TextDelta`` / ``ReasoningDelta``; when its stream ends,
  the ``ModelResponse`` gives ``Usage`` (cache and reasoning tokens included) and
  ``LLMCallEnd`` (``model_name``, ``provider_response_id``, ``finish_reason``);
* a call-tools node runs the tools that response asked for: each ``FunctionToolCallEvent``
  becomes a ``ToolCall`` (function tools only: an output tool is the answer, not a call),
  each ``FunctionToolResultEvent`` a ``ToolResult`` (a retry prompt, or a return whose
  ``outcome`` is failed, retried or denied, is an error result whose ``error_type`` names
  the pydantic-ai class behind it: ``ModelRetry``, ``ValidationError``, ``ToolFailed``,
  ``ToolDenied`` for a call whose approval was refused),
  and a ``StepBoundary`` closes the step. A call pydantic-ai skips because the output was
  already final (``end_strategy="early"``: it tells the call and a "Tool not executed" result,
  but runs no tool) is no call: neither is told;
* an answer the run sends back (an output validator's ``ModelRetry``, output that failed
  validation, no output: the next request carries pydantic-ai's ``RetryFeedbackPart``) is an
  ``Error`` of the step that gave it (``error_type`` ``ModelRetry`` or ``ValidationError``, as
  a tool's retry is named; the validator's message, content as a tool's retry prompt is:
  recorded only where content goes on spans), and that step ends: the retried request is the
  next step.
* the built-in tools the provider ran within a request (``WebSearchTool``,
  ``CodeExecutionTool``: ``builtin-tool-call`` parts and their returns in the response) end its
  call with a ``ServerToolCallsEnd`` holding them (``_provider_ran``): parts of the call's
  output, no tool call;
* a request that fell back (a ``FallbackModel``, the ``ModelFallback`` capability) is one call
  per model tried, in its step: each model it moved on from a failed call, then the answering
  model's (``_fell_back``).

Each function tool's body (MCP toolsets' tools included) runs under
``agent_contract.scope.tool_scope`` of its call, through pydantic-ai's own tool-wrapping seam:
a run capability whose ``get_wrapper_toolset`` wraps the run's toolset, so every tool call
goes through its ``call_tool`` (output tools are the answer, not a call, and are not in that
toolset). So what a tool opens (an MCP request, an HTTP call, a sub-agent run) nests under its
own tool span, parallel calls included. A tool of an ``MCPToolset`` is scoped with its server
(``McpServer``: the name the server gives itself, else the toolset's id; the session's
protocol version and id where they are known).

An agent a tool body runs itself (pydantic-ai's delegation: ``await delegate.run(q,
usage=ctx.usage)``, unstreamed, inside the caller's code) is recorded as a run nested under
that tool's span: ``Agent.iter``, set once on the class, gives such a run (in a tool body of a
run this module reads, a tracer claiming it) a capability recording its model requests and
tools through pydantic-ai's own hooks (``_Delegated``); anywhere else it is pydantic-ai's.
What pydantic-ai sends back there reads as in a streamed run: a call whose arguments failed
validation (no body runs: ``on_tool_validate_error``) a failed call, as is a call of a tool
the agent lacks (its retry in the next request), an answer refused (the
next request's retry part, ``_output_retry``) an error of its step. An agent run while a
request of a run this module reads is prepared (a ``ProcessHistory`` history processor, any
capability's ``before_model_request``: the run capability's ``wrap_model_request`` holds them)
or its output validated or processed (an output validator, an output function) is recorded
the same way, nested where it runs: in the step, beside its call.

A run that ends on deferred tool calls (its output a ``DeferredToolRequests``: a
``requires_approval`` tool's call, or one a tool defers with ``ApprovalRequired`` or
``CallDeferred``) is paused, not done: one ``InterruptFinal`` per call waiting (``interrupt_id``
the call's id, ``reason`` what it waits for: ``approval``, ``question`` or ``external``), so the
run ends ``interrupted``, each such call cut short (not failed: a body raising
``CallDeferred`` or ``ApprovalRequired`` defers its call, and the exception leaves the call's
scope unseen), in the step that asked for it.

A run whose output is structured (``output_type`` a model, a dataclass, a dict: the model
calls pydantic-ai's output tool, and no text tells the answer) ends with a ``StructuredFinal``
of that output as the JSON value pydantic dumps it to: the run's answer. A text output that
is not the text the last response said (a ``TextOutput`` function's, one an output validator
rewrote) ends with a ``MessageFinal`` of it.

The run's result is handed to ``on_result`` when the run ends, so the caller keeps
everything pydantic-ai returned. Needs ``pydantic-ai-slim`` (extra ``pydantic-ai``); the
caller brings the agent, and pydantic-ai is imported only when a run starts.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from agent_contract.agent.events import InterruptFinal, MessageFinal, StreamEvent
from agent_contract.events import (
    AgentEvent,
    Error,
    LLMCallEnd,
    LLMCallStart,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.scope import McpServer, framework_started, nested_run, tool_scope
from agent_contract.sources import _conversation
from agent_contract.sources._arguments import arguments_text, tool_call
from agent_contract.sources._endpoint import at_endpoint, base_url_of
from agent_contract.sources._failure import Error as ContentError
from agent_contract.sources._failure import error_name, failed_result
from agent_contract.sources._history import call_start, pydantic_ai_messages
from agent_contract.sources._nested import Pushed
from agent_contract.sources._require import expect, require
from agent_contract.sources._server_tools import ServerToolCall, ServerToolCallsEnd
from agent_contract.sources._structured import structured_final
from agent_contract.sources._unrun import UnrunCallsEnd, unrun_call

__all__ = ["pydantic_ai_events"]

# A tool return that says its call failed (pydantic-ai 2.x: a ToolReturnPart whose outcome is
# one of these; older versions sent a RetryPromptPart instead): failed and retried reach the
# model as errors, denied (never run) as an ordinary result saying so.
_ERROR_OUTCOMES = frozenset({"failed", "retried", "denied"})
_HINT = "Make one with pydantic_ai.Agent(model, ...)."


async def pydantic_ai_events(
    agent: Any,
    user_prompt: Any = None,
    *,
    on_result: Callable[[Any], object] | None = None,
    **run: Any,
) -> AsyncIterator[AgentEvent | StreamEvent]:
    """Run ``agent`` on ``user_prompt`` (``run`` goes to ``agent.iter``), yielding events."""
    framework_started(__name__)  # before the framework makes any request
    require("pydantic_ai.capabilities", "AbstractCapability")  # the API _scoping builds on
    expect(agent, "pydantic_ai_events", "a pydantic_ai.Agent", "iter", hint=_HINT)
    step, stepped, held = 0, True, False
    asked: set[str] = set()  # the tool calls the last response asked for
    _nest_delegates()
    capabilities = [*(run.pop("capabilities", None) or ()), _scoping()]
    async with agent.iter(user_prompt, capabilities=capabilities, **run) as graph:
        # the conversation pydantic-ai resolved (given, the history's, else a new one), told
        # again once known: before any request
        framework_started(__name__, _conversation.id_of(graph, "conversation_id"))
        async for node in graph:
            kind = type(node).__name__  # read by name: nothing of pydantic-ai is imported
            if kind == "ModelRequestNode":
                if held:  # a step whose calls had no result goes on after all: it ends here
                    yield StepBoundary(index=step)
                    step, stepped, held = step + 1, True, False
                retry = _output_retry(getattr(node, "request", None), asked)
                if retry is not None:  # the answer before was sent back: that step failed
                    yield retry
                    if not stepped:
                        yield StepBoundary(index=step)
                        step += 1
                asked, stepped = set(), False
                model = graph.ctx.deps.model
                settings = _settings(model, agent.model_settings, run.get("model_settings"))
                start = None  # the call told, until the models it fell back from are read
                if _allowed(graph.ctx):  # else the node raises the limit: no request is made
                    mode = getattr(getattr(graph.ctx.deps, "output_schema", None), "mode", None)
                    start = _start(model, {**settings, **_output_format(mode)}, graph.ctx.state,
                                   node)  # fmt: skip
                    yield start
                opened = None  # the request's stream, once it opened
                try:
                    async with node.stream(graph.ctx) as stream:
                        opened = stream
                        async for event in stream:
                            if start is not None:  # known once the answer streams
                                for fell in _fell_back(start, stream.response):
                                    yield fell
                                start = None
                            delta = _delta(event)
                            if delta is not None:
                                yield delta
                except Exception as error:
                    kind = type(error).__name__
                    if start is not None and kind == "FallbackExceptionGroup":
                        for fell in _fell_back(start, None, getattr(error, "attempts", None)):
                            yield fell  # every model failed: each its own call
                    if opened is not None and kind == "UsageLimitExceeded":
                        for done in _end(opened.response, _parameters(opened, graph.ctx.state)):
                            # the limit read its whole answer
                            yield done
                    raise
                if start is not None:  # an answer with no event
                    for fell in _fell_back(start, stream.response):
                        yield fell
                for done in _end(stream.response, _parameters(stream, graph.ctx.state)):
                    yield done
            elif kind == "CallToolsNode":
                called = False
                waiting: set[Any] = set()  # calls with no result: deferred (module doc)
                # calls not run in this step (with their repair's Error), until answered
                unrun: dict[Any, tuple[AgentEvent, ...]] = {}
                async with node.stream(graph.ctx) as tools:
                    async for happened in tools:
                        events = _tool_event(happened)
                        first = events[0] if events else None
                        if isinstance(first, ToolCall) and _unvalidated(happened):
                            unrun[first.id] = events  # told with its answer: skipped, or not
                            continue
                        if isinstance(first, ToolResult) and first.tool_call_id in unrun:
                            earlier = unrun.pop(first.tool_call_id)
                            if _skipped(happened):  # no tool ran: neither call nor result
                                continue
                            events = (*earlier, *events)
                        for out in events:
                            called = True
                            _track(out, waiting, asked)
                            yield out
                for told in unrun.values():  # never answered here: waiting, as told calls do
                    for out in told:
                        called = True
                        _track(out, waiting, asked)
                        yield out
                held = bool(waiting)  # deferred calls: the run ends paused on them, in it
                if called and not held:
                    yield StepBoundary(index=step)
                    step, stepped = step + 1, True
        paused = _deferred(graph.result)
        for pause in paused:
            yield pause
        answer = None if paused else _answer(graph.result)
        if answer is not None:
            yield answer
        if on_result is not None:
            on_result(graph.result)


def _answer(result: Any) -> StreamEvent | None:
    """The run's answer when no text of its last call tells it: a structured output
    (``StructuredFinal``), or a text output that is not the text its last response said (a
    ``TextOutput`` function's return, an output validator's rewrite, a ``str`` output tool's
    argument), as a ``MessageFinal``; ``None`` when that text is the answer."""
    output = getattr(result, "output", None)
    if not isinstance(output, str):
        return structured_final(output)
    try:
        said = result.response.text
    except Exception:  # a result with no response to read: the text told is the answer
        return None
    return None if said == output else MessageFinal(text=output)


_SKIPPED = "Tool not executed - a final result was already processed."
"""pydantic-ai's answer to a function tool call it skips because the output was final
(``end_strategy="early"``): the call never ran."""


def _track(out: AgentEvent, waiting: set[Any], asked: set[str]) -> None:
    """A call told waits for its result (``waiting``) and is one the last response asked for
    (``asked``); its result ends the wait."""
    if isinstance(out, ToolCall):
        waiting.add(out.id)
        if out.id is not None:
            asked.add(out.id)
    elif isinstance(out, ToolResult):
        waiting.discard(out.tool_call_id)


def _unvalidated(event: Any) -> bool:
    """A ``FunctionToolCallEvent`` of a call pydantic-ai does not run in this step
    (``args_valid`` ``None``: skipped once the output was final, or resumed with a result
    supplied for it), told with its result: only the result says which."""
    return getattr(event, "args_valid", False) is None


def _skipped(event: Any) -> bool:
    """A ``FunctionToolResultEvent`` answering a call pydantic-ai skipped (``_SKIPPED``): the
    model asked for it once the output was final, and no tool ran. It is no tool call."""
    part = getattr(event, "part", None)
    return getattr(part, "outcome", "success") == "success" and (
        getattr(part, "content", None) == _SKIPPED
    )


_DEFERRALS = frozenset({"CallDeferred", "ApprovalRequired"})
"""What a tool body raises to defer its call (pydantic-ai's control flow, not a failure)."""


def _deferred(result: Any) -> list[InterruptFinal]:
    """A run that ended on deferred tool calls (its output a ``DeferredToolRequests``: calls
    that need approval, ``requires_approval`` or ``ApprovalRequired``, or a result from outside,
    ``CallDeferred``): one ``InterruptFinal`` per call waiting, its id the call's (what
    ``DeferredToolResults`` answers), ``reason`` what it waits for, pydantic-ai's own word
    (``approval``, ``question``, ``external``). The run ends ``interrupted``, each call cut
    short."""
    output: Any = getattr(result, "output", None)
    if type(output).__name__ != "DeferredToolRequests":
        return []
    out = []
    for call in [*(output.approvals or ()), *(output.calls or ())]:
        call_id = getattr(call, "tool_call_id", None)
        if not isinstance(call_id, str):
            continue
        try:
            reason = output.kind(call_id)
        except Exception:  # a version without kind(): approvals are listed apart
            reason = "approval" if call in output.approvals else "external"
        payload = {
            "tool": getattr(call, "tool_name", None),
            "arguments": getattr(call, "args", None),
        }
        out.append(InterruptFinal(interrupt_id=call_id, payload=payload, reason=str(reason)))
    return out


def _output_retry(request: Any, asked: set[str]) -> Error | None:
    """The retry a model request (``request``, a ``ModelRequest``) sends back for the answer
    before: pydantic-ai's
    ``RetryFeedbackPart`` (an output validator's or output function's ``ModelRetry``, output
    that failed validation, or no output at all), or a retried return to an output tool's call
    (older versions: a retry prompt), for no tool call the stream told, as an error of the
    step whose answer it rejects, named like a tool's retry (``ModelRetry``,
    ``ValidationError``; else pydantic-ai's cause)."""
    for part in getattr(request, "parts", None) or ():
        kind = getattr(part, "part_kind", None)
        if kind == "retry-feedback":
            cause = getattr(getattr(part, "retry", None), "cause", None)
        elif getattr(part, "tool_call_id", None) in asked:
            continue  # a function tool's own retry: its call's result told it
        elif kind == "retry-prompt":
            cause = "model_retry" if isinstance(part.content, str) else "validation_error"
        elif kind == "tool-return" and getattr(part, "outcome", None) == "retried":
            cause = getattr(getattr(part, "retry", None), "cause", None)  # an output tool's
        else:
            continue
        content = part.content
        if cause == "validation_error" or not isinstance(content, str):
            return Error(message="the output failed validation", error_type="ValidationError")
        name = "ModelRetry" if cause == "model_retry" else str(cause or "retry")
        return ContentError(message=content, error_type=name)  # the prompt the model gets
    return None


def _allowed(ctx: Any) -> bool:
    """Whether the run's usage limits let the next request be made: pydantic-ai checks them
    (``check_before_request``) as a model request node starts, before any request, so a run
    over its limit ends there with ``UsageLimitExceeded`` and no model call."""
    limits = getattr(getattr(ctx, "deps", None), "usage_limits", None)
    check = getattr(limits, "check_before_request", None)
    if check is None:
        return True
    try:
        check(ctx.state.usage)
    except Exception:  # the node raises it again, as pydantic-ai does without this adapter
        return False
    return True


def _scoping() -> Any:
    """The run capability running each tool call under its call's scope (module doc)."""
    global _ToolScope
    if _ToolScope is None:
        from dataclasses import dataclass

        from pydantic_ai.capabilities import AbstractCapability
        from pydantic_ai.toolsets import WrapperToolset

        @dataclass
        class ScopedToolset(WrapperToolset[Any]):
            async def call_tool(self, name: str, tool_args: Any, ctx: Any, tool: Any) -> Any:
                scope = tool_scope(ctx.tool_call_id, name, tool_args, mcp=_mcp_server(tool))
                delegating = _DELEGATING.set(True)
                try:
                    with scope:
                        try:
                            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
                        except Exception as raised:  # a deferral leaves past the scope:
                            if type(raised).__name__ not in _DEFERRALS:  # no failure
                                raise
                            deferred = raised
                finally:
                    _DELEGATING.reset(delegating)
                raise deferred

        class ToolScope(AbstractCapability[Any]):
            def get_wrapper_toolset(self, toolset: Any) -> Any:
                return ScopedToolset(toolset)

            # An agent run while a request is prepared (its history processors, every
            # capability's before_model_request: in the handler) or its output validated or
            # processed (output validators and functions) is nested where it runs.
            async def wrap_model_request(
                self, ctx: Any, *, request_context: Any, handler: Any
            ) -> Any:
                return await _delegating(handler, request_context)

            async def wrap_output_validate(
                self, ctx: Any, *, output_context: Any, output: Any, handler: Any
            ) -> Any:
                return await _delegating(handler, output)

            async def wrap_output_process(
                self, ctx: Any, *, output_context: Any, output: Any, handler: Any
            ) -> Any:
                return await _delegating(handler, output)

        _ToolScope = ToolScope
    return _ToolScope()


async def _delegating(handler: Any, argument: Any) -> Any:
    """``handler(argument)`` awaited with an agent run started there nested (``_DELEGATING``)."""
    delegating = _DELEGATING.set(True)
    try:
        return await handler(argument)
    finally:
        _DELEGATING.reset(delegating)


# Set while a tool body of a run this module reads (or records, ``_Delegated``) runs: an agent
# run started there is a delegation, recorded as a run nested under the tool's span.
_DELEGATING: ContextVar[bool] = ContextVar("agent_contract_pydantic_ai_delegating", default=False)


def _nest_delegates() -> None:
    """Make ``Agent.iter`` (which ``run``, ``run_sync`` and ``run_stream`` start a run with)
    record a delegation: a run started in a tool body of a run this module reads, with a
    tracer there (``nested_run``), gets a capability (``_Delegated``) that records it, by
    pydantic-ai's own hooks, as a run nested under that tool's span. Set once, on the class;
    anywhere else (outside a tool body, nothing tracing, this module's own runs) ``iter`` is
    pydantic-ai's, untouched."""
    from pydantic_ai import Agent

    original = Agent.iter
    if getattr(original, "_agent_contract_nesting", False):
        return

    @functools.wraps(original)
    def iter(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _DELEGATING.get():
            capabilities = kwargs.get("capabilities") or ()
            wrap = None if any(isinstance(c, _ToolScope) for c in capabilities) else (
                nested_run(getattr(self, "name", None))
            )  # fmt: skip
            if wrap is not None:
                kwargs["capabilities"] = [*capabilities, _delegated(Pushed(wrap), self)]
        return original(self, *args, **kwargs)

    iter._agent_contract_nesting = True  # type: ignore[attr-defined]
    Agent.iter = iter  # type: ignore[method-assign]


def _delegated(pushed: Pushed, agent: Any) -> Any:
    """The capability recording one delegated run into ``pushed`` (``_nest_delegates``): each
    model request a call (its messages, text, tool calls' step, usage), each tool execution a
    call and its result with the body under its own scope, the run's end (or error) its end."""
    global _Delegated
    if _Delegated is None:
        import asyncio

        from pydantic_ai.capabilities import AbstractCapability

        class Delegated(AbstractCapability[Any]):
            def __init__(self, pushed: Pushed, agent: Any) -> None:
                self.pushed, self.agent = pushed, agent
                self.lock = asyncio.Lock()  # parallel tools push one at a time
                self.tools_ran = False
                self.asked: set[str] = set()  # the calls told since the last request
                self.failed: BaseException | None = None  # a model request's, left open
                self.step = 0

            async def push(self, *events: AgentEvent) -> None:
                async with self.lock:
                    if self.failed is not None:  # the run went on: that call failed alone
                        kind = error_name(self.failed)
                        self.failed = None
                        await self.pushed.push([Error(message=kind, error_type=kind),
                                                LLMCallEnd()])  # fmt: skip
                    await self.pushed.push(events)

            async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
                try:
                    result = await handler()
                except BaseException as error:
                    await self.pushed.end(error)
                    raise
                answer = _answer(result)  # a structured output, a rewritten text
                if answer is not None:
                    await self.pushed.push([answer])
                await self.pushed.end()
                return result

            async def wrap_model_request(
                self, ctx: Any, *, request_context: Any, handler: Any
            ) -> Any:
                messages = tuple(getattr(request_context, "messages", ()) or ())
                await self.unrun(messages, request_context)
                retry = _output_retry(messages[-1] if messages else None, self.asked)
                if retry is not None:  # the answer before was sent back: that step failed
                    await self.push(retry)
                if self.tools_ran or retry is not None:
                    await self.push(StepBoundary(index=self.step))
                    self.step, self.tools_ran = self.step + 1, False
                self.asked = set()
                model = _first(
                    getattr(request_context, "model", None) or getattr(ctx, "model", None)
                )
                settings = getattr(request_context, "model_settings", None)
                params = dict(settings) if isinstance(settings, dict) else {}
                asking = getattr(request_context, "model_request_parameters", None)
                params.update(_output_format(getattr(asking, "output_mode", None)))
                start = at_endpoint(call_start(
                    getattr(model, "model_name", None), getattr(model, "system", None), params,
                    pydantic_ai_messages, messages, None,
                ), base_url_of(model))  # fmt: skip
                await self.push(start)
                try:
                    response = await handler(request_context)
                except Exception as error:
                    if type(error).__name__ == "FallbackExceptionGroup":  # each model failed
                        await self.push(*_fell_back(start, None, getattr(error, "attempts", None)))
                    else:
                        self.failed = error  # the run's end marks it, or the next push does
                    raise
                said = [TextDelta(text=part.content) for part in response.parts
                        if getattr(part, "part_kind", None) == "text" and part.content]  # fmt: skip
                parameters = getattr(request_context, "model_request_parameters", None)
                await self.push(*_fell_back(start, response), *said, *_end(response, parameters))
                return response

            async def on_tool_validate_error(
                self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Any
            ) -> Any:
                # arguments that failed validation (or a validator's ModelRetry): the call
                # never runs, and pydantic-ai hands the model a retry prompt
                call_id = await self.called(call)
                kind = "ValidationError" if type(error).__name__ == "ValidationError" else (
                    "ModelRetry"
                )  # fmt: skip
                await self.push(failed_result(call_id, str(error), call.tool_name, kind))
                raise error

            async def unrun(self, messages: tuple[Any, ...], request_context: Any) -> None:
                """The calls of the response before that pydantic-ai answered without running
                a body (an unknown tool's name: its retry, read from this request) fail, as a
                streamed run's do; the output tools' are the answer's (``_output_retry``)."""
                if len(messages) < 2:
                    return
                parameters = getattr(request_context, "model_request_parameters", None)
                answers = {getattr(t, "name", None)
                           for t in getattr(parameters, "output_tools", None) or ()}  # fmt: skip
                asked = {getattr(part, "tool_call_id", None): part
                         for part in getattr(messages[-2], "parts", None) or ()
                         if getattr(part, "part_kind", None) == "tool-call"}  # fmt: skip
                for part in getattr(messages[-1], "parts", None) or ():
                    call = asked.get(getattr(part, "tool_call_id", None))
                    if call is None or call.tool_call_id in self.asked or (
                        call.tool_name in answers
                    ):  # fmt: skip
                        continue
                    retried = part.part_kind == "retry-prompt"
                    outcome = "retried" if retried else getattr(part, "outcome", "success")
                    if outcome in _ERROR_OUTCOMES:
                        content = part.model_response() if retried else part.content
                        call_id = await self.called(call)
                        kind = _failure(outcome, part.content)
                        await self.push(failed_result(call_id, content, call.tool_name, kind))

            async def called(self, call: Any) -> Any:
                """A call of the response before is told: its ``ToolCall``, in its step."""
                call_id = call.tool_call_id
                for event in tool_call(call_id, call.tool_name, call.args):
                    await self.push(event)
                self.tools_ran = True
                if isinstance(call_id, str):
                    self.asked.add(call_id)
                return call_id

            async def wrap_tool_execute(
                self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
            ) -> Any:
                arguments = arguments_text(call.args)  # told with the call, just above
                call_id, name = await self.called(call), call.tool_name
                delegating = _DELEGATING.set(True)
                try:
                    with tool_scope(call_id, name, arguments):
                        result = await handler(args)
                except Exception as error:
                    kind = _signal(error)
                    if kind is not None:  # pydantic-ai hands it to the model: the run goes on
                        await self.push(failed_result(call_id, str(error), name, kind))
                    raise  # else the run ends with it, and marks the call
                finally:
                    _DELEGATING.reset(delegating)
                await self.push(ToolResult(tool_call_id=call_id, content=result, name=name))
                return result

        _Delegated = Delegated
    return _Delegated(pushed, agent)


def _signal(error: BaseException) -> str | None:
    """The outcome pydantic-ai makes of a tool's retry or failure signal (the model gets it,
    the run goes on), as ``_failure`` names it; ``None``: any other exception."""
    kinds = {type(e).__name__ for e in (error, error.__cause__) if e is not None}
    if kinds & {"ToolRetryError", "ModelRetry"}:
        return "ModelRetry"
    if kinds & {"ToolFailedError", "ToolFailed"}:
        return "ToolFailed"
    return None


_Delegated: Any = None


def _mcp_server(tool: Any) -> McpServer | None:
    """The MCP server of ``tool`` when an ``MCPToolset`` (however wrapped) provides it."""
    while hasattr(tool, "source_tool"):  # a combined toolset's tool: the one it came from
        tool = tool.source_tool
    toolset = getattr(tool, "toolset", None)
    while toolset is not None and not _is_mcp(toolset):
        toolset = getattr(toolset, "wrapped", None)
    if toolset is None:
        return None
    try:
        info = toolset.server_info  # raises until the session is initialised
    except Exception:
        info = None
    session = _session(toolset)
    return McpServer(
        name=_text(getattr(info, "name", None)) or _text(getattr(toolset, "id", None)),
        session_id=_text(_call(getattr(getattr(toolset, "client", None), "transport", None))),
        protocol_version=_text(getattr(session, "protocol_version", None)),
    )


def _is_mcp(toolset: Any) -> bool:
    return any(c.__name__ == "MCPToolset" for c in type(toolset).__mro__)


def _session(toolset: Any) -> Any:
    try:
        return toolset.client.session
    except Exception:  # not connected
        return None


def _call(transport: Any) -> Any:
    """A streamable HTTP transport's session id (``None`` for other transports)."""
    get = getattr(transport, "get_session_id", None)
    try:
        return get() if callable(get) else None
    except Exception:
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_ToolScope: Any = None


def _settings(model: Any, agent: Any, run: Any) -> dict[str, Any]:
    """The settings a request goes with, merged as pydantic-ai merges its static layers: the
    model's own ``settings``, the agent's ``model_settings`` over them, the run's over both. A
    layer given as a function of the run context (or a capability's) is resolved by
    pydantic-ai alone, as each step starts: it is left out here, as calling it again could
    change what the agent does."""
    merged: dict[str, Any] = {}
    for layer in (getattr(model, "settings", None), agent, run):
        if isinstance(layer, dict):
            merged.update(layer)
    return merged


def _parameters(stream: Any, state: Any) -> Any:
    """The ``ModelRequestParameters`` a streamed request was made with (its output tools)."""
    parameters = getattr(stream, "_model_request_parameters", None)
    return parameters or getattr(state, "last_model_request_parameters", None)


def _start(model: Any, settings: Any, state: Any, node: Any) -> LLMCallStart:
    """The call a model request node makes. Its ``messages`` (read when read) are the run's
    history, then the node's own request (pydantic-ai appends it to the history as it sends
    it); the request's ``instructions`` are set only then, so the first call shows a
    ``system_prompt`` but not ``instructions``."""
    params = dict(settings) if isinstance(settings, dict) else {}
    model = _first(model)
    history = tuple(getattr(state, "message_history", None) or ())
    request = getattr(node, "request", None)
    if history and history[-1] is request:
        request = None
    return at_endpoint(call_start(
        getattr(model, "model_name", None), getattr(model, "system", None),
        {**params, "stream": True}, pydantic_ai_messages, history, request,
    ), base_url_of(model))  # fmt: skip


def _delta(event: Any) -> AgentEvent | None:
    kind = type(event).__name__
    if kind == "PartStartEvent":
        part, text = event.part, getattr(event.part, "content", None)
        if not text or not isinstance(text, str):
            return None
        if part.part_kind == "text":
            return TextDelta(text=text)
        return ReasoningDelta(text=text) if part.part_kind == "thinking" else None
    if kind == "PartDeltaEvent":
        delta, text = event.delta, getattr(event.delta, "content_delta", None)
        if not text:
            return None
        if delta.part_delta_kind == "text":
            return TextDelta(text=text)
        return ReasoningDelta(text=text) if delta.part_delta_kind == "thinking" else None
    return None


def _first(model: Any) -> Any:
    """The model a request goes to first: a ``FallbackModel``'s first model (it tries them in
    order, ``_fell_back``), else ``model`` itself."""
    while type(model).__name__ == "FallbackModel" and getattr(model, "models", None):
        model = model.models[0]
    return model


def _fell_back(start: LLMCallStart, answer: Any, attempts: Any = None) -> list[AgentEvent]:
    """The models a request fell back from (a ``FallbackModel``, the ``ModelFallback``
    capability), each a call of its own in the request's step: pydantic-ai records each model
    it moved on from as a ``ModelRequestAttempt``, on the response that answered
    (``answer.failed_attempts``) or, when every model failed, on the
    ``FallbackExceptionGroup`` (``attempts``; ``answer`` is then ``None``).

    The call ``start`` told is the first attempt's: it fails with the attempt's exception class
    (``ResponseRejected`` for a response a ``fallback_on`` handler refused, with the tokens it
    was billed for), then each later attempt opens and fails a call of its own, and the
    answering model's call opens, which its stream then tells. pydantic-ai reports the attempts
    only once one answered (or all failed): the first failed call spans them all, the later
    ones are instants."""
    if answer is not None:
        attempts = getattr(answer, "failed_attempts", None)
    out: list[AgentEvent] = []
    for attempt in attempts if isinstance(attempts, (list, tuple)) else ():
        name = getattr(attempt, "model_name", None)
        if out:
            out.append(replace(start, model=name, provider=getattr(attempt, "provider_name", None)))
        described = getattr(attempt, "error", None)
        kind, _, message = str(described).partition(": ")
        if getattr(attempt, "outcome", None) == "rejected" or not kind.isidentifier():
            kind, message = "ResponseRejected", "the model's response was rejected"
        out.append(Error(message=message or kind, error_type=kind))
        usage = getattr(attempt, "usage", None)
        if usage is not None:  # billed: a rejected response's
            out.append(_usage(usage, name))
        out.append(LLMCallEnd(model=name))
    if out and answer is not None:
        provider = getattr(answer, "provider_name", None)
        out.append(replace(start, model=getattr(answer, "model_name", None), provider=provider))
    return out


def _usage(usage: Any, model: str | None) -> Usage:
    """A pydantic-ai ``RequestUsage`` as the contract's ``Usage`` of one call."""
    reasoning = usage.output_reasoning_tokens or (usage.details or {}).get("reasoning_tokens")
    return Usage(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens, cache_read_tokens=usage.cache_read_tokens or None,
        cache_creation_tokens=usage.cache_write_tokens or None,
        reasoning_tokens=reasoning or None, model=model,
    )  # fmt: skip


def _end(response: Any, parameters: Any = None) -> tuple[AgentEvent, ...]:
    """A response's usage and its call's end: with the built-in tools the provider ran, and
    the calls of the request's output tools (``parameters``, its ``ModelRequestParameters``),
    which carry the structured answer and run no tool (``UnrunCallsEnd``)."""
    counted = _usage(response.usage, response.model_name)
    done = {"model": response.model_name, "finish_reason": response.finish_reason,
            "response_id": response.provider_response_id}  # fmt: skip
    calls = _provider_ran(response.parts)
    answers = _answers(response.parts, parameters)
    if answers:
        return (counted, UnrunCallsEnd(**done, unrun=answers, calls=calls))
    end = ServerToolCallsEnd(**done, calls=calls) if calls else LLMCallEnd(**done)
    return (counted, end)


def _answers(parts: Any, parameters: Any) -> tuple[ToolCall, ...]:
    """The response's calls of an output tool (``final_result``, a ``ToolOutput``'s name):
    what the model returned, a ``tool_call`` part of its chat span's output, but the run's
    answer, not a tool call (pydantic-ai validates the arguments; no tool span)."""
    names = {getattr(t, "name", None) for t in getattr(parameters, "output_tools", None) or ()}
    if not names:
        return ()
    return tuple(
        unrun_call(part.tool_call_id, part.tool_name, part.args)
        for part in parts
        if getattr(part, "part_kind", None) == "tool-call" and part.tool_name in names
    )


def _output_format(mode: Any) -> dict[str, str]:
    """The request's ``output_type`` param (``json``) where pydantic-ai asks the model for a
    JSON answer itself (``NativeOutput``: the API's response format; ``PromptedOutput``: its
    instructions); an output tool's call is no output format of the request."""
    return {"output_type": "json"} if mode in ("native", "prompted") else {}


def _provider_ran(parts: Any) -> tuple[ServerToolCall, ...]:
    """The built-in tools the provider ran within the request (``WebSearchTool``,
    ``CodeExecutionTool``...: a ``builtin-tool-call`` part, and its ``builtin-tool-return``
    with the same id), told in the call's output message (``ServerToolCallsEnd``): the
    application ran nothing, so no tool span."""
    results = {
        part.tool_call_id: part.content
        for part in parts if getattr(part, "part_kind", None) == "builtin-tool-return"
    }  # fmt: skip
    return tuple(
        ServerToolCall(part.tool_call_id, part.tool_name,
                       {"type": part.tool_name, "arguments": part.args_as_dict()},
                       _returned(part.tool_name, results, part.tool_call_id))
        for part in parts if getattr(part, "part_kind", None) == "builtin-tool-call"
    )  # fmt: skip


def _returned(name: str, results: dict[Any, Any], call_id: Any) -> dict[str, Any] | None:
    """A built-in tool's outcome as its response's details (``None``: none told)."""
    return {"type": name, "result": results[call_id]} if call_id in results else None


def _tool_event(event: Any) -> tuple[AgentEvent, ...]:
    """A tool call's events (its ``ToolCall``, and the ``Error`` telling its arguments'
    repair) or its result's, or none."""
    kind = type(event).__name__
    if kind == "FunctionToolCallEvent":
        part = event.part
        return tool_call(part.tool_call_id, part.tool_name, part.args)
    if kind == "FunctionToolResultEvent":
        part = event.part
        retry = part.part_kind == "retry-prompt"
        content = part.model_response() if retry else part.content
        outcome = "retried" if retry else getattr(part, "outcome", "success")
        if outcome in _ERROR_OUTCOMES:
            kind = _failure(outcome, part.content)
            return (failed_result(part.tool_call_id, content, part.tool_name, kind),)
        return (ToolResult(tool_call_id=part.tool_call_id, content=content, name=part.tool_name),)
    return ()


def _failure(outcome: str, content: Any) -> str:
    """``error.type`` of a failed call: the pydantic-ai exception behind its outcome.

    ``retried`` is a ``ModelRetry`` (raised by the tool, or pydantic-ai's own for an unknown
    tool name), or pydantic's ``ValidationError`` when the arguments failed validation (the
    content is then the list of errors); ``failed`` is a ``ToolFailed``; ``denied`` is the
    ``ToolDenied`` its approval was answered with (the call never ran; pydantic-ai hands the
    model its message as an ordinary result, unchanged here).
    """
    if outcome == "failed":
        return "ToolFailed"
    if outcome == "denied":
        return "ToolDenied"
    return "ValidationError" if isinstance(content, list) else "ModelRetry"

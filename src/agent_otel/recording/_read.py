"""Reading events by shape: one table per vocabulary, mapping an event to a recorder call.

The Latent vocabulary (``TextDelta``, ``LLMCallStart``, ...) is recognised by class name, the
Agent vocabulary (``message_delta``, ``tool_call_step``, ...) by its ``type`` discriminator;
fields are read by name. A look-alike class from another package, or one defined in a test,
is therefore traced exactly like ours. Nothing here imports ``agent_contract``.
"""

from __future__ import annotations

import sys
from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import reads_values
from agent_otel._plain import text_of

from ._hints import hint_unknown_event
from ._recorder import Handler, RunRecorder
from ._usage import Tokens


# --- the Latent vocabulary (by class name) ---------------------------------------------------
# The contract's own fields are read as attributes, in one ``try`` per event: a ``getattr``
# call costs about three plain reads (figure 2: nine reads per tool call). A look-alike that
# lacks one of them is read field by field with ``getattr``; a field the contract
# does not declare (``tools``, ``error_type``) always is.
def llm_call_start(rec: RunRecorder, ev: Any) -> None:
    try:
        model, provider, call_id, params = ev.model, ev.provider, ev.call_id, ev.params
    except AttributeError:
        model, provider = getattr(ev, "model", None), getattr(ev, "provider", None)
        call_id, params = getattr(ev, "call_id", None), getattr(ev, "params", None)
    # the event itself: its messages are read only when they are captured
    rec.llm_start(model, provider, call_id, params, ev, getattr(ev, "tools", None))


def side_call_start(rec: RunRecorder, ev: Any) -> None:
    """A request beside the agent's own: its call, which leaves the run's model to the
    agent's calls (``SideCallStart``); under the tool call it stands in for, if it names one."""
    with rec.aside(getattr(ev, "tool_call_id", None)):
        llm_call_start(rec, ev)


def endpoint_call_start(rec: RunRecorder, ev: Any) -> None:
    """A call naming the server it is sent to (``EndpointCallStart``): its span starts with
    ``server.address`` and ``server.port``."""
    with rec.at_endpoint(getattr(ev, "server_address", None), getattr(ev, "server_port", None)):
        llm_call_start(rec, ev)


def conversation_call_start(rec: RunRecorder, ev: Any) -> None:
    """A call continuing a conversation (``ConversationCallStart``): the run's conversation
    id first, so the call's span starts with it; then the call, at its server if it names
    one."""
    rec.conversation(getattr(ev, "conversation_id", None))
    endpoint_call_start(rec, ev)


def llm_call_end(rec: RunRecorder, ev: Any) -> None:
    try:
        model, call_id, reason, response_id = ev.model, ev.call_id, ev.finish_reason, ev.response_id
    except AttributeError:
        model, call_id = getattr(ev, "model", None), getattr(ev, "call_id", None)
        reason, response_id = getattr(ev, "finish_reason", None), getattr(ev, "response_id", None)
    rec.llm_end(model, call_id, reason, response_id)


def tool_call(rec: RunRecorder, ev: Any) -> None:
    try:
        call_id, function, kind = ev.id, ev.function, ev.type
    except AttributeError:
        call_id, function = getattr(ev, "id", None), getattr(ev, "function", None)
        kind = getattr(ev, "type", None)
    try:
        name, arguments = function.name, function.arguments
    except AttributeError:
        name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
    rec.tool_call(call_id, name, arguments, kind)


def unrun_calls_end(rec: RunRecorder, ev: Any) -> None:
    """The end of an LLM call whose response's tool calls never ran
    (``agent_contract.sources._unrun.UnrunCallsEnd``): each a part of its output, no tool
    span, beside the tools the provider ran that it tells too (``calls``); then the call ends
    as any."""
    unrun, end_id = getattr(ev, "unrun", ()), getattr(ev, "call_id", None)
    for call in unrun if type(unrun) is tuple else ():  # a subclass may iterate as it likes
        function = getattr(call, "function", None)
        name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
        rec.unrun_tool_call(getattr(call, "id", None), name, arguments, end_id)
    server_calls_end(rec, ev)


def server_calls_end(rec: RunRecorder, ev: Any) -> None:
    """The end of an LLM call whose response tells tools the provider ran itself
    (``agent_contract.sources._server_tools.ServerToolCallsEnd``): each a part of its output,
    no tool span; then the call ends as any."""
    calls, end_id = getattr(ev, "calls", ()), getattr(ev, "call_id", None)
    for call in calls if type(calls) is tuple else ():
        rec.server_tool_call(
            getattr(call, "id", None), getattr(call, "name", None),
            getattr(call, "call", None), getattr(call, "response", None), end_id,
        )  # fmt: skip
    llm_call_end(rec, ev)


def tool_result(rec: RunRecorder, ev: Any) -> None:
    try:
        call_id, name, content, is_error = ev.tool_call_id, ev.name, ev.content, ev.is_error
    except AttributeError:
        call_id, name = getattr(ev, "tool_call_id", None), getattr(ev, "name", None)
        content, is_error = getattr(ev, "content", None), getattr(ev, "is_error", None)
    rec.tool_result(call_id, name, content, is_error, getattr(ev, "error_type", None))


def step_boundary(rec: RunRecorder, ev: Any) -> None:
    rec.step_boundary(getattr(ev, "index", None))


def usage(rec: RunRecorder, ev: Any) -> None:
    rec.usage(Tokens.read(ev, rec.anomaly), getattr(ev, "model", None))


def call_usage(rec: RunRecorder, ev: Any) -> None:
    """A usage naming its call (``agent_contract.sources._call_usage.CallUsage``)."""
    call_id = getattr(ev, "call_id", None)
    rec.usage_of(call_id, Tokens.read(ev, rec.anomaly), getattr(ev, "model", None))


def error(rec: RunRecorder, ev: Any) -> None:
    rec.error_event(
        getattr(ev, "message", None),
        getattr(ev, "error_type", None),
        getattr(ev, "fatal", None),
        getattr(ev, "message_is_content", None) is True,
    )


def journey_marker(rec: RunRecorder, ev: Any) -> None:
    rec.journey(getattr(ev, "name", None), getattr(ev, "journey_id", None))


def phase_marker(rec: RunRecorder, ev: Any) -> None:
    rec.phase(getattr(ev, "name", None))


LATENT: dict[str, Handler] = {
    "TextDelta": RunRecorder.text_delta,  # the hot path: the method itself, no extra call
    "ReasoningDelta": RunRecorder.reasoning_delta,
    "LLMCallStart": llm_call_start,
    "SideCallStart": side_call_start,
    "ConversationCallStart": conversation_call_start,
    "EndpointCallStart": endpoint_call_start,
    "LLMCallEnd": llm_call_end,
    "UnrunCallsEnd": unrun_calls_end,
    "ServerToolCallsEnd": server_calls_end,
    "ToolCall": tool_call,
    "ToolResult": tool_result,
    "StepBoundary": step_boundary,
    "Usage": usage,
    "CallUsage": call_usage,
    "Error": error,
    "JourneyMarker": journey_marker,
    "PhaseMarker": phase_marker,
}


# --- the Agent vocabulary (by ``type``) --------------------------------------------------------
def tool_call_step(rec: RunRecorder, ev: Any) -> None:
    rec.tool_call(
        getattr(ev, "call_id", None), getattr(ev, "tool", None), getattr(ev, "args", None)
    )


def tool_result_step(rec: RunRecorder, ev: Any) -> None:
    rec.tool_result(
        getattr(ev, "call_id", None),
        getattr(ev, "tool", None),
        getattr(ev, "result", None),
        getattr(ev, "is_error", None),
    )


def run_usage(rec: RunRecorder, ev: Any) -> None:
    rec.run_usage(Tokens.read(ev, rec.anomaly), getattr(ev, "model", None))


def _final(rec: RunRecorder, ev: Any, output_type: str, field: str) -> None:
    """A terminal answer, by ``_drain``'s rule: only ``final=True`` is one (else: a draft,
    nothing to record)."""
    if getattr(ev, "final", None) is True:
        rec.final(output_type, getattr(ev, field, None))


def message_final(rec: RunRecorder, ev: Any) -> None:
    _final(rec, ev, A.OUTPUT_TYPE_TEXT, "text")


def structured_final(rec: RunRecorder, ev: Any) -> None:
    _final(rec, ev, A.OUTPUT_TYPE_JSON, "data")


def interrupt_final(rec: RunRecorder, ev: Any) -> None:
    if getattr(ev, "final", None) is True:
        rec.interrupt(getattr(ev, "interrupt_id", None), getattr(ev, "reason", None))


AGENT: dict[str, Handler] = {
    "message_delta": RunRecorder.text_delta,
    "reasoning_step": RunRecorder.reasoning_delta,
    "tool_call_step": tool_call_step,
    "tool_result_step": tool_result_step,
    "run_usage": run_usage,
    "message_final": message_final,
    "structured_final": structured_final,
    "interrupt_final": interrupt_final,
}


def by_type(rec: RunRecorder, ev: Any) -> None:
    """A class outside the Latent vocabulary: dispatch each event on its ``type`` field."""
    kind = getattr(ev, "type", None)
    if type(kind) is not str:  # a str subclass (a str enum) as the str it is, else None
        kind = text_of(kind)
    handler = AGENT.get(kind) if kind is not None else None
    if handler is None:
        rec.anomaly("unknown_event")
        hint_unknown_event(ev)
    else:
        handler(rec, ev)


# Where fields are read: every function of these modules, and the recorder's that read an
# event themselves (a delta is dispatched to the recorder itself, the hot path: they read its
# text; a chat's messages are read only when captured). What the agent's own code raises there
# is the agent's (``agent_otel._guard.agents_value``), counted as ``unreadable_event``.
reads_values(__name__)
reads_values("agent_otel.recording._usage")
reads_values(
    "agent_otel.recording._recorder", frozenset({"text_delta", "reasoning_delta", "llm_start"})
)


MAX_EVENT_CLASSES = 1024  # event classes whose handler is remembered


def handler_for(
    event: Any, handlers: dict[type, Handler | None], shared: dict[type, Handler]
) -> Handler:
    """The handler for ``event``'s class, remembered in ``handlers`` for the next event.

    ``handlers`` belongs to one run (one dict lookup per event on the hot path). ``shared``
    is the wrapper's: each run's table starts as its copy, so a run finds the classes the
    runs before it read without a lookup by name each (figure 2, per run: six classes). Only
    a class its module holds by its name goes there: it lives as long as its module anyway,
    whereas a class made in a function or by ``type()`` (a test's, one made on the fly) would
    be kept alive by the wrapper; it is the run's alone. Both tables are bounded.
    """
    cls = event.__class__
    handler = LATENT.get(text_of(cls.__name__) or "")  # (a name of a str subclass)
    if handler is None:
        handler = by_base(cls)
    if len(handlers) >= MAX_EVENT_CLASSES:  # classes made on the fly must not pile up
        handlers.clear()
    handlers[cls] = handler
    if _module_level(cls):
        if len(shared) >= MAX_EVENT_CLASSES:
            shared.clear()
        shared[cls] = handler
    return handler


def by_base(cls: type) -> Handler:
    """A class outside the vocabulary by its own name: read as its nearest base that is in it
    (the agent's subclass of ``TextDelta`` is a ``TextDelta``, as ``isinstance`` says), else
    by its ``type`` field (the Agent vocabulary)."""
    try:
        bases = cls.__mro__[1:]
    except Exception:  # a metaclass's own __mro__ that raises: no base to read it by
        return by_type
    for base in bases if type(bases) is tuple else ():
        handler = LATENT.get(text_of(getattr(base, "__name__", None)) or "")
        if handler is not None:
            return handler
    return by_type


def _module_level(cls: type) -> bool:
    """Whether ``cls`` is what its module holds under its name (once per class and run)."""
    try:
        module, name = cls.__module__, cls.__qualname__
        if type(module) is not str or type(name) is not str:
            return False
        return getattr(sys.modules.get(module), name, None) is cls
    except Exception:  # a hostile metaclass or module: the run's alone
        return False

"""Reading events by shape: one small table per vocabulary, mapping an event to a recorder call.

The Latent vocabulary (``TextDelta``, ``LLMCallStart``, ...) is recognised by class name, the
Agent vocabulary (``message_delta``, ``tool_call_step``, ...) by its ``type`` discriminator;
fields are read by name. A look-alike class from another package, or one defined in a test,
is therefore traced exactly like ours. Nothing here imports ``agent_contract``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _attributes as A
from ._recorder import RunRecorder
from ._usage import Tokens

Handler = Callable[[RunRecorder, Any], None]


def _get(event: Any, name: str) -> Any:
    return getattr(event, name, None)


def _tool_call(rec: RunRecorder, ev: Any) -> None:
    function = _get(ev, "function")
    rec.tool_call(_get(ev, "id"), _get(function, "name"), _get(function, "arguments"), ev)


def _error(rec: RunRecorder, ev: Any) -> None:
    rec.error_event(_get(ev, "message"), _get(ev, "error_type"), _get(ev, "fatal"))
    if _get(ev, "fatal") is True:
        rec.terminal = True


LATENT: dict[str, Handler] = {
    "TextDelta": lambda rec, ev: rec.chunk(_get(ev, "text"), True),
    "ReasoningDelta": lambda rec, ev: rec.chunk(_get(ev, "text"), False),
    "LLMCallStart": lambda rec, ev: rec.llm_start(
        _get(ev, "model"), _get(ev, "provider"), _get(ev, "call_id"), _get(ev, "params"),
        _get(ev, "messages"),
    ),
    "LLMCallEnd": lambda rec, ev: rec.llm_end(
        _get(ev, "model"), _get(ev, "call_id"), _get(ev, "finish_reason"), _get(ev, "response_id")
    ),
    "ToolCall": _tool_call,
    "ToolResult": lambda rec, ev: rec.tool_result(
        _get(ev, "tool_call_id"), _get(ev, "name"), _get(ev, "content"), _get(ev, "is_error")
    ),
    "StepBoundary": lambda rec, ev: rec.step_boundary(_get(ev, "index")),
    "Usage": lambda rec, ev: rec.usage_event(Tokens.read(ev), _get(ev, "model")),
    "Error": _error,
    "JourneyMarker": lambda rec, ev: rec.journey(_get(ev, "name"), _get(ev, "journey_id")),
    "PhaseMarker": lambda rec, ev: rec.phase(_get(ev, "name")),
}  # fmt: skip

AGENT: dict[str, Handler] = {
    "message_delta": lambda rec, ev: rec.chunk(_get(ev, "text"), True),
    "reasoning_step": lambda rec, ev: rec.chunk(_get(ev, "text"), False),
    "tool_call_step": lambda rec, ev: rec.tool_call(
        _get(ev, "call_id"), _get(ev, "tool"), _get(ev, "args"), None
    ),
    "tool_result_step": lambda rec, ev: rec.tool_result(
        _get(ev, "call_id"), _get(ev, "tool"), _get(ev, "result"), _get(ev, "is_error")
    ),
    "run_usage": lambda rec, ev: rec.run_usage(Tokens.read(ev), _get(ev, "model")),
    "message_final": lambda rec, ev: rec.final(A.OUTPUT_TYPE_TEXT, _get(ev, "text")),
    "structured_final": lambda rec, ev: rec.final(A.OUTPUT_TYPE_JSON, _get(ev, "data")),
    "interrupt_final": lambda rec, ev: rec.interrupt(
        _get(ev, "interrupt_id"), _get(ev, "reason")
    ),
}  # fmt: skip

_by_class: dict[type, Handler] = {}


def _unknown(rec: RunRecorder, ev: Any) -> None:
    rec.anomaly("unknown_event")


def observe(rec: RunRecorder, event: Any) -> None:
    """Feed one event to the recorder (the wrapper calls this once per event)."""
    handler = _by_class.get(event.__class__)
    if handler is None:
        handler = LATENT.get(event.__class__.__name__)
        if handler is not None:
            _by_class[event.__class__] = handler
        else:
            kind = getattr(event, "type", None)
            handler = AGENT.get(kind, _unknown) if isinstance(kind, str) else _unknown
    handler(rec, event)

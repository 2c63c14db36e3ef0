"""Reading events by shape: one small table per vocabulary, mapping an event to a recorder call.

The Latent vocabulary (``TextDelta``, ``LLMCallStart``, ...) is recognised by class name, the
Agent vocabulary (``message_delta``, ``tool_call_step``, ...) by its ``type`` discriminator;
fields are read by name. A look-alike class from another package, or one defined in a test,
is therefore traced exactly like ours. Nothing here imports ``agent_contract``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_otel import _attributes as A

from ._recorder import RunRecorder
from ._usage import Tokens

Handler = Callable[[RunRecorder, Any], None]


def _tool_call(rec: RunRecorder, ev: Any) -> None:
    function = getattr(ev, "function", None)
    rec.tool_call(
        getattr(ev, "id", None),
        getattr(function, "name", None),
        getattr(function, "arguments", None),
        ev,
    )


def _error(rec: RunRecorder, ev: Any) -> None:
    rec.error_event(
        getattr(ev, "message", None), getattr(ev, "error_type", None), getattr(ev, "fatal", None)
    )
    if getattr(ev, "fatal", None) is True:
        rec.mark_terminal()


def _final(rec: RunRecorder, ev: Any, output_type: str | None, field: str) -> None:
    """A terminal event, by ``_drain``'s rule: only ``final=True`` is one (else: a draft,
    nothing to record). ``output_type`` None is an interrupt."""
    if getattr(ev, "final", None) is not True:
        return
    if output_type is None:
        rec.interrupt(getattr(ev, "interrupt_id", None), getattr(ev, "reason", None))
    else:
        rec.final(output_type, getattr(ev, field, None))


LATENT: dict[str, Handler] = {
    "TextDelta": RunRecorder.text_delta,
    "ReasoningDelta": RunRecorder.reasoning_delta,
    "LLMCallStart": lambda rec, ev: rec.llm_start(
        getattr(ev, "model", None),
        getattr(ev, "provider", None),
        getattr(ev, "call_id", None),
        getattr(ev, "params", None),
        getattr(ev, "messages", None),
    ),
    "LLMCallEnd": lambda rec, ev: rec.llm_end(
        getattr(ev, "model", None),
        getattr(ev, "call_id", None),
        getattr(ev, "finish_reason", None),
        getattr(ev, "response_id", None),
    ),
    "ToolCall": _tool_call,
    "ToolResult": lambda rec, ev: rec.tool_result(
        getattr(ev, "tool_call_id", None),
        getattr(ev, "name", None),
        getattr(ev, "content", None),
        getattr(ev, "is_error", None),
    ),
    "StepBoundary": lambda rec, ev: rec.step_boundary(getattr(ev, "index", None)),
    "Usage": lambda rec, ev: rec.usage_event(
        Tokens.read(ev, rec.anomaly), getattr(ev, "model", None)
    ),
    "Error": _error,
    "JourneyMarker": lambda rec, ev: rec.journey(
        getattr(ev, "name", None), getattr(ev, "journey_id", None)
    ),
    "PhaseMarker": lambda rec, ev: rec.phase(getattr(ev, "name", None)),
}

AGENT: dict[str, Handler] = {
    "message_delta": RunRecorder.text_delta,
    "reasoning_step": RunRecorder.reasoning_delta,
    "tool_call_step": lambda rec, ev: rec.tool_call(
        getattr(ev, "call_id", None), getattr(ev, "tool", None), getattr(ev, "args", None), None
    ),
    "tool_result_step": lambda rec, ev: rec.tool_result(
        getattr(ev, "call_id", None),
        getattr(ev, "tool", None),
        getattr(ev, "result", None),
        getattr(ev, "is_error", None),
    ),
    "run_usage": lambda rec, ev: rec.run_usage(
        Tokens.read(ev, rec.anomaly), getattr(ev, "model", None)
    ),
    "message_final": lambda rec, ev: _final(rec, ev, A.OUTPUT_TYPE_TEXT, "text"),
    "structured_final": lambda rec, ev: _final(rec, ev, A.OUTPUT_TYPE_JSON, "data"),
    "interrupt_final": lambda rec, ev: _final(rec, ev, None, ""),
}


def _by_type(rec: RunRecorder, ev: Any) -> None:
    """A class outside the Latent vocabulary: dispatch each event on its ``type`` field."""
    kind = getattr(ev, "type", None)
    handler = AGENT.get(kind) if isinstance(kind, str) else None
    if handler is None:
        rec.anomaly("unknown_event")
    else:
        handler(rec, ev)


MAX_CLASSES = 1024


def resolve(event: Any, handlers: dict[type, Handler]) -> Handler:
    """The handler for ``event``'s class, remembered in ``handlers`` for the next event.

    ``handlers`` belongs to one run (one dict lookup per event on the hot path), so no event
    class is kept alive past the runs that saw it.
    """
    cls = event.__class__
    handler = LATENT.get(cls.__name__, _by_type)
    if len(handlers) >= MAX_CLASSES:  # classes made on the fly must not pile up
        handlers.clear()
    handlers[cls] = handler
    return handler

"""LangSmith's OpenTelemetry mode stands down where provider instrumentations do.

LangSmith's tracing in its OpenTelemetry mode (``LANGSMITH_TRACING`` with
``LANGSMITH_OTEL_ENABLED``, or ``Client(tracing_mode="otel"/"hybrid")``; langsmith 0.15.1)
turns each run it traces (LangChain's callbacks of a LangGraph graph: the graph, its nodes,
each model and tool call; its integrations of the OpenAI Agents SDK, Google ADK, Strands; its
``wrap_openai``; ``@traceable``) into a span of the global provider's (or the one it is given),
made later, on its client's background thread, under the span current when the run was posted:
in a framework run or chat span of ours, ours. So every model call and tool call was told
again, its tokens on our spans and on theirs. It reads no context key, and its spans start on a
thread whose context says nothing. Two class seams, installed with the other guards before a
chat span or framework run of ours (:mod:`._guards`): ``Client._enqueue_op``, on the run's own
thread, notes the runs posted where providers stand down (:func:`~._context.covering`: a
framework run of ours with the stand-down on, or our chat span open);
``OTELExporter._create_span_for_run`` gives each noted run, and each run under one, a
non-recording span carrying its parent's context (ours, or another held one), so whatever starts
under it is a child of our span and nothing of theirs is recorded: as OpenLLMetry's LangChain
callbacks do in such a run (they read the key), their chain, node and ``@traceable`` spans
stand down too. Outside our runs, and with ``stand_down_providers=False``, their spans are made
as before; in its hybrid mode the runs still go to LangSmith's own API. Its client imports the
exporter's module lazily: the run imports it first. A version without the seams is left alone.
"""

from __future__ import annotations

import functools
import importlib
import sys
import uuid
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, Span

from agent_otel._fork import ChildLock
from agent_otel._guard import report

from ._context import covering

__all__ = ["CLIENT", "hold_langsmith", "restore_langsmith"]

_MARK = "_agent_otel_held"

CLIENT = "langsmith.client"
_LANGSMITH_EXPORTER = "langsmith._internal.otel._otel_exporter"
_LANGSMITH_SPANS = "_span_info"
_held_runs: dict[object, None] = {}
"""The LangSmith runs posted where ours cover them whose span is not made yet (oldest first)."""
_MAX_HELD = 65536  # runs whose span is never made (its exporter dropped them) age out
_held_lock = ChildLock()


class _HeldRun(NonRecordingSpan):
    """A LangSmith run's span in our run, not recorded: its children stand down too."""


def _gated_enqueue(enqueue: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(enqueue)
    def enqueue_op(self: Any, priority: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if (
                getattr(op, "operation", None) == "post"
                and getattr(self, "otel_exporter", None) is not None
                and covering()
            ):
                with _held_lock:
                    _held_runs[op.id] = None
                    if len(_held_runs) > _MAX_HELD:
                        del _held_runs[next(iter(_held_runs))]
        except Exception:
            report("langsmith stand-down")
        return enqueue(self, priority, op, *args, **kwargs)

    setattr(enqueue_op, _MARK, enqueue)
    return enqueue_op


def _gated_create_span(create: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(create)
    def create_span_for_run(self: Any, op: Any, run_info: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            held = _held_parent(self, op, run_info, args, kwargs)
        except Exception:
            report("langsmith stand-down")
            held = None
        return held if held is not None else create(self, op, run_info, *args, **kwargs)

    setattr(create_span_for_run, _MARK, create)
    return create_span_for_run


def _held_parent(
    exporter: Any, op: Any, run_info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Span | None:
    """The span to store for LangSmith's run ``op`` instead of making one (None: make it):
    a run posted in our run's context, or under a run held so."""
    with _held_lock:
        noted = _held_runs.pop(op.id, False) is None
    parent_id = run_info.get("parent_run_id") if isinstance(run_info, dict) else None
    parent = None
    if parent_id is not None:
        spans = getattr(exporter, _LANGSMITH_SPANS, None)  # its runs' spans, by run id
        info = spans.get(uuid.UUID(str(parent_id))) if spans is not None else None
        parent = getattr(info, "span", None)
    if isinstance(parent, _HeldRun):
        return _HeldRun(parent.get_span_context())
    if not noted:
        return None
    if parent is None:  # a root of theirs: the context it was posted in, ours
        context = args[0] if args else kwargs.get("otel_context")
        parent = trace.get_current_span(context) if context is not None else None
    span_context = parent.get_span_context() if isinstance(parent, Span) else None
    if span_context is None or not span_context.is_valid:
        return None
    return _HeldRun(span_context)


_LANGSMITH_SEAMS = (
    (CLIENT, "Client", "_enqueue_op", _gated_enqueue),
    (_LANGSMITH_EXPORTER, "OTELExporter", "_create_span_for_run", _gated_create_span),
)


def hold_langsmith() -> bool:
    """The two seams gated, if LangSmith's client is loaded (once; idempotent); whether both
    are. Never raises."""
    try:
        if _LANGSMITH_EXPORTER not in sys.modules and CLIENT in sys.modules:
            importlib.import_module(_LANGSMITH_EXPORTER)  # its client imports it lazily
        gated = 0
        for module, class_name, method, gated_with in _LANGSMITH_SEAMS:
            cls = getattr(sys.modules.get(module), class_name, None)
            theirs = vars(cls).get(method) if isinstance(cls, type) else None
            if not callable(theirs):
                continue  # not loaded, or a version without the seam
            if not hasattr(theirs, _MARK):
                setattr(cls, method, gated_with(theirs))
            gated += 1
        return gated == len(_LANGSMITH_SEAMS)
    except Exception:
        report("langsmith stand-down")
        return False


def restore_langsmith() -> None:
    """Both seams as they were before :func:`hold_langsmith`."""
    for module, class_name, method, _ in _LANGSMITH_SEAMS:
        cls = getattr(sys.modules.get(module), class_name, None)
        original = getattr(vars(cls).get(method), _MARK, None) if isinstance(cls, type) else None
        if original is not None:
            setattr(cls, method, original)
    with _held_lock:
        _held_runs.clear()

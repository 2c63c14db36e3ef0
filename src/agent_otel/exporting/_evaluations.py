"""Evaluations in the terminal view: each ``gen_ai.evaluation.result`` event becomes a row
under the span it judges (the run, or one call), also when a judge records it after the run
ended, as long as the run is still in the view's window."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel._plain import number_of

if TYPE_CHECKING:
    from agent_otel.exporting._console import ConsoleTreeExporter

__all__ = ["EvaluationsToConsole", "evaluation_note"]


def evaluation_note(attributes: Mapping[str, Any]) -> str | None:
    """``evaluation relevance 0.92 pass``; None for a record that is no evaluation result. A
    score no double holds (an int another emitter sent) is left out, as
    ``record_evaluation`` refuses one."""
    name = attributes.get(A.EVALUATION_NAME)
    if not isinstance(name, str) or not name:
        return None
    parts = [f"evaluation {name}"]
    score = attributes.get(A.EVALUATION_SCORE_VALUE)
    kind = type(score)
    if kind is not bool and issubclass(kind, (int, float)):  # a subclass as its plain number
        number = number_of(score)  # an int past a double's range: infinite, left out
        if number is not None and (issubclass(kind, float) or math.isfinite(number)):
            parts.append(f"{number:.4g}")
    label = attributes.get(A.EVALUATION_SCORE_LABEL)
    if isinstance(label, str) and label:
        parts.append(label)
    error = attributes.get(A.ERROR_TYPE)
    if isinstance(error, str) and error:
        parts.append(f"[ERROR {error}]")
    return " ".join(parts)


class EvaluationsToConsole(LogRecordProcessor):
    """Hands each evaluation result event to the terminal view (other log records pass by)."""

    def __init__(self, console: ConsoleTreeExporter) -> None:
        self._console = console

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        record = log_record.log_record
        if record.event_name != A.EVENT_EVALUATION_RESULT:
            return
        try:  # another library's record reaches here too: never raise into its emit
            note = evaluation_note(record.attributes or {})
            if note is not None and record.trace_id and record.span_id:
                self._console.add_note(record.trace_id, record.span_id, note)
        except Exception:
            report("evaluation in the terminal view")

    def emit(self, log_record: ReadWriteLogRecord) -> None:  # the SDK's older name
        self.on_emit(log_record)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

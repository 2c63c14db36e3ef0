"""``record_evaluation()``: one ``gen_ai.evaluation.result`` event through the OTel Logs API.

The event (``events.yaml``) names the evaluation and carries a score value, a label, an
explanation and the evaluated response's id. It is parented to the evaluated span by that
span's context, so it can be recorded during the run or by an offline judge long after it
ended: any ``SpanContext`` will do, one kept from the run or one rebuilt from the trace and
span ids a backend shows. Without one the event goes to the current span, if any.
"""

from __future__ import annotations

import math

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider, LogRecord, get_logger
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel._plain import a_kind, number_of, plain_value, shown
from agent_otel._version import __version__
from agent_otel.recording._encodable import clean_text
from agent_otel.recording._hints import check_provider, hint_unattached, keywords
from agent_otel.recording._options import check_scrub, scrub_for
from agent_otel.scrubbing import Scrubber


@keywords({})
def record_evaluation(
    name: str,
    *,
    score: float | None = None,
    label: str | None = None,
    explanation: str | None = None,
    response_id: str | None = None,
    error_type: str | None = None,
    evaluator_id: str | None = None,
    evaluator_version: str | None = None,
    evaluator_type: str | None = None,
    span_context: SpanContext | None = None,
    logger_provider: LoggerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    scrub: bool | Scrubber | None = None,
) -> None:
    """Record a ``gen_ai.evaluation.result`` event for the run or call ``span_context`` names.

    ``name`` (required, e.g. ``"relevance"``) is ``gen_ai.evaluation.name``; ``score`` the
    numeric ``gen_ai.evaluation.score.value``; ``label`` its human reading
    (``gen_ai.evaluation.score.label``, e.g. ``"pass"``); ``explanation`` why; ``response_id``
    the evaluated completion's ``gen_ai.response.id`` (correlates the event when no span
    context is at hand); ``error_type`` when the evaluation itself failed.
    ``evaluator_id``, ``evaluator_version`` and ``evaluator_type`` (``"llm_judge"``,
    ``"deterministic"`` or ``"human"``) say who judged: ``gen_ai.evaluation.evaluator.*``, the
    names of the open proposal semantic-conventions-genai PR #359 (docs/conformance.md). The logger
    provider defaults to the global one (``configure()`` sets it). Every text is scrubbed of
    credentials first, as a run's are (``scrub``, default ``configure(scrub=...)``'s; what
    was found is counted on ``meter_provider``'s ``agent_otel.scrubbed``, default the global
    one). Wrong argument
    types raise ``TypeError``, a score no double holds ``ValueError``; a failing logger is
    logged once and swallowed.
    """
    # A str enum name, an int subclass score: the plain values they are (none of their own
    # methods runs), as in a run.
    name, score, label, explanation, response_id, error_type = map(
        plain_value, (name, score, label, explanation, response_id, error_type)
    )
    attributes = _attributes(name, score, label, explanation, response_id, error_type)
    check_provider("record_evaluation", "logger_provider", logger_provider, "get_logger")
    check_provider("record_evaluation", "meter_provider", meter_provider, "get_meter")
    check_scrub("record_evaluation", scrub)
    if span_context is not None and not issubclass(type(span_context), SpanContext):
        raise TypeError(
            f"record_evaluation(span_context=...) must be a SpanContext, not "
            f"{a_kind(span_context)}: "
            "pass span.get_span_context(), or run_context(stream)"
        )
    attributes.update(
        _evaluator(*map(plain_value, (evaluator_id, evaluator_version, evaluator_type)))
    )
    try:
        bound = scrub_for(meter_provider, scrub)
        if bound is not None:
            attributes = bound.attributes(attributes)
    except Exception:  # nothing unscrubbed is recorded
        report("evaluation scrub")
        return
    # Then encodable and at most 256 KiB, as a run's strings (docs/export.md).
    attributes = {k: clean_text(v) if isinstance(v, str) else v for k, v in attributes.items()}
    if span_context is None:
        span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid and response_id is None:
        hint_unattached(name)
    context = trace.set_span_in_context(NonRecordingSpan(span_context))
    try:
        logger = get_logger(A.SCOPE_NAME, __version__, logger_provider)
        record = LogRecord(
            event_name=A.EVENT_EVALUATION_RESULT, attributes=attributes, context=context
        )
        logger.emit(record)
    except Exception:
        report("evaluation event")


def _attributes(
    name: object,
    score: object,
    label: object,
    explanation: object,
    response_id: object,
    error_type: object,
) -> dict[str, AttributeValue]:
    if type(name) is not str or not name:  # (plain: a str subclass is the str it is)
        raise TypeError(
            f"record_evaluation() needs the evaluation's name, a non-empty str, not {shown(name)}"
        )
    attributes: dict[str, AttributeValue] = {A.EVALUATION_NAME: name}
    if score is not None:
        number = number_of(score)
        if number is None:
            raise TypeError(f"record_evaluation(score=...) must be a number, not {shown(score)}")
        if math.isinf(number) and not issubclass(type(score), float):
            raise ValueError(f"record_evaluation(score=...) {shown(score)} does not fit a double")
        attributes[A.EVALUATION_SCORE_VALUE] = number
    for key, argument, value in (
        (A.EVALUATION_SCORE_LABEL, "label", label),
        (A.EVALUATION_EXPLANATION, "explanation", explanation),
        (A.RESPONSE_ID, "response_id", response_id),
        (A.ERROR_TYPE, "error_type", error_type),
    ):
        if value is not None:
            attributes[key] = _text(argument, value)
    return attributes


def _evaluator(evaluator_id: object, version: object, kind: object) -> dict[str, AttributeValue]:
    """The evaluator's provenance: its id, version and kind (one of the proposal's three)."""
    out: dict[str, AttributeValue] = {}
    for key, argument, value in (
        (A.EVALUATOR_ID, "evaluator_id", evaluator_id),
        (A.EVALUATOR_VERSION, "evaluator_version", version),
        (A.EVALUATOR_TYPE, "evaluator_type", kind),
    ):
        if value is not None:
            out[key] = _text(argument, value)
    if type(kind) is str and kind not in A.EVALUATOR_TYPES:
        choices = ", ".join(repr(k) for k in A.EVALUATOR_TYPES)
        raise ValueError(f"evaluator_type={kind!r}: expected one of {choices}")
    return out


def _text(argument: str, value: object) -> str:
    """A text argument, read plain (a str subclass is the ``str`` it is by now)."""
    if type(value) is not str:
        raise TypeError(f"record_evaluation({argument}=...) must be a str, not {shown(value)}")
    return value

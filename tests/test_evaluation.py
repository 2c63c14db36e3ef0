"""``record_evaluation()``: a ``gen_ai.evaluation.result`` event, valid per ``events.yaml``,
parented to the evaluated run or call, also long after the run ended."""

from __future__ import annotations

import logging
from enum import Enum, IntEnum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

from agent_otel import _attributes as A
from agent_otel import _guard, record_evaluation
from agent_otel.testing import InMemoryTelemetry
from genai_scenario import run_agent_otel
from hostile_types import HostileStr, LyingInt, LyingStr
from test_events import validate_event


async def _finished_run(telemetry: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    await run_agent_otel(telemetry.tracer_provider, telemetry.meter_provider)
    return {span.name: span for span in telemetry.spans()}  # the second chat span wins


async def test_an_offline_judge_scores_an_ended_run_and_a_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    spans = await _finished_run(otel_telemetry)
    run, chat = spans["invoke_agent weather"], spans["chat gpt-4o"]
    assert run.end_time is not None  # the run is over: only its ids are left
    assert run.context is not None and chat.context is not None
    rebuilt = SpanContext(
        int(format(run.context.trace_id, "032x"), 16),
        int(format(run.context.span_id, "016x"), 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    record_evaluation(
        "task_completion",
        score=0.5,
        label="partial",
        explanation="the time was not given",
        span_context=rebuilt,
        logger_provider=otel_telemetry.logger_provider,
    )
    record_evaluation(
        "relevance",
        score=1,
        label="pass",
        response_id=str((chat.attributes or {})[A.RESPONSE_ID]),
        span_context=chat.context,
        logger_provider=otel_telemetry.logger_provider,
    )
    on_run, on_call = otel_telemetry.logs()
    assert (on_run.log_record.trace_id, on_run.log_record.span_id) == (
        run.context.trace_id,
        run.context.span_id,
    )
    assert on_call.log_record.span_id == chat.context.span_id
    for record in (on_run, on_call):
        assert record.log_record.event_name == A.EVENT_EVALUATION_RESULT
        validate_event(record)
    assert dict(on_run.log_record.attributes or {}) == {
        "gen_ai.evaluation.name": "task_completion",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "partial",
        "gen_ai.evaluation.explanation": "the time was not given",
    }
    assert dict(on_call.log_record.attributes or {}) == {
        "gen_ai.evaluation.name": "relevance",
        "gen_ai.evaluation.score.value": 1.0,  # the registry's type is double
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.response.id": "resp_2",
    }


async def test_without_a_span_context_the_current_span_is_evaluated(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("judge")
    with tracer.start_as_current_span("judged") as span:
        record_evaluation("toxicity", label="none", logger_provider=otel_telemetry.logger_provider)
    [record] = otel_telemetry.logs()
    assert record.log_record.span_id == span.get_span_context().span_id


def test_outside_any_span_the_event_has_no_parent(otel_telemetry: InMemoryTelemetry) -> None:
    assert not trace.get_current_span().get_span_context().is_valid
    record_evaluation(
        "groundedness",
        error_type="judge_timeout",
        response_id="resp_9",
        logger_provider=otel_telemetry.logger_provider,
    )
    [record] = otel_telemetry.logs()
    assert not record.log_record.span_id
    assert validate_event(record)["error.type"] == "judge_timeout"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("",), {}),
        ((None,), {}),
        (("n",), {"score": "high"}),
        (("n",), {"score": True}),
        (("n",), {"label": 3}),
        (("n",), {"response_id": b"r"}),
        (("n",), {"evaluator_id": 7}),
        (("n",), {"evaluator_version": 2.0}),
        (("n",), {"evaluator_type": ["human"]}),
        (("n",), {"span_context": trace.INVALID_SPAN}),  # the span, not its context
        (("n",), {"span_context": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}),
    ],
)
def test_wrong_argument_types_raise(
    otel_telemetry: InMemoryTelemetry, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError):
        record_evaluation(*args, logger_provider=otel_telemetry.logger_provider, **kwargs)
    assert otel_telemetry.logs() == []


def test_the_evaluator_is_named_by_id_version_and_kind(otel_telemetry: InMemoryTelemetry) -> None:
    """Evaluator provenance: the open proposal's gen_ai.evaluation.evaluator.* (PR #359), on
    an event otherwise valid per events.yaml; absent arguments write nothing."""
    for kind in A.EVALUATOR_TYPES:
        record_evaluation(
            "relevance",
            score=0.9,
            evaluator_id="judge-7",
            evaluator_version="2026-11",
            evaluator_type=kind,
            logger_provider=otel_telemetry.logger_provider,
        )
    record_evaluation("relevance", score=0.9, logger_provider=otel_telemetry.logger_provider)
    *judged, plain = otel_telemetry.logs()
    for record, kind in zip(judged, A.EVALUATOR_TYPES, strict=True):
        attributes = dict(record.log_record.attributes or {})
        assert attributes[A.EVALUATOR_ID] == "judge-7"
        assert attributes[A.EVALUATOR_VERSION] == "2026-11"
        assert attributes[A.EVALUATOR_TYPE] == kind
    assert not [k for k in dict(plain.log_record.attributes or {}) if ".evaluator." in k]
    assert validate_event(plain)["gen_ai.evaluation.name"] == "relevance"


def test_an_evaluator_kind_outside_the_proposal_raises(otel_telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(ValueError, match="llm_judge"):
        record_evaluation(
            "n", evaluator_type="robot", logger_provider=otel_telemetry.logger_provider
        )
    assert otel_telemetry.logs() == []


def test_a_score_no_double_holds_raises(otel_telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(ValueError, match="double"):
        record_evaluation("n", score=10**400, logger_provider=otel_telemetry.logger_provider)
    assert otel_telemetry.logs() == []


class Broken:
    def get_logger(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no logger")


@pytest.mark.internal_errors
def test_a_failing_logger_is_logged_once_and_swallowed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_guard, "_reported", set())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        record_evaluation("a", logger_provider=Broken())  # type: ignore[arg-type]
        record_evaluation("b", logger_provider=Broken())  # type: ignore[arg-type]
    assert caplog.text.count("evaluation event") == 1


@given(
    name=st.text(min_size=1),
    score=st.one_of(st.none(), st.integers(-(2**1000), 2**1000), st.floats(allow_nan=True)),
    label=st.one_of(st.none(), st.text()),
    explanation=st.one_of(st.none(), st.text()),
)
def test_any_valid_values_make_a_valid_event(
    name: str, score: float | None, label: str | None, explanation: str | None
) -> None:
    telemetry = InMemoryTelemetry()
    record_evaluation(
        name,
        score=score,
        label=label,
        explanation=explanation,
        logger_provider=telemetry.logger_provider,
    )
    [record] = telemetry.logs()
    attributes = validate_event(record)
    assert attributes["gen_ai.evaluation.name"] == name
    assert ("gen_ai.evaluation.score.value" in attributes) is (score is not None)
    telemetry.shutdown()


class Metric(str, Enum):
    RELEVANCE = "relevance"
    PASS = "pass"


class Grade(IntEnum):
    GOOD = 4


def test_enum_arguments_are_recorded_as_their_values(otel_telemetry: InMemoryTelemetry) -> None:
    """A str enum name and label and an IntEnum score (how evaluation suites type them) are
    the plain values they are on the event, whatever their own ``str()`` and ``format()``."""
    record_evaluation(
        Metric.RELEVANCE,
        score=Grade.GOOD,
        label=Metric.PASS,
        explanation=HostileStr("on topic"),
        logger_provider=otel_telemetry.logger_provider,
    )
    [record] = otel_telemetry.logs()
    attributes = validate_event(record)
    assert attributes["gen_ai.evaluation.name"] == "relevance"
    assert type(attributes["gen_ai.evaluation.name"]) is str
    assert attributes["gen_ai.evaluation.score.label"] == "pass"
    assert attributes["gen_ai.evaluation.score.value"] == 4.0
    assert attributes["gen_ai.evaluation.explanation"] == "on topic"


def test_arguments_whose_own_methods_raise_are_read_as_the_plain_values_they_are(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A name of a ``str`` subclass whose length and hash raise, a score of an ``int``
    subclass whose conversions raise: read by the base types, they make a valid event."""
    record_evaluation(
        LyingStr("faithfulness"),
        score=LyingInt(1),
        logger_provider=otel_telemetry.logger_provider,
    )
    [record] = otel_telemetry.logs()
    attributes = validate_event(record)
    assert attributes["gen_ai.evaluation.name"] == "faithfulness"
    assert attributes["gen_ai.evaluation.score.value"] == 1.0

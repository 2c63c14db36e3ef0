"""Evaluations in the terminal view, under the run or call they judge: recorded during the run,
after it ended (within the view's window), or for a run the view never showed."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext

from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage
from agent_otel import configure, otel_wrapper, record_evaluation


async def _events(judge_inside: bool, tel: Any) -> AsyncIterator[Any]:
    yield LLMCallStart(model="gpt-4o-mini", provider="openai")
    yield TextDelta(text="Paris")
    if judge_inside:  # the chat span is current while the agent computes its next event
        record_evaluation(
            "groundedness", score=0.75, label="ok", logger_provider=tel.logger_provider
        )
    yield Usage(input_tokens=5, output_tokens=1)
    yield LLMCallEnd(model="gpt-4o-mini")


async def _run(tel: Any, judge_inside: bool = False) -> None:
    wrapper = otel_wrapper(
        agent_name="geo",
        tracer_provider=tel.tracer_provider,
        meter_provider=tel.meter_provider,
        logger_provider=tel.logger_provider,
    )
    async for _ in wrapper(_events(judge_inside, tel)):
        pass


def _configure(stream: io.StringIO, spans: InMemorySpanExporter | None = None) -> Any:
    processors = [SimpleSpanProcessor(spans)] if spans is not None else []
    return configure(
        console=True,
        console_stream=stream,
        set_global=False,
        span_processors=processors,
    )


async def _ended_run() -> tuple[io.StringIO, Any, ReadableSpan]:
    """A console printing to a stream, after one run of ``geo`` ended: the stream, the
    telemetry and the run's span."""
    stream = io.StringIO()
    spans = InMemorySpanExporter()
    tel = _configure(stream, spans)
    await _run(tel)
    [run] = [s for s in spans.get_finished_spans() if s.name == "invoke_agent geo"]
    return stream, tel, run


async def test_an_evaluation_during_the_run_shows_under_the_call_it_judges() -> None:
    stream = io.StringIO()
    tel = _configure(stream)
    await _run(tel, judge_inside=True)
    tel.shutdown()
    lines = stream.getvalue().splitlines()
    chat = next(i for i, line in enumerate(lines) if "chat gpt-4o-mini" in line)
    assert lines[chat + 1].strip().endswith("evaluation groundedness 0.75 ok"), lines
    assert lines[chat + 1].index("└─") > lines[chat].index("└─")  # a child of the chat row


async def test_an_evaluation_after_the_run_ended_shows_under_the_run() -> None:
    stream, tel, run = await _ended_run()
    printed = stream.getvalue()
    record_evaluation(
        "correctness",
        score=1.0,
        label="pass",
        span_context=run.context,
        logger_provider=tel.logger_provider,
    )
    late = stream.getvalue()[len(printed) :].splitlines()
    assert late == [
        f"trace {run.context.trace_id:032x}",
        "invoke_agent geo",
        "└─ evaluation correctness 1 pass",
    ]
    tel.shutdown()


async def test_an_evaluation_of_a_run_never_shown_is_printed_at_exit() -> None:
    stream = io.StringIO()
    tel = _configure(stream)
    elsewhere = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True)
    record_evaluation(
        "relevance", score=0.5, span_context=elsewhere, logger_provider=tel.logger_provider
    )
    assert stream.getvalue() == ""  # it may belong to a run still going: wait for it
    tel.shutdown()
    assert stream.getvalue().splitlines()[:3] == [
        "trace 4bf92f3577b34da6a3ce929d0e0e4736",
        "(run not in this view)",
        "└─ evaluation relevance 0.5",
    ]


async def test_other_log_records_and_a_failed_evaluation() -> None:
    stream, tel, run = await _ended_run()
    before = stream.getvalue()
    record_evaluation(
        "toxicity",
        error_type="TimeoutError",
        span_context=run.context,
        logger_provider=tel.logger_provider,
    )
    assert stream.getvalue()[len(before) :].endswith(
        "└─ evaluation toxicity [ERROR TimeoutError]\n"
    )
    tel.shutdown()


async def test_another_judges_score_no_double_holds_is_shown_without_it() -> None:
    """An evaluation result another library emits through the same logger provider, its score
    an int past what a double holds: its emit returns, the row shows it without the score."""
    from opentelemetry._logs import LogRecord

    stream, tel, run = await _ended_run()
    before = stream.getvalue()
    logger = tel.logger_provider.get_logger("another-judge")
    context = trace.set_span_in_context(NonRecordingSpan(run.context))
    attributes = {"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 10**400}
    logger.emit(
        LogRecord(event_name="gen_ai.evaluation.result", attributes=attributes, context=context)
    )
    assert stream.getvalue()[len(before) :].endswith("└─ evaluation relevance\n")
    tel.shutdown()

"""Tail sampling of whole runs: decided per run at the root, bounded buffer, metrics unaffected."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from agent_contract.agent import AgentInterruptedError
from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import otel_wrapper
from agent_otel.sampling import TailSampler, TailSamplingPolicy
from agent_otel.testing import FakeClock, InMemoryTelemetry

Step = Callable[[], Any]


class Rig(InMemoryTelemetry):
    """The kit's telemetry with its export behind a TailSampler (random trace ids, as the
    ratio reads them)."""

    sampler: TailSampler

    def __init__(self, **policy: Any) -> None:
        def behind_the_sampler(export: SpanProcessor) -> SpanProcessor:
            self.sampler = TailSampler(export, TailSamplingPolicy(**policy))
            return self.sampler

        super().__init__(ids=RandomIdGenerator(), export_through=behind_the_sampler)

    def wrap(self, name: str = "root", **options: Any) -> Any:
        return self.wrapper(agent_name=name, **options)

    def names(self) -> list[str]:
        return sorted(s.name for s in self.spans())

    def agent_runs_measured(self) -> int:
        return sum(p.count for p in self.histograms().get("gen_ai.invoke_agent.duration", []))


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with FakeClock().installed() as fake:
        yield fake


def a_run(*, tokens: int = 10, model: str = "gpt-4o-mini", extra: Sequence[Any] = ()) -> list[Any]:
    return [
        LLMCallStart(model=model, provider="openai", call_id="c"),
        TextDelta("hi"),
        Usage(input_tokens=tokens, output_tokens=0, total_tokens=tokens),
        LLMCallEnd(call_id="c"),
        ToolCall(id="t", function=FunctionCall(name="tool", arguments="{}")),
        *extra,
        ToolResult(tool_call_id="t", content="ok"),
        StepBoundary(),
    ]


FULL = sorted(["invoke_agent root", "step 0", "chat gpt-4o-mini", "execute_tool tool"])


async def stream(items: Sequence[Any], fail: BaseException | None = None) -> AsyncIterator[Any]:
    for item in items:
        if callable(item):
            await item()
        else:
            yield item
    if fail is not None:
        raise fail


async def drive(wrapped: AsyncIterator[Any]) -> None:
    async for _ in wrapped:
        pass


# --- which runs are kept ---------------------------------------------------------------------
async def test_an_ordinary_run_is_dropped_whole_and_still_measured() -> None:
    rig = Rig(keep_ratio=0.0)
    await drive(rig.wrap()(stream(a_run())))
    assert rig.spans() == []
    assert rig.agent_runs_measured() == 1  # metrics are unaffected
    stats = rig.sampler.stats()
    assert (stats.runs_dropped, stats.spans_dropped, stats.held_spans) == (1, 4, 0)


async def test_keep_ratio_one_keeps_every_run_complete() -> None:
    rig = Rig(keep_ratio=1.0)
    await drive(rig.wrap()(stream(a_run())))
    assert rig.names() == FULL
    assert rig.sampler.stats().runs_kept == 1


async def test_a_run_with_an_error_anywhere_is_kept() -> None:
    rig = Rig(keep_ratio=0.0)
    await drive(rig.wrap()(stream(a_run(extra=[Error(message="tool failed")]))))
    assert rig.names() == FULL  # the error was on the tool span; the whole run is kept


async def test_a_run_that_raised_is_kept() -> None:
    rig = Rig(keep_ratio=0.0)
    with pytest.raises(RuntimeError):
        await drive(rig.wrap()(stream(a_run(), fail=RuntimeError("boom"))))
    assert rig.names() == FULL


async def test_an_interrupted_run_is_kept() -> None:
    rig = Rig(keep_ratio=0.0)
    with pytest.raises(AgentInterruptedError):
        await drive(rig.wrap()(stream(a_run(), fail=AgentInterruptedError(interrupts=[]))))
    assert rig.names() == FULL
    rig = Rig(keep_ratio=0.0, keep_interrupted=False)
    with pytest.raises(AgentInterruptedError):
        await drive(rig.wrap()(stream(a_run(), fail=AgentInterruptedError(interrupts=[]))))
    assert rig.spans() == []


async def test_a_slow_run_is_kept(clock: FakeClock) -> None:
    async def slow() -> None:
        clock.advance(3.0)

    rig = Rig(keep_ratio=0.0, slower_than_s=2.0)
    await drive(rig.wrap()(stream(a_run())))
    assert rig.spans() == []
    await drive(rig.wrap()(stream(a_run(extra=[slow]))))
    assert rig.names() == FULL


@pytest.mark.parametrize(("tokens", "kept"), [(100, False), (101, True)])
async def test_a_run_over_the_token_limit_is_kept(tokens: int, kept: bool) -> None:
    rig = Rig(keep_ratio=0.0, tokens_over=100)
    await drive(rig.wrap()(stream(a_run(tokens=tokens))))
    assert rig.names() == (FULL if kept else [])


@pytest.mark.parametrize(("tokens", "kept"), [(1_000_000, False), (1_000_001, True)])
async def test_a_run_over_the_cost_limit_is_kept(tokens: int, kept: bool) -> None:
    rig = Rig(keep_ratio=0.0, cost_over=0.15)  # gpt-4o-mini: 0.15 USD per million input tokens
    await drive(rig.wrap()(stream(a_run(tokens=tokens))))
    assert rig.names() == (FULL if kept else [])


async def test_the_ratio_decides_whole_runs_by_trace_id() -> None:
    rig = Rig(keep_ratio=0.5)
    for _ in range(200):
        await drive(rig.wrap()(stream(a_run())))
    by_trace: dict[int, list[str]] = {}
    for span in rig.spans():
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span.name)
    assert 60 <= len(by_trace) <= 140  # about half (random trace ids)
    for trace_id, names in by_trace.items():
        assert sorted(names) == FULL  # never a part of a run
        assert (trace_id & (2**64 - 1)) < 2**63


# --- sub-agent runs, foreign spans, late spans --------------------------------------------------
async def test_sub_agent_runs_are_decided_at_the_root() -> None:
    rig = Rig(keep_ratio=0.0)

    async def sub_ok() -> None:
        await drive(rig.wrap("sub")(stream([TextDelta("x")])))

    async def sub_failing() -> None:
        await drive(rig.wrap("sub")(stream([Error(message="sub failed", fatal=True)])))

    await drive(rig.wrap()(stream(a_run(extra=[sub_ok]))))
    assert rig.spans() == []  # the sub-run was not exported alone when it ended
    await drive(rig.wrap()(stream(a_run(extra=[sub_failing]))))
    # The sub-run's error makes its one step, as in collect().
    assert rig.names() == sorted([*FULL, "invoke_agent sub", "step 0"])
    assert rig.sampler.stats().runs_dropped == 1


async def test_spans_outside_runs_pass_straight_through() -> None:
    rig = Rig(keep_ratio=0.0)
    with rig.tracer_provider.get_tracer("app").start_as_current_span("request"):

        async def check() -> None:
            assert rig.spans() == []

        await drive(rig.wrap()(stream(a_run(extra=[check]))))
        assert rig.spans() == []  # the run below the request was dropped
    assert rig.names() == ["request"]


@pytest.mark.parametrize(("ratio", "expected"), [(0.0, []), (1.0, sorted([*FULL, "late"]))])
async def test_a_span_ending_after_its_run_follows_the_decision(
    ratio: float, expected: list[str]
) -> None:
    rig = Rig(keep_ratio=ratio)
    late: list[Any] = []

    async def start_late() -> None:
        late.append(rig.tracer_provider.get_tracer("t").start_span("late"))

    await drive(rig.wrap()(stream(a_run(extra=[start_late]))))
    assert "late" not in rig.names()
    late[0].end()
    assert rig.names() == expected
    assert rig.sampler.stats().held_spans == 0


# --- bounds -------------------------------------------------------------------------------------
def many_tools(n: int) -> list[Any]:
    events: list[Any] = []
    for i in range(n):
        events.append(ToolCall(id=f"t{i}", function=FunctionCall(name="tool", arguments="{}")))
        events.append(ToolResult(tool_call_id=f"t{i}", content="ok"))
    return events


async def test_a_run_too_large_is_exported_as_it_goes_and_counted() -> None:
    rig = Rig(keep_ratio=0.0, max_run_spans=5)
    exported_during: list[int] = []

    async def look() -> None:
        exported_during.append(len(rig.spans()))

    await drive(rig.wrap()(stream([*many_tools(10), look, *many_tools(10)])))
    assert exported_during[0] == 10  # already going out while the run went on
    assert len(rig.spans()) == 22  # 20 tools, the step and the agent: nothing dropped
    stats = rig.sampler.stats()
    assert (stats.runs_overflowed, stats.runs_dropped, stats.spans_dropped) == (1, 0, 0)
    assert stats.held_spans == stats.held_bytes == 0


@pytest.mark.heavy  # waits out snapshot intervals (a second each)
@pytest.mark.parametrize(("ratio", "kept"), [(0.0, []), (1.0, FULL)])
async def test_pending_snapshots_are_not_held_and_never_outgrow_the_buffer(
    ratio: float, kept: list[str]
) -> None:
    """A run open across a few intervals with ``pending_spans``: its snapshots, held, would
    only arrive with its final spans (which supersede them) and, counted against
    ``max_run_spans``, made a run the policy drops outgrow the buffer and go out as it went.
    The run is decided on its own spans (4 here, under the bound of 6), snapshots left out."""
    rig = Rig(keep_ratio=ratio, max_run_spans=6)

    async def wait() -> None:  # three snapshots of the run, step, call and tool at least
        await asyncio.to_thread(time.sleep, 2.3)

    await drive(rig.wrap(pending_spans=1)(stream(a_run(extra=[wait]))))
    assert rig.names() == kept and rig.pending() == []
    stats = rig.sampler.stats()
    assert (stats.runs_overflowed, stats.runs_kept, stats.runs_dropped) == (0, ratio, 1 - ratio)
    assert stats.held_spans == stats.held_bytes == 0


async def test_the_byte_bound_per_run() -> None:
    rig = Rig(keep_ratio=0.0, max_run_bytes=12_000)  # a tool span: about 1.4 kB
    await drive(rig.wrap()(stream(many_tools(2))))
    assert rig.spans() == []  # 4 spans fit
    await drive(rig.wrap()(stream(many_tools(20))))
    assert len(rig.spans()) == 22
    assert rig.sampler.stats().runs_overflowed == 1


async def test_the_total_bound_across_concurrent_runs() -> None:
    rig = Rig(keep_ratio=0.0, max_spans=6)
    held: list[int] = []

    async def interleave() -> None:
        held.append(rig.sampler.stats().held_spans)
        await asyncio.sleep(0)

    def tools(n: int) -> list[Any]:
        return [item for tool in zip(many_tools(n)[::2], many_tools(n)[1::2], [interleave] * n)
                for item in tool]  # fmt: skip

    await asyncio.gather(
        drive(rig.wrap("a")(stream(tools(4)))), drive(rig.wrap("b")(stream(tools(4))))
    )
    assert max(held) <= 6
    stats = rig.sampler.stats()
    assert stats.runs_overflowed >= 1
    assert stats.runs_overflowed + stats.runs_dropped == 2
    assert stats.spans_dropped + len(rig.spans()) == 2 * (4 + 2)  # every span accounted for
    assert stats.held_spans == 0


async def test_shutdown_passes_on_runs_still_going() -> None:
    rig = Rig(keep_ratio=0.0)

    async def stop() -> None:
        rig.sampler.shutdown()

    exporter = rig.exporter
    await drive(rig.wrap()(stream([*many_tools(2), stop])))
    assert len(exporter.get_finished_spans()) == 2  # the two finished tools, not lost


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="keep_ratio"):
        TailSamplingPolicy(keep_ratio=1.5)
    with pytest.raises(ValueError, match="max_spans"):
        TailSamplingPolicy(max_spans=0)


# --- configure() --------------------------------------------------------------------------------
async def test_configure_puts_the_sampler_in_front_of_its_exporters() -> None:
    from agent_otel import configure

    out = io.StringIO()
    telemetry = configure(
        "svc",
        console=True,
        console_stream=out,
        set_global=False,
        tail_sampling=TailSamplingPolicy(keep_ratio=0.0, tokens_over=50),
    )
    try:
        wrap = otel_wrapper(
            agent_name="root",
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
        )
        await drive(wrap(stream(a_run(tokens=10))))
        assert "invoke_agent" not in out.getvalue()
        await drive(wrap(stream(a_run(tokens=60))))
        assert out.getvalue().count("invoke_agent root") == 1
    finally:
        telemetry.shutdown()


@pytest.mark.parametrize("bound", ["max_run_spans", "max_spans"])
async def test_a_run_outgrowing_the_buffer_is_told_the_bound_it_passed_and_its_option(
    bound: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning said only that a run outgrew the buffer: not which bound, nor that the run
    is then kept whatever the policy decides, nor what to raise to sample such runs whole."""
    rig = Rig(keep_ratio=0.0, **{bound: 5})
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        await drive(rig.wrap()(stream(many_tools(10))))
    told = [r.getMessage() for r in caplog.records if "outgrew" in r.getMessage()]
    assert len(told) == 1, caplog.text
    assert f"TailSamplingPolicy({bound}=5)" in told[0], told
    assert f"raise {bound}" in told[0] and "docs/production.md" in told[0], told

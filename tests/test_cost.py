"""Cost per call and per run: provider cost wins, else the price table; unknown models: none."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.metrics.export import NumberDataPoint, Sum
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel.cost import BUNDLED_PRICES, ModelPrice, PriceTable, call_cost, reported_cost
from agent_otel.exporting._console import ConsoleTreeExporter
from agent_otel.testing import InMemoryTelemetry, run_script

MINI = BUNDLED_PRICES.price("gpt-4o-mini")


@dataclass
class ReportedUsage:
    """A provider's usage with its own cost (OpenRouter-style), recognised by its class name."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: Any = None


ReportedUsage.__name__ = ReportedUsage.__qualname__ = "Usage"


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def cost_points(telemetry: InMemoryTelemetry) -> list[NumberDataPoint]:
    data = telemetry.metric_reader.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "agent_otel.client.cost" and isinstance(metric.data, Sum)
        for point in metric.data.data_points
        if isinstance(point, NumberDataPoint)
    ]


def call(model: str, call_id: str, usage: Any) -> list[Any]:
    return [LLMCallStart(model=model, provider="openai", call_id=call_id), TextDelta("x"), usage,
            LLMCallEnd(call_id=call_id, finish_reason="stop")]  # fmt: skip


# --- the table --------------------------------------------------------------------------------
def test_table_finds_exact_names_and_snapshots_only() -> None:
    assert BUNDLED_PRICES.price("gpt-4o-mini") is MINI
    assert BUNDLED_PRICES.price("GPT-4o-mini-2024-07-18") is MINI
    assert BUNDLED_PRICES.price("claude-3-5-haiku-20241022") is BUNDLED_PRICES.price(
        "claude-3-5-haiku"
    )
    for unknown in ("gpt-4o-mini-turbo", "gpt-4", "my-model", "", None, "gpt-4o-mini-2024"):
        assert BUNDLED_PRICES.price(unknown) is None


def test_bundled_table_says_when_and_where_its_prices_come_from() -> None:
    assert BUNDLED_PRICES.date == "2025-06-30"
    assert "pricing" in BUNDLED_PRICES.source
    assert BUNDLED_PRICES.currency == "USD"
    assert len(BUNDLED_PRICES.prices) >= 15


def test_each_token_kind_is_priced_once_at_its_rate() -> None:
    price = ModelPrice(input=2.0, output=10.0, cache_read=0.5, cache_write=3.0, reasoning=20.0)
    counts = {
        "input_tokens": 1000,  # includes 300 cache reads and 100 cache writes
        "cache_read_tokens": 300,
        "cache_creation_tokens": 100,
        "output_tokens": 500,  # includes 200 reasoning tokens
        "reasoning_tokens": 200,
    }
    expected = (600 * 2.0 + 300 * 0.5 + 100 * 3.0 + 300 * 10.0 + 200 * 20.0) / 1e6
    assert price.cost(counts) == pytest.approx(expected)
    # Defaults: cache parts at the input rate, reasoning at the output rate.
    plain = ModelPrice(input=2.0, output=10.0)
    assert plain.cost(counts) == pytest.approx((1000 * 2.0 + 500 * 10.0) / 1e6)
    assert plain.cost({}) is None
    # Cached more than the input (a provider that counts them apart): never negative.
    assert plain.cost({"input_tokens": 10, "cache_read_tokens": 50}) == pytest.approx(20.0 / 1e6)


def test_overrides_add_and_replace_entries() -> None:
    table = BUNDLED_PRICES.with_prices(
        {"my-model": ModelPrice(1.0, 2.0), "gpt-4o": ModelPrice(0, 0)}
    )
    assert table.price("my-model") == ModelPrice(1.0, 2.0)
    assert table.price("gpt-4o") == ModelPrice(0, 0)
    assert table.price("gpt-4o-mini") is MINI
    assert BUNDLED_PRICES.price("my-model") is None  # the bundled table is unchanged
    assert table.date == BUNDLED_PRICES.date and "override" in table.source


def test_provider_cost_wins_and_unknown_models_get_none() -> None:
    counts = {"input_tokens": 1000, "output_tokens": 1000}
    assert call_cost(BUNDLED_PRICES, "gpt-4o-mini", counts, 0.5) == (0.5, "provider")
    assert call_cost(BUNDLED_PRICES, "gpt-4o-mini", counts, None) == (
        pytest.approx((1000 * 0.15 + 1000 * 0.60) / 1e6),
        "local",
    )
    assert call_cost(BUNDLED_PRICES, "nobody-knows", counts, None) is None
    assert call_cost(None, "gpt-4o-mini", counts, None) is None


@given(
    st.one_of(
        st.none(), st.booleans(), st.text(), st.floats(), st.integers(), st.lists(st.integers())
    )
)
def test_hostile_reported_costs_are_ignored(value: Any) -> None:
    found = reported_cost(ReportedUsage(cost=value))
    if type(value) in (int, float) and 0 <= value <= 1e15:  # a real cost (NaN is none)
        assert found == float(value)
    else:
        assert found is None


def test_a_reported_cost_past_a_float_is_ignored() -> None:
    """An int no float holds: ``float()`` raises on it, which must not lose the usage."""
    assert reported_cost(ReportedUsage(cost=10**400)) is None


@pytest.mark.parametrize("price", [1e16, 1e300, float(2**1000)])
def test_a_price_past_any_real_one_is_refused_where_it_is_given(price: Any) -> None:
    """A price a double holds, yet whose product with a call's tokens does not (a typo, a
    unit mixed up), priced every call as infinity; it is a ``ValueError`` like NaN's."""
    with pytest.raises(ValueError, match="at most"):
        ModelPrice(price, 1.0)
    with pytest.raises(ValueError, match="reasoning"):
        ModelPrice(1.0, 1.0, reasoning=price)
    top = ModelPrice(1e15, 1e15)  # the bound itself is a price
    most = {"input_tokens": 2**63 - 1, "output_tokens": 2**63 - 1}
    assert math.isfinite(top.cost(most) or math.inf)


@pytest.mark.parametrize("value", [1e16, 1e300, 1.7e308])
def test_a_reported_cost_past_any_real_one_is_ignored(value: float) -> None:
    assert reported_cost(ReportedUsage(cost=value)) is None
    assert reported_cost(ReportedUsage(cost=1e15)) == 1e15


async def test_costs_stay_finite_on_every_span_total_and_point(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two reported costs a double holds but not their sum: the step and run totals were
    ``inf`` and the counter dropped the points (the SDK warns of each); such a cost is none,
    so the table prices the call, as for any cost that is no cost."""
    events = [
        *call(
            "gpt-4o-mini", "c1", ReportedUsage(input_tokens=1000, output_tokens=200, cost=1.5e308)
        ),
        *call(
            "gpt-4o-mini", "c2", ReportedUsage(input_tokens=1000, output_tokens=200, cost=1.5e308)
        ),
    ]
    await run_script(otel_telemetry, events, agent_name="a")
    amounts = [
        value
        for span in otel_telemetry.spans()
        for key, value in attrs(span).items()
        if key.endswith("cost.amount")
    ]
    assert len(amounts) == 4  # two calls, their step, the run
    assert all(isinstance(v, float) and math.isfinite(v) for v in amounts), amounts
    agent = attrs(otel_telemetry.by_name()["invoke_agent a"][0])
    assert agent["agent_otel.usage.cost.amount"] == pytest.approx(2 * C1)
    assert sum(p.value for p in cost_points(otel_telemetry)) == pytest.approx(2 * C1)


# --- on spans, totals and the metric -------------------------------------------------------------
RUN = [
    *call("gpt-4o-mini", "c1", Usage(input_tokens=1000, output_tokens=200)),
    ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
    ToolResult(tool_call_id="t1", content="ok"),
    StepBoundary(),
    *call("gpt-4o-mini", "c2", ReportedUsage(input_tokens=10, output_tokens=10, cost=0.25)),
    *call("local-llama", "c3", Usage(input_tokens=50, output_tokens=5)),
    StepBoundary(),
]
C1 = (1000 * 0.15 + 200 * 0.60) / 1e6


async def test_cost_on_chat_spans_totals_on_step_and_run(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, RUN, agent_name="a")
    spans = otel_telemetry.by_name()
    c1, c2 = spans["chat gpt-4o-mini"]
    assert attrs(c1)["gen_ai.usage.cost.amount"] == pytest.approx(C1)
    assert attrs(c1)["gen_ai.usage.cost.source"] == "local"
    assert attrs(c1)["gen_ai.usage.cost.currency"] == "USD"
    assert attrs(c2)["gen_ai.usage.cost.amount"] == 0.25
    assert attrs(c2)["gen_ai.usage.cost.source"] == "provider"
    unknown = attrs(spans["chat local-llama"][0])
    assert not [k for k in unknown if "cost" in k]  # unknown model: no cost, not zero
    step0, step1 = spans["step 0"][0], spans["step 1"][0]
    assert attrs(step0)["agent_otel.usage.cost.amount"] == pytest.approx(C1)
    assert attrs(step1)["agent_otel.usage.cost.amount"] == pytest.approx(0.25)
    agent = attrs(spans["invoke_agent a"][0])
    assert agent["agent_otel.usage.cost.amount"] == pytest.approx(C1 + 0.25)
    assert agent["agent_otel.usage.cost.currency"] == "USD"
    # Never counted twice: only chat spans carry the gen_ai cost, and they sum to the run total.
    carriers = [s for s in otel_telemetry.spans() if "gen_ai.usage.cost.amount" in attrs(s)]
    assert {s.name for s in carriers} == {"chat gpt-4o-mini"}
    assert sum(attrs(s)["gen_ai.usage.cost.amount"] for s in carriers) == pytest.approx(
        agent["agent_otel.usage.cost.amount"]
    )
    assert not [k for s in spans["execute_tool search"] for k in attrs(s) if "cost" in k]


async def test_cost_counter_sums_the_calls_with_low_cardinality_attributes(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(
        otel_telemetry, RUN, agent_name="a", session_id="s-1", user_id="u-1", conversation_id="c-1"
    )
    points = cost_points(otel_telemetry)
    assert sum(p.value for p in points) == pytest.approx(C1 + 0.25)
    allowed = {
        "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
        "gen_ai.response.model", "error.type", "gen_ai.usage.cost.currency",
        "gen_ai.usage.cost.source",
    }  # fmt: skip
    sources = set()
    for point in points:
        attributes = dict(point.attributes or {})
        assert set(attributes) <= allowed
        assert not {"s-1", "u-1", "c-1", "c1", "c2"} & set(map(str, attributes.values()))
        sources.add(attributes["gen_ai.usage.cost.source"])
    assert sources == {"local", "provider"}


async def test_usage_after_the_call_end_is_still_priced(otel_telemetry: InMemoryTelemetry) -> None:
    events = [
        LLMCallStart(model="gpt-4o-mini", call_id="c1"),
        LLMCallEnd(call_id="c1"),
        Usage(input_tokens=1000, output_tokens=200),
    ]
    await run_script(otel_telemetry, events, agent_name="a")
    spans = otel_telemetry.by_name()
    assert attrs(spans["chat gpt-4o-mini"][0])["gen_ai.usage.cost.amount"] == pytest.approx(C1)
    assert attrs(spans["invoke_agent a"][0])["agent_otel.usage.cost.amount"] == pytest.approx(C1)


async def test_user_table_and_no_table(otel_telemetry: InMemoryTelemetry) -> None:
    mine = PriceTable({"local-llama": ModelPrice(1.0, 1.0)}, currency="EUR")
    await run_script(otel_telemetry, RUN, agent_name="a", prices=mine)
    spans = otel_telemetry.by_name()
    llama = attrs(spans["chat local-llama"][0])
    assert llama["gen_ai.usage.cost.amount"] == pytest.approx(55 / 1e6)
    assert llama["gen_ai.usage.cost.currency"] == "EUR"
    assert "gen_ai.usage.cost.amount" not in attrs(spans["chat gpt-4o-mini"][0])  # not in mine
    otel_telemetry.clear()
    await run_script(otel_telemetry, RUN[:4], agent_name="a", prices=None)
    assert not [k for s in otel_telemetry.spans() for k in attrs(s) if "cost" in k]


async def test_a_run_without_priced_calls_has_no_cost_total(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(
        otel_telemetry,
        call("local-llama", "c", Usage(input_tokens=1, output_tokens=1)),
        agent_name="a",
    )
    assert not [k for s in otel_telemetry.spans() for k in attrs(s) if "cost" in k]
    assert cost_points(otel_telemetry) == []


async def test_terminal_summary_shows_cost_per_model() -> None:
    telemetry = InMemoryTelemetry()
    out = io.StringIO()
    console = ConsoleTreeExporter(out, color=False, width=100)
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(console))
    await run_script(telemetry, RUN, agent_name="a")
    console.shutdown()
    telemetry.shutdown()
    summary = out.getvalue().split("token usage")[1].splitlines()
    rows = {line.split()[0]: line.split() for line in summary[1:] if line.strip()}
    assert summary[0].split() == ["calls", "input", "output", "cost"]
    assert rows["gpt-4o-mini"][1:] == ["2", "1,010", "210", f"{C1 + 0.25:.6f}", "USD"]
    assert rows["local-llama"][1:] == ["1", "50", "5", "-"]
    assert rows["total"][-2:] == [f"{C1 + 0.25:.6f}", "USD"]


def test_long_model_names_made_on_the_fly_do_not_pile_up() -> None:
    """The table remembers each model name it was asked (1,024 at most): a server answering
    every call with a model name of its own making, each as long as a run writes one (256
    KiB), kept up to a quarter of a GiB alive in the table shared by every run."""
    import gc
    import tracemalloc

    table = PriceTable({"m": ModelPrice(1.0, 1.0)})
    assert table.price("m") == ModelPrice(1.0, 1.0)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(200):
            assert table.price(f"{n:08d}" + "x" * 64 * 1024) is None
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1024 * 1024, kept  # 200 names of 64 KiB would be 12.5 MiB
    assert table.price("M") == ModelPrice(1.0, 1.0)  # short names are still found

"""Token counts that are no count are dropped and counted, like every other repair.

A ``Usage`` or ``RunUsage`` field holding a negative number, a float (NaN, infinity, 3.0), a
bool or a string is not recorded (no ``gen_ai.usage.*`` attribute, no metric point, no
total) and each such field counts once as ``invalid_token_count`` under
``agent_otel.anomalies``; one past signed 64 bits counts as ``integer_out_of_range``. Valid
counts, and ``None`` (not reported), count nothing.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.agent import RunUsage
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage
from agent_otel.testing import InMemoryTelemetry, run_script

FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)

INVALID = st.one_of(
    st.integers(max_value=-1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=5),
    st.sampled_from([math.nan, -0.0, 3.0, "12", b"7"]),
)
HUGE = st.integers(min_value=2**63)
VALID = st.integers(min_value=0, max_value=2**63 - 1)
VALUE = st.one_of(st.none(), VALID, INVALID, HUGE)


def _kind(value: Any) -> str | None:
    """The anomaly a field's value counts as, None for a count or for not reported."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "invalid_token_count"
    return "integer_out_of_range" if value >= 2**63 else None


def _anomalies(telemetry: InMemoryTelemetry) -> list[str]:
    root = _root(telemetry)
    return [
        str((e.attributes or {})["kind"]) for e in root.events if e.name == "agent_otel.anomaly"
    ]


def _root(telemetry: InMemoryTelemetry) -> ReadableSpan:
    (root,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return root


def _run(events: list[Any]) -> InMemoryTelemetry:
    telemetry = InMemoryTelemetry()
    asyncio.run(run_script(telemetry, events, agent_name="counts"))
    return telemetry


@settings(max_examples=80, deadline=None)
@given(st.fixed_dictionaries(dict.fromkeys(FIELDS, VALUE)))
def test_each_usage_field_that_is_no_count_is_dropped_and_counted(values: dict[str, Any]) -> None:
    usage = Usage(**values)
    telemetry = _run([LLMCallStart(model="m", call_id="c"), usage, LLMCallEnd(call_id="c")])
    expected = sorted(k for k in map(_kind, values.values()) if k is not None)
    assert sorted(_anomalies(telemetry)) == expected
    attributes = _root(telemetry).attributes or {}
    assert attributes.get("agent_otel.anomalies", 0) == len(expected)
    for name, value in values.items():  # the run's totals: each valid count, nothing else
        recorded = attributes.get(f"agent_otel.usage.{name}")
        assert recorded == (value if value is not None and _kind(value) is None else None)


@settings(max_examples=40, deadline=None)
@given(INVALID, INVALID)
def test_run_usage_that_is_no_count_is_counted(input_tokens: Any, output_tokens: Any) -> None:
    event = RunUsage.model_construct(input_tokens=input_tokens, output_tokens=output_tokens)
    telemetry = _run([event])
    assert _anomalies(telemetry) == ["invalid_token_count"] * 2


def test_valid_and_unreported_counts_count_nothing() -> None:
    usage = Usage(input_tokens=0, output_tokens=2**63 - 1, total_tokens=None)
    telemetry = _run([LLMCallStart(model="m", call_id="c"), usage, LLMCallEnd(call_id="c")])
    assert _anomalies(telemetry) == []
    assert (telemetry.span("chat m").attributes or {})["gen_ai.usage.input_tokens"] == 0


NEAR_LIMIT = st.one_of(VALID, HUGE, st.sampled_from([2**62, 2**63 - 1, 2**63, 2**64]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.fixed_dictionaries(dict.fromkeys(FIELDS, st.none() | NEAR_LIMIT)), max_size=3))
def test_invoke_usage_and_the_runs_totals_agree_past_64_bits(counts: list[dict[str, Any]]) -> None:
    """``InvokeResult.usage`` and the run's totals on the trace follow one rule: a count past
    signed 64 bits is not summed, and a sum past it is not reported (None, no attribute)."""
    telemetry = InMemoryTelemetry()
    agent = ScriptedAgent([Usage(**c) for c in counts])
    result = asyncio.run(agent.invoke([], stream_wrapper=telemetry.wrapper(agent_name="counts")))
    attributes = _root(telemetry).attributes or {}
    for name in FIELDS:
        told = result.usage and getattr(result.usage, name)
        assert told == attributes.get(f"agent_otel.usage.{name}"), name

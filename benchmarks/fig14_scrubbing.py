"""Figure 14: what the default scrubber costs.

Events without content: one run of R agent turns (an LLM call with 20 text deltas, usage,
a tool call and its result, a step boundary; capture off, no error), CPU per event with the
default scrubber against ``scrub=False``, interleaved in the same run: the ratio is what
scrubbing adds where it must add nothing measurable. Content: the scrubber alone on text of
growing size (plain prose; JSON tool output whose keys say "token" and "key", which wakes the
key=value detector; the same with a credential every KiB), CPU per KiB, and how that moves
when the text grows sixteen-fold (linear: about 1). End to end, a capture-on run whose tool
results hold 8 KiB of JSON, CPU per call with and without scrubbing.
"""

from __future__ import annotations

import json
import random
import string
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

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
from agent_otel import Scrubber, otel_wrapper

from ._harness import Row, Stat, interleave, ratio
from ._setup import Sdk

_RNG = random.Random(14)
_WORDS = ("the", "agent", "plans", "a", "step", "then", "calls", "a", "tool", "and", "reads")


def turn_events(turns: int, content: Any = None) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out.append(LLMCallStart(model="gpt-4o-mini", provider="openai", call_id=f"c{i}"))
        out.extend(TextDelta(f"word{j} ") for j in range(20))
        out.append(LLMCallEnd(call_id=f"c{i}", finish_reason="tool_calls", response_id=f"r{i}"))
        out.append(Usage(input_tokens=120, output_tokens=20))
        call = FunctionCall(name="get_weather", arguments='{"city": "Paris"}')
        out.append(ToolCall(id=f"t{i}", function=call))
        out.append(ToolResult(tool_call_id=f"t{i}", content=content or "18 degrees"))
        out.append(StepBoundary(index=i))
    return out


def prose(kib: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < kib * 1024:
        words.append(_RNG.choice(_WORDS))
    return " ".join(words)[: kib * 1024]


def tool_json(kib: int, secrets: bool = False) -> str:
    rows: list[dict[str, Any]] = []
    text = "[]"
    while len(text) < kib * 1024:
        row: dict[str, Any] = {"id": len(rows), "name": _RNG.choice(_WORDS), "token_count": 17}
        row["key"] = "".join(_RNG.choice(string.ascii_lowercase) for _ in range(8))
        if secrets and len(rows) % 12 == 0:  # about one per KiB
            row["note"] = "use " + "gh" + "p_" + "".join(_RNG.choices(string.ascii_letters, k=36))
        rows.append(row)
        text = json.dumps(rows)
    return text[: kib * 1024]


async def _agent(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


def _per_event(wrap: Callable[[Any], Any], events: list[Any], per: int) -> Callable[[], Any]:
    async def once() -> float:
        start = time.process_time_ns()
        async for _ in wrap(_agent(events)):
            pass
        return (time.process_time_ns() - start) / per / 1000

    return once


def _per_kib(text: str, repeats: int) -> Callable[[], Any]:
    scrubber, kib = Scrubber(), len(text) / 1024

    async def once() -> float:
        start = time.process_time_ns()
        for _ in range(repeats):
            scrubber.text(text)
        return (time.process_time_ns() - start) / repeats / kib / 1000

    return once


async def run(quick: bool) -> list[Row]:
    turns, rounds, repeats = (2, 2, 1) if quick else (100, 9, 20)
    sdk = Sdk(keep_spans=False)
    common = {"tracer_provider": sdk.tracer_provider, "meter_provider": sdk.meter_provider}
    plain = turn_events(turns)
    rich = turn_events(max(turns // 5, 1), tool_json(8))
    per_turn = len(rich) // 25
    configs: dict[str, Any] = {
        "events:on": _per_event(otel_wrapper(**common), plain, len(plain)),
        "events:off": _per_event(otel_wrapper(scrub=False, **common), plain, len(plain)),
        "content:on": _per_event(otel_wrapper(capture_content=True, **common), rich, per_turn),
        "content:off": _per_event(
            otel_wrapper(capture_content=True, scrub=False, **common), rich, per_turn
        ),
    }
    texts = {
        "prose": prose,
        "tool JSON": tool_json,
        "tool JSON, a credential per KiB": lambda k: tool_json(k, secrets=True),
    }
    for name, make in texts.items():
        for kib in (4, 64):
            configs[f"{name}:{kib}"] = _per_kib(make(kib), max(repeats * 4 // kib, 1))
    results = await interleave(configs, rounds)
    if sdk.span_count() == 0:
        raise AssertionError("figure 14: nothing was exported")
    fig = "14 scrubbing"
    rows = [
        Row(fig, f"events without content: {label}, CPU per event", Stat.of(results[key]), "us")
        for label, key in (("scrub off", "events:off"), ("scrub on (default)", "events:on"))
    ]
    same = ratio(results, "events:on", "events:off")
    row = Row(fig, "events without content: on / off", same, "x", "<= 1.05")
    row.met = same.median <= 1.05
    rows.append(row)
    for name in texts:
        rows.append(Row(fig, f"{name}, 64 KiB: CPU per KiB", Stat.of(results[f"{name}:64"]), "us"))
        growth = ratio(results, f"{name}:64", f"{name}:4")
        row = Row(fig, f"{name}: per-KiB cost at 64 KiB / at 4 KiB", growth, "x", "<= 1.5")
        row.met = growth.median <= 1.5
        rows.append(row)
    end_to_end = "8 KiB tool result, capture on"
    rows += [
        Row(fig, f"{end_to_end}: {label}, CPU per turn", Stat.of(results[key]), "us")
        for label, key in (("scrub off", "content:off"), ("scrub on", "content:on"))
    ]
    rows.append(
        Row(fig, f"{end_to_end}: on / off", ratio(results, "content:on", "content:off"), "x")
    )
    sdk.shutdown()
    return rows

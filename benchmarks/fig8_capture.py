"""Figure 8: content capture on versus off for large values, as the value grows ten-fold.

Per size, one run streams R tool calls whose ``ToolResult.content`` is a list of N floats (an
embedding: 3k / 30k / 300k), or R LLM calls whose ``LLMCallStart.messages`` is a history of M
messages (2k / 20k, as agents resend it on every call). The figure is CPU per event pair with
capture on (the default 32 KiB budget) over the same with capture off, per round; then how that
ratio moves when the value grows ten-fold (flat: about 1). Bounding content costs what the
budget can show, not what the value holds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ToolCall,
    ToolResult,
)
from agent_otel import otel_wrapper

from ._harness import Row, Stat, interleave, ratio
from ._setup import Sdk

EMBEDDINGS = (3_000, 30_000, 300_000)
HISTORIES = (2_000, 20_000)


def embedding_events(n: int, repeats: int) -> list[Any]:
    vector = [i / n for i in range(n)]
    out: list[Any] = []
    for i in range(repeats):
        out.append(ToolCall(id=f"t{i}", function=FunctionCall(name="embed", arguments="{}")))
        out.append(ToolResult(tool_call_id=f"t{i}", content=vector))
    return out


def history_events(m: int, repeats: int) -> list[Any]:
    history = [
        Message(role="user" if i % 2 else "assistant", content=f"turn {i}: some words here")
        for i in range(m)
    ]
    out: list[Any] = []
    for i in range(repeats):
        out.append(LLMCallStart(model="m", call_id=f"c{i}", messages=history))
        out.append(LLMCallEnd(call_id=f"c{i}"))
    return out


async def _agent(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


def _measure(wrap: Callable[[Any], Any], events: list[Any]) -> Callable[[], Any]:
    async def once() -> float:
        start = time.process_time_ns()
        async for _ in wrap(_agent(events)):
            pass
        return (time.process_time_ns() - start) / (len(events) // 2) / 1000

    return once


async def run(quick: bool) -> list[Row]:
    repeats, rounds = (2, 2) if quick else (10, 7)
    sdk = Sdk(keep_spans=False)
    common = {"tracer_provider": sdk.tracer_provider, "meter_provider": sdk.meter_provider}
    on, off = otel_wrapper(capture_content=True, **common), otel_wrapper(**common)
    sizes: list[tuple[str, int, list[Any]]] = [
        *(("floats", n, embedding_events(n, repeats)) for n in EMBEDDINGS),
        *(("messages", m, history_events(m, repeats)) for m in HISTORIES),
    ]
    configs = {}
    for kind, size, events in sizes:
        configs[f"{kind}{size}:on"] = _measure(on, events)
        configs[f"{kind}{size}:off"] = _measure(off, events)
    results = await interleave(configs, rounds)
    if sdk.span_count() == 0:
        raise AssertionError("figure 8: nothing was exported")
    fig, rows = "8 capture on/off", []
    for kind, size, _ in sizes:
        event = "ToolResult of" if kind == "floats" else "LLMCallStart with"
        key = f"{kind}{size}"
        rows.append(
            Row(
                fig,
                f"{event} {size:,} {kind}: capture off, CPU per call",
                Stat.of(results[f"{key}:off"]),
                "us",
            )
        )
        rows.append(
            Row(
                fig,
                f"{event} {size:,} {kind}: capture on, CPU per call",
                Stat.of(results[f"{key}:on"]),
                "us",
            )
        )
        rows.append(Row(fig, f"{event} {size:,} {kind}: on / off", ratio(results, f"{key}:on",
                        f"{key}:off"), "x"))  # fmt: skip
    for kind, small, large in (
        ("floats", 3_000, 30_000),
        ("floats", 30_000, 300_000),
        ("messages", 2_000, 20_000),
    ):
        growth = Stat.of(
            [
                (a_on / a_off) / (b_on / b_off)
                for a_on, a_off, b_on, b_off in zip(
                    results[f"{kind}{large}:on"],
                    results[f"{kind}{large}:off"],
                    results[f"{kind}{small}:on"],
                    results[f"{kind}{small}:off"],
                    strict=True,
                )
            ]
        )
        row = Row(fig, f"on/off ratio at {large:,} {kind} / at {small:,}", growth, "x", "<= 1.5")
        row.met = growth.median <= 1.5
        rows.append(row)
    sdk.shutdown()
    return rows

"""What an adapter's ``LLMCallStart.messages`` costs per model call, read or not.

    python -m benchmarks.request_messages

A LangGraph run's model request is a LangChain history (a system prompt, the question, then
an assistant message with a tool call and its tool result per earlier step). Per model call,
CPU (``process_time``), median of interleaved rounds, for histories of 2 to 50 messages:

* **read**: ``langchain_messages(history)``, what reading the request as contract messages
  costs (an adapter that built them eagerly would pay it on every call, capture on or off);
* **lazy, not read**: ``call_start(...)`` with a copy of the list, what the adapter pays when
  nobody reads the messages (agent-otel with content capture off);
* **a one-call run**: a run of one model call (start, a text delta, usage, end: the
  ``invoke_agent``, step and chat spans) through ``otel_wrapper()`` with capture off, for
  scale.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_contract.protocol import LLMCallEnd, StepBoundary, TextDelta, Usage
from agent_contract.sources._history import call_start, langchain_messages
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

SIZES, LOOPS, ROUNDS = (2, 10, 50), 500, 9


def history(size: int) -> list[Any]:
    """A LangChain history of ``size`` messages: system, question, then call/result pairs."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = [SystemMessage("Be brief."), HumanMessage("Weather in Paris?")]
    for i in range((size - 2) // 2):
        call = {"name": "weather", "args": {"city": "Paris"}, "id": f"call_{i}"}
        out += [
            AIMessage("Checking.", tool_calls=[call]),
            ToolMessage("sunny", tool_call_id=f"call_{i}"),
        ]
    return out


def _per_call(work: Callable[[], object]) -> float:
    start = time.process_time()
    for _ in range(LOOPS):
        work()
    return (time.process_time() - start) / LOOPS * 1e6


def _chat_span() -> Callable[[], object]:
    telemetry = InMemoryTelemetry()
    wrapper = otel_wrapper(agent_name="agent", tracer_provider=telemetry.tracer_provider,
                           meter_provider=telemetry.meter_provider)  # fmt: skip
    messages = tuple(history(10))

    async def events() -> AsyncIterator[Any]:
        yield call_start("gpt-4o-mini", "openai", {"stream": True}, langchain_messages, messages)
        yield TextDelta("Sunny.")
        yield Usage(input_tokens=120, output_tokens=3)
        yield LLMCallEnd(model="gpt-4o-mini", finish_reason="stop")
        yield StepBoundary(0)

    async def runs() -> None:
        for _ in range(LOOPS):
            [_ async for _ in wrapper(events())]
        telemetry.clear()

    return lambda: asyncio.run(runs())


def main() -> None:
    print(
        "| history | read as messages, µs/call | lazy, not read, µs/call | read / a one-call run |"
    )
    print("|---:|---:|---:|---:|")
    span = _chat_span()
    chat: list[float] = []
    rows: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in SIZES}
    for _ in range(ROUNDS):
        start = time.process_time()
        span()
        chat.append((time.process_time() - start) / LOOPS * 1e6)
        for size in SIZES:
            messages = history(size)
            read = lambda m=messages: langchain_messages(m)  # noqa: E731
            lazy = lambda m=messages: call_start("m", "openai", {}, langchain_messages, tuple(m))  # noqa: E731
            rows[size][0].append(_per_call(read))
            rows[size][1].append(_per_call(lazy))
    one = statistics.median(chat)
    for size, (read, lazy) in rows.items():
        cost = statistics.median(read)
        print(
            f"| {size} messages | {cost:.1f} | {statistics.median(lazy):.2f} | {cost / one:.2f} |"
        )
    print(f"\nA run of one model call through otel_wrapper(), capture off: {one:.0f} µs (median).")


if __name__ == "__main__":
    main()

"""Pending spans (option ``pending_spans``): open runs shown while they run.

At start and then every interval, one zero-duration child per span still open, marked
``agent_otel.pending``, with the open span's name and attributes so far and no usage; the
thread that writes them ends with the last watched run and does not survive a fork.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

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
from agent_otel import _attributes as A
from agent_otel.recording import _open, _pending
from agent_otel.testing import InMemoryTelemetry, run_script


def pending_thread() -> threading.Thread | None:
    return next((t for t in threading.enumerate() if t.name == "agent-otel-pending"), None)


def wait_for(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_off_by_default_no_snapshot_no_thread() -> None:
    telemetry = InMemoryTelemetry()
    asyncio.run(run_script(telemetry, [TextDelta(text="hi")]))
    assert telemetry.pending() == []
    assert pending_thread() is None


@pytest.mark.parametrize("bad", [0, 0.5, -1, float("nan"), float("inf"), "10"])
def test_bad_intervals_raise(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        InMemoryTelemetry().wrapper(pending_spans=bad)


def test_true_is_the_default_interval() -> None:
    assert _pending.interval_from(True) == _pending.DEFAULT_INTERVAL
    assert _pending.interval_from(False) is None
    assert _pending.interval_from(2) == 2.0


@pytest.mark.heavy  # waits out snapshot intervals (a second each)
def test_a_run_is_shown_at_start_and_its_open_spans_every_interval() -> None:
    """An agent stuck inside a tool: its run, step, call and tool are shown while it waits;
    after the end each snapshot sits under the span it describes, and the totals count each
    call once."""
    telemetry = InMemoryTelemetry()
    seen: dict[str, Any] = {}

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", messages=[])
        yield TextDelta(text="let me look")
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        yield LLMCallEnd(call_id="c1", finish_reason="tool_calls")
        yield Usage(input_tokens=10, output_tokens=5)
        yield LLMCallStart(model="m", call_id="c2", messages=[])  # open while the tool runs
        # the run waits: the start snapshot and at least one interval's are exported meanwhile
        seen["at_start"] = len(telemetry.pending())
        await asyncio.to_thread(wait_for, lambda: len(telemetry.pending()) >= 6)
        seen["while_open"] = [
            (s.name, s.parent.span_id if s.parent else None) for s in telemetry.pending()
        ]
        seen["finals_while_open"] = list(telemetry.by_name())
        yield LLMCallEnd(call_id="c2", finish_reason="stop")
        yield Usage(input_tokens=20, output_tokens=7)
        yield ToolResult(tool_call_id="t1", content="found")
        yield StepBoundary()

    asyncio.run(run_script(telemetry, agent(), agent_name="a", pending_spans=1))
    assert seen["at_start"] == 1  # the run, at its start
    snapshots = telemetry.pending()
    spans = {s.context.span_id: s for same in telemetry.by_name().values() for s in same}
    names = {name for name, _ in seen["while_open"]}
    assert {"invoke_agent a", "chat m", "execute_tool search"} <= names
    assert any(name.startswith("step") for name in names)
    # the open ones were not exported yet; the pending ones were
    assert "invoke_agent a" not in seen["finals_while_open"]
    for snap in snapshots:
        parent = spans[snap.parent.span_id]  # every snapshot sits under its span
        assert snap.name == parent.name
        assert snap.start_time == snap.end_time  # zero duration
        assert parent.start_time <= snap.start_time <= parent.end_time
        usage = ("gen_ai.usage.", "agent_otel.usage.")
        assert not any(k.startswith(usage) for k in snap.attributes)
        assert set(snap.attributes) - {A.PENDING} <= set(parent.attributes)
    # one snapshot per open span per interval: never two for one span at one tick
    ticks = [(s.parent.span_id, s.start_time) for s in snapshots]
    assert len(ticks) == len(set(ticks))
    run = telemetry.span("invoke_agent a")
    assert run.attributes[A.USAGE_INPUT_TOTAL] == 30  # counted once
    usage = [
        s.attributes.get(A.USAGE_INPUT_TOKENS, 0) for s in telemetry.spans() if s.name == "chat m"
    ]
    assert sum(usage) == 30
    wait_for(lambda: pending_thread() is None)  # the thread ended with the run


def test_the_thread_serves_every_run_and_ends_with_the_last() -> None:
    telemetry = InMemoryTelemetry()
    gate = asyncio.Event

    async def both() -> None:
        first_open, second_open = gate(), gate()

        async def agent(opened: asyncio.Event, until: asyncio.Event) -> AsyncIterator[Any]:
            yield TextDelta(text="x")
            opened.set()
            await until.wait()
            yield TextDelta(text="y")

        done_first = gate()
        first = asyncio.create_task(
            run_script(telemetry, agent(first_open, done_first), pending_spans=1)
        )
        done_second = gate()
        second = asyncio.create_task(
            run_script(telemetry, agent(second_open, done_second), pending_spans=5)
        )
        await first_open.wait()
        await second_open.wait()
        threads = [t for t in threading.enumerate() if t.name == "agent-otel-pending"]
        assert len(threads) == 1
        done_first.set()
        await first
        assert pending_thread() is not None  # the second run is still watched
        done_second.set()
        await second

    asyncio.run(both())
    wait_for(lambda: pending_thread() is None)
    assert len(telemetry.pending()) >= 2  # both runs were shown at start


@pytest.mark.internal_errors
def test_a_failing_snapshot_is_reported_and_swallowed() -> None:
    class Broken:
        s = type("S", (), {"tracer": None, "pending_interval": 1.0})()

        def open_spans(self) -> list[Any]:
            raise RuntimeError("broken")

        def now(self) -> int:
            return 0

    assert _pending.snapshot(Broken()) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_show_its_parents_runs() -> None:
    telemetry = InMemoryTelemetry()
    result: dict[str, Any] = {}

    async def agent() -> AsyncIterator[Any]:
        yield TextDelta(text="x")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its copy of the parent's run is not watched
            ok = not _pending._watched and _pending._thread is None
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
        os.close(write)
        result["child"] = os.read(read, 1)
        os.close(read)
        os.waitpid(pid, 0)  # noqa: ASYNC222 (the child exits at once)
        yield TextDelta(text="y")

    asyncio.run(run_script(telemetry, agent(), pending_spans=1))
    assert result["child"] == b"1"
    assert _open.open_count() == 0


@pytest.mark.parametrize("ending", ["error", "cancel", "shutdown"])
def test_every_ending_stops_the_snapshots(ending: str) -> None:
    """A run that fails, is cancelled or is ended by a shutdown is no longer watched, and the
    thread ends with it."""
    telemetry = InMemoryTelemetry()

    class Boom(Exception):
        pass

    async def agent() -> AsyncIterator[Any]:
        yield TextDelta(text="x")
        if ending == "error":
            raise Boom
        if ending == "shutdown":
            ended = _open.end_runs(lambda _span: True)
            assert ended == 1
            assert not _pending._watched
        await asyncio.sleep(30)  # cancelled below, or past the shutdown
        yield TextDelta(text="never")

    async def main() -> None:
        task = asyncio.create_task(run_script(telemetry, agent(), pending_spans=1))
        if ending == "cancel":
            await asyncio.sleep(0.2)
            task.cancel()
        elif ending == "shutdown":
            await asyncio.sleep(0.2)
            task.cancel()  # the agent itself is still waiting
        with pytest.raises((Boom, asyncio.CancelledError)):
            await task

    asyncio.run(main())
    assert not _pending._watched
    wait_for(lambda: pending_thread() is None)
    assert _open.open_count() == 0
    assert len(telemetry.pending()) >= 1  # it was shown at start


def _recorder(agent_name: str) -> Any:
    """The open run of that agent (what the snapshot thread reads)."""
    [run] = [r for r in _open._OPEN.values() if r.s.agent_name == agent_name]
    return run


@pytest.mark.parametrize("usage_late", [False, True], ids=["usage_at_end", "usage_late"])
@pytest.mark.parametrize("capture", [True, False], ids=["capture_on", "capture_off"])
def test_a_call_that_ended_is_not_shown_open_while_the_run_holds_it(
    capture: bool, usage_late: bool
) -> None:
    """A framework tells the tool calls its model asked for after the response's end, and
    its usage may come later still: the run holds the chat span for them (with capture on,
    its output message gets every tool call). A snapshot taken meanwhile shows the tools,
    not the call, which ended; nor a step past its boundary. Each snapshot sits within the
    span it describes."""
    telemetry = InMemoryTelemetry()
    name = f"held-{capture}-{usage_late}"
    seen: dict[str, Any] = {}

    def look(at: str) -> None:
        before = len(telemetry.pending())
        _pending.snapshot(_recorder(name))
        seen[at] = (
            sorted(telemetry.open_spans()),
            sorted(s.name for s in telemetry.pending()[before:]),
        )

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", messages=[{"role": "user", "content": "q"}])
        yield TextDelta(text="let me look")
        yield LLMCallEnd(call_id="c1", finish_reason="tool_calls")
        if not usage_late:
            yield Usage(input_tokens=10, output_tokens=5)
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        look("tool running")
        yield ToolCall(id="t2", function=FunctionCall(name="fetch", arguments="{}"))
        if usage_late:
            yield Usage(input_tokens=10, output_tokens=5)
        yield ToolResult(tool_call_id="t1", content="found")
        yield ToolResult(tool_call_id="t2", content="fetched")
        yield StepBoundary()
        look("between steps")
        yield LLMCallStart(model="m", call_id="c2", messages=[])
        yield TextDelta(text="done")
        yield LLMCallEnd(call_id="c2", finish_reason="stop")
        yield Usage(input_tokens=20, output_tokens=7)

    asyncio.run(
        run_script(telemetry, agent(), agent_name=name, pending_spans=True, capture_content=capture)
    )
    root, step = f"invoke_agent {name}", "step 0"
    open_then = sorted([root, step, "execute_tool search"])
    assert seen["tool running"] == (open_then, open_then)  # no "chat m": it ended
    assert seen["between steps"] == ([root], [root])  # step 0 ended at its boundary
    finals = {s.context.span_id: s for same in telemetry.by_name().values() for s in same}
    for snap in telemetry.pending():
        parent = finals[snap.parent.span_id]
        assert parent.start_time <= snap.start_time <= parent.end_time
    first = telemetry.by_name()["chat m"][0]
    assert first.attributes[A.USAGE_INPUT_TOKENS] == 10  # the held span still got its usage
    if capture:  # and every tool call its model asked for
        [message] = json.loads(first.attributes[A.OUTPUT_MESSAGES])
        calls = [p["id"] for p in message["parts"] if p["type"] == "tool_call"]
        assert calls == ["t1", "t2"]
    else:
        assert A.OUTPUT_MESSAGES not in first.attributes
    assert telemetry.open_spans() == []


@pytest.mark.heavy  # waits out snapshot intervals (a second each)
def test_a_provider_shut_down_under_an_open_run_ends_its_snapshots(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An application that shuts its provider down without ending its runs first (as
    ``end_open_runs`` asks) while one still runs: the SDK drops each span started there with
    a warning, so snapshots every interval for the rest of the run would be a warning each,
    per open span. The run is no longer watched (its end tells the loss once) and the thread
    ends."""
    telemetry = InMemoryTelemetry()
    shut, done = threading.Event(), threading.Event()

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c", messages=[])
        shut.set()
        await asyncio.to_thread(done.wait, 30)  # released by the test's own thread
        yield LLMCallEnd(call_id="c")

    runner = threading.Thread(
        target=lambda: asyncio.run(run_script(telemetry, agent(), pending_spans=1))
    )
    runner.start()
    try:
        assert shut.wait(10)
        wait_for(lambda: len(telemetry.pending()) >= 3)  # run, step, call: shown at least once
        with caplog.at_level("WARNING", logger="opentelemetry"):
            telemetry.tracer_provider.shutdown()
            wait_for(lambda: pending_thread() is None, timeout=5)
            time.sleep(1.2)  # past an interval: nothing more was written
        # The SDK's span processors' warnings (the metric exporter of an earlier test's
        # configure() may log its own shutdown meanwhile, from its thread: not this provider)
        assert not [r for r in caplog.records if r.name.startswith("opentelemetry.sdk.trace")]
    finally:
        done.set()
        runner.join(10)


@pytest.mark.heavy  # waits out snapshot intervals (a second each)
@pytest.mark.parametrize("budget", [None, 100_000], ids=["no_budget", "max_run_bytes"])
def test_a_run_budget_bounds_what_its_snapshots_record_too(budget: int | None) -> None:
    """Without a run budget a snapshot shows the content captured so far; with one
    (``max_run_bytes``) it would record that content again every interval, outside what the
    run may record in all: snapshots leave it out, and the run's content, counted on every
    span it exported, stays within the budget however long it stays open."""
    from agent_otel import ContentCapture

    content = (A.INPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.OI_INPUT_VALUE, A.TOOL_CALL_ARGUMENTS)
    telemetry = InMemoryTelemetry()
    question = {"role": "user", "content": "question " * 2_000}  # about 18 KB

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", messages=[question])
        yield LLMCallEnd(call_id="c1", finish_reason="tool_calls")
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": "x"}'))
        await asyncio.to_thread(wait_for, lambda: len(telemetry.pending()) >= 9)  # 3 ticks
        yield ToolResult(tool_call_id="t1", content="found")
        yield StepBoundary()

    capture = ContentCapture(max_run_bytes=budget)
    asyncio.run(run_script(telemetry, agent(), pending_spans=1, capture_content=capture))
    snapshots = telemetry.pending()
    runs = [s for s in snapshots if s.name.startswith("invoke_agent")]
    assert len(runs) >= 3
    carried = [k for s in snapshots for k in content if k in s.attributes]
    if budget is None:  # the content so far, as docs/live.md says
        assert all(A.INPUT_MESSAGES in s.attributes for s in runs[1:])  # [0]: at its start
        return
    assert carried == []
    recorded = sum(
        len(str(s.attributes[k]).encode())
        for s in [*telemetry.spans(), *snapshots]
        for k in (*content, A.OUTPUT_MESSAGES, A.TOOL_CALL_RESULT, A.OI_OUTPUT_VALUE)
        if k in s.attributes
    )
    assert 18_000 < recorded <= budget

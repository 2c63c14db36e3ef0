"""Malformed streams never raise: each is repaired as the recorder defines, and counted.

Every case checks three things: the consumer gets every event (the same objects, in order) and
no exception; the trace shows the documented repair; the agent span counts the anomaly
(``agent_otel.anomalies`` total, ``agent_otel.anomaly.kinds`` sorted, one
``agent_otel.anomaly`` span event per occurrence). A repair is not an internal error, so
nothing is logged on the ``agent_otel`` logger either.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_contract.agent import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    RunUsage,
    ToolCallStep,
    ToolResultStep,
)
from agent_contract.examples import ScriptedAgent
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
from agent_otel.testing import InMemoryTelemetry, run_script

ANOMALIES = "agent_otel.anomalies"
KINDS = "agent_otel.anomaly.kinds"
INCOMPLETE = "agent_otel.incomplete"


async def run(
    telemetry: InMemoryTelemetry,
    script: Sequence[Any],
    caplog: pytest.LogCaptureFixture,
    told: int = 0,
    **options: Any,
) -> list[ReadableSpan]:
    """Run ``script`` through the wrapper; check the pass-through and that nothing was logged
    but ``told`` lines (objects that are no events: one per kind, tests/test_newcomer.py)."""
    await run_script(telemetry, script, agent_name="m", **options)
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("agent_otel")]
    assert len(logged) == told and all("which is no event" in m for m in logged), logged
    return telemetry.spans()


def agent_span(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (agent,) = [s for s in spans if s.name.startswith("invoke_agent")]
    return agent


def anomalies(spans: Sequence[ReadableSpan]) -> tuple[int | None, list[str], list[str]]:
    """(total, kinds attribute, kinds of the anomaly span events in order)."""
    agent = agent_span(spans)
    attributes = agent.attributes or {}
    total = attributes.get(ANOMALIES)
    kinds = [str(k) for k in attributes.get(KINDS) or ()]  # type: ignore[union-attr]
    events = [
        str((e.attributes or {})["kind"]) for e in agent.events if e.name == "agent_otel.anomaly"
    ]
    return total if isinstance(total, int) else None, kinds, events


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    value: int = span.context.span_id
    return value


def tool(call_id: str | None, name: str = "search", arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


# --- a well-formed run counts nothing -----------------------------------------------------------


async def test_a_well_formed_run_has_no_anomaly(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        TextDelta("hi"),
        tool("t1"),
        LLMCallEnd(call_id="c1"),
        Usage(input_tokens=1, output_tokens=2),
        ToolResult(tool_call_id="t1", content="ok"),
        StepBoundary(),
    ]
    spans = await run(otel_telemetry, script, caplog)
    assert anomalies(spans) == (None, [], [])
    assert not [s for s in spans if INCOMPLETE in (s.attributes or {})]


async def test_a_usage_naming_its_call_counts_on_it_among_calls_open_at_once(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Calls open at once (a framework's agents working side by side): the older call's usage,
    naming it (a ``CallUsage``), is its own, not the newest open call's."""
    from agent_contract.sources._call_usage import CallUsage

    script = [
        LLMCallStart(model="older", call_id="c1"),
        LLMCallStart(model="newer", call_id="c2"),
        CallUsage(input_tokens=100, output_tokens=1, call_id="c1"),
        LLMCallEnd(call_id="c1"),
        CallUsage(input_tokens=200, output_tokens=2, call_id="c2"),
        LLMCallEnd(call_id="c2"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    counted = {str(s.name): (s.attributes or {}).get("gen_ai.usage.input_tokens") for s in spans}
    assert counted["chat older"] == 100
    assert counted["chat newer"] == 200
    assert anomalies(spans) == (None, [], [])


async def test_a_tool_call_that_never_ran_is_its_calls_output_and_no_tool_span(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """A response the framework threw away asked for a tool that never ran (an adapter's
    ``UnrunCallsEnd``): the call's output message holds it as a ``tool_call`` part, as any
    call the model asked for, and no ``execute_tool`` span tells a run that never happened."""
    from agent_contract.sources._unrun import UnrunCallsEnd, unrun_call

    script = [
        LLMCallStart(model="m"),
        TextDelta(text="Let me look."),
        UnrunCallsEnd(
            finish_reason="tool_calls", unrun=(unrun_call("u1", "search", {"q": "otel"}),)
        ),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    assert [str(s.name) for s in spans if str(s.name).startswith("execute_tool")] == []
    (chat,) = named(spans, "chat m")
    [message] = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert message["parts"] == [
        {"type": "text", "content": "Let me look."},
        {"type": "tool_call", "id": "u1", "name": "search", "arguments": {"q": "otel"}},
    ]
    assert anomalies(spans) == (None, [], [])


async def test_an_end_with_calls_that_never_ran_and_no_call_open_gives_them_to_none(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An ``UnrunCallsEnd`` after its call already ended is an end without a start: counted,
    and its calls go to no call (not the one that ended before it)."""
    from agent_contract.sources._unrun import UnrunCallsEnd, unrun_call

    script = [
        LLMCallStart(model="m"),
        TextDelta(text="Done."),
        LLMCallEnd(finish_reason="stop"),
        UnrunCallsEnd(unrun=(unrun_call("u1", "search", {}),)),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    (chat,) = named(spans, "chat m")
    [message] = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": "Done."}]
    assert anomalies(spans)[:2] == (1, ["llm_end_without_start"])


# --- tool results and calls --------------------------------------------------------------------


async def test_tool_result_without_call_makes_a_zero_length_incomplete_tool_span(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [ToolResult(tool_call_id="t9", content="orphan", name="search")]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    (span,) = named(spans, "execute_tool search")
    attributes = span.attributes or {}
    assert span.start_time == span.end_time
    assert attributes[INCOMPLETE] is True
    assert attributes["gen_ai.tool.call.id"] == "t9"
    assert json.loads(str(attributes["gen_ai.tool.call.result"])) == "orphan"
    (step,) = named(spans, "step 0")  # it belongs to the step like any tool span
    assert parent_id(span) == span_id(step)
    assert step.start_time <= span.start_time  # the step it opened started first
    assert anomalies(spans) == (1, ["tool_result_without_call"], ["tool_result_without_call"])


async def test_tool_result_without_call_or_name_is_an_unknown_tool(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    spans = await run(otel_telemetry, [ToolResult(tool_call_id="t9")], caplog)
    (span,) = named(spans, "execute_tool unknown")
    assert (span.attributes or {})["gen_ai.tool.name"] == "unknown"
    assert anomalies(spans)[1] == ["tool_result_without_call"]


async def test_duplicate_tool_call_id_ends_the_older_span_incomplete(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [tool("t1", "first"), tool("t1", "second"), ToolResult(tool_call_id="t1")]
    spans = await run(otel_telemetry, script, caplog)
    (first,) = named(spans, "execute_tool first")
    (second,) = named(spans, "execute_tool second")
    assert (first.attributes or {})[INCOMPLETE] is True
    assert INCOMPLETE not in (second.attributes or {})  # the result went to the newer one
    assert first.end_time is not None and second.start_time is not None
    assert first.end_time <= second.start_time  # ended when the duplicate arrived
    assert anomalies(spans) == (1, ["duplicate_tool_call_id"], ["duplicate_tool_call_id"])


async def test_missing_tool_call_id_is_matched_when_only_one_tool_is_open(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [tool(None, "search"), ToolResult(tool_call_id=None, content="ok")]  # type: ignore[arg-type]
    spans = await run(otel_telemetry, script, caplog)
    (span,) = named(spans, "execute_tool search")
    attributes = span.attributes or {}
    assert INCOMPLETE not in attributes
    assert "gen_ai.tool.call.id" not in attributes  # a private id is never exported
    # counted once for the call, once for the result
    assert anomalies(spans) == (2, ["missing_tool_call_id"], ["missing_tool_call_id"] * 2)


async def test_missing_tool_call_id_is_not_guessed_between_two_open_tools(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [tool(None, "a"), tool(None, "b"), ToolResult(tool_call_id=None, name="c")]  # type: ignore[arg-type]
    spans = await run(otel_telemetry, script, caplog)
    # neither open call took the result: it got its own zero-length span, both calls were
    # left open and ended incomplete with the run
    for name in ("execute_tool a", "execute_tool b", "execute_tool c"):
        (span,) = named(spans, name)
        assert (span.attributes or {})[INCOMPLETE] is True
    total, kinds, _ = anomalies(spans)
    assert kinds == ["missing_tool_call_id", "tool_result_without_call"]
    assert total == 3


async def test_parallel_tool_results_in_reverse_order_are_matched_by_id(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        tool("t1", "search", '{"q": "x"}'),
        tool("t2", "calc", '{"e": "1+1"}'),
        LLMCallEnd(call_id="c1", finish_reason="tool_calls"),
        ToolResult(tool_call_id="t2", content="2"),
        ToolResult(tool_call_id="t1", content="found x"),
        StepBoundary(),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    (search,) = named(spans, "execute_tool search")
    (calc,) = named(spans, "execute_tool calc")
    (chat,) = named(spans, "chat m")
    (step,) = named(spans, "step 0")
    for span, call_id, arguments, result in (
        (search, "t1", {"q": "x"}, "found x"),
        (calc, "t2", {"e": "1+1"}, "2"),
    ):
        attributes = span.attributes or {}
        assert attributes["gen_ai.tool.call.id"] == call_id
        assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == arguments
        assert json.loads(str(attributes["gen_ai.tool.call.result"])) == result
        assert INCOMPLETE not in attributes
        assert parent_id(span) == span_id(step)  # siblings of the chat span
    assert parent_id(chat) == span_id(step)
    assert calc.end_time is not None and search.end_time is not None
    assert calc.end_time < search.end_time
    assert anomalies(spans) == (None, [], [])


# --- LLM calls --------------------------------------------------------------------------------


async def test_llm_end_without_start_is_ignored(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [LLMCallEnd(call_id="c1", finish_reason="stop"), LLMCallEnd()]
    spans = await run(otel_telemetry, script, caplog)
    assert [s.name for s in spans] == ["invoke_agent m"]  # no chat span was made up
    kind = "llm_end_without_start"
    assert anomalies(spans) == (2, [kind], [kind, kind])
    assert "gen_ai.client.operation.duration" not in otel_telemetry.histograms()


async def test_llm_end_with_an_unknown_id_leaves_the_open_call_alone(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        LLMCallEnd(call_id="zz", finish_reason="length"),
        LLMCallEnd(call_id="c1", finish_reason="stop"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    (chat,) = named(spans, "chat m")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert INCOMPLETE not in attributes
    assert anomalies(spans)[:2] == (1, ["llm_end_without_start"])


async def test_duplicate_llm_call_id_ends_the_older_call_incomplete(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="old", call_id="c1"),
        TextDelta("a"),
        LLMCallStart(model="new", call_id="c1"),
        TextDelta("b"),
        LLMCallEnd(call_id="c1", finish_reason="stop"),
        Usage(input_tokens=5, output_tokens=6),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    (old,) = named(spans, "chat old")
    (new,) = named(spans, "chat new")
    assert (old.attributes or {})[INCOMPLETE] is True
    assert old.end_time is not None and new.start_time is not None
    assert old.end_time <= new.start_time
    new_attributes = new.attributes or {}
    assert INCOMPLETE not in new_attributes
    assert new_attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert new_attributes["gen_ai.usage.output_tokens"] == 6  # the usage went to the new call
    assert "gen_ai.usage.output_tokens" not in (old.attributes or {})
    output = json.loads(str(new_attributes["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": "b"}]
    assert anomalies(spans) == (1, ["duplicate_llm_call_id"], ["duplicate_llm_call_id"])
    # both calls are timed: the older one too
    (durations,) = [otel_telemetry.histograms()["gen_ai.client.operation.duration"]]
    assert sum(p.count for p in durations) == 2


async def test_usage_with_no_llm_call_goes_to_the_run_totals_only(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [Usage(input_tokens=3, output_tokens=4)]
    spans = await run(otel_telemetry, script, caplog)
    attributes = agent_span(spans).attributes or {}
    assert attributes["agent_otel.usage.input_tokens"] == 3
    assert attributes["agent_otel.usage.output_tokens"] == 4
    assert "gen_ai.usage.input_tokens" not in attributes  # usage is recorded where it happened
    assert "gen_ai.client.token.usage" not in otel_telemetry.histograms()
    assert anomalies(spans) == (1, ["usage_without_call"], ["usage_without_call"])


async def test_a_second_usage_after_the_call_got_its_own_is_the_runs_only(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        LLMCallEnd(call_id="c1"),
        Usage(input_tokens=1, output_tokens=1),  # the call that ended and has no usage yet
        Usage(input_tokens=10, output_tokens=10),  # nobody's: the run's totals only
    ]
    spans = await run(otel_telemetry, script, caplog)
    (chat,) = named(spans, "chat m")
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == 1
    assert (agent_span(spans).attributes or {})["agent_otel.usage.input_tokens"] == 11
    assert anomalies(spans)[:2] == (1, ["usage_without_call"])


# --- terminals ---------------------------------------------------------------------------------


async def test_events_after_a_final_event_are_recorded_and_counted(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        MessageDelta(text="a"),
        MessageFinal(text="a"),
        MessageDelta(text="b"),
        ToolCallStep(tool="search", args={}, call_id="t1"),
        ToolResultStep(tool="search", call_id="t1", result="r"),
        MessageFinal(text="b"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    (span,) = named(spans, "execute_tool search")  # recorded as usual
    assert INCOMPLETE not in (span.attributes or {})
    kind = "event_after_terminal"
    assert anomalies(spans) == (4, [kind], [kind] * 4)
    agent = agent_span(spans)
    assert agent.status.status_code is not StatusCode.ERROR
    assert (agent.attributes or {})["agent_otel.end_reason"] == "exhausted"


async def test_events_after_a_fatal_error_are_recorded_and_counted(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        TextDelta("a"),
        Error(message="overloaded", error_type="Overloaded", fatal=True),
        LLMCallEnd(call_id="c1"),
        StepBoundary(),
        # the agent carries on after saying the run is over: a new model call, new text
        LLMCallStart(model="again", call_id="c2"),
        TextDelta("b"),
        LLMCallEnd(call_id="c2"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    agent = agent_span(spans)
    assert agent.status.status_code is StatusCode.ERROR
    assert (agent.attributes or {})["error.type"] == "Overloaded"
    (first,) = named(spans, "chat m")
    assert first.status.status_code is StatusCode.ERROR
    (second,) = named(spans, "chat again")  # the stream goes on, recorded as usual
    assert second.status.status_code is StatusCode.UNSET
    kind = "event_after_terminal"
    # the new call's start and its text are counted; closing what was open (the end of the
    # failing call, its step boundary) is not
    assert anomalies(spans) == (2, [kind], [kind, kind])


async def test_interrupt_then_more_events(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        InterruptFinal(interrupt_id="i1", payload=None, reason="approve"),
        MessageDelta(text="late"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    agent = agent_span(spans)
    assert (agent.attributes or {})["agent_otel.end_reason"] == "interrupted"
    assert anomalies(spans)[:2] == (1, ["event_after_terminal"])


# --- unknown objects ---------------------------------------------------------------------------


class Stranger:
    type = "no_such_event"


@dataclass
class Unrelated:  # a class name no vocabulary uses
    text: str = "x"


async def test_unknown_objects_pass_through_and_are_counted(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script: list[Any] = [
        object(),
        42,
        None,
        {"type": "message_delta", "text": "a dict is not an event"},
        Stranger(),
        Unrelated(),
        "a string",
    ]
    spans = await run(otel_telemetry, script, caplog, told=7)  # each a kind of its own
    assert [s.name for s in spans] == ["invoke_agent m"]  # nothing recorded for them
    n = len(script)
    assert anomalies(spans) == (n, ["unknown_event"], ["unknown_event"] * n)


@dataclass
class TracedDelta(TextDelta):  # an agent's own event class: a TextDelta with a field more
    source: str = "planner"


class PlannerCallStart(LLMCallStart):  # a subclass of a subclass, below
    pass


class CheapCallStart(PlannerCallStart):
    pass


class ToolCallSeen(ToolCall):
    pass


async def test_an_agents_subclass_of_an_event_is_read_as_that_event(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent may yield its own subclasses of the contract's events (``isinstance`` says
    each is that event): each is read as its nearest base the contract names, at any depth,
    not passed over as an unknown event (before, the text, the call and the tool were lost and
    counted as ``unknown_event``)."""
    script = [
        CheapCallStart(model="m"),
        TracedDelta(text="Looking "),
        TextDelta(text="it up."),
        ToolCallSeen(id="t1", function=FunctionCall("search", "{}")),
        LLMCallEnd(finish_reason="tool_calls"),
        ToolResult(tool_call_id="t1", content="found", name="search"),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    assert otel_telemetry.outline() == [
        ["invoke_agent m", [["step 0", ["chat m", "execute_tool search"]]]]
    ]
    (chat,) = named(spans, "chat m")
    [message] = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert message["parts"][0] == {"type": "text", "content": "Looking it up."}
    assert anomalies(spans) == (None, [], [])


async def test_anomaly_span_events_are_capped_but_the_count_is_not(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [object() for _ in range(40)]
    spans = await run(otel_telemetry, script, caplog, told=1)
    total, kinds, events = anomalies(spans)
    assert total == 40
    assert kinds == ["unknown_event"]
    assert 0 < len(events) < 40  # a flood of bad events cannot flood the span


# --- wrong field types ---------------------------------------------------------------------------


async def test_text_delta_with_non_text_is_passed_and_skipped_in_content(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        TextDelta(None),  # type: ignore[arg-type]
        TextDelta(7),  # type: ignore[arg-type]
        TextDelta("ok"),
        LLMCallEnd(call_id="c1"),
    ]
    spans = await run(otel_telemetry, script, caplog, capture_content=True)
    (chat,) = named(spans, "chat m")
    output = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": "ok"}]


async def test_usage_with_string_counts_keeps_only_the_valid_ones(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="m", call_id="c1"),
        Usage(input_tokens="12", output_tokens=5, total_tokens=-3, reasoning_tokens=True),  # type: ignore[arg-type]
        LLMCallEnd(call_id="c1"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    (chat,) = named(spans, "chat m")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.usage.output_tokens"] == 5
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.reasoning.output_tokens"):
        assert key not in attributes
    agent_attributes = agent_span(spans).attributes or {}
    assert agent_attributes["agent_otel.usage.output_tokens"] == 5
    assert "agent_otel.usage.total_tokens" not in agent_attributes
    points = otel_telemetry.histograms()["gen_ai.client.token.usage"]
    assert [((p.attributes or {})["gen_ai.token.type"], p.sum) for p in points] == [("output", 5)]


async def test_llm_call_start_with_odd_params_records_only_well_typed_ones(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        LLMCallStart(model="a", call_id="c1", params="temperature=1"),  # type: ignore[arg-type]
        LLMCallEnd(call_id="c1"),
        LLMCallStart(model="b", call_id="c2", params=[("temperature", 0.5)]),  # type: ignore[arg-type]
        LLMCallEnd(call_id="c2"),
        LLMCallStart(
            model="c",
            call_id="c3",
            params={
                "temperature": "hot",
                "top_p": True,
                "max_tokens": 10.0,
                "seed": 1.5,
                "stream": 1,
                "stop": ["a", 3],
                "n": object(),
            },
        ),
        LLMCallEnd(call_id="c3"),
        LLMCallStart(model=123, provider=["x"], call_id="c4"),  # type: ignore[arg-type]
        LLMCallEnd(call_id="c4"),
    ]
    spans = await run(otel_telemetry, script, caplog)
    for name in ("chat a", "chat b"):  # params that are not a dict give no request attributes
        (span,) = named(spans, name)
        keys = [k for k in (span.attributes or {}) if k.startswith("gen_ai.request.")]
        assert keys == ["gen_ai.request.model"]
    (c,) = named(spans, "chat c")
    requested = {k: v for k, v in (c.attributes or {}).items() if k.startswith("gen_ai.request.")}
    # 10.0 is a whole number of tokens; everything else has the wrong type
    assert requested == {"gen_ai.request.model": "c", "gen_ai.request.max_tokens": 10}
    (odd,) = named(spans, "chat")  # a non-string model names no model
    attributes = odd.attributes or {}
    assert "gen_ai.request.model" not in attributes
    assert attributes["gen_ai.provider.name"] == "unknown"
    assert anomalies(spans) == (None, [], [])


async def test_other_wrong_types_are_tolerated(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    # a boundary with no step before it makes no span
    script = [
        StepBoundary(index="3"),  # type: ignore[arg-type]
        ToolCall(id="t1", function=None),  # type: ignore[arg-type]
        ToolResult(tool_call_id="t1", is_error="yes"),  # type: ignore[arg-type]
        StepBoundary(index=True),
        Error(message=None, error_type=5, fatal="yes"),  # type: ignore[arg-type]
        RunUsage(input_tokens=None, output_tokens=None),
    ]
    spans = await run(otel_telemetry, script, caplog)
    (tool_span,) = named(spans, "execute_tool unknown")
    assert tool_span.status.status_code is StatusCode.UNSET  # "yes" is not True
    # the step is named by position among steps (collect()'s Step.index): neither "3" nor
    # True is an index, and the boundary with nothing before it made no step
    (step,) = [s for s in spans if s.name.startswith("step")]
    assert step.name == "step 0"
    # a non-bool fatal is not fatal: the Error after the last boundary joins the step before
    assert (step.attributes or {})["error.type"] == "agent_error"
    assert "error.type" not in (agent_span(spans).attributes or {})
    assert anomalies(spans) == (None, [], [])


async def test_llm_call_start_with_messages_that_are_not_a_list(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Content capture cannot read such messages; the chat span is still made and ended."""
    script = [
        LLMCallStart(model="m", call_id="c1", messages=5),  # type: ignore[arg-type]
        TextDelta("a"),
        LLMCallEnd(call_id="c1"),
    ]
    wrapper = otel_telemetry.wrapper(capture_content=True)
    received = [e async for e in wrapper(ScriptedAgent(script).stream([]))]
    assert all(a is b for a, b in zip(received, script)) and len(received) == len(script)
    spans = otel_telemetry.spans()
    (chat,) = named(spans, "chat m")
    attributes = chat.attributes or {}
    assert "gen_ai.input.messages" not in attributes
    assert json.loads(str(attributes["gen_ai.output.messages"]))[0]["parts"] == [
        {"type": "text", "content": "a"}
    ]
    assert otel_telemetry.outline() == [["invoke_agent", [["step 0", ["chat m"]]]]]

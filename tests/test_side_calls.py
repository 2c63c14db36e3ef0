"""A side call (``SideCallStart``: a request a framework makes beside the agent's own, such as a
conversation summary or a choice of tools) is a chat span like any, counted as a call, but it
does not name the run: the ``invoke_agent`` span's ``gen_ai.request.model``, its provider and
its input are the agent's own first call's, whichever came first (docs/attributes.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    SideCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel.recording._recorder import RunRecorder
from agent_otel.testing import InMemoryTelemetry, run_script

QUESTION = [Message(role="user", content="weather in Paris?")]
SUMMARY_ASK = [Message(role="user", content="Summarise: a, b, c")]


def _side() -> list[Any]:
    return [SideCallStart(model="summarizer", provider="anthropic", messages=SUMMARY_ASK),
            TextDelta(text="a to c"), Usage(input_tokens=5, output_tokens=2),
            LLMCallEnd(model="summarizer")]  # fmt: skip


def _own() -> list[Any]:
    return [LLMCallStart(model="agent-model", provider="openai", messages=QUESTION),
            TextDelta(text="Sunny."), Usage(input_tokens=7, output_tokens=1),
            LLMCallEnd(model="agent-model")]  # fmt: skip


def _run(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return dict(telemetry.span("invoke_agent bot").attributes or {})


async def test_a_side_call_first_does_not_name_the_run(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, [*_side(), *_own(), *_side()], agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat summarizer", "chat agent-model", "chat summarizer"]],
    ]]]  # fmt: skip
    run = _run(otel_telemetry)
    assert run["gen_ai.request.model"] == "agent-model"
    assert run["gen_ai.provider.name"] == "openai"
    [asked] = json.loads(str(run["gen_ai.input.messages"]))
    assert asked["parts"] == [{"type": "text", "content": "weather in Paris?"}]
    assert run["agent_otel.usage.input_tokens"] == 5 + 7 + 5  # every call's tokens still count


async def test_a_run_of_side_calls_alone_names_no_model(otel_telemetry: InMemoryTelemetry) -> None:
    """The agent never asked its own model: no model is the run's (not the summarizer's)."""
    await run_script(otel_telemetry, _side(), agent_name="bot", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat summarizer"]]]]]
    run = _run(otel_telemetry)
    assert "gen_ai.request.model" not in run
    assert "gen_ai.input.messages" not in run


async def test_a_side_call_after_the_answer_is_not_the_runs_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A summary or memory request told after the agent's own last call: the run's answer
    stays that call's, the side call's text on its own chat span."""
    await run_script(otel_telemetry, [*_own(), *_side()], agent_name="bot", capture_content=True)

    [answer] = json.loads(str(_run(otel_telemetry)["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "Sunny."}]
    side = otel_telemetry.span("chat summarizer").attributes or {}
    [said] = json.loads(str(side["gen_ai.output.messages"]))
    assert said["parts"] == [{"type": "text", "content": "a to c"}]


@pytest.mark.internal_errors
async def test_a_side_call_that_fails_inside_agent_otel_is_still_not_the_runs_answer(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An internal failure while the side call starts (logged and swallowed) leaves the run's
    answer the agent's own last call's, as a side call that started cleanly does."""
    point, calls = RunRecorder._point, []

    def failing(rec: RunRecorder, call: Any, inner: Any) -> None:
        point(rec, call, inner)
        if call is not None and call not in calls:
            calls.append(call)
            if len(calls) == 2:  # the side call, as it starts
                raise RuntimeError("provoked")

    monkeypatch.setattr(RunRecorder, "_point", failing)
    await run_script(otel_telemetry, [*_own(), *_side()], agent_name="bot", capture_content=True)

    [answer] = json.loads(str(_run(otel_telemetry)["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "Sunny."}]


@pytest.mark.parametrize("steps", [True, False], ids=["steps", "no step spans"])
async def test_a_side_call_doing_a_tools_work_is_under_that_tools_span(
    otel_telemetry: InMemoryTelemetry, steps: bool
) -> None:
    """``SideCallStart(tool_call_id=...)``: a request made in place of that open call's tool
    (a model emulating it) is the child of its ``execute_tool`` span, step spans on or off;
    one naming a call that is not open (ended, unknown, not text) stays in the step (the run).
    The run is still the agent's."""
    calls = [ToolCall(id=i, function=FunctionCall(name="lookup", arguments="{}")) for i in "ab"]
    emulated = [*_side()]
    emulated[0] = SideCallStart(model="emulator", messages=SUMMARY_ASK, tool_call_id="b")
    stray = [SideCallStart(model="stray", tool_call_id=t) for t in ("a", "nope", 7)]  # type: ignore[arg-type]
    events = [*_own(), *calls, *emulated, ToolResult(tool_call_id="a", content="x"),
              *(e for s in stray for e in (s, LLMCallEnd())),
              ToolResult(tool_call_id="b", content="a to c")]  # fmt: skip
    await run_script(otel_telemetry, events, agent_name="bot", capture_content=True,
                     step_spans=steps)  # fmt: skip

    spans = ["chat agent-model", "execute_tool lookup", ["execute_tool lookup", ["chat emulator"]],
             "chat stray", "chat stray", "chat stray"]  # fmt: skip
    under_run = [["step 0", spans]] if steps else spans
    assert otel_telemetry.outline() == [["invoke_agent bot", under_run]]
    assert _run(otel_telemetry)["gen_ai.request.model"] == "agent-model"

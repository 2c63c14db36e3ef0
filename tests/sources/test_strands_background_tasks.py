"""Strands' background tool execution (``Agent(background_tasks=...)``): the model asks a tool
to run in the background (``_background_execution: true``), Strands answers the call at once
with a dispatch acknowledgement and runs the tool on its background runtime, delivering the
real result later as a synthetic ``strands_manage_background_task`` exchange before a later
model request. The call's ``execute_tool`` span is the tool's execution: its body's spans under
it, its real result (or failure) on it, not the acknowledgement. Runs in Strands' own
environment (``.ci/separate-envs``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from ._trace import tokens

pytest.importorskip("strands")
pytest.importorskip("strands.background_tasks")

TOOL = "execute_tool weather"


def _turns(first_words: str = "Checking.") -> list[list[dict[str, Any]]]:
    """The model asks for ``weather`` in the background, answers while it runs, then answers
    again once its result was delivered."""
    from ._fw_strands import _text, _usage, _uses

    call = s.Call("b1", "weather", {"city": "Paris", "_background_execution": True})
    ask = [{"messageStart": {"role": "assistant"}}, *_text(first_words), *_uses(call),
           {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    meanwhile = [{"messageStart": {"role": "assistant"}}, *_text("Waiting."),
                 {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    after = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
             {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    return [ask, meanwhile, after]


def _bot(weather: Any, **background: Any) -> Any:
    from strands import Agent, tool

    from ._fw_strands import _model

    return Agent(model=_model(_turns()), tools=[tool(weather)], name="bot",
                 callback_handler=None, background_tasks=background or True)  # fmt: skip


async def test_a_background_tool_s_body_and_result_are_on_its_execute_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Strands waits for the task before the invocation returns (its default): the tool span
    holds the body's own span and the tool's answer, and ends after the body did."""
    from agent_contract.sources.strands_stream import strands_events

    tracer = otel_telemetry.tracer_provider.get_tracer("the-tool")

    async def weather(city: str) -> str:
        """Current weather of a city."""
        with tracer.start_as_current_span("lookup"):
            await asyncio.sleep(0.02)
        return f"sunny in {city}"

    bot = _bot(weather)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    # the call's step goes on while its tool runs (the model answered meanwhile): a span
    # outlives no parent; the request after the result came is the next step
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat scripted-converse", [TOOL, ["lookup"]], "chat scripted-converse"]],
        ["step 1", ["chat scripted-converse"]],
    ]]]  # fmt: skip
    tool = otel_telemetry.span(TOOL)
    lookup = otel_telemetry.span("lookup")
    assert lookup.parent is not None and lookup.parent.span_id == tool.context.span_id
    assert json.loads(str((tool.attributes or {})["gen_ai.tool.call.result"])) == "sunny in Paris"
    assert tool.status.status_code is StatusCode.UNSET
    assert "agent_otel.incomplete" not in (tool.attributes or {})
    assert (tool.end_time or 0) >= (lookup.end_time or 0)
    step = next(x for x in otel_telemetry.spans() if x.context.span_id == tool.parent.span_id)  # type: ignore[union-attr]
    assert step.name.startswith("step ")
    # the three model calls, each once, the run's answer the one after the result came
    assert tokens(otel_telemetry) == s.TURNS[0].input + 2 * s.TURNS[1].input
    assert [x.name for x in otel_telemetry.spans()].count("chat scripted-converse") == 3
    run = otel_telemetry.span("invoke_agent bot")
    assert run.status.status_code is StatusCode.UNSET
    assert "Sunny." in str((run.attributes or {})["gen_ai.output.messages"])
    assert otel_telemetry.open_spans() == []


async def test_a_background_tool_that_raises_fails_its_execute_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.strands_stream import strands_events

    async def weather(city: str) -> str:
        """Current weather of a city."""
        raise LookupError(f"no station in {city}")

    bot = _bot(weather)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    tool = otel_telemetry.span(TOOL)
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "LookupError"
    assert otel_telemetry.span("invoke_agent bot").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_a_background_tool_past_its_time_limit_fails_timeout(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.strands_stream import strands_events

    async def weather(city: str) -> str:
        """Current weather of a city."""
        await asyncio.sleep(5)
        return f"sunny in {city}"

    bot = _bot(weather, timeout=0.05)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    tool = otel_telemetry.span(TOOL)
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "timeout"
    assert otel_telemetry.open_spans() == []


async def test_a_background_tool_still_running_when_the_run_returns_ends_incomplete(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``wait_for_completion=False``: the invocation returns while the tool runs. The run
    ends then, and so does the call's span, marked incomplete with no result: neither the
    acknowledgement (not the tool's answer) nor a failure (the tool has not failed)."""
    from agent_contract.sources.strands_stream import strands_events

    release = asyncio.Event()
    started = asyncio.Event()

    async def weather(city: str) -> str:
        """Current weather of a city."""
        started.set()
        await release.wait()
        return f"sunny in {city}"

    bot = _bot(weather, wait_for_completion=False)
    try:
        await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                         capture_content=True)  # fmt: skip
        await asyncio.wait_for(started.wait(), 5)
        tool = otel_telemetry.span(TOOL)
        assert (tool.attributes or {}).get("agent_otel.incomplete") is True
        assert "gen_ai.tool.call.result" not in (tool.attributes or {})
        assert tool.status.status_code is StatusCode.UNSET
        assert otel_telemetry.open_spans() == []
    finally:
        release.set()
        await asyncio.sleep(0.05)  # the task settles (nothing of it recorded: the run ended)
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_a_foreground_call_of_an_agent_with_background_tasks_leaves_its_scope(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """With background tasks on, Strands hands every call's ``AfterToolCallEvent`` a copy of
    the call's ``tool_use`` (its routing strips the selection flag): a call run in the
    foreground still leaves its tool's scope when it ends, so what runs after a sequential
    batch in the loop's task is not under its last call's span."""
    from strands import Agent, tool
    from strands.hooks import AfterToolsEvent
    from strands.tools.executors import SequentialToolExecutor

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, _usage, _uses

    tracer = otel_telemetry.tracer_provider.get_tracer("the-agent")

    async def weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    def audit(event: Any) -> None:  # runs in the loop's task, after the batch
        tracer.start_span("after the tools").end()

    calls = (s.Call("f1", "weather", {"city": "Paris"}), s.Call("f2", "weather", {"city": "Rome"}))
    ask = [{"messageStart": {"role": "assistant"}}, *_uses(*calls),
           {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    bot = Agent(model=_model([ask, answer]), tools=[tool(weather)], name="bot",
                callback_handler=None, background_tasks={"never": ["weather"]},
                tool_executor=SequentialToolExecutor())  # fmt: skip
    bot.hooks.add_callback(AfterToolsEvent, audit)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    audited = otel_telemetry.span("after the tools")
    parent = next(x for x in otel_telemetry.spans() if x.context.span_id == audited.parent.span_id)  # type: ignore[union-attr]
    assert not parent.name.startswith("execute_tool")
    assert otel_telemetry.open_spans() == []


async def test_a_background_call_an_interrupt_paused_is_the_resuming_run_s(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The tool's body asks for input (``tool_context.interrupt``): its task waits, and the
    run ends interrupted, the call cut short. The run given the responses resumes the task:
    that run holds the call from then on, its span ending with the tool's answer. Before,
    the resumed body opened a span there that nothing ended (incomplete, no result)."""
    from strands import Agent, tool

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model

    @tool(context=True)
    async def weather(city: str, tool_context: Any) -> str:
        """Current weather of a city."""
        approved = tool_context.interrupt("approve", reason="look it up?")
        return f"sunny in {city} ({approved})"

    bot = Agent(model=_model(_turns()), tools=[weather], name="bot", callback_handler=None,
                background_tasks=True)  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION, sink=kept.append),
                     agent_name="bot", capture_content=True)  # fmt: skip
    [paused] = [item["result"] for item in kept if isinstance(item, dict) and "result" in item]
    assert paused.stop_reason == "interrupt"
    answers = [{"interruptResponse": {"interruptId": x.id, "response": "yes"}}
               for x in paused.interrupts]  # fmt: skip
    await run_script(otel_telemetry, strands_events(bot, answers), agent_name="bot",
                     capture_content=True)  # fmt: skip

    first, second = sorted((x for x in otel_telemetry.spans() if x.name == TOOL),
                           key=lambda x: x.start_time or 0)  # fmt: skip
    assert (first.attributes or {}).get("agent_otel.incomplete") is True
    assert (second.attributes or {}).get("agent_otel.incomplete") is None
    result = (second.attributes or {})["gen_ai.tool.call.result"]
    assert json.loads(str(result)) == "sunny in Paris (yes)"
    runs = sorted((x for x in otel_telemetry.spans() if x.name == "invoke_agent bot"),
                  key=lambda x: x.start_time or 0)  # fmt: skip
    assert second.context.trace_id == runs[1].context.trace_id
    assert otel_telemetry.open_spans() == []

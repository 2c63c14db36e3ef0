"""LangGraph's human in the loop: a run paused by ``interrupt()`` and resumed with
``Command(resume=...)`` on the same thread.

The paused run ends ``interrupted`` (not ``exhausted``), LangGraph's interrupt id on its
``agent_otel.interrupt`` event, the paused tool cut short; the resumed run tells the paused
calls again first, so each result has its call and the tool's body nests under its span.
Both runs carry the thread as their journey id.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from .test_langgraph_subgraphs import QUESTION, around, model

pytest.importorskip("langgraph")

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

THREAD = {"configurable": {"thread_id": "thread-7"}}


def approving(tracer: Any) -> Any:
    """A tool asking a human (``interrupt()``), its answer in a span of its own body's."""
    from langchain_core.tools import tool
    from langgraph.types import interrupt

    @tool
    async def approve(q: str) -> str:
        """Ask a human."""
        answer = interrupt({"question": q})
        with tracer.start_as_current_span("human answered"):
            return f"human said {answer}"

    return approve


def graph(tracer: Any, *, nested: bool = False) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    chat = model("bot", "approve", '{"q": "ok?"}')
    if nested:
        sub = create_react_agent(chat, [approving(tracer)], name="bot", checkpointer=True)
        return around("worker", sub, checkpointer=InMemorySaver())
    return create_react_agent(chat, [approving(tracer)], name="bot", checkpointer=InMemorySaver())


@pytest.mark.parametrize("nested", [False, True], ids=["graph", "sub-graph"])
async def test_a_paused_run_ends_interrupted_and_its_resumption_completes_the_call(
    otel_telemetry: InMemoryTelemetry, nested: bool
) -> None:
    """Before: the paused run ended ``exhausted``; the resumed one showed the result as a
    zero-length tool span of its own, outside any step, the body's span beside it."""
    from langgraph.types import Command

    from agent_contract.sources.langgraph_stream import langgraph_events

    built = graph(otel_telemetry.tracer_provider.get_tracer("app"), nested=nested)
    kept: list[Any] = []
    source = langgraph_events(built, QUESTION, THREAD, sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="bot")
    source = langgraph_events(built, Command(resume="yes"), THREAD)
    await run_script(otel_telemetry, source, agent_name="bot")

    assert otel_telemetry.outline() == [
        ["invoke_agent bot", [["step 0", ["chat", "execute_tool approve"]]]],
        ["invoke_agent bot", [
            ["step 0", [["execute_tool approve", ["human answered"]]]], ["step 1", ["chat"]],
        ]],
    ]  # fmt: skip
    paused, resumed = _roots(otel_telemetry)
    assert paused.attributes["agent_otel.end_reason"] == "interrupted"
    assert paused.status.status_code is not StatusCode.ERROR
    [event] = [e for e in paused.events if e.name == "agent_otel.interrupt"]
    [interrupt] = kept[-1][1]["__interrupt__"]  # the graph's own item, passed on untouched
    assert (event.attributes or {})["agent_otel.interrupt.id"] == interrupt.id
    assert resumed.attributes["agent_otel.end_reason"] == "exhausted"
    assert paused.attributes["agent_otel.journey.id"] == "thread-7"
    assert resumed.attributes["agent_otel.journey.id"] == "thread-7"
    cut, done = [s for s in otel_telemetry.spans() if s.name == "execute_tool approve"]
    assert cut.attributes["agent_otel.incomplete"] is True  # the pause cut it short
    assert done.attributes["gen_ai.tool.call.id"] == cut.attributes["gen_ai.tool.call.id"]
    assert not done.attributes.get("agent_otel.incomplete")
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("nested", [False, True], ids=["graph", "sub-graph"])
async def test_the_tool_a_pause_cuts_short_has_not_failed(
    otel_telemetry: InMemoryTelemetry, nested: bool
) -> None:
    """``interrupt()`` raises LangGraph's ``GraphInterrupt`` through the tool's body to pause
    the run: the tool's span failed with it (``error.type`` ``GraphInterrupt``, an exception
    event whose message held the interrupt's value, what the graph asks a human). A pause is
    no failure: the span is cut short, with no error and nothing of the value."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    built = graph(otel_telemetry.tracer_provider.get_tracer("app"), nested=nested)
    await run_script(otel_telemetry, langgraph_events(built, QUESTION, THREAD), agent_name="bot")

    cut = otel_telemetry.span("execute_tool approve")
    assert cut.attributes is not None and cut.attributes["agent_otel.incomplete"] is True
    assert cut.status.status_code is StatusCode.UNSET
    assert "error.type" not in cut.attributes
    assert [e.name for e in cut.events] == []


def _roots(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("invoke_agent")),
                  key=lambda s: s.start_time or 0)  # fmt: skip


async def test_a_run_that_never_pauses_tells_no_journey_or_interrupt(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    from .test_langgraph_subgraphs import lookup

    built = create_react_agent(model("bot"), [lookup()], checkpointer=InMemorySaver())
    events = await run_script(otel_telemetry, langgraph_events(built, QUESTION, THREAD))

    assert [type(e).__name__ for e in events if "Marker" in type(e).__name__] == []
    [root] = _roots(otel_telemetry)
    assert root.attributes["agent_otel.end_reason"] == "exhausted"


async def test_a_paused_call_whose_arguments_json_cannot_hold_is_told_again_repaired(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The resumed run tells the paused call again from the checkpointer's state, its
    arguments (a date, a set, a NaN, a tuple key: LangChain keeps a model's ``args`` as the
    model built them) written by the repair rule and the repair told; the resumption runs and
    ends its call. Before: the resumed run raised ``TypeError`` into the agent."""
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent
    from langgraph.types import Command, interrupt

    from agent_contract.protocol import Error, ToolCall
    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._odd_arguments import VALUES_JSON, langchain_asking

    @tool
    def approve(on: Any) -> str:
        """Ask a human."""
        return f"human said {interrupt({'question': 'ok?'})}"

    built = create_react_agent(
        langchain_asking("approve", "a1"), [approve], name="bot", checkpointer=InMemorySaver()
    )
    await run_script(otel_telemetry, langgraph_events(built, QUESTION, THREAD), agent_name="bot")
    resumed = await run_script(
        otel_telemetry, langgraph_events(built, Command(resume="yes"), THREAD), agent_name="bot"
    )

    [call] = [e for e in resumed if isinstance(e, ToolCall)]  # told again, before the graph ran
    assert (call.id, call.function.arguments) == ("a1", VALUES_JSON)
    told = resumed[resumed.index(call) + 1]
    assert isinstance(told, Error) and told.error_type == "unencodable_arguments"
    _, second = _roots(otel_telemetry)
    assert second.attributes["agent_otel.end_reason"] == "exhausted"
    assert second.attributes["agent_otel.anomaly.kinds"] == ("unencodable_arguments",)
    done = [s for s in otel_telemetry.spans() if s.name == "execute_tool approve"][-1]
    assert done.attributes["gen_ai.tool.call.id"] == "a1"
    assert otel_telemetry.open_spans() == []

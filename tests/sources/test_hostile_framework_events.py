"""Framework events of no shape the adapter reads, from the real frameworks over their test
models and mock transports.

An adapter reads each event of a framework's stream with code of its own (the OpenAI Agents
SDK's raw Responses events through the Responses reader, a Strands model event's fields, a
sub-agent's items a tool streams); a compatible server or a model provider plugin may put
``null`` or a value of the wrong type where those fields go, and the frameworks pass such an
event on without validating it. The agent keeps its stream: the event is skipped and told (an
``Error``, ``unreadable_chunk``, not fatal, counted under ``agent_otel.anomalies``), the events
after it are read, the call and the run still end, and what the framework itself raises comes
out as it is (its own frame, not ours, raised it).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract.protocol import AgentEvent, Error, LLMCallEnd, LLMCallStart, TextDelta
from agent_otel import otel_wrapper
from otlp_check import Exported, assert_nested_in_time

from . import _odd_arguments as _odd
from ._hostile_json import responses_events, spoil
from ._http import openai_client, sse

_EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_OURS = ("/agent_contract/", "/agent_otel/")


def _raised_by_us(error: BaseException) -> bool:
    """Whether the frame ``error`` was raised in is agent-otel's or the contract's."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and any(part in frames[-1].filename for part in _OURS)


async def _traced(stream: AsyncIterator[Any]) -> tuple[list[Any], Exported, BaseException | None]:
    """``stream`` through a traced wrapper: what the consumer got, the telemetry, and what
    came out of the stream (None when it ended)."""
    telemetry = Exported()
    wrapper = otel_wrapper(**telemetry.providers())
    received: list[Any] = []
    try:
        async for event in wrapper(stream):
            received.append(event)
    except Exception as error:
        return received, telemetry, error
    return received, telemetry, None


def _assert_kept(received: list[Any], telemetry: Exported, error: BaseException | None) -> None:
    """Nothing of ours raised into the agent; every call begun ended; every ``Error`` told
    is not fatal; every span ended once within its parent and encodes."""
    assert error is None or not _raised_by_us(error), "".join(traceback.format_exception(error))
    starts = sum(isinstance(e, LLMCallStart) for e in received)
    if error is None:
        assert starts == sum(isinstance(e, LLMCallEnd) for e in received)
    assert all(not e.fatal for e in received if isinstance(e, Error)) or error is not None
    ledger = telemetry.ledger
    assert ledger.started and not ledger.double_ends
    assert sorted(ledger.ended) == sorted(ledger.started)
    assert_nested_in_time(telemetry.spans())
    telemetry.assert_encodes()


def _assert_told_once(received: list[AgentEvent], telemetry: Exported) -> None:
    """One skipped event, told in the stream and counted on the run's span."""
    errors = [e for e in received if isinstance(e, Error)]
    assert [(e.error_type, e.fatal) for e in errors] == [("unreadable_chunk", False)]
    run = telemetry.span("invoke_agent")
    assert run.attributes is not None
    assert run.attributes["agent_otel.anomalies"] == 1
    assert run.attributes["agent_otel.anomaly.kinds"] == ("unreadable_chunk",)


# --- the OpenAI Agents SDK: its raw Responses events, read by the Responses reader ---------


def _text_response() -> list[dict[str, Any]]:
    """A Responses stream answering text only (created, a delta, completed)."""
    events = responses_events()
    return [events[0], events[1], events[-1]]


def _agents_run(events: list[dict[str, Any]]) -> AsyncIterator[Any]:
    from agents import Agent, OpenAIResponsesModel, set_tracing_disabled

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)  # tests: no export to the vendor's trace endpoint
    client = openai_client(sse(events, named=True))
    agent = Agent(name="a", model=OpenAIResponsesModel(model="m", openai_client=client))
    return openai_agents_events(agent, "hi")


async def test_an_agents_sdk_response_created_of_no_response_is_skipped_the_call_ends() -> None:
    pytest.importorskip("agents")
    events = _text_response()
    events[0]["response"] = None  # the SDK passes the raw event on as it came
    received, telemetry, error = await _traced(_agents_run(events))

    assert error is None
    _assert_kept(received, telemetry, error)
    told = [e for e in received if type(e).__name__ != "PhaseMarker"]
    assert type(told[0]).__name__ == "EndpointCallStart"  # an LLMCallStart naming its server
    assert type(told[-1]).__name__ == "LLMCallEnd"
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "Hello"
    _assert_told_once(received, telemetry)


@_EXAMPLES
@given(data=st.data())
def test_hostile_raw_response_events_never_cost_an_agents_sdk_run(data: st.DataObject) -> None:
    pytest.importorskip("agents")
    events = _text_response()
    spoil(data, events)
    _assert_kept(*asyncio.run(_traced(_agents_run(events))))


# --- Strands: the model's events, read by the adapter ---------------------------------------


def _strands_turn() -> list[dict[str, Any]]:
    usage = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hel"}}},
        {"contentBlockDelta": {"delta": {"text": "lo"}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}},
    ]


def _strands_run(turn: list[dict[str, Any]]) -> AsyncIterator[Any]:
    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, agent

    return strands_events(agent(_model([turn]), []), "hi")


async def test_a_strands_model_event_of_no_delta_is_skipped_the_call_ends() -> None:
    pytest.importorskip("strands")
    turn = _strands_turn()
    turn[1]["contentBlockDelta"]["delta"] = "x"  # Strands passes the model's event on as it is
    received, telemetry, error = await _traced(_strands_run(turn))

    assert error is None
    _assert_kept(received, telemetry, error)
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "lo"
    assert isinstance(received[-1], LLMCallEnd)
    _assert_told_once(received, telemetry)


@_EXAMPLES
@given(data=st.data())
def test_hostile_model_events_never_cost_a_strands_run(data: st.DataObject) -> None:
    pytest.importorskip("strands")
    turn = _strands_turn()
    spoil(data, turn)
    _assert_kept(*asyncio.run(_traced(_strands_run(turn))))


async def test_a_strands_model_message_of_no_role_still_ends_its_call() -> None:
    """The model's message takes the role its ``messageStart`` named: ``None`` from a plugin
    is still the model's answer, its call ends (the tool results are the user's message)."""
    pytest.importorskip("strands")
    turn = _strands_turn()
    turn[0]["messageStart"]["role"] = None
    received, telemetry, error = await _traced(_strands_run(turn))

    assert error is None
    _assert_kept(received, telemetry, error)
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "Hello"
    end = received[-1]
    assert isinstance(end, LLMCallEnd) and end.finish_reason == "end_turn"


# --- LangGraph: the items of its stream, read by the adapter's reader --------------------


def _langgraph_run(node: Any, kept: list[Any]) -> AsyncIterator[Any]:
    from langgraph.graph import END, START, MessagesState, StateGraph

    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = StateGraph(MessagesState)
    graph.add_node("model", node)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return langgraph_events(graph.compile(), {"messages": [("user", "hi")]}, sink=kept.append)


def _reader_fails_on_calls_of(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    """The adapter ``module``'s reading of a model's call of ``name`` fails: an event of a
    shape the adapter does not read, whatever its fields."""
    read = module.tool_call

    def failing(call_id: Any, called: Any, arguments: Any) -> Any:
        if called == name:
            raise ValueError("a field of no shape the adapter reads")
        return read(call_id, called, arguments)

    monkeypatch.setattr(module, "tool_call", failing)


async def test_a_langgraph_message_of_no_shape_the_reader_reads_is_skipped_its_call_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model's answer a node passes on (called outside LangChain's callbacks: its model
    named) whose tool call the reader fails on is LangGraph's to pass on: the graph runs on
    and ends; the reader skips the update, tells it, and the call it opened for that answer
    still ends."""
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage

    from agent_contract.sources import langgraph_stream

    _reader_fails_on_calls_of(monkeypatch, langgraph_stream, "book")
    called = [{"name": "book", "args": {"on": "Monday"}, "id": "c1"}]
    named = {"model_name": "gpt-4o-mini"}
    answer = AIMessage(content="", id="m1", response_metadata=named, tool_calls=called)

    def node(state: Any) -> dict[str, Any]:
        return {"messages": [answer]}

    kept: list[Any] = []
    received, telemetry, error = await _traced(_langgraph_run(node, kept))

    assert error is None
    _assert_kept(received, telemetry, error)
    assert isinstance(received[-1], LLMCallEnd)
    _assert_told_once(received, telemetry)
    # the graph's items, as it yields them: the message, then the node's update
    assert [mode for mode, _ in kept] == ["messages", "updates"]
    assert kept[0][1][0] is answer and kept[1][1] == {"model": {"messages": [answer]}}


# --- Google ADK: the run's events, and those of an agent an ``AgentTool`` runs -------------


def _adk_booking(model: Any, name: str = "booker") -> Any:
    """An ADK agent ``name`` on ``model`` with a ``book`` tool taking any value."""
    from ._fw_google_adk import agent

    def book(on: Any) -> str:
        """Book a day."""
        return "booked"

    return agent(model, [book], name=name)


def _odd_booking(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A model's call of ``book`` that the adapter's reader fails on."""
    from google.genai import types

    from agent_contract.sources import google_adk_stream

    _reader_fails_on_calls_of(monkeypatch, google_adk_stream, "book")
    return types.Part(function_call=types.FunctionCall(id="b1", name="book", args={"on": "Monday"}))


async def test_an_adk_model_event_the_reader_fails_on_still_ends_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the event completed before the reader failed on it (its call's start) is kept,
    and that call ends with it, its last: the next request is a call of its own, in the
    next step, not more of the skipped one."""
    pytest.importorskip("google.adk")
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    model = _model([[_odd_booking(monkeypatch)], [types.Part(text="Done.")]])
    received, telemetry, error = await _traced(google_adk_events(_adk_booking(model), "Book?"))

    assert error is None
    _assert_kept(received, telemetry, error)
    _assert_told_once(received, telemetry)
    chat = "chat scripted-gemini"
    assert telemetry.outline() == [
        ["invoke_agent", [["step 0", [chat, "execute_tool book"]], ["step 1", [chat]]]]
    ]


async def test_an_odd_event_of_an_adk_agent_tool_s_run_is_skipped_the_lead_runs_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The expert an ``AgentTool`` runs is read from the events ADK hands its plugin
    (``on_event_callback``), not the run's stream: a call of the expert's model that the
    reader fails on is skipped there and told in the expert's run; the expert and the lead
    run on and answer, and every call and run still ends."""
    pytest.importorskip("google.adk")
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model, agent

    odd = _odd_booking(monkeypatch)
    expert = _adk_booking(_model([[odd], [types.Part(text="booked")]]), "expert")
    ask = types.Part(function_call=types.FunctionCall(id="e1", name="expert",
                                                      args={"request": "Book it."}))  # fmt: skip
    lead = agent(_model([[ask], [types.Part(text="Done.")]]), [AgentTool(expert)], name="lead")
    kept: list[Any] = []
    received, telemetry, error = await _traced(google_adk_events(lead, "Book?", sink=kept.append))

    assert error is None
    _assert_kept(received, telemetry, error)
    said = [p.text for e in kept if not e.partial and e.content for p in e.content.parts or ()]
    assert said[-1] == "Done."  # the lead's answer, after the expert's
    expert_runs = [s for s in telemetry.spans() if s.name == "invoke_agent expert"]
    assert len(expert_runs) == 1
    attributes = expert_runs[0].attributes or {}
    assert "error.type" not in attributes  # the expert answered
    assert attributes.get("agent_otel.anomaly.kinds") == ("unreadable_chunk",)


# --- Agno: the run's events, read by the adapter -------------------------------------------


def _agno_booking(arguments: str, *, team: bool = False) -> Any:
    """An Agno agent (or a team whose member it is) whose model calls ``book`` with
    ``arguments`` as the model wrote them, then answers "Done."."""
    from ._fw_agno import agent
    from ._script_chat import answer, call

    def book(on: Any) -> str:
        """Book a day."""
        return "booked"

    booker = agent(call("book", arguments, "b1"), answer("Done."), tools=[book], name="booker")
    if not team:
        return booker
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from ._http import openai_client

    ask = call("delegate_task_to_member", {"member_id": "booker", "task": "Book."}, "d1")
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(ask, answer("Booked.")))
    return Team(members=[booker], model=model, name="lead", telemetry=False)


def _agno_reader_fails_on_text(monkeypatch: pytest.MonkeyPatch, agent_name: str) -> None:
    """The adapter's reader of a ``RunContent`` fails on the first text of ``agent_name``'s
    run: an event of a shape the adapter does not read, whatever its fields."""
    from agent_contract.sources import agno_stream

    read = agno_stream._content
    failed: list[Any] = []

    def failing(state: Any, event: Any) -> Any:
        if not failed and event.agent_name == agent_name and event.content:
            failed.append(event)
            raise ValueError("a field of no shape the adapter reads")
        return read(state, event)

    monkeypatch.setattr(agno_stream, "_content", failing)


async def test_an_agno_event_the_adapter_fails_on_is_skipped_the_run_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The event is skipped and told, the events after it read: the run answers, each call
    ends, and nothing of ours reaches the agent."""
    pytest.importorskip("agno")
    from agent_contract.sources.agno_stream import agno_events

    from ._fw_agno import agent
    from ._script_chat import answer

    _agno_reader_fails_on_text(monkeypatch, "writer")
    kept: list[Any] = []
    built = agent(answer("Done."), tools=[], name="writer")
    received, telemetry, error = await _traced(agno_events(built, "Write.", sink=kept.append))

    assert error is None
    _assert_kept(received, telemetry, error)
    _assert_told_once(received, telemetry)
    assert isinstance(received[-1], LLMCallEnd)
    assert type(kept[-1]).__name__ == "RunCompletedEvent" and kept[-1].content == "Done."


async def test_an_agno_member_s_event_the_adapter_fails_on_is_skipped_the_team_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same in a member's run, read as a nested run under its delegation: the member's
    event is skipped and told there, the member and the team answer."""
    pytest.importorskip("agno")
    from agent_contract.sources.agno_stream import agno_events

    _agno_reader_fails_on_text(monkeypatch, "booker")
    lead = _agno_booking('{"on": "Monday"}', team=True)
    received, telemetry, error = await _traced(agno_events(lead, "Book?"))

    assert error is None
    _assert_kept(received, telemetry, error)
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "Booked."
    attributes = telemetry.span("invoke_agent booker").attributes or {}
    assert "error.type" not in attributes  # the member answered
    assert attributes.get("agent_otel.anomaly.kinds") == ("unreadable_chunk",)
    assert "agent_otel.anomalies" not in (telemetry.span("invoke_agent").attributes or {})


# --- CrewAI: the events of its bus, read by the adapter's reader ----------------------------


def _crewai_reader_fails_on_call(monkeypatch: pytest.MonkeyPatch, role: str) -> None:
    """The adapter's reader fails on the first call ``role``'s agent starts, having told its
    start: an ``LLMCallStartedEvent`` of a shape the adapter does not read past that point."""
    from agent_contract.sources import crewai_stream

    read = crewai_stream._Reader._LLMCallStartedEvent
    failed: list[Any] = []

    def failing(reader: Any, event: Any) -> Any:
        yield from read(reader, event)
        if not failed and reader.phase == role:
            failed.append(event)
            raise ValueError("a field of no shape the adapter reads")

    monkeypatch.setattr(crewai_stream._Reader, "_LLMCallStartedEvent", failing)


async def test_a_crewai_event_the_adapter_fails_on_is_skipped_its_call_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the event gave before the reader failed (the call's start) is kept, the events
    after it are read: the call ends, the run answers, nothing of ours reaches the agent."""
    pytest.importorskip("crewai")
    from agent_contract.sources.crewai_stream import crewai_events

    from ._fw_crewai import agent, completion, llm

    _crewai_reader_fails_on_call(monkeypatch, "writer")
    kept: list[Any] = []
    built = agent(llm(lambda turn: completion(1, "Done.", [])), [], role="writer")
    received, telemetry, error = await _traced(crewai_events(built, "Write.", sink=kept.append))

    assert error is None
    _assert_kept(received, telemetry, error)
    _assert_told_once(received, telemetry)
    assert isinstance(received[-1], LLMCallEnd)
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "Done."
    assert kept[-1].raw == "Done."


async def test_a_crewai_nested_run_s_event_the_adapter_fails_on_is_skipped_both_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same in the run an agent's ``kickoff`` inside a tool is (a nested run under the
    tool's call): skipped and told there, the inner agent and the lead answer."""
    pytest.importorskip("crewai")
    from crewai.tools import tool

    from agent_contract.sources.crewai_stream import crewai_events

    from ._fw_crewai import agent, completion, llm

    _crewai_reader_fails_on_call(monkeypatch, "expert")
    expert = agent(llm(lambda turn: completion(1, "sunny", [])), [], role="expert")

    @tool("ask_expert")
    def ask_expert(q: str) -> str:
        """Ask the expert."""
        return str(expert.kickoff(q).raw)

    def lead(turn: int) -> bytes:
        if turn == 0:
            return completion(0, None, [("call_e", "ask_expert", '{"q": "Paris?"}')])
        return completion(1, "The expert says: sunny.", [])

    boss = agent(llm(lead), [ask_expert], role="lead")
    received, telemetry, error = await _traced(crewai_events(boss, "Weather?"))

    assert error is None
    _assert_kept(received, telemetry, error)
    text = "".join(e.text for e in received if isinstance(e, TextDelta))
    assert text == "The expert says: sunny."
    attributes = telemetry.span("invoke_agent expert").attributes or {}
    assert "error.type" not in attributes  # the expert answered
    assert attributes.get("agent_otel.anomaly.kinds") == ("unreadable_chunk",)
    assert "agent_otel.anomalies" not in (telemetry.span("invoke_agent").attributes or {})


async def test_a_crewai_event_the_adapter_s_sink_fails_on_never_reaches_crewai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The adapter's sink reads each event on CrewAI's thread, inside CrewAI's ``emit`` (a
    tool's start: to scope its body): where that reading fails, CrewAI goes on (the tool runs,
    the agent answers), the event is still read into the stream, and the failure is told."""
    pytest.importorskip("crewai")
    from crewai.tools import tool

    from agent_contract.protocol import ToolCall, ToolResult
    from agent_contract.sources import crewai_stream
    from agent_contract.sources.crewai_stream import crewai_events

    from ._fw_crewai import agent, completion, llm

    scope = crewai_stream._scope

    def failing(scopes: Any, event: Any, *args: Any) -> None:
        if type(event).__name__ == "ToolUsageStartedEvent":
            raise ValueError("a field of no shape the adapter reads")
        scope(scopes, event, *args)

    monkeypatch.setattr(crewai_stream, "_scope", failing)

    @tool("book")
    def book(day: str) -> str:
        """Book a day."""
        return "booked"

    def respond(turn: int) -> bytes:
        if turn == 0:
            return completion(0, None, [("b1", "book", '{"day": "Monday"}')])
        return completion(1, "Done.", [])

    built = agent(llm(respond), [book], role="booker")
    received, telemetry, error = await _traced(crewai_events(built, "Book?"))

    assert error is None
    _assert_kept(received, telemetry, error)
    assert [e.id for e in received if isinstance(e, ToolCall)] == ["b1"]
    results = [e for e in received if isinstance(e, ToolResult)]
    assert [(r.tool_call_id, r.content, r.is_error) for r in results] == [("b1", "booked", False)]
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "Done."
    errors = [e for e in received if isinstance(e, Error)]
    assert [(e.error_type, e.fatal) for e in errors] == [("unreadable_chunk", False)]


# --- every adapter: a tool call whose arguments hold values JSON has no form for ----------


@pytest.mark.parametrize("name", list(_odd.CASES))
async def test_tool_call_arguments_json_cannot_hold_are_repaired_told_and_run(name: str) -> None:
    """The call is told, its arguments written by the repair rule (docs/hostile.md) as strict
    JSON, and an ``Error`` (``unencodable_arguments``, not fatal) right after it says so; the
    recorder counts the repair on the run, fails nothing, and the tool's span is the call's.
    The framework runs the tool and answers, its own items reaching the sink."""
    case = _odd.CASES[name]
    pytest.importorskip(case.needs)
    from agent_contract.protocol import ToolCall

    kept: list[Any] = []
    received, telemetry, error = await _traced(case.build(kept))

    assert error is None
    _assert_kept(received, telemetry, error)
    calls = [e for e in received if isinstance(e, ToolCall)]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("b1", "book", case.arguments)
    ]
    _odd.strict(calls[0].function.arguments)
    after = received[received.index(calls[0]) + 1]
    assert isinstance(after, Error)
    assert (after.error_type, after.fatal) == ("unencodable_arguments", False)
    assert [e.error_type for e in received if isinstance(e, Error)] == ["unencodable_arguments"]
    run = telemetry.span("invoke_agent")
    assert run.attributes is not None
    assert run.attributes["agent_otel.anomaly.kinds"] == ("unencodable_arguments",)
    assert run.attributes["agent_otel.anomalies"] == 1
    tools = [s for s in telemetry.spans() if s.name == "execute_tool book"]
    assert [(s.attributes or {}).get("gen_ai.tool.call.id") for s in tools] == ["b1"]
    assert all("error.type" not in (s.attributes or {}) for s in telemetry.spans())
    assert kept  # the framework's own items reached the sink (pydantic-ai: the requests made)

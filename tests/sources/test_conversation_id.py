"""``gen_ai.conversation.id`` of a run in a conversation something other than the caller keeps.

The conventions ask for it "when client framework being instrumented manages conversation
history" and "when instrumenting GenAI client libraries that maintain conversation on the
backend side". So: the Responses API's ``conversation`` (an id or ``{"id": ...}``), the OpenAI
Agents SDK's ``conversation_id=`` and its session's ``session_id``, LangGraph's
``config["configurable"]["thread_id"]``, Agno's ``session_id``, Google ADK's ``session_id``
and a Strands session manager's. Not a ``previous_response_id``: it names the turn before, a
new one each turn, so no two turns of one conversation would share it. The id is on the run,
its steps, calls and tools, also on a run that makes no model call where the framework names
it at start; a conversation id the caller gave the run stands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import HISTORY
from ._http import openai_client, sse

MODEL = "gpt-5-mini-2025-08-07"


def _conversations(telemetry: InMemoryTelemetry) -> dict[str, set[Any]]:
    """The conversation ids (None: none) of the finished spans, by the span's kind of name."""
    out: dict[str, set[Any]] = {}
    for span in telemetry.spans():
        kind = span.name.split(" ")[0]
        out.setdefault(kind, set()).add((span.attributes or {}).get("gen_ai.conversation.id"))
    return out


async def _responses(telemetry: InMemoryTelemetry, **options: Any) -> None:
    pytest.importorskip("openai")
    from agent_contract.sources.openai_responses import stream_responses

    params = options.pop("params")
    body = sse(_recorded.responses(tools=False, model=MODEL))
    source = stream_responses(openai_client(body), HISTORY, MODEL, **params)
    await run_script(telemetry, source, agent_name="agent", **options)


@pytest.mark.parametrize(
    ("params", "expected"),
    [({"conversation": "conv_1"}, "conv_1"), ({"conversation": {"id": "conv_2"}}, "conv_2")],
    ids=["conversation", "conversation-object"],
)
async def test_a_responses_request_in_a_conversation_names_it_on_every_span(
    otel_telemetry: InMemoryTelemetry, params: dict[str, Any], expected: str
) -> None:
    await _responses(otel_telemetry, params=params)

    assert _conversations(otel_telemetry) == {
        "invoke_agent": {expected}, "step": {expected}, "chat": {expected},
    }  # fmt: skip


async def test_the_conversation_id_the_caller_gave_the_run_stands(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await _responses(otel_telemetry, params={"conversation": "conv_1"}, conversation_id="mine")

    assert set().union(*_conversations(otel_telemetry).values()) == {"mine"}


@pytest.mark.parametrize("params", [{}, {"previous_response_id": "resp_0"}],
                         ids=["none", "previous-response"])  # fmt: skip
async def test_a_request_in_no_kept_conversation_names_none(
    otel_telemetry: InMemoryTelemetry, params: dict[str, Any]
) -> None:
    await _responses(otel_telemetry, params=params)

    assert set().union(*_conversations(otel_telemetry).values()) == {None}


async def test_a_conversation_named_after_the_step_began_is_on_that_step_too(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.events import LLMCallEnd, LLMCallStart, StepBoundary, TextDelta
    from agent_contract.sources._conversation import in_conversation

    events = [
        TextDelta(text="Let me look."),  # the step's first content: no call yet
        in_conversation(LLMCallStart(model="m", provider="openai"), "conv_late"),
        LLMCallEnd(),
        StepBoundary(index=0),
        LLMCallStart(model="m", provider="openai"),
        LLMCallEnd(),
    ]
    await run_script(otel_telemetry, events, agent_name="agent")

    steps = [s for s in otel_telemetry.spans() if s.name.startswith("step")]
    assert len(steps) == 2
    assert set().union(*_conversations(otel_telemetry).values()) == {"conv_late"}


def _agents_session(session_id: str) -> Any:
    from agents import SQLiteSession

    return SQLiteSession(session_id)  # in memory


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"conversation_id": "conv_a"}, "conv_a"),
        ({"session": "sess_a"}, "sess_a"),
        ({"previous_response_id": "resp_a"}, None),
    ],
    ids=["conversation_id", "session", "previous_response_id"],
)
async def test_an_agents_sdk_run_in_a_conversation_names_it_on_each_call_and_tool(
    otel_telemetry: InMemoryTelemetry, given: dict[str, str], expected: str | None
) -> None:
    pytest.importorskip("agents")
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from . import _fw_openai_agents as fw

    def weather(city: str) -> str:
        """The weather in ``city``."""
        return "sunny"

    if "session" in given:
        given = {"session": _agents_session(given["session"])}
    model = fw.scripted([function_call("weather", {"city": "Paris"}, call_id="c1")],
                        [assistant_message("Sunny.")])  # fmt: skip
    agent = Agent(name="a", tools=[function_tool(weather)], model=model)
    await run_script(otel_telemetry, openai_agents_events(agent, "Weather?", **given),
                     agent_name="a")  # fmt: skip

    assert _conversations(otel_telemetry) == {
        "invoke_agent": {expected}, "step": {expected}, "chat": {expected},
        "execute_tool": {expected},
    }  # fmt: skip


def _langgraph(answer: bool) -> Any:
    """A one-node graph kept by LangGraph's in-memory checkpointer: its node asks LangChain's
    own fake chat model (``answer``), else answers without any model."""
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    model = GenericFakeChatModel(messages=iter([AIMessage("Sunny.")]))

    async def respond(state: MessagesState) -> dict[str, Any]:
        if answer:
            return {"messages": [await model.ainvoke(state["messages"])]}
        return {"messages": [AIMessage("Sunny, always.")]}

    graph = StateGraph(MessagesState)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize(
    ("answer", "stand_down"),
    [(True, True), (False, True), (True, False)],
    ids=["model-call", "no-model-call", "providers-not-standing-down"],
)
async def test_a_langgraph_run_names_its_thread(
    otel_telemetry: InMemoryTelemetry, answer: bool, stand_down: bool
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    config = {"configurable": {"thread_id": "thread-7"}}
    source = langgraph_events(_langgraph(answer), {"messages": [("user", "Weather?")]}, config)
    await run_script(otel_telemetry, source, agent_name="graph", stand_down_providers=stand_down)

    spans = _conversations(otel_telemetry)
    assert spans["invoke_agent"] == {"thread-7"}
    assert ("chat" in spans) is answer
    assert set().union(*spans.values()) == {"thread-7"}


@pytest.mark.parametrize("stand_down", [True, False], ids=["standing-down", "not-standing-down"])
async def test_a_run_nested_in_a_langgraph_node_names_the_graphs_thread(
    otel_telemetry: InMemoryTelemetry, stand_down: bool
) -> None:
    """An agent the graph's node runs is a run nested in the graph's: it continues the graph's
    thread, as it would an id the caller gave the graph's run."""
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    from agent_contract.events import LLMCallEnd, LLMCallStart, Message, TextDelta, Usage
    from agent_contract.sources.langgraph_stream import langgraph_events

    inner = [LLMCallStart(model="inner", provider="openai", messages=[Message("user", "Why?")]),
             TextDelta(text="Because."), Usage(input_tokens=3, output_tokens=1),
             LLMCallEnd(model="inner")]  # fmt: skip

    async def respond(state: MessagesState) -> dict[str, Any]:
        await run_script(otel_telemetry, inner, agent_name="helper")
        return {"messages": [AIMessage("Sunny, always.")]}

    graph = StateGraph(MessagesState)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    config = {"configurable": {"thread_id": "thread-7"}}
    source = langgraph_events(graph.compile(checkpointer=InMemorySaver()),
                              {"messages": [("user", "Weather?")]}, config)  # fmt: skip
    await run_script(otel_telemetry, source, agent_name="graph", stand_down_providers=stand_down)

    helper = otel_telemetry.span("invoke_agent helper")
    assert helper.parent is not None
    assert helper.parent.span_id == otel_telemetry.span("invoke_agent graph").context.span_id
    spans = _conversations(otel_telemetry)
    assert spans["chat"] == spans["step"] == spans["invoke_agent"] == {"thread-7"}


async def test_a_langgraph_thread_yields_to_the_id_the_caller_gave(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    config = {"configurable": {"thread_id": "thread-7"}}
    source = langgraph_events(_langgraph(True), {"messages": [("user", "Weather?")]}, config)
    await run_script(otel_telemetry, source, agent_name="graph", conversation_id="mine")

    assert set().union(*_conversations(otel_telemetry).values()) == {"mine"}


async def test_an_agno_run_names_its_session(otel_telemetry: InMemoryTelemetry) -> None:
    pytest.importorskip("agno")
    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fw
    from . import _script as s
    from ._sdk_row import chat_bodies

    built = fw.agent(*chat_bodies(s.Run()), tools=[s.weather_tool(), s.forecast_tool()])
    source = agno_events(built, s.QUESTION, session_id="sess-9")
    await run_script(otel_telemetry, source, agent_name="agno")

    spans = _conversations(otel_telemetry)
    assert "chat" in spans
    assert set().union(*spans.values()) == {"sess-9"}


async def test_an_agno_agent_given_no_session_names_the_one_agno_makes_from_its_first_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Agno makes a session for an agent given none as its first run starts and keeps it on the
    agent for the runs after: every run of it, the first one too, names that session."""
    pytest.importorskip("agno")
    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fw
    from . import _script as s
    from ._sdk_row import chat_bodies

    built = fw.agent(*chat_bodies(s.Run()), *chat_bodies(s.Run()),
                     tools=[s.weather_tool(), s.forecast_tool()])  # fmt: skip
    assert built.session_id is None
    await run_script(otel_telemetry, agno_events(built, s.QUESTION), agent_name="agno")
    first = _conversations(otel_telemetry)
    otel_telemetry.clear()
    await run_script(otel_telemetry, agno_events(built, s.QUESTION), agent_name="agno")
    then = _conversations(otel_telemetry)

    made = built.session_id
    assert isinstance(made, str) and made
    assert "chat" in first and "chat" in then
    assert set().union(*first.values()) == set().union(*then.values()) == {made}


@pytest.mark.parametrize("given", [True, False], ids=["given-session", "session-made"])
async def test_a_google_adk_run_names_its_session(
    otel_telemetry: InMemoryTelemetry, given: bool
) -> None:
    """ADK keeps a run's history in its session, the one given or one the adapter makes."""
    pytest.importorskip("google.adk")
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fw

    model = fw._model([[types.Part(text="Sunny.")]])
    runner = InMemoryRunner(agent=fw.agent(model, []), app_name="app")
    if given:
        await runner.session_service.create_session(app_name="app", user_id="u", session_id="s-3")
    source = google_adk_events(runner, "Weather?", user_id="u", session_id="s-3" if given else None)
    await run_script(otel_telemetry, source, agent_name="adk")

    [session] = (await runner.session_service.list_sessions(app_name="app", user_id="u")).sessions
    assert session.id == "s-3" or not given
    spans = _conversations(otel_telemetry)
    assert "chat" in spans
    assert set().union(*spans.values()) == {session.id}


@pytest.mark.parametrize("team", [False, True], ids=["agent", "swarm"])
async def test_a_strands_run_names_its_session_managers_session(
    otel_telemetry: InMemoryTelemetry, tmp_path: Path, team: bool
) -> None:
    pytest.importorskip("strands")
    from strands import Agent
    from strands.multiagent import Swarm
    from strands.session.file_session_manager import FileSessionManager

    from agent_contract.sources.strands_stream import strands_events

    from . import _fw_strands as fw

    manager = FileSessionManager(session_id="s-5", storage_dir=str(tmp_path))
    turn = [{"messageStart": {"role": "assistant"}}, *fw._text("Sunny."),
            {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    if team:  # the swarm keeps the session, its agent none of its own
        agent = Agent(model=fw._model([turn]), name="only", callback_handler=None)
        ran: Any = Swarm([agent], session_manager=manager)
    else:
        ran = Agent(model=fw._model([turn]), session_manager=manager, callback_handler=None)
    await run_script(otel_telemetry, strands_events(ran, "Weather?"), agent_name="strands")

    spans = _conversations(otel_telemetry)
    assert "chat" in spans
    assert set().union(*spans.values()) == {"s-5"}


async def test_a_pydantic_ai_run_names_its_conversation_given_or_inherited(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    agent = Agent(TestModel(custom_output_text="Sunny."))
    results: list[Any] = []
    first = pydantic_ai_events(
        agent, "Weather?", conversation_id="conv-p", on_result=results.append
    )
    await run_script(otel_telemetry, first, agent_name="pyd")
    assert set().union(*_conversations(otel_telemetry).values()) == {"conv-p"}

    otel_telemetry.clear()  # the next turn: pydantic-ai reads the id from the history
    then = pydantic_ai_events(agent, "And tomorrow?", message_history=results[0].all_messages())
    await run_script(otel_telemetry, then, agent_name="pyd")

    spans = _conversations(otel_telemetry)
    assert "chat" in spans
    assert set().union(*spans.values()) == {"conv-p"}


async def test_a_llama_index_run_names_its_memorys_session(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.memory import Memory

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fw
    from . import _script as s

    memory = Memory.from_defaults(session_id="chat-4")
    source = llama_index_events(fw.agent(s.Run()), s.QUESTION, memory=memory)
    await run_script(otel_telemetry, source, agent_name="li")

    spans = _conversations(otel_telemetry)
    assert "chat" in spans
    assert set().union(*spans.values()) == {"chat-4"}

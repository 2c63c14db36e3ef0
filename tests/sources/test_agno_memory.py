"""Agno: the model requests its managers make beside the agent's own, in the run's trace.

Agno runs a ``MemoryManager`` (``update_memory_on_run``) in a task of its own beside the
agent's first request, and a session summary (``enable_session_summaries``) after its last:
each asks a model of its own (a copy: Agno drops its clients, ``client_params`` keep the
transport), unstreamed, the memory manager running the memory tools it asks for. Agno tells
nothing of them in the run's stream, and inside the run the provider instrumentations stand
down: the billed requests were in no span. Each is a side call (``SideCallStart``): a chat
span in the run, with its tokens, that does not name the run; each memory tool it ran an
``execute_tool`` span beside them; a team member's in the member's own run.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import openai_client, transport
from ._trace import tokens

pytest.importorskip("agno")

MEMORY = "gpt-4.1-nano"
SUMMARY = "gpt-4.1-mini"


def _model(model: str, *bodies: Any, seen: list[Any]) -> Any:
    """An unstreamed side model over the mock transport (kept by Agno's copies of it)."""
    from agno.models.openai import OpenAIChat

    return OpenAIChat(id=model, api_key="test", base_url="http://mock.invalid/v1",
                      client_params={"http_client": transport(*bodies, seen=seen)})  # fmt: skip


def _agent(sent: list[Any], summary: Any, *answers: bytes, tools: list[Any]) -> Any:
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.memory import MemoryManager
    from agno.models.openai import OpenAIChat
    from agno.session.summary import SessionSummaryManager

    remember = chat.completion(0, None, [("call_m", "add_memory",
                                          json.dumps({"memory": "Lives in Paris."}))])  # fmt: skip
    noted = chat.completion(1, "Noted.", [])
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(*answers))
    summarised = SessionSummaryManager(model=_model(SUMMARY, summary, seen=sent))
    return Agent(model=model, name="a", telemetry=False, db=InMemoryDb(), tools=tools,
                 memory_manager=MemoryManager(model=_model(MEMORY, remember, noted, seen=sent)),
                 update_memory_on_run=True, enable_session_summaries=True,
                 session_summary_manager=summarised)  # fmt: skip


def _summary() -> bytes:
    said = json.dumps({"summary": "They asked about Paris.", "topics": ["weather"]})
    return chat.completion(0, said, [])


async def test_memory_and_summary_requests_are_side_calls_with_their_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    agent = _agent(sent, _summary(), chat.answer("Sunny."), tools=[])
    kept: list[Any] = []
    source = agno_events(agent, "I live in Paris. Weather?", sink=kept.append, user_id="u1")
    await run_script(otel_telemetry, source, agent_name="a", capture_content=True)

    models = [json.loads(r.content)["model"] for r in sent]
    assert sorted(models) == [SUMMARY, MEMORY, MEMORY]  # asked, ran add_memory, was told
    assert kept[-1].content == "Sunny."  # Agno's answer, unchanged
    [[name, [[step, chats]]]] = otel_telemetry.outline()
    assert (name, step) == ("invoke_agent a", "step 0")
    assert sorted(chats) == sorted(["chat gpt-4o-mini", f"chat {MEMORY}", f"chat {MEMORY}",
                                    f"chat {SUMMARY}", "execute_tool add_memory"])  # fmt: skip
    assert chats[0] == "chat gpt-4o-mini"  # told after the agent's own request it ran beside
    # the memory tool the manager's model asked for ran between its two requests
    at = chats.index("execute_tool add_memory")
    assert chats[at - 1] == chats[at + 1] == f"chat {MEMORY}"
    [tool] = otel_telemetry.by_name()["execute_tool add_memory"]
    assert (tool.attributes or {})["gen_ai.tool.call.id"] == "call_m"
    assert tool.status.status_code != StatusCode.ERROR
    memory = otel_telemetry.by_name()[f"chat {MEMORY}"]
    assert [(sp.attributes or {})["gen_ai.usage.input_tokens"] for sp in memory] == [
        s.TURNS[0].input, s.TURNS[1].input]  # fmt: skip
    assert all(sp.status.status_code != StatusCode.ERROR for sp in memory)
    run = otel_telemetry.span("invoke_agent a").attributes or {}
    assert run["gen_ai.request.model"] == "gpt-4o-mini"  # the side calls do not name the run
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "Sunny."}]
    assert tokens(otel_telemetry) == 3 * s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_a_tool_bodys_own_unstreamed_agent_is_no_side_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent a tool body runs unstreamed (``await expert.arun(q)``) makes its request
    inside the tool's span, not as the run's side call."""
    from agno.agent import Agent

    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    expert = Agent(model=_model("gpt-4.1", chat.completion(0, "Sunny.", []), seen=sent),
                   name="expert", telemetry=False)  # fmt: skip

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        return str((await expert.arun(q)).content)

    agent = _agent(sent, _summary(), chat.call("ask_expert", {"q": "Paris?"}, "call_e"),
                   chat.answer("Sunny."), tools=[ask_expert])  # fmt: skip
    source = agno_events(agent, "I live in Paris. Weather?", user_id="u1")
    await run_script(otel_telemetry, source, agent_name="a")

    assert "gpt-4.1" in [json.loads(r.content)["model"] for r in sent]  # the expert asked
    chats = [sp.name for sp in otel_telemetry.spans() if sp.name.startswith("chat")]
    assert "chat gpt-4.1" not in chats  # no side call of the run's
    assert sorted(chats).count(f"chat {MEMORY}") == 2
    assert otel_telemetry.open_spans() == []


async def test_a_run_that_fails_keeps_the_memory_managers_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The agent's second request is refused, after the memory manager's requests ended
    (beside its first): the run fails (Agno's ``RunError``), and the side calls made before
    are still told, with their tokens."""
    from agent_contract.sources.agno_stream import AgnoRunError, agno_events

    from ._sdk_row import refused

    sent: list[Any] = []

    async def weather(city: str) -> str:
        """Current weather of a city."""
        for _ in range(500):  # until the memory manager is done asking (bounded: 5 s)
            if len(sent) >= 2:
                break
            await asyncio.sleep(0.01)
        return f"sunny in {city}"

    asks = chat.call("weather", {"city": "Paris"}, "call_w")
    agent = _agent(sent, _summary(), asks, refused, tools=[weather])  # then a 429
    source = agno_events(agent, "I live in Paris. Weather?", user_id="u1")
    with pytest.raises(AgnoRunError):
        await run_script(otel_telemetry, source, agent_name="a")

    assert [json.loads(r.content)["model"] for r in sent] == [MEMORY, MEMORY]  # made, billed
    chats = otel_telemetry.by_name()
    assert len(chats.get(f"chat {MEMORY}", [])) == 2
    assert tokens(otel_telemetry) >= s.TURNS[0].input + s.TURNS[1].input
    run = otel_telemetry.span("invoke_agent a")
    assert run.status.status_code == StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


async def test_a_team_members_memory_requests_are_in_its_own_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A member with a memory manager makes its side requests (and their tool) in its own
    run, nested under the delegation that ran it, not in the leader's step."""
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.memory import MemoryManager
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    remember = chat.completion(0, None, [("call_m", "add_memory",
                                          json.dumps({"memory": "Lives in Paris."}))])  # fmt: skip
    manager = MemoryManager(model=_model(MEMORY, remember, chat.completion(1, "Noted.", []),
                                         seen=sent))  # fmt: skip
    clerk = Agent(model=OpenAIChat(id="gpt-4o-mini", async_client=openai_client(
                      chat.answer("Paris: sunny"))), name="clerk", telemetry=False,
                  db=InMemoryDb(), memory_manager=manager, update_memory_on_run=True)  # fmt: skip
    ask = chat.call("delegate_task_to_member", {"member_id": "clerk", "task": "Paris?"}, "d1")
    lead = OpenAIChat(id="gpt-4.1", async_client=openai_client(ask, chat.answer("Sunny.")))
    team = Team(members=[clerk], model=lead, name="lead", telemetry=False, db=InMemoryDb())
    await run_script(otel_telemetry, agno_events(team, "I live in Paris. Weather?",
                                                 user_id="u1"), agent_name="lead")  # fmt: skip

    assert [json.loads(r.content)["model"] for r in sent] == [MEMORY, MEMORY]
    [[lead_run, [[step0, [chat0, [delegation, [member]]]], later]]] = otel_telemetry.outline()
    assert (lead_run, step0, chat0) == ("invoke_agent lead", "step 0", "chat gpt-4.1")
    assert delegation == "execute_tool delegate_task_to_member"
    assert later == ["step 1", ["chat gpt-4.1"]]  # the leader's own steps: no side call
    [name, [[_, chats]]] = member
    assert name == "invoke_agent clerk"
    assert chats[0] == "chat gpt-4o-mini"
    assert sorted(chats[1:]) == sorted([f"chat {MEMORY}", f"chat {MEMORY}",
                                        "execute_tool add_memory"])  # fmt: skip
    assert tokens(otel_telemetry) == 4 * s.TURNS[0].input + s.TURNS[1].input  # each once
    assert otel_telemetry.open_spans() == []

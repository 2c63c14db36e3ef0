"""AutoGen teams: each member's tool spans sit in the step (the model turn) that asked for them.

A team (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``, a team as a member of a
team, a team used through ``TeamTool``) runs its members in tasks of its own runtime, ahead of
the reader of ``run_stream``: a member runs its tools before the reader has seen the model
response asking for them. Each shape here runs on AutoGen's own test model
(``ReplayChatCompletionClient``), and every tool span must be a child of the step holding the
chat span of its request, start after that chat span, and end before the run's next step
starts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _fw_autogen as fa
from . import _script as s
from ._trace import phases, tokens

pytest.importorskip("autogen_agentchat")

RESEARCHER = [["step 0", ["chat", "execute_tool weather", "execute_tool weather"]],
              ["step 1", ["chat"]]]  # fmt: skip
"""The researcher's turn: one call asking for two weathers at once, then its answer."""


def _text(text: str, tokens_in: int = 10, tokens_out: int = 1) -> Any:
    from autogen_core.models import CreateResult, RequestUsage

    usage = RequestUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
    return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)


async def weather(city: str) -> str:
    """The weather in a city."""
    await asyncio.sleep(0)  # the body gives the loop a turn, as a real tool's I/O would
    return f"sunny in {city}"


def _researcher(name: str = "researcher") -> Any:
    calls = fa._calls(s.Call("w1", "weather", {"city": "Paris"}),
                      s.Call("w2", "weather", {"city": "Rome"}))  # fmt: skip
    return fa.agent([calls, _text("Both sunny.", 40, 4)], [weather], name=name)


def _writer(name: str = "writer") -> Any:
    return fa.agent([_text("Sunny. TERMINATE", 50, 5)], [], name=name)


def _done() -> Any:
    from autogen_agentchat.conditions import TextMentionTermination

    return TextMentionTermination("TERMINATE")


def round_robin() -> Any:
    from autogen_agentchat.teams import RoundRobinGroupChat

    return RoundRobinGroupChat([_researcher(), _writer()], termination_condition=_done())


def selector(*, streaming: bool = False) -> Any:
    """The team's model picks each speaker: its calls are the run's too, each in a step of
    the team's manager; ``streaming``: it streams them, and the team shows its chunks and
    selections in its stream (``emit_team_events``), without usage."""
    from autogen_agentchat.teams import SelectorGroupChat

    picks = fa._client([_text("researcher", 7, 1), _text("writer", 8, 1)])
    critic = fa.agent([], [], name="critic")  # a third member: the second pick is a call too
    return SelectorGroupChat([_researcher(), _writer(), critic], model_client=picks,
                             termination_condition=_done(), model_client_streaming=streaming,
                             emit_team_events=streaming)  # fmt: skip


PICKED = [["step 0", ["chat"]], *[[f"step {int(n[-1]) + 1}", c] for n, c in RESEARCHER],
          ["step 3", ["chat"]], ["step 4", ["chat"]]]  # fmt: skip
"""A selector's run: a pick, the researcher's turn, a pick, the writer's."""


def _ledger(done: bool) -> Any:
    """A Magentic-One progress ledger (the orchestrator's JSON), the researcher speaking next."""

    def said(answer: Any) -> dict[str, Any]:
        return {"answer": answer, "reason": "scripted"}

    ledger = {"is_request_satisfied": said(done), "is_in_loop": said(False),
              "is_progress_being_made": said(True), "next_speaker": said("researcher"),
              "instruction_or_question": said("Find the weather.")}  # fmt: skip
    return _text(json.dumps(ledger), 7 + done, 1)


def magentic_one() -> Any:
    """The orchestrator's own calls (facts, plan, a ledger; a ledger and the final answer
    after the researcher's turn) are the run's, each in the orchestrator's steps, in order."""
    from autogen_agentchat.teams import MagenticOneGroupChat

    orchestrator = fa._client([_text("Facts.", 5, 1), _text("Plan.", 6, 1), _ledger(False),
                               _ledger(True), _text("Sunny in both.", 9, 1)])  # fmt: skip
    return MagenticOneGroupChat([_researcher()], model_client=orchestrator)


def swarm() -> Any:
    """The router runs a tool, then hands off; the researcher runs its own before answering."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import Swarm

    asks = [fa._calls(s.Call("r1", "weather", {"city": "Oslo"})),
            fa._calls(s.Call("h1", "transfer_to_researcher", {}))]  # fmt: skip
    router = AssistantAgent("router", model_client=fa._client(asks), tools=[weather],
                            handoffs=["researcher"], model_client_stream=True)  # fmt: skip
    researcher = fa.agent(
        [fa._calls(s.Call("w1", "weather", {"city": "Paris"}),
                   s.Call("w2", "weather", {"city": "Rome"})),
         _text("Both sunny. TERMINATE", 40, 4)],
        [weather], name="researcher",
    )  # fmt: skip
    return Swarm([router, researcher], termination_condition=_done())


def team_in_team() -> Any:
    """A team as a member of a team: its members' items reach the outer stream as theirs."""
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    inner = RoundRobinGroupChat([_researcher()], name="desk",
                                termination_condition=MaxMessageTermination(2))  # fmt: skip
    return RoundRobinGroupChat([inner, _writer()], termination_condition=_done())


def team_tool() -> Any:
    """A team used as a tool: a nested run under the tool's span, its members' tools in it."""
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_agentchat.tools import TeamTool

    desk = RoundRobinGroupChat([_researcher(), _writer()], name="desk",
                               termination_condition=_done())  # fmt: skip
    tool = TeamTool(desk, name="desk", description="The weather desk.",
                    return_value_as_last_message=True)  # fmt: skip
    return fa.agent([fa._calls(s.Call("d1", "desk", {"task": "Paris and Rome?"})),
                     _text("Sunny.", 60, 6)], [tool], name="lead")  # fmt: skip


ASKED = s.TURNS[0].input
"""Input tokens of each response asking for tools (``_fw_autogen._calls``)."""

TEAMS = [
    ("round_robin", round_robin, [*RESEARCHER, ["step 2", ["chat"]]], ASKED + 40 + 50),
    ("selector", selector, PICKED, ASKED + 40 + 50 + 7 + 8),
    ("selector_streaming", lambda: selector(streaming=True), PICKED, ASKED + 40 + 50 + 7 + 8),
    ("magentic_one", magentic_one, [
        ["step 0", ["chat", "chat", "chat"]],
        *[[f"step {int(n[-1]) + 1}", c] for n, c in RESEARCHER], ["step 3", ["chat", "chat"]],
    ], ASKED + 40 + 5 + 6 + 7 + 8 + 9),
    ("swarm", swarm, [["step 0", ["chat", "execute_tool weather"]],
                      ["step 1", ["chat", "execute_tool transfer_to_researcher"]],
                      *[[f"step {int(n[-1]) + 2}", c] for n, c in RESEARCHER]], 3 * ASKED + 40),
    ("team_in_team", team_in_team, [*RESEARCHER, ["step 2", ["chat"]]], ASKED + 40 + 50),
    ("team_tool", team_tool, [
        ["step 0", ["chat", ["execute_tool desk", [
            ["invoke_agent desk", [*RESEARCHER, ["step 2", ["chat"]]]]]]]],
        ["step 1", ["chat"]],
    ], 2 * ASKED + 40 + 50 + 60),
]  # fmt: skip


def _check_order(telemetry: InMemoryTelemetry) -> None:
    """Every tool span (a handoff's too) is a child of a step, starts after the chat span of
    its step (at the ``ToolCall`` the response carries), and ends before the run's next step
    starts."""
    spans = telemetry.spans()
    by_id = {sp.context.span_id: sp for sp in spans}
    tools = [sp for sp in spans if sp.name.startswith("execute_tool")]
    assert tools
    for tool in tools:
        assert tool.parent is not None
        step = by_id[tool.parent.span_id]
        assert step.name.startswith("step "), f"{tool.name} is a child of {step.name}"
        [chat] = [sp for sp in spans if sp.name.startswith("chat") and sp.parent is not None
                  and sp.parent.span_id == step.context.span_id]  # fmt: skip
        assert chat.start_time is not None and tool.start_time is not None
        assert chat.start_time <= tool.start_time, f"{tool.name} started before its request"
        run = step.parent
        later = [sp for sp in spans if sp.name.startswith("step ") and sp.parent == run
                 and sp.start_time > step.start_time]  # fmt: skip
        for after in later:
            assert tool.end_time is not None and tool.end_time <= after.start_time


@pytest.mark.parametrize(("build", "steps", "input_tokens"),
                         [pytest.param(b, o, t, id=i) for i, b, o, t in TEAMS])  # fmt: skip
async def test_a_team_members_tools_sit_in_the_step_that_asked_for_them(
    otel_telemetry: InMemoryTelemetry, build: Callable[[], Any], steps: list[Any],
    input_tokens: int,
) -> None:  # fmt: skip
    from agent_contract.sources.autogen_stream import autogen_events

    team = build()
    await run_script(otel_telemetry, autogen_events(team, "Weather?"), agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", steps]]
    _check_order(otel_telemetry)
    assert tokens(otel_telemetry) == input_tokens
    assert otel_telemetry.open_spans() == []


def _spy_team(read: list[Any], started: list[bool], *, ids: tuple[str, str] = ("w1", "w2")) -> Any:
    """A round robin whose researcher's tool notes, as its body starts, whether the reader
    (the sink, ``read``) has already had the response asking for it; asked in two turns."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core.tools import FunctionTool

    async def spied(city: str) -> str:
        asked = [i for i in read if type(i).__name__ == "ToolCallRequestEvent"]
        started.append(len(asked) == len(started) + 1)
        await asyncio.sleep(0)
        return "sunny"

    tool = FunctionTool(spied, name="weather", description="The weather.")
    turns = [fa._calls(s.Call(ids[0], "weather", {"city": "Paris"})),
             fa._calls(s.Call(ids[1], "weather", {"city": "Rome"})),
             _text("Sunny.", 40, 4)]  # fmt: skip
    researcher = AssistantAgent("researcher", model_client=fa._client(turns), tools=[tool],
                                model_client_stream=True, max_tool_iterations=3)  # fmt: skip
    return RoundRobinGroupChat([researcher, _writer()], termination_condition=_done())


@pytest.mark.parametrize("ids", [("w1", "w2"), ("call_0", "call_0")], ids=["ids", "same-id"])
async def test_a_members_tool_starts_once_the_reader_has_its_request(
    otel_telemetry: InMemoryTelemetry, ids: tuple[str, str]
) -> None:
    """Traced, each tool body starts after the run's reader handed on the response asking for
    it (a provider numbering its calls per response repeats ids: each turn's waits for its
    own); each in the step of its call."""
    from agent_contract.sources.autogen_stream import autogen_events

    read: list[Any] = []
    started: list[bool] = []
    team = _spy_team(read, started, ids=ids)
    await run_script(otel_telemetry, autogen_events(team, "Weather?", sink=read.append),
                     agent_name="team")  # fmt: skip

    assert started == [True, True]
    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", ["chat", "execute_tool weather"]], ["step 1", ["chat", "execute_tool weather"]],
        ["step 2", ["chat"]], ["step 3", ["chat"]],
    ]]]  # fmt: skip
    _check_order(otel_telemetry)


async def test_untraced_a_team_runs_its_tools_as_autogen_does() -> None:
    """With no tracer recording the run nothing is ordered: AutoGen runs a member's tools
    ahead of the reader, as without the adapter."""
    from agent_contract.sources.autogen_stream import autogen_events

    read: list[Any] = []
    started: list[bool] = []
    events = [e async for e in autogen_events(_spy_team(read, started), "Weather?",
                                              sink=read.append)]  # fmt: skip

    assert started == [False, False]
    assert type(read[-1]).__name__ == "TaskResult" and events


async def test_a_reader_closing_early_leaves_no_tool_waiting(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The reader stops at a tool call whose body is waiting for it: closing the stream lets
    the body run (AutoGen's close waits for the team's tasks to finish) and ends every span."""
    from agent_contract.protocol import ToolCall
    from agent_contract.sources.autogen_stream import autogen_events

    stream = otel_telemetry.wrapper(agent_name="team")(autogen_events(round_robin(), "Weather?"))
    async for event in stream:
        if isinstance(event, ToolCall):
            break
    await asyncio.wait_for(stream.aclose(), timeout=30)  # a wait that never ends fails here

    assert otel_telemetry.open_spans() == []
    [run] = [sp for sp in otel_telemetry.spans() if sp.name == "invoke_agent team"]
    assert run.end_time is not None


async def test_a_failing_pick_is_a_failed_chat_span_of_the_team(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The team's model fails picking the first speaker: the run fails, and the error is on
    that call's chat span, in the manager's step."""
    from autogen_agentchat.teams import SelectorGroupChat
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.autogen_stream import autogen_events

    team = SelectorGroupChat([_researcher(), _writer()], model_client=fa._client([]),
                             termination_condition=_done())  # fmt: skip
    with pytest.raises(ValueError, match="No more mock responses"):
        await run_script(otel_telemetry, autogen_events(team, "Weather?"), agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", [["step 0", ["chat"]]]]]
    [chat] = [sp for sp in otel_telemetry.spans() if sp.name == "chat"]
    assert chat.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_selectors_picks_are_side_calls_not_the_teams_input(
    otel_telemetry: InMemoryTelemetry, streaming: bool
) -> None:
    """A ``SelectorGroupChat``'s own model picks the next speaker: each pick a chat span with
    its tokens, but a side call: the run's input is what its members were asked (the task),
    not the selector's role-play prompt, and its answer the last speaker's."""
    from agent_contract.sources.autogen_stream import autogen_events

    await run_script(otel_telemetry, autogen_events(selector(streaming=streaming), "Weather?"),
                     agent_name="crew", capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent crew", PICKED]]
    run = otel_telemetry.span("invoke_agent crew").attributes or {}
    asked = json.loads(str(run["gen_ai.input.messages"]))
    said = [p["content"] for m in asked for p in m["parts"] if p["type"] == "text"]
    assert "Weather?" in said
    assert not any("role play" in text for text in said)  # the selector's own prompt
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "Sunny. TERMINATE"}]
    assert tokens(otel_telemetry) == ASKED + 40 + 50 + 7 + 8  # the picks still count
    assert otel_telemetry.open_spans() == []


async def test_a_society_of_minds_team_runs_its_tools_under_their_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``SocietyOfMindAgent``: an agent running a team inside its turn (kept in ``_team``, not
    as members): the team's members are reached as any team's, so each tool body runs under
    its own span, in the step of its request, and their requests' messages are on their
    calls."""
    from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core.tools import FunctionTool
    from opentelemetry import trace

    from agent_contract.sources.autogen_stream import autogen_events

    current: list[int] = []

    async def spied(city: str) -> str:
        current.append(trace.get_current_span().get_span_context().span_id)
        await asyncio.sleep(0)
        return "sunny"

    tool = FunctionTool(spied, name="weather", description="The weather.")
    calls = fa._calls(s.Call("w1", "weather", {"city": "Paris"}))
    researcher = AssistantAgent("researcher", model_client=fa._client([calls, _text("Sunny.")]),
                                tools=[tool], model_client_stream=True,
                                reflect_on_tool_use=True)  # fmt: skip
    inner = RoundRobinGroupChat([researcher, _writer()], termination_condition=_done())
    desk = SocietyOfMindAgent("desk", team=inner, model_client=fa._client([_text("Sunny.")]))
    await run_script(otel_telemetry, autogen_events(desk, "Weather?"), agent_name="desk",
                     capture_content=True)  # fmt: skip

    [tool_span] = [sp for sp in otel_telemetry.spans() if sp.name == "execute_tool weather"]
    assert current == [tool_span.context.span_id]
    assert otel_telemetry.outline() == [["invoke_agent desk", [
        ["step 0", ["chat", "execute_tool weather"]], ["step 1", ["chat"]], ["step 2", ["chat"]],
        ["step 3", ["chat"]],
    ]]]  # fmt: skip
    _check_order(otel_telemetry)
    chats = [sp for sp in otel_telemetry.spans() if sp.name == "chat"]
    assert all("gen_ai.input.messages" in (sp.attributes or {}) for sp in chats)


SPEAKERS = {
    "round_robin": ["researcher", "researcher", "writer"],
    "selector": ["SelectorGroupChatManager", "researcher", "researcher",
                 "SelectorGroupChatManager", "writer"],
    "magentic_one": ["MagenticOneOrchestrator", "researcher", "researcher",
                     "MagenticOneOrchestrator"],
    "swarm": ["router", "router", "researcher", "researcher"],
    "team_in_team": ["researcher", "researcher", "writer"],
    "team_tool": [None, "researcher", "researcher", "writer", None],  # the lead's around the desk's
}  # fmt: skip
"""Each step's ``agent_otel.phase``, in start order: the member (or the team's manager) that
made its model call; a lone agent's steps name none (its run does)."""


@pytest.mark.parametrize(("name", "build"), [pytest.param(i, b, id=i) for i, b, _, _ in TEAMS
                                             if i in SPEAKERS])  # fmt: skip
async def test_each_step_names_the_member_that_spoke(
    otel_telemetry: InMemoryTelemetry, name: str, build: Callable[[], Any]
) -> None:
    """Which member made each model call and ran each tool: its step says (the first speaker
    too), so the spans of a member's turn are found by its name, not by the run's phase events'
    times."""
    from agent_contract.sources.autogen_stream import autogen_events

    await run_script(otel_telemetry, autogen_events(build(), "Weather?"), agent_name="team")

    steps = sorted((sp for sp in otel_telemetry.spans() if sp.name.startswith("step ")),
                   key=lambda sp: sp.start_time or 0)  # fmt: skip
    assert [(sp.attributes or {}).get("agent_otel.phase") for sp in steps] == SPEAKERS[name]


def _desk() -> Any:
    """A selector whose manager picks the writer each run (its picks' input tokens 7, then 8;
    the writer's 50, then 51)."""
    from autogen_agentchat.teams import SelectorGroupChat

    picks = fa._client([_text("writer", 7, 1), _text("writer", 8, 1)])
    writer = fa.agent([_text("Sunny. TERMINATE", 50, 5), _text("Rainy. TERMINATE", 51, 5)], [],
                      name="writer")  # fmt: skip
    critic = fa.agent([], [], name="critic")
    return SelectorGroupChat([writer, critic], model_client=picks, termination_condition=_done(),
                             allow_repeated_speaker=True, name="desk")  # fmt: skip


DESK = [["step 0", ["chat"]], ["step 1", ["chat"]]]
"""One run of the desk: the manager's pick, then the writer."""


async def test_a_team_run_again_keeps_its_managers_calls(otel_telemetry: InMemoryTelemetry) -> None:
    """AutoGen continues a team's conversation by running it again (``run_stream`` on the
    same team, its queue kept): the second run's pick is a chat span of the manager too, with
    its tokens, before the writer's (before, it was placed by the first run's count of items
    and never reported)."""
    from agent_contract.sources.autogen_stream import autogen_events

    team = _desk()
    for task in ("Weather?", "And tomorrow?"):
        await run_script(otel_telemetry, autogen_events(team, task), agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", DESK], ["invoke_agent team", DESK]]
    assert tokens(otel_telemetry) == 7 + 50 + 8 + 51
    assert phases(otel_telemetry) == ["SelectorGroupChatManager", "writer"] * 2


async def test_a_team_tool_called_twice_keeps_its_managers_calls_each_time(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The same team behind a ``TeamTool`` the lead calls twice: each call's nested run has
    its manager's pick, as the first one does."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.tools import TeamTool

    from agent_contract.sources.autogen_stream import autogen_events

    tool = TeamTool(_desk(), name="desk", description="The weather desk.",
                    return_value_as_last_message=True)  # fmt: skip
    asks = [fa._calls(s.Call("d1", "desk", {"task": "Paris?"})),
            fa._calls(s.Call("d2", "desk", {"task": "Rome?"})), _text("Done.", 60, 6)]  # fmt: skip
    lead = AssistantAgent("lead", model_client=fa._client(asks), tools=[tool],
                          model_client_stream=True, max_tool_iterations=3)  # fmt: skip
    await run_script(otel_telemetry, autogen_events(lead, "Weather?"), agent_name="lead")

    desk = ["execute_tool desk", [["invoke_agent desk", DESK]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", desk]], ["step 1", ["chat", desk]], ["step 2", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * ASKED + 60 + 7 + 50 + 8 + 51

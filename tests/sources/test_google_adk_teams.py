"""Google ADK's multi-agent runs (a ``ParallelAgent``, a ``SequentialAgent``, a transfer to a
sub-agent) streamed through ``google_adk_events``: one run, every model call a chat span with
its own text and tokens once, each agent's turn in steps naming it where agents take turns.
Runs in ADK's own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import phases, tokens

pytest.importorskip("google.adk")

CHAT = "chat scripted-gemini"


def _says(*words: str, barrier: Any = None) -> Any:
    from google.genai import types

    from ._fw_google_adk import _model

    return _model([[types.Part(text=w) for w in words]], barrier=barrier)


def _said(telemetry: InMemoryTelemetry) -> list[str]:
    """Each chat span's answer, in the order the calls started."""
    chats = sorted((s for s in telemetry.spans() if s.name == CHAT),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    said = [json.loads(str((c.attributes or {})["gen_ai.output.messages"])) for c in chats]
    return ["".join(p.get("content", "") for m in ms for p in m["parts"]) for ms in said]


async def test_a_parallel_agents_streamed_calls_are_each_told_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two agents of a ``ParallelAgent`` stream at the same time, their events interleaved in
    the run's stream. Before, the adapter read them as one call: the first chat span held
    both agents' text ("left right ! !"), the second opened only at the first one's end."""
    from google.adk.agents import LlmAgent, ParallelAgent

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _script as s

    barrier = asyncio.Barrier(2)
    team = ParallelAgent(name="team", sub_agents=[
        LlmAgent(name=name, model=_says(f"{name} ", "!", barrier=barrier))
        for name in ("left", "right")
    ])  # fmt: skip
    await run_script(otel_telemetry, google_adk_events(team, "Go"), agent_name="team",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent team", [["step 0", [CHAT, CHAT]]]]]
    assert sorted(_said(otel_telemetry)) == ["left !", "right !"]
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("before_output", [False, True], ids=["streaming", "before_output"])
async def test_a_parallel_branch_whose_model_raises_fails_its_own_call(
    otel_telemetry: InMemoryTelemetry, before_output: bool
) -> None:
    """One branch of a ``ParallelAgent`` fails (its model raises, mid-stream or before any
    output) while its sibling's call still streams: the failing branch's chat span holds the
    exception, its sibling's is cut short, not failed. Before, the exception landed on
    whichever call was open (the sibling's), and a branch failing before output had no
    chat span at all."""
    from google.adk.agents import LlmAgent, ParallelAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _script as s
    from ._fw_google_adk import _model

    barrier = asyncio.Barrier(2)
    says = [[types.Part(text="right "), types.Part(text="!")]]
    right = (_model(says, refuse=True, barrier=barrier) if before_output
             else _model(says, fail=True, barrier=barrier))  # fmt: skip
    if before_output:
        right.calls = 1  # (``refuse`` fails the model's second call: this is it)
    left = _model([[types.Part(text="left "), types.Part(text="!")]], barrier=barrier, stall=True)
    branches = [LlmAgent(name="left", model=left), LlmAgent(name="right", model=right)]
    team = ParallelAgent(name="team", sub_agents=branches)
    raised = s.Overloaded if not before_output else RuntimeError
    with pytest.raises(raised):
        await run_script(otel_telemetry, google_adk_events(team, "Go"), agent_name="team",
                         capture_content=True)  # fmt: skip

    chats = dict(zip(_said(otel_telemetry), _chats(otel_telemetry), strict=True))
    assert set(chats) == {"left ", "" if before_output else "right "}
    failed = chats["" if before_output else "right "]
    assert failed.status.status_code.name == "ERROR"
    assert (failed.attributes or {})["error.type"] == ("Refused" if before_output else "Overloaded")
    assert chats["left "].status.status_code.name == "UNSET"
    assert (chats["left "].attributes or {}).get("agent_otel.incomplete") is True
    assert otel_telemetry.open_spans() == []


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    """The chat spans, in the order the calls started (as ``_said`` reads them)."""
    return sorted((s for s in telemetry.spans() if s.name == CHAT),
                  key=lambda s: s.start_time or 0)  # fmt: skip


async def test_a_sequence_gives_each_agent_its_own_steps(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``SequentialAgent``'s agents take turns: each turn is steps naming its agent. Before,
    the second agent's call joined the first one's step, which named no agent."""
    from google.adk.agents import LlmAgent, SequentialAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    def lookup(q: str) -> str:
        """Look it up."""
        return "found"

    ask = types.Part(function_call=types.FunctionCall(id="l1", name="lookup", args={"q": "x"}))
    researcher = LlmAgent(name="researcher", model=_model([[ask], [types.Part(text="Found.")]]),
                          tools=[lookup])  # fmt: skip
    writer = LlmAgent(name="writer", model=_says("The answer."))
    team = SequentialAgent(name="team", sub_agents=[researcher, writer])
    await run_script(otel_telemetry, google_adk_events(team, "Go"), agent_name="team",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", [CHAT, "execute_tool lookup"]], ["step 1", [CHAT]], ["step 2", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["researcher", "researcher", "writer"]
    assert _said(otel_telemetry) == ["", "Found.", "The answer."]
    assert otel_telemetry.open_spans() == []


async def test_a_transfer_keeps_the_root_agents_steps_unnamed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``transfer_to_agent``: the run's own agent's steps name no phase (as a lone agent's),
    the sub-agent's steps name it."""
    from google.adk.agents import LlmAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    go = types.Part(function_call=types.FunctionCall(id="t1", name="transfer_to_agent",
                                                     args={"agent_name": "billing"}))  # fmt: skip
    billing = LlmAgent(name="billing", model=_says("Paid."), description="Bills.")
    root = LlmAgent(name="root", model=_model([[go]]), sub_agents=[billing])
    await run_script(otel_telemetry, google_adk_events(root, "Pay"), agent_name="root")

    assert otel_telemetry.outline() == [["invoke_agent root", [
        ["step 0", [CHAT, "execute_tool transfer_to_agent"]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == [None, "billing"]
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("given", ["node", "runner"])
async def test_a_workflow_graphs_agents_each_name_their_own_model(
    otel_telemetry: InMemoryTelemetry, given: str
) -> None:
    """ADK 2's ``Workflow`` (the graph that replaces the deprecated sequence and loop
    agents): its agents take turns as a sequence's do, each call named after the model its
    agent asked for, and a node that is no agent (a function) adds no span. Before, the
    adapter refused the workflow itself (it has no ``run_async``), and on a runner of it
    every chat span named no model: the agents were looked up on the root, a graph."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.adk.workflow import START, Workflow

    from agent_contract.sources.google_adk_stream import google_adk_events

    def shout(node_input: str) -> str:
        return str(node_input).upper()

    drafting, checking = _says("draft"), _says("fine")
    drafting.model, checking.model = "drafting-model", "checking-model"
    writer = LlmAgent(name="writer", model=drafting)
    critic = LlmAgent(name="critic", model=checking)
    flow = Workflow(name="flow", edges=[(START, writer, shout, critic)])
    run = flow if given == "node" else InMemoryRunner(node=flow, app_name="flow")
    await run_script(otel_telemetry, google_adk_events(run, "Go"), agent_name="flow",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent flow", [
        ["step 0", ["chat drafting-model"]], ["step 1", ["chat checking-model"]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["writer", "critic"]
    [answer] = json.loads(
        str((otel_telemetry.span("invoke_agent flow").attributes or {})["gen_ai.output.messages"])
    )
    assert answer["parts"] == [{"type": "text", "content": "fine"}]
    assert otel_telemetry.open_spans() == []


async def test_each_round_of_a_loop_is_a_step_of_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``LoopAgent`` runs its one agent again each round: each round is a turn of its own.
    Before, the rounds' calls all sat in one step, as if the agent had asked twice at once."""
    from google.adk.agents import LlmAgent, LoopAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    model = _model([[types.Part(text="First draft.")], [types.Part(text="Second draft.")]])
    loop = LoopAgent(name="loop", sub_agents=[LlmAgent(name="writer", model=model)],
                     max_iterations=2)  # fmt: skip
    await run_script(otel_telemetry, google_adk_events(loop, "Go"), agent_name="loop",
                     capture_content=True)  # fmt: skip

    assert model.calls == 2
    assert otel_telemetry.outline() == [["invoke_agent loop", [
        ["step 0", [CHAT]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["writer", "writer"]
    assert _said(otel_telemetry) == ["First draft.", "Second draft."]
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_a_loop_ended_by_exit_loop_answers_with_its_last_draft(
    otel_telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    """A ``LoopAgent`` of a writer and a critic, the critic ending the loop with ADK's
    ``exit_loop`` (it escalates and skips the summary: no model speaks after its call). The
    run's answer is the last final response with text, the writer's second draft, as ADK's
    own final responses show it. Before, it was the critic's call of ``exit_loop``."""
    from google.adk.agents import LlmAgent, LoopAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.tools import exit_loop
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    drafts = [[types.Part(text="Draft one.")], [types.Part(text="Draft two.")]]
    writer = LlmAgent(name="writer", model=_model(drafts))
    stop = types.Part(function_call=types.FunctionCall(id="x1", name="exit_loop", args={}))
    critic_model = _model([[types.Part(text="Needs work.")], [stop]])
    critic = LlmAgent(name="critic", model=critic_model, tools=[exit_loop])
    loop = LoopAgent(name="loop", sub_agents=[writer, critic], max_iterations=5)
    mode = StreamingMode.SSE if streamed else StreamingMode.NONE
    source = google_adk_events(loop, "Go", run_config=RunConfig(streaming_mode=mode))
    await run_script(otel_telemetry, source, agent_name="loop", capture_content=True)

    assert critic_model.calls == 2
    assert phases(otel_telemetry) == ["writer", "critic", "writer", "critic"]
    tool = otel_telemetry.span("execute_tool exit_loop")
    assert tool.status.status_code is StatusCode.UNSET
    [answer] = json.loads(
        str((otel_telemetry.span("invoke_agent loop").attributes or {})["gen_ai.output.messages"])
    )
    assert answer["parts"] == [{"type": "text", "content": "Draft two."}]
    assert otel_telemetry.open_spans() == []

"""An Agno ``Workflow`` streamed through ``agno_events()``: one run, each step's agent run read
into it.

Agno streams a workflow's steps in its own stream: ``StepStarted``, then the step agent's run
(its own ``run_id``, the workflow's as ``workflow_run_id``), then ``StepCompleted``. Every
agent's model calls and tools are steps of the run, after a phase naming the workflow step,
each call's tokens once, each tool's body under its span; the run's answer is the last step's.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script_chat as chat
from ._fw_agno import agent
from ._trace import phases, tokens

pytest.importorskip("agno")


async def test_each_steps_agent_is_steps_of_the_workflows_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agno.workflow import Step, Workflow

    from agent_contract.sources.agno_stream import agno_events

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    def weather(city: str) -> str:
        """The weather."""
        with tracer.start_as_current_span(f"client {city}"):
            return "sunny"

    researcher = agent(chat.call("weather", {"city": "Paris"}, "w1"), chat.answer("Paris: sunny"),
                       tools=[weather], name="researcher")  # fmt: skip
    writer = agent(chat.answer("Summary: sunny"), tools=[], name="writer")
    flow = Workflow(name="flow", telemetry=False,
                    steps=[Step(name="research", agent=researcher),
                           Step(name="write", agent=writer)])  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(flow, "Weather?", sink=kept.append),
                     agent_name="flow", capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [
        ["invoke_agent flow", [
            ["step 0", ["chat gpt-4o-mini", ["execute_tool weather", ["client Paris"]]]],
            ["step 1", ["chat gpt-4o-mini"]],
            ["step 2", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    assert phases(otel_telemetry) == ["research", "research", "write"]
    used = [e for e in kept if getattr(e, "event", None) == "ModelRequestCompleted"]
    assert len(used) == 3
    assert tokens(otel_telemetry) == sum(e.input_tokens for e in used)  # each call, once
    run = dict(otel_telemetry.span("invoke_agent flow").attributes or {})
    assert "Summary: sunny" in str(run["gen_ai.output.messages"])
    assert "Paris: sunny" not in str(run["gen_ai.output.messages"])
    assert otel_telemetry.open_spans() == []


async def test_steps_run_in_parallel_are_told_one_at_a_time_each_call_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``Parallel`` runs its steps at once and Agno interleaves their events: each step's
    agent is still a step of the run of its own, its call's text its own, in the order the
    steps started, before the step after the ``Parallel``."""
    from agno.workflow import Parallel, Step, Workflow

    from agent_contract.sources.agno_stream import agno_events

    paris = agent(chat.answer("Paris: sunny"), tools=[], name="paris")
    rome = agent(chat.answer("Rome: rainy"), tools=[], name="rome")
    writer = agent(chat.answer("Sunny and rainy."), tools=[], name="writer")
    both = Parallel(Step(name="paris", agent=paris), Step(name="rome", agent=rome), name="both")
    flow = Workflow(name="flow", telemetry=False,
                    steps=[both, Step(name="write", agent=writer)])  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(flow, "Weather?", sink=kept.append),
                     agent_name="flow", capture_content=True)  # fmt: skip

    said = [e.event for e in kept if getattr(e, "step_name", None) in ("paris", "rome")]
    assert said.index("RunStarted") < said.index("StepCompleted")  # they did run at once
    chats = sorted((s for s in otel_telemetry.spans() if s.name.startswith("chat")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    texts = ["Paris: sunny", "Rome: rainy", "Sunny and rainy."]
    assert [t in str((s.attributes or {}).get("gen_ai.output.messages")) for s, t in
            zip(chats, texts, strict=True)] == [True, True, True]  # fmt: skip
    assert phases(otel_telemetry) == ["paris", "rome", "write"]
    used = [e for e in kept if getattr(e, "event", None) == "ModelRequestCompleted"]
    assert tokens(otel_telemetry) == sum(e.input_tokens for e in used)  # each call, once
    assert all("agent_otel.incomplete" not in (s.attributes or {}) for s in chats)
    assert otel_telemetry.open_spans() == []


async def test_the_workflows_answer_is_what_it_returns_a_function_steps_output_too(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A workflow whose last step is a function (no model): the run's answer is the workflow's
    output, not the text of the last agent that spoke."""
    from agno.workflow import Step, StepInput, StepOutput, Workflow

    from agent_contract.sources.agno_stream import agno_events

    def shout(step_input: StepInput) -> StepOutput:
        return StepOutput(content=str(step_input.previous_step_content).upper())

    researcher = agent(chat.answer("Paris: sunny"), tools=[], name="researcher")
    flow = Workflow(name="flow", telemetry=False,
                    steps=[Step(name="research", agent=researcher),
                           Step(name="shout", executor=shout)])  # fmt: skip
    await run_script(otel_telemetry, agno_events(flow, "Weather?"), agent_name="flow",
                     capture_content=True)  # fmt: skip

    run = dict(otel_telemetry.span("invoke_agent flow").attributes or {})
    assert "PARIS: SUNNY" in str(run["gen_ai.output.messages"])
    chat_span = dict(otel_telemetry.span("chat gpt-4o-mini").attributes or {})
    assert "Paris: sunny" in str(chat_span["gen_ai.output.messages"])  # the agent's own text
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("team_first", [True, False], ids=["team-live", "team-held"])
async def test_a_teams_member_in_a_parallel_step_is_a_nested_run_under_its_delegation(
    otel_telemetry: InMemoryTelemetry, team_first: bool
) -> None:
    """A team in a ``Parallel`` beside an agent: the member its leader delegates to is a run
    of its own under that delegation, its tool once, inside it, whether the team's step is
    read live or held until the other step completed; every call is a chat span, once."""
    from agno.models.openai import OpenAIChat
    from agno.team import Team
    from agno.workflow import Parallel, Step, Workflow

    from agent_contract.sources.agno_stream import agno_events

    from ._http import openai_client

    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    clerk = agent(chat.call("weather", {"city": "Paris"}, "w1"), chat.answer("Paris: sunny"),
                  tools=[weather], name="clerk")  # fmt: skip
    ask = chat.call("delegate_task_to_member", {"member_id": "clerk", "task": "Paris?"}, "d1")
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(ask, chat.answer("Sunny.")))
    team = Team(members=[clerk], model=model, name="lead", telemetry=False)
    rome = agent(chat.answer("Rome: rainy"), tools=[], name="rome")
    steps = [Step(name="team", team=team), Step(name="rome", agent=rome)]
    both = Parallel(*(steps if team_first else steps[::-1]), name="both")
    flow = Workflow(name="flow", telemetry=False, steps=[both])
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(flow, "Weather?", sink=kept.append),
                     agent_name="flow")  # fmt: skip

    member = ["invoke_agent clerk", [["step 0", ["chat gpt-4o-mini", "execute_tool weather"]],
                                     ["step 1", ["chat gpt-4o-mini"]]]]  # fmt: skip
    team_steps = [
        ["chat gpt-4o-mini", ["execute_tool delegate_task_to_member", [member]]],
        ["chat gpt-4o-mini"],
    ]
    rome_step = [["chat gpt-4o-mini"]]
    ordered = team_steps + rome_step if team_first else rome_step + team_steps
    assert otel_telemetry.outline() == [
        ["invoke_agent flow", [[f"step {n}", children] for n, children in enumerate(ordered)]],
    ]
    used = [e for e in kept if getattr(e, "event", "").endswith("ModelRequestCompleted")]
    assert len(used) == 5
    assert tokens(otel_telemetry) == sum(e.input_tokens for e in used)  # each call, once
    assert otel_telemetry.open_spans() == []


async def test_a_held_parallel_steps_tool_is_in_that_steps_own_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two agents in a ``Parallel``, each calling a tool: the one read after the other (its
    events held) still has its tool's span beside its own call, not in the first agent's step
    that was open when its body ran."""
    from agno.workflow import Parallel, Step, Workflow

    from agent_contract.sources.agno_stream import agno_events

    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    def bot(city: str, call_id: str) -> Any:
        asks = chat.call("weather", {"city": city}, call_id)
        return agent(asks, chat.answer(f"{city}: sunny"), tools=[weather], name=city)

    both = Parallel(Step(name="rome", agent=bot("Rome", "w_rome")),
                    Step(name="paris", agent=bot("Paris", "w_paris")), name="both")  # fmt: skip
    flow = Workflow(name="flow", telemetry=False, steps=[both])
    await run_script(otel_telemetry, agno_events(flow, "Weather?"), agent_name="flow")

    assert otel_telemetry.outline() == [
        ["invoke_agent flow", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool weather"]],
            ["step 1", ["chat gpt-4o-mini"]],
            ["step 2", ["chat gpt-4o-mini", "execute_tool weather"]],
            ["step 3", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    steps = {s.context.span_id: s.name for s in otel_telemetry.spans() if s.name.startswith("step")}
    tools = {(s.attributes or {}).get("gen_ai.tool.call.id"): steps[s.parent.span_id]
             for s in otel_telemetry.spans()
             if s.name == "execute_tool weather" and s.parent}  # fmt: skip
    assert tools == {"w_rome": "step 0", "w_paris": "step 2"}
    assert phases(otel_telemetry) == ["rome", "rome", "paris", "paris"]
    assert otel_telemetry.open_spans() == []


def _refusing(name: str) -> Any:
    """An agent whose model refuses every request (a 400): its run ends with a ``RunError``."""
    from ._http import httpx

    def refuse(request: Any) -> Any:
        error = {"error": {"message": "bad request", "type": "invalid_request_error"}}
        return httpx.Response(400, json=error)

    return agent(refuse, tools=[], name=name)


@pytest.mark.parametrize("parallel", [False, True], ids=["in-turn", "parallel"])
async def test_a_step_whose_agent_fails_fails_its_calls_and_the_workflow_goes_on(
    otel_telemetry: InMemoryTelemetry, parallel: bool
) -> None:
    """Agno runs a failed step again (``max_retries``) and then skips it (its
    default): the workflow answers with the next step's output. Each attempt's call fails with
    the model's error; the run does not, and goes on to the other step, whose tool is in its
    own step (before, the adapter raised at the first attempt's ``RunError`` and closed the
    stream, cancelling the workflow Agno would have finished)."""
    from agno.workflow import Parallel, Step, Workflow
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.agno_stream import agno_events

    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    paris = agent(chat.call("weather", {"city": "Paris"}, "w1"), chat.answer("Paris: sunny"),
                  tools=[weather], name="paris")  # fmt: skip
    steps = [Step(name="rome", agent=_refusing("rome"), max_retries=1),
             Step(name="paris", agent=paris)]  # fmt: skip
    flow = Workflow(name="flow", telemetry=False,
                    steps=[Parallel(*steps, name="both")] if parallel else steps)  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(flow, "Weather?", sink=kept.append),
                     agent_name="flow", capture_content=True)  # fmt: skip

    assert [getattr(e, "event", None) for e in kept].count("RunError") == 2  # two attempts
    run = otel_telemetry.span("invoke_agent flow")
    assert run.status.status_code is StatusCode.UNSET
    assert "Paris: sunny" in str((run.attributes or {}).get("gen_ai.output.messages"))
    by_phase: dict[str, list[list[str]]] = {}
    for step in sorted((s for s in otel_telemetry.spans() if s.name.startswith("step ")),
                       key=lambda s: s.start_time or 0):  # fmt: skip
        under = step.context.span_id
        children = [s for s in otel_telemetry.spans() if s.parent and s.parent.span_id == under]
        phase = str((step.attributes or {}).get("agent_otel.phase"))
        by_phase.setdefault(phase, []).append(sorted(s.name for s in children))
    assert by_phase == {
        "rome": [["chat gpt-4o-mini"], ["chat gpt-4o-mini"]],
        "paris": [["chat gpt-4o-mini", "execute_tool weather"], ["chat gpt-4o-mini"]],
    }
    failed = [(s.attributes or {}).get("error.type") for s in otel_telemetry.spans()
              if s.status.status_code is StatusCode.ERROR]  # fmt: skip
    assert failed == ["model_provider_error", "model_provider_error"]  # rome's two calls
    assert otel_telemetry.open_spans() == []

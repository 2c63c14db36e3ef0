"""CrewAI beyond the conformance matrix: concurrent runs kept apart, the result last in ``sink``."""

from __future__ import annotations

import asyncio
import threading
from contextlib import suppress
from typing import Any

import pytest

from agent_contract.protocol import TextDelta, ToolCall, ToolResult
from agent_otel.testing import run_script

pytest.importorskip("crewai")

from . import _fw_crewai as fw
from . import _script as s
from ._trace import check_inner_tools, phases, spans_saying


async def test_concurrent_runs_keep_their_own_events() -> None:
    def tools_then_answer(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_w", "weather", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny in Paris.", [])

    async def play(model: Any, tools: list[Any]) -> tuple[list[Any], list[Any]]:
        kept: list[Any] = []
        events = fw.crewai_events(fw.agent(model, tools), s.QUESTION, sink=kept.append)
        return [e async for e in events], kept

    (tooled, kept_a), (plain, kept_b) = await asyncio.gather(
        play(fw.llm(tools_then_answer), fw.tools(s.Run())),
        play(fw.llm(lambda turn: fw.completion(0, "Only words.", [])), []),
    )

    assert [e.id for e in tooled if isinstance(e, ToolCall)] == ["call_w"]
    assert [e.tool_call_id for e in tooled if isinstance(e, ToolResult)] == ["call_w"]
    assert "".join(e.text for e in tooled if isinstance(e, TextDelta)) == "Sunny in Paris."
    assert not [e for e in plain if isinstance(e, (ToolCall, ToolResult))]
    assert "".join(e.text for e in plain if isinstance(e, TextDelta)) == "Only words."
    assert kept_a[-1].raw == "Sunny in Paris." and kept_b[-1].raw == "Only words."
    mine = {type(e).__name__ for e in kept_b}
    assert "ToolUsageStartedEvent" not in mine  # none of the other run's CrewAI events


async def test_the_agents_exception_comes_out_as_the_same_object() -> None:
    boom = s.Overloaded("overloaded")

    class Broken:
        def kickoff(self, *args: Any, **kwargs: Any) -> Any:
            raise boom

    with pytest.raises(s.Overloaded) as caught:
        [_ async for _ in fw.crewai_events(Broken(), s.QUESTION)]
    assert caught.value is boom


async def test_a_tool_reporting_its_own_failure_is_a_failed_call(
    otel_telemetry: Any,
) -> None:
    from crewai.tools import tool
    from crewai.tools.tool_failure import ToolFailure
    from opentelemetry.trace import StatusCode

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        return s.weather_sync(city)

    @tool("forecast")
    def forecast(city: str) -> Any:
        """Tomorrow's forecast for a city."""
        return ToolFailure(message=f"no forecast for {city}", code="no_data")

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [(c.id, c.name, c.json) for c in s.CALLS])
        return fw.completion(1, "".join(s.ANSWER), [])

    source = fw.crewai_events(fw.agent(fw.llm(respond), [weather, forecast]), s.QUESTION)
    events = await run_script(otel_telemetry, source, agent_name="agent")

    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["call_f"].is_error and not results["call_w"].is_error
    spans = {s.name: s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")}
    failed, fine = spans["execute_tool forecast"], spans["execute_tool weather"]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "no_data"
    assert fine.status.status_code is not StatusCode.ERROR


async def test_a_tool_body_finds_its_step_however_far_the_consumer_lags(
    otel_telemetry: Any,
) -> None:
    """CrewAI runs ahead of the consumer on its own threads; a consumer slow to pull (a loaded
    loop) must not put the tool's span on the run: its body waits until the consumer has taken
    the events before it, so its scope finds the step and the call they opened."""
    from opentelemetry import trace as otel_trace

    parents: list[str] = []

    def lookup(city: str) -> str:
        """Look up the weather."""
        parents.append(getattr(otel_trace.get_current_span(), "name", ""))
        return "sunny"

    from crewai.tools import tool

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_l", "lookup", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny.", [])

    async def lagging(events: Any) -> Any:
        async for event in events:  # each event reaches the recorder 0.2 s after CrewAI's
            await asyncio.sleep(0.2)
            yield event

    crew = fw.agent(fw.llm(respond), [tool("lookup")(lookup)])
    events = lagging(fw.crewai_events(crew, s.QUESTION))
    await run_script(otel_telemetry, events, agent_name="agent")

    assert parents == ["execute_tool lookup"]
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool lookup"]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip


async def test_each_agent_working_on_a_task_is_a_step_of_its_own_named_after_it(
    otel_telemetry: Any,
) -> None:
    """A crew's next task (here its next agent, reading the first task as ``context``) and a
    task retried after its guardrail refused the answer each start a step: before, their model
    calls shared the step of the call before them, whoever made it."""
    from crewai import Agent, Crew, Task

    def researcher_says(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_w", "weather", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny.", [])

    def writer_says(turn: int) -> bytes:
        return fw.completion(turn, "Too short." if turn == 0 else "Paris is sunny today.", [])

    def agent(role: str, respond: Any, tools: list[Any]) -> Any:
        return Agent(role=role, goal="Help.", backstory="A colleague.", llm=fw.llm(respond),
                     tools=tools, verbose=False)  # fmt: skip

    researcher = agent("researcher", researcher_says, fw.tools(s.Run())[:1])
    writer = agent("writer", writer_says, [])
    research = Task(description="Find the weather.", expected_output="a fact", agent=researcher)
    refused: list[str] = []

    def long_enough(output):  # type: ignore[no-untyped-def]  # CrewAI rejects a lazy annotation
        if len(output.raw) < 12:
            refused.append(output.raw)
            return False, "Write a whole sentence."
        return True, output.raw

    write = Task(description="Write it up.", expected_output="a line", agent=writer,
                 context=[research], guardrail=long_enough)  # fmt: skip
    crew = Crew(agents=[researcher, writer], tasks=[research, write], verbose=False)
    await run_script(otel_telemetry, fw.crewai_events(crew), agent_name="crew")

    assert refused == ["Too short."]
    assert otel_telemetry.outline() == [
        ["invoke_agent crew", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool weather"]],
            ["step 1", ["chat gpt-4o-mini"]],
            ["step 2", ["chat gpt-4o-mini"]],
            ["step 3", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    assert phases(otel_telemetry) == ["researcher", "researcher", "writer", "writer"]


async def test_a_delegation_crewai_answers_with_its_error_text_is_a_failed_call(
    otel_telemetry: Any,
) -> None:
    """CrewAI's delegation tools return text instead of raising when the coworker named does
    not exist or the coworker failed: the call fails, named after which."""
    import json

    from crewai import Agent, Crew, Task
    from opentelemetry.trace import StatusCode

    def delegate(call_id: str, who: str) -> tuple[str, str, str]:
        args = {"task": "Say it.", "context": "Paris", "coworker": who}
        return call_id, "delegate_work_to_coworker", json.dumps(args)

    def lead_says(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [delegate("d1", "nobody"), delegate("d2", "writer")])
        return fw.completion(1, "Nobody could help.", [])

    lead = Agent(role="lead", goal="Lead.", backstory="A boss.", llm=fw.llm(lead_says),
                 allow_delegation=True, verbose=False)  # fmt: skip
    writer = Agent(role="writer", goal="Help.", backstory="A colleague.", verbose=False,
                   max_retry_limit=0, llm=fw.llm(lambda turn: s.Overloaded("down")))  # fmt: skip
    task = Task(description="Say something.", expected_output="a line", agent=lead)
    crew = Crew(agents=[lead, writer], tasks=[task], verbose=False)
    await run_script(otel_telemetry, fw.crewai_events(crew), agent_name="crew")

    calls = {
        (x.attributes or {}).get("gen_ai.tool.call.id"): x
        for x in otel_telemetry.spans()
        if x.name == "execute_tool delegate_work_to_coworker"
    }
    assert {k: (v.attributes or {}).get("error.type") for k, v in calls.items()} == {
        "d1": "coworker_not_found", "d2": "coworker_failed",
    }  # fmt: skip
    assert all(x.status.status_code is StatusCode.ERROR for x in calls.values())


async def test_tasks_run_at_once_each_count_their_own_calls_tokens(otel_telemetry: Any) -> None:
    """Two ``async_execution`` tasks: their agents' model calls are open at once, and the one
    that started first answers first. Its usage went to the newest open call, the other
    agent's, which then held both calls' tokens (the run's total still right); now each call
    counts the tokens its own response reported."""
    import json
    import threading

    from crewai import Agent, Crew, Task

    started: list[str] = []  # the roles whose calls started, in the run's order
    both, first_done = threading.Event(), threading.Event()

    def says(role: str, tokens: int) -> Any:
        def respond(turn: int) -> bytes:
            both.wait(20)  # both calls open, in the run's stream
            if started[0] != role:  # the later call answers once the first one's end is read
                first_done.wait(20)
            body = json.loads(fw.completion(0, f"{role} done.", []))
            body["usage"] = {"prompt_tokens": tokens, "completion_tokens": 1,
                             "total_tokens": tokens + 1}  # fmt: skip
            return json.dumps(body).encode()

        return respond

    def read(event: Any) -> None:
        kind = type(event).__name__
        if kind == "LLMCallStartedEvent":
            started.append(event.agent_role)
            if len(started) == 2:
                both.set()
        if kind == "LLMCallCompletedEvent":
            first_done.set()

    def agent(role: str, respond: Any) -> Any:
        return Agent(role=role, goal="Help.", backstory="A colleague.", llm=fw.llm(respond),
                     verbose=False)  # fmt: skip

    left, right = agent("left", says("left", 100)), agent("right", says("right", 200))
    last = agent("last", lambda turn: fw.completion(1, "Both done.", []))
    tasks = [Task(description=f"Do {a.role}'s part.", expected_output="a line", agent=a,
                  async_execution=True) for a in (left, right)]  # fmt: skip
    tasks.append(Task(description="Sum up.", expected_output="a line", agent=last,
                      context=list(tasks)))  # fmt: skip
    crew = Crew(agents=[left, right, last], tasks=tasks, verbose=False)
    await run_script(otel_telemetry, fw.crewai_events(crew, sink=read), agent_name="crew")

    counted = sorted(int((sp.attributes or {}).get("gen_ai.usage.input_tokens", 0))
                     for sp in otel_telemetry.spans() if sp.name.startswith("chat "))  # fmt: skip
    assert counted == sorted([100, 200, s.TURNS[1].input])
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("capture", [True, False], ids=["capture_on", "capture_off"])
async def test_an_answer_a_task_guardrail_refused_fails_the_step_that_gave_it(
    otel_telemetry: Any, capture: bool
) -> None:
    """A task's guardrail refuses the agent's first answer and CrewAI runs the task again with
    the guardrail's feedback: the step that gave the refused answer fails
    ``guardrail_rejected`` (the feedback, content, describes it only with capture on), the
    retry's step does not, and the run answers. Before, the refused step looked like any
    other."""
    from crewai import Agent, Crew, Task
    from opentelemetry.trace import StatusCode

    def writer_says(turn: int) -> bytes:
        return fw.completion(turn, "Too short." if turn == 0 else "Paris is sunny today.", [])

    writer = Agent(role="writer", goal="Help.", backstory="A colleague.", verbose=False,
                   llm=fw.llm(writer_says))  # fmt: skip

    def long_enough(output):  # type: ignore[no-untyped-def]  # CrewAI rejects a lazy annotation
        if len(output.raw) < 12:
            return False, "Write a whole sentence."
        return True, output.raw

    task = Task(description="Write it up.", expected_output="a line", agent=writer,
                guardrail=long_enough)  # fmt: skip
    crew = Crew(agents=[writer], tasks=[task], verbose=False)
    await run_script(otel_telemetry, fw.crewai_events(crew), agent_name="crew",
                     capture_content=capture)  # fmt: skip

    assert otel_telemetry.outline() == [
        ["invoke_agent crew", [["step 0", ["chat gpt-4o-mini"]],
                               ["step 1", ["chat gpt-4o-mini"]]]],
    ]  # fmt: skip
    refused, answered = sorted((x for x in otel_telemetry.spans() if x.name.startswith("step ")),
                               key=lambda x: x.name)  # fmt: skip
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == "guardrail_rejected"
    if capture:
        assert refused.status.description == "Write a whole sentence."
    else:  # nowhere on any span: status, attributes or events
        assert spans_saying(otel_telemetry, "whole sentence") == []
    assert answered.status.status_code is StatusCode.UNSET
    assert otel_telemetry.span("invoke_agent crew").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_a_model_call_that_runs_its_function_keeps_its_tokens(otel_telemetry: Any) -> None:
    """An agent with ``reasoning=True`` first asks its LLM for a plan by a function the LLM
    runs itself (``available_functions``: CrewAI's ``create_reasoning_plan``). CrewAI reports
    that call's completion with no usage, though the request was billed and its LLM counted
    it: the call's tokens are now read from the LLM's own counters (before and after, as
    CrewAI's kickoff reports per-call usage), so both calls carry theirs. Before, the plan's
    call had none."""
    import json

    from crewai import Agent

    from ._trace import tokens

    plan = json.dumps({"plan": "Answer it.", "steps": [], "ready": True})

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("r1", "create_reasoning_plan", plan)])
        return fw.completion(1, "Sunny.", [])

    bot = Agent(role="bot", goal="Answer.", backstory="A forecaster.", llm=fw.llm(respond),
                reasoning=True, verbose=False)  # fmt: skip
    await run_script(otel_telemetry, fw.crewai_events(bot, s.QUESTION), agent_name="bot")

    chats = sorted((x for x in otel_telemetry.spans() if x.name == "chat gpt-4o-mini"),
                   key=lambda x: x.start_time or 0)  # fmt: skip
    assert [(c.attributes or {}).get("gen_ai.usage.input_tokens") for c in chats] == [
        s.TURNS[0].input, s.TURNS[1].input,
    ]  # fmt: skip
    assert (chats[0].attributes or {})["gen_ai.usage.output_tokens"] == s.TURNS[0].output
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_a_call_whose_arguments_hold_a_nan_is_the_tool_crewai_runs(
    otel_telemetry: Any,
) -> None:
    """The model's arguments text holds a NaN (``json.loads`` reads it, as CrewAI does): the
    native call is the one CrewAI runs, one call and one tool span, its result on it. Before:
    the tool's start matched no call (a NaN equals no NaN), so a second call of the adapter's
    was made up for it and the model's call never ended."""
    import math

    def nan_then_answer(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_b", "book", '{"on": NaN}')])
        return fw.completion(1, "Booked.", [])

    from crewai.tools import tool

    ran: list[float] = []

    @tool("book")
    def book(on: float) -> str:
        """Book a day."""
        ran.append(on)
        return "booked"

    kept: list[Any] = []
    events = fw.crewai_events(fw.agent(fw.llm(nan_then_answer), [book]), "Book?", sink=kept.append)
    got = await run_script(otel_telemetry, events)

    assert len(ran) == 1 and math.isnan(ran[0])  # CrewAI ran it with the NaN it read
    assert [e.id for e in got if isinstance(e, ToolCall)] == ["call_b"]
    assert [e.tool_call_id for e in got if isinstance(e, ToolResult)] == ["call_b"]
    tools = [t for t in otel_telemetry.spans() if t.name == "execute_tool book"]
    assert [(t.attributes or {}).get("gen_ai.tool.call.id") for t in tools] == ["call_b"]
    assert not (tools[0].attributes or {}).get("agent_otel.incomplete")


@pytest.mark.parametrize("crew", [False, True], ids=["agent", "crew"])
async def test_an_answer_an_after_llm_call_hook_replaced_is_the_runs(
    otel_telemetry: Any, crew: bool
) -> None:
    """An ``after_llm_call`` hook replacing the model's response (CrewAI's own example: a
    redaction): CrewAI answers with the hook's text. The call keeps what the model said; the
    run's answer is what CrewAI returned. Before, it was the text the hook took out."""
    import json

    from crewai import Agent, Crew, Task
    from crewai.hooks.llm_hooks import (
        register_after_llm_call_hook,
        unregister_after_llm_call_hook,
    )

    def redact(context: Any) -> str | None:
        return context.response.replace("secret", "[redacted]")

    llm = fw.llm(lambda turn: fw.completion(turn, "The secret is sunny.", []))
    bot = Agent(role="bot", goal="Answer.", backstory="A forecaster.", llm=llm, verbose=False)
    task = Task(description="Say the secret.", expected_output="a line", agent=bot)
    runner = Crew(agents=[bot], tasks=[task], verbose=False) if crew else bot
    kept: list[Any] = []
    register_after_llm_call_hook(redact)
    try:
        source = fw.crewai_events(runner, *(() if crew else (s.QUESTION,)), sink=kept.append)
        await run_script(otel_telemetry, source, agent_name="bot", capture_content=True)
    finally:
        unregister_after_llm_call_hook(redact)

    assert kept[-1].raw == "The [redacted] is sunny."

    def said(name: str) -> Any:
        [message] = json.loads(str(otel_telemetry.span(name).attributes["gen_ai.output.messages"]))
        return message["parts"]

    assert said("chat gpt-4o-mini") == [{"type": "text", "content": "The secret is sunny."}]
    assert said("invoke_agent bot") == [{"type": "text", "content": "The [redacted] is sunny."}]
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("blocked", [True, False], ids=["blocked", "let_through"])
async def test_a_tool_hook_is_no_nested_run_and_a_blocked_call_fails(
    otel_telemetry: Any, blocked: bool
) -> None:
    """A ``before_tool_call`` hook blocking a call (returning ``False``): CrewAI runs no tool
    and answers with its own text, reporting no failure; the call fails
    ``guardrail_rejected``, as a guard's refusal does in Strands and Google ADK. Tool hooks
    run inside the tool, where CrewAI reports their dispatch: that is no agent's run. Before,
    every call a tool hook saw had an empty nested ``invoke_agent`` under it, and a blocked
    call was a call that succeeded."""
    from crewai import Agent
    from crewai.hooks.tool_hooks import (
        register_before_tool_call_hook,
        unregister_before_tool_call_hook,
    )
    from crewai.tools import tool
    from opentelemetry.trace import StatusCode

    ran: list[str] = []

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        ran.append(city)
        return "sunny"

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("c1", "weather", '{"city": "Paris"}')])
        return fw.completion(1, "Done.", [])

    def guard(context: Any) -> bool | None:
        return False if blocked else None

    bot = Agent(role="bot", goal="Answer.", backstory="A forecaster.", llm=fw.llm(respond),
                tools=[weather], verbose=False)  # fmt: skip
    register_before_tool_call_hook(guard)
    try:
        await run_script(otel_telemetry, fw.crewai_events(bot, s.QUESTION), agent_name="bot")
    finally:
        unregister_before_tool_call_hook(guard)

    assert ran == ([] if blocked else ["Paris"])
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat gpt-4o-mini", "execute_tool weather"]], ["step 1", ["chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    call = otel_telemetry.span("execute_tool weather")
    if blocked:
        assert call.status.status_code is StatusCode.ERROR
        assert (call.attributes or {})["error.type"] == "guardrail_rejected"
    else:
        assert call.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("crew", [False, True], ids=["agent", "crew"])
async def test_a_structured_result_is_the_runs_answer_as_json(
    otel_telemetry: Any, crew: bool
) -> None:
    """An agent's ``response_format`` or a task's ``output_pydantic``: ``kickoff`` returns the
    model CrewAI validated (``pydantic``). The run's answer is that value as JSON
    (``gen_ai.output.type=json``), as a structured answer is in the other adapters. Before, it
    was the model's text, typed as text."""
    import json

    from crewai import Agent, Crew, Task
    from pydantic import BaseModel

    class Sky(BaseModel):
        city: str
        sky: str

    said = '{"city": "Paris", "sky": "sunny"}'
    bot = Agent(role="bot", goal="Answer.", backstory="A forecaster.", verbose=False,
                llm=fw.llm(lambda turn: fw.completion(turn, said, [])))  # fmt: skip
    if crew:
        task = Task(description="Sky in Paris?", expected_output="the sky", agent=bot,
                    output_pydantic=Sky)  # fmt: skip
        source = fw.crewai_events(Crew(agents=[bot], tasks=[task], verbose=False))
    else:
        source = fw.crewai_events(bot, "Sky in Paris?", response_format=Sky)
    await run_script(otel_telemetry, source, agent_name="bot", capture_content=True)

    run = otel_telemetry.span("invoke_agent bot").attributes or {}
    assert run["gen_ai.output.type"] == "json"
    [message] = json.loads(str(run["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "json", "content": {"city": "Paris", "sky": "sunny"}}]
    assert otel_telemetry.open_spans() == []


_CITIES = ("Paris", "Oslo", "Lima")


def _by_city(prompt: str) -> bytes | Exception:
    """Each city's answer, read off its own request: Lima's model call fails."""
    city = next(c for c in _CITIES if c in prompt)
    if city == "Lima":
        return s.Overloaded(f"overloaded for {city}")
    return fw.completion(0, f"Sunny in {city}.", [])


def _weather_crew() -> Any:
    from crewai import Crew, Task

    bot = fw.agent(fw.llm(lambda turn: b"", by_prompt=_by_city), [])
    task = Task(description="The weather in {city}.", expected_output="a line", agent=bot)
    return Crew(agents=[bot], tasks=[task], verbose=False)


@pytest.mark.parametrize(
    "variant",
    [
        "kickoff",
        "kickoff_async",
        "akickoff",
        "kickoff_for_each",
        "kickoff_for_each_async",
        "akickoff_for_each",
    ],
)
async def test_each_kickoff_of_an_instrumented_crew_is_one_run_per_input(
    variant: str, otel_telemetry: Any
) -> None:
    """``instrument(crew)``, then any of CrewAI's kickoffs: one run per input (a whole run,
    its step and chat span, the call's tokens on it and on its run), each run its own input's
    (``kickoff_for_each_async``'s, at once on copies of the crew, do not cross), and an input
    whose model call fails fails its run alone, its exception out of the kickoff as CrewAI
    raises it."""
    from opentelemetry.trace import StatusCode

    from agent_otel import instrument

    crew = instrument(
        _weather_crew(), name="weather", capture_content=True, **otel_telemetry.providers()
    )
    each = "kickoff_for_each" in variant

    async def kickoff(*inputs: str) -> list[Any]:
        given = [{"city": c} for c in inputs]
        if each:
            out = getattr(crew, variant)(given)
            return list(await out if asyncio.iscoroutine(out) else out)
        outs = []
        for one in given:  # one at a time: CrewAI refuses one crew's kickoffs at once
            out = getattr(crew, variant)(one)  # ("Executor is already running")
            outs.append(await out if asyncio.iscoroutine(out) else out)
        return outs

    outputs = await kickoff("Paris", "Oslo")
    assert [o.raw for o in outputs] == ["Sunny in Paris.", "Sunny in Oslo."]
    with pytest.raises(ConnectionError):  # CrewAI's, for the SDK's connection error
        await kickoff("Lima")

    spans = otel_telemetry.spans()
    by_id = {span.context.span_id: span for span in spans}

    def run_of(span: Any) -> Any:
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
        return span

    runs = [span for span in spans if span.name == "invoke_agent weather"]
    assert len(runs) == 3 and all(span.parent is None for span in runs)
    told: dict[str, Any] = {}
    chats: dict[str, list[Any]] = {}
    for run in runs:
        own = [span for span in spans if span.name.startswith("chat") and run_of(span) is run]
        said = " ".join(str((c.attributes or {}).get("gen_ai.input.messages")) for c in own)
        [city] = [c for c in _CITIES if c in said]  # its own input's calls alone
        told[city], chats[city] = run, own
    assert sorted(told) == sorted(_CITIES)
    for city in ("Paris", "Oslo"):
        run = told[city]
        assert len(chats[city]) == 1, city
        assert run.status.status_code is StatusCode.UNSET, city
        assert f"Sunny in {city}." in str((run.attributes or {}).get("gen_ai.output.messages"))
        assert (run.attributes or {}).get("agent_otel.usage.input_tokens")
    lima = told["Lima"]
    assert lima.status.status_code is StatusCode.ERROR
    assert (lima.attributes or {}).get("error.type")
    assert chats["Lima"] and all(c.status.status_code is StatusCode.ERROR for c in chats["Lima"])
    assert otel_telemetry.open_spans() == []


async def test_an_instrumented_agents_kickoff_is_a_run_and_akickoff_runs_on_the_callers_loop(
    otel_telemetry: Any,
) -> None:
    """An ``Agent``'s ``kickoff`` through ``instrument()`` is a whole run, as a crew's. A
    crew's ``akickoff`` (CrewAI's native async run) is a run too, a task on the caller's own
    loop as the plain one is (not a thread of ours with a loop of its own): the tool's body
    under the tool's span; the caller cancelling it while that tool hangs stops
    CrewAI's run and ends every span, the run's status cancelled."""
    from crewai import Crew, Task
    from crewai.tools import tool

    from agent_otel import instrument

    bot = fw.agent(fw.llm(lambda turn: b"", by_prompt=_by_city), [])
    traced = instrument(bot, name="bot", **otel_telemetry.providers())
    assert traced.kickoff("The weather in Paris?").raw == "Sunny in Paris."
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat gpt-4o-mini"]]]]], (
        otel_telemetry.outline()
    )
    otel_telemetry.clear()

    entered, release = threading.Event(), threading.Event()
    tracer = otel_telemetry.tracer_provider.get_tracer("tool")

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        with tracer.start_as_current_span("lookup"):
            if city == "Lima":
                entered.set()
                release.wait(10)
            return f"sunny in {city}"

    def respond(turn: int) -> bytes:
        city = ("Paris", "Lima")[turn // 2]
        if turn % 2 == 0:
            return fw.completion(0, None, [(f"c{turn}", "weather", f'{{"city": "{city}"}}')])
        return fw.completion(1, f"Sunny in {city}.", [])

    agent = fw.agent(fw.llm(respond), [weather])
    task = Task(description="The weather in {city}.", expected_output="a line", agent=agent)
    crew = instrument(Crew(agents=[agent], tasks=[task]), name="crew",
                      **otel_telemetry.providers())  # fmt: skip
    assert (await crew.akickoff({"city": "Paris"})).raw == "Sunny in Paris."
    assert otel_telemetry.outline() == [
        ["invoke_agent crew", [
            ["step 0", ["chat gpt-4o-mini", ["execute_tool weather", ["lookup"]]]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ], otel_telemetry.outline()  # fmt: skip

    otel_telemetry.clear()
    kickoff = asyncio.ensure_future(crew.akickoff({"city": "Lima"}))
    assert await asyncio.to_thread(entered.wait, 10)
    kickoff.cancel()
    with pytest.raises(asyncio.CancelledError):
        await kickoff
    assert otel_telemetry.open_spans() == ["lookup"]  # the tool's own, still in its body
    release.set()  # CrewAI's thread for the tool finishes (CrewAI cannot stop it)
    run = otel_telemetry.span("invoke_agent crew")
    assert (run.attributes or {}).get("agent_otel.end_reason") == "cancelled", run.attributes


def test_a_copy_of_an_instrumented_agent_is_instrumented_too(otel_telemetry: Any) -> None:
    """CrewAI's ``Agent.copy()`` (a crew's ``copy()`` calls it for each of its agents, as
    ``kickoff_for_each`` does) builds ``type(self)(...)``: of an instrumented agent, a copy
    with the agent's options whose kickoff is a run of its own, the original untouched."""
    from agent_otel import instrument

    bot = fw.agent(fw.llm(lambda turn: b"", by_prompt=_by_city), [])
    traced = instrument(bot, name="bot", **otel_telemetry.providers())
    twin = traced.copy()
    assert twin is not traced and twin.role == bot.role
    assert twin.kickoff("The weather in Oslo?").raw == "Sunny in Oslo."
    assert traced.kickoff("The weather in Paris?").raw == "Sunny in Paris."
    assert otel_telemetry.outline() == [
        ["invoke_agent bot", [["step 0", ["chat gpt-4o-mini"]]]],
        ["invoke_agent bot", [["step 0", ["chat gpt-4o-mini"]]]],
    ], otel_telemetry.outline()


async def test_each_agent_a_flow_kicks_off_is_a_step_of_its_own_named_after_it(
    otel_telemetry: Any,
) -> None:
    """A ``Flow`` whose first method asks its LLM itself (``LLM.call``), then routes
    (``@router``) to a method kicking off an agent of its own (``Agent.kickoff``, no crew:
    CrewAI tells it as a lite agent's execution): the agent's call is a step of its own named
    after its role, as a crew's agents' are, after the flow's own call's step; each call has
    its own tokens and the run their sum. The agent's call joined the flow's call's step,
    unnamed."""
    from crewai import Agent
    from crewai.flow.flow import Flow, listen, router, start

    def respond(turn: int) -> bytes:
        return fw.completion(turn % 2, f"Answer {turn}.", [])

    model = fw.llm(respond)

    def kickoff(role: str) -> str:
        agent = Agent(role=role, goal="Help.", backstory="A colleague.", llm=model, verbose=False)
        return str(agent.kickoff("Say something.").raw)

    class Writing(Flow):  # type: ignore[type-arg]
        @start()
        def plan(self) -> Any:
            return model.call([{"role": "user", "content": "Plan it."}])

        @router(plan)
        def route(self) -> str:
            return "writing"

        @listen("writing")
        def write(self) -> str:
            return kickoff("writer")

    await run_script(otel_telemetry, fw.crewai_events(Writing()), agent_name="flow")
    chat = "chat gpt-4o-mini"
    assert otel_telemetry.outline() == [
        ["invoke_agent flow", [["step 0", [chat]], ["step 1", [chat]]]]
    ], otel_telemetry.outline()
    assert phases(otel_telemetry) == [None, "writer"]
    run = otel_telemetry.span("invoke_agent flow")
    chats = [span for span in otel_telemetry.spans() if span.name == chat]
    used = [(span.attributes or {}).get("gen_ai.usage.input_tokens") for span in chats]
    assert used == [s.TURNS[0].input, s.TURNS[1].input]
    assert (run.attributes or {}).get("agent_otel.usage.input_tokens") == sum(used)


class _Flooded(ValueError):
    """A tool's own failure, raised out of the tool a body runs."""


async def test_a_tool_a_tool_body_runs_itself_is_an_inner_tool_of_that_call(
    otel_telemetry: Any,
) -> None:
    """A tool's body running another tool itself (``BaseTool.run``, no model asked: CrewAI
    tells no event of it) is an inner tool: a span of its own under the calling tool's, with
    its arguments, result and failure (before, none); the model's own later call of that tool
    keeps its span."""

    from crewai.tools import tool

    from agent_contract.sources.crewai_stream import crewai_events

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    @tool("forecast")
    def forecast(city: str) -> str:
        """Tomorrow's forecast of a city."""
        raise _Flooded(f"no forecast for {city}")

    @tool("lookup")
    def lookup(city: str) -> str:
        """Look up a city's weather."""
        with suppress(_Flooded):  # its span says it failed
            forecast.run(city=city)
        return f"looked up: {weather.run(city=city)}"

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("c1", "lookup", '{"city": "Paris"}')])
        if turn == 1:
            return fw.completion(1, None, [("c2", "weather", '{"city": "Oslo"}')])
        return fw.completion(2, "Sunny.", [])

    built = fw.agent(fw.llm(respond), [lookup, weather, forecast])
    await run_script(otel_telemetry, crewai_events(built, "Weather?"), agent_name="a",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-4o-mini", ["execute_tool lookup", [
            "execute_tool forecast", "execute_tool weather"]]]],
        ["step 1", ["chat gpt-4o-mini", "execute_tool weather"]],
        ["step 2", ["chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    check_inner_tools(otel_telemetry, ("Paris",), ("Oslo", "c2"), "_Flooded")

"""The three framework adapters, each on its framework's own test model, traced.

The same scripted conversation (``_frameworks``) must give every framework the same tree
(invoke_agent > step > chat and two parallel execute_tool spans), its tokens exactly once
(the framework's own total, on chat spans only) and the same endings guarantees.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import AgentEvent, PhaseMarker, TextDelta, ToolCall, ToolResult
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw
from ._trace import attributes, tokens


@dataclass
class Case:
    name: str
    run: Callable[..., AsyncIterator[AgentEvent]]  # (results kept, *, fail, hang)
    chat: str
    provider: str | None
    total_input: Callable[[Any], int]  # the framework's own input-token total for its result


def _pydantic(kept: list[Any], fail: bool = False, hang: bool = False) -> AsyncIterator[AgentEvent]:
    pytest.importorskip("pydantic_ai")
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    return pydantic_ai_events(
        fw.pydantic_agent(fail=fail, hang=hang), "Weather?", on_result=kept.append
    )


def _agents(kept: list[Any], fail: bool = False, hang: bool = False) -> AsyncIterator[AgentEvent]:
    pytest.importorskip("agents")
    from agent_contract.sources.openai_agents import openai_agents_events

    agent = fw.agents_agent(fw.failing_body()) if fail else fw.agents_agent(hang=hang)
    return openai_agents_events(agent, "Weather?", on_result=kept.append)


def _langgraph(
    kept: list[Any], fail: bool = False, hang: bool = False
) -> AsyncIterator[AgentEvent]:
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = fw.langgraph_graph(fail=fail, hang=hang)
    return langgraph_events(graph, {"messages": [("user", "Weather?")]}, sink=kept.append)


def _langgraph_total(kept: list[Any]) -> int:
    updates = [payload for mode, payload in kept if mode == "updates"]
    messages = [m for u in updates for state in u.values() for m in state.get("messages", ())]
    return sum((getattr(m, "usage_metadata", None) or {}).get("input_tokens", 0) for m in messages)


CASES = [
    Case("pydantic_ai", _pydantic, "chat scripted-model", "function",
         lambda kept: kept[0].usage().input_tokens),
    Case("openai_agents", _agents, "chat gpt-5-mini", "openai",
         lambda kept: sum(r.usage.input_tokens for r in kept[0].raw_responses)),
    Case("langgraph", _langgraph, "chat", "scripted", _langgraph_total),
]  # fmt: skip
ids = [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_framework_run_traces_the_same_tree_with_tokens_once(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    kept: list[Any] = []

    events = await run_script(otel_telemetry, case.run(kept), agent_name="agent")

    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.endswith("Sunny in both.")
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.function.name for c in calls] == ["weather", "weather"]
    assert {c.id for c in calls} == {r.tool_call_id for r in results} and len(results) == 2
    assert sorted(str(r.content) for r in results) == ["sunny in Paris", "sunny in Rome"]
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", [case.chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [case.chat]],
        ]],
    ]  # fmt: skip
    total = case.total_input(kept)
    assert total > 0
    assert tokens(otel_telemetry) == total  # chat spans only: a backend summing spans gets it once
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.usage.input_tokens"] == total
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "exhausted"
    chats = [dict(s.attributes or {}) for s in otel_telemetry.spans() if s.name == case.chat]
    assert {c.get("gen_ai.provider.name") for c in chats} == {case.provider}
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_model_error_mid_stream_comes_out_unchanged(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    with pytest.raises(Exception) as caught:
        await run_script(otel_telemetry, case.run([], fail=True), agent_name="agent")

    assert type(caught.value).__name__ in {"Overloaded", "APIError"}
    agent_span = attributes(otel_telemetry, "invoke_agent")
    assert agent_span["agent_otel.end_reason"] == "error"
    assert agent_span["error.type"] == type(caught.value).__qualname__
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_stopping_early_and_cancelling_leave_no_span_open(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    events = otel_telemetry.wrapper(agent_name="agent")(case.run([]))
    async for event in events:
        if isinstance(event, ToolCall):
            break
    await events.aclose()
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "closed_early"

    otel_telemetry.clear()
    first = asyncio.Event()

    async def consume() -> None:  # the tool never returns: the task is cancelled mid-run
        async for event in otel_telemetry.wrapper(agent_name="agent")(case.run([], hang=True)):
            if isinstance(event, ToolCall):
                first.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "cancelled"
    assert otel_telemetry.open_spans() == []


async def test_an_agents_sdk_handoff_is_a_tool_call_and_names_the_new_agent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agents")
    from agent_contract.sources.openai_agents import openai_agents_events

    kept: list[Any] = []
    source = openai_agents_events(fw.agents_agent(handoff=True), "Weather?", on_result=kept.append)
    events = await run_script(otel_telemetry, source, agent_name="agent")

    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["triage", "weatherbot"]
    assert kept[0].last_agent.name == "weatherbot"
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", ["chat gpt-5-mini", "execute_tool transfer_to_weatherbot"]],
            ["step 1", ["chat gpt-5-mini", "execute_tool weather", "execute_tool weather"]],
            ["step 2", ["chat gpt-5-mini"]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == sum(r.usage.input_tokens for r in kept[0].raw_responses)


async def test_agents_sdk_a_handoffs_input_filter_keeps_every_call_of_its_turn_answered(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``handoff_filters.remove_all_tools`` removes the turn's results before the SDK streams
    them: the handoff, the function tools asked beside it (one raising) and a second handoff
    still each end with their answer, not cut short, the raising one failed by its class."""
    pytest.importorskip("agents")
    from agents import Agent, Usage, function_tool, handoff, set_tracing_disabled
    from agents.extensions import handoff_filters
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)

    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    def boom(city: str) -> str:
        """Fails."""
        raise ValueError("no")

    def answering(text: str) -> Any:
        usage = Usage(requests=1, input_tokens=7, output_tokens=1, total_tokens=8)
        return ScriptedModel([ModelStep(output=[assistant_message(text)], usage=usage)])

    spanish = Agent(name="spanish", model=answering("hola"))
    french = Agent(name="french", model=answering("salut"))
    asks = [function_call("weather", {"city": "M"}, call_id="w1"),
            function_call("boom", {"city": "M"}, call_id="b1"),
            function_call("transfer_to_spanish", {}, call_id="h1"),
            function_call("transfer_to_french", {}, call_id="h2")]  # fmt: skip
    usage = Usage(requests=1, input_tokens=3, output_tokens=1, total_tokens=4)
    triage = Agent(name="triage", model=ScriptedModel([ModelStep(output=asks, usage=usage)]),
                   tools=[function_tool(weather), function_tool(boom)],
                   handoffs=[handoff(spanish, input_filter=handoff_filters.remove_all_tools),
                             handoff(french)])  # fmt: skip
    events = await run_script(otel_telemetry, openai_agents_events(triage, "Hola?"),
                              agent_name="triage", capture_content=True)  # fmt: skip

    results = {e.tool_call_id: e.content for e in events if isinstance(e, ToolResult)}
    assert results == {"w1": "sunny", "b1": results["b1"], "h1": '{"assistant": "spanish"}',
                       "h2": "Multiple handoffs detected, ignoring this one."}  # fmt: skip
    assert results["b1"].startswith("An error occurred while running the tool")
    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    assert len(tools) == 4
    assert [(s.attributes or {}).get("agent_otel.incomplete") for s in tools] == [None] * 4
    assert {s.name: (s.attributes or {}).get("error.type") for s in tools} == {
        "execute_tool weather": None, "execute_tool boom": "ValueError",
        "execute_tool transfer_to_spanish": None, "execute_tool transfer_to_french": None,
    }  # fmt: skip
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "exhausted"


async def test_langgraph_calls_are_told_apart_by_request_not_by_message_id(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A chat model that sets its chunks' ids itself and marks no last chunk: LangChain's own
    id on the first chunk, the model's on the rest. Still one chat span per call, tokens once."""
    case = CASES[ids.index("langgraph")]
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    kept: list[Any] = []
    graph = fw.langgraph_graph(own_ids=True)
    run = langgraph_events(graph, {"messages": [("user", "Weather?")]}, sink=kept.append)
    await run_script(otel_telemetry, run, agent_name="agent")

    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", [case.chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [case.chat]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == _langgraph_total(kept) == 240


async def test_langgraph_a_request_refused_before_its_first_chunk_fails_its_own_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    case = CASES[ids.index("langgraph")]
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = fw.langgraph_graph(refuse=True)
    with pytest.raises(fw.Overloaded):
        await run_script(
            otel_telemetry, langgraph_events(graph, {"messages": []}), agent_name="agent"
        )

    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", [case.chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [case.chat]],
        ]],
    ]  # fmt: skip
    first, second = [s for s in otel_telemetry.spans() if s.name == case.chat]
    assert first.status.status_code is not StatusCode.ERROR
    assert (second.attributes or {})["error.type"] == "Overloaded"
    assert second.status.status_code is StatusCode.ERROR
    [step0] = [s for s in otel_telemetry.spans() if s.name == "step 0"]
    assert step0.status.status_code is not StatusCode.ERROR  # not the previous step
    assert otel_telemetry.open_spans() == []


async def test_agents_sdk_the_callers_own_run_hooks_still_get_every_callback(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agents")
    from agents import RunHooks

    from agent_contract.sources.openai_agents import openai_agents_events

    heard: list[str] = []

    class Mine(RunHooks):  # type: ignore[type-arg]
        async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
            heard.append("llm_start")

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            heard.append("llm_end")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            heard.append(f"tool_end {result}")

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            heard.append("agent_end")

    run = openai_agents_events(fw.agents_agent(), "Weather?", hooks=Mine())
    await run_script(otel_telemetry, run, agent_name="agent")

    assert heard.count("llm_start") == heard.count("llm_end") == 2
    assert sorted(h for h in heard if h.startswith("tool_end")) == [
        "tool_end sunny in Paris", "tool_end sunny in Rome"]  # fmt: skip
    assert heard[-1] == "agent_end"


async def test_agents_sdk_on_responses_with_openinference_has_only_our_chat_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """OpenInference's OpenAI instrumentation traces the Responses API too: beside an Agents
    SDK run it adds no ``Response`` span (it did: two per run), and does when opted out."""
    pytest.importorskip("agents")
    from agent_contract.sources.openai_agents import openai_agents_events

    from ._conformance import OPENINFERENCE_OPENAI

    def model_calls() -> list[str]:
        return sorted(sp.name for sp in otel_telemetry.spans()
                      if (sp.attributes or {}).get("openinference.span.kind") == "LLM"
                      or (sp.attributes or {}).get("gen_ai.operation.name") == "chat")  # fmt: skip

    with OPENINFERENCE_OPENAI.instrumented(otel_telemetry):
        run = openai_agents_events(fw.agents_agent(), "Weather?")
        await run_script(otel_telemetry, run, agent_name="agent")
        assert model_calls() == ["chat gpt-5-mini"] * 2

        otel_telemetry.clear()
        opted_out = otel_telemetry.wrapper(agent_name="agent", stand_down_providers=False)
        [_ async for _ in opted_out(openai_agents_events(fw.agents_agent(), "Weather?"))]
        assert model_calls() == ["Response", "Response", "chat gpt-5-mini", "chat gpt-5-mini"]


@pytest.mark.parametrize("as_manager", [False, True], ids=["list", "manager"])
async def test_langgraph_the_callers_own_callbacks_still_get_every_callback(
    as_manager: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackHandler

    from agent_contract.sources.langgraph_stream import langgraph_events

    heard: list[str] = []

    class Mine(BaseCallbackHandler):
        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            heard.append("start")

        def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
            heard.append("end")

    mine = Mine()
    callbacks: Any = AsyncCallbackManager([mine], [mine]) if as_manager else [mine]
    config = {"callbacks": callbacks}
    run = langgraph_events(fw.langgraph_graph(), {"messages": [("user", "W?")]}, config)
    await run_script(otel_telemetry, run, agent_name="agent")

    assert heard == ["start", "end", "start", "end"]
    assert len([sp for sp in otel_telemetry.spans() if sp.name == "chat"]) == 2
    assert config["callbacks"] is callbacks  # the caller's config is not changed


async def test_pydantic_ai_a_run_stopped_by_its_usage_limits_shows_no_request_it_never_made(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``request_limit=1`` and a tool call: pydantic-ai raises ``UsageLimitExceeded`` as the
    second model request node starts, before any request. The trace has the one call made,
    its tool, and the run failed with the limit; no chat span for a request never sent."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import UsageLimits

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    agent = Agent(TestModel(call_tools=["lookup"]), name="capped")

    @agent.tool_plain
    def lookup(term: str) -> str:
        return "found"

    source = pydantic_ai_events(agent, "Paris?", usage_limits=UsageLimits(request_limit=1))
    with pytest.raises(UsageLimitExceeded):
        await run_script(otel_telemetry, source, agent_name="capped")

    assert otel_telemetry.outline() == [
        ["invoke_agent capped", [["step 0", ["chat test", "execute_tool lookup"]]]],
    ]
    run = otel_telemetry.span("invoke_agent capped")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})["error.type"] == "UsageLimitExceeded"
    assert all(s.status.status_code is not StatusCode.ERROR
               for s in otel_telemetry.spans() if s is not run)  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_pydantic_ai_a_response_past_the_token_limit_keeps_its_tokens_on_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``output_tokens_limit``: pydantic-ai checks the tokens once the response has come, then
    raises ``UsageLimitExceeded``. The request was made and billed: its chat span ends whole with
    its tokens (the response pydantic-ai keeps, ``capture_run_messages``), not cut short; the
    step and run fail with the limit."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent, capture_run_messages
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import UsageLimits

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    agent = Agent(TestModel(custom_output_text="a long answer"), name="capped")
    source = pydantic_ai_events(agent, "Paris?", usage_limits=UsageLimits(output_tokens_limit=1))
    with capture_run_messages() as messages, pytest.raises(UsageLimitExceeded):
        await run_script(otel_telemetry, source, agent_name="capped")

    billed = messages[-1].usage  # the response that went past the limit
    assert billed.output_tokens > 1
    chat = otel_telemetry.span("chat test")
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.usage.output_tokens"] == billed.output_tokens
    assert attributes["gen_ai.usage.input_tokens"] == billed.input_tokens
    assert chat.status.status_code is not StatusCode.ERROR
    assert "agent_otel.incomplete" not in attributes
    [step] = [s for s in otel_telemetry.spans() if s.name.startswith("step")]
    assert (step.attributes or {})["error.type"] == "UsageLimitExceeded"
    assert otel_telemetry.open_spans() == []

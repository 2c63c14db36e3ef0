"""Each framework's own way of reporting a failed tool marks that tool span, and only it.

A framework rarely lets a tool's exception end the run: its handler turns it into text for the
model (the Agents SDK's default failure handler, LangGraph's ``handle_tool_errors``), or it has
outcomes of its own (pydantic-ai's ``ModelRetry``, ``ToolFailed``). The trace must show that
call as failed, with ``error.type`` naming the exception (or the framework's outcome), and its
sibling as the success it was. The conformance matrix (``test_conformance``) checks the same
for the script's failing ``forecast`` on every row; these are the shapes it does not play.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_contract.protocol import ToolResult
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw
from . import _recorded
from ._http import openai_client, sse


class ToolFailure(RuntimeError):
    """What the failing tool raises."""


def _by_call(telemetry: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    return {
        str((s.attributes or {}).get("gen_ai.tool.call.id")): s
        for s in telemetry.spans()
        if s.name.startswith("execute_tool ")
    }


def _failed(span: ReadableSpan) -> str:
    assert span.status.status_code is StatusCode.ERROR, span.name
    return str((span.attributes or {})["error.type"])


def _fine(span: ReadableSpan) -> None:
    assert span.status.status_code is not StatusCode.ERROR, span.name
    assert "error.type" not in (span.attributes or {})


def _only_tools_fail(telemetry: InMemoryTelemetry) -> None:
    for span in telemetry.spans():
        if not span.name.startswith("execute_tool "):
            assert span.status.status_code is not StatusCode.ERROR, span.name


# --- OpenAI Agents SDK: the default failure handler turns the exception into text -----------


def _rome_fails() -> Any:
    from agents import function_tool

    async def weather(city: str) -> str:
        """Weather of a city."""
        if city == "Rome":
            raise ToolFailure("no weather for Rome")
        return f"sunny in {city}"

    return function_tool(weather)


def _sdk_agent(seen: list[Any]) -> Any:
    from agents import Agent, OpenAIResponsesModel, set_tracing_disabled

    set_tracing_disabled(True)
    bodies = (sse(_recorded.responses(tools=True), named=True),
              sse(_recorded.responses(tools=False), named=True))  # fmt: skip
    client = openai_client(*bodies, seen=seen)
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    return Agent(name="weatherbot", tools=[_rome_fails()], model=model)


def _sent_outputs(request: Any) -> dict[str, str]:
    """The tool outputs the SDK sent the model in its next request, by call id."""
    body = json.loads(request.content)
    return {i["call_id"]: i["output"] for i in body["input"]
            if isinstance(i, dict) and i.get("type") == "function_call_output"}  # fmt: skip


async def test_an_agents_sdk_tool_failing_under_the_default_handler_is_marked(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agents")
    from agent_contract.sources.openai_agents import openai_agents_events

    seen: list[Any] = []
    events = [e async for e in otel_telemetry.wrapper(agent_name="agent")(
        openai_agents_events(_sdk_agent(seen), "Weather?"))]  # fmt: skip

    spans = _by_call(otel_telemetry)
    assert _failed(spans["call_r"]) == "ToolFailure"
    _fine(spans["call_p"])
    _only_tools_fail(otel_telemetry)
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["call_r"].is_error and not results["call_p"].is_error
    # the model saw what the SDK made of the exception, unchanged
    assert "error occurred" in _sent_outputs(seen[1])["call_r"]


async def test_an_agents_sdk_callers_error_formatter_still_formats_the_message(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agents")
    from agents import RunConfig

    from agent_contract.sources.openai_agents import openai_agents_events

    seen: list[Any] = []
    asked: list[str] = []

    async def formatter(args: Any) -> str:
        asked.append(args.call_id)
        return f"{args.tool_name} is down"

    config = RunConfig(tool_error_formatter=formatter)
    source = openai_agents_events(_sdk_agent(seen), "Weather?", run_config=config)
    await run_script(otel_telemetry, source, agent_name="agent")

    assert asked == ["call_r"]
    assert _sent_outputs(seen[1])["call_r"] == "weather is down"
    assert _failed(_by_call(otel_telemetry)["call_r"]) == "ToolFailure"
    assert config.tool_error_formatter is formatter  # the caller's config is not changed


@pytest.mark.parametrize("told", [None, "not today"], ids=["sdk_text", "callers_text"])
async def test_an_agents_sdk_call_whose_approval_is_refused_fails_and_its_sibling_runs(
    told: str | None, otel_telemetry: InMemoryTelemetry
) -> None:
    """``needs_approval``: the run stops for approval; resumed with Rome refused (the SDK's
    text or the caller's), that call fails as the SDK's outcome, Paris runs, the run is fine."""
    pytest.importorskip("agents")
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    async def weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    asked = (("p", "Paris"), ("r", "Rome"))
    calls = [function_call("weather", {"city": city}, call_id=cid) for cid, city in asked]
    model = scripted(calls, [assistant_message("done")])
    agent = Agent(name="bot", tools=[function_tool(weather, needs_approval=True)], model=model)
    kept: list[Any] = []
    source = openai_agents_events(agent, "Weather?", on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="agent")
    assert [s for s in otel_telemetry.spans() if s.status.status_code is StatusCode.ERROR] == []
    otel_telemetry.clear()

    state = kept[0].to_state()
    for item in kept[0].interruptions:
        if item.raw_item.call_id == "r":
            state.reject(item, rejection_message=told)
        else:
            state.approve(item)
    events = await run_script(otel_telemetry, openai_agents_events(agent, state),
                              agent_name="agent")  # fmt: skip

    spans = _by_call(otel_telemetry)
    assert spans["r"].name == "execute_tool weather"
    assert _failed(spans["r"]) == "approval_rejected"
    assert (spans["r"].attributes or {})["agent_otel.tool.is_error"] is True
    _fine(spans["p"])
    _only_tools_fail(otel_telemetry)
    points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert sorted(str((p.attributes or {}).get("error.type")) for p in points) == [
        "None", "approval_rejected"]  # fmt: skip
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["r"].is_error and not results["p"].is_error
    assert results["r"].content == (told or "Tool execution was not approved.")


async def test_a_pydantic_ai_call_whose_approval_is_denied_fails_and_its_sibling_runs(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``requires_approval``: the run ends with the calls deferred; resumed with Rome's denied
    (``ToolDenied``), that call fails as ``ToolDenied``, Paris runs, the run is fine, and the
    model gets pydantic-ai's denial message unchanged."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool, ToolDenied
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) > 1:
            yield "done"
            return
        for index, (call_id, city) in enumerate((("p", "Paris"), ("r", "Rome"))):
            args = json.dumps({"city": city})
            yield {index: DeltaToolCall("weather", args, tool_call_id=call_id)}

    model = FunctionModel(stream_function=stream, model_name="scripted-model")
    agent = Agent(model, output_type=[str, DeferredToolRequests])
    agent.toolsets[0].add_tool(Tool(weather, requires_approval=True))  # type: ignore[attr-defined]
    kept: list[Any] = []
    await run_script(otel_telemetry, pydantic_ai_events(agent, "Weather?", on_result=kept.append),
                     agent_name="agent")  # fmt: skip
    assert isinstance(kept[0].output, DeferredToolRequests)
    otel_telemetry.clear()

    answers = DeferredToolResults(approvals={"p": True, "r": ToolDenied("not Rome")})
    source = pydantic_ai_events(agent, message_history=kept[0].all_messages(),
                                deferred_tool_results=answers)  # fmt: skip
    events = await run_script(otel_telemetry, source, agent_name="agent")

    spans = _by_call(otel_telemetry)
    assert _failed(spans["r"]) == "ToolDenied"
    assert (spans["r"].attributes or {})["agent_otel.tool.is_error"] is True
    _fine(spans["p"])
    _only_tools_fail(otel_telemetry)
    points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert [(p.attributes or {}).get("error.type") for p in points if p.attributes and
            "error.type" in p.attributes] == ["ToolDenied"]  # fmt: skip
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["r"].is_error and not results["p"].is_error
    assert results["r"].content == "not Rome"


class _Nameless(type):
    """A metaclass whose classes will not say their names (reading one raises)."""

    def __getattribute__(cls, name: str) -> Any:
        if name == "__qualname__":
            raise RuntimeError("no name")
        return super().__getattribute__(name)


class Nameless(Exception, metaclass=_Nameless):
    """What a tool raises whose class will not name itself."""


def test_an_error_whose_class_will_not_name_itself_is_named_exception() -> None:
    from agent_contract.sources._failure import error_name

    assert error_name(Nameless("x")) == "Exception"
    assert error_name(ToolFailure("x")) == "ToolFailure"


async def test_an_agents_sdk_tool_raising_a_nameless_error_still_hands_the_model_its_text(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The adapter names the failure inside the SDK's failure handling: a class that will not
    say its name must not turn the SDK's handled failure into one that ends the run."""
    pytest.importorskip("agents")
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    async def weather(city: str) -> str:
        """Weather of a city."""
        raise Nameless(f"no weather for {city}")

    model = scripted([function_call("weather", {"city": "Rome"}, call_id="c1")],
                     [assistant_message("done")])  # fmt: skip
    agent = Agent(name="bot", tools=[function_tool(weather)], model=model)
    kept: list[Any] = []
    ended: str | None = None
    try:  # (the class breaks traceback rendering: only its name leaves this block)
        source = openai_agents_events(agent, "Weather?", on_result=kept.append)
        await run_script(otel_telemetry, source, agent_name="agent")
    except Exception as exc:
        ended = type(exc).__name__
    assert ended is None
    assert kept[0].final_output == "done"
    assert _failed(_by_call(otel_telemetry)["c1"]) == "Exception"
    _only_tools_fail(otel_telemetry)


async def test_an_agents_sdk_tool_raising_with_no_failure_handler_names_its_own_error(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``failure_error_function=None``: the SDK ends the run with its ``UserError`` raised from
    the tool's exception. The call that raised fails with the tool's own class (not the SDK's
    wrapper), its sibling that finished stays a success, and the run carries the SDK's error."""
    pytest.importorskip("agents")
    import asyncio

    from agents import Agent, UserError, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    async def weather(city: str) -> str:
        """Weather of a city."""
        if city == "Rome":
            await asyncio.sleep(0.05)  # Paris has finished by then
            raise ToolFailure("no weather for Rome")
        return f"sunny in {city}"

    model = scripted(
        [function_call("weather", {"city": c}, call_id=f"call_{c[0].lower()}")
         for c in ("Paris", "Rome")],
        [assistant_message("never")],
    )  # fmt: skip
    tool = function_tool(weather, failure_error_function=None)
    agent = Agent(name="weatherbot", tools=[tool], model=model)
    with pytest.raises(UserError) as raised:
        await run_script(otel_telemetry, openai_agents_events(agent, "Weather?"),
                         agent_name="agent")  # fmt: skip

    assert isinstance(raised.value.__cause__, ToolFailure)
    spans = _by_call(otel_telemetry)
    assert _failed(spans["call_r"]) == "ToolFailure"
    assert not (spans["call_r"].attributes or {}).get("agent_otel.incomplete")
    _fine(spans["call_p"])
    run = otel_telemetry.span("invoke_agent agent")
    assert (run.attributes or {})["error.type"] == "UserError"
    assert otel_telemetry.open_spans() == []


# --- pydantic-ai: ToolFailed and arguments that fail validation ----------------------------


async def test_pydantic_ai_tool_failed_and_invalid_arguments_are_marked_by_kind(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall("weather", '{"city": "Paris"}', tool_call_id="ok")}
            yield {1: DeltaToolCall("tides", '{"city": "Rome"}', tool_call_id="failed")}
            yield {2: DeltaToolCall("weather", '{"city": 5}', tool_call_id="invalid")}
        else:
            yield "Sunny."

    agent = Agent(FunctionModel(stream_function=stream, model_name="scripted-model"))
    agent.tool_plain(fw.weather_tool())

    @agent.tool_plain
    async def tides(city: str) -> str:
        """Tides at a city."""
        raise ToolFailed(f"no tides at {city}")

    await run_script(otel_telemetry, pydantic_ai_events(agent, "Weather?"), agent_name="agent")

    spans = _by_call(otel_telemetry)
    assert _failed(spans["failed"]) == "ToolFailed"
    assert _failed(spans["invalid"]) == "ValidationError"
    _fine(spans["ok"])
    _only_tools_fail(otel_telemetry)


# --- LangGraph: ToolNode's handle_tool_errors -----------------------------------------------


# Either way the class: LangGraph's message names it, and the body's scope saw it raised (the
# caller's own text names nothing).
@pytest.mark.parametrize(("handled", "expected"), [(True, "ToolFailure"), ("down", "ToolFailure")])
async def test_a_langgraph_tool_error_message_is_marked_with_the_class_it_names(
    otel_telemetry: InMemoryTelemetry, handled: Any, expected: str
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode

    from agent_contract.sources.langgraph_stream import langgraph_events

    @tool
    async def weather(city: str) -> str:
        """Weather of a city."""
        if city == "Rome":
            raise ToolFailure("no weather for Rome")
        return f"sunny in {city}"

    graph = fw.langgraph_graph(tools=ToolNode([weather], handle_tool_errors=handled))
    source = langgraph_events(graph, {"messages": [("user", "Weather?")]})
    await run_script(otel_telemetry, source, agent_name="agent")

    spans = _by_call(otel_telemetry)
    assert _failed(spans["call_r"]) == expected
    _fine(spans["call_p"])
    _only_tools_fail(otel_telemetry)


# --- smolagents: one call raising fails its step and drops its sibling's result -------------


async def test_a_smolagents_sibling_whose_result_was_dropped_ends_incomplete_not_failed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("smolagents")
    import threading
    import time

    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as smol
    from . import _script as s

    failed = threading.Event()

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        failed.wait(5)  # returns well after forecast raised: smolagents drops this result
        time.sleep(1)
        return s.weather_sync(city)

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's forecast for a city.

        Args:
            city: the city.
        """
        failed.set()
        raise ToolFailure(f"no forecast for {city}")

    asked: list[int] = []

    def respond(messages: list[dict[str, Any]]) -> bytes:
        asked.append(1)
        if len(asked) == 1:
            return smol.completion(0, "Checking.", [(c.id, c.name, c.json) for c in s.CALLS])
        return smol.completion(1, None, smol.answer("Sunny in Paris."))

    model = OpenAIModel(smol.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=smol.client(respond))  # fmt: skip
    agent = ToolCallingAgent(tools=[weather, forecast], model=model, verbosity_level=0)
    events = await run_script(
        otel_telemetry, smolagents_events(agent, s.QUESTION), agent_name="agent"
    )

    spans = _by_call(otel_telemetry)
    assert _failed(spans["call_f"]) == "ToolFailure"
    _fine(spans["call_w"])  # not the sibling's error: its result is unknown, not failed
    assert (spans["call_w"].attributes or {}).get("agent_otel.incomplete") is True
    assert "call_w" not in {e.tool_call_id for e in events if isinstance(e, ToolResult)}
    _only_tools_fail(otel_telemetry)

"""Both vocabularies, and events recognised by shape rather than by class.

The Agent vocabulary (pydantic ``StreamEvent`` models with a ``type`` discriminator) maps onto
the same spans as the event-stream one: tool steps become ``execute_tool`` spans matched by
``call_id``, ``RunUsage`` is the run's usage, finals and interrupts describe how the run ended.
Look-alike classes (same class name, or same ``type``, defined here and not in
``agent_contract``) are traced exactly like the contract's own: the span trees are equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal

from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from agent_contract import protocol as contract
from agent_contract.agent import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    ReasoningStep,
    RunUsage,
    StructuredFinal,
    ToolCallStep,
    ToolResultStep,
)
from agent_contract.examples import ScriptedAgent, ScriptedStreamingAgent
from agent_otel import instrument
from agent_otel.testing import FakeClock, InMemoryTelemetry, run_script

# --- the Agent vocabulary ------------------------------------------------------------------


def agent_script() -> list[Any]:
    return [
        ReasoningStep(text="I should search and compute"),
        MessageDelta(text="Hel"),
        ToolCallStep(tool="search", args={"q": "x"}, call_id="a"),
        ToolCallStep(tool="calc", args={"e": "1+1"}, call_id="b"),
        ToolResultStep(tool="calc", call_id="b", result=2),  # results in reverse order
        ToolResultStep(tool="search", call_id="a", result="no route", is_error=True),
        MessageDelta(text="lo"),
        RunUsage(input_tokens=11, output_tokens=4, total_tokens=15, model="gpt-x"),
        MessageFinal(text="Hello"),
    ]


async def test_agent_vocabulary_stream(otel_telemetry: InMemoryTelemetry) -> None:
    events = agent_script()
    agent = ScriptedStreamingAgent(events)
    received = await run_script(
        otel_telemetry, agent.astream(user_message="hi"), agent_name="streamer"
    )
    assert len(received) == len(events) and all(a is b for a, b in zip(received, events))

    tree = otel_telemetry.tree(
        attributes=[
            "gen_ai.operation.name",
            "gen_ai.agent.name",
            "gen_ai.tool.name",
            "gen_ai.tool.call.id",
            "gen_ai.tool.type",
            "error.type",
            "agent_otel.tool.is_error",
            "agent_otel.incomplete",
        ],
        events=False,
    )
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.type": "function"}
    # No StepBoundary in this vocabulary: one step spans the run, as DESIGN.md's step rule says.
    assert tree == [
        {
            "name": "invoke_agent streamer",
            "kind": "INTERNAL",
            "attributes": {
                "gen_ai.agent.name": "streamer",
                "gen_ai.operation.name": "invoke_agent",
            },
            "children": [
                {
                    "name": "step 0",
                    "kind": "INTERNAL",
                    "attributes": {},
                    "children": [
                        {
                            "name": "execute_tool search",
                            "kind": "INTERNAL",
                            "status": "ERROR",
                            "attributes": {
                                **tool,
                                "gen_ai.tool.name": "search",
                                "gen_ai.tool.call.id": "a",
                                "error.type": "tool_error",
                                "agent_otel.tool.is_error": True,
                            },
                            "children": [],
                        },
                        {
                            "name": "execute_tool calc",
                            "kind": "INTERNAL",
                            "attributes": {
                                **tool,
                                "gen_ai.tool.name": "calc",
                                "gen_ai.tool.call.id": "b",
                            },
                            "children": [],
                        },
                    ],
                }
            ],
        }
    ]

    agent_span = otel_telemetry.span("invoke_agent streamer")
    attributes = agent_span.attributes or {}
    # RunUsage is the run's own usage: on the agent span in both namespaces (there is no
    # chat span it could belong to, so nothing counts it twice)
    assert attributes["gen_ai.usage.input_tokens"] == 11
    assert attributes["gen_ai.usage.output_tokens"] == 4
    assert attributes["agent_otel.usage.input_tokens"] == 11
    assert attributes["agent_otel.usage.output_tokens"] == 4
    assert attributes["agent_otel.usage.total_tokens"] == 15
    assert attributes["gen_ai.response.model"] == "gpt-x"
    assert attributes["gen_ai.output.type"] == "text"
    assert attributes["agent_otel.end_reason"] == "exhausted"
    assert agent_span.status.status_code is not StatusCode.ERROR
    assert "agent_otel.anomalies" not in attributes
    # the first visible text came with the second event (reasoning is not text)
    assert "agent_otel.response.time_to_first_text" in attributes

    points = otel_telemetry.histograms()["gen_ai.client.token.usage"]
    usage = {
        (
            (p.attributes or {})["gen_ai.operation.name"],
            (p.attributes or {})["gen_ai.token.type"],
        ): p.sum
        for p in points
    }
    assert usage == {("invoke_agent", "input"): 11, ("invoke_agent", "output"): 4}
    for point in points:
        # the conventions' token attributes and no others (no agent name: not one of them);
        # the provider is required on the metric, and no event named one here
        assert {**(point.attributes or {}), "gen_ai.token.type": "any"} == {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "unknown",
            "gen_ai.response.model": "gpt-x",
            "gen_ai.token.type": "any",
        }
    tool_points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert sorted(str((p.attributes or {})["gen_ai.tool.name"]) for p in tool_points) == [
        "calc",
        "search",
    ]


async def test_structured_final_sets_the_output_type_json(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedStreamingAgent([StructuredFinal(data={"answer": 42})])
    await run_script(otel_telemetry, agent.astream(user_message="q"), capture_content=True)
    attributes = otel_telemetry.span("invoke_agent").attributes or {}
    assert attributes["gen_ai.output.type"] == "json"
    output = json.loads(str(attributes["gen_ai.output.messages"]))
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "json", "content": {"answer": 42}}],
            "finish_reason": "stop",
        }
    ]


async def test_interrupt_final_is_an_event_not_an_error(otel_telemetry: InMemoryTelemetry) -> None:
    events = [
        MessageDelta(text="Need approval"),
        InterruptFinal(interrupt_id="int-7", payload={"options": ["yes", "no"]}, reason="approve?"),
    ]
    agent = ScriptedStreamingAgent(events)
    await run_script(otel_telemetry, agent.astream(user_message="q"), agent_name="asker")
    agent_span = otel_telemetry.span("invoke_agent asker")
    assert agent_span.status.status_code is not StatusCode.ERROR
    attributes = agent_span.attributes or {}
    assert attributes["agent_otel.end_reason"] == "interrupted"
    assert "error.type" not in attributes
    interrupts = [e for e in agent_span.events if e.name == "agent_otel.interrupt"]
    assert len(interrupts) == 1
    assert dict(interrupts[0].attributes or {}) == {
        "agent_otel.interrupt.id": "int-7",
        "agent_otel.interrupt.reason": "approve?",
    }
    (duration,) = otel_telemetry.histograms()["gen_ai.invoke_agent.duration"]
    assert "error.type" not in (duration.attributes or {})


async def test_interrupt_without_reason(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedStreamingAgent([InterruptFinal(interrupt_id="i", payload=None)])
    await run_script(otel_telemetry, agent.astream(user_message="q"))
    (event,) = otel_telemetry.span("invoke_agent").events
    assert dict(event.attributes or {}) == {"agent_otel.interrupt.id": "i"}


# --- look-alikes: recognised by class name ------------------------------------------------------


class Lookalike:
    """Event classes with the contract's names and fields, unrelated to ``agent_contract``."""

    @dataclass
    class FunctionCall:
        name: str | None
        arguments: str

    @dataclass
    class ToolCall:
        id: str | None
        function: Any
        type: str = "function"

    @dataclass
    class ToolResult:
        tool_call_id: str
        content: Any = None
        name: str | None = None
        is_error: bool = False

    @dataclass
    class TextDelta:
        text: str

    @dataclass
    class ReasoningDelta:
        text: str

    @dataclass
    class LLMCallStart:
        model: str | None = None
        provider: str | None = None
        call_id: str | None = None
        params: dict[str, Any] = field(default_factory=dict)
        messages: list[Any] | None = None

    @dataclass
    class LLMCallEnd:
        model: str | None = None
        call_id: str | None = None
        finish_reason: str | None = None
        response_id: str | None = None

    @dataclass
    class Usage:
        input_tokens: int | None = None
        output_tokens: int | None = None
        total_tokens: int | None = None
        cache_read_tokens: int | None = None
        cache_creation_tokens: int | None = None
        reasoning_tokens: int | None = None
        model: str | None = None

    @dataclass
    class StepBoundary:
        index: int | None = None

    @dataclass
    class Error:
        message: str
        error_type: str | None = None
        fatal: bool = False

    @dataclass
    class PhaseMarker:
        name: str


def latent_script(ns: Any) -> list[Any]:
    """One script, built from either set of classes."""
    return [
        ns.PhaseMarker(name="research"),
        ns.LLMCallStart(
            model="m",
            provider="openai",
            call_id="c1",
            params={"temperature": 0.2, "max_tokens": 64, "stop": ["END"]},
            messages=[contract.Message("user", "what is x?")],
        ),
        ns.ReasoningDelta("let me look"),
        ns.TextDelta("Searching"),
        ns.ToolCall(id="t1", function=ns.FunctionCall(name="search", arguments='{"q": "x"}')),
        ns.ToolCall(id="t2", function=ns.FunctionCall(name="calc", arguments='{"e": 2}')),
        ns.LLMCallEnd(model="m-0613", call_id="c1", finish_reason="tool_calls", response_id="r1"),
        ns.Usage(input_tokens=12, output_tokens=7, cache_read_tokens=4, reasoning_tokens=2),
        ns.ToolResult(tool_call_id="t2", content={"v": 4}, name="calc"),
        ns.ToolResult(tool_call_id="t1", content="x is y", name="search", is_error=True),
        ns.StepBoundary(index=0),
        ns.LLMCallStart(model="m", provider="openai", call_id="c2"),
        ns.Error(message="slow", error_type="Timeout"),
        ns.TextDelta("x is y"),
        ns.LLMCallEnd(call_id="c2", finish_reason="stop"),
        ns.Usage(input_tokens=30, output_tokens=3),
        ns.StepBoundary(index=1),
    ]


async def traced_tree(events: list[Any], **options: Any) -> list[dict[str, Any]]:
    """The full span tree (every attribute, every event) of one run, on a fresh clock."""
    telemetry = InMemoryTelemetry()
    with FakeClock().installed():
        stream = ScriptedAgent(events).stream([])
        received = await run_script(telemetry, stream, agent_name="shape", **options)
    assert len(received) == len(events) and all(a is b for a, b in zip(received, events))
    tree = telemetry.tree()
    telemetry.shutdown()
    return tree


def flatten(tree: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for node in tree:
        out.append(node)
        out.extend(flatten(node["children"]))
    return out


async def test_lookalike_classes_trace_exactly_like_the_contracts() -> None:
    for options in ({}, {"capture_content": True}, {"step_spans": False}):
        ours = await traced_tree(latent_script(contract), **options)
        theirs = await traced_tree(latent_script(Lookalike), **options)
        assert theirs == ours, options
    # and the tree is a real one (not two empty ones being equal): 1 agent, 2 steps, 2 chat,
    # 2 tools, usage and content read from the look-alikes
    nodes = flatten(await traced_tree(latent_script(Lookalike), capture_content=True))
    names = sorted(n["name"] for n in nodes)
    assert names == [
        "chat m",
        "chat m",
        "execute_tool calc",
        "execute_tool search",
        "invoke_agent shape",
        "step 0",
        "step 1",
    ]
    first_chat = next(n for n in nodes if n["name"] == "chat m")
    assert first_chat["attributes"]["gen_ai.usage.input_tokens"] == 12
    assert first_chat["attributes"]["gen_ai.request.temperature"] == 0.2
    output = json.loads(first_chat["attributes"]["gen_ai.output.messages"])
    tool_parts = [p for p in output[0]["parts"] if p["type"] == "tool_call"]
    assert [(p["name"], p["id"], p["arguments"]) for p in tool_parts] == [
        ("search", "t1", {"q": "x"}),
        ("calc", "t2", {"e": 2}),
    ]


async def test_lookalikes_with_only_some_fields_still_trace() -> None:
    """Fields are read by name; a class lacking some of them is read as if they were None."""
    ns = SimpleNamespace(
        LLMCallStart=type("LLMCallStart", (), {"model": "m"}),
        TextDelta=type("TextDelta", (), {"text": "hi"}),
        LLMCallEnd=type("LLMCallEnd", (), {}),
    )
    tree = await traced_tree([ns.LLMCallStart(), ns.TextDelta(), ns.LLMCallEnd()])
    chat = next(n for n in flatten(tree) if n["name"] == "chat m")
    assert chat["attributes"]["agent_otel.response.chunk_count"] == 1
    assert "agent_otel.incomplete" not in chat["attributes"]


async def test_lookalikes_lacking_some_contract_fields_read_the_rest_as_given() -> None:
    """A handler reads the contract's fields of an event in one go (figure 2); a class lacking
    one of them is read field by field, the missing ones as None, the rest as given. A field
    beyond the contract (an adapter's ``error_type`` on a tool result) is read from any class."""
    ns = SimpleNamespace(
        LLMCallStart=type("LLMCallStart", (), {"model": "m", "call_id": "c"}),
        LLMCallEnd=type("LLMCallEnd", (), {"call_id": "c", "finish_reason": "stop"}),
        Usage=type("Usage", (), {"input_tokens": 3, "reasoning_tokens": 1}),
        ToolCall=type("ToolCall", (), {"id": "t1", "function": SimpleNamespace(name="find")}),
        ToolResult=type(
            "ToolResult", (), {"tool_call_id": "t1", "is_error": True, "error_type": "Timeout"}
        ),
    )
    events = [ns.LLMCallStart(), ns.LLMCallEnd(), ns.Usage(), ns.ToolCall(), ns.ToolResult()]
    nodes = flatten(await traced_tree(events))
    chat = next(n for n in nodes if n["name"] == "chat m")
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert chat["attributes"]["gen_ai.usage.input_tokens"] == 3
    assert chat["attributes"]["gen_ai.usage.reasoning.output_tokens"] == 1
    assert "gen_ai.usage.output_tokens" not in chat["attributes"]
    tool = next(n for n in nodes if n["name"] == "execute_tool find")
    assert tool["attributes"]["gen_ai.tool.call.id"] == "t1"
    assert tool["attributes"]["error.type"] == "Timeout"
    assert tool["attributes"]["agent_otel.tool.is_error"] is True
    assert "agent_otel.incomplete" not in tool["attributes"]


# --- look-alikes: recognised by ``type`` ---------------------------------------------------------


class MessageDeltaLike(BaseModel):
    type: Literal["message_delta"] = "message_delta"
    final: bool = False
    text: str


class ToolCallLike(BaseModel):
    type: Literal["tool_call_step"] = "tool_call_step"
    tool: str
    args: dict[str, Any]
    call_id: str


@dataclass
class ToolResultLike:
    tool: str
    call_id: str
    result: Any
    is_error: bool = False
    type: str = "tool_result_step"


@dataclass
class UsageLike:
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    model: str | None = None
    type: str = "run_usage"


@dataclass
class FinalLike:
    text: str
    type: str = "message_final"
    final: bool = True


async def test_type_discriminated_lookalikes_trace_like_the_agent_vocabulary() -> None:
    ours = [
        MessageDelta(text="a"),
        ToolCallStep(tool="search", args={"q": 1}, call_id="x"),
        ToolResultStep(tool="search", call_id="x", result="r", is_error=True),
        RunUsage(input_tokens=5, output_tokens=6, model="mm"),
        MessageFinal(text="a"),
    ]
    theirs = [
        MessageDeltaLike(text="a"),
        ToolCallLike(tool="search", args={"q": 1}, call_id="x"),
        ToolResultLike(tool="search", call_id="x", result="r", is_error=True),
        UsageLike(input_tokens=5, output_tokens=6, model="mm"),
        FinalLike(text="a"),
    ]
    for options in ({}, {"capture_content": True}):
        expected = await traced_tree(ours, **options)
        assert await traced_tree(theirs, **options) == expected
    tool = next(n for n in flatten(expected) if n["name"] == "execute_tool search")
    assert tool["attributes"]["gen_ai.tool.call.id"] == "x"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"q": 1}


async def test_run_usage_metric_names_the_configured_provider(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedStreamingAgent(
        [RunUsage(input_tokens=2, output_tokens=1), MessageFinal(text="")]
    )
    await run_script(otel_telemetry, agent.astream(user_message="q"), provider="anthropic")
    points = otel_telemetry.histograms()["gen_ai.client.token.usage"]
    assert len(points) == 2
    assert {(p.attributes or {})["gen_ai.provider.name"] for p in points} == {"anthropic"}


async def test_run_usage_metric_names_the_requested_model(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    # gen_ai.request.model is conditionally required on the metric "if available": the
    # model the run's call asked for (llm_kwargs) is, as it is on the agent span
    agent = instrument(
        ScriptedStreamingAgent([RunUsage(input_tokens=2, output_tokens=1), MessageFinal(text="")]),
        **otel_telemetry.providers(),
    )
    await agent.run(user_message="q", llm_kwargs={"model": "gpt-4o"})
    span = otel_telemetry.span("invoke_agent scripted_streaming")
    assert (span.attributes or {})["gen_ai.request.model"] == "gpt-4o"
    points = otel_telemetry.histograms()["gen_ai.client.token.usage"]
    assert len(points) == 2
    assert {(p.attributes or {}).get("gen_ai.request.model") for p in points} == {"gpt-4o"}

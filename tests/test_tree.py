"""The span tree of a sample run, as plain data (the README shows the same run).

The expected tree is written by hand from DESIGN.md's span tree and CONTRACT.md's matching
rules, not copied from a run: step spans split at StepBoundary, tool spans are siblings of the
chat span that asked for them (matched by id, results in reverse order), usage sits on the chat
span it belongs to (the first arrives after its LLMCallEnd), totals in agent_otel.usage.*.
"""

from __future__ import annotations

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel.testing import InMemoryTelemetry

# Timings and ids make poor snapshots: keep the keys that describe the structure.
KEYS = {
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "agent_otel.step.index",
    "agent_otel.usage.input_tokens",
    "agent_otel.usage.output_tokens",
    "agent_otel.end_reason",
    "error.type",
}

EVENTS = [
    LLMCallStart(model="gpt-4o", provider="openai", call_id="c1"),
    TextDelta(text="Looking it up."),
    ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": "otel"}')),
    ToolCall(id="t2", function=FunctionCall(name="fetch", arguments='{"url": "u"}')),
    LLMCallEnd(model="gpt-4o-2024-08-06", call_id="c1", finish_reason="tool_calls"),
    Usage(input_tokens=120, output_tokens=30),
    ToolResult(tool_call_id="t2", content="page"),
    ToolResult(tool_call_id="t1", content="results", is_error=True),
    StepBoundary(index=0),
    LLMCallStart(model="gpt-4o", provider="openai", call_id="c2"),
    Usage(input_tokens=200, output_tokens=12),
    TextDelta(text="Here it is."),
    LLMCallEnd(model="gpt-4o-2024-08-06", call_id="c2", finish_reason="stop"),
    StepBoundary(index=1),
]


def chat(call_in: int, call_out: int, finish: str) -> dict[str, object]:
    return {
        "name": "chat gpt-4o",
        "kind": "CLIENT",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.finish_reasons": [finish],
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": call_in,
            "gen_ai.usage.output_tokens": call_out,
        },
        "children": [],
    }


def tool(name: str, call_id: str, error: bool = False) -> dict[str, object]:
    node: dict[str, object] = {"name": f"execute_tool {name}", "kind": "INTERNAL"}
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.name": name,
    }
    if error:
        node["status"] = "ERROR"
        attributes["error.type"] = "tool_error"
    node["attributes"] = dict(sorted(attributes.items()))
    node["children"] = []
    return node


EXPECTED = [
    {
        "name": "invoke_agent researcher",
        "kind": "INTERNAL",
        "attributes": {
            "agent_otel.end_reason": "exhausted",
            "agent_otel.usage.input_tokens": 320,
            "agent_otel.usage.output_tokens": 42,
            "gen_ai.agent.name": "researcher",
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
        },
        "children": [
            {
                "name": "step 0",
                "kind": "INTERNAL",
                "attributes": {
                    "agent_otel.step.index": 0,
                    "agent_otel.usage.input_tokens": 120,
                    "agent_otel.usage.output_tokens": 30,
                },
                "children": [
                    chat(120, 30, "tool_calls"),
                    tool("search", "t1", error=True),
                    tool("fetch", "t2"),
                ],
            },
            {
                "name": "step 1",
                "kind": "INTERNAL",
                "attributes": {
                    "agent_otel.step.index": 1,
                    "agent_otel.usage.input_tokens": 200,
                    "agent_otel.usage.output_tokens": 12,
                },
                "children": [chat(200, 12, "stop")],
            },
        ],
    }
]


async def test_sample_run_tree(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(EVENTS)
    wrapper = otel_telemetry.wrapper(agent_name="researcher")
    result = await agent.invoke([Message(role="user", content="find")], stream_wrapper=wrapper)

    assert result.text == "Here it is."
    assert otel_telemetry.tree(attributes=KEYS, events=False) == EXPECTED
    # One trace, one root.
    assert len({s.context.trace_id for s in otel_telemetry.spans() if s.context}) == 1


async def test_step_spans_off_hangs_calls_off_the_agent(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(EVENTS)
    wrapper = otel_telemetry.wrapper(agent_name="researcher", step_spans=False)
    await agent.invoke([Message(role="user", content="find")], stream_wrapper=wrapper)

    [root] = otel_telemetry.tree(attributes=False, events=False)
    assert [c["name"] for c in root["children"]] == [
        "chat gpt-4o",
        "execute_tool search",
        "execute_tool fetch",
        "chat gpt-4o",
    ]


async def test_agent_id_goes_on_the_agent_span_only(otel_telemetry: InMemoryTelemetry) -> None:
    wrapper = otel_telemetry.wrapper(agent_name="researcher", agent_id="asst_5j66")
    await ScriptedAgent(EVENTS).invoke(
        [Message(role="user", content="find")], stream_wrapper=wrapper
    )

    carrying = {s.name for s in otel_telemetry.spans() if "gen_ai.agent.id" in (s.attributes or {})}
    assert carrying == {"invoke_agent researcher"}
    root = next(s for s in otel_telemetry.spans() if s.name == "invoke_agent researcher")
    assert (root.attributes or {})["gen_ai.agent.id"] == "asst_5j66"
    for points in otel_telemetry.histograms().values():  # an id is no metric dimension
        assert all("gen_ai.agent.id" not in dict(p.attributes or {}) for p in points)


async def test_no_agent_id_unless_given(otel_telemetry: InMemoryTelemetry) -> None:
    wrapper = otel_telemetry.wrapper(agent_name="researcher")
    await ScriptedAgent(EVENTS).invoke(
        [Message(role="user", content="find")], stream_wrapper=wrapper
    )
    assert not any("gen_ai.agent.id" in (s.attributes or {}) for s in otel_telemetry.spans())

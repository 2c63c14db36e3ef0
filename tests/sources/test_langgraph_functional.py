"""LangGraph's functional API (``@entrypoint`` / ``@task``) through the LangGraph adapter.

A task's update is what it returned (``{"call_model": AIMessage}``), not a state dict: the
model task's answer ends its call with the tool calls it asks for, and a tool task's
``ToolMessage`` is that call's result, so each model turn after tool results is a step, as in a
``StateGraph``'s loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens
from .test_langchain_create_agent import lookup, model

pytest.importorskip("langgraph.func")

BOTH = [("call-1", "lookup", '{"city": "Paris"}'), ("call-2", "lookup", '{"city": "Rome"}')]


async def test_a_functional_agent_loop_is_a_step_per_model_turn(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An entrypoint calling a model task, then a tool task per call (run at once), then the
    model again: each tool span ends with its call's result in the first step, before the
    second call, which opens the next step; tokens once per call."""
    from langgraph.func import entrypoint, task

    from agent_contract.sources.langgraph_stream import langgraph_events

    tool = lookup()
    asking = model([BOTH, "It is sunny."], "agent").bind_tools([tool])

    @task
    async def call_model(messages: list[Any]) -> Any:
        return await asking.ainvoke(messages)

    @task
    async def call_tool(call: Any) -> Any:
        return await tool.ainvoke(call)

    @entrypoint()
    async def agent(messages: list[Any]) -> Any:
        answer = await call_model(messages)
        while answer.tool_calls:
            results = await asyncio.gather(*(call_tool(c) for c in answer.tool_calls))
            messages = [*messages, answer, *results]
            answer = await call_model(messages)
        return answer

    events = langgraph_events(agent, [("user", "weather in Paris and Rome?")])
    await run_script(otel_telemetry, events, agent_name="bot", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup", "execute_tool lookup"]],
        ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    second = max(otel_telemetry.by_name()["chat agent"], key=lambda s: s.start_time or 0)
    for span in otel_telemetry.by_name()["execute_tool lookup"]:
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.tool.call.id"] in ("call-1", "call-2")
        assert json.loads(str(attributes["gen_ai.tool.call.result"])) == "sunny"
        assert (span.end_time or 0) <= (second.start_time or 0)
    assert tokens(otel_telemetry) == 20
    assert otel_telemetry.open_spans() == []

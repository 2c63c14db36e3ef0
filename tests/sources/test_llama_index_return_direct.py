"""LlamaIndex's ``return_direct`` tools: a tool made with ``return_direct=True`` answers for
the agent, its output the run's result, the LLM asked nothing more. Before, the run's answer
was the model's tool call (its last call's output), not the text the run returned."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("llama_index.core")


def lookup(q: str) -> str:
    """Look it up."""
    return "found it"


@pytest.mark.parametrize("workflow", [False, True], ids=["agent", "agent_workflow"])
async def test_a_return_direct_tools_output_is_the_runs_answer(
    otel_telemetry: InMemoryTelemetry, workflow: bool
) -> None:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.tools import FunctionTool

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    ask = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": "Paris"})
    tool = FunctionTool.from_defaults(lookup, return_direct=True)
    agent: Any = FunctionAgent(name="bot", description="Looks things up.", tools=[tool],
                               llm=replies(ask, "never asked"))  # fmt: skip
    if workflow:
        agent = AgentWorkflow(agents=[agent])
    kept: list[Any] = []
    source = llama_index_events(agent, "Paris?", on_handler=kept.append)
    await run_script(otel_telemetry, source, agent_name="bot", capture_content=True)

    assert str(await kept[0]) == "found it"
    assert otel_telemetry.outline() == [
        ["invoke_agent bot", [["step 0", ["chat gpt-4o-mini", "execute_tool lookup"]]]]
    ]
    run = otel_telemetry.span("invoke_agent bot").attributes or {}
    [message] = json.loads(str(run["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": "found it"}]
    assert otel_telemetry.open_spans() == []

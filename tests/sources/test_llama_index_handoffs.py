"""An ``AgentWorkflow`` handoff LlamaIndex refuses: to an agent the workflow lacks, or to one
the agent may not hand off to (``can_handoff_to``). LlamaIndex's ``handoff`` tool returns its
own text for each instead of raising, and the agent goes on; before, both were calls that
succeeded. Now each fails, named after which (``agent_not_found``, ``handoff_not_allowed``),
and the run goes on with the agent that asked."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import phases

pytest.importorskip("llama_index.core")


async def test_a_handoff_llama_index_refuses_is_a_failed_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    def handoff(call_id: str, to: str) -> Any:
        return ToolCallBlock(tool_call_id=call_id, tool_name="handoff",
                             tool_kwargs={"to_agent": to, "reason": "needs help"})  # fmt: skip

    lead = FunctionAgent(name="lead", description="Leads.", tools=[], can_handoff_to=["helper"],
                         llm=replies(handoff("h1", "nobody"), handoff("h2", "writer"),
                                     "I did it myself."))  # fmt: skip
    writer = FunctionAgent(name="writer", description="Writes.", tools=[], llm=replies("written"))
    helper = FunctionAgent(name="helper", description="Helps.", tools=[], llm=replies("helped"))
    team = AgentWorkflow(agents=[lead, writer, helper], root_agent="lead")
    await run_script(otel_telemetry, llama_index_events(team, "Go"), agent_name="team")

    calls = {(x.attributes or {}).get("gen_ai.tool.call.id"): x for x in otel_telemetry.spans()
             if x.name == "execute_tool handoff"}  # fmt: skip
    assert {k: (v.attributes or {}).get("error.type") for k, v in calls.items()} == {
        "h1": "agent_not_found", "h2": "handoff_not_allowed",
    }  # fmt: skip
    assert all(x.status.status_code is StatusCode.ERROR for x in calls.values())
    assert phases(otel_telemetry) == ["lead", "lead", "lead"]  # no handoff happened
    assert otel_telemetry.span("invoke_agent team").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []

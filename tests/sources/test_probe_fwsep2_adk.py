import json
from typing import Any, AsyncGenerator
import pytest
from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("google.adk")


def dump(t):
    print(t.outline())
    for sp in t.spans():
        a = sp.attributes or {}
        print(sp.name, sp.status.status_code, {k: v for k, v in a.items() if k in ("error.type", "gen_ai.output.messages", "gen_ai.usage.input_tokens", "gen_ai.tool.call.result", "agent_otel.phase")})


async def test_probe_agent_tool_skip(otel_telemetry: InMemoryTelemetry) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types
    from agent_contract.sources.google_adk_stream import google_adk_events
    from ._fw_google_adk import _model

    expert = LlmAgent(name="expert", model=_model([[types.Part(text="sunny")]]))
    ask = types.Part(function_call=types.FunctionCall(id="e1", name="expert", args={"request": "Paris?"}))
    lead_model = _model([[ask], [types.Part(text="never")]])
    lead = LlmAgent(name="lead", model=lead_model, tools=[AgentTool(expert, skip_summarization=True)])
    await run_script(otel_telemetry, google_adk_events(lead, "Paris?"), agent_name="lead", capture_content=True)
    dump(otel_telemetry)
    print("calls", lead_model.calls)
    assert 0


async def test_probe_custom_agent(otel_telemetry: InMemoryTelemetry) -> None:
    from google.adk.agents import LlmAgent, BaseAgent, SequentialAgent
    from google.adk.events import Event
    from google.genai import types
    from agent_contract.sources.google_adk_stream import google_adk_events
    from ._fw_google_adk import _model

    class Gate(BaseAgent):
        async def _run_async_impl(self, ctx) -> AsyncGenerator[Event, None]:
            yield Event(author=self.name, invocation_id=ctx.invocation_id,
                        content=types.Content(role="model", parts=[types.Part(text="Gate says ok.")]))

    first = LlmAgent(name="first", model=_model([[types.Part(text="Draft.")]]), output_key="draft")
    second = LlmAgent(name="second", model=_model([[types.Part(text="Final.")]]), instruction="Polish {draft}")
    seq = SequentialAgent(name="seq", sub_agents=[first, Gate(name="gate"), second])
    await run_script(otel_telemetry, google_adk_events(seq, "Go"), agent_name="seq", capture_content=True)
    dump(otel_telemetry)
    assert 0

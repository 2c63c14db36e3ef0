"""AutoGen: an ``AssistantAgent`` without ``reflect_on_tool_use`` answers with its tools' results.

With no reflection AutoGen asks the model no more after the tools ran: its response is a
``ToolCallSummaryMessage``, the results in ``tool_call_summary_format`` (``"{result}"`` by
default) or what ``tool_call_summary_formatter`` makes of them. That text is the run's answer
(``TaskResult.messages[-1]``), not the output of any model call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _fw_autogen as fa
from . import _script as s

pytest.importorskip("autogen_agentchat")


async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _said(span: Any) -> list[Any]:
    messages = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
    return [p.get("content") for m in messages for p in m["parts"] if p["type"] == "text"]


@pytest.mark.parametrize(
    ("options", "answer"),
    [
        ({}, "sunny in Paris\nsunny in Rome"),
        ({"tool_call_summary_format": "{tool_name}: {result}"},
         "weather: sunny in Paris\nweather: sunny in Rome"),
        ({"tool_call_summary_formatter": lambda call, result: f"{call.id}={result.content}"},
         "w1=sunny in Paris\nw2=sunny in Rome"),
    ],
    ids=["default format", "format", "formatter"],
)  # fmt: skip
async def test_a_tool_summary_is_the_runs_answer(
    otel_telemetry: InMemoryTelemetry, options: dict[str, Any], answer: str
) -> None:
    from autogen_agentchat.agents import AssistantAgent

    from agent_contract.sources.autogen_stream import autogen_events

    asks = fa._calls(s.Call("w1", "weather", {"city": "Paris"}),
                     s.Call("w2", "weather", {"city": "Rome"}))  # fmt: skip
    agent = AssistantAgent("solo", model_client=fa._client([asks]), tools=[weather],
                           reflect_on_tool_use=False, **options)  # fmt: skip
    kept: list[Any] = []
    source = autogen_events(agent, "Weather?", sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="solo", capture_content=True)

    assert kept[-1].messages[-1].content == answer  # AutoGen's own answer, as documented
    assert otel_telemetry.outline() == [["invoke_agent solo", [
        ["step 0", ["chat", "execute_tool weather", "execute_tool weather"]],
    ]]]  # fmt: skip
    assert _said(otel_telemetry.span("invoke_agent solo")) == [answer]
    assert answer not in json.dumps(_said(otel_telemetry.span("chat")))  # no model said it
    assert otel_telemetry.open_spans() == []

"""An AutoGen AgentChat agent with two tools, one of which fails, traced as a span tree.

Extra: ``autogen-agentchat``.

    pip install 'agent-otel[autogen-agentchat]' && python examples/autogen_agent.py

No API key: the ``AssistantAgent`` runs on AutoGen's own ``ReplayChatCompletionClient``,
which replays two scripted responses (``weather`` and ``forecast`` called in parallel, then
the answer, streamed). ``forecast`` raises: AutoGen hands the error to the model and the trace
marks that tool span as an error. Swap in ``OpenAIChatCompletionClient(model=...)`` to talk
to a real model; nothing else changes. ``configure()`` prints the trace tree.

AutoGen traces to the global tracer provider itself (``create_agent``, ``invoke_agent`` and
``execute_tool`` spans, no model calls or tokens); here the providers stay local
(``set_global=False``) and go to ``otel_wrapper``, so the tree is agent-otel's alone.
"""

from __future__ import annotations

import asyncio
import sys

try:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient
except ImportError:
    sys.exit("needs AutoGen AgentChat: pip install 'agent-otel[autogen-agentchat]'")

from agent_contract.sources.autogen_stream import autogen_events
from agent_otel import configure, otel_wrapper


async def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


async def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def scripted_model() -> ReplayChatCompletionClient:
    calls = [FunctionCall(id="call_0", name="weather", arguments='{"city": "Paris"}'),
             FunctionCall(id="call_1", name="forecast", arguments='{"city": "Paris"}')]  # fmt: skip
    first = CreateResult(finish_reason="function_calls", content=calls, cached=False,
                         usage=RequestUsage(prompt_tokens=60, completion_tokens=12))  # fmt: skip
    info = {"vision": False, "function_calling": True, "json_output": False,
            "family": "unknown", "structured_output": False}  # fmt: skip
    return ReplayChatCompletionClient(
        [first, "It is sunny in Paris; no forecast."],
        model_info=info,  # type: ignore[arg-type]
    )


async def main() -> None:
    telemetry = configure("autogen-example", set_global=False)
    agent = AssistantAgent("weatherbot", model_client=scripted_model(), tools=[weather, forecast],
                           model_client_stream=True, reflect_on_tool_use=True)  # fmt: skip
    text: list[str] = []
    events = autogen_events(agent, "Weather?", model="scripted-model")
    traced = otel_wrapper(agent_name="weatherbot", tracer_provider=telemetry.tracer_provider,
                          meter_provider=telemetry.meter_provider)  # fmt: skip
    async for event in traced(events):
        if type(event).__name__ == "TextDelta":
            text.append(event.text)  # type: ignore[attr-defined]
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

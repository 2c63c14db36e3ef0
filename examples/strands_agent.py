"""A Strands agent with two tools, one of which fails, traced as a span tree.

Extra: ``strands-agents``.

    pip install 'agent-otel[strands-agents]' && python examples/strands_agent.py

No API key: the ``Agent`` runs on a scripted model written on Strands' ``Model`` (the base
its Bedrock, Anthropic and OpenAI providers share), streaming Converse events: it calls
``weather`` and ``forecast`` in parallel, then answers. ``forecast`` raises: Strands hands the
error to the model as an error ``toolResult`` and the trace marks that tool span as an error.
Use ``BedrockModel()`` (and AWS credentials) for a real model; nothing else changes. Strands
traces to the global tracer provider itself, so the providers here stay local
(``set_global=False``) and the tree is agent-otel's alone.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

try:
    from strands import Agent, tool
    from strands.models.model import Model
except ImportError:
    sys.exit("needs Strands Agents: pip install 'agent-otel[strands-agents]'")

from agent_contract.sources.strands_stream import strands_events
from agent_otel import configure, otel_wrapper


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@tool
def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def turn(text: str, calls: list[str], usage: tuple[int, int]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}},
                                    {"contentBlockDelta": {"delta": {"text": text}}},
                                    {"contentBlockStop": {}}]  # fmt: skip
    for i, name in enumerate(calls):
        start = {"toolUse": {"toolUseId": f"call_{i}", "name": name}}
        events += [{"contentBlockStart": {"start": start}},
                   {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(
                       {"city": "Paris"})}}}},
                   {"contentBlockStop": {}}]  # fmt: skip
    used = {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)}
    return [*events, {"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}},
            {"metadata": {"usage": used, "metrics": {"latencyMs": 1}}}]  # fmt: skip


class ScriptedModel(Model):
    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted-converse"}
        self.turns = iter([turn("Checking.", ["weather", "forecast"], (60, 12)),
                           turn("It is sunny in Paris; no forecast.", [], (95, 9))])  # fmt: skip

    def update_config(self, **config: Any) -> None:
        self.config.update(config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
        yield

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for event in next(self.turns):
            yield event


async def main() -> None:
    telemetry = configure("strands-example", set_global=False)
    agent = Agent(model=ScriptedModel(), tools=[weather, forecast], name="weatherbot",
                  callback_handler=None)  # fmt: skip
    traced = otel_wrapper(agent_name="weatherbot", tracer_provider=telemetry.tracer_provider,
                          meter_provider=telemetry.meter_provider)  # fmt: skip
    text: list[str] = []
    async for event in traced(strands_events(agent, "Weather in Paris?")):
        if type(event).__name__ == "TextDelta":
            text.append(event.text)  # type: ignore[attr-defined]
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

"""A pydantic-ai agent, traced: its run event stream becomes invoke_agent > step > chat/tool.

Extra: ``pydantic-ai``.

    pip install 'agent-otel[pydantic-ai]' && python examples/pydantic_ai_agent.py

No API key: the agent runs on pydantic-ai's own ``TestModel``, which calls every tool once
and then answers. ``forecast`` fails the way pydantic-ai tools report a failure to the model
(``ToolFailed``), so the trace shows its span as an error beside ``weather``'s. Swap in a real
model (``Agent("openai:gpt-4o-mini", ...)``) and nothing else changes. ``configure()`` prints
the trace tree to the terminal.
"""

from __future__ import annotations

import asyncio

try:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.models.test import TestModel
except ImportError:  # the extra is not installed: say what to run, no traceback
    raise SystemExit(
        "This example needs pydantic-ai: pip install 'agent-otel[pydantic-ai]'"
    ) from None

from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel import configure, otel_wrapper

agent = Agent(TestModel(), name="weatherbot")


@agent.tool_plain
def weather(city: str) -> str:
    """Today's weather in ``city``."""
    return f"sunny in {city}"


@agent.tool_plain
def forecast(city: str) -> str:
    """Tomorrow's forecast for ``city``."""
    raise ToolFailed(f"no forecast for {city} today")


async def main() -> None:
    telemetry = configure("pydantic-ai-example")
    results: list[object] = []
    events = pydantic_ai_events(agent, "Weather in Paris?", on_result=results.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {getattr(results[0], 'output', None)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

"""A Google ADK agent with two tools, one of which fails, traced as a span tree.

Extra: ``google-adk``.

    pip install 'agent-otel[google-adk]' && python examples/google_adk_agent.py

(Google ADK pins OpenTelemetry <= 1.44: install it in one command with agent-otel.) No API
key: the ``LlmAgent`` runs on a scripted model written on ADK's ``BaseLlm``, the extension
point its own ``Gemini`` and ``LiteLlm`` use; it streams, then calls ``weather`` and
``forecast`` in parallel, then answers. ``forecast`` raises; the agent's
``on_tool_error_callback`` hands the error to the model as ADK's ``{"error": ...}``, and the
trace marks that tool span as an error. Use ``model="gemini-2.5-flash"`` (and a key) for a
real model; nothing else changes. ADK traces to the global tracer provider itself, so the
providers here stay local (``set_global=False``) and the tree is agent-otel's alone.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

try:
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
except ImportError:
    sys.exit("needs Google ADK: pip install 'agent-otel[google-adk]'")

from agent_contract.sources.google_adk_stream import google_adk_events
from agent_otel import configure, otel_wrapper


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def tool_error(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, Any]:
    return {"error": str(error)}


class ScriptedModel(BaseLlm):
    """Answers call 1 with two parallel function calls, call 2 with text, as Gemini streams."""

    calls: int = 0

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        self.calls += 1
        if self.calls == 1:
            asked = [types.Part(function_call=types.FunctionCall(id=f"call_{i}", name=name,
                                                                 args={"city": "Paris"}))
                     for i, name in enumerate(["weather", "forecast"])]  # fmt: skip
            parts, used = [types.Part(text="Checking."), *asked], (60, 12)
        else:
            parts, used = [types.Part(text="It is sunny in Paris; no forecast.")], (95, 9)
        if stream:
            yield LlmResponse(content=types.Content(role="model", parts=parts[:1]), partial=True)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=used[0], candidates_token_count=used[1],
            total_token_count=sum(used),
        )  # fmt: skip
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage,
                          model_version=self.model, turn_complete=True)  # fmt: skip


async def main() -> None:
    telemetry = configure("google-adk-example", set_global=False)
    agent = LlmAgent(name="weatherbot", model=ScriptedModel(model="scripted-gemini"),
                     tools=[weather, forecast], on_tool_error_callback=tool_error)  # fmt: skip
    traced = otel_wrapper(agent_name="weatherbot", tracer_provider=telemetry.tracer_provider,
                          meter_provider=telemetry.meter_provider)  # fmt: skip
    text: list[str] = []
    async for event in traced(google_adk_events(agent, "Weather in Paris?")):
        if type(event).__name__ == "TextDelta":
            text.append(event.text)  # type: ignore[attr-defined]
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

"""Decorate existing Agent-contract agents with ``instrument()``: tools and a sub-agent.

Extra: none (the quickstart's install, ``pip install -e .``).

    python examples/instrumented_agent.py

Neither agent below knows about tracing. ``instrument()`` returns drop-ins; the researcher's
tool call runs the summariser sub-agent, whose run nests under that tool's span. Only an
allow-list of run parameters is recorded: the API key in ``llm_kwargs`` never is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from agent_contract.agent import (
    Agent,
    MessageDelta,
    MessageFinal,
    RunUsage,
    StreamEvent,
    ToolCallStep,
    ToolResultStep,
)
from agent_otel import configure, instrument


class Question(BaseModel):
    user_message: str


class Summariser(Agent):
    """A non-streaming agent: ``run`` returns the answer (the default ``astream`` wraps it)."""

    tool_name = "summariser"
    tool_description = "Summarises a set of search results."
    ToolInput = Question

    async def run(self, **kwargs: Any) -> str:
        await asyncio.sleep(0.03)  # stands for a model call
        return "OTel GenAI spans nest agent > step > chat / tool."


class Researcher(Agent):
    """A streaming agent: ``astream`` yields its steps, ``run`` drains it."""

    tool_name = "researcher"
    tool_description = "Answers questions by searching and summarising."
    ToolInput = Question

    def __init__(self, summariser: Agent) -> None:
        self.summariser = summariser

    async def astream(self, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        yield ToolCallStep(tool="web_search", args={"q": kwargs["user_message"]}, call_id="s1")
        await asyncio.sleep(0.02)
        yield ToolResultStep(tool="web_search", call_id="s1", result=["r1", "r2"])
        yield ToolCallStep(tool="summarise", args={"results": ["r1", "r2"]}, call_id="s2")
        summary = await self.summariser.run(user_message="summarise r1, r2")  # a sub-agent
        yield ToolResultStep(tool="summarise", call_id="s2", result=summary)
        yield MessageDelta(text=summary)
        yield RunUsage(input_tokens=840, output_tokens=64, model="gpt-4o-mini")
        yield MessageFinal(text=summary)

    async def run(self, **kwargs: Any) -> Any:
        return await self._drain(self.astream(**kwargs))


async def main() -> None:
    telemetry = configure("instrumented-example")
    researcher = instrument(Researcher(summariser=instrument(Summariser())))
    answer = await researcher.run(
        user_message="How do GenAI spans nest?",
        thread_id="thread-42",
        llm_provider="openai",
        llm_kwargs={"model": "gpt-4o-mini", "temperature": 0.2, "api_key": "sk-do-not-record"},
    )
    print(f"answer: {answer}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

"""A LangGraph ReAct agent, traced: its messages + updates stream becomes a span tree.

Extra: ``langgraph``.

    pip install 'agent-otel[langgraph]' && python examples/langgraph_agent.py

No API key: the graph runs on LangChain's own ``GenericFakeChatModel`` (scripted answers,
streamed word by word). Swap in a real chat model and nothing else changes. ``configure()``
prints the trace tree to the terminal.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

try:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent
except ImportError:  # the extra is not installed: say what to run, no traceback
    raise SystemExit("This example needs LangGraph: pip install 'agent-otel[langgraph]'") from None

from agent_contract.sources.langgraph_stream import langgraph_events
from agent_otel import configure, otel_wrapper

warnings.filterwarnings("ignore", message="create_react_agent has been moved")  # langchain 1.x


class FakeModel(GenericFakeChatModel):
    """The fake chat model, accepting tools as a real one does (it never calls them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def weather(city: str) -> str:
    """Today's weather in ``city``."""
    return f"sunny in {city}"


async def main() -> None:
    telemetry = configure("langgraph-example")
    answer = AIMessage(content="It is sunny in Paris.", id="lc-answer")
    graph = create_react_agent(FakeModel(messages=iter([answer])), [weather])
    text: list[str] = []
    events = langgraph_events(graph, {"messages": [("user", "Weather in Paris?")]})
    async for event in otel_wrapper(agent_name="weatherbot")(events):
        text.append(getattr(event, "text", "") if type(event).__name__ == "TextDelta" else "")
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

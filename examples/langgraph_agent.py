"""A LangGraph ReAct agent, traced: its messages + updates stream becomes a span tree.

Extra: ``langgraph``.

    pip install 'agent-otel[langgraph]' && python examples/langgraph_agent.py

No API key: the graph runs on LangChain's own ``GenericFakeChatModel`` (scripted answers,
each message whole, as from a model that does not stream): it asks for ``weather`` and
``forecast``, then answers. ``forecast``
raises; the ``ToolNode`` hands its error to the model (``handle_tool_errors=True``), and the
trace shows that tool's span as an error named by the exception. Swap in a real chat model
and nothing else changes. ``configure()`` prints the trace tree to the terminal.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

try:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import ToolNode, create_react_agent
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


class ForecastUnavailable(RuntimeError):
    """The forecast service has nothing for that city."""


def forecast(city: str) -> str:
    """Tomorrow's forecast for ``city``."""
    raise ForecastUnavailable(f"no forecast for {city} today")


async def main() -> None:
    telemetry = configure("langgraph-example")
    calls = [{"name": name, "args": {"city": "Paris"}, "id": f"call_{name}"}
             for name in ("weather", "forecast")]  # fmt: skip
    ask = AIMessage(content="Let me check.", tool_calls=calls, id="lc-tools")
    answer = AIMessage(content="It is sunny in Paris.", id="lc-answer")
    tools = ToolNode([weather, forecast], handle_tool_errors=True)
    model = FakeModel(messages=iter([ask, answer]), disable_streaming=True)
    graph = create_react_agent(model, tools)
    text: list[str] = []
    events = langgraph_events(graph, {"messages": [("user", "Weather in Paris?")]})
    async for event in otel_wrapper(agent_name="weatherbot")(events):
        text.append(getattr(event, "text", "") if type(event).__name__ == "TextDelta" else "")
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

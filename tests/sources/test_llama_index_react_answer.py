"""LlamaIndex's ``ReActAgent`` answers with what follows ``Answer:`` in the model's text: its
``finalize`` takes the answer out of the last ``AgentOutput`` after that was written to the
stream, and the workflow returns it so. The model's call keeps the text the model said; the
run's answer is what the agent returned. Before, it was the model's whole text, its
``Thought:`` included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("llama_index.core")

CHAT = "chat gpt-4o-mini"
LOOK = 'Thought: I need to look.\nAction: lookup\nAction Input: {"q": "Paris"}'
SAID = "Thought: I can answer.\nAnswer: It is sunny."


def _text(span: Any) -> str:
    [message] = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
    return "".join(p.get("content", "") for p in message["parts"] if p["type"] == "text")


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "unstreamed"])
async def test_a_react_agents_answer_is_what_it_returned(
    otel_telemetry: InMemoryTelemetry, streaming: bool
) -> None:
    from llama_index.core.agent.workflow import ReActAgent

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    def lookup(q: str) -> str:
        """Look it up."""
        return "sunny"

    bot = ReActAgent(name="bot", tools=[lookup], llm=replies(LOOK, SAID), streaming=streaming)
    handlers: list[Any] = []
    source = llama_index_events(bot, "Paris?", on_handler=handlers.append)
    await run_script(otel_telemetry, source, agent_name="bot", capture_content=True)

    returned = (await handlers[0]).response.content
    assert returned == "It is sunny."
    last = max(otel_telemetry.by_name()[CHAT], key=lambda s: s.start_time or 0)
    assert _text(last) == SAID
    assert _text(otel_telemetry.span("invoke_agent bot")) == returned
    assert otel_telemetry.open_spans() == []

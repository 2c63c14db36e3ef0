"""LlamaIndex agents made with ``streaming=False``: LlamaIndex asks the LLM for its whole
response (``achat``) and writes no ``AgentStream``, only the ``AgentOutput`` holding that
response. Before, every such call's chat span had no text and the run no answer; the
response's text (and its thinking) is now the call's, and the last one the run's answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("llama_index.core")

CHAT = "chat gpt-4o-mini"


def _parts(span: Any) -> list[Any]:
    [message] = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
    return list(message["parts"])


async def test_an_unstreamed_agents_calls_keep_their_text_and_answer_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import TextBlock, ThinkingBlock, ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    def lookup(q: str) -> str:
        """Look it up."""
        return "sunny"

    ask = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": "Paris"})
    thought = ThinkingBlock(content="It said sunny.")
    llm = replies([TextBlock(text="Checking."), ask], [thought, TextBlock(text="It is sunny.")])
    bot = FunctionAgent(name="bot", tools=[lookup], llm=llm, streaming=False)
    await run_script(otel_telemetry, llama_index_events(bot, "Paris?"), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert llm.turns == 2
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT, "execute_tool lookup"]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    first, second = sorted(otel_telemetry.by_name()[CHAT], key=lambda s: s.start_time or 0)
    assert _parts(first) == [
        {"type": "text", "content": "Checking."},
        {"type": "tool_call", "name": "lookup", "id": "c1", "arguments": {"q": "Paris"}},
    ]
    assert _parts(second) == [
        {"type": "reasoning", "content": "It said sunny."},
        {"type": "text", "content": "It is sunny."},
    ]
    assert _parts(otel_telemetry.span("invoke_agent bot")) == _parts(second)  # the last call's
    assert otel_telemetry.open_spans() == []

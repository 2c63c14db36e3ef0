"""A LlamaIndex agent run past its ``max_iterations`` with ``early_stopping_method="generate"``:
LlamaIndex asks its LLM once more for a final answer (streamed, with no ``AgentInput`` event
before it) instead of raising. That request is made and billed like any other: a chat span of
its own, holding the text it streamed, in the step after the last tool results, and its text
is the run's answer. Before, its text fell outside any call, the chat span was empty, and the
run's answer was empty too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("llama_index.core")

MODEL = "gpt-4o-mini"
CHAT = f"chat {MODEL}"


def lookup(q: str) -> str:
    """Look it up."""
    return "nothing yet"


def _llm() -> Any:
    """LlamaIndex's mock function-calling LLM asking for ``lookup`` on every request, except
    the one ending with LlamaIndex's early-stopping prompt (a system message naming the
    maximum), which it answers "Best effort." in two chunks."""
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        LLMMetadata,
        ToolCallBlock,
    )
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    class Persistent(MockFunctionCallingLLM):
        asked: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_function_calling_model=True, model_name=MODEL)

        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            last = messages[-1]
            stopping = last.role == "system" and "maximum" in str(last.content).lower()
            self.asked += 1
            call = ToolCallBlock(tool_call_id=f"l{self.asked}", tool_name="lookup",
                                 tool_kwargs={"q": "x"})  # fmt: skip

            async def stream() -> AsyncIterator[Any]:
                if stopping:
                    text = ""
                    for chunk in ("Best ", "effort."):
                        text += chunk
                        message = ChatMessage(role="assistant", content=text)
                        yield ChatResponse(message=message, delta=chunk)
                else:
                    message = ChatMessage(role="assistant", content="")
                    message.blocks.append(call)
                    yield ChatResponse(message=message, delta="")

            return stream()

    return Persistent()


def _said(telemetry: InMemoryTelemetry, span: Any) -> str:
    messages = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
    return "".join(p.get("content", "") for m in messages for p in m["parts"])


async def test_the_early_stopping_answer_is_a_call_of_its_own_and_the_runs_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    from agent_contract.sources.llama_index_stream import llama_index_events

    llm = _llm()
    agent = FunctionAgent(name="bot", llm=llm, tools=[lookup], early_stopping_method="generate")
    source = llama_index_events(agent, "Find it.", max_iterations=2)
    await run_script(otel_telemetry, source, agent_name="bot", capture_content=True)

    assert llm.asked == 3  # two asking for the tool, the early-stopping request
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT, "execute_tool lookup"]], ["step 1", [CHAT, CHAT]],
    ]]]  # fmt: skip
    chats = sorted((s for s in otel_telemetry.spans() if s.name == CHAT),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    assert _said(otel_telemetry, chats[-1]) == "Best effort."
    assert _said(otel_telemetry, otel_telemetry.span("invoke_agent bot")) == "Best effort."
    assert otel_telemetry.open_spans() == []

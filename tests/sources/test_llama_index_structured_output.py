"""LlamaIndex's structured output: an agent (or an ``AgentWorkflow``) given ``output_cls``
answers, then asks its LLM once more for that answer as the class (``as_structured_llm`` over
the agent's memory) before the run ends. That request is made (and billed) like any other: it
is a chat span of its own, once, in the step of the answer it restates; the run's answer and
its ``structured_response`` are LlamaIndex's, untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("llama_index.core")

MODEL = "gpt-4o-mini"
CHAT = f"chat {MODEL}"


class City(BaseModel):
    name: str


def _llm(structured: dict[str, Any] | None) -> Any:
    """LlamaIndex's mock function-calling LLM streaming the answer "Paris", and answering the
    structured request (its ``achat``, with the class as a tool) with a call of that tool of
    arguments ``structured``, or with no call (``None``: LlamaIndex then has no output)."""
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        LLMMetadata,
        ToolCallBlock,
    )
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    class Structured(MockFunctionCallingLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_function_calling_model=True, model_name=MODEL)

        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            async def stream() -> AsyncIterator[Any]:
                yield ChatResponse(message=ChatMessage(role="assistant", content="Paris"),
                                   delta="Paris")  # fmt: skip

            return stream()

        async def achat(self, messages: Any, **kwargs: Any) -> Any:
            message = ChatMessage(role="assistant", content="")
            if structured is not None:
                block = ToolCallBlock(tool_call_id="s1", tool_name="City", tool_kwargs=structured)
                message.blocks.append(block)
            return ChatResponse(message=message)

    return Structured()


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                  key=lambda s: s.start_time or 0)  # fmt: skip


async def test_an_agents_structured_output_request_is_a_chat_span_of_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    from agent_contract.sources.llama_index_stream import llama_index_events

    agent = FunctionAgent(name="geo", tools=[], llm=_llm({"name": "Paris"}), output_cls=City)
    kept: list[Any] = []
    source = llama_index_events(agent, "Capital of France?", on_handler=kept.append)
    await run_script(otel_telemetry, source, agent_name="geo")

    result = await kept[0]
    assert str(result) == "Paris" and result.structured_response == {"name": "Paris"}
    assert otel_telemetry.outline() == [["invoke_agent geo", [["step 0", [CHAT, CHAT]]]]]
    answer, structured = _chats(otel_telemetry)
    assert answer.status.status_code is StatusCode.UNSET
    assert structured.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_a_structured_output_request_that_gave_no_output_fails_its_span_not_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """LlamaIndex swallows the failure (a warning; ``structured_response`` stays ``None``):
    the run answered, its span is not failed; the request's span is."""
    from llama_index.core.agent.workflow import FunctionAgent

    from agent_contract.sources.llama_index_stream import llama_index_events

    agent = FunctionAgent(name="geo", tools=[], llm=_llm(None), output_cls=City)
    kept: list[Any] = []
    source = llama_index_events(agent, "Capital of France?", on_handler=kept.append)
    with pytest.warns(UserWarning, match="structured output"):
        await run_script(otel_telemetry, source, agent_name="geo")

    result = await kept[0]
    assert str(result) == "Paris" and result.structured_response is None
    assert otel_telemetry.outline() == [["invoke_agent geo", [["step 0", [CHAT, CHAT]]]]]
    answer, structured = _chats(otel_telemetry)
    assert answer.status.status_code is StatusCode.UNSET
    assert structured.status.status_code is StatusCode.ERROR
    assert (structured.attributes or {}).get("error.type") == "structured_output_failed"
    run = otel_telemetry.span("invoke_agent geo")
    assert run.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []

"""Ollama through OpenInference's and OpenLLMetry's instrumentations: one chat span per call.

The real Ollama client answers from a mock transport. Inside our chat span each instrumentation
stands down for a chat call (one chat span, tokens counted once in
``gen_ai.client.token.usage``), and with ``stand_down_providers=False`` theirs is back. An
embeddings request made there is no call our chat span tells: OpenLLMetry's instrumentation
wraps the client's generic ``_request`` under ``embeddings()``, with no embeddings module on
the asking stack, and its span stays, as outside our runs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

ollama = pytest.importorskip("ollama")
httpx = pytest.importorskip("httpx")

from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage  # noqa: E402
from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from sources._trace import input_tokens_counted, theirs  # noqa: E402

MODEL = "llama3"
INSTRUMENTATIONS = [
    ("openinference-ollama", "openinference.instrumentation.ollama"),
    ("openllmetry-ollama", "opentelemetry.instrumentation.ollama"),
]
CHAT = {"model": MODEL, "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop",
        "message": {"role": "assistant", "content": "hi"}, "prompt_eval_count": 12,
        "eval_count": 3}  # fmt: skip


def _handler(request: Any) -> Any:
    if request.url.path.endswith("/embeddings"):
        return httpx.Response(200, json={"embedding": [0.1, 0.2]})
    if json.loads(request.content).get("stream"):
        return httpx.Response(200, content=json.dumps(CHAT) + "\n")
    return httpx.Response(200, json=CHAT)


@pytest.fixture(params=INSTRUMENTATIONS, ids=[name for name, _ in INSTRUMENTATIONS])
def telemetry(request: pytest.FixtureRequest) -> Iterator[InMemoryTelemetry]:
    module = pytest.importorskip(request.param[1])
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(module.OllamaInstrumentor()):
        yield telemetry
    telemetry.shutdown()


@pytest.fixture
def client() -> Any:
    return ollama.AsyncClient(host="http://mock.invalid", transport=httpx.MockTransport(_handler))


async def _run(
    telemetry: InMemoryTelemetry, call: Callable[[], Awaitable[Any]], **options: Any
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="ollama", call_id="c1")
        await call()
        yield Usage(input_tokens=12, output_tokens=3)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

    async for _ in telemetry.wrapper(**options)(agent()):
        pass


@pytest.mark.parametrize("stream", [False, True], ids=["non-streaming", "streaming"])
async def test_ollama_chat_stands_down_in_our_chat_span(
    telemetry: InMemoryTelemetry, client: Any, stream: bool
) -> None:
    async def chat() -> None:
        answer = await client.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                   stream=stream)  # fmt: skip
        if stream:
            async for _ in answer:
                pass

    await _run(telemetry, chat)
    assert theirs(telemetry) == []
    assert input_tokens_counted(telemetry) == 12
    telemetry.clear()
    await _run(telemetry, chat, stand_down_providers=False)
    assert len(theirs(telemetry)) == 1  # theirs is back: it was active


async def test_ollama_embeddings_in_our_chat_span_keep_their_span(
    telemetry: InMemoryTelemetry, client: Any
) -> None:
    """Where the instrumentation traces ``embeddings()`` at all (outside our runs), it does so
    inside our chat span too."""
    await client.embeddings(model="nomic-embed-text", prompt="hi")
    outside = theirs(telemetry)
    telemetry.clear()
    await _run(telemetry, lambda: client.embeddings(model="nomic-embed-text", prompt="hi"))
    assert theirs(telemetry) == outside

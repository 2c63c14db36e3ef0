"""The adapter agent of figure 3, and the mock OpenAI endpoint it talks to.

``chat_agent`` is ``agent_contract.sources.openai_chat.OpenAIChatAgent`` (the one Chat
Completions source): one streaming chat-completions call with the OpenAI SDK, its chunks
turned into contract events (``LLMCallStart``, a ``TextDelta`` per content chunk, ``Usage``,
``LLMCallEnd``). The endpoint is an in-process mock transport that serves a
pre-built server-sent-events body of N content chunks (plus the finish and usage chunks), so
no network is involved and every configuration parses the very same bytes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import openai

from agent_contract.protocol import Message
from agent_contract.sources.openai_chat import OpenAIChatAgent

try:  # the OpenAI SDK moved from httpx to its successor httpx2 in its 3.x line
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older SDKs
    import httpx  # type: ignore[no-redef]

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Say something long."}]
HISTORY = [Message.from_dict(m) for m in MESSAGES]


def sse_body(chunks: int) -> bytes:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def line(choices: list[Any], **extra: Any) -> str:
        return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

    parts = [line([{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    delta = line([{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}])
    parts.extend(delta for _ in range(chunks))
    parts.append(line([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    usage = {"prompt_tokens": 12, "completion_tokens": chunks, "total_tokens": 12 + chunks}
    parts.append(line([], usage=usage))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def client(chunks: int) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` whose HTTP transport serves ``chunks`` content chunks per request."""
    body = sse_body(chunks)

    def handler(request: Any) -> Any:
        headers = {"content-type": "text/event-stream", "x-bench-chunks": str(chunks)}
        return httpx.Response(200, headers=headers, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return openai.AsyncOpenAI(api_key="bench", base_url="http://mock.invalid/v1", http_client=http)


@contextmanager
def replayed_parsing() -> Iterator[None]:
    """Within: ``AsyncStream`` yields chunk objects parsed once per stream size and cached.

    The OpenAI SDK's own SSE parsing and model construction (~75 us a chunk here) dwarfs what
    any instrumentation adds per chunk, so differences of whole requests cannot resolve it on a
    noisy machine. Replaying the parsed chunks keeps everything the instrumentations touch
    real (the patched ``create``, the ``AsyncStream`` object they wrap, the chunk objects) and
    removes only the parse, which is the same in every configuration.
    """
    original = openai.AsyncStream.__stream__
    cache: dict[str, list[Any]] = {}

    async def stream(self: Any) -> AsyncIterator[Any]:
        key = self.response.headers.get("x-bench-chunks", "")
        chunks = cache.get(key)
        if chunks is None:
            chunks = cache[key] = [chunk async for chunk in original(self)]
        else:
            await self.response.aclose()
        for chunk in chunks:
            yield chunk

    openai.AsyncStream.__stream__ = stream  # type: ignore[method-assign]
    try:
        yield
    finally:
        openai.AsyncStream.__stream__ = original  # type: ignore[method-assign]


async def sdk_call(api: openai.AsyncOpenAI) -> int:
    """The bare workload: stream one completion and read every chunk's delta."""
    stream = await api.chat.completions.create(
        model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    n = 0
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            n += 1
    return n


def chat_agent(api: openai.AsyncOpenAI) -> OpenAIChatAgent:
    """The Chat Completions source as a contract agent: one streamed call per run."""
    return OpenAIChatAgent(api, MODEL)

"""Real SDK clients over their own mock HTTP transport, serving recorded-shape SSE bodies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

try:
    import httpx2 as httpx  # the OpenAI (3.x) and Anthropic (2.x) SDKs' HTTP client
except ImportError:  # a framework's own environment, on the OpenAI SDK 2.x (plain httpx)
    import httpx  # type: ignore[no-redef]

Answer = bytes | Callable[[httpx.Request], httpx.Response]


def sse(events: Iterable[dict[str, Any]], *, named: bool = False, done: bool = False) -> bytes:
    """An SSE body: one ``data:`` line per event (with ``event: <type>`` when ``named``)."""
    lines = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        lines.append(f"{head}data: {json.dumps(event)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


class Body(httpx.AsyncByteStream):
    """An SSE body sent event by event; ``hang_after`` events it waits forever (a stall)."""

    def __init__(self, events: list[bytes], hang_after: int | None = None) -> None:
        self.events, self.hang_after = events, hang_after
        self.sent = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for event in self.events:
            if self.sent == self.hang_after:
                await asyncio.Event().wait()
            self.sent += 1
            yield event
            await asyncio.sleep(0)

    async def aclose(self) -> None:
        self.closed = True

    def response(self, request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=self, request=request)


def split(body: bytes) -> list[bytes]:
    """An SSE body's events, one ``bytes`` each (for ``Body``)."""
    return [part + b"\n\n" for part in body.split(b"\n\n") if part]


def transport(*bodies: Answer, seen: list[httpx.Request] | None = None) -> httpx.AsyncClient:
    """An ``AsyncClient`` answering request ``i`` with ``bodies[i]`` (the last one repeats)."""
    count = 0

    def respond(request: httpx.Request) -> httpx.Response:
        nonlocal count
        body = bodies[min(count, len(bodies) - 1)]
        count += 1
        if seen is not None:
            seen.append(request)
        if callable(body):
            return body(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(respond))


def openai_client(*bodies: Answer, seen: list[httpx.Request] | None = None) -> Any:
    import openai

    return openai.AsyncOpenAI(
        api_key="test", base_url="http://mock.invalid/v1", http_client=transport(*bodies, seen=seen)
    )


def openai_sync_client(body: bytes) -> Any:
    """A synchronous ``OpenAI`` client answering every request with the JSON ``body`` (a
    tool's own blocking call)."""
    import openai

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    client = httpx.Client(transport=httpx.MockTransport(respond))
    return openai.OpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=client)


def anthropic_client(*bodies: Answer, seen: list[httpx.Request] | None = None) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(
        api_key="test", base_url="http://mock.invalid", http_client=transport(*bodies, seen=seen)
    )

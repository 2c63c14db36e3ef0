"""Multimodal history, captured: OpenAI/LiteLLM content parts as the conventions' parts.

With capture on, ``image_url`` becomes a ``uri`` part (or a ``blob`` for a ``data:`` URL),
``input_audio`` a ``blob``, ``file`` a ``file`` part (by id) or a ``blob`` (inline data), each
with its modality, and the whole value validates against ``gen-ai-input-messages.json``.
Inline base64 is bounded by the capture budget and never copied whole (measured with
``tracemalloc``: allocation sizes, not time).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta
from agent_otel import ContentCapture
from agent_otel.testing import InMemoryTelemetry
from semconv_registry import validate_content

KEY = "gen_ai.input.messages"
MARK = "...[truncated]"
B64 = "iVBORw0KGgoAAAANSUhEUg" * 4  # 88 chars of base64


def parts(image_data: str = B64) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "what is in these?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image_data}"}},
        {"type": "image_url", "image_url": "https://example.com/dog.jpg"},
        {"type": "input_audio", "input_audio": {"data": B64, "format": "mp3"}},
        {"type": "file", "file": {"file_id": "file-abc123", "filename": "report.pdf"}},
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{B64}"}},
        {"type": "refusal", "refusal": "no"},
    ]


async def captured(telemetry: InMemoryTelemetry, content: Any, capture: Any) -> Any:
    """The chat span's captured input messages for one user message holding ``content``."""
    history = [Message.from_dict({"role": "user", "content": content})]
    events = [LLMCallStart(model="m", messages=history), TextDelta("ok"), LLMCallEnd()]
    wrapper = telemetry.wrapper(capture_content=capture)
    received = [e async for e in wrapper(ScriptedAgent(events).stream([]))]
    assert all(a is b for a, b in zip(received, events, strict=True))
    (chat,) = [s for s in telemetry.spans() if s.name == "chat m"]
    return (chat.attributes or {}).get(KEY)


async def test_content_parts_become_uri_blob_and_file_parts(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    text = await captured(otel_telemetry, parts(), True)
    (message,) = validate_content(KEY, text)
    assert message["role"] == "user"
    assert message["parts"] == [
        {"type": "text", "content": "what is in these?"},
        {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": B64},
        {"type": "uri", "modality": "image", "uri": "https://example.com/dog.jpg"},
        {"type": "blob", "modality": "audio", "mime_type": "audio/mpeg", "content": B64},
        {"type": "file", "modality": "document", "file_id": "file-abc123"},
        {"type": "blob", "modality": "document", "mime_type": "application/pdf", "content": B64},
        {"type": "refusal"},
    ]


async def test_parts_stay_private_without_capture(otel_telemetry: InMemoryTelemetry) -> None:
    assert await captured(otel_telemetry, parts(), None) is None


async def test_large_inline_data_is_bounded_by_the_budget(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    text = await captured(otel_telemetry, parts("A" * 1_000_000), ContentCapture(max_bytes=4096))
    assert len(text.encode("utf-8")) <= 4096
    (message,) = validate_content(KEY, text)
    (blob,) = [p for p in message["parts"] if p.get("mime_type") == "image/png"]
    assert blob["content"].startswith("AAAA") and blob["content"].endswith(MARK)


async def test_large_inline_data_is_never_copied_whole(otel_telemetry: InMemoryTelemetry) -> None:
    size = 16 * 1024 * 1024
    content = parts("A" * size)
    seen: list[Any] = []

    def redact(kind: str, value: Any) -> Any:
        seen.append(value)
        return value

    tracemalloc.start()
    try:
        text = await captured(otel_telemetry, content, ContentCapture(8192, redact=redact))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 8, f"peak {peak} bytes: the {size}-byte image was copied"
    assert len(text.encode("utf-8")) <= 8192
    (message,) = seen[0]
    blob = message["parts"][2]
    assert blob["type"] == "blob" and len(blob["content"]) < 9000, "the hook sees the cut data"

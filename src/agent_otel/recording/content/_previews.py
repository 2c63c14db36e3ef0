"""Run-level input and output previews for trace lists (Phoenix's Input/Output column).

MLflow's Request/Response column reads ``gen_ai.input.messages`` / ``gen_ai.output.messages``
of the root span; Phoenix reads only OpenInference's ``input.value`` / ``output.value``. So
when content goes on spans, the ``invoke_agent`` span also carries those two keys with a
short plain-text preview: the last user message and the answer's text. The preview is taken
from the already redacted and bounded JSON, so it never shows more than the captured content.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Span

from agent_otel import _attributes as A

from ._capture import ContentCapture, ContentKind

# The root's content key -> its preview key and the role whose last message it shows.
_PREVIEWS = {
    A.INPUT_MESSAGES: (A.OI_INPUT_VALUE, "user"),
    A.OUTPUT_MESSAGES: (A.OI_OUTPUT_VALUE, "assistant"),
}


_KINDS: dict[str, ContentKind] = {
    A.INPUT_MESSAGES: "input_messages",
    A.OUTPUT_MESSAGES: "output_messages",
}


def set_root_content(
    span: Span, capture: ContentCapture | None, key: str, encoded: str | None
) -> None:
    """Set the run's captured messages (JSON) and their preview on the agent span, when
    content goes on spans."""
    if encoded is None or capture is None or not capture.spans or not span.is_recording():
        return
    preview_key, role = _PREVIEWS[key]
    # A second copy of what a call span holds: within a run budget, it counts as one.
    copy = capture.copied(_KINDS[key], encoded)
    if copy is None:
        return
    span.set_attribute(key, copy)
    text = preview(copy, role)
    if text is not None:
        text = capture.copied(None, text)
    if text is not None:
        span.set_attribute(preview_key, text)


def _text(parts: Any) -> str | None:
    if not isinstance(parts, list):
        return None
    texts = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") in ("text", "json"):
            content = part.get("content")
            texts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(texts) or None


def preview(encoded: str, role: str) -> str | None:
    """The text of the last message of ``role`` in captured message JSON, if it has any."""
    try:
        messages = json.loads(encoded)
    except ValueError:
        return None
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
            return _text(message.get("parts"))
    return None

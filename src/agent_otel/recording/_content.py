"""Opt-in capture of prompts, completions and tool payloads, within byte budgets.

Off unless ``capture_content=True`` (or a :class:`ContentCapture`) is passed, or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``SPAN_ONLY``/``SPAN_AND_EVENT``/
``true`` (the official GenAI instrumentations' variable). Values are JSON in the semantic
conventions' message-part shape; a value over budget is cut so that the JSON stays valid:
long strings are shortened first, then the oldest list items dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agent_otel._guard import report

ContentKind = Literal[
    "input_messages", "output_messages", "system_instructions", "tool_arguments", "tool_result"
]
Redactor = Callable[[ContentKind, Any], Any]
"""``redact(kind, value) -> value``: return the (possibly edited) JSON-ready value, or
``None`` to drop the attribute. Called before serialisation, only when capture is on."""

ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ON_VALUES = frozenset({"span_only", "span_and_event", "true", "1"})
TRUNCATION_MARK = "...[truncated]"
# Values under these keys are the message-part schema's labels, never shortened: a cut
# "tool_call_response" would leave a part no consumer recognises.
_LABELS = frozenset({"type", "role", "finish_reason"})


@dataclass(frozen=True, slots=True)
class ContentCapture:
    """How content is captured once it is on.

    ``max_bytes`` bounds each attribute's UTF-8 JSON text (and the text buffered for it while
    a call streams); ``redact`` sees every value before it is recorded.
    """

    max_bytes: int = 32 * 1024
    redact: Redactor | None = None

    def encode(self, kind: ContentKind, value: Any) -> str | None:
        """The attribute value for ``value``: redacted, JSON, within budget.

        ``None`` (no attribute) when the redactor returns ``None`` or when the redactor or
        serialisation raises: the error is reported once and nothing unredacted is recorded.
        """
        try:
            if self.redact is not None:
                value = self.redact(kind, value)
                if value is None:
                    return None
            return fit_json(value, self.max_bytes)
        except Exception:
            report("content capture")
            return None


def resolve_capture(option: bool | ContentCapture | None) -> ContentCapture | None:
    """The capture settings in force: the explicit option wins, else the environment."""
    if isinstance(option, ContentCapture):
        return option
    if option is None:
        option = os.environ.get(ENV_CAPTURE, "").strip().lower() in _ON_VALUES
    return ContentCapture() if option else None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _shorten(value: Any, limit: int) -> Any:
    if isinstance(value, str):  # cut only when the cut (with its mark) is shorter
        if len(value) <= limit + len(TRUNCATION_MARK):
            return value
        return value[:limit] + TRUNCATION_MARK
    if isinstance(value, dict):
        return {k: v if k in _LABELS else _shorten(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shorten(v, limit) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def fit_json(value: Any, max_bytes: int) -> str:
    """Serialise ``value`` to JSON of at most ``max_bytes`` UTF-8 bytes, keeping it valid."""
    text = _dumps(value)
    if _size(text) <= max_bytes:
        return text
    value = json.loads(text)  # plain JSON types from here on
    lo, hi = 0, _longest_string(value)
    best: str | None = None
    while lo <= hi:  # the longest per-string limit that fits
        mid = (lo + hi) // 2
        candidate = _dumps(_shorten(value, mid))
        if _size(candidate) <= max_bytes:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return best
    shortened = _shorten(value, 0)
    if isinstance(shortened, list):
        while shortened:  # keep the most recent items
            shortened = shortened[1:]
            text = _dumps(shortened)
            if _size(text) <= max_bytes:
                return text
        return "[]"
    return "{}" if isinstance(shortened, dict) else '""'


class TextBuffer:
    """Deltas of one streamed response, kept only up to a byte budget."""

    __slots__ = ("_budget", "_parts", "truncated")

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._parts: list[str] = []
        self.truncated = False

    def add(self, text: str) -> None:
        if self._budget <= 0:
            self.truncated = True
            return
        size = len(text) if text.isascii() else len(text.encode("utf-8"))  # isascii is O(1)
        if size > self._budget:  # keep the whole characters that fit, then nothing more
            self._parts.append(text.encode("utf-8")[: self._budget].decode("utf-8", "ignore"))
            self._budget = 0
            self.truncated = True
            return
        self._budget -= size
        parts = self._parts
        parts.append(text)
        if len(parts) >= 64:  # fold: one string costs less heap than many small ones
            self._parts = ["".join(parts)]

    def text(self) -> str:
        joined = "".join(self._parts)
        return joined + TRUNCATION_MARK if self.truncated else joined

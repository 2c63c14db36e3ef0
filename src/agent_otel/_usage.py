"""Token counts: summed field by field, where ``None`` means "not reported", never zero."""

from __future__ import annotations

from typing import Any

from opentelemetry.util.types import AttributeValue

from . import _attributes as A

FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)
# Where each field goes on the span the usage happened on (the chat span) ...
_SEMCONV = {
    "input_tokens": A.USAGE_INPUT_TOKENS,
    "output_tokens": A.USAGE_OUTPUT_TOKENS,
    "cache_read_tokens": A.USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_creation_tokens": A.USAGE_CACHE_CREATION_INPUT_TOKENS,
    "reasoning_tokens": A.USAGE_REASONING_OUTPUT_TOKENS,
}
# ... and as totals on step and agent spans, in our namespace so no backend counts twice.
_TOTALS = {
    "input_tokens": A.USAGE_INPUT_TOTAL,
    "output_tokens": A.USAGE_OUTPUT_TOTAL,
    "total_tokens": A.USAGE_TOTAL_TOTAL,
    "cache_read_tokens": A.USAGE_CACHE_READ_TOTAL,
    "cache_creation_tokens": A.USAGE_CACHE_CREATION_TOTAL,
    "reasoning_tokens": A.USAGE_REASONING_TOTAL,
}


def _count(value: Any) -> int | None:
    """A token count as an int, or None for anything that is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class Tokens:
    """A mutable sum of token counts."""

    __slots__ = FIELDS

    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, None)

    @classmethod
    def read(cls, event: Any) -> Tokens:
        """The counts of a ``Usage`` / ``RunUsage``-shaped event; malformed fields are absent."""
        tokens = cls()
        for name in FIELDS:
            setattr(tokens, name, _count(getattr(event, name, None)))
        return tokens

    def add(self, other: Tokens) -> None:
        for name in FIELDS:
            value = getattr(other, name)
            if value is not None:
                current = getattr(self, name)
                setattr(self, name, value if current is None else current + value)

    def get(self, name: str) -> int | None:
        value: int | None = getattr(self, name)
        return value

    def semconv_attributes(self) -> dict[str, AttributeValue]:
        return {key: v for name, key in _SEMCONV.items() if (v := self.get(name)) is not None}

    def total_attributes(self) -> dict[str, AttributeValue]:
        return {key: v for name, key in _TOTALS.items() if (v := self.get(name)) is not None}

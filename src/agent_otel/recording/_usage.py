"""Token counts: summed field by field, where ``None`` means "not reported", never zero."""

from __future__ import annotations

from typing import Any

from opentelemetry.util.types import AttributeValue

from agent_contract.events import USAGE_COUNTS
from agent_otel import _attributes as A
from agent_otel.cost._compute import reported_cost

from ._encodable import INT64_MAX, INTEGER_OUT_OF_RANGE, Count

INVALID_TOKEN_COUNT = "invalid_token_count"
"""The anomaly of a token count that is no count (negative, a float, a bool, a string)."""


# Where each field goes on the span the usage happened on (the chat span), by the names of
# each set of conventions; the agent span (run-wide usage) drops what the head removed there.
def _keys(conventions: A.Conventions, run: bool) -> dict[str, str]:
    keys = {
        "input_tokens": A.USAGE_INPUT_TOKENS,
        "output_tokens": A.USAGE_OUTPUT_TOKENS,
        "cache_read_tokens": A.USAGE_CACHE_READ_INPUT_TOKENS,
        "cache_creation_tokens": conventions.cache_write,
        "reasoning_tokens": A.USAGE_REASONING_OUTPUT_TOKENS,
    }
    if run and not conventions.run_usage_cache:
        del keys["cache_read_tokens"], keys["cache_creation_tokens"]
    return keys


_SEMCONV = {(c.name, run): _keys(c, run) for c in A.CONVENTIONS.values() for run in (False, True)}
# ... and as totals on step and agent spans, in our namespace so no backend counts twice.
_TOTALS = {
    "input_tokens": A.USAGE_INPUT_TOTAL,
    "output_tokens": A.USAGE_OUTPUT_TOTAL,
    "total_tokens": A.USAGE_TOTAL_TOTAL,
    "cache_read_tokens": A.USAGE_CACHE_READ_TOTAL,
    "cache_creation_tokens": A.USAGE_CACHE_CREATION_TOTAL,
    "reasoning_tokens": A.USAGE_REASONING_TOTAL,
}


class Tokens:
    """A mutable sum of token counts: only the fields some event reported are present.

    ``cost`` is the cost the provider reported with the usage (None: not reported).
    """

    __slots__ = ("cost", "counts")

    def __init__(self, counts: dict[str, int] | None = None, cost: float | None = None) -> None:
        self.counts: dict[str, int] = {} if counts is None else counts
        self.cost = cost

    @classmethod
    def read(cls, event: Any, count: Count) -> Tokens:
        """The counts of a ``Usage`` / ``RunUsage``-shaped event.

        A field that is not a non-negative ``int`` is absent: ``None`` (not reported) silently,
        anything else (negative, a float or NaN, a bool, a string) counted through ``count``
        as ``invalid_token_count``; one beyond signed 64 bits (no OTLP backend can take it) as
        ``integer_out_of_range``. An ``int`` subclass (an ``IntEnum``) counts as the ``int``
        it is.
        """
        try:  # the contract's fields as attributes: a getattr call each costs three (figure 2)
            values: tuple[Any, ...] = (
                event.input_tokens,
                event.output_tokens,
                event.total_tokens,
                event.cache_read_tokens,
                event.cache_creation_tokens,
                event.reasoning_tokens,
            )
        except AttributeError:  # a look-alike lacking some: each as getattr reads it
            values = tuple([getattr(event, name, None) for name in USAGE_COUNTS])
        counts = {}
        for name, value in zip(USAGE_COUNTS, values, strict=True):
            if value is None:  # most fields: not reported
                continue
            if type(value) is not int:
                if not isinstance(value, int) or isinstance(value, bool):
                    count(INVALID_TOKEN_COUNT)  # a float, NaN, a bool, a string: not a count
                    continue
                value = int.__int__(value)  # none of the subclass's methods runs
            if value >= 0:
                if value <= INT64_MAX:
                    counts[name] = value
                else:
                    count(INTEGER_OUT_OF_RANGE)
            else:  # a negative count
                count(INVALID_TOKEN_COUNT)
        return cls(counts, reported_cost(event))

    def add(self, other: Tokens) -> None:
        mine = self.counts
        if not mine:  # the first counts (a segment's, a run's): as they are
            mine.update(other.counts)
        else:
            for name, value in other.counts.items():
                mine[name] = mine.get(name, 0) + value
        if other.cost is not None:
            self.cost = other.cost if self.cost is None else self.cost + other.cost

    def get(self, name: str) -> int | None:
        return self.counts.get(name)

    def semconv_attributes(
        self, conventions: A.Conventions, *, run: bool = False
    ) -> dict[str, AttributeValue]:
        """The ``gen_ai.usage.*`` attributes under ``conventions``' names (``run``: for the
        agent span's run-wide usage)."""
        keys = _SEMCONV[conventions.name, run]
        return {keys[name]: v for name, v in self.counts.items() if name in keys}

    def total_attributes(self) -> dict[str, AttributeValue]:
        return {_TOTALS[name]: v for name, v in self.counts.items()}

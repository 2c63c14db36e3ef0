"""The token and cost summary the terminal view prints at shutdown, and what it adds up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan

from agent_otel import _attributes as A
from agent_otel.exporting._render import _BOLD, _style, printable
from agent_otel.scrubbing._scrubber import DEFAULT, Scrubber

__all__ = ["ModelUsage", "cost_of", "render_token_summary", "usage_of"]


@dataclass
class ModelUsage:
    """Token totals of one model over the process lifetime; ``cost`` None: never priced."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    currency: str = ""

    def add_cost(self, cost: float | None, currency: str) -> None:
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + cost
            self.currency = self.currency or currency


def cost_of(span: ReadableSpan) -> tuple[float, str] | None:
    """(amount, currency) of a chat span that carries a cost, else None."""
    attrs = span.attributes or {}
    amount = attrs.get(A.COST_AMOUNT)
    if not isinstance(amount, (int, float)) or isinstance(amount, bool):
        return None
    return float(amount), str(attrs.get(A.COST_CURRENCY, ""))


def usage_of(span: ReadableSpan) -> tuple[str, int, int] | None:
    """(model, input, output) for a span that reports token usage, else None."""
    attrs = span.attributes or {}
    if A.USAGE_INPUT_TOKENS not in attrs and A.USAGE_OUTPUT_TOKENS not in attrs:
        return None
    model = attrs.get(A.RESPONSE_MODEL) or attrs.get(A.REQUEST_MODEL) or "unknown"

    def as_int(key: str) -> int:
        value = attrs.get(key, 0)
        return int(value) if isinstance(value, (int, float)) else 0

    return str(model), as_int(A.USAGE_INPUT_TOKENS), as_int(A.USAGE_OUTPUT_TOKENS)


def render_token_summary(
    usage: Mapping[str, ModelUsage], *, color: bool, scrubber: Scrubber | None = DEFAULT
) -> str:
    """A table of calls and input/output tokens per model (plus a total for several models),
    each model's name as :func:`printable` with ``scrubber`` shows it::

    token usage  calls  input  output
      gpt-4o         2  1,200     340
    """
    if not usage:
        return ""
    priced = [u for u in usage.values() if u.cost is not None]
    rows = [("token usage", "calls", "input", "output", "cost" if priced else "")]
    for model in sorted(usage):
        u = usage[model]
        rows.append(
            (f"  {printable(model, scrubber)}", f"{u.calls:,}", f"{u.input_tokens:,}",
             f"{u.output_tokens:,}",
             _cost_cell(u.cost, u.currency) if priced else "")
        )  # fmt: skip
    if len(usage) > 1:
        calls = sum(u.calls for u in usage.values())
        inp = sum(u.input_tokens for u in usage.values())
        out = sum(u.output_tokens for u in usage.values())
        currencies = {u.currency for u in priced}
        cost = (
            _cost_cell(sum(u.cost or 0.0 for u in priced), currencies.pop())
            if len(currencies) == 1
            else ""
        )
        rows.append(("  total", f"{calls:,}", f"{inp:,}", f"{out:,}", cost))
    columns = 5 if priced else 4
    widths = [max(len(row[i]) for row in rows) for i in range(columns)]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, columns)]
        style = _BOLD if n == 0 else ""
        lines.append(_style([("  ".join(cells).rstrip(), style)], color))
    return "\n".join(lines)


def _cost_cell(cost: float | None, currency: str) -> str:
    """A cost as the summary shows it (unpriced models: a dash, never a guessed zero)."""
    return "-" if cost is None else f"{cost:.6f} {currency}".rstrip()

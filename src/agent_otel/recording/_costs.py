"""Cost sums: None is "nothing priced yet", never zero."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A


def plus(total: float | None, amount: float | None) -> float | None:
    """``total + amount``, where None is "nothing priced"."""
    if amount is None:
        return total
    return amount if total is None else total + amount


def cost_attributes(total: float, currency: str) -> dict[str, AttributeValue]:
    """A total's attributes on a step or agent span (something was priced: the callers test
    for None, the usual total, before reading the currency)."""
    return {A.COST_TOTAL: total, A.COST_TOTAL_CURRENCY: currency}

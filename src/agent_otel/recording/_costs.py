"""A run's cost totals, kept as its usage totals are: the current segment's, the step held
open past its boundary, and the run's. None is "nothing priced yet", never zero."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A


def plus(total: float | None, amount: float | None) -> float | None:
    if amount is None:
        return total
    return amount if total is None else total + amount


class CostTotals:
    """Sums of the costs of the calls settled in each segment, step and run."""

    __slots__ = ("closed", "run", "segment")

    def __init__(self) -> None:
        self.segment: float | None = None
        self.closed: float | None = None
        self.run: float | None = None

    def add(self, cost: float, *, step: bool = True) -> None:
        """A priced call (``step=False``: a cost reported for the whole run only)."""
        self.run = plus(self.run, cost)
        if step:
            self.segment = plus(self.segment, cost)

    def close_step(self) -> None:
        """A step ended at its boundary: its total waits with it for trailing bookkeeping."""
        self.closed, self.segment = self.segment, None

    def join_closed(self, closed: bool) -> None:
        """A bookkeeping-only segment ended: it joins the held step (if any, else the run)."""
        if closed:
            self.closed = plus(self.closed, self.segment)
        self.segment = None


def cost_attributes(total: float | None, currency: str) -> dict[str, AttributeValue]:
    """The total's attributes on a step or agent span (none when nothing was priced)."""
    if total is None:
        return {}
    return {A.COST_TOTAL: total, A.COST_TOTAL_CURRENCY: currency}

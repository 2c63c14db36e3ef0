"""What one model call cost: the provider's figure when it reports one, else the price table."""

from __future__ import annotations

from typing import Any

from ._table import PriceTable

SOURCE_PROVIDER = "provider"
SOURCE_LOCAL = "local"


def reported_cost(event: Any) -> float | None:
    """The cost a ``Usage``-shaped event reports (a ``cost`` field), read by shape.

    Gateways and some SDKs return the call's cost with its usage (OpenRouter's ``usage.cost``,
    LiteLLM's response cost); an adapter passes it on as ``Usage.cost``. A value that is not a
    finite non-negative number (a bool, a string, NaN) is absent.
    """
    value = getattr(event, "cost", None)
    if value is None or (type(value) is not int and type(value) is not float):  # None: most
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past what a float holds
        return None
    return number if 0 <= number < float("inf") else None


def call_cost(
    table: PriceTable | None,
    model: str | None,
    counts: dict[str, int],
    reported: float | None,
) -> tuple[float, str] | None:
    """``(amount, source)`` of one call; a reported cost wins; an unknown model gets None."""
    if reported is not None:
        return reported, SOURCE_PROVIDER
    if table is None:
        return None
    price = table.price(model)
    if price is None:
        return None
    amount = price.cost(counts)
    return None if amount is None else (amount, SOURCE_LOCAL)

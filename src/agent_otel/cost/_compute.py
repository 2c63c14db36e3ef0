"""What one model call cost: the provider's figure when it reports one, else the price table."""

from __future__ import annotations

from typing import Any

from ._table import MAX_AMOUNT, PriceTable

SOURCE_PROVIDER = "provider"
SOURCE_LOCAL = "local"


def reported_cost(event: Any) -> float | None:
    """The cost a ``Usage``-shaped event reports (a ``cost`` field), read by shape.

    Gateways and some SDKs return the call's cost with its usage (OpenRouter's ``usage.cost``,
    LiteLLM's response cost); an adapter passes it on as ``Usage.cost``. A value that is not a
    number from 0 to :data:`MAX_AMOUNT` (a bool, a string, NaN, a cost two of which would sum
    past a double) is absent.
    """
    value = getattr(event, "cost", None)
    if value is None or (type(value) is not int and type(value) is not float):  # None: most
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past what a float holds
        return None
    return number if 0 <= number <= MAX_AMOUNT else None


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

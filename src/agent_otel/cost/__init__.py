"""Cost per model call and per run: provider-reported cost, else a price table.

``BUNDLED_PRICES`` is a dated table for common models; pass ``prices=`` to ``otel_wrapper()``
or ``instrument()`` to override entries (``BUNDLED_PRICES.with_prices({...})``), supply a
table of your own, or switch costing off (``prices=None``).
"""

from ._bundled import BUNDLED_DATE, BUNDLED_PRICES, BUNDLED_SOURCE
from ._compute import SOURCE_LOCAL, SOURCE_PROVIDER, call_cost, reported_cost
from ._table import MAX_AMOUNT, PER_TOKENS, ModelPrice, PriceTable

__all__ = [
    "BUNDLED_DATE",
    "BUNDLED_PRICES",
    "BUNDLED_SOURCE",
    "MAX_AMOUNT",
    "PER_TOKENS",
    "SOURCE_LOCAL",
    "SOURCE_PROVIDER",
    "ModelPrice",
    "PriceTable",
    "call_cost",
    "reported_cost",
]

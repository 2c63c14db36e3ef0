"""The bundled price table: common models, USD per million tokens, with its date and source.

Read by hand from the providers' public pricing pages (OpenAI API pricing, Anthropic Claude
pricing, Google Gemini API pricing) on the date below. Standard (non-batch) tier; Gemini's
long-context tier (over 200k prompt tokens) is not modelled. Cache writes: Anthropic's
5-minute rate; OpenAI and Google bill no cache writes, so those pay the input rate. Reasoning
tokens are billed as output by all three. Prices change: supply your own table or override
entries with :meth:`PriceTable.with_prices` (``otel_wrapper(prices=...)``).
"""

from __future__ import annotations

from ._table import ModelPrice, PriceTable

BUNDLED_DATE = "2025-06-30"
BUNDLED_SOURCE = "OpenAI, Anthropic and Google public API pricing pages, read on 2025-06-30"

_P = ModelPrice
BUNDLED_PRICES = PriceTable(
    {
        # OpenAI: cache_read is the "cached input" rate.
        "gpt-4o": _P(2.50, 10.00, cache_read=1.25),
        "gpt-4o-mini": _P(0.15, 0.60, cache_read=0.075),
        "gpt-4.1": _P(2.00, 8.00, cache_read=0.50),
        "gpt-4.1-mini": _P(0.40, 1.60, cache_read=0.10),
        "gpt-4.1-nano": _P(0.10, 0.40, cache_read=0.025),
        "o3": _P(2.00, 8.00, cache_read=0.50),
        "o3-mini": _P(1.10, 4.40, cache_read=0.55),
        "o4-mini": _P(1.10, 4.40, cache_read=0.275),
        # Anthropic: cache_write is the 5-minute cache write rate.
        "claude-opus-4-0": _P(15.00, 75.00, cache_read=1.50, cache_write=18.75),
        "claude-sonnet-4-0": _P(3.00, 15.00, cache_read=0.30, cache_write=3.75),
        "claude-3-7-sonnet-latest": _P(3.00, 15.00, cache_read=0.30, cache_write=3.75),
        "claude-3-5-haiku-latest": _P(0.80, 4.00, cache_read=0.08, cache_write=1.00),
        "claude-opus-4": _P(15.00, 75.00, cache_read=1.50, cache_write=18.75),
        "claude-sonnet-4": _P(3.00, 15.00, cache_read=0.30, cache_write=3.75),
        "claude-3-7-sonnet": _P(3.00, 15.00, cache_read=0.30, cache_write=3.75),
        "claude-3-5-haiku": _P(0.80, 4.00, cache_read=0.08, cache_write=1.00),
        # Google: prompts up to 200k tokens; cache_read is the context caching rate.
        "gemini-2.5-pro": _P(1.25, 10.00, cache_read=0.31),
        "gemini-2.5-flash": _P(0.30, 2.50, cache_read=0.075),
        "gemini-2.0-flash": _P(0.10, 0.40, cache_read=0.025),
    },
    currency="USD",
    source=BUNDLED_SOURCE,
    date=BUNDLED_DATE,
)

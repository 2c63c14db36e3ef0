"""Model prices and what one model call costs by them.

A :class:`PriceTable` maps a model name to its :class:`ModelPrice` (per million tokens, one
currency). Token semantics follow the GenAI conventions: ``input_tokens`` includes cache reads
and cache writes, ``output_tokens`` includes reasoning; so each part is priced once, at its own
rate, and the rest of the input and output at the plain rates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_otel._plain import at_least_zero, number_of, shown, text_of
from agent_otel.recording._hints import keyworded_but

MAX_MEMO = 1024
MAX_MEMO_NAME = 256
"""The longest model name the table remembers: a name a server makes up per call may be a page
long, and 1,024 of those kept a quarter of a GiB alive."""
PER_TOKENS = 1_000_000
"""Prices are given per this many tokens."""
MAX_AMOUNT = 1e15
"""The most a price (per million tokens) or a provider's cost of one call may be, in any
currency: far past any real one, and low enough that no call's tokens priced by it, nor any
run's sum of calls, leaves a double's range (a price near the limit priced calls as infinity,
which the cost counter drops)."""

# A snapshot suffix (gpt-4o-mini-2024-07-18, claude-3-5-haiku-20241022): priced like its model.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


@keyworded_but("cost")  # per chat call
@dataclass(frozen=True, slots=True)
class ModelPrice:
    """One model's prices per million tokens; a part without its own price pays the plain rate.

    ``cache_read`` and ``cache_write`` default to ``input``, ``reasoning`` to ``output``.
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None

    def __post_init__(self) -> None:
        """Each price a finite number >= 0 and at most :data:`MAX_AMOUNT`, kept as the plain
        float it is: a price of another type raises ``TypeError``, a negative, NaN or
        higher one ``ValueError``, here rather than as a cost missing (or negative, or
        infinite) at every call."""
        for name in ("input", "output", "cache_read", "cache_write", "reasoning"):
            value = getattr(self, name)
            if value is None and name not in ("input", "output"):
                continue
            object.__setattr__(self, name, _price(name, value))

    def cost(self, counts: Mapping[str, int]) -> float | None:
        """The cost of one call's token counts; None when neither input nor output is known."""
        inp, out = counts.get("input_tokens"), counts.get("output_tokens")
        if inp is None and out is None:
            return None
        read = counts.get("cache_read_tokens", 0)
        write = counts.get("cache_creation_tokens", 0)
        reasoning = counts.get("reasoning_tokens", 0)
        read_price = self.input if self.cache_read is None else self.cache_read
        write_price = self.input if self.cache_write is None else self.cache_write
        reasoning_price = self.output if self.reasoning is None else self.reasoning
        total = 0.0
        if inp is not None:
            read, write = min(read, inp), min(write, max(inp - read, 0))
            total += (inp - read - write) * self.input + read * read_price + write * write_price
        if out is not None:
            reasoning = min(reasoning, out)
            total += (out - reasoning) * self.output + reasoning * reasoning_price
        return total / PER_TOKENS


@keyworded_but("price")  # per chat call
@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model name, in one currency, with where and when they were read.

    :meth:`price` finds a model by its exact name, or by the name without a snapshot date
    (``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``); anything else is unknown and
    gets no cost, never a guess. :meth:`with_prices` returns a table with entries added or
    replaced, so a user can override the bundled table or supply a whole table of their own.
    """

    prices: Mapping[str, ModelPrice]
    currency: str = "USD"
    source: str = "user supplied"
    date: str | None = None
    _lower: Mapping[str, ModelPrice] = field(init=False, repr=False, compare=False)
    _memo: dict[str, ModelPrice | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """A table of the wrong shape raises here, naming what is wrong (a dict of floats for
        ``ModelPrice`` entries, a model name that is not a ``str``)."""
        given = self.prices
        if not isinstance(given, Mapping):
            raise TypeError(
                f"PriceTable(prices=...) takes a mapping of model names to ModelPrice, "
                f"not {shown(given)}"
            )
        prices: dict[str, ModelPrice] = {}
        for model, price in dict.items(given) if isinstance(given, dict) else given.items():
            name = text_of(model)  # a str subclass as the str it is
            if name is None:
                raise TypeError(f"PriceTable: a model name must be a str, not {shown(model)}")
            if type(price) is not ModelPrice:
                raise TypeError(
                    f"PriceTable: the price of {shown(name)} must be a ModelPrice(input=..., "
                    f"output=...) per million tokens, not {shown(price)}"
                )
            prices[name] = price
        for field_name in ("currency", "source", "date"):
            value = getattr(self, field_name)
            if value is None and field_name == "date":
                continue
            text = text_of(value)
            if text is None:
                raise TypeError(f"PriceTable({field_name}=...) must be a str, not {shown(value)}")
            object.__setattr__(self, field_name, text)
        object.__setattr__(self, "prices", prices)
        lower = {name.lower(): price for name, price in prices.items()}
        object.__setattr__(self, "_lower", lower)
        object.__setattr__(self, "_memo", {})

    def price(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``, remembered per model string (a run asks once per call, and
        lowercasing plus the snapshot pattern cost more than the costing itself: figure 2)."""
        if not model:
            return None
        if type(model) is not str:  # a str subclass may hash or compare its own way
            return self._find(model)
        memo = self._memo
        try:
            return memo[model]
        except KeyError:
            pass
        found = self._find(model)
        if len(model) <= MAX_MEMO_NAME:  # model names made on the fly must not pile up
            if len(memo) >= MAX_MEMO:
                memo.clear()
            memo[model] = found
        return found

    def _find(self, model: str) -> ModelPrice | None:
        name = model.lower()
        found = self._lower.get(name)
        if found is None:
            base = _SNAPSHOT.sub("", name)
            if base != name:
                found = self._lower.get(base)
        return found

    def with_prices(
        self, prices: Mapping[str, ModelPrice], *, source: str | None = None
    ) -> PriceTable:
        """This table with ``prices`` added or replacing the entries of the same name."""
        return PriceTable(
            {**self.prices, **prices},
            currency=self.currency,
            source=source or f"{self.source} + user overrides",
            date=self.date,
        )


def _price(name: str, value: Any) -> float:
    """A price as the plain float it is (an int or float subclass read by the base type)."""
    label = f"ModelPrice({name}=...)"
    price = at_least_zero(label, value, number_of(value), "a number per million tokens")
    if price > MAX_AMOUNT:
        raise ValueError(
            f"{label} must be at most {MAX_AMOUNT:g} per million tokens, not {shown(value)}"
        )
    return price

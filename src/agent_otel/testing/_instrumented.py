"""What ``InMemoryTelemetry.instrumented()`` checks of the options it passes on to another
library's instrumentors, before any is instrumented: a provider option (the telemetry gives
its own, so Python said only ``got multiple values for keyword argument``), and a name the
instrumentor cannot take, where its signature says what it takes (an ``_instrument`` of
``**kwargs``, as every instrumentor published has, reads what it reads: left to it)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from agent_otel.recording._hints import PROVIDERS, nearest, unexpected

_NAME = "InMemoryTelemetry.instrumented"
_BASE = frozenset({"skip_dep_check", "raise_exception_on_conflict"})
"""What ``BaseInstrumentor.instrument()`` takes itself, before its ``_instrument``."""


def check_options(instrumentors: Iterable[Any], options: Mapping[str, object]) -> None:
    """Raise ``TypeError`` for an option none of ``instrumentors`` can be given."""
    providers = sorted(set(options) & set(PROVIDERS))
    if providers:
        raise TypeError(
            f"{_NAME}() gives each instrumentor this telemetry's providers itself, so "
            f"{providers[0]}= is given twice: leave it out (docs/testing.md)"
        )
    for instrumentor in instrumentors:
        takes = _takes(instrumentor)
        unknown = sorted(set(options) - takes - _BASE) if takes is not None else []
        if takes is not None and unknown:
            owner = type(instrumentor).__qualname__
            where = f"not an option of {owner}{nearest(unknown[0], takes | _BASE)}"
            raise TypeError(unexpected(_NAME, unknown[0], (), where))


def _takes(instrumentor: object) -> frozenset[str] | None:
    """The names ``instrumentor``'s instrumenting takes (a ``BaseInstrumentor``'s
    ``_instrument``, else its ``instrument``), or ``None`` when it takes any (``**kwargs``)
    or says nothing readable."""
    try:
        cls = type(instrumentor)
        function = getattr(cls, "_instrument", None) or getattr(cls, "instrument", None)
        if not callable(function):
            return None
        parameters = list(inspect.signature(function).parameters.values())[1:]  # (self)
    except (TypeError, ValueError):  # no signature to read: nothing to check against
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(
        p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )

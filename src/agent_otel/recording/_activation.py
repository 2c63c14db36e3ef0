"""Activating a context around one pull of the agent's stream, as cheaply as possible.

The wrapper makes the run's innermost span current while the agent computes its next event and
restores the consumer's context before yielding it. That is one activation per event, so it sits
on the hot path: with the OTel SDK's default contextvars runtime we set and reset its ContextVar
directly (the same operations ``context.attach``/``detach`` perform, minus two call layers);
any other runtime goes through the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context


def _set_and_reset() -> tuple[Callable[[Context], Any], Callable[[Any], None]]:
    runtime = getattr(otel_context, "_RUNTIME_CONTEXT", None)
    var = getattr(runtime, "_current_context", None)
    if isinstance(var, ContextVar):
        return var.set, var.reset
    return otel_context.attach, otel_context.detach


activate, deactivate = _set_and_reset()
"""``deactivate(token)`` raises ``ValueError`` when the token belongs to another context (the
pull was resumed elsewhere): nothing of ours can still be attached there, so the caller
ignores it. Kept inline in the caller, not wrapped here: a Python call per event costs more
than the set and reset themselves (figure 1)."""

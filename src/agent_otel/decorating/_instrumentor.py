"""``AgentInstrumentor``: zero-code tracing of every agent, for ``opentelemetry-instrument``.

Registered under the ``opentelemetry_instrumentor`` entry point as ``agent_otel``, so
``opentelemetry-instrument python app.py`` traces every subclass of the Agent contract's
``Agent`` and of the event contract's ``StreamingAgent``, those defined before and after it
runs. Disable it with ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=agent_otel``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from agent_otel._lazy import needs_extra

try:  # the instrumentor extra; without it, say so (Python's bare error named a module only)
    from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
        BaseInstrumentor,
    )
except ModuleNotFoundError as missing:
    needs_extra(
        missing,
        "opentelemetry.instrumentation",
        "agent_otel.instrumentor needs opentelemetry-instrumentation",
        "instrumentor",
    )

from agent_otel._guard import logger as _log
from agent_otel._plain import items_of
from agent_otel.recording._hints import did_you_mean
from agent_otel.recording._options import OPTION_NAMES
from agent_otel.recording._pages import see

from ._instrument import instrument, uninstrument

__all__ = ["AgentInstrumentor"]

_INSTRUMENTOR_KEYS = frozenset({"base_classes"})  # its own, beside the options


def _default_bases() -> list[type]:
    from agent_contract.agent.base import Agent
    from agent_contract.invoke import StreamingAgent

    return [Agent, StreamingAgent]


class AgentInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Trace every agent class of both contracts.

    ``AgentInstrumentor().instrument(**options, base_classes=[...])``: the options of
    ``otel_wrapper()`` and ``instrument()`` (:class:`~agent_otel.recording._options.Options`),
    every one optional; other keywords the instrumentation machinery passes are ignored.
    ``base_classes`` adds roots (say, the ``Agent`` of another package built on the original
    contract); an explicit ``instrument(SomeAgent, ...)`` keeps its own options for that class.
    """

    def __init__(self) -> None:
        self._bases: list[type] = []

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # the contract ships with agent-otel itself

    def _instrument(self, **kwargs: Any) -> None:
        given = kwargs.get("base_classes")
        extra: Iterable[type] = (
            items_of(given) if isinstance(given, (list, tuple)) else (given or ())
        )
        self._bases = [base for base in (*_default_bases(), *extra) if isinstance(base, type)]
        options: Any = {k: v for k, v in kwargs.items() if k in OPTION_NAMES}
        for unknown in sorted(set(kwargs) - OPTION_NAMES - _INSTRUMENTOR_KEYS):
            _log.warning(
                "agent-otel: AgentInstrumentor().instrument() ignores %r, not an option%s%s",
                unknown,
                did_you_mean(str(unknown), OPTION_NAMES | _INSTRUMENTOR_KEYS),
                see("AgentInstrumentor"),
            )
        for base in self._bases:
            instrument(base, **options)

    def _uninstrument(self, **kwargs: Any) -> None:
        for base in self._bases:
            uninstrument(base)
        self._bases = []

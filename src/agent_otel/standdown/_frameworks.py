"""Framework runs: providers stand down from the run's start, not from a chat span's.

A framework starts each model request in a task or thread of its own, made from the context
current when the adapter pulled it (the run's or a step's), and the adapter reports that
request only once the framework says so: at its start where the framework has a hook for it
(LangGraph's callbacks), else at its first chunk. Our chat span is then never current where
the provider instrumentation looks. So a run fed by a framework adapter carries the
stand-down from its start (:func:`~._context.cover`): every model call the framework makes is
reported by the adapter and becomes our chat span, and no provider makes a second one. A
tool body's context is the exception (``_context.tool_body``): a model call a tool makes on its
own, with the provider's SDK, is none the framework reports, and the providers trace it there
unless a run of ours started in that body (an agent the tool runs) is open to tell it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import FrameType

from opentelemetry.context import get_value
from opentelemetry.context.context import Context

from ._context import COVERED, cover
from ._guards import after_instrument, guard_providers
from ._instrumented import guard_instrument
from ._native import native_run

FRAMEWORK_SOURCES = frozenset(
    {
        "agent_contract.sources.agno_stream",
        "agent_contract.sources.autogen_stream",
        "agent_contract.sources.crewai_stream",
        "agent_contract.sources.google_adk_stream",
        "agent_contract.sources.langgraph_stream",
        "agent_contract.sources.llama_index_stream",
        "agent_contract.sources.openai_agents",
        "agent_contract.sources.pydantic_ai_stream",
        "agent_contract.sources.smolagents_stream",
        "agent_contract.sources.strands_stream",
    }
)
"""The framework adapters (``tests/sources/test_conformance.py`` checks every one is here)."""


def _module(stream: object) -> object:
    frame = getattr(stream, "ag_frame", None)  # a real frame only: a mock's calls nothing
    return frame.f_globals.get("__name__") if isinstance(frame, FrameType) else None


def framework_source(stream: object) -> bool:
    """Whether ``stream`` is a framework adapter's own generator (:data:`FRAMEWORK_SOURCES`)."""
    return _module(stream) in FRAMEWORK_SOURCES


def framework_run(context: Context, stream: object) -> Context:
    """The run's parent ``context``, covered for the whole run when ``stream`` is a framework
    adapter's: the framework's tasks copy it, openai-v2 and LiteLLM's callback are guarded
    before its first call (:mod:`._guards`), LangSmith's OpenTelemetry mode holds its spans
    (:mod:`._langsmith`), one instrumented while the run is open is guarded as it instruments
    (:mod:`._instrumented`), and a framework that traces on its own stands its spans that ours
    tell down (:mod:`._native`). The run is open while ``stream`` is: a task of the framework's
    still calling once it finished calls outside our runs."""
    module = _module(stream)
    if module not in FRAMEWORK_SOURCES:
        return context
    return framework_context(context, module, partial(_running, stream))


def _running(stream: object) -> bool:
    """Whether the adapter's async generator ``stream`` has not finished (nor been closed)."""
    return getattr(stream, "ag_frame", None) is not None


def framework_context(context: Context, module: str, still_open: Callable[[], bool]) -> Context:
    """``context`` covered for a run of the framework adapter ``module`` (one of
    :data:`FRAMEWORK_SOURCES`) while ``still_open()``: what :func:`framework_run` gives its
    stream. A run whose stream is the caller's own generator over an adapter is covered so as
    the adapter's stream starts (``agent_contract.scope.framework_started``, the recorder's
    ``framework_started``), while that run is open."""
    guard_providers()
    guard_instrument(after_instrument)  # one instrumented later in the run: guarded as it is
    return native_run(cover(context, still_open), module)


def covered_run(context: Context) -> bool:
    """Whether ``context`` is already a framework run's (:func:`framework_context`)."""
    return bool(get_value(COVERED, context))

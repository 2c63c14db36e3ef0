"""The instrumentations that read no context key, guarded before a chat span of ours starts.

Each guard is cheap when its package is not loaded (one look in ``sys.modules``) and when its
guard is already in place; each one's module says what it guards and why.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from agent_otel._guard import report

from ._handler import MODULE as UTIL_GENAI_HANDLER
from ._handler import guard_handler
from ._imports import guard_on_import
from ._instrumented import MODULE as INSTRUMENTOR
from ._instrumented import guard_instrument
from ._langsmith import CLIENT as LANGSMITH
from ._langsmith import hold_langsmith
from ._litellm import MODULE as LITELLM
from ._litellm import guard_litellm
from ._native import install_running
from ._openai_v2 import PACKAGE as OPENAI_V2
from ._openai_v2 import guard_openai_v2

GUARDS: tuple[tuple[str, Callable[[], int]], ...] = (
    (OPENAI_V2, guard_openai_v2),
    (LITELLM, guard_litellm),
    (UTIL_GENAI_HANDLER, guard_handler),
    (LANGSMITH, hold_langsmith),
)
"""Per instrumentation: the module whose presence says it is loaded, and its guard."""

_MODULES = frozenset(module for module, _ in GUARDS)
_WATCHED = _MODULES | {INSTRUMENTOR}
"""Imported after :func:`guard_from_now`, each is guarded as it loads (:mod:`._imports`)."""


def guard_providers() -> None:
    """Guard every such instrumentation that is loaded (openai-v2, LiteLLM's callback,
    util-genai's handler's agent, workflow and tool invocations, LangSmith's OpenTelemetry
    mode). None loaded: one test in C, a lookup per module (before each chat span: 44
    bytecodes per LLM call as a loop, 12 so; figure 2).

    Never raises, and one guard's failure leaves the others in place: it is called as a chat
    span or a framework run of ours starts, where an instrumentation of a shape its guard does
    not expect (a version whose wrapper lacks an attribute the guard reads) lost that chat
    span, or the whole framework run, at every call. Such a guard is reported once; its
    instrumentation records as it would anyway (a second span, not a lost one)."""
    if sys.modules.keys().isdisjoint(_MODULES):  # (the view iterates _MODULES, not modules)
        return
    modules = sys.modules
    for module, guard in GUARDS:
        if module in modules:
            try:  # before our chat span or run: nothing may raise there
                guard()
            except Exception:
                report("stand-down")


def guard_from_now() -> None:
    """Guard what is instrumented now and, from now on, whatever instruments later, as it
    instruments (:mod:`._instrumented`): called where a wrapper or an instrumented agent is
    made and by ``configure()``, before the application makes its first model call.

    Guarding at a chat span's start alone comes too late for a method bound before it:
    the OpenAI SDK binds ``create`` once per client for ``with_raw_response`` and
    ``with_streaming_response`` (LiteLLM's calls, and any made so outside our runs first),
    and that binding keeps openai-v2's unguarded wrapper for the client's life. An
    instrumentation instrumented inside our chat span was not guarded before its call either,
    nor one whose module (or OpenTelemetry's instrumentation package itself) was first
    imported there: each watched module is guarded as it loads (:mod:`._imports`).
    """
    try:  # inside the caller's otel_wrapper() or configure(): nothing may raise there
        _guard_all()
        guard_on_import(_WATCHED, _guard_all)
    except Exception:
        report("stand-down")


def _guard_all() -> None:
    guard_providers()
    guard_instrument(after_instrument)


def after_instrument() -> None:
    """What an instrumentor's ``instrument()`` is followed by (:mod:`._instrumented`): the
    guards, and in a framework adapter's run the seams of its framework, so a peer of that
    framework instrumented while the run is open stands down in it at once."""
    guard_providers()
    install_running()

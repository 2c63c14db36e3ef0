"""An instrumentation instrumented while a framework run is open is guarded as it instruments.

The guards of :mod:`._guards` are put in place before each chat span of ours and at a framework
run's start. A framework makes each model call before its chat span of ours opens (in a task of
its own, :mod:`._frameworks`), so an instrumentation that reads no context key and is
instrumented once such a run has started (openai-v2's ``OpenAIInstrumentor().instrument()``
called by a tool, a plugin loaded late, a test fixture) traced the framework's next model call
unguarded: a second chat span, its tokens counted twice in ``gen_ai.client.token.usage``.

So at a framework run's start, and as a wrapper or an instrumented agent is made or
``configure()`` returns (:func:`~._guards.guard_from_now`), where OpenTelemetry's
instrumentation package is loaded (every instrumentor is a ``BaseInstrumentor`` of it), its
``instrument()`` is guarded once: after the instrumentor's own, it puts the guards in place
(:func:`~._guards.guard_providers`). One instrumented inside our chat span (a lazy setup in the
agent's code) is guarded before its call so. The run's common path pays nothing: one look in
``sys.modules`` per framework run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_otel._guard import report

from ._methods import MARK, guard_methods

MODULE = "opentelemetry.instrumentation.instrumentor"
_CLASS = "BaseInstrumentor"


def guard_instrument(then: Callable[[], object]) -> int:
    """``BaseInstrumentor.instrument`` made to call ``then`` after itself, if that module is
    loaded and it is not guarded yet; how many methods were guarded. Never raises (called as
    a framework run of ours starts): a class it cannot guard is reported once, 0."""

    def guarded(name: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
        def instrument(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = theirs(self, *args, **kwargs)
            try:  # inside the caller's instrument(): nothing may raise there
                then()
            except Exception:
                report("stand-down")
            return result

        setattr(instrument, MARK, theirs)
        return instrument

    try:
        return guard_methods(MODULE, _CLASS, ("instrument",), guarded)
    except Exception:
        report("stand-down")
        return 0

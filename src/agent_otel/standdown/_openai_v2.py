"""``opentelemetry-instrumentation-openai-v2`` reads no context key, so it is guarded instead.

Its 2.4b0 ``traced_method`` always starts a chat span and records token metrics. While one of
our chat spans covers the call (:func:`~._context.covering`: it is open in the context, or a
framework run's :data:`~._context.COVERED` is set), the guard calls the SDK method underneath
it; everywhere else its wrapper runs as before. The guard replaces the instrumentation's wrapt
``FunctionWrapper`` with one around the same original method, so its own ``uninstrument()``
(which restores ``__wrapped__``) still restores the SDK. HTTP spans are untouched: the
request goes out in the same context.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ._context import covering

PACKAGE = "opentelemetry.instrumentation.openai_v2"
_TARGETS = (("openai.resources.chat.completions", ("Completions", "AsyncCompletions")),)
_MARK = "_agent_otel_stand_down"

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _guarded(theirs: Wrapper) -> Wrapper:
    def guard(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if covering():
            return wrapped(*args, **kwargs)
        return theirs(wrapped, instance, args, kwargs)

    setattr(guard, _MARK, True)
    return guard


def guard_openai_v2() -> int:
    """Guard openai-v2's chat wrappers if it is active and not yet guarded; how many were."""
    if PACKAGE not in sys.modules:
        return 0
    guarded = 0
    for module_name, classes in _TARGETS:
        module = sys.modules.get(module_name)
        for class_name in classes:
            cls = getattr(module, class_name, None)
            current = cls.__dict__.get("create") if isinstance(cls, type) else None
            theirs = getattr(current, "_self_wrapper", None)
            if theirs is None or getattr(theirs, _MARK, False):
                continue
            if not str(getattr(theirs, "__module__", "")).startswith(PACKAGE):
                continue
            from wrapt import FunctionWrapper  # present wherever openai-v2 is

            cls.create = FunctionWrapper(current.__wrapped__, _guarded(theirs))  # type: ignore[union-attr]
            guarded += 1
    return guarded

"""``opentelemetry-instrumentation-openai-v2`` reads no context key, so it is guarded instead.

Its 2.4b0 ``traced_method`` always starts a chat span and records token metrics. While one of
our chat spans covers the call (:func:`~._context.covering_call`: it is open in the context, or a
framework run's :data:`~._context.COVERED` is set, and the call is no tool body's own), the
guard calls the SDK method underneath it; everywhere else its wrapper runs as before. The
guard replaces the instrumentation's wrapt ``FunctionWrapper`` with one around the same
original method, so its own ``uninstrument()`` (which restores ``__wrapped__``) still restores
the SDK. HTTP spans are untouched: the
request goes out in the same context.

Another instrumentation instrumented after openai-v2 (OpenLLMetry's wraps the same ``create``
with wrapt) leaves openai-v2's wrapper inside its own, where the class attribute no longer
shows it: the guard follows the chain of wrappers down (``__wrapped__``) and replaces
openai-v2's where it sits, so the outer one, which reads the stand-down itself, keeps working
and the inner one stands down too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ._context import covering_call
from ._methods import MARK

PACKAGE = "opentelemetry.instrumentation.openai_v2"
_TARGETS = (("openai.resources.chat.completions", ("Completions", "AsyncCompletions")),)
WRAPPER_DEPTH = 8  # wrappers followed down from the class attribute; more is no real stack

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _guarded(theirs: Wrapper) -> Wrapper:
    def guard(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if covering_call():
            return wrapped(*args, **kwargs)
        return theirs(wrapped, instance, args, kwargs)

    setattr(guard, MARK, True)
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
            if isinstance(cls, type):
                guarded += _guard_chain(cls)
    return guarded


def _guard_chain(cls: type) -> int:
    """Guard openai-v2's wrapper of ``cls.create``, at whatever depth of wrappers it sits."""
    outer: Any = None
    current: Any = cls.__dict__.get("create")
    for _ in range(WRAPPER_DEPTH):
        theirs = getattr(current, "_self_wrapper", None)
        if theirs is None or getattr(theirs, MARK, False):
            return 0
        if str(getattr(theirs, "__module__", "")).startswith(PACKAGE):
            from wrapt import FunctionWrapper  # present wherever openai-v2 is

            mine = FunctionWrapper(current.__wrapped__, _guarded(theirs))
            if outer is None:
                cls.create = mine  # type: ignore[attr-defined]
            else:  # inside another instrumentation's wrapper: it keeps wrapping the guard
                outer.__wrapped__ = mine
            return 1
        outer, current = current, getattr(current, "__wrapped__", None)
    return 0

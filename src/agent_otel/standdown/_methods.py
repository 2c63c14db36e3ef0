"""Guarding the named methods of a class an instrumentation defines, each once."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

MARK = "_agent_otel_stand_down"
"""Set on each guard, holding the method it guards: a guarded method is not guarded again."""


def guard_methods(
    module: str,
    class_name: str,
    names: Iterable[str],
    guarded: Callable[[str, Callable[..., Any]], Callable[..., Any]],
) -> int:
    """Each of ``names`` on ``module``'s ``class_name``, if that module is loaded, replaced by
    ``guarded(name, theirs)`` unless it is a guard already; how many were."""
    cls = getattr(sys.modules.get(module), class_name, None)
    if not isinstance(cls, type):
        return 0
    count = 0
    for name in names:
        theirs = vars(cls).get(name)
        if callable(theirs) and not hasattr(theirs, MARK):
            setattr(cls, name, guarded(name, theirs))
            count += 1
    return count

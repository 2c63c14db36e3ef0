"""What a forked child must not inherit: a method run in the child, while its object lives.

A fork copies what an object had gathered in memory (a queue of runs, totals, a lock another
thread held); an object that reports it again at the child's exit reports the parent's work
twice. :func:`in_forked_child` registers the method that empties it. The object is held
weakly (a fork never keeps it alive) and a failure there is logged, not raised into the fork.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable

from agent_otel._guard import logger as _log


def in_forked_child(method: Callable[[], object]) -> None:
    """Call the bound ``method`` in every child this process forks, while its object lives."""
    if not hasattr(os, "register_at_fork"):
        return
    ref = weakref.WeakMethod(method)
    os.register_at_fork(after_in_child=lambda: _call_alive(ref))


def _call_alive(ref: weakref.WeakMethod[Callable[[], object]]) -> None:
    bound = ref()
    if bound is None:
        return
    try:
        bound()
    except Exception:
        _log.debug("agent-otel: resetting state in a forked child failed", exc_info=True)

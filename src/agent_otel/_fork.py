"""What a forked child must not inherit: a method run in the child, while its object lives.

A fork copies what an object had gathered in memory (a queue of runs, totals, a lock another
thread held); an object that reports it again at the child's exit reports the parent's work
twice. :func:`in_forked_child` registers the method that empties it. The object is held
weakly (a fork never keeps it alive) and a failure there is logged, not raised into the fork.
:class:`ChildLock` is a module's lock a child gets afresh.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from types import TracebackType

__all__ = ["ChildLock", "in_forked_child"]


class ChildLock:
    """A lock that a forked child gets afresh, for a module's state shared by threads: a
    parent thread may hold it at the fork, and in the child, where that thread does not
    exist, the first ``with`` would wait forever (a worker of a pre-forking server hung at
    its first warning told once). Used as ``with lock:``; not reentrant."""

    __slots__ = ("__weakref__", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        in_forked_child(self._renew)

    def _renew(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()


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
        from agent_otel._guard import logger as _log  # (the guard's module makes a ChildLock)

        _log.debug("agent-otel: resetting state in a forked child failed", exc_info=True)

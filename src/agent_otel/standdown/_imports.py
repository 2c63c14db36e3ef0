"""An instrumentation module imported after our guards were put in place is guarded as it loads.

The guards of :mod:`._guards` are put in place as a wrapper or an instrumented agent is made,
as ``configure()`` returns, before each chat span and at a framework run's start, on what is
loaded then. A module imported later, while one of our spans is open, was not guarded before
its first call: ``import litellm`` in the agent's code between ``LLMCallStart`` and the call
(LiteLLM's OpenTelemetry callback class comes with it), or OpenTelemetry's instrumentation
package first imported there (``OpenAIInstrumentor().instrument()`` in a lazy setup: its
``BaseInstrumentor.instrument`` was never guarded to guard as it instruments). That first call
was traced twice and its tokens counted twice.

So :func:`guard_on_import` puts a finder first on ``sys.meta_path`` that answers only for the
watched modules (the ones each guard looks for): it asks the finders after it for the module's
spec and hands the import system a :class:`~._loader.GuardingLoader`, which runs the module's
own loader and then the guards. Every other import pays one set lookup.

The MCP SDK's client is watched so too (``recording/_mcp``): a finder of its own, for its own
modules, wraps the session as it loads, so a request sent before any traced tool body, after
``configure()`` or a wrapper was made, carries the trace as every later one does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from agent_otel._guard import report

from ._loader import GuardingLoader

_MARK = "_agent_otel_guard_on_import"


class GuardOnImport:
    """A meta path finder for the ``watched`` modules only, whose loaders then run ``then``
    (one finder per set of modules watched)."""

    _agent_otel_guard_on_import = True  # (:data:`_MARK`: one per process, across reloads)

    def __init__(self, watched: frozenset[str], then: Callable[[], object]) -> None:
        self.watched, self.then = watched, then

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name not in self.watched:
            return None
        try:  # inside the caller's import: nothing may raise there
            spec = _spec(self, name, path, target)
            if spec is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = GuardingLoader(spec.loader, self.then)
            return spec
        except Exception:
            report("stand-down")
            return None  # the import system asks the other finders itself


def _spec(
    mine: GuardOnImport, name: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    """The spec the finders after ours give (a finder's own failure: theirs to raise, as the
    import system asks them again)."""
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is mine or getattr(finder, _MARK, False) or find is None:
            continue
        try:
            spec = find(name, path, target)
        except Exception:
            return None
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def guard_on_import(watched: frozenset[str], then: Callable[[], object]) -> None:
    """A :class:`GuardOnImport` first on ``sys.meta_path``, once per process for ``watched``
    (a finder of ours for other modules is another's: the MCP SDK's beside the guards')."""
    if any(getattr(finder, _MARK, False) and getattr(finder, "watched", None) == watched
           for finder in sys.meta_path):  # fmt: skip
        return
    sys.meta_path.insert(0, GuardOnImport(watched, then))

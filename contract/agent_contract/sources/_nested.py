"""An agent a framework runs inside a tool, recorded as a nested run while the framework's own
items of it pass on.

Some frameworks hand the adapter a sub-agent's items from inside the tool that runs it (a
tool's own stream); ``through(name, items, translate)`` yields each of those items on, and,
when a tracer claims the run (``agent_contract.scope.nested_run``), records ``translate(item)``
as that run's events. The tracer pulls the framework's items itself, so the nested run's
context is current while the sub-agent computes: its own tools' tasks, made then, scope under
its spans, at any depth. An item that makes no event waits for the next one that does (or the
end); their order is kept.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from agent_contract.scope import nested_run

__all__ = ["Taken", "through"]


async def through(
    name: Any, items: AsyncIterator[Any], translate: Callable[[Any], Iterable[Any]]
) -> AsyncIterator[Any]:
    """Every item of ``items``, in order; with a tracer, a nested run named ``name`` records
    each item's ``translate(item)`` events (see the module docstring)."""
    wrap = nested_run(name)
    if wrap is None:
        async for item in items:
            yield item
        return
    ready: deque[Any] = deque()

    async def source() -> AsyncIterator[Any]:
        async for item in items:
            ready.append(item)
            for event in translate(item):
                yield event

    recorded = wrap(source())
    try:
        async for _ in recorded:
            while ready:
                yield ready.popleft()
        while ready:
            yield ready.popleft()
    finally:
        close = getattr(recorded, "aclose", None)
        if close is not None:
            await close()


class Taken:
    """Framework items a nested run recorded, so the outer run's reader passes over them when
    the framework also puts them in the outer stream. Bounded: an item the outer stream never
    reads (a run closed early) is forgotten after ``limit`` newer ones."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int = 4096) -> None:
        self._items: OrderedDict[int, Any] = OrderedDict()  # id -> the item, kept alive
        self._limit = limit

    def add(self, item: Any) -> None:
        self._items[id(item)] = item
        while len(self._items) > self._limit:
            self._items.popitem(last=False)

    def __contains__(self, item: Any) -> bool:
        return self._items.get(id(item)) is item

    def take(self, item: Any) -> bool:
        """Whether ``item`` was recorded by a nested run (then forgotten)."""
        kept = self._items.get(id(item))
        if kept is item:
            del self._items[id(item)]
            return True
        return False

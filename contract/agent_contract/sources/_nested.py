"""An agent a framework runs inside a tool, recorded as a nested run while the framework's own
items of it pass on.

Some frameworks hand the adapter a sub-agent's items from inside the tool that runs it (a
tool's own stream); ``through(name, items, translate)`` yields each of those items on, and,
when a tracer claims the run (``agent_contract.scope.nested_run``), records ``translate(item)``
as that run's events. The tracer pulls the framework's items itself, so the nested run's
context is current while the sub-agent computes: its own tools' tasks, made then, scope under
its spans, at any depth. An item that makes no event waits for the next one that does (or the
end); their order is kept.

Other frameworks report a sub-agent's events in the outer stream only; ``Pushed.start(name)``
(called where the run belongs, inside the tool's scope) records the events the adapter pushes
as they come, and ``end`` ends the run (in error with the exception that ended it).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from agent_contract.scope import nested_run
from agent_contract.sources._stream import read_events

__all__ = ["Pushed", "Taken", "through"]


async def through(
    name: Any,
    items: AsyncIterator[Any],
    translate: Callable[[Any], Iterable[Any]],
    finish: Callable[[], Iterable[Any]] | None = None,
    failed: Callable[[], Iterable[Any]] | None = None,
) -> AsyncIterator[Any]:
    """Every item of ``items``, in order; with a tracer, a nested run named ``name`` records
    each item's ``translate(item)`` events, then ``finish()``'s once the items ended, or
    ``failed()``'s before the exception they raised ends it (see the module docstring)."""
    wrap = nested_run(name)
    if wrap is None:
        async for item in items:
            yield item
        return
    ready: deque[Any] = deque()
    ended = False

    async def source() -> AsyncIterator[Any]:
        nonlocal ended
        try:
            async for event in read_events(items, translate, ready.append):  # odd items skipped
                yield event
        except Exception:
            for event in failed() if failed is not None else ():
                yield event
            raise
        ended = True  # the last items wait until the run has ended (its caller may stop there)
        for event in finish() if finish is not None else ():
            yield event

    recorded = wrap(source())
    try:
        async for _ in recorded:
            while ready and not ended:
                yield ready.popleft()
        while ready:
            yield ready.popleft()
    finally:
        close = getattr(recorded, "aclose", None)
        if close is not None:
            await close()


class Pushed:
    """One nested run, recorded as its events are pushed (see the module docstring)."""

    __slots__ = ("_ended", "_error", "_next", "_out")

    def __init__(self, wrap: Any) -> None:
        self._next: Any = None
        self._error: BaseException | None = None
        self._ended = False
        self._out: AsyncIterator[Any] = wrap(self._source())

    @classmethod
    def start(cls, name: Any) -> Pushed | None:
        """A nested run named ``name`` under the current span; ``None``: nothing traces it."""
        wrap = nested_run(name)
        return cls(wrap) if wrap is not None else None

    async def _source(self) -> AsyncIterator[Any]:
        while not self._ended:
            event, self._next = self._next, None
            yield event
        if self._error is not None:
            raise self._error

    async def push(self, events: Iterable[Any]) -> None:
        """Record ``events``, each before the next is handed over."""
        for event in events:
            if self._ended:
                return
            self._next = event
            try:
                await self._out.__anext__()
            except StopAsyncIteration:
                self._ended = True

    async def end(self, error: BaseException | None = None) -> None:
        """End the run (in error with ``error``); a second call does nothing."""
        if self._ended:
            return
        self._ended, self._error = True, error
        try:
            await self._out.__anext__()
        except StopAsyncIteration:
            pass
        except BaseException as raised:
            if raised is not error:
                raise


class Taken:
    """Framework items a nested run recorded, so the outer run's reader passes over them when
    the framework also puts them in the outer stream. Bounded: an item the outer stream never
    reads (a run closed early) is forgotten after ``limit`` newer ones."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int = 4096) -> None:
        self._items: OrderedDict[int, Any] = OrderedDict()  # id -> the item, kept alive
        self._limit = limit

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: Any) -> None:
        if item is None:  # nothing to pass over
            return
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


TAKEN = Taken()
"""The items nested runs recorded, for every framework whose outer stream also carries them
(AutoGen's tools' inner items; the LlamaIndex events a nested workflow's application read,
``Tee.copy``, and forwarded with ``ctx.write_event_to_stream``): one registry, items by identity."""

"""A framework's single-use event stream read by an adapter and still there for its caller.

Some frameworks hand out a run's events once (LlamaIndex's ``handler.stream_events()``): an
adapter that reads them to record the run would take them from the application. ``Tee(items)``
reads ``items`` once (``read()``, for the adapter) and keeps each item, so ``copy()`` (for the
application, started before, during or after the read) yields every one of them in order, then
ends where they ended (raising what they raised).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["Tee"]


class Tee:
    """One stream read once, its items kept for one later reader (see the module docstring)."""

    __slots__ = ("_changed", "_ended", "_error", "_items", "_source")

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self._source = items
        self._items: list[Any] = []
        self._ended = False
        self._error: BaseException | None = None
        self._changed = asyncio.Event()

    async def read(self) -> AsyncIterator[Any]:
        """Each item of the stream as it comes, kept for ``copy()``."""
        try:
            async for item in self._source:
                self._items.append(item)
                self._changed.set()
                yield item
        except BaseException as error:
            self._error = error
            raise
        finally:
            self._ended = True
            self._changed.set()

    async def copy(self) -> AsyncIterator[Any]:
        """Every item the stream gave or gives, in order."""
        at = 0
        while True:
            while at < len(self._items):
                at += 1
                yield self._items[at - 1]
            if self._ended:
                if self._error is not None and not isinstance(self._error, GeneratorExit):
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

"""A synchronous iterator as an async one, without blocking the event loop.

Some frameworks run an agent as a plain generator (smolagents' ``run(stream=True)``). Each
``next()`` may call a model or run tools for seconds, so it cannot run on the event loop.
``iterate_in_thread`` pulls the iterator one item at a time on a worker thread of its own:

* in lock step: the worker computes the next item only when the consumer asks for it, so an
  event reaches the consumer as soon as the framework yields it and nothing runs ahead;
* each pull runs in a copy of the consumer's ``contextvars`` as they are at that pull, so a
  tracer's current span (a tool span while one tool runs) is current in the framework's code
  too, and a sub-agent traced inside a tool nests under it;
* the framework's exception comes out of ``await`` as the same object;
* when the consumer stops early or is cancelled, ``interrupt`` (the framework's own stop
  switch) is called at once and the iterator is closed on the worker after the pull in flight
  returns. The loop never waits for that: a tool that never returns keeps only its own daemon
  thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["iterate_in_thread"]

T = TypeVar("T")
_END = object()
_Job = tuple[contextvars.Context, Callable[[], Any], Callable[[Any, BaseException | None], None]]


class _Worker:
    """One daemon thread running jobs in order, each in the context it was submitted with."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="agent-contract-bridge", daemon=True).start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            context, work, done = job
            try:
                value = context.run(work)
            except BaseException as exc:  # handed to the consumer, never lost on the thread
                done(None, exc)
            else:
                done(value, None)

    def submit(
        self, work: Callable[[], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None:
        self._jobs.put((contextvars.copy_context(), work, done))

    def stop(self) -> None:
        self._jobs.put(None)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the consumer was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _ignore(value: Any, error: BaseException | None) -> None:
    """The result of closing the iterator: nobody waits for it."""


async def iterate_in_thread(
    open_iterator: Callable[[], Iterator[T]], interrupt: Callable[[], object] | None = None
) -> AsyncGenerator[T, None]:
    """Yield the items of ``open_iterator()``, each computed on a worker thread (see above)."""
    loop = asyncio.get_running_loop()
    worker = _Worker()
    source: list[Iterator[T]] = []

    def pull() -> Any:
        if not source:
            source.append(iter(open_iterator()))
        return next(source[0], _END)

    def close() -> None:
        if source:
            end = getattr(source[0], "close", None)
            if end is not None:
                end()

    exhausted = False  # the iterator ended or raised: nothing left to stop or close
    try:
        while True:
            future: asyncio.Future[Any] = loop.create_future()

            def done(value: Any, error: BaseException | None, future: Any = future) -> None:
                with suppress(RuntimeError):  # the loop is closed: nobody waits any more
                    loop.call_soon_threadsafe(_settle, future, value, error)

            worker.submit(pull, done)
            try:
                item = await future
            except asyncio.CancelledError:
                raise
            except BaseException:
                exhausted = True
                raise
            if item is _END:
                exhausted = True
                return
            yield item
    finally:
        if not exhausted:
            if interrupt is not None:
                interrupt()
            worker.submit(close, _ignore)
        worker.stop()

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

A framework's seam can hand the consumer an item in the middle of a pull, as it happens
(smolagents' model call, which its stream does not announce): ``Channel.emit(item)``, called
from the framework's code while a pull is in flight, delivers ``item`` as the next item and
returns when the consumer asks for the one after it, so lock step holds; the pull then goes
on. Outside a pull, or once the consumer stopped, ``emit`` does nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["Channel", "iterate_in_thread"]

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


_Done = Callable[[Any, "BaseException | None"], None]


class _Emitted:
    """An item a seam emitted mid-pull (not one the iterator yielded)."""

    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item


class Channel:
    """Items a framework's seam hands the consumer in the middle of a pull (module doc)."""

    __slots__ = ("_done", "_lock", "_result", "_resume", "_stopped")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: _Done | None = None  # settles the consumer's wait, while it waits
        self._resume: threading.Event | None = None  # an emit waiting for the next ask
        self._result: tuple[Any, BaseException | None] | None = None  # a pull's, unasked yet
        self._stopped = False

    def emit(self, item: Any) -> None:
        """Deliver ``item`` to the waiting consumer; return when it asks for the next item."""
        with self._lock:
            done = self._done
            if done is None or self._stopped:
                return
            self._done = None
            resume = self._resume = threading.Event()
        done(_Emitted(item), None)
        resume.wait()

    def _ask(self, done: _Done) -> bool:
        """The consumer waits for the next item (``done``): True when a pull is already in
        flight (an emit goes on, or its result is waiting), False when one must start."""
        with self._lock:
            result, self._result = self._result, None
            resume, self._resume = self._resume, None
            if result is None:
                self._done = done
        if result is not None:
            done(*result)
        if resume is not None:
            resume.set()
        return result is not None or resume is not None

    def _finish(self, value: Any, error: BaseException | None) -> None:
        """A pull's own result, to the consumer waiting now or to the next ask."""
        with self._lock:
            done, self._done = self._done, None
            if done is None:
                self._result = (value, error)
        if done is not None:
            done(value, error)

    def _stop(self) -> None:
        """The consumer stopped: emits return at once, now and later."""
        with self._lock:
            self._stopped, self._done = True, None
            resume, self._resume = self._resume, None
        if resume is not None:
            resume.set()


async def iterate_in_thread(
    open_iterator: Callable[[], Iterator[T]],
    interrupt: Callable[[], object] | None = None,
    channel: Channel | None = None,
) -> AsyncGenerator[T, None]:
    """Yield the items of ``open_iterator()``, each computed on a worker thread, and those
    ``channel`` emits during a pull (see above)."""
    loop = asyncio.get_running_loop()
    worker = _Worker()
    source: list[Iterator[T]] = []
    channel = channel if channel is not None else Channel()

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

            if not channel._ask(done):
                worker.submit(pull, channel._finish)
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
            yield item.item if isinstance(item, _Emitted) else item
    finally:
        channel._stop()
        if not exhausted:
            if interrupt is not None:
                interrupt()
            worker.submit(close, _ignore)
        worker.stop()

"""Our blocks, entered with ``with`` or ``async with`` alike.

An async server's handler (Starlette, FastAPI, aiohttp) writes ``async with``; a block of ours
that had only ``__enter__`` raised ``TypeError`` there before its body ran. :class:`Block` is
one block for both: ``async with`` runs the very ``__enter__`` and ``__exit__`` that ``with``
runs, in the awaiting task (an ``await``ed coroutine shares its task's context, so a context
attached on entry is current in the body and detached on the way out), so both forms have
the same semantics: the body's exception passes through as the same object, and what was
current before is current again on every exit path. :func:`block` makes a generator function
one (as :func:`contextlib.contextmanager` does).

A block around a ``yield`` of an async generator (an agent streaming a remote agent's answer
inside ``remote_agent()``, an SSE handler streaming a run inside ``continue_trace()``) exits
wherever the generator is closed: in another task (one that called ``aclose()``, asyncio's
finaliser of an abandoned generator, ``asyncio.run()``'s ``shutdown_asyncgens``), whose
context never had the block's attached. :func:`detach` is the one way out of a block that made
a context current: there it has nothing to undo, and says nothing (OpenTelemetry's own
``detach`` logs "Failed to detach context" at ERROR for it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from functools import wraps
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, cast

from agent_otel.recording._activation import deactivate

__all__ = ["Block", "block", "detach"]

T = TypeVar("T")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])


class Block(AbstractContextManager[T], AbstractAsyncContextManager[T], Generic[T]):
    """A block entered with ``with`` or ``async with``; subclasses write the sync pair only."""

    __slots__ = ()

    def __enter__(self) -> T:  # pragma: no cover (every subclass has its own)
        raise NotImplementedError

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:  # pragma: no cover (every subclass has its own)
        raise NotImplementedError

    async def __aenter__(self) -> T:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return self.__exit__(kind, error, traceback)


class _Generated(Block[T]):
    """A :func:`contextlib.contextmanager` block, entered either way; as a decorator (as
    ``contextmanager``'s blocks are), each call in a fresh block: an ``async def``'s around its
    awaited body (``contextmanager``'s wrapped only the making of its coroutine, whose body then
    ran outside the block)."""

    __slots__ = ("_make", "_manager")

    def __init__(self, make: Callable[[], AbstractContextManager[T]]) -> None:
        self._make = make
        self._manager = make()

    def __enter__(self) -> T:
        return self._manager.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return self._manager.__exit__(kind, error, traceback)

    def __call__(self, function: F) -> F:
        make = self._make
        if inspect.iscoroutinefunction(function):

            @wraps(function)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                async with _Generated(make):
                    return await function(*args, **kwargs)

            return cast("F", awaited)

        @wraps(function)
        def called(*args: Any, **kwargs: Any) -> Any:
            with _Generated(make):
                return function(*args, **kwargs)

        return cast("F", called)


def block(function: Callable[P, Iterator[T]]) -> Callable[P, Block[T]]:
    """:func:`contextlib.contextmanager` whose blocks ``async with`` enters too."""
    manager = contextmanager(function)

    @wraps(function)
    def make(*args: P.args, **kwargs: P.kwargs) -> Block[T]:
        return _Generated(lambda: manager(*args, **kwargs))

    return make


def detach(token: Any) -> None:
    """Undo the ``otel_context.attach()`` that gave ``token``, on a block's way out; exited in
    another context (see the module doc), there is nothing of the block's to undo there."""
    try:  # noqa: SIM105 (as recording._activation's callers)
        deactivate(token)
    except ValueError:  # the token is another context's
        pass

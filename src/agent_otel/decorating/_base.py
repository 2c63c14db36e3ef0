"""What the instrument() modules share: wrapper markers, run claims, the pulled stream.

A *claim* is how an outer entry point tells the inner one "this call belongs to my run"
(see :mod:`._runs`); :class:`Pull` is the agent's stream as ``traced`` pulls it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass
from types import CodeType, FunctionType, MethodType
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context

from agent_otel._guard import report

from ._params import AgentSetup

# Attributes set on our wrapper functions (and on drop-in classes).
MARK = "_agent_otel_wrapper"  # a wrapper of ours
ORIGINAL = "_agent_otel_original"  # the function a class-level wrapper replaced
DELEGATES = "_agent_otel_delegates"  # a wrapper calling whatever the MRO further up has
INSTANCE = "_agent_otel_instance"  # on a drop-in class (made by instrument(instance))

Bound = Callable[..., Any]
Lookup = Callable[[Any], "tuple[Bound, AgentSetup | None]"]
OTEL_CONTEXT = "otel_context"


def read(obj: Any, name: str, default: Any = None) -> Any:
    """``getattr(obj, name, default)``, ``default`` too when reading raises (a hostile
    ``__getattr__`` or property): what an agent holds is read, never trusted."""
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


_FUNCTION_LIKE = ("__code__", "__defaults__", "__kwdefaults__")
# Markers asyncio.iscoroutinefunction (and inspect, from 3.12) read besides the code flags.
_MARKERS = ("_is_coroutine", "_is_coroutine_marker")


class EntryPoint:
    """An instrumented entry point: calls ``call`` and answers ``inspect`` as ``like`` does.

    A plain wrapper function answered ``inspect.isasyncgenfunction`` (and
    ``iscoroutinefunction``, ``isgeneratorfunction``, ``asyncio.iscoroutinefunction``) by its
    own code's flags, not the agent's: an ``async def astream`` that yields read as a plain
    function, and frameworks branching on it took the wrong path. Making the wrapper an async
    generator would add a layer per event; instead this object is *function-like* as
    ``inspect`` defines it (callable, with ``__name__``, ``__code__``, ``__defaults__``,
    ``__kwdefaults__``, ``__annotations__``), carrying the code of what ``like`` resolves to
    (its flags are only read, never run), and binds as a function does (``ismethod``,
    ``__func__``, ``__self__``). ``__wrapped__`` is ``like``, so ``inspect.signature`` is its.
    ``held`` is what the class holds when it is no plain function (a static or class method,
    a callable object, a ``partial``): read on the class, it binds as the class's own (the
    class-level call, ``S.stream(msgs)``, is the plain one); read on an instance, this wraps.

    Wrapping a function, it also reads as one: its ``__class__`` is ``FunctionType`` (so
    ``inspect.isfunction``, ``inspect.getmembers(cls, inspect.isfunction)`` and
    ``inspect.getsourcefile`` answer as for the agent's function), with that function's
    ``__globals__`` and ``__closure__``; ``type()`` still tells it apart.
    """

    def __init__(self, call: Callable[..., Any], like: Any, held: Any = None) -> None:
        # Read on an instance, a partialmethod is a partial: no function (like ``like``).
        self._function = inspect.isfunction(read(like, "__func__", like)) and not isinstance(
            held, functools.partialmethod
        )
        self._call = call
        self.held = held
        for assigned in functools.WRAPPER_ASSIGNMENTS:  # as update_wrapper, read safely
            value = read(like, assigned, _NO_MARKER)
            if value is not _NO_MARKER:
                setattr(self, assigned, value)
        # A class method's binding: unwrapped, its function.
        self.__wrapped__ = like if held is None else read(like, "__func__", like)
        code = _code_of(like)
        if code is not None:
            if self._function:
                self.__globals__ = code.__globals__
                self.__closure__ = code.__closure__
            for name in _FUNCTION_LIKE:
                setattr(self, name, getattr(code, name))
            if not isinstance(getattr(self, "__name__", None), str):  # a partial has none:
                self.__name__ = code.__name__  # its function's (inspect needs one to read it)
                self.__qualname__ = code.__qualname__
        for name in _MARKERS:
            marker = read(like, name, _NO_MARKER)
            if marker is not _NO_MARKER:
                setattr(self, name, marker)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # what isinstance and inspect.isfunction read
        return FunctionType if self._function else EntryPoint

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """What the agent's own function carries (a framework's or decorator's marks, set on
        it before or after instrumenting), read through: only on what this object lacks."""
        if name in _OWN:
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            if self.held is None:
                return self
            get = getattr(type(self.held), "__get__", None)
            return self.held if get is None else get(self.held, None, owner)
        return MethodType(self, instance)

    def __reduce__(self) -> str:  # pickled by name, as a function is
        return cast("str", self.__qualname__)

    def __repr__(self) -> str:
        return f"<function {self.__qualname__} at {id(self):#x}>"


_NO_MARKER = object()
# Never read through to the wrapped function: ours alone (a Mock makes up any name asked).
_OWN = frozenset({"_call", "_function", "held", "__wrapped__", MARK, ORIGINAL, DELEGATES})


def _code_of(like: Any) -> Any:
    """The code ``inspect``'s flag tests read for ``like`` (through bound methods and
    ``partial``), as an object to copy ``__code__``, ``__defaults__``, ``__kwdefaults__``
    from; ``None`` when they read none (a callable object: every answer is False)."""
    with suppress(Exception):
        # A partialmethod read on its class: read as on an instance, its function's.
        method = read(like, "_partialmethod", None) or read(like, "__partialmethod__", None)
        if isinstance(method, functools.partialmethod):
            like = method.func
        while inspect.ismethod(like):
            like = like.__func__
        while isinstance(like, functools.partial):
            like = like.func
        if inspect.isfunction(like) or (
            callable(like)
            and isinstance(getattr(like, "__code__", None), CodeType)
            and isinstance(getattr(like, "__name__", None), str)
        ):
            return like
    return None


@dataclass(eq=False, slots=True)
class Claim:
    owner: object
    method: str
    taken: bool = False


CLAIM: ContextVar[Claim | None] = ContextVar("agent_otel_run_claim", default=None)


def take(owner: object, method: str) -> bool:
    """Whether this call is the inner half of a run an outer entry point already traces."""
    claim = CLAIM.get()
    if claim is None or claim.owner is not owner or claim.method != method or claim.taken:
        return False
    claim.taken = True
    return True


class Pull:
    """The agent's stream as ``traced`` pulls it.

    On the first pull (the run's span is then current) it tells ``on_start`` the run's
    context, calls ``make`` for the agent's stream (made then, or made before), and asks the
    stream for its iterator (``__aiter__``), as ``async for`` would: the agent's own code runs
    when it would without agent-otel, and an ``__aiter__`` that raises does so where the
    stream is iterated, not where it was made. With a claim, every pull runs with the claim
    set, so the agent's inner ``run`` call joins this run.
    """

    __slots__ = ("_claim", "_it", "_make", "_on_start", "_started")

    def __init__(
        self,
        make: Callable[[], Any],
        on_start: Callable[[Context], None] | None = None,
        claim: Claim | None = None,
    ) -> None:
        self._make = make
        self._it: AsyncIterator[Any] | None = None
        self._on_start = on_start
        self._claim = claim
        self._started = False

    def __aiter__(self) -> Pull:
        return self

    def __anext__(self) -> Awaitable[Any]:
        if self._started and self._claim is None:
            return cast("AsyncIterator[Any]", self._it).__anext__()
        return self._pull()

    async def _pull(self) -> Any:
        if not self._started:
            self._started = True
            if self._on_start is not None:
                try:
                    self._on_start(otel_context.get_current())
                except Exception:
                    report("instrument run start")
            if self._it is None:
                self._it = self._make().__aiter__()
        iterator = cast("AsyncIterator[Any]", self._it)
        if self._claim is None:
            return await iterator.__anext__()
        token = CLAIM.set(self._claim)
        try:
            return await iterator.__anext__()
        finally:
            CLAIM.reset(token)

    async def asend(self, value: Any) -> Any:
        """Hand a consumer's ``asend`` on to the agent's stream (a plain pull without one)."""
        if self._it is None or not self._started:
            return await self._pull()  # the first pull starts the run; a generator takes None
        asend = getattr(self._it, "asend", None)
        if asend is None:
            return await self._pull()
        if self._claim is None:
            return await asend(value)
        token = CLAIM.set(self._claim)
        try:
            return await asend(value)
        finally:
            CLAIM.reset(token)

    async def athrow(self, error: BaseException) -> Any:
        """Hand a consumer's ``athrow`` on to the agent's stream (its own, when it has one)."""
        athrow = getattr(self._it, "athrow", None)
        if athrow is None:
            raise error
        if self._claim is None:
            return await athrow(error)
        token = CLAIM.set(self._claim)
        try:
            return await athrow(error)
        finally:
            CLAIM.reset(token)

    async def aclose(self) -> None:
        aclose = getattr(self._it, "aclose", None)
        if aclose is not None:
            await aclose()

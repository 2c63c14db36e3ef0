"""Hostile values the tests feed agent-otel, in one place: objects whose ``str()``, hash or
equality raise, and subclasses of the built-ins whose own methods raise (only the built-in
value they are may be read: ``agent_otel._plain``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any


def _raises(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a hostile value's own method ran")


class NoStr:
    """A value (an id, a name) whose ``str()`` and ``repr()`` raise."""

    __str__ = __repr__ = _raises


class BadHash:
    """A value whose hash and equality raise (a tool kind, an id)."""

    __hash__ = __eq__ = _raises  # type: ignore[assignment]


class LyingClass:
    """A value whose ``__class__`` raises: ``isinstance`` reads it, ``type()`` never does."""

    @property
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("a hostile value's own __class__ ran")


class HostileStr(str):
    """A ``str`` subclass whose hash and equality raise (no memo or set may hold it)."""

    __hash__ = __eq__ = _raises  # type: ignore[assignment]


class LyingStr(str):
    """A ``str`` subclass whose own methods raise: only the ``str`` it is may be read."""

    __str__ = __repr__ = __format__ = __len__ = __iter__ = __getitem__ = _raises
    __hash__ = __eq__ = __contains__ = __add__ = __mod__ = _raises  # type: ignore[assignment]
    isascii = encode = lower = strip = startswith = endswith = split = replace = join = _raises


class LyingKey(str):
    """A ``str`` subclass whose own methods raise, but for its hash and equality: a mapping may
    hold it as a key (a header name, a config key)."""

    __str__ = __repr__ = __format__ = __len__ = __iter__ = __getitem__ = _raises
    __contains__ = __add__ = __mod__ = _raises
    isascii = encode = lower = strip = startswith = endswith = split = replace = join = _raises


class LyingInt(int):
    """An ``int`` subclass whose own comparisons, conversions and hash raise."""

    __ge__ = __le__ = __lt__ = __gt__ = __add__ = __radd__ = __int__ = __index__ = _raises  # type: ignore[assignment]
    __str__ = __repr__ = __format__ = __hash__ = __eq__ = __bool__ = _raises  # type: ignore[assignment]


class LyingFloat(float):
    """A ``float`` subclass whose own comparisons, conversions and hash raise."""

    __ge__ = __le__ = __lt__ = __gt__ = __add__ = __radd__ = __float__ = __int__ = _raises  # type: ignore[assignment]
    __str__ = __repr__ = __format__ = __hash__ = __eq__ = __bool__ = _raises  # type: ignore[assignment]


class LyingDict(dict):  # type: ignore[type-arg]
    """A ``dict`` subclass whose own methods raise: only the ``dict`` it is may be read."""

    items = keys = values = get = __iter__ = __len__ = __getitem__ = __contains__ = _raises
    __eq__ = __hash__ = __bool__ = __repr__ = _raises  # type: ignore[assignment]


class LyingList(list):  # type: ignore[type-arg]
    """A ``list`` subclass whose own methods raise: only the ``list`` it is may be read."""

    __iter__ = __len__ = __getitem__ = __contains__ = __eq__ = __bool__ = __repr__ = _raises  # type: ignore[assignment]


class Unreadable:
    """A value whose reading runs its own code, which raises: any attribute it lacks (a lazy or
    detached ORM object's, a proxy's), its iteration, length, ``str()`` and ``repr()``."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"a hostile value's {name} ran")

    __iter__ = __len__ = __str__ = __repr__ = _raises


class LazyMapping(Mapping[str, Any]):
    """A mapping (not a ``dict``) whose values raise when read: a lazy record's."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError(f"a hostile mapping's {key} ran")

    def __iter__(self) -> Iterator[str]:
        return iter(("role", "content", "name"))

    def __len__(self) -> int:
        return 3


class LazySequence(Sequence[Any]):
    """A sequence (not a ``list``) whose items raise when read: a lazy query's result."""

    def __getitem__(self, index: Any) -> Any:
        raise RuntimeError("a hostile sequence's item ran")

    def __len__(self) -> int:
        return 2


class UnreadableIterable:
    """Messages handed to an agent that cannot be iterated (a one-shot cursor, closed)."""

    __iter__ = _raises

"""Values read as the plain built-ins they are.

A ``str`` enum member, a pydantic constrained string, a ``dict`` subclass: events and options
carry subclasses of the built-ins, and a subclass's own methods may say something else
(``format()`` of a ``str`` enum gives its name on some Pythons) or raise (a hash, a length).
What a run records is read with the base type's own methods, so none of a subclass's runs:
here for strings, integers, floats, lists, tuples and mappings (the OTel attribute model's
``AnyValue``), in :mod:`agent_otel.recording.content._fit` for content.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from typing import TYPE_CHECKING, Any, TypeVar, overload
from uuid import UUID

from agent_contract.sources._arguments import TRUNCATION_MARK
from agent_otel._guard import reads_values

if TYPE_CHECKING:
    from typing_extensions import TypeIs

reads_values(__name__)  # its reads run the agent's code: what that raises is the agent's

_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")
_N = TypeVar("_N", int, float)

MAX_ATTRIBUTE_DEPTH = 16
"""How deep an attribute value may nest (a list in a map in a list...); deeper: the contract's
``TRUNCATION_MARK``. Each level is two protobuf messages on the wire, and a receiver's parser
stops at 100 (the Python protobuf runtime's default): content's depth (the contract's
``MAX_DEPTH``, 64) made a batch no such receiver reads, so an attribute's limit is its own."""
_KEY_TYPES = (int, float, bool, type(None))  # keys that are not strings but have a plain text


@overload
def _is(value: object, kinds: type[_A]) -> TypeIs[_A]: ...
@overload
def _is(value: object, kinds: tuple[type[_A], type[_B]]) -> TypeIs[_A | _B]: ...
@overload
def _is(value: object, kinds: tuple[type[_A], type[_B], type[_C]]) -> TypeIs[_A | _B | _C]: ...
def _is(value: object, kinds: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's type alone: ``isinstance`` also reads ``__class__``,
    which a proxy (a lazy object) may define as a property that raises."""
    return issubclass(type(value), kinds)


def a_kind(value: object) -> str:
    """What ``value`` is, for a message: ``an int``, ``a Tracer``, ``the class Agent``; ``an
    object`` when it cannot say (a ``__class__`` or a metaclass's ``__name__`` that raises)."""
    try:
        if issubclass(type(value), type):  # (type() never reads its __class__)
            return f"the class {value.__name__}"  # type: ignore[attr-defined]
        name = str(type(value).__name__)
    except Exception:
        return "an object"
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def has_methods(value: object, methods: tuple[str, ...]) -> bool:
    """Whether ``value`` is an instance (not a class) whose type has each of ``methods``:
    what a processor, sampler or propagator argument must be, read by its type alone (none
    of its own methods runs)."""
    kind = type(value)
    return not issubclass(kind, type) and all(callable(getattr(kind, m, None)) for m in methods)


def shown(value: object, limit: int = 64) -> str:
    """``value`` for an error message, within a line and never by its own methods: a string
    (a subclass as the ``str`` it is) or a number as its ``repr``, cut to ``limit``
    characters; ``None``, ``True`` and ``False`` by name; anything else by :func:`a_kind`
    (its ``repr`` could raise, or be a megabyte)."""
    if value is None or value is True or value is False:
        return str(value)
    try:
        if _is(value, str):
            text = str.__str__(value)
            return repr(text if len(text) <= limit else text[: limit - 1] + "\u2026")
        if _is(value, int):
            text = int.__repr__(value)
        elif _is(value, float):
            text = float.__repr__(value)
        else:
            return a_kind(value)
    except Exception:  # a __class__ that raises; an int too long to print
        return a_kind(value)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def plain(value: Any) -> Any:
    """``value``, a ``str`` subclass as the ``str`` it is; anything else as it is."""
    if type(value) is not str and issubclass(type(value), str):  # (_is, inline: per event)
        return str.__str__(value)
    return value


def text_of(value: Any) -> str | None:
    """``value`` as a plain ``str`` when it is a string, else None: where an event's string
    enters a run (callers test ``type(value) is str`` first: the usual case costs no call)."""
    if value is None:  # the usual caller's case (a plain str is tested before the call)
        return None
    return str.__str__(value) if issubclass(type(value), str) else None  # (_is, inline)


def id_text(value: Any) -> Any:
    """An id as its text: a ``str`` (a subclass as the ``str`` it is), an ``int`` (not a
    bool) or a ``uuid.UUID`` (what databases and frameworks hand out as session and user
    ids) as the text it is; anything else as it is, for the caller to refuse."""
    if _is(value, str):
        return str.__str__(value)
    if _is(value, int) and not _is(value, bool):
        try:
            return int.__repr__(value)
        except ValueError:  # past Python's limit of digits for a text: no id
            return value
    if _is(value, UUID):
        return str(UUID(int=value.int))  # UUID's own str, never a subclass's
    return value


def int_of(value: object) -> int | None:
    """``value`` as the plain ``int`` it is (an ``IntEnum``, a subclass whose own methods
    raise: read by ``int``'s own); None for ``bool`` and every other type."""
    kind = type(value)
    return int.__int__(value) if issubclass(kind, int) and kind is not bool else None  # type: ignore[arg-type]


def number_of(value: object) -> float | None:
    """``value`` as the plain ``float`` it is when it is a real number (an ``int`` or
    ``float``, a subclass read by the base type's own methods, a ``Fraction``); an int too
    big for a float as ``inf``; None for ``bool`` and every other type (a ``str`` of digits
    included: a number written as text is a mistake to tell, not to guess)."""
    kind = type(value)
    if kind is bool or not issubclass(kind, Real):
        return None
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, int):
        whole = int.__int__(value)
        try:
            return float(whole)
        except OverflowError:
            return math.inf if whole > 0 else -math.inf
    try:
        return float(value)  # type: ignore[arg-type]  # a Fraction, another Real
    except Exception:  # a Real whose own __float__ raises: no number
        return None


def at_least_zero(label: str, given: object, number: _N | None, what: str) -> _N:
    """``number`` (``given`` read plain by :func:`int_of` or :func:`number_of`) when it is
    finite and >= 0; else ``TypeError`` (no number: ``label`` must be ``what``) or
    ``ValueError`` naming ``label`` and showing ``given`` (:func:`shown`)."""
    if number is None:
        raise TypeError(f"{label} must be {what}, not {shown(given)}")
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{label} must be a finite number >= 0, not {shown(given)}")
    return number


def items_of(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    """A list's or tuple's items as a plain list, read by the base type (a subclass's own
    ``__iter__`` or ``__len__`` never runs)."""
    return list(list.__iter__(value) if _is(value, list) else tuple.__iter__(value))


def get(mapping: Mapping[Any, Any], key: Any, default: Any = None) -> Any:
    """``mapping.get(key, default)``, by ``dict``'s own ``get`` for a ``dict`` (a subclass's
    own ``get`` never runs)."""
    if _is(mapping, dict):
        return dict.get(mapping, key, default)
    return mapping.get(key, default)


def plain_value(value: Any, depth: int = 0) -> Any:
    """An attribute value (the SDK's ``AnyValue``: scalars, sequences, maps, nested) as plain
    built-ins: subclasses as their base type, lists and tuples as lists, mappings as dicts
    with string keys (an int, float, bool or None key as its text; other keys dropped), and
    what nests past :data:`MAX_ATTRIBUTE_DEPTH` as ``TRUNCATION_MARK``. Other values as they are."""
    kind = type(value)
    if kind is str or kind is bool or kind is float or kind is int or value is None:
        return value
    if _is(value, str):
        return str.__str__(value)
    if _is(value, int):
        return int.__int__(value)
    if _is(value, float):
        return float.__float__(value)
    kind_of_many = issubclass(kind, (list, tuple, Mapping))  # (never its own __class__)
    if kind_of_many and depth >= MAX_ATTRIBUTE_DEPTH:
        return TRUNCATION_MARK
    if _is(value, (list, tuple)):
        return [plain_value(item, depth + 1) for item in items_of(value)]
    if kind_of_many:  # a mapping
        pairs = dict.items(value) if _is(value, dict) else value.items()
        out: dict[str, Any] = {}
        for key, item in pairs:
            if _is(key, str):
                name = str.__str__(key)
            elif type(key) in _KEY_TYPES:
                name = str(key)
            else:
                continue
            out[name] = plain_value(item, depth + 1)
        return out
    return value

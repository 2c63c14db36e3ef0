"""Values the OTLP encoders accept: the one check every attribute, name and metric value passes.

The OTLP protobuf encoders reject two things the SDK lets through: a string that is not valid
UTF-8 (a lone surrogate, which models do produce in tool names and text) and an integer
outside signed 64 bits. Either makes the exporter drop the WHOLE batch, other runs' spans with
it. So a string is made encodable (a surrogate pair joined into its character, each other
unencodable code point made ``?``) and an
out-of-range integer (alone or in a list) drops its attribute; the caller counts each repair.
Ids get the same treatment before a run keys anything by them (:func:`id_text`).

Every string is also bounded: one over ``MAX_TEXT_BYTES`` of UTF-8 (a tool's error text, an
``Error`` event's description, an attribute the caller passed) is cut to that size and ends
with the truncation mark, so no single value can make a span too big to export
(:func:`bounded_text`, counted as ``string_truncated``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from agent_contract.sources._arguments import TRUNCATION_MARK
from agent_contract.sources._joined import pairs_joined
from agent_otel import _attributes as A
from agent_otel._plain import plain_value

if TYPE_CHECKING:
    from agent_otel.scrubbing import Scrub

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

UNENCODABLE_STRING = "unencodable_string"
INTEGER_OUT_OF_RANGE = "integer_out_of_range"
UNUSABLE_ID = "unusable_id"
STRING_TRUNCATED = "string_truncated"
UNSUPPORTED_VALUE = "unsupported_value"
MAX_TEXT_BYTES = 256 * 1024
"""The most UTF-8 bytes any one string a run records can take (content, under its own
smaller budget, is cut before it gets here and stays valid JSON)."""
_MAX_CHARS_SAFE = MAX_TEXT_BYTES // 4  # no string this short can be over the bound

_KEYS = frozenset(v for v in vars(A).values() if type(v) is str and v.isascii())
"""Our attribute keys (and other names): ASCII, so a write need not ask each key."""
Count = Callable[[str], None]
DROP: Any = object()
"""Returned by :func:`clean_value` for a value whose attribute must be dropped."""


def uncounted(kind: str) -> None:
    return None


def clean_text(text: str, count: Count = uncounted) -> str:
    """``text`` as valid UTF-8 within ``MAX_TEXT_BYTES`` (``isascii`` and ``len`` are O(1),
    so a clean ASCII string costs nothing); a ``str`` subclass as the ``str`` it is."""
    if type(text) is not str:  # none of a subclass's methods runs
        text = str.__str__(text)
    if text.isascii():
        return text if len(text) <= MAX_TEXT_BYTES else bounded_text(text, count)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _encodable(text, count)
    return text if len(text) <= _MAX_CHARS_SAFE else bounded_text(text, count)


def _encodable(text: str, count: Count) -> str:
    """``text``, which UTF-8 cannot encode, as text it can: each surrogate pair as the
    character it stands for (JSON writes a character past U+FFFF as two escapes, and a server
    that cuts its text between them sends the halves in chunks of their own, which a run joins
    back), then each lone surrogate left as ``?``, counted."""
    text = pairs_joined(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        count(UNENCODABLE_STRING)
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def bounded_text(text: str, count: Count = uncounted, limit: int = MAX_TEXT_BYTES) -> str:
    """``text`` (valid UTF-8) cut to at most ``limit`` UTF-8 bytes, whole characters, ending
    with the truncation mark; counted as ``string_truncated`` when cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    count(STRING_TRUNCATED)
    keep = max(limit - len(TRUNCATION_MARK), 0)
    return data[:keep].decode("utf-8", "ignore") + TRUNCATION_MARK


def in_range(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


_PLAIN = frozenset({str, int, float, bool, type(None)})  # scalars read as they are


def clean_value(value: Any, count: Count = uncounted) -> Any:
    """``value`` made encodable, or :data:`DROP`.

    A value of the attribute model's other shapes (a subclass of ``str``, ``int``, ``float``,
    ``list`` or ``tuple``; a list or a map holding any of them, nested) is first read as the
    plain built-ins it is (:func:`agent_otel._plain.plain_value`: none of a subclass's methods
    runs, here, in the SDK or in the encoder, where one that raises would cost the span or the
    batch), then each string in it made encodable and each integer checked: one out of range
    drops the whole attribute. A value of no type the model has (an object, a set), alone or
    anywhere in a list or map, drops the attribute too, counted as ``unsupported_value``: the
    SDK would call its ``str()``, and one that raises costs the whole span."""
    if type(value) not in _PLAIN:
        if not isinstance(value, (str, int, float, list, tuple, Mapping, bytes)):
            count(UNSUPPORTED_VALUE)
            return DROP
        value = plain_value(value)
    return _clean_plain(value, count)


def _clean_plain(value: Any, count: Count) -> Any:
    """:func:`clean_value` of plain built-ins (as :func:`plain_value` makes them)."""
    kind = type(value)
    if kind is str:
        return clean_text(value, count)
    if kind is int:
        if in_range(value):
            return value
        count(INTEGER_OUT_OF_RANGE)
        return DROP
    if kind is list:
        items = [_clean_plain(item, count) for item in value]
        return DROP if any(item is DROP for item in items) else items
    if kind is dict:
        out = {clean_text(key, count): _clean_plain(item, count) for key, item in value.items()}
        return DROP if any(item is DROP for item in out.values()) else out
    if kind is float or kind is bool or kind is bytes or value is None:
        return value
    count(UNSUPPORTED_VALUE)  # what plain_value leaves as it is: no type of the model
    return DROP


def clean_attributes(attributes: Mapping[str, Any] | None, count: Count = uncounted) -> Any:
    """A copy of ``attributes`` with every key and value encodable (the same mapping if clean):
    each through :func:`clean_value`, the repair :func:`checked`'s one pass stands for."""
    if not attributes:
        return attributes
    out: dict[str, Any] | None = None
    for key, value in attributes.items():
        fixed = clean_value(value, count)
        name = clean_text(key, count) if isinstance(key, str) else key
        if out is None and (fixed is not value or name is not key):
            out = {}
            for done, kept in attributes.items():  # the clean prefix, as it was
                if done is key:
                    break
                out[done] = kept
        if out is not None and fixed is not DROP:
            out[name] = fixed
    return attributes if out is None else out


def checked(
    attributes: Mapping[str, Any] | None, count: Count = uncounted, scrub: Scrub | None = None
) -> Any:
    """``attributes`` scrubbed (when ``scrub``) and encodable: what every write of a run passes.

    One pass for the common case, the same mapping back: ASCII keys, and values that are
    floats, bools, integers in range, or ASCII strings the scrub leaves as they are (a set
    lookup once it has seen them; with scrubbing off, any ASCII string within the bound).
    Anything else is scrubbed, then checked again unscrubbed, and what that pass stops at is
    repaired by :func:`clean_attributes`. (Figure 2: a scrub pass and a repair pass with a
    call per value cost a fifth of an LLM call.)
    """
    if not attributes:
        return attributes
    known: Collection[str] = scrub.known if scrub is not None else ()
    for key, value in attributes.items():
        if key not in _KEYS and (type(key) is not str or not key.isascii()):
            break
        kind = type(value)
        if kind is str:  # the most values (names, ids), then numbers and flags
            if value in known:  # ASCII, short, scrubbed
                continue
            if not value.isascii() or len(value) > MAX_TEXT_BYTES:
                break
            if scrub is not None:  # new: an id, a name seen first
                fixed = scrub.text(value)
                if fixed is not value:  # scrubbed once here: the others in the slow pass
                    return _repaired_after_scrub(attributes, key, fixed, count, scrub)
        elif kind is float or kind is bool:
            continue
        elif kind is int:
            if not INT64_MIN <= value <= INT64_MAX:
                break
        elif kind is list:  # finish reasons, anomaly kinds: strings as above
            for item in value:
                if type(item) is not str:
                    break
                if item in known:
                    continue
                if not item.isascii() or len(item) > MAX_TEXT_BYTES:
                    break
                if scrub is not None:
                    break
            else:
                continue
            break
        else:
            break
    else:
        return attributes
    if scrub is not None:  # scrubbed, the one pass above says what is left to repair
        return checked(scrub.attributes(attributes), count)
    return clean_attributes(attributes, count)


def checked_text(text: str, count: Count = uncounted, scrub: Scrub | None = None) -> str:
    """One string as :func:`checked` writes it: a ``str`` subclass as the ``str`` it is,
    scrubbed (when ``scrub``), then encodable; a string checked where it comes in (a span
    name, the response's model, id and finish reason) is checked once."""
    if scrub is not None:
        if type(text) is str and text in scrub.known:  # ASCII, short, scrubbed (as checked)
            return text
        text = scrub.text(text)
    return clean_text(text, count)


def _repaired_after_scrub(
    attributes: Mapping[str, Any], done: str, fixed: str, count: Count, scrub: Scrub | None
) -> Any:
    """The slow pass of :func:`checked` once ``done`` was scrubbed to ``fixed`` (each value is
    scrubbed once: a find is counted once)."""
    rest = {key: value for key, value in attributes.items() if key != done}
    if scrub is not None:
        rest = scrub.attributes(rest)
    out = {key: fixed if key == done else rest[key] for key in attributes}
    return checked(out, count)


def id_text(raw: Any, count: Count) -> str | None:
    """An event's call id as the text a run keys and records it by (``None``: no id).

    Ids are matched as text, so ``1`` and ``"1"`` are one id. An id that is unhashable (a
    list) still works through its text; one whose ``str()`` fails counts as missing. Both are
    counted as ``unusable_id``: nothing about an id can fail after a span started.
    """
    if raw is None or type(raw) is str:
        return raw
    kind = type(raw)  # (its type only: an object's own ``__class__`` may raise)
    if issubclass(kind, str):  # a subclass, a str enum member: the str it is, not its str()
        return str.__str__(raw)
    try:
        text = str(raw)
        if type(text) is not str:
            raise TypeError("__str__ returned a non-string")
    except Exception:
        count(UNUSABLE_ID)
        return None
    if kind.__hash__ is None:
        count(UNUSABLE_ID)
    return text

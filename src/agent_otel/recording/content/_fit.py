"""Fitting a value into a byte budget as valid JSON, in time bounded by the budget.

:class:`Copy` makes a plain-JSON copy of the value (dicts, lists, strings, numbers; a NaN or
infinity as ``null``, as JSON has no word for them and other parsers refuse Python's ``NaN``;
dataclasses and pydantic models become objects of their fields, other mappings objects, other
sequences and sets lists, bytes their UTF-8 text, anything else its ``str()``; a key and a
value's text by the rule the adapters write tool-call arguments by, ``printed`` and
``json_key`` of ``agent_contract.sources._arguments``) and stops as soon as the copy could not
fit even with every string cut: lists are copied newest item first (a list keeps its newest
items, an object is whole or dropped, so the message schemas still hold), so a 300k-float
embedding or a 20k-message history costs what the newest items that can fit cost, not what the
whole value would. The copy is also what a redaction hook may mutate freely. :func:`fit_plain`
then keeps the copy whole when it fits, else finds the longest per-string limit that fits
(strings cut and marked; the labels of the message-part schema never), else drops the oldest
list items. Nesting deeper than ``MAX_DEPTH`` becomes the
truncation mark, so cycles and deep values end too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from itertools import islice
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from agent_contract.sources._arguments import MAX_DEPTH, TRUNCATION_MARK, json_key, printed
from agent_otel._guard import reads_values
from agent_otel.scrubbing import MARGIN

if TYPE_CHECKING:
    from agent_otel.scrubbing import Scrub

reads_values(__name__)  # its reads run the agent's code: what that raises is the agent's

# Values under these keys are the message-part schema's labels, never shortened: a cut
# "tool_call_response" would leave a part no consumer recognises.
LABELS = frozenset({"type", "role", "finish_reason"})
_MARK = len(TRUNCATION_MARK)
_CUT_STRING = _MARK + 2  # the smallest a cut string gets: '"...[truncated]"'
_MAX_INT_BITS = 13_000  # past ~4300 digits, int -> str raises (sys.get_int_max_str_digits)
_NO_ROOM: Any = object()
# The smallest a chat message gets as JSON: '{"role":"a","parts":[]}' and a comma.
MIN_MESSAGE_BYTES = 24


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_LITERALS = {True: "true", False: "false", None: "null"}


def dumps(value: Any) -> str:
    """Compact JSON text. Scalars directly: the encoder builds a C encoder per call."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool or value is None:
        return _LITERALS[value]
    return _ENCODER.encode(value)


def size(text: str) -> int:
    """UTF-8 bytes of ``text`` (a lone surrogate counts 3, as the repaired text is smaller)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Copy:
    """A plain-JSON copy within ``max_bytes`` (see the module docstring); ``cut`` if it is not
    all of the value. A string it cuts is scrubbed by ``scrub`` first (:meth:`Scrub.prefix`),
    so the cut cannot keep a piece of a secret it split out of its format."""

    __slots__ = ("chars", "cut", "room", "scrub")

    def __init__(self, max_bytes: int, scrub: Scrub | None = None) -> None:
        self.room = max_bytes  # bytes the copy still has, with every string cut
        self.chars = max_bytes + _MARK + 1  # a longer string is cut whatever the limit
        self.cut = False
        self.scrub = scrub

    def _take(self, cost: int) -> bool:
        if cost > self.room:
            self.cut = True
            return False
        self.room -= cost
        return True

    def value(self, value: Any, depth: int = 0, label: bool = False) -> Any:
        """The copy of ``value``, or ``_NO_ROOM`` (and ``cut`` set) when it has no room."""
        kind = type(value)
        if kind is float:  # the embedding case first
            if math.isfinite(value):
                return value if self._take(len(float.__repr__(value))) else _NO_ROOM
            return None if self._take(4) else _NO_ROOM  # JSON has no NaN or Infinity: null
        if kind is str or isinstance(value, str):
            text = str.__str__(value)
            if len(text) > self.chars:
                if self.scrub is not None:
                    text = self.scrub.prefix(text, self.chars)
                text = text[: self.chars]
            cost = size(dumps(text)) if label or len(text) <= _MARK else _CUT_STRING
            return text if self._take(cost) else _NO_ROOM
        if value is None or kind is bool:
            return value if self._take(5 if value is False else 4) else _NO_ROOM
        if isinstance(value, (int, float)):  # a subclass as the number it is (none of its
            # methods runs: int.__int__ and float.__float__ are the base type's own)
            number = int.__int__(value) if isinstance(value, int) else float.__float__(value)
            if type(number) is int and abs(number).bit_length() > _MAX_INT_BITS:
                return self.value(TRUNCATION_MARK, depth)
            if type(number) is float:
                return self.value(number, depth)
            return number if self._take(len(dumps(number))) else _NO_ROOM
        if depth >= MAX_DEPTH:
            return self.value(TRUNCATION_MARK, depth)
        if isinstance(value, dict):  # a subclass as the dict it is: none of its methods runs
            return self._dict(value if type(value) is dict else dict(dict.items(value)), depth + 1)
        if isinstance(value, (list, tuple)):  # likewise (reversed() reads them in C)
            return self._list(value, depth + 1)
        try:
            return self._other(value, depth)
        except Exception:  # a container whose own methods raise: its text, else null
            return self.value(printed(value), depth)

    def _other(self, value: Any, depth: int) -> Any:
        """Values that are data, as the JSON they stand for; anything else as its text."""
        if isinstance(value, (bytes, bytearray, memoryview)):  # only what can show is decoded
            reach = self.chars + (MARGIN if self.scrub is not None else 0)
            return self.value(bytes(value[:reach]).decode("utf-8", "replace"), depth)
        fields = _fields(value)
        if fields is not None:
            return self._dict(fields, depth + 1)
        if isinstance(value, Mapping):
            return self._dict(value, depth + 1)
        if isinstance(value, Sequence):  # deque, range, array: newest items first, as a list
            return self._list(value, depth + 1)
        if isinstance(value, (set, frozenset)):  # no order: the first ones that can show
            return self._list(list(islice(value, self.room // 2 + 1)), depth + 1)
        return self.value(printed(value), depth)

    def _list(self, items: Sequence[Any], depth: int) -> Any:
        if not self._take(2):
            return _NO_ROOM
        out: list[Any] = []
        for item in reversed(items):  # newest first: they are the ones kept
            if out and not self._take(1):  # the comma
                break
            copied = self.value(item, depth)
            if copied is not _NO_ROOM:  # a container may come back partly copied
                out.append(copied)
            if self.cut:
                break
        out.reverse()
        return out

    def _dict(self, mapping: Mapping[Any, Any], depth: int) -> Any:
        if not self._take(2):
            return _NO_ROOM
        out: dict[str, Any] = {}
        last = len(mapping) - 1
        for index, (key, item) in enumerate(mapping.items()):
            name = json_key(key)
            if not self._take(size(dumps(name)) + (2 if out else 1)):  # colon and comma
                return _NO_ROOM
            copied = self.value(item, depth, name in LABELS)
            if copied is _NO_ROOM:
                return _NO_ROOM
            out[name] = copied
            if self.cut:  # an object is whole (its last value may be a cut list) or dropped
                return out if index == last else _NO_ROOM
        return out


def _fields(value: Any) -> dict[str, Any] | None:
    """A dataclass's or pydantic model's fields by name (their values not yet copied); None
    for anything else. What ``dataclasses.asdict`` / ``model_dump`` would give, in time
    bounded by the number of fields: values are copied within the budget like any other."""
    cls = type(value)
    if is_dataclass(cls):
        return {f.name: getattr(value, f.name, None) for f in dataclass_fields(value)}
    model_fields = getattr(cls, "model_fields", None)  # pydantic v2
    if isinstance(model_fields, dict) and hasattr(value, "__pydantic_fields_set__"):
        out = {name: getattr(value, name, None) for name in model_fields}
        extra = getattr(value, "__pydantic_extra__", None)
        if isinstance(extra, dict):
            out.update(extra)
        return out
    return None


def _shorten(value: Any, limit: int) -> Any:
    if isinstance(value, str):  # cut only when the cut (with its mark) is shorter
        if len(value) <= limit + _MARK:
            return value
        return value[:limit] + TRUNCATION_MARK
    if isinstance(value, dict):
        return {k: v if k in LABELS else _shorten(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v, limit) for v in value]
    return value


def _measure(value: Any, limit: int, cap: int) -> int:
    """``size(dumps(_shorten(value, limit)))``, or anything over ``cap`` once it exceeds it."""
    if isinstance(value, str):
        if len(value) > limit + _MARK:
            value = value[:limit] + TRUNCATION_MARK
        return size(dumps(value))
    if isinstance(value, dict):
        total = 1 + max(len(value), 1)
        for key, item in value.items():
            total += size(dumps(key)) + 1
            total += size(dumps(item)) if key in LABELS else _measure(item, limit, cap - total)
            if total > cap:
                break
        return total
    if isinstance(value, list):
        total = 1 + max(len(value), 1)
        for item in value:
            total += _measure(item, limit, cap - total)
            if total > cap:
                break
        return total
    return size(dumps(value))


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def fit_plain(value: Any, max_bytes: int) -> str:
    """JSON of a plain ``value`` (as :func:`plain_copy` makes it) within ``max_bytes``."""
    text = dumps(value)  # whole, or the newest items of a copy that was cut
    if size(text) <= max_bytes:
        return text
    lo, hi = 0, min(_longest_string(value), max_bytes)
    best: int | None = None
    while lo <= hi:  # the longest per-string limit that fits
        mid = (lo + hi) // 2
        if _measure(value, mid, max_bytes) <= max_bytes:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return dumps(_shorten(value, best))
    shortened = _shorten(value, 0)
    if isinstance(shortened, list):  # keep the newest items that fit
        total, start = 2, len(shortened)
        while start > 0:
            cost = size(dumps(shortened[start - 1])) + (start < len(shortened))
            if total + cost > max_bytes:
                break
            total, start = total + cost, start - 1
        return dumps(shortened[start:])
    return "{}" if isinstance(shortened, dict) else '""'


def plain_copy(value: Any, max_bytes: int, scrub: Scrub | None = None) -> Any:
    """A plain-JSON copy of ``value`` bounded by ``max_bytes`` (see :class:`Copy`), each string
    it cuts scrubbed by ``scrub`` before the cut."""
    copy = Copy(max_bytes, scrub)
    plain = copy.value(value)
    if plain is _NO_ROOM:
        if isinstance(value, Mapping) or _fields(value) is not None:
            return {}
        plain = [] if isinstance(value, (list, tuple)) else ""
    return plain


def recent(messages: Any, max_bytes: int) -> Any:
    """The newest messages of a history that can show within ``max_bytes`` (older ones cannot).

    ``None`` for a one-shot iterator (capturing it would consume the agent's own value) and
    for what is not a history at all.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        return None  # not a history
    if isinstance(messages, list) and type(messages) is not list:  # as the list it is
        messages = list.copy(messages)
    elif isinstance(messages, tuple) and type(messages) is not tuple:
        messages = tuple(tuple.__iter__(messages))
    if isinstance(messages, Sequence):
        keep, total = max_bytes // MIN_MESSAGE_BYTES + 1, len(messages)
        if total <= keep:
            return messages
        return [messages[i] for i in range(total - keep, total)]
    try:
        if iter(messages) is messages:
            return None
        return list(messages)
    except Exception:  # an iterable whose own methods raise: not a history we can read
        return None


def fit_json(value: Any, max_bytes: int, scrub: Scrub | None = None) -> str:
    """Serialise ``value`` to JSON of at most ``max_bytes`` UTF-8 bytes, keeping it valid;
    scrubbed by ``scrub`` before anything is cut."""
    plain = plain_copy(value, max_bytes, scrub)
    return fit_plain(plain if scrub is None else scrub.value(plain), max_bytes)

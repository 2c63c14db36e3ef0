"""Values the OTLP encoders accept: the one check every attribute, name and metric value passes.

The OTLP protobuf encoders reject two things the SDK lets through: a string that is not valid
UTF-8 (a lone surrogate, which models do produce in tool names and text) and an integer
outside signed 64 bits. Either makes the exporter drop the WHOLE batch, other runs' spans with
it. So a string is made encodable (each unencodable code point becomes ``?``) and an
out-of-range integer (alone or in a list) drops its attribute; the caller counts each repair.
Ids get the same treatment before a run keys anything by them (:func:`id_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

UNENCODABLE_STRING = "unencodable_string"
INTEGER_OUT_OF_RANGE = "integer_out_of_range"
UNUSABLE_ID = "unusable_id"

Count = Callable[[str], None]
DROP: Any = object()
"""Returned by :func:`clean_value` for a value whose attribute must be dropped."""


def _ignore(kind: str) -> None:
    return None


def clean_text(text: str, count: Count = _ignore) -> str:
    """``text`` as valid UTF-8 (``isascii`` is O(1), so clean ASCII costs nothing)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        count(UNENCODABLE_STRING)
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def in_range(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def clean_value(value: Any, count: Count = _ignore) -> Any:
    """``value`` made encodable, or :data:`DROP`; types the SDK itself rejects pass as they are."""
    kind = type(value)
    if kind is str:
        return clean_text(value, count)
    if kind is int:
        if in_range(value):
            return value
        count(INTEGER_OUT_OF_RANGE)
        return DROP
    if kind is list or kind is tuple:
        items, changed = [], False
        for item in value:
            fixed = clean_value(item, count)
            if fixed is DROP:
                return DROP
            changed = changed or fixed is not item
            items.append(fixed)
        return items if changed else value
    if isinstance(value, str):  # a str subclass: encoded as the str it is
        return clean_text(str(value), count)
    if isinstance(value, int) and not isinstance(value, bool):
        return clean_value(int(value), count)
    return value


def clean_attributes(attributes: Mapping[str, Any] | None, count: Count = _ignore) -> Any:
    """A copy of ``attributes`` with every key and value encodable (the same mapping if clean)."""
    if not attributes:
        return attributes
    for key, value in attributes.items():  # the common case, inline: nothing to repair
        kind = type(value)
        if not (type(key) is str and key.isascii()):
            break
        if kind is str:
            if not value.isascii():
                break
        elif kind is int:
            if not INT64_MIN <= value <= INT64_MAX:
                break
        elif kind is list:
            for item in value:
                if not (type(item) is str and item.isascii()):
                    break
            else:
                continue
            break
        elif kind is not float and kind is not bool:
            break
    else:
        return attributes
    return _repaired(attributes, count)


def _repaired(attributes: Mapping[str, Any], count: Count) -> Any:
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


def id_text(raw: Any, count: Count) -> str | None:
    """An event's call id as the text a run keys and records it by (``None``: no id).

    Ids are matched as text, so ``1`` and ``"1"`` are one id. An id that is unhashable (a
    list) still works through its text; one whose ``str()`` fails counts as missing. Both are
    counted as ``unusable_id``: nothing about an id can fail after a span started.
    """
    if raw is None or type(raw) is str:
        return raw
    try:
        text = str(raw)
        if type(text) is not str:
            raise TypeError("__str__ returned a non-string")
    except Exception:
        count(UNUSABLE_ID)
        return None
    if raw.__class__.__hash__ is None:
        count(UNUSABLE_ID)
    return text

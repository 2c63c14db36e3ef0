"""A cheap estimate of a finished span's size in memory, for the sampler's byte bounds.

Per-span overhead plus the text it carries (attribute and event strings: captured content is
where the bytes are). It runs for every span a run holds, so it reads the SDK span's
attribute dict directly when there is one (iterating the public read-only view costs several
times more); any other span goes through the public view.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.sdk.trace import ReadableSpan

SPAN_OVERHEAD = 2048
"""Bytes a finished SDK span holds before its text (measured: about 2.4 kB with a few short
attributes, figure 12)."""
_PER_VALUE = 64


def _values(attributes: object) -> Iterable[object]:
    raw = getattr(attributes, "_dict", None)  # BoundedAttributes' plain dict
    if isinstance(raw, dict):
        return raw.values()
    values = getattr(attributes, "values", None)
    return values() if callable(values) else ()


def _text_size(attributes: object) -> int:
    size = 0
    for value in _values(attributes):
        size += _PER_VALUE
        if type(value) is str:
            size += len(value)
        elif type(value) is tuple or type(value) is list:
            size += sum(len(v) if type(v) is str else 8 for v in value)
    return size


def span_size(span: ReadableSpan) -> int:
    """Overhead plus the text in its name, attributes and events (an estimate)."""
    size = SPAN_OVERHEAD + len(span.name)
    size += _text_size(getattr(span, "_attributes", None) or span.attributes)
    events = getattr(span, "_events", None)  # the SDK's list; the public property copies it
    for event in events if events is not None else span.events:
        size += _PER_VALUE + len(event.name) + _text_size(event.attributes)
    return size

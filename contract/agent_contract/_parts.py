"""OpenAI/LiteLLM content parts: the list form of ``Message.content``.

A part is a dict with a ``type``: ``text`` (``text``), ``image_url`` (``image_url``: a URL, or
a mapping with ``url``, which may be a ``data:`` URL holding base64), ``input_audio``
(``input_audio``: ``{"data": base64, "format": "wav" | "mp3"}``) or ``file`` (``file``:
``{"file_id" | "file_data" | "filename", ...}``). Other kinds (``refusal``, a provider's own)
are kept as given: a history is never silently cut. Parts are shallow-copied, so a large
inline payload is shared, never duplicated.

Error messages are constant text: they never interpolate input values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PART_KINDS", "parse_content"]

PART_KINDS = frozenset({"text", "image_url", "input_audio", "file"})
"""The content-part kinds whose payload is checked; any other ``type`` is kept unchecked."""


def _check_payload(kind: str, part: Mapping[str, Any]) -> None:
    payload = part.get(kind)
    if kind == "text":
        if not isinstance(payload, str):
            raise TypeError("Message text part needs a str 'text'")
    elif kind == "image_url":
        url = payload.get("url") if isinstance(payload, Mapping) else payload
        if not isinstance(url, str):
            raise TypeError("Message image_url part needs a str url")
    elif kind == "input_audio":
        if not (isinstance(payload, Mapping) and isinstance(payload.get("data"), str)):
            raise TypeError("Message input_audio part needs a mapping with str 'data'")
    elif not isinstance(payload, Mapping):
        raise TypeError("Message file part needs a 'file' mapping")


def _part(part: object) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        raise TypeError("Message content parts must be mappings")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise TypeError("Message content part needs a str 'type'")
    if kind in PART_KINDS:
        _check_payload(kind, part)
    return dict(part)


def parse_content(content: object) -> str | list[dict[str, Any]] | None:
    """``content`` as ``Message`` holds it: a str, None, or a list of content-part dicts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return [_part(part) for part in content]
    raise TypeError("Message content must be a str, None or a list of content parts")

"""OpenAI/LiteLLM content parts as the GenAI conventions' message parts.

``image_url`` becomes a ``uri`` part (modality ``image``), or a ``blob`` part when its URL is
a ``data:`` URL; ``input_audio`` a ``blob`` (``audio``); ``file`` a ``file`` part by its
``file_id``, or a ``blob`` of its ``file_data``. A part with a ``text`` is a ``text`` part;
any other kind keeps its ``type`` alone (a generic part: its payload is not known to be
safe or small). Inline data is cut to the capture budget here, by one bounded slice: a 20 MB
image costs what the budget allows, never a copy of the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_otel._guard import reads_values
from agent_otel._plain import get

reads_values(__name__)  # its reads run the agent's code: what that raises is the agent's

_HEADER = 256  # how far a data: URL's comma is looked for (its media type comes before)
_MEDIA = frozenset({"image", "audio", "video"})
_AUDIO = {"mp3": "audio/mpeg", "wav": "audio/wav"}


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]``, whichever the shape offers."""
    if isinstance(obj, Mapping):  # a dict subclass's own get never runs
        return get(obj, name, default)
    return getattr(obj, name, default)


def _modality(mime: str | None) -> str:
    """The conventions' modality for a MIME type: image/audio/video, else ``document``."""
    major = mime.partition("/")[0] if mime else ""
    return major if major in _MEDIA else "document"


def _blob(modality: str, mime: str | None, data: str, start: int, budget: int) -> dict[str, Any]:
    # One char over the budget: the capture then sees it cannot fit and marks the cut.
    part: dict[str, Any] = {"type": "blob", "modality": modality}
    if mime:
        part["mime_type"] = mime
    part["content"] = data[start : start + budget + 1]
    return part


def _data_url(url: str, modality: str | None, budget: int) -> dict[str, Any] | None:
    """A ``data:<mime>[;base64],<data>`` URL as a blob part; None when ``url`` is not one."""
    if not url.startswith("data:"):
        return None
    comma = url.find(",", 5, _HEADER)
    if comma < 0:
        return None
    mime = url[5:comma].partition(";")[0] or None
    return _blob(modality or _modality(mime), mime, url, comma + 1, budget)


def _media(kind: Any, block: Any, budget: int) -> dict[str, Any] | None:
    if kind == "image_url":
        image = field(block, "image_url")
        url = image if isinstance(image, str) else field(image, "url")
        if isinstance(url, str):
            uri = {"type": "uri", "modality": "image", "uri": url}
            return _data_url(url, "image", budget) or uri
    elif kind == "input_audio":
        audio = field(block, "input_audio")
        data, fmt = field(audio, "data"), field(audio, "format")
        if isinstance(data, str):
            mime = _AUDIO.get(fmt, f"audio/{fmt}") if isinstance(fmt, str) and fmt else None
            return _blob("audio", mime, data, 0, budget)
    elif kind == "file":
        file = field(block, "file")
        file_id, data = field(file, "file_id"), field(file, "file_data")
        if isinstance(file_id, str):
            return {"type": "file", "modality": "document", "file_id": file_id}
        if isinstance(data, str):
            return _data_url(data, None, budget) or _blob("document", None, data, 0, budget)
    return None


def content_part(block: Any, budget: int) -> dict[str, Any]:
    """One content part (a dict, or an object with the same fields) as a message part."""
    kind = field(block, "type")
    part = _media(kind, block, budget)
    if part is not None:
        return part
    text = field(block, "text")
    if isinstance(text, str):
        return {"type": "text", "content": text}
    return {"type": kind if isinstance(kind, str) and kind else "unknown"}

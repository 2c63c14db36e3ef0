"""Content parts as the Responses API and Anthropic's Messages API take them: one table each.

``Message.content`` may hold OpenAI/LiteLLM content parts (``agent_contract._parts``), which
Chat Completions and LiteLLM take as they are. The other two APIs name them otherwise (their
SDKs' request types, ``openai.types.responses`` and ``anthropic.types``), so an SDK source
sends each Chat part in its target's form, by the target's table:

* ``text``: the Responses ``input_text`` (an assistant's ``output_text``), Anthropic's
  ``text`` (the part as given);
* ``image_url``: ``input_image`` (no form in a Responses assistant message), Anthropic's
  ``image`` with a ``base64`` source (a ``data:`` URL's media type and data) or a ``url`` one;
* ``file``: ``input_file`` (no form in a Responses assistant message), Anthropic's
  ``document`` with a PDF's ``base64`` source, a plain text's ``text`` one or a file id's
  ``file`` one, the filename its ``title``;
* ``input_audio``: no form in either (the Responses input types hold no audio);
* ``refusal``: ``input_text`` (an assistant's ``refusal``, as given), Anthropic's ``text``.

A system message goes as text (Anthropic's ``system``, the Responses ``instructions``): its
text and refusal parts' texts, joined. The rules, for every target:

* a Chat part the target has no form for goes as a text part saying so (``mark``): the turn
  keeps its place and is never empty, and the model reads that something was there; the
  request tells it by one ``Error`` (``untranslatable_part``, not fatal) after its
  ``LLMCallStart``, which the recorder counts as a repair (``agent_otel.anomalies``);
* a part of any other kind (the target's own, an Anthropic ``image`` block with
  ``cache_control``), a part that is no mapping, and a Chat part whose payload is not what its
  kind holds (an ``image_url`` with no str URL) go as given: the SDK's or the API's to take
  or refuse, as it does for the same part given to it directly; nothing here raises;
* a tool's result is parts when it is a list of mappings with a str ``type``; any other list
  goes as it went before (the Responses API's JSON text, Anthropic's content as given).

Strings are read as the plain ``str`` they are (a subclass's own methods never run) and a
mapping that is a ``dict`` by ``dict``'s own ``get``; an inline payload is shared where the
target takes it whole, and copied once where it takes the data apart from its ``data:`` head.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from agent_contract._parts import PART_KINDS
from agent_contract.events import Error, Message
from agent_contract.sources._turns import fields

__all__ = [
    "ANTHROPIC",
    "RESPONSES_ASSISTANT",
    "RESPONSES_INPUT",
    "UNTRANSLATABLE_PART",
    "Target",
    "is_parts",
    "mark",
    "sent_parts",
    "system_text",
    "untranslated",
]

UNTRANSLATABLE_PART = "untranslatable_part"
"""The ``error_type`` of the ``Error`` a request tells when a part of it went as ``mark``."""
_UNTRANSLATED = (
    "a content part of the request's history has no form in this API (audio; an image or a "
    "file in a Responses assistant message; a system message's part of no text): sent as a "
    "text part saying so"
)
_KINDS = PART_KINDS | {"refusal"}

Block = Any
Form = Callable[[Mapping[str, Any]], Block]
"""A part's block in its target's form, or None when the part holds no payload of its kind."""


class Target:
    """One API's table: each Chat kind's form (a kind absent has none) and its text part."""

    __slots__ = ("forms", "text")

    def __init__(self, forms: Mapping[str, Form], text: Callable[[str], Block]) -> None:
        self.forms = forms
        self.text = text


def mark(kind: str) -> str:
    """The text a part of ``kind`` (a Chat kind, or ``non-text``) goes as where its target has
    no form for it."""
    return f"[{kind} part not sent: this API has no form for it]"


def untranslated() -> Error:
    """The ``Error`` told after a request's ``LLMCallStart`` when a part of it went as ``mark``:
    counted as a repair, not a failure."""
    return Error(message=_UNTRANSLATED, error_type=UNTRANSLATABLE_PART)


def sent_parts(content: list[Any], target: Target) -> tuple[list[Any], bool]:
    """``content``'s parts in ``target``'s form, in order, and whether one went as ``mark``."""
    out: list[Any] = []
    marked = False
    for part in list.__iter__(content):
        block, kind = _sent(part, target)
        out.append(block)
        marked = marked or kind is not None
    return out, marked


def _sent(part: Any, target: Target) -> tuple[Any, str | None]:
    """``part`` in ``target``'s form, and its kind when it went as ``mark``."""
    try:
        kind = _kind(part)
        if kind not in _KINDS:
            return part, None
        form = target.forms.get(kind)
        if form is None:
            return target.text(mark(kind)), kind
        block = form(part)
    except Exception:  # the agent's own part raising when read: it goes as given
        return part, None
    return (part if block is None else block), None


def is_parts(content: Any) -> bool:
    """Whether ``content`` is a list of parts: mappings, each with a str ``type``."""
    try:
        return isinstance(content, list) and all(
            isinstance(_kind(part), str) for part in list.__iter__(content)
        )
    except Exception:  # a part raising when read: no parts
        return False


def system_text(messages: list[Message]) -> tuple[str | None, bool]:
    """The system messages' texts joined by blank lines (None: no such text), for an API that
    takes them apart from the turns (Anthropic's ``system``, the Responses ``instructions``),
    and whether a part went as ``mark``: a message of parts gives its text and refusal parts'
    texts, any other part its mark."""
    texts: list[str] = []
    marked = False
    for m in messages:
        role, content, _ = fields(m)
        if role != "system":
            continue
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in list.__iter__(content):
                text, kind = _sent(part, _SYSTEM)
                if not isinstance(text, str):  # a part of no text: its mark
                    text, kind = mark(_kind_named(part)), "non-text"
                texts.append(text)
                marked = marked or kind is not None
    return "\n\n".join(texts) or None, marked


def _kind_named(part: Any) -> str:
    try:
        kind = _kind(part)
    except Exception:
        kind = None
    return kind if kind in _KINDS else "non-text"


def _kind(part: Any) -> str | None:
    return _str(_get(part, "type")) if isinstance(part, Mapping) else None


def _get(mapping: Any, key: str) -> Any:
    """``mapping[key]`` or None; a ``dict`` (a subclass too) by ``dict``'s own ``get``."""
    if isinstance(mapping, dict):
        return dict.get(mapping, key)
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _str(value: Any) -> str | None:
    """``value`` as the plain ``str`` it is (the same object when it is one), else None."""
    return str.__str__(value) if isinstance(value, str) else None


def _field(part: Mapping[str, Any], kind: str, key: str) -> str | None:
    return _str(_get(_get(part, kind), key))


def _image_url(part: Mapping[str, Any]) -> str | None:
    """An ``image_url`` part's URL: the payload's ``url``, or the payload when it is a str."""
    payload = _get(part, "image_url")
    return _str(payload) if isinstance(payload, str) else _str(_get(payload, "url"))


def _inline(url: str) -> tuple[str, str] | None:
    """A base64 ``data:`` URL's media type (``text/plain`` when it names none, RFC 2397) and
    data; None for any other URL."""
    if not url.startswith("data:"):
        return None
    comma = url.find(",")
    if comma < 0:
        return None
    head = url[5:comma].split(";")
    if len(head) < 2 or head[-1].strip().lower() != "base64":
        return None
    return head[0].strip().lower() or "text/plain", url[comma + 1 :]


def _decoded(data: str) -> str | None:
    """Base64 ``data`` as UTF-8 text, None when it is neither."""
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except ValueError:
        return None


# --- Anthropic ---------------------------------------------------------------------------------
def _anthropic_text(part: Mapping[str, Any]) -> Block:
    return part if isinstance(_get(part, "text"), str) else None


def _anthropic_refusal(part: Mapping[str, Any]) -> Block:
    text = _str(_get(part, "refusal"))
    return None if text is None else {"type": "text", "text": text}


def _anthropic_image(part: Mapping[str, Any]) -> Block:
    url = _image_url(part)
    if url is None:
        return None
    inline = _inline(url)
    if inline is None:
        return {"type": "image", "source": {"type": "url", "url": url}}
    media, data = inline
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def _anthropic_document(part: Mapping[str, Any]) -> Block:
    file_id = _field(part, "file", "file_id")
    data = _field(part, "file", "file_data")
    if file_id is not None:
        source: dict[str, Any] = {"type": "file", "file_id": file_id}
    elif data is not None:
        media, data = _inline(data) or ("application/pdf", data)  # bare base64: a PDF's
        text = _decoded(data) if media == "text/plain" else None
        source = (
            {"type": "base64", "media_type": media, "data": data}
            if text is None
            else {"type": "text", "media_type": media, "data": text}
        )
    else:
        return None
    block = {"type": "document", "source": source}
    title = _field(part, "file", "filename")
    if title is not None:
        block["title"] = title
    return block


ANTHROPIC = Target(
    {
        "text": _anthropic_text,
        "refusal": _anthropic_refusal,
        "image_url": _anthropic_image,
        "file": _anthropic_document,
    },
    lambda text: {"type": "text", "text": text},
)
"""Anthropic's content blocks (``anthropic.types.ContentBlockParam``; a ``tool_result``'s
``content`` takes the same text, image and document blocks)."""


# --- the Responses API -------------------------------------------------------------------------
def _input_text(key: str) -> Form:
    def form(part: Mapping[str, Any]) -> Block:
        text = _str(_get(part, key))
        return None if text is None else {"type": "input_text", "text": text}

    return form


def _input_image(part: Mapping[str, Any]) -> Block:
    url = _image_url(part)
    if url is None:
        return None
    detail = _str(_get(_get(part, "image_url"), "detail")) or "auto"  # required in a message
    return {"type": "input_image", "image_url": url, "detail": detail}


def _input_file(part: Mapping[str, Any]) -> Block:
    fields = {key: _field(part, "file", key) for key in ("file_id", "file_data", "filename")}
    if fields["file_id"] is None and fields["file_data"] is None:
        return None
    return {"type": "input_file", **{k: v for k, v in fields.items() if v is not None}}


def _output_text(part: Mapping[str, Any]) -> Block:
    text = _str(_get(part, "text"))
    return None if text is None else {"type": "output_text", "text": text, "annotations": []}


def _output_refusal(part: Mapping[str, Any]) -> Block:
    text = _str(_get(part, "refusal"))
    return None if text is None else {"type": "refusal", "refusal": text}


RESPONSES_INPUT = Target(
    {
        "text": _input_text("text"),
        "refusal": _input_text("refusal"),
        "image_url": _input_image,
        "file": _input_file,
    },
    lambda text: {"type": "input_text", "text": text},
)
"""A Responses user message's parts (``ResponseInputContentParam``), and a
``function_call_output``'s list (``ResponseFunctionCallOutputItemParam``)."""

RESPONSES_ASSISTANT = Target(
    {"text": _output_text, "refusal": _output_refusal},
    lambda text: {"type": "output_text", "text": text, "annotations": []},
)
"""A Responses assistant message's parts: what the model said (``ResponseOutputTextParam``,
``ResponseOutputRefusalParam``)."""

_SYSTEM = Target(
    {"text": lambda part: _str(_get(part, "text")), "refusal": lambda p: _str(_get(p, "refusal"))},
    lambda text: text,
)
"""A system message's parts, as the text the two APIs take for it."""

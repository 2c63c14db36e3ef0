"""Content parts in the history an SDK source builds its request from, as the real SDKs send
them over their mock transports.

``Message.content`` may be a list of OpenAI/LiteLLM content parts (``text``, ``image_url``,
``input_audio``, ``file``; an assistant's ``refusal``). The Responses API and Anthropic's
Messages API take other shapes (their SDKs' request types): the Responses API
``input_text``, ``input_image`` (``detail`` required in a message), ``input_file`` in a user
or system message and a ``function_call_output``'s list, ``output_text`` (with its
``annotations``) and ``refusal`` in an assistant's; Anthropic ``text``, ``image`` with a
``base64`` source (a ``data:`` URL's media type and data) or a ``url`` one, ``document``
(a PDF's base64 source, a plain text's ``text`` source, a file id's ``file`` source; the
filename its ``title``), ``system`` text alone. A part the target has no form for (audio
anywhere, an image or a file in a Responses assistant message, anything but text in a system
message) goes as a text part saying so, and the request tells it by one ``Error``
(``untranslatable_part``, not fatal) after its ``LLMCallStart``, counted (docs/hostile.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import Error, FunctionCall, LLMCallEnd, LLMCallStart, Message, ToolCall
from agent_otel import otel_wrapper
from hostile_types import LyingDict, LyingStr, NoStr, Unreadable
from otlp_check import Exported

from . import _recorded
from ._http import anthropic_client, openai_client, sse

pytest.importorskip("openai")
pytest.importorskip("anthropic")

PNG = "iVBORw0KGgo="
PDF = "JVBERi0xLjQK"
NOTE = "aGVsbG8gd29ybGQ="  # "hello world", base64
LINK = "https://example.com/cat.png"

PARTS: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "text": "Look."},
    "inline image": {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
    },
    "linked image": {"type": "image_url", "image_url": {"url": LINK}},
    "image as a string": {"type": "image_url", "image_url": LINK},
    "audio": {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    "pdf": {
        "type": "file",
        "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "a.pdf"},
    },
    "plain text file": {"type": "file", "file": {"file_data": f"data:text/plain;base64,{NOTE}"}},
    "file id": {"type": "file", "file": {"file_id": "file-abc"}},
    "refusal": {"type": "refusal", "refusal": "I can't."},
}


def _mark(kind: str) -> str:
    """The text a part goes as where its target has no form for it (docs/hostile.md)."""
    return f"[{kind} part not sent: this API has no form for it]"


def _image(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image", "source": source}


ANTHROPIC: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "text": "Look."},
    "inline image": _image({"type": "base64", "media_type": "image/png", "data": PNG}),
    "linked image": _image({"type": "url", "url": LINK}),
    "image as a string": _image({"type": "url", "url": LINK}),
    "audio": {"type": "text", "text": _mark("input_audio")},
    "pdf": {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        "title": "a.pdf",
    },
    "plain text file": {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hello world"},
    },
    "file id": {"type": "document", "source": {"type": "file", "file_id": "file-abc"}},
    "refusal": {"type": "text", "text": "I can't."},
}
_PDF_PART = {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}"}
RESPONSES_INPUT: dict[str, dict[str, Any]] = {
    "text": {"type": "input_text", "text": "Look."},
    "inline image": {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG}",
        "detail": "low",
    },
    "linked image": {"type": "input_image", "image_url": LINK, "detail": "auto"},
    "image as a string": {"type": "input_image", "image_url": LINK, "detail": "auto"},
    "audio": {"type": "input_text", "text": _mark("input_audio")},
    "pdf": _PDF_PART | {"filename": "a.pdf"},
    "plain text file": {"type": "input_file", "file_data": f"data:text/plain;base64,{NOTE}"},
    "file id": {"type": "input_file", "file_id": "file-abc"},
    "refusal": {"type": "input_text", "text": "I can't."},
}


def _said(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


RESPONSES_ASSISTANT: dict[str, dict[str, Any]] = {
    "text": _said("Look."),
    "inline image": _said(_mark("image_url")),
    "linked image": _said(_mark("image_url")),
    "image as a string": _said(_mark("image_url")),
    "audio": _said(_mark("input_audio")),
    "pdf": _said(_mark("file")),
    "plain text file": _said(_mark("file")),
    "file id": _said(_mark("file")),
    "refusal": {"type": "refusal", "refusal": "I can't."},
}
SYSTEM: dict[str, str] = {
    name: "Look." if name == "text" else "I can't." if name == "refusal" else _mark(part["type"])
    for name, part in PARTS.items()
}
UNSENT = {  # the parts each target has no form for: told and counted
    "anthropic": {"audio"},
    "responses": {"audio"},
    "responses assistant": set(PARTS) - {"text", "refusal"},
    "system": set(PARTS) - {"text", "refusal"},
}


def _history(role: str, part: dict[str, Any]) -> list[Message]:
    """A history with ``part`` in a message of ``role`` (a tool result's for ``tool``)."""
    call = ToolCall(id="c1", function=FunctionCall("look", "{}"))
    content = [dict(part)]
    return [
        Message(role="system", content=content if role == "system" else "Be brief."),
        Message(role="user", content=content if role == "user" else "Look?"),
        Message(role="assistant", content=content if role == "assistant" else None,
                tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=content if role == "tool" else "done"),
    ]  # fmt: skip


async def _anthropic(history: list[Message]) -> tuple[dict[str, Any], list[Any]]:
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    events = [e async for e in stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)]
    [request] = seen
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "end_turn"
    return json.loads(request.content), events


async def _responses(history: list[Message]) -> tuple[dict[str, Any], list[Any]]:
    from agent_contract.sources.openai_responses import stream_responses

    seen: list[Any] = []
    client = openai_client(sse(_recorded.responses(tools=False)), seen=seen)
    events = [e async for e in stream_responses(client, history, "gpt-5-mini")]
    [request] = seen
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "completed"
    return json.loads(request.content), events


def _told(events: list[Any], unsent: bool) -> None:
    """One ``untranslatable_part`` Error right after the start when a part was not sent."""
    errors = [e for e in events if isinstance(e, Error)]
    if not unsent:
        assert errors == []
        return
    [told] = errors
    assert isinstance(events[0], LLMCallStart) and events[1] is told
    assert told.error_type == "untranslatable_part" and told.fatal is not True


def _valid(adapter_type: Any, block: Any) -> None:
    """``block`` is what the SDK's request type for its slot documents."""
    import pydantic

    pydantic.TypeAdapter(adapter_type).validate_python(block)


@pytest.mark.parametrize("name", list(PARTS))
@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
async def test_a_content_part_goes_to_anthropic_as_its_block(role: str, name: str) -> None:
    from anthropic.types import ContentBlockParam
    from anthropic.types.tool_result_block_param import Content

    body, events = await _anthropic(_history(role, PARTS[name]))

    turns = body["messages"]
    if role == "user":
        assert turns[0] == {"role": "user", "content": [ANTHROPIC[name]]}
    elif role == "assistant":
        call = {"type": "tool_use", "id": "c1", "name": "look", "input": {}}
        assert turns[1] == {"role": "assistant", "content": [ANTHROPIC[name], call]}
    else:
        result = {"type": "tool_result", "tool_use_id": "c1", "content": [ANTHROPIC[name]]}
        assert turns[2] == {"role": "user", "content": [result]}
    _valid(Content if role == "tool" else ContentBlockParam, ANTHROPIC[name])
    _told(events, name in UNSENT["anthropic"])


@pytest.mark.parametrize("name", list(PARTS))
@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
async def test_a_content_part_goes_to_the_responses_api_as_its_item(role: str, name: str) -> None:
    from openai.types.responses import (
        ResponseFunctionCallOutputItemParam,
        ResponseInputContentParam,
        ResponseOutputRefusalParam,
        ResponseOutputTextParam,
    )

    body, events = await _responses(_history(role, PARTS[name]))

    items = body["input"]
    if role == "user":
        assert items[0] == {"role": "user", "content": [RESPONSES_INPUT[name]]}
        _valid(ResponseInputContentParam, RESPONSES_INPUT[name])
    elif role == "assistant":
        assert items[1] == {"role": "assistant", "content": [RESPONSES_ASSISTANT[name]]}
        _valid(ResponseOutputTextParam | ResponseOutputRefusalParam, RESPONSES_ASSISTANT[name])
    else:
        output = [RESPONSES_INPUT[name]]
        assert items[-1] == {"type": "function_call_output", "call_id": "c1", "output": output}
        _valid(ResponseFunctionCallOutputItemParam, RESPONSES_INPUT[name])
    table = "responses assistant" if role == "assistant" else "responses"
    _told(events, name in UNSENT[table])


@pytest.mark.parametrize("name", list(PARTS))
@pytest.mark.parametrize("target", ["anthropic", "responses"])
async def test_a_system_message_of_parts_is_the_system_text(target: str, name: str) -> None:
    """Anthropic's ``system`` and the Responses ``instructions`` hold text alone: a system
    message of parts gives its texts (and the mark of a part of no text), never lost."""
    history = _history("system", PARTS[name])
    if target == "anthropic":
        body, events = await _anthropic(history)
        system = body["system"]
    else:
        body, events = await _responses(history)
        system = body["instructions"]

    assert system == SYSTEM[name]
    _told(events, name in UNSENT["system"])


async def test_parts_and_text_in_one_message_keep_their_order_and_provider_blocks() -> None:
    """A part of the target's own shape (an Anthropic ``image`` block with ``cache_control``)
    is the agent's: it goes as given, beside the translated ones, in order."""
    own = {"type": "image", "source": {"type": "url", "url": LINK}, "cache_control": {
        "type": "ephemeral"}}  # fmt: skip
    history = [Message(role="user", content=[PARTS["text"], own, PARTS["linked image"]])]

    body, events = await _anthropic(history)

    assert body["messages"] == [
        {"role": "user", "content": [ANTHROPIC["text"], own, ANTHROPIC["linked image"]]}
    ]
    _told(events, unsent=False)


async def test_a_part_not_sent_is_counted_once_per_request_on_the_run() -> None:
    history = [Message(role="user", content=[PARTS["audio"], PARTS["text"], PARTS["audio"]])]
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    with Exported() as telemetry:
        wrapper = otel_wrapper(**telemetry.providers())
        source = stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)
        events = [e async for e in wrapper(source)]
    telemetry.assert_encodes()

    _told(events, unsent=True)
    run = telemetry.span("invoke_agent")
    assert run.attributes is not None
    assert run.attributes["agent_otel.anomalies"] == 1
    assert run.attributes["agent_otel.anomaly.kinds"] == ("untranslatable_part",)
    assert telemetry.span("chat claude-sonnet-4-5").status.is_ok


# --- any parts: the request is built, never our exception -----------------------------------------
_TEXTS = st.text(max_size=6) | st.builds(LyingStr, st.text(max_size=6))
_ODD = st.none() | st.integers() | st.binary(max_size=3) | st.builds(NoStr) | st.builds(Unreadable)
_PAYLOADS = _TEXTS | _ODD | st.dictionaries(st.sampled_from(["url", "data", "file_data",
    "file_id", "filename", "detail", "format"]), _TEXTS | _ODD, max_size=3)  # fmt: skip
_KINDS = st.sampled_from(["text", "image_url", "input_audio", "file", "refusal", "image", "x"])
_PART = st.builds(
    lambda kind, payload, lying: (LyingDict if lying else dict)(
        {"type": kind, kind: payload, "text": payload}
    ),
    _KINDS,
    _PAYLOADS | st.sampled_from([f"data:image/png;base64,{PNG}", "data:", "data:,x",
                                 f"data:text/plain;base64,{PNG}!", "data:;base64,@@"]),
    st.booleans(),
)  # fmt: skip
_CONTENT = st.lists(_PART | st.sampled_from(list(PARTS.values())) | _ODD, max_size=4)


@settings(max_examples=80, deadline=None)
@given(content=_CONTENT, role=st.sampled_from(["system", "user", "assistant", "tool"]))
def test_any_parts_build_a_request_and_every_chat_part_is_translated(
    content: list[Any], role: str
) -> None:
    """Whatever parts a message holds, building either request never raises nor changes the
    agent's history; a well-formed Chat part goes in its target's form, in its place."""
    from agent_contract.sources.anthropic_messages import anthropic_input
    from agent_contract.sources.openai_responses import response_input

    history = _history(role, {})
    history[["system", "user", "assistant", "tool"].index(role)].content = content
    given = list(content)

    system, turns = anthropic_input(history)
    instructions, items = response_input(history)

    assert len(content) == len(given)  # the agent's history untouched
    assert all(a is b for a, b in zip(content, given, strict=True))

    if not content:  # nothing to send: built all the same
        return
    if role == "system":
        assert system == instructions  # one text for both: the texts, the marks
        assert system is None or isinstance(system, str)
        return
    if role == "user":
        sent = [(turns[0]["content"], ANTHROPIC), (items[0]["content"], RESPONSES_INPUT)]
    elif role == "assistant":
        sent = [(turns[1]["content"][:-1], ANTHROPIC), (items[1]["content"], RESPONSES_ASSISTANT)]
    elif all(isinstance(part, dict) for part in content):  # a tool's result of parts
        sent = [
            (turns[2]["content"][0]["content"], ANTHROPIC),
            (items[-1]["output"], RESPONSES_INPUT),
        ]
    else:  # a tool's result that is no parts: as it went before (given; JSON text)
        assert turns[2]["content"][0]["content"] is content
        assert isinstance(items[-1]["output"], str)
        return
    names = {id(part): name for name, part in PARTS.items()}
    for blocks, table in sent:
        assert len(blocks) == len(content)
        for part, block in zip(content, blocks, strict=True):
            if id(part) in names:
                assert block == table[names[id(part)]]

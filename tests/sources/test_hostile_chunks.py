"""Chunks of no shape the source reads, from a real SDK over its mock transport.

The OpenAI SDK builds each chunk without validating it (``construct``), so whatever an
OpenAI-compatible server sends reaches the reader: ``null`` where a choice or tool-call delta
goes, a tool call's ``index`` that is a bool, its ``arguments`` an object, not a string. The
agent consuming the source keeps its stream: an unreadable chunk is skipped and told (an
``Error``, ``unreadable_chunk``, not fatal, counted under ``agent_otel.anomalies``), the
chunks before and after it are read, and the SDK's own exceptions still come out as they are.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agent_contract.protocol import AgentEvent, Error, LLMCallEnd, TextDelta, ToolCall
from agent_otel import otel_wrapper
from otlp_check import Exported

from ._http import openai_client

pytest.importorskip("openai")

_HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def _body(*choices: Any) -> bytes:
    lines = [f"data: {json.dumps({**_HEAD, 'choices': c})}\n\n" for c in choices]
    return "".join(lines).encode()


def _choice(delta: Any, finish: str | None = None) -> list[Any]:
    return [{"index": 0, "delta": delta, "finish_reason": finish}]


async def _events(body: bytes) -> list[AgentEvent]:
    from agent_contract.sources.openai_chat import stream_chat

    client = openai_client(body)
    return [e async for e in stream_chat(client, [], "m")]


async def test_an_unreadable_chunk_is_skipped_and_told_the_rest_is_read() -> None:
    body = _body(
        _choice({"content": "Hel"}),
        [None],  # a choice that is null
        _choice({"content": "lo"}),
        _choice({}, "stop"),
    )
    events = await _events(body)

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    errors = [e for e in events if isinstance(e, Error)]
    assert [(e.error_type, e.fatal) for e in errors] == [("unreadable_chunk", False)]
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "stop"


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        # a bool is no index: True is not the call at index 1
        (
            [
                [{"index": 1, "id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}}],
                [{"index": True, "id": "b", "function": {"name": "g", "arguments": "{}"}}],
            ],
            [("a", "f", '{"x": 1}'), ("b", "g", "{}")],
        ),
        # arguments sent as the JSON object they are: written as its JSON text
        (
            [[{"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]],
            [("a", "f", '{"x": 1}')],
        ),
        # ... holding a NaN (the SDK reads the server's NaN): written by the adapters' rule
        (
            [[{"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": math.nan}}}]],
            [("a", "f", '{"x": null}')],
        ),
        # a null among the deltas, an id that is a list: the others are read
        (
            [
                [None, {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}],
                [{"id": ["b"], "function": {"name": "g", "arguments": "{}"}}],
            ],
            [("a", "f", "{}"), (["b"], "g", "{}")],
        ),
    ],
)
async def test_odd_tool_call_deltas_assemble_each_call(
    calls: list[list[Any]], expected: list[tuple[Any, str, str]]
) -> None:
    body = _body(*(_choice({"tool_calls": c}) for c in calls), _choice({}, "tool_calls"))
    events = await _events(body)

    tools = [e for e in events if isinstance(e, ToolCall)]
    assert [(t.id, t.function.name, t.function.arguments) for t in tools] == expected
    assert not [e for e in events if isinstance(e, Error)]


async def test_an_unreadable_chunk_is_counted_on_the_traced_run() -> None:
    from agent_contract.sources.openai_chat import stream_chat

    body = _body(_choice({"content": "Hi"}), [None], _choice({}, "stop"))
    with Exported() as telemetry:
        wrapper = otel_wrapper(**telemetry.providers())
        source = stream_chat(openai_client(body), [], "m")
        events = [e async for e in wrapper(source)]
    telemetry.assert_encodes()

    assert [type(e).__name__ for e in events] == [
        "EndpointCallStart",  # an LLMCallStart naming its server
        "TextDelta",
        "Error",
        "LLMCallEnd",
    ]
    run = telemetry.span("invoke_agent")
    assert run.attributes is not None
    assert run.attributes["agent_otel.anomalies"] == 1
    assert run.attributes["agent_otel.anomaly.kinds"] == ("unreadable_chunk",)
    chat = telemetry.span("chat m")
    assert chat.attributes is not None and chat.attributes["error.type"] == "unreadable_chunk"


async def test_the_sdks_own_exception_still_comes_out_as_itself() -> None:
    from agent_contract.sources._stream import read_stream
    from agent_contract.sources.openai_chat import ChatCompletionsReader

    failure = RuntimeError("connection reset")

    async def chunks() -> Any:
        yield None  # unreadable: skipped
        raise failure

    start = (await _events(_body(_choice({}, "stop"))))[0]
    with pytest.raises(RuntimeError) as caught:
        [e async for e in read_stream(start, chunks, ChatCompletionsReader())]  # type: ignore[arg-type]
    assert caught.value is failure


@pytest.mark.parametrize("usage", ["12 tokens", 5, [1, 2]])
async def test_a_usage_that_is_no_object_reports_no_counts(usage: Any) -> None:
    head = {**_HEAD, "choices": []}
    body = _body(_choice({"content": "Hi"}, "stop")) + _body()
    body += f"data: {json.dumps({**head, 'usage': usage})}\n\n".encode()
    events = await _events(body)

    counts = [e for e in events if type(e).__name__ == "Usage"]
    assert [(u.input_tokens, u.output_tokens, u.total_tokens) for u in counts] == [(None,) * 3]
    end = events[-1]
    assert isinstance(end, LLMCallEnd)
    assert (end.model, end.finish_reason, end.response_id) == ("m", "stop", "c1")


async def test_a_reader_failing_at_the_end_still_ends_the_call() -> None:
    """An Anthropic stream cut short inside a tool call whose JSON parts are not text: the
    reader's ``close`` cannot join them; the call still ends, the failure told."""
    pytest.importorskip("anthropic")
    from agent_contract.sources.anthropic_messages import stream_messages

    from ._http import anthropic_client, sse

    usage = {"input_tokens": 3, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
               "content": [], "stop_reason": None, "usage": usage}  # fmt: skip
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    part = {"type": "input_json_delta", "partial_json": 5}  # not text
    raw = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": part},
    ]  # the stream ends there, cut short
    client = anthropic_client(sse(raw, named=True))
    events = [e async for e in stream_messages(client, [], "claude", max_tokens=10)]

    # the prompt's tokens, told as message_start came, are kept
    names = ["EndpointCallStart", "Usage", "Error", "LLMCallEnd"]  # (its start names its server)
    assert [type(e).__name__ for e in events] == names
    assert isinstance(events[2], Error) and events[2].error_type == "unreadable_chunk"


def _split_emoji_streams() -> dict[str, tuple[str, bytes]]:
    """Each SDK source's stream of one tool call whose arguments a server cut between the two
    JSON escapes of one character (U+1F600 is ``\\ud83d\\ude00`` in JSON)."""
    from ._hostile_json import responses_events
    from ._http import sse

    halves = ['{"q": "\ud83d', '\ude00"}']
    call = {"index": 0, "id": "t", "function": {"name": "f", "arguments": halves[0]}}
    chat = [
        _choice({"tool_calls": [call]}),
        _choice({"tool_calls": [{"index": 0, "function": {"arguments": halves[1]}}]}),
        _choice({}, "tool_calls"),
    ]
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
               "content": [], "stop_reason": None, "usage": {"input_tokens": 3}}  # fmt: skip
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    parts = [{"type": "input_json_delta", "partial_json": half} for half in halves]
    anthropic = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        *({"type": "content_block_delta", "index": 0, "delta": part} for part in parts),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]
    # Responses: the item never done, so the call is the deltas joined at the stream's end
    added, delta, _done, completed = responses_events()[2:]
    responses = [
        added,
        *({**delta, "delta": half} for half in halves),
        completed,
    ]
    return {
        "chat": ("m", _body(*(c for c in chat))),
        "anthropic": ("claude", sse(anthropic, named=True)),
        "responses": ("m", sse(responses, named=True)),
    }


@pytest.mark.parametrize("kind", ["chat", "anthropic", "responses"])
async def test_a_character_split_between_two_chunks_reaches_the_tool_whole(kind: str) -> None:
    pytest.importorskip("anthropic")
    from agent_contract.sources.anthropic_messages import stream_messages
    from agent_contract.sources.openai_chat import stream_chat
    from agent_contract.sources.openai_responses import stream_responses

    from ._http import anthropic_client

    model, body = _split_emoji_streams()[kind]
    if kind == "chat":
        source = stream_chat(openai_client(body), [], model)
    elif kind == "responses":
        source = stream_responses(openai_client(body), [], model)
    else:
        source = stream_messages(anthropic_client(body), [], model, max_tokens=10)
    with Exported() as telemetry:
        wrapper = otel_wrapper(**telemetry.providers(), capture_content=True)
        events = [e async for e in wrapper(source)]
    telemetry.assert_encodes()

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    # what the SDK's JSON reading gives for the arguments sent whole: the character
    assert json.loads(call.function.arguments) == {"q": "\U0001f600"}
    assert not [e for e in events if isinstance(e, Error)]
    tool = telemetry.span("execute_tool f")
    assert tool.attributes is not None
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"q": "\U0001f600"}
    run = telemetry.span("invoke_agent")
    assert "agent_otel.anomalies" not in (run.attributes or {})


@pytest.mark.parametrize("second", [1, True, 1.0])  # the SDK reads true and 1.0 as 1
async def test_a_tool_block_started_at_an_open_blocks_index_keeps_both_calls(
    second: Any,
) -> None:
    """A server (a proxy translating another API) numbering a second ``tool_use`` block as
    one still open: the first block was overwritten, its call lost with no ``Error``, and
    the deltas of both went to the second. The open block ends where the next one starts."""
    pytest.importorskip("anthropic")
    from agent_contract.sources.anthropic_messages import stream_messages

    from ._http import anthropic_client, sse

    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
               "content": [], "stop_reason": None, "usage": {"input_tokens": 3}}  # fmt: skip

    def start(index: Any, name: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": f"id_{name}", "name": name, "input": {}}
        return {"type": "content_block_start", "index": index, "content_block": block}

    def part(index: Any, text: str) -> dict[str, Any]:
        delta = {"type": "input_json_delta", "partial_json": text}
        return {"type": "content_block_delta", "index": index, "delta": delta}

    raw = [
        {"type": "message_start", "message": message},
        start(1, "a"), part(1, '{"a": 1}'),
        start(second, "b"), part(second, '{"b": 2}'),
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_stop", "index": second},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]  # fmt: skip
    source = stream_messages(anthropic_client(sse(raw, named=True)), [], "claude", max_tokens=9)
    with Exported() as telemetry:
        wrapper = otel_wrapper(**telemetry.providers(), capture_content=True)
        events = [e async for e in wrapper(source)]
    telemetry.assert_encodes()

    calls = [
        (e.id, e.function.name, e.function.arguments) for e in events if isinstance(e, ToolCall)
    ]
    assert calls == [("id_a", "a", '{"a": 1}'), ("id_b", "b", '{"b": 2}')]
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "tool_use"
    assert sorted(s.name for s in telemetry.spans() if s.name.startswith("execute_tool")) == [
        "execute_tool a",
        "execute_tool b",
    ]

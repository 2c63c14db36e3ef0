"""Readers under any chunking: text and tool-call arguments reassemble exactly, in order.

Chunks are built with the SDKs' own models (``model_construct``, as the SDKs' stream parsers
do), split at arbitrary points, parallel calls' deltas interleaved at random.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import AgentEvent, LLMCallEnd, TextDelta, ToolCall

pytest.importorskip("openai")
pytest.importorskip("anthropic")

texts = st.lists(st.text(min_size=1, max_size=8), max_size=6)
arguments = st.lists(
    st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3),
    min_size=1, max_size=3,
).map(lambda calls: [json.dumps(c) for c in calls])  # fmt: skip


def _cuts(data: st.DataObject, text: str) -> list[str]:
    points = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=4)))
    bounds = [0, *[p for p in points if p < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [text]


def _run(reader: Any, chunks: list[Any]) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    for chunk in chunks:
        out.extend(reader.feed(chunk))
    out.extend(reader.close())
    return out


@settings(max_examples=60, deadline=None)
@given(texts=texts, calls=arguments, data=st.data())
def test_chat_completions_chunks_reassemble(
    texts: list[str], calls: list[str], data: st.DataObject
) -> None:
    from openai.types.chat import ChatCompletionChunk

    from agent_contract.sources.openai_chat import ChatCompletionsReader

    def chunk(delta: dict[str, Any]) -> Any:
        raw = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip
        return ChatCompletionChunk.model_validate(raw)

    parts = {i: _cuts(data, args) for i, args in enumerate(calls)}
    # parallel calls interleave at random; one call's deltas keep their order
    turns = data.draw(st.permutations([i for i, cut in parts.items() for _ in cut]))
    chunks = [chunk({"content": t}) for t in texts]
    sent = dict.fromkeys(parts, 0)
    for index in turns:
        part, first = parts[index][sent[index]], sent[index] == 0
        sent[index] += 1
        fn = {"name": "f", "arguments": part} if first else {"arguments": part}
        call = {"index": index, "function": fn} | ({"id": f"id{index}"} if first else {})
        chunks.append(chunk({"tool_calls": [call]}))

    events = _run(ChatCompletionsReader(), chunks)

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(texts)
    tools = [e for e in events if isinstance(e, ToolCall)]
    assert [(t.id, t.function.name, t.function.arguments) for t in tools] == [
        (f"id{i}", "f", args) for i, args in enumerate(calls)
    ]
    assert isinstance(events[-1], LLMCallEnd)


@settings(max_examples=60, deadline=None)
@given(texts=texts, calls=arguments, data=st.data())
def test_anthropic_events_reassemble(
    texts: list[str], calls: list[str], data: st.DataObject
) -> None:
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    from agent_contract.sources.anthropic_messages import MessagesReader

    parse = TypeAdapter(RawMessageStreamEvent).validate_python
    raw: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
          for t in texts),
        {"type": "content_block_stop", "index": 0},
    ]  # fmt: skip
    for i, args in enumerate(calls, 1):
        block = {"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}}
        raw.append({"type": "content_block_start", "index": i, "content_block": block})
        for part in _cuts(data, args):
            delta = {"type": "input_json_delta", "partial_json": part}
            raw.append({"type": "content_block_delta", "index": i, "delta": delta})
        raw.append({"type": "content_block_stop", "index": i})

    events = _run(MessagesReader(), [parse(e) for e in raw])

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(texts)
    tools = [e for e in events if isinstance(e, ToolCall)]
    assert [(t.id, t.function.arguments) for t in tools] == [
        (f"t{i}", args) for i, args in enumerate(calls, 1)
    ]


@settings(max_examples=40, deadline=None)
@given(calls=arguments, done=st.booleans(), data=st.data())
def test_responses_function_calls_reassemble_with_or_without_their_done_item(
    calls: list[str], done: bool, data: st.DataObject
) -> None:
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    from agent_contract.sources.openai_responses import ResponsesReader

    parse = TypeAdapter(ResponseStreamEvent).validate_python
    raw: list[dict[str, Any]] = []
    for n, args in enumerate(calls):
        item = {"id": f"fc{n}", "type": "function_call", "call_id": f"call{n}", "name": "f",
                "arguments": "", "status": "in_progress"}  # fmt: skip
        raw.append({"type": "response.output_item.added", "output_index": n, "item": item,
                    "sequence_number": len(raw)})  # fmt: skip
        for part in _cuts(data, args):
            raw.append({"type": "response.function_call_arguments.delta", "item_id": f"fc{n}",
                        "output_index": n, "delta": part, "sequence_number": len(raw)})  # fmt: skip
        if done:  # a stream cut short has no done items: the reader keeps what arrived
            finished = item | {"arguments": args, "status": "completed"}
            raw.append({"type": "response.output_item.done", "output_index": n, "item": finished,
                        "sequence_number": len(raw)})  # fmt: skip

    events = _run(ResponsesReader(), [parse(e) for e in raw])

    tools = [e for e in events if isinstance(e, ToolCall)]
    assert [(t.id, t.function.arguments) for t in tools] == [
        (f"call{n}", args) for n, args in enumerate(calls)
    ]
    assert isinstance(events[-1], LLMCallEnd)

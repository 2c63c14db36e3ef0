"""Fuzz: the SDK sources fed, through the real SDKs over their mock transport, streams whose
fields Hypothesis replaces with hostile JSON values (``null`` where an object goes, a bool or
huge or negative index, a float or string token count, a huge string, a lone surrogate, an
object where a string goes). On every example:

* nothing raises into the agent consuming the source, traced or not;
* the call still ends (``LLMCallEnd`` last), every ``Error`` the source tells is not fatal;
* every span ends exactly once within its parent, everything exported encodes with the real
  OTLP encoders, and no internal error is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract.protocol import Error, LLMCallEnd
from agent_otel import ContentCapture, otel_wrapper
from otlp_check import Exported, assert_nested_in_time
from test_property import _Records

from ._http import anthropic_client, openai_client, sse

pytest.importorskip("openai")
pytest.importorskip("anthropic")

_VALUES: list[Any] = [None, True, False, 0, -1, 2**63, 2**64, 10**30, 1.5, -0.5, "", "12"]
_VALUES += ["x" * 70_000, "\udc80", "a\ud800b", [], [None], {}, {"a": [1]}, [1, "b"]]
HOSTILE_JSON = st.sampled_from(_VALUES)
_FIXED = frozenset({"type", "object"})  # the discriminators the SDKs parse by

_CHAT_HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def _chat() -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**_CHAT_HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "f", "arguments": '{"a"'}}  # fmt: skip
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
             "prompt_tokens_details": {"cached_tokens": 1},
             "completion_tokens_details": {"reasoning_tokens": 1}}  # fmt: skip
    return [
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo", "reasoning_content": "hm"}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk({}, "tool_calls"),
        {**_CHAT_HEAD, "choices": [], "usage": usage},
    ]


def _responses() -> list[dict[str, Any]]:
    response = {"id": "r1", "object": "response", "created_at": 0, "model": "m",
                "status": "in_progress", "output": [], "usage": None}  # fmt: skip
    item = {"id": "fc1", "type": "function_call", "call_id": "call_1", "name": "f",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
             "input_tokens_details": {"cached_tokens": 1},
             "output_tokens_details": {"reasoning_tokens": 1}}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0,
         "content_index": 0, "delta": "Hello"},
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {"type": "response.function_call_arguments.delta", "item_id": "fc1", "output_index": 1,
         "delta": '{"a": 1}'},
        {"type": "response.output_item.done", "output_index": 1,
         "item": {**item, "arguments": '{"a": 1}', "status": "completed"}},
        {"type": "response.completed",
         "response": {**response, "status": "completed", "usage": usage}},
    ]  # fmt: skip
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _anthropic() -> list[dict[str, Any]]:
    usage = {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
               "content": [], "stop_reason": None, "usage": usage}  # fmt: skip
    tool = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]  # fmt: skip


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside an event a hostile value may go (but the discriminators)."""
    found = [path] if len(path) > 1 else []
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in _FIXED:
                found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _body(events: list[dict[str, Any]], named: bool) -> bytes:
    if named:
        return sse(events, named=True)
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()


def _source(kind: str, body: bytes) -> Any:
    if kind == "chat":
        from agent_contract.sources.openai_chat import stream_chat

        return stream_chat(openai_client(body), [], "m")
    if kind == "responses":
        from agent_contract.sources.openai_responses import stream_responses

        return stream_responses(openai_client(body), [], "m")
    from agent_contract.sources.anthropic_messages import stream_messages

    return stream_messages(anthropic_client(body), [], "claude", max_tokens=10)


_STREAMS: dict[str, tuple[Callable[[], list[dict[str, Any]]], bool]] = {
    "chat": (_chat, False),
    "responses": (_responses, True),
    "anthropic": (_anthropic, True),
}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    kind=st.sampled_from(sorted(_STREAMS)),
    capture=st.sampled_from([False, True, ContentCapture(max_bytes=64)]),
    data=st.data(),
)
def test_hostile_chunks_never_cost_the_agent_a_span_or_a_batch(
    kind: str, capture: Any, data: st.DataObject
) -> None:
    make, named = _STREAMS[kind]
    events = make()
    places = _paths(events)
    for path in data.draw(st.lists(st.sampled_from(places), min_size=1, max_size=3)):
        value = data.draw(HOSTILE_JSON)
        with contextlib.suppress(KeyError, IndexError, TypeError):  # a parent replaced before
            _replace(events, path, value)
    body = _body(events, named)
    exported = Exported()

    async def main() -> list[Any]:
        wrapper = otel_wrapper(**exported.providers(), capture_content=capture)
        return [e async for e in wrapper(_source(kind, body))]

    records, logger = _Records(), logging.getLogger("agent_otel")
    level = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.DEBUG)
    try:
        received = asyncio.run(main())
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)

    assert not records.messages, records.messages
    assert isinstance(received[-1], LLMCallEnd)
    assert all(not e.fatal for e in received if isinstance(e, Error))
    ledger = exported.ledger
    assert ledger.started and not ledger.double_ends
    assert sorted(ledger.ended) == sorted(ledger.started)
    assert_nested_in_time(exported.spans())
    exported.assert_encodes()

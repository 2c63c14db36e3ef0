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
from test_property import records_of

from ._hostile_json import responses_events, spoil
from ._http import anthropic_client, openai_client, sse

pytest.importorskip("openai")
pytest.importorskip("anthropic")

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
    "responses": (responses_events, True),
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
    spoil(data, events)
    body = _body(events, named)
    exported = Exported()

    async def main() -> list[Any]:
        wrapper = otel_wrapper(**exported.providers(), capture_content=capture)
        return [e async for e in wrapper(_source(kind, body))]

    with records_of("agent_otel", logging.DEBUG) as records:
        received = asyncio.run(main())

    assert not records.messages, records.messages
    assert isinstance(received[-1], LLMCallEnd)
    assert all(not e.fatal for e in received if isinstance(e, Error))
    ledger = exported.ledger
    assert ledger.started and not ledger.double_ends
    assert sorted(ledger.ended) == sorted(ledger.started)
    assert_nested_in_time(exported.spans())
    exported.assert_encodes()

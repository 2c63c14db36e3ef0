"""Usage read from providers' own payloads (LlamaIndex, smolagents), SDK objects or dicts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import Usage
from agent_contract.sources._raw_usage import usage_from_raw

counts = st.integers(min_value=0, max_value=10**9)


@settings(deadline=None)  # the SDK's first import is slow
@given(counts, counts, counts, counts)
def test_openai_chat_usage_from_the_sdks_own_chunk(
    prompt: int, made: int, cached: int, thought: int
) -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionChunk

    usage = {"prompt_tokens": prompt, "completion_tokens": made, "total_tokens": prompt + made,
             "prompt_tokens_details": {"cached_tokens": cached},
             "completion_tokens_details": {"reasoning_tokens": thought}}  # fmt: skip
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [], "usage": usage}  # fmt: skip
    for raw in (ChatCompletionChunk.model_validate(chunk), chunk):
        assert usage_from_raw(raw) == Usage(
            input_tokens=prompt, output_tokens=made, total_tokens=prompt + made,
            cache_read_tokens=cached or None, reasoning_tokens=thought or None, model="m",
        )  # fmt: skip


@settings(deadline=None)
@given(counts, counts, counts, counts)
def test_anthropic_input_counts_its_cache_once(fresh: int, read: int, made: int, out: int) -> None:
    pytest.importorskip("anthropic")
    from anthropic.types import RawMessageDeltaEvent

    usage = {"input_tokens": fresh, "cache_read_input_tokens": read,
             "cache_creation_input_tokens": made, "output_tokens": out}  # fmt: skip
    event = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}
    for raw in (RawMessageDeltaEvent.model_validate(event), event):
        got = usage_from_raw(raw)
        assert got is not None
        assert got.input_tokens == fresh + read + made
        assert (got.cache_read_tokens, got.cache_creation_tokens) == (read or None, made or None)
        assert got.output_tokens == out and got.total_tokens == fresh + read + made + out


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "message_start", "message": {"model": "claude", "usage": {
            "input_tokens": 5, "cache_read_input_tokens": 3, "output_tokens": 1}}},
         Usage(input_tokens=8, output_tokens=1, total_tokens=9, cache_read_tokens=3,
               model="claude")),
        ({"type": "response.completed", "response": {"model": "gpt-5", "usage": {
            "input_tokens": 10, "output_tokens": 4, "total_tokens": 14,
            "input_tokens_details": {"cached_tokens": 6},
            "output_tokens_details": {"reasoning_tokens": 2}}}},
         Usage(input_tokens=10, output_tokens=4, total_tokens=14, cache_read_tokens=6,
               reasoning_tokens=2, model="gpt-5")),
        ({"usage_metadata": {"prompt_token_count": 7, "candidates_token_count": 3,
                             "total_token_count": 12, "thoughts_token_count": 2}},
         Usage(input_tokens=7, output_tokens=3, total_tokens=12, reasoning_tokens=2)),
        ({"metadata": {"usage": {"inputTokens": 9, "outputTokens": 2, "totalTokens": 11}}},
         Usage(input_tokens=9, output_tokens=2, total_tokens=11)),
        ({"model": "llama3", "prompt_eval_count": 4, "eval_count": 5},
         Usage(input_tokens=4, output_tokens=5, model="llama3")),
        ({"content": "no usage here"}, None),
        (None, None),
        ({"usage": {"prompt_tokens": "many"}}, None),  # hostile: not a count
    ],
    ids=["anthropic-start", "responses", "gemini", "bedrock", "ollama", "none", "null", "text"],
)  # fmt: skip
def test_each_providers_shape(raw: Any, expected: Usage | None) -> None:
    assert usage_from_raw(raw) == expected


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(st.sampled_from(["usage", "model", "response", "message",
                                                       "metadata", "input_tokens",
                                                       "prompt_tokens", "usage_metadata"]),
                                      kids, max_size=4), max_leaves=12))  # fmt: skip
def test_any_payload_gives_usage_or_none_never_an_exception(raw: Any) -> None:
    got = usage_from_raw(raw)
    assert got is None or isinstance(got, Usage)

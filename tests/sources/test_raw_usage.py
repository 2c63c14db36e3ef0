"""Usage read from providers' own payloads (LlamaIndex, smolagents), SDK objects or dicts."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import Usage
from agent_contract.sources._raw_usage import usage_from_raw
from agent_otel.testing import InMemoryTelemetry, run_script

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
         # the candidates leave the thoughts out (7 + 3 + 2 = 12): reasoning is output
         Usage(input_tokens=7, output_tokens=5, total_tokens=12, reasoning_tokens=2)),
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


NO_COUNT = st.one_of(
    st.integers(max_value=-1),
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda f: not f.is_integer()),
    st.sampled_from([math.nan, -3]),
)


@settings(deadline=None)
@given(counts, counts, counts, NO_COUNT)
def test_an_anthropic_cache_count_that_is_no_count_never_skews_the_input(
    given_in: int, made: int, out: int, bad: Any
) -> None:
    """Anthropic's input is its ``input_tokens`` plus the cache counts: a cache count that is
    no count (negative, a float, NaN) adds nothing to it, and stays on its own field, where
    the recorder drops and counts it."""
    payload = {"input_tokens": given_in, "output_tokens": out,
               "cache_read_input_tokens": bad, "cache_creation_input_tokens": made}  # fmt: skip
    usage = usage_from_raw({"usage": payload})  # a message, as Anthropic sends it
    assert usage is not None
    assert usage.input_tokens == given_in + made
    assert usage.total_tokens == given_in + made + out


@pytest.mark.parametrize("bad", [-5, 2.5, math.nan])
async def test_the_anthropic_source_adds_no_bad_cache_count_to_the_input(
    bad: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip("anthropic")
    from agent_contract.sources.anthropic_messages import stream_messages

    from . import _recorded
    from ._cases import HISTORY
    from ._http import anthropic_client, sse

    events = _recorded.messages(tools=False)
    start = next(e for e in events if e["type"] == "message_start")
    counts_sent = start["message"]["usage"]
    good = counts_sent["input_tokens"] + counts_sent["cache_creation_input_tokens"]
    counts_sent["cache_read_input_tokens"] = bad
    client = anthropic_client(sse(events, named=True))
    source = stream_messages(client, HISTORY, "claude-sonnet-4-5", max_tokens=64)
    seen = await run_script(otel_telemetry, source, agent_name="agent")

    (usage,) = [e for e in seen if isinstance(e, Usage)]
    assert usage.input_tokens == good  # not skewed by the bad count
    (chat,) = [s for s in otel_telemetry.spans() if s.name.startswith("chat ")]
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == good
    assert "gen_ai.usage.cache_read.input_tokens" not in (chat.attributes or {})
    root = otel_telemetry.span("invoke_agent agent")
    assert list((root.attributes or {})["agent_otel.anomaly.kinds"]) == ["invalid_token_count"]  # type: ignore[arg-type]


ANY_COUNT = st.one_of(st.none(), counts, NO_COUNT)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@settings(deadline=None)
@given(ANY_COUNT, ANY_COUNT)
def test_framework_usage_sums_add_counts_only(first: Any, second: Any) -> None:
    """AutoGen's total (prompt + completion) and Google ADK's output (candidates + thoughts)
    are sums the adapters make: a part that is no count never skews them nor raises."""
    from types import SimpleNamespace

    from agent_contract.sources import autogen_stream, google_adk_stream

    out: list[Any] = []
    state = autogen_stream._State(None, {})
    state._close(out, SimpleNamespace(prompt_tokens=first, completion_tokens=second))
    usage = out[0]
    both = _is_count(first) and _is_count(second)
    assert usage.total_tokens == (first + second if both else None)

    gemini = SimpleNamespace(
        candidates_token_count=first, thoughts_token_count=second, prompt_token_count=1,
        total_token_count=None, cached_content_token_count=None,
    )  # fmt: skip
    output = google_adk_stream._usage(gemini, None).output_tokens
    if first is None and second is None:
        assert output is None
    elif first is not None and not _is_count(first):
        assert output is first  # the bad count itself, dropped and counted where recorded
    else:
        assert output == (first or 0) + (second if _is_count(second) else 0)

"""Usage rules the conformance script cannot show: providers counting the cache differently.

Strands normalises every provider to Bedrock's usage names, but its ``inputTokens`` leaves
cache reads and writes out for Bedrock and Anthropic (``totalTokens`` adds them back) and
counts them in for OpenAI. Input tokens must include the cache either way, counted once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.protocol import Usage
from agent_contract.sources.strands_stream import strands_events


class _Stream:
    """Dicts in the shape ``Agent.stream_async`` yields them, for one model call."""

    def __init__(self, usage: dict[str, Any]) -> None:
        self.usage = usage

    async def stream_async(self, prompt: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"event": {"messageStart": {"role": "assistant"}}}
        yield {"event": {"contentBlockDelta": {"delta": {"text": "hi"}}}}
        yield {"event": {"messageStop": {"stopReason": "end_turn"}}}
        yield {"event": {"metadata": {"usage": self.usage}}}
        yield {"message": {"role": "assistant", "content": [{"text": "hi"}]}}


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # Anthropic / Bedrock: input leaves the cache out, the total adds it back
        ({"inputTokens": 10, "outputTokens": 5, "totalTokens": 95,
          "cacheReadInputTokens": 60, "cacheWriteInputTokens": 20}, 90),
        # OpenAI: input already holds the cache reads
        ({"inputTokens": 120, "outputTokens": 30, "totalTokens": 150,
          "cacheReadInputTokens": 64}, 120),
        ({"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}, 7),
    ],
)  # fmt: skip
async def test_strands_input_tokens_include_the_cache_once(
    usage: dict[str, Any], expected: int
) -> None:
    events = [e async for e in strands_events(_Stream(usage), "hi")]

    [counted] = [e for e in events if isinstance(e, Usage)]
    assert counted.input_tokens == expected
    assert counted.cache_read_tokens == (usage.get("cacheReadInputTokens") or None)
    assert counted.total_tokens == usage["totalTokens"]

"""The conformance script (``_script``) as OpenAI Responses and Anthropic Messages streams.

For the SDK rows ``openai_responses`` and ``anthropic_messages``: the real SDKs over their mock
transports (``_http``) serve these bodies in the shape each provider sends them (shapes as
``_recorded``'s). Responses counts cached tokens inside ``input_tokens`` and reports reasoning
tokens; Anthropic counts input without the cache (the source adds it back) and thinking
tokens apart. ``fail`` ends turn one with an error event after its first words (each SDK
raises its own error).
"""

from __future__ import annotations

import json
from typing import Any

from . import _script as s
from ._http import sse

RESPONSES_MODEL = "gpt-5-mini-2025-08-07"
ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"


# --- OpenAI Responses ------------------------------------------------------------------------
def _responses(n: int, turn: s.Turn, words: tuple[str, ...], calls: tuple[s.Call, ...], *,
               reasoning: bool, fail: bool = False) -> bytes:  # fmt: skip
    response = {"id": f"resp_{n}", "object": "response", "created_at": 1764600000,
                "model": RESPONSES_MODEL, "status": "in_progress", "output": [], "usage": None,
                "error": None, "incomplete_details": None, "parallel_tool_calls": True,
                "tools": []}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    output: list[dict[str, Any]] = []
    index = 0
    if reasoning:
        item = {"id": f"rs_{n}", "type": "reasoning", "summary": []}
        events += [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.reasoning_summary_text.delta", "item_id": item["id"],
             "output_index": 0, "summary_index": 0, "delta": s.REASONING},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]  # fmt: skip
        output.append(item)
        index = 1
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "in_progress"}
    events.append({"type": "response.output_item.added", "output_index": index,
                   "item": message | {"content": []}})  # fmt: skip
    for i, word in enumerate(words):
        events.append({"type": "response.output_text.delta", "item_id": message["id"],
                       "output_index": index, "content_index": 0, "delta": word,
                       "logprobs": []})  # fmt: skip
        if fail and i == 0:
            body = [e | {"sequence_number": k} for k, e in enumerate(events)]
            return sse(body) + sse([{"error": {"message": "overloaded", "type": "server_error"}}])
    part = {"type": "output_text", "text": "".join(words), "annotations": [], "logprobs": []}
    message = message | {"status": "completed", "content": [part]}
    events.append({"type": "response.output_item.done", "output_index": index, "item": message})
    output.append(message)
    for call in calls:
        index += 1
        item = {"id": f"fc_{call.id}", "type": "function_call", "call_id": call.id,
                "name": call.name}  # fmt: skip
        done = item | {"arguments": call.json, "status": "completed"}
        events += [
            {"type": "response.output_item.added", "output_index": index,
             "item": item | {"arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "item_id": item["id"],
             "output_index": index, "delta": call.json},
            {"type": "response.function_call_arguments.done", "item_id": item["id"],
             "output_index": index, "arguments": call.json},
            {"type": "response.output_item.done", "output_index": index, "item": done},
        ]  # fmt: skip
        output.append(done)
    usage = {"input_tokens": turn.input, "input_tokens_details": {"cached_tokens": turn.cache_read},
             "output_tokens": turn.output,
             "output_tokens_details": {"reasoning_tokens": turn.reasoning},
             "total_tokens": turn.total}  # fmt: skip
    final = response | {"status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": final})
    return sse([e | {"sequence_number": k} for k, e in enumerate(events)])


def responses_turn_one(*, fail: bool = False) -> bytes:
    """Reasoning, "Checking both.", ``weather`` and ``forecast`` in parallel."""
    return _responses(1, s.TURNS[0], s.WORDS, s.CALLS, reasoning=True, fail=fail)


def responses_turn_two() -> bytes:
    """The answer, "Sunny in Paris."."""
    return _responses(2, s.TURNS[1], s.ANSWER, (), reasoning=False)


# --- Anthropic Messages ----------------------------------------------------------------------
def _messages(n: int, turn: s.Turn, words: tuple[str, ...], calls: tuple[s.Call, ...], *,
              reasoning: bool, fail: bool = False) -> bytes:  # fmt: skip
    usage = {"input_tokens": turn.input - turn.cache_read, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": turn.cache_read, "output_tokens": 1}  # fmt: skip
    message = {"id": f"msg_0{n}", "type": "message", "role": "assistant",
               "model": ANTHROPIC_MODEL, "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": usage}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    index = 0
    if reasoning:
        events += [
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": s.REASONING}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "signature_delta", "signature": "EqQBCg=="}},
            {"type": "content_block_stop", "index": 0},
        ]  # fmt: skip
        index = 1
    events.append({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}})  # fmt: skip
    for i, word in enumerate(words):
        events.append({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": word}})  # fmt: skip
        if fail and i == 0:
            error = {"type": "error", "error": {"type": "overloaded_error",
                                                "message": "Overloaded"}}  # fmt: skip
            return sse([*events, error], named=True)
    events.append({"type": "content_block_stop", "index": index})
    for call in calls:
        index += 1
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events += [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": call.json}},
            {"type": "content_block_stop", "index": index},
        ]  # fmt: skip
    stop = "tool_use" if calls else "end_turn"
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
         "usage": {"output_tokens": turn.output,
                   "output_tokens_details": {"thinking_tokens": turn.reasoning}}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return sse(events, named=True)


def messages_turn_one(*, fail: bool = False) -> bytes:
    """Thinking, "Checking both.", ``weather`` and ``forecast`` in parallel."""
    return _messages(1, s.TURNS[0], s.WORDS, s.CALLS, reasoning=True, fail=fail)


def messages_turn_two() -> bytes:
    """The answer, "Sunny in Paris."."""
    return _messages(2, s.TURNS[1], s.ANSWER, (), reasoning=False)


def anthropic_refused(request: Any) -> Any:
    """A 429 the Anthropic SDK does not retry (its own ``x-should-retry`` header)."""
    import httpx2 as httpx

    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "rate limited"}}
    return httpx.Response(429, headers={"x-should-retry": "false"}, content=json.dumps(error),
                          request=request)  # fmt: skip

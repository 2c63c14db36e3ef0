"""The conformance script (``_script``) as OpenAI Chat Completions stream bodies.

For rows whose framework talks to a model through the OpenAI SDK: the real SDK over its mock
transport (``_http``) serves these bodies in the shape OpenAI sends them (usage in a last
chunk with cached and reasoning tokens, as ``stream_options.include_usage`` gives it).
"""

from __future__ import annotations

import json
from typing import Any

from . import _script as s
from ._http import sse

MODEL = "gpt-4o-mini-2024-07-18"


def _chunk(delta: dict[str, Any], finish: str | None = None, n: int = 1) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1764600000,
            "model": MODEL, "choices": [choice], "usage": None}  # fmt: skip


def _usage(turn: s.Turn, n: int) -> dict[str, Any]:
    usage = {
        "prompt_tokens": turn.input, "completion_tokens": turn.output, "total_tokens": turn.total,
        "prompt_tokens_details": {"cached_tokens": turn.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": turn.reasoning, "audio_tokens": 0},
    }  # fmt: skip
    return {**_chunk({}, n=n), "choices": [], "usage": usage}


def completion(
    turn: int, content: str | None, calls: list[tuple[str, str, str]], model: str = MODEL
) -> bytes:
    """Turn ``turn`` unstreamed (a framework calling ``create`` without ``stream``): the
    answer ``content``, the tool calls ``(call id, name, arguments' JSON)``, that turn's usage
    (the last turn's past the script)."""
    used = s.TURNS[min(turn, len(s.TURNS) - 1)]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    body = {
        "id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": used.input, "completion_tokens": used.output,
                  "total_tokens": used.total,
                  "prompt_tokens_details": {"cached_tokens": used.cache_read},
                  "completion_tokens_details": {"reasoning_tokens": used.reasoning}},
    }  # fmt: skip
    return json.dumps(body).encode()


def turn_one(*, fail: bool = False) -> bytes:
    """Reasoning, "Checking both.", ``weather`` and ``forecast`` in parallel; or, with ``fail``,
    an error event after the first words (the SDK raises ``APIError``)."""
    out = [_chunk({"role": "assistant", "content": ""}),
           _chunk({"reasoning_content": s.REASONING}),
           _chunk({"content": s.WORDS[0]})]  # fmt: skip
    if fail:
        return sse(out) + sse([{"error": {"message": "overloaded", "type": "server_error"}}])
    out.append(_chunk({"content": s.WORDS[1]}))
    for i, call in enumerate(s.CALLS):
        head = {"index": i, "id": call.id, "type": "function"}
        out.append(_chunk({"tool_calls": [head | {"function": {"name": call.name,
                                                               "arguments": ""}}]}))  # fmt: skip
        text = call.json
        for part in (text[:9], text[9:]):
            out.append(_chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    out += [_chunk({}, "tool_calls"), _usage(s.TURNS[0], 1)]
    return sse(out, done=True)


def turn_two() -> bytes:
    """The answer, "Sunny in Paris."."""
    out = [_chunk({"role": "assistant", "content": ""}, n=2)]
    out += [_chunk({"content": word}, n=2) for word in s.ANSWER]
    out += [_chunk({}, "stop", n=2), _usage(s.TURNS[1], 2)]
    return sse(out, done=True)


def answer(text: str, n: int = 3) -> bytes:
    """A one-turn text answer with the first turn's usage (a sub-agent's reply)."""
    out = [_chunk({"content": text}, n=n), _chunk({}, "stop", n=n), _usage(s.TURNS[0], n)]
    return sse(out, done=True)


def call(name: str, arguments: dict[str, Any] | str, call_id: str, n: int = 4) -> bytes:
    """A turn that only calls ``name`` (a lead agent delegating)."""
    return calls([(call_id, name, arguments)], n)


def calls(made: list[tuple[str, str, dict[str, Any] | str]], n: int = 4) -> bytes:
    """A turn that only calls tools, in parallel: ``(call id, name, arguments)`` each (the
    arguments' JSON, or a text sent as the model wrote it, which need not parse)."""
    deltas = [
        {"index": i, "id": call_id, "type": "function",
         "function": {"name": name, "arguments": arguments if isinstance(arguments, str)
                      else json.dumps(arguments)}}
        for i, (call_id, name, arguments) in enumerate(made)
    ]  # fmt: skip
    out = [_chunk({"tool_calls": deltas}, n=n), _chunk({}, "tool_calls", n=n),
           _usage(s.TURNS[0], n)]  # fmt: skip
    return sse(out, done=True)

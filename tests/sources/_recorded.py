"""Stream bodies in the shape each provider sends them (field for field, as recorded).

Each builder returns the list of JSON events of one streamed response; ``_http.sse`` turns
it into the bytes the SDK parses. The scripted conversation is the same everywhere: the
model thinks, says a few words and asks for two tools in parallel (``weather`` for Paris and
Rome), or, when ``tools=False``, answers in text.
"""

from __future__ import annotations

from typing import Any

PARIS = '{"city": "Paris"}'
ROME = '{"city": "Rome"}'


def chat(*, tools: bool = True, model: str = "gpt-4o-mini-2024-07-18") -> list[dict[str, Any]]:
    """Chat Completions chunks (``stream_options.include_usage``): the last one has usage."""
    base = {"id": "chatcmpl-A1", "object": "chat.completion.chunk", "created": 1764600000}
    base |= {"model": model, "system_fingerprint": "fp_1", "service_tier": "default"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], "usage": None}

    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    out.append(chunk({"reasoning_content": "Two cities."}))  # OpenAI-compatible servers' field
    if tools:
        out += [
            chunk({"content": "Checking "}),
            chunk({"content": "both."}),
            chunk(
                call(0, id="call_p", type="function", function={"name": "weather", "arguments": ""})
            ),
            chunk(call(0, function={"arguments": PARIS[:9]})),
            chunk(call(0, function={"arguments": PARIS[9:]})),
            chunk(
                call(1, id="call_r", type="function", function={"name": "weather", "arguments": ""})
            ),
            chunk(call(1, function={"arguments": ROME})),
            chunk({}, "tool_calls"),
        ]
    else:
        out += [chunk({"content": "Sunny "}), chunk({"content": "in both."}), chunk({}, "stop")]
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 12, "audio_tokens": 0},
    }
    out.append({**base, "choices": [], "usage": usage})
    return out


def responses(*, tools: bool = True, model: str = "gpt-5-mini-2025-08-07") -> list[dict[str, Any]]:
    """Responses API stream events, ``sequence_number`` and all."""
    response = {"id": "resp_1", "object": "response", "created_at": 1764600000, "model": model}
    response |= {"status": "in_progress", "output": [], "usage": None, "error": None}
    response |= {"incomplete_details": None, "parallel_tool_calls": True, "tools": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    events += [
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
         "summary_index": 0, "delta": "Two cities."},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
    ]  # fmt: skip
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
    events.append(
        {"type": "response.output_item.added", "output_index": 1, "item": message | {"content": []}}
    )
    texts = ("Checking ", "both.") if tools else ("Sunny ", "in both.")
    for text in texts:
        events.append({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
                       "content_index": 0, "delta": text, "logprobs": []})  # fmt: skip
    part = {"type": "output_text", "text": "".join(texts), "annotations": [], "logprobs": []}
    message = message | {"status": "completed", "content": [part]}
    events.append({"type": "response.output_item.done", "output_index": 1, "item": message})
    output: list[dict[str, Any]] = [reasoning, message]
    if tools:
        for index, (item_id, call_id, args) in enumerate(
            (("fc_1", "call_p", PARIS), ("fc_2", "call_r", ROME)), 2
        ):
            item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": "weather"}
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": item | {"arguments": "", "status": "in_progress"}})  # fmt: skip
            for part in (args[:9], args[9:]):
                events.append({"type": "response.function_call_arguments.delta", "item_id": item_id,
                               "output_index": index, "delta": part})  # fmt: skip
            done = item | {"arguments": args, "status": "completed"}
            events.append({"type": "response.function_call_arguments.done", "item_id": item_id,
                           "output_index": index, "arguments": args})  # fmt: skip
            events.append(
                {"type": "response.output_item.done", "output_index": index, "item": done}
            )
            output.append(done)
    usage = {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 64},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 150,
    }
    final = response | {"status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": final})
    return [event | {"sequence_number": n} for n, event in enumerate(events)]


def messages(
    *, tools: bool = True, model: str = "claude-sonnet-4-5-20250929"
) -> list[dict[str, Any]]:
    """Anthropic Messages raw stream events (sent with ``event: <type>`` lines)."""
    start_usage = {"input_tokens": 20, "cache_creation_input_tokens": 36,
                   "cache_read_input_tokens": 64, "output_tokens": 1}  # fmt: skip
    message = {"id": "msg_01A", "type": "message", "role": "assistant", "model": model}
    message |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "Two cities."}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "EqQBCg=="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    ]  # fmt: skip
    for text in ("Checking ", "both.") if tools else ("Sunny ", "in both."):
        events.append({"type": "content_block_delta", "index": 1,
                       "delta": {"type": "text_delta", "text": text}})  # fmt: skip
    events.append({"type": "content_block_stop", "index": 1})
    if tools:
        for index, (call_id, args) in enumerate((("toolu_p", PARIS), ("toolu_r", ROME)), 2):
            block = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            for part in ("", args[:9], args[9:]):
                delta = {"type": "input_json_delta", "partial_json": part}
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
            events.append({"type": "content_block_stop", "index": index})
    stop = "tool_use" if tools else "end_turn"
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
         "usage": {"output_tokens": 30, "output_tokens_details": {"thinking_tokens": 12}}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return events

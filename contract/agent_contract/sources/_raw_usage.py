"""Token usage read from a provider's own response payload, whatever framework carried it.

Some frameworks pass the provider's response (or stream chunk) through as ``raw`` and report
no usage of their own (LlamaIndex), or a poorer one (smolagents: input and output only). The
payload is a dict or the SDK's object; both are read by key. Recognised shapes:

* OpenAI Chat Completions: ``usage.prompt_tokens`` / ``completion_tokens`` / ``total_tokens``,
  ``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``;
* OpenAI Responses (``response.completed`` or the response itself): ``usage.input_tokens``,
  ``input_tokens_details.cached_tokens``, ``output_tokens_details.reasoning_tokens``;
* Anthropic Messages (a message, or a stream's ``message_start`` / ``message_delta``):
  ``input_tokens`` excludes cache reads and writes, so they are added, as the Anthropic
  source does; ``cache_read_input_tokens``, ``cache_creation_input_tokens`` kept apart;
* Google Gemini: ``usage_metadata`` (``prompt_token_count``, ``candidates_token_count``,
  ``total_token_count``, ``cached_content_token_count``, ``thoughts_token_count``); the
  candidates leave the thoughts out, which the output adds back (reasoning is output);
* Amazon Bedrock Converse: ``usage`` / stream ``metadata.usage`` (``inputTokens``, ...);
* Ollama: ``prompt_eval_count`` / ``eval_count``.

Anything else gives ``None``: the trace then shows the call without token counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from agent_contract.events import Usage

__all__ = ["counted", "get", "is_count", "usage_from_raw"]


def get(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` otherwise; None when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def counted(*values: Any) -> int:
    """The sum of those ``values`` that are token counts (non-negative ``int``, not a bool):
    a part no count (``None``, negative, a float or NaN) adds nothing, so a bad cache count
    never skews the input it is added to. The bad value stays on its own field, where the
    recorder drops and counts it (``invalid_token_count``)."""
    return sum(v for v in values if is_count(v))


def is_count(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a token count: a non-negative ``int``, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from_raw(raw: Any, model: str | None = None) -> Usage | None:
    """The ``Usage`` a provider payload reports, or None when it reports none."""
    if raw is None:
        return None
    model = model or _text(get(raw, "model"))
    response = get(raw, "response")  # OpenAI Responses stream events
    if response is not None and get(response, "usage") is not None:
        return usage_from_raw(response, model)
    message = get(raw, "message")  # Anthropic message_start
    if message is not None and not isinstance(message, str) and get(message, "usage"):
        return usage_from_raw(message, model or _text(get(message, "model")))
    gemini = get(raw, "usage_metadata")
    if gemini is not None:
        return _gemini(gemini, model)
    metadata = get(raw, "metadata")  # Bedrock Converse stream
    usage = get(raw, "usage")
    if usage is None and metadata is not None and not isinstance(metadata, str):
        usage = get(metadata, "usage")
    if usage is None:
        prompt, made = _int(get(raw, "prompt_eval_count")), _int(get(raw, "eval_count"))
        if prompt is None and made is None:
            return None
        return Usage(input_tokens=prompt, output_tokens=made, model=model)  # Ollama
    return _usage(usage, model)


def _usage(usage: Any, model: str | None) -> Usage | None:
    if _int(get(usage, "prompt_tokens")) is not None:  # Chat Completions
        cached = _int(get(get(usage, "prompt_tokens_details"), "cached_tokens"))
        thought = _int(get(get(usage, "completion_tokens_details"), "reasoning_tokens"))
        return Usage(
            input_tokens=_int(get(usage, "prompt_tokens")),
            output_tokens=_int(get(usage, "completion_tokens")),
            total_tokens=_int(get(usage, "total_tokens")),
            cache_read_tokens=cached or None, reasoning_tokens=thought or None, model=model,
        )  # fmt: skip
    if _int(get(usage, "inputTokens")) is not None:  # Bedrock Converse
        return Usage(
            input_tokens=_int(get(usage, "inputTokens")),
            output_tokens=_int(get(usage, "outputTokens")),
            total_tokens=_int(get(usage, "totalTokens")),
            cache_read_tokens=_int(get(usage, "cacheReadInputTokens")) or None,
            cache_creation_tokens=_int(get(usage, "cacheWriteInputTokens")) or None,
            model=model,
        )
    read = _int(get(usage, "cache_read_input_tokens"))
    made = _int(get(usage, "cache_creation_input_tokens"))
    inputs, outputs = _int(get(usage, "input_tokens")), _int(get(usage, "output_tokens"))
    if read is not None or made is not None:  # Anthropic: input excludes the cache
        inputs = counted(inputs, read, made)
        total = inputs + counted(outputs)
        return Usage(
            input_tokens=inputs, output_tokens=outputs, total_tokens=total,
            cache_read_tokens=read or None, cache_creation_tokens=made or None, model=model,
        )  # fmt: skip
    if inputs is None and outputs is None:
        return None
    cached = _int(get(get(usage, "input_tokens_details"), "cached_tokens"))  # Responses
    thought = _int(get(get(usage, "output_tokens_details"), "reasoning_tokens"))
    return Usage(
        input_tokens=inputs, output_tokens=outputs, total_tokens=_int(get(usage, "total_tokens")),
        cache_read_tokens=cached or None, reasoning_tokens=thought or None, model=model,
    )  # fmt: skip


def _gemini(usage: Any, model: str | None) -> Usage | None:
    """Gemini's counts: its ``candidates_token_count`` leaves the thoughts out (its total
    counts them on top), and the conventions count reasoning as output, so the output is the
    two summed, as Google ADK's source and Gemini's official instrumentation count it (a
    candidates count that is no count stays as it is, a thoughts count that is none adds
    nothing: each is dropped and counted where it is recorded)."""
    inputs = _int(get(usage, "prompt_token_count"))
    candidates = _int(get(usage, "candidates_token_count"))
    thoughts = _int(get(usage, "thoughts_token_count"))
    if inputs is None and candidates is None and thoughts is None:
        return None
    outputs = candidates
    if is_count(thoughts) and (candidates is None or is_count(candidates)):
        outputs = counted(candidates, thoughts)
    return Usage(
        input_tokens=inputs, output_tokens=outputs,
        total_tokens=_int(get(usage, "total_token_count")),
        cache_read_tokens=_int(get(usage, "cached_content_token_count")) or None,
        reasoning_tokens=thoughts or None, model=model,
    )  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

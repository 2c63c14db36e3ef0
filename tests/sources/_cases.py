"""The four LLM SDK sources as test cases: each with its client, body and expected names.

Every source gets the same scripted conversation (``_recorded``) in its provider's own
stream shape; a ``Case`` says what that provider reports for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from agent_contract.protocol import AgentEvent, Message

from . import _recorded
from ._http import anthropic_client, openai_client, sse

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import

HISTORY = [Message(role="system", content="Be brief."), Message(role="user", content="Weather?")]
Source = Callable[[list[Message]], AsyncIterator[AgentEvent]]


@dataclass
class Case:
    """One SDK source with what its provider reports for the scripted conversation."""

    name: str
    body: Callable[[bool], bytes]
    client: Callable[..., Any]
    source: Callable[..., Source]
    request_model: str
    response_model: str
    response_id: str
    provider: str
    finish: tuple[str, str]  # (with tool calls, with text only)
    sdk_type: str
    input_tokens: int = 120
    cache_creation: int | None = None
    error: Callable[[], bytes] = lambda: sse([{"error": {"message": "overloaded", "type": "x"}}])


def _chat(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.openai_chat import stream_chat

    return lambda history: stream_chat(client, history, "gpt-4o-mini", sink=sink, temperature=0.2)


def _responses(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.openai_responses import stream_responses

    return lambda history: stream_responses(
        client, history, "gpt-5-mini", sink=sink, temperature=0.2
    )


def _anthropic(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.anthropic_messages import stream_messages

    return lambda history: stream_messages(
        client, history, "claude-sonnet-4-5", sink=sink, max_tokens=512
    )


def _litellm(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.litellm_chat import stream_litellm

    return lambda history: stream_litellm(
        client,
        history,
        "openai/gpt-4o-mini",
        sink=sink,
        api_key="sk-never-recorded",
        temperature=0.2,
    )


def _anthropic_error() -> bytes:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return sse([error], named=True)


CASES = [
    Case("openai_chat", lambda t: sse(_recorded.chat(tools=t), done=True), openai_client, _chat,
         "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "chatcmpl-A1", "openai",
         ("tool_calls", "stop"), "ChatCompletionChunk"),
    Case("openai_responses", lambda t: sse(_recorded.responses(tools=t), named=True),
         openai_client, _responses, "gpt-5-mini", "gpt-5-mini-2025-08-07", "resp_1", "openai",
         ("completed", "completed"), "ResponseCompletedEvent"),
    Case("anthropic_messages", lambda t: sse(_recorded.messages(tools=t), named=True),
         anthropic_client, _anthropic, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
         "msg_01A", "anthropic", ("tool_use", "end_turn"), "RawMessageStartEvent",
         cache_creation=36, error=_anthropic_error),
    # LiteLLM reports the model it was asked for (its routing name), not the server's.
    Case("litellm_chat", lambda t: sse(_recorded.chat(tools=t), done=True), openai_client,
         _litellm, "openai/gpt-4o-mini", "gpt-4o-mini", "chatcmpl-A1", "openai",
         ("tool_calls", "stop"), "ModelResponseStream"),
]  # fmt: skip
ids = [case.name for case in CASES]


def after_text(parts: list[bytes]) -> int:
    """The index just past the first SSE event carrying answer text."""
    return next(i for i, part in enumerate(parts) if b"Sunny" in part or b"Checking" in part) + 1


def weather(arguments: str) -> str:
    return "sunny in " + json.loads(arguments)["city"]

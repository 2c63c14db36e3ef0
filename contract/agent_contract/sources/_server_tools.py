"""``ServerToolCallsEnd``: an LLM call's end whose response tells tools the provider ran itself.

A provider may run a tool on its side within one request (a web search, code execution: the
"built-in" or "native" tools of pydantic-ai, OpenAI and Anthropic), and its response tells the
call and its outcome beside the text. The GenAI conventions tell such a call in the chat
span's output message, as a ``server_tool_call`` part and a ``server_tool_call_response``
part (no ``execute_tool`` span: the application ran nothing). An adapter ends such a call
with a ``ServerToolCallsEnd``: an ``LLMCallEnd`` to any reader, whose ``calls`` agent-otel's
recorder puts in that call's output message. A subclass of a contract event, as
``UnrunCallsEnd`` is, so the contract keeps its eleven kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_contract.events import LLMCallEnd

__all__ = ["ServerToolCall", "ServerToolCallsEnd"]


@dataclass(frozen=True, slots=True)
class ServerToolCall:
    """A tool the provider ran: its id, name, the arguments it was given and what it gave
    back (``None``: no outcome told), each as the response tells it."""

    id: str | None
    name: str
    arguments: Any = None
    result: Any = None


@dataclass(slots=True)
class ServerToolCallsEnd(LLMCallEnd):
    """The end of an LLM call whose response tells the provider's own tool calls ``calls``."""

    calls: tuple[ServerToolCall, ...] = ()

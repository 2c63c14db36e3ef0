"""``UnrunToolCall``: a tool call the model asked for that never ran.

A framework may throw a response away after it came whole (Strands' ``AfterModelCallEvent``
hook asking the model again): the model asked for its tool calls, and the response was billed,
but no tool ever runs for them. The GenAI conventions tell what the model asked for in the
chat span's output messages (a ``tool_call`` part) and a tool's execution as an
``execute_tool`` span; a ``ToolCall`` tells both. An adapter tells such a call as an
``UnrunToolCall`` inside the response's call (before its ``LLMCallEnd``): agent-otel's recorder
puts it in that call's output message and opens no tool span; any other reader (``collect()``)
passes over it, as no call that ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_contract.events import AgentEvent, FunctionCall
from agent_contract.sources._arguments import arguments_json

__all__ = ["UnrunToolCall", "unrun_call"]


@dataclass(slots=True)
class UnrunToolCall(AgentEvent):
    """A tool call of the open LLM call's response that never ran (the module docstring)."""

    id: str | None = None
    function: FunctionCall = field(default_factory=FunctionCall)


def unrun_call(call_id: Any, name: Any, arguments: Any) -> UnrunToolCall:
    """The ``UnrunToolCall`` of a framework's call, its ``arguments`` written by the one rule
    of every ``ToolCall`` (``arguments_json``; a repair is not told: no call ran to fail)."""
    text, _ = arguments_json(arguments)
    call_id = call_id if isinstance(call_id, str) else None
    name = name if isinstance(name, str) else None
    return UnrunToolCall(id=call_id, function=FunctionCall(name, text))

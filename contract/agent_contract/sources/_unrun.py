"""``UnrunCallsEnd``: an LLM call's end whose response asked for tool calls that never ran.

A framework may throw a response away after it came whole (Strands' ``AfterModelCallEvent``
hook asking the model again): the model asked for its tool calls, and the response was billed,
but no tool ever runs for them. So does a call that carries the run's structured answer (an
output tool: pydantic-ai's ``final_result``, LangChain's ``ToolStrategy`` schema): the
framework reads its arguments as the answer, and runs no tool. The GenAI conventions tell
what the model asked for in the chat span's output messages (a ``tool_call`` part) and a
tool's execution as an ``execute_tool`` span; a ``ToolCall`` event tells both. An adapter
ends such a call with an ``UnrunCallsEnd``: an ``LLMCallEnd`` to any reader (``collect()``
ends the call, no tool ran), whose ``unrun`` calls agent-otel's recorder puts in that call's
output message, opening no tool span. A subclass of a contract event, as ``CallUsage`` is,
so the contract keeps its eleven kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_contract.events import FunctionCall, LLMCallEnd, ToolCall
from agent_contract.sources._arguments import arguments_json
from agent_contract.sources._server_tools import ServerToolCall

__all__ = ["UnrunCallsEnd", "unrun_call"]


@dataclass(slots=True)
class UnrunCallsEnd(LLMCallEnd):
    """The end of an LLM call whose response's tool calls ``unrun`` never ran; ``calls`` the
    tools the provider ran within it, as a ``ServerToolCallsEnd`` tells them."""

    unrun: tuple[ToolCall, ...] = ()
    calls: tuple[ServerToolCall, ...] = ()


def unrun_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A framework's call that never ran, for ``UnrunCallsEnd.unrun``: its ``arguments``
    written by the one rule of every ``ToolCall`` (``arguments_json``; a repair is not told:
    no call ran to fail)."""
    text, _ = arguments_json(arguments)
    call_id = call_id if isinstance(call_id, str) else None
    name = name if isinstance(name, str) else None
    return ToolCall(id=call_id, function=FunctionCall(name, text))

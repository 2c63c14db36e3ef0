"""The one import surface of the event-stream contract (seed 000).

Re-exports the wire types (``agent_contract.events``), the buffered view
(``agent_contract.invoke``) and defines ``AgentProtocol``. Consumers import from here so
that every event kind has one type identity across the project.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from agent_contract.events import (
    AgentEvent,
    Error,
    FunctionCall,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    Message,
    PhaseMarker,
    ReasoningDelta,
    Role,
    SideCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.invoke import (
    InvokeResult,
    LookAlikeEventWarning,
    Step,
    StreamingAgent,
    StreamWrapper,
    collect,
    invoke_messages,
    sum_usage,
)

__all__ = [
    "AgentEvent",
    "AgentProtocol",
    "Error",
    "FunctionCall",
    "InvokeResult",
    "JourneyMarker",
    "LLMCallEnd",
    "LLMCallStart",
    "LookAlikeEventWarning",
    "Message",
    "PhaseMarker",
    "ReasoningDelta",
    "Role",
    "SideCallStart",
    "Step",
    "StepBoundary",
    "StreamWrapper",
    "StreamingAgent",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "Usage",
    "collect",
    "invoke_messages",
    "sum_usage",
]


@runtime_checkable
class AgentProtocol(Protocol):
    """Contract every agent implementation satisfies.

    ``stream`` is the wire-level API (per-event observation); ``invoke`` the buffered one
    (per-step view, normally ``collect`` over ``stream``). ``reset()`` is optional and
    duck-typed, so it is not part of the Protocol. ``isinstance(agent, AgentProtocol)``
    checks that both methods are present, not their signatures.
    """

    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Yield events for ``messages`` (full history; the last one is the new input).

        ``config`` is optional; consumers MAY pass ``otel_context`` or ``conversation_id``.
        """
        ...

    async def invoke(
        self,
        messages: list[Message],
        stream_wrapper: StreamWrapper | None = None,
        config: dict[str, Any] | None = None,
    ) -> InvokeResult:
        """Buffered call: consume ``stream`` (wrapped by ``stream_wrapper``) into steps."""
        ...

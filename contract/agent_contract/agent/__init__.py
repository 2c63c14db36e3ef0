"""The ``Agent`` contract (seed 001): the ABC, its inputs and error, and its event vocabulary."""

from __future__ import annotations

from agent_contract.agent.base import Agent, AgentInterruptedError, PresetSpec, SubAgentSpec
from agent_contract.agent.events import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    ReasoningStep,
    RunUsage,
    StreamEvent,
    StructuredFinal,
    ToolCallStep,
    ToolResultStep,
)

__all__ = [
    "Agent",
    "AgentInterruptedError",
    "InterruptFinal",
    "MessageDelta",
    "MessageFinal",
    "PresetSpec",
    "ReasoningStep",
    "RunUsage",
    "StreamEvent",
    "StructuredFinal",
    "SubAgentSpec",
    "ToolCallStep",
    "ToolResultStep",
]

"""The neutral streamed-event vocabulary of the ``Agent`` ABC (seed 001).

Pydantic models with a stable ``type`` discriminator and a ``final`` flag. The terminal
events (``MessageFinal``, ``StructuredFinal``, ``InterruptFinal``) default ``final=True``;
see ``Agent._drain`` for the terminal rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "InterruptFinal",
    "MessageDelta",
    "MessageFinal",
    "ReasoningStep",
    "RunUsage",
    "StreamEvent",
    "StructuredFinal",
    "ToolCallStep",
    "ToolResultStep",
]


class StreamEvent(BaseModel):
    """Base class for every event an ``Agent`` streams.

    ``type`` is the stable discriminator; ``final`` marks a terminal event. Models are mutable
    (producers may fill fields in place) and allow arbitrary types, because ``payload`` /
    ``data`` / ``result`` carry whatever the agent produced. Unknown keys are ignored so a
    newer producer's frames still parse. Validation errors hide the input values (the
    contract's rule: error messages never carry input, which may hold credentials).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=False, hide_input_in_errors=True)

    type: str
    final: bool = False


class MessageDelta(StreamEvent):
    """A token-level chunk of the agent's final answer as it streams."""

    type: Literal["message_delta"] = "message_delta"
    text: str


class MessageFinal(StreamEvent):
    """The agent's complete final answer, assembled from the deltas. Terminal."""

    type: Literal["message_final"] = "message_final"
    text: str
    final: bool = True


class ReasoningStep(StreamEvent):
    """A chunk of intermediate reasoning for one step; producers never emit blank ones."""

    type: Literal["reasoning_step"] = "reasoning_step"
    text: str


class ToolCallStep(StreamEvent):
    """One tool invocation the agent decided to make; ``call_id`` is the model-assigned id."""

    type: Literal["tool_call_step"] = "tool_call_step"
    tool: str
    args: dict[str, Any]
    call_id: str


class ToolResultStep(StreamEvent):
    """The value one tool call returned, matched to its ``ToolCallStep`` by ``call_id``."""

    type: Literal["tool_result_step"] = "tool_result_step"
    tool: str
    call_id: str
    result: Any
    is_error: bool = False


class RunUsage(StreamEvent):
    """Token usage (and model label) for the run. Any field may be None."""

    type: Literal["run_usage"] = "run_usage"
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    model: str | None = None


class StructuredFinal(StreamEvent):
    """The agent's structured (non-text) output, e.g. the ``response_format`` instance. Terminal."""

    type: Literal["structured_final"] = "structured_final"
    data: Any
    final: bool = True


class InterruptFinal(StreamEvent):
    """A platform interrupt out of a paused agent graph. Terminal.

    ``interrupt_id`` is echoed back when resuming; ``payload`` is the interrupt value (e.g.
    the option set); ``reason`` an optional human-facing label.
    """

    type: Literal["interrupt_final"] = "interrupt_final"
    interrupt_id: str
    payload: Any
    reason: str | None = None
    final: bool = True

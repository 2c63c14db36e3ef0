"""Objects that look like agent events but are not ``agent_contract`` events.

``collect`` buffers ``AgentEvent`` instances only; another package's ``TextDelta`` (the
original ``latent.events``) or an ``Agent``-contract ``StreamEvent`` would be ignored in
silence and give an empty result. This module recognises them so ``collect`` can say so.
"""

from __future__ import annotations

from agent_contract import events

__all__ = ["LOOK_ALIKE", "LookAlikeEventWarning", "looks_like_event"]

_EVENT_NAMES = frozenset(
    cls.__name__
    for cls in (
        events.TextDelta,
        events.ReasoningDelta,
        events.LLMCallStart,
        events.LLMCallEnd,
        events.ToolCall,
        events.ToolResult,
        events.StepBoundary,
        events.Usage,
        events.Error,
        events.JourneyMarker,
        events.PhaseMarker,
    )
)
LOOK_ALIKE = (
    "collect() met objects that look like agent events but are not agent_contract events "
    "(another package's classes, or Agent-contract StreamEvents); they were ignored and "
    "their content is missing from the result. Convert them to agent_contract.protocol "
    "events first."
)


class LookAlikeEventWarning(UserWarning):
    """``collect`` ignored objects that look like events but are not ``AgentEvent``s."""


def looks_like_event(obj: object) -> bool:
    """True for another package's event: an event-stream class name, or a ``type`` and a
    ``final`` attribute (the Agent contract's ``StreamEvent`` shape)."""
    if type(obj).__name__ in _EVENT_NAMES:
        return True
    try:
        return isinstance(getattr(obj, "type", None), str) and hasattr(obj, "final")
    except Exception:  # a hostile __getattr__: not an event
        return False

"""The buffered per-step view of an event stream (seed 000): ``Step``, ``InvokeResult``.

``collect`` is the ONE buffering implementation: every ``invoke`` (``StreamingAgent`` gives
one to any agent with a ``stream``) goes through it, so all agents agree on what a step is.

Rules ``collect`` follows:

* Steps split at ``StepBoundary``. A segment is *content* when something lands in it: a
  ``TextDelta``, ``ReasoningDelta``, ``ToolCall``, ``Usage``, ``Error`` or an orphan
  ``ToolResult`` (below). A content segment becomes a step, the trailing one included; an
  empty segment (nothing, or only ``LLMCallStart``/``LLMCallEnd``/markers) makes no step.
  ``Step.index`` is the step's position in ``InvokeResult.steps`` (0, 1, ...);
  ``StepBoundary.index`` is informational and not used.
* ``Step.text`` / ``Step.reasoning`` are that segment's deltas joined in order.
* ``Step.tool_calls`` is the segment's ``ToolCall`` events in order (the same objects), or
  None when there were none.
* A ``ToolResult`` pairs with the most recent ``ToolCall`` carrying the same id, even one in
  an earlier step (results of parallel calls may arrive in any order, and late), and becomes
  ``Message(role="tool", tool_call_id=..., content=..., name=result.name)`` on THAT call's
  step. ``content``: a ``str`` as is, anything else ``json.dumps(..., default=str)`` (falling
  back to ``str()`` if even that fails). ``is_error`` has no OpenAI field and is not carried.
  A step's ``tool_messages`` follow the order of its ``tool_calls`` (several results for one
  id keep their arrival order).
* Orphan results: a ``ToolResult`` whose id matches no earlier ``ToolCall`` still becomes a
  tool message (data is never dropped), on the step of the segment it arrived in, after the
  paired ones, in arrival order. History persisted from such a step is not provider-valid
  (no assistant message holds that id); the agent emitted an inconsistent stream.
* ``Usage`` belongs to the segment it arrives in. ``Step.usage`` sums the segment's usages,
  ``InvokeResult.usage`` the run's; both are None when there was no ``Usage``. Each count is
  summed over the events that reported it and stays None when none did. ``total_tokens`` is
  never derived from input + output: providers count cached and reasoning tokens
  differently, so the contract reports only what agents reported. ``model`` is kept when
  every usage naming a model names the same one, else None.
* ``Error`` events are collected on their step; they do not stop collection. An exception
  raised by the stream propagates out of ``collect`` (there is no partial result).
* Objects that are not ``AgentEvent`` instances are ignored.
* ``InvokeResult.text`` is the last step's text ("" when there are no steps).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_contract.events import (
    AgentEvent,
    Error,
    Message,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = ["InvokeResult", "Step", "StreamWrapper", "StreamingAgent", "collect", "sum_usage"]

StreamWrapper = Callable[[AsyncIterator[AgentEvent]], AsyncIterator[AgentEvent]]
"""Wraps an agent's event stream before ``invoke`` consumes it (how observers hook in)."""

_COUNT_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)


@dataclass(slots=True)
class Step:
    """One model call plus the tool calls it asked for, buffered."""

    index: int
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] | None = None
    tool_messages: list[Message] = field(default_factory=list)
    usage: Usage | None = None
    errors: list[Error] = field(default_factory=list)


@dataclass(slots=True)
class InvokeResult:
    """What ``invoke`` returns: the terminal step's text, every step, and the run's usage."""

    text: str
    steps: list[Step]
    usage: Usage | None


def sum_usage(usages: Sequence[Usage]) -> Usage | None:
    """Sum usages field by field (None = not reported); None when there are none."""
    if not usages:
        return None
    total = Usage()
    for name in _COUNT_FIELDS:
        values = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        setattr(total, name, sum(values) if values else None)
    models = {u.model for u in usages if u.model is not None}
    total.model = models.pop() if len(models) == 1 else None
    return total


def _tool_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError):  # non-str dict keys, circular references
        return str(content)


@dataclass
class _Segment:
    """A step being buffered."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    paired: dict[str, list[Message]] = field(default_factory=dict)
    orphans: list[Message] = field(default_factory=list)
    usages: list[Usage] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)
    has_content: bool = False

    def to_step(self, index: int) -> Step:
        messages: list[Message] = []
        for call_id in dict.fromkeys(c.id for c in self.tool_calls if c.id is not None):
            messages.extend(self.paired.get(call_id, ()))
        messages.extend(self.orphans)
        return Step(
            index=index,
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=list(self.tool_calls) or None,
            tool_messages=messages,
            usage=sum_usage(self.usages),
            errors=list(self.errors),
        )


class _Collector:
    def __init__(self) -> None:
        self.done: list[_Segment] = []
        self.current = _Segment()
        self.call_owner: dict[str, _Segment] = {}
        self.usages: list[Usage] = []

    def add(self, event: object) -> None:
        seg = self.current
        if isinstance(event, StepBoundary):
            if seg.has_content:
                self.done.append(seg)
                self.current = _Segment()
            return
        if isinstance(event, TextDelta):
            seg.text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            seg.reasoning.append(event.text)
        elif isinstance(event, ToolCall):
            seg.tool_calls.append(event)
            if event.id is not None:
                self.call_owner[event.id] = seg
        elif isinstance(event, ToolResult):
            message = Message(
                role="tool",
                content=_tool_content(event.content),
                tool_call_id=event.tool_call_id,
                name=event.name,
            )
            owner = self.call_owner.get(event.tool_call_id)
            if owner is None:
                seg.orphans.append(message)
            else:
                owner.paired.setdefault(event.tool_call_id, []).append(message)
                return  # lands on the call's step: not content of this segment
        elif isinstance(event, Usage):
            seg.usages.append(event)
            self.usages.append(event)
        elif isinstance(event, Error):
            seg.errors.append(event)
        else:
            return  # LLM call markers, journey/phase markers, unknown objects
        seg.has_content = True

    def result(self) -> InvokeResult:
        segments = [*self.done, self.current] if self.current.has_content else self.done
        steps = [seg.to_step(i) for i, seg in enumerate(segments)]
        return InvokeResult(
            text=steps[-1].text if steps else "",
            steps=steps,
            usage=sum_usage(self.usages),
        )


async def collect(
    events: AsyncIterator[AgentEvent], stream_wrapper: StreamWrapper | None = None
) -> InvokeResult:
    """Consume an event stream into an ``InvokeResult`` (rules in the module docstring).

    ``stream_wrapper``, when given, is applied to ``events`` first and its output consumed.
    """
    stream = stream_wrapper(events) if stream_wrapper is not None else events
    collector = _Collector()
    async for event in stream:
        collector.add(event)
    return collector.result()


class StreamingAgent(ABC):
    """Base class giving any agent that implements ``stream`` a correct ``invoke``.

    ``invoke`` is ``collect(self.stream(messages, config), stream_wrapper)``, so buffering
    never diverges from streaming. ``reset()`` is optional and not defined here.
    """

    @abstractmethod
    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Yield ``AgentEvent`` items for the conversation ``messages`` (last = new input)."""

    async def invoke(
        self,
        messages: list[Message],
        stream_wrapper: StreamWrapper | None = None,
        config: dict[str, Any] | None = None,
    ) -> InvokeResult:
        """Buffered call: collect ``stream`` into per-step structure (see ``collect``)."""
        return await collect(self.stream(messages, config), stream_wrapper)

"""The buffered per-step view of an event stream (seed 000): ``Step``, ``InvokeResult``.

``collect`` is the ONE buffering implementation: every ``invoke`` (``StreamingAgent`` gives
one to any agent with a ``stream``) goes through it, so all agents agree on what a step is.

Rules ``collect`` follows:

* Steps split at ``StepBoundary``. A segment is a step when it holds *step content*: a
  ``TextDelta``, ``ReasoningDelta``, ``LLMCallStart``, ``ToolCall`` or an orphan
  ``ToolResult`` (below), the trailing segment included. A segment holding only
  *bookkeeping* (``Usage``, ``Error``, ``LLMCallEnd``, markers, results of earlier calls)
  makes no step: its usages and errors join the step before it. Providers report usage
  last, so ``[TextDelta("answer"), StepBoundary(), Usage(...)]`` is ONE step and the answer
  survives. With no step before, its usages count for the run only and its errors wait for
  the first step; a run that never makes a step but reported errors makes one step holding
  them, so no ``Error`` is ever dropped. ``Step.index`` is the step's position (0, 1, ...);
  ``StepBoundary.index`` is informational and not used.
* ``Step.text`` / ``Step.reasoning`` are that segment's deltas joined in order; a delta whose
  ``text`` is no ``str`` (None, as a provider's last chunk may carry) adds nothing.
* ``Step.tool_calls`` is the segment's ``ToolCall`` events in order (the same objects), or
  None when there were none.
* A ``ToolResult`` pairs with the most recent ``ToolCall`` carrying the same id, even one in
  an earlier step (results of parallel calls may arrive in any order, and late), and becomes
  ``Message(role="tool", tool_call_id=..., content=..., name=result.name)`` on THAT call's
  step. ``content``: a ``str`` as is, None as ``""``, anything else
  ``json.dumps(..., default=str)`` (falling back to ``str()`` if even that fails).
  ``is_error`` has no OpenAI field and is not carried. A step's ``tool_messages`` follow the
  order of its ``tool_calls`` (several results for one id keep their arrival order).
* Orphan results: a ``ToolResult`` whose id matches no earlier ``ToolCall`` still becomes a
  tool message (data is never dropped), on the step of the segment it arrived in, after the
  paired ones, in arrival order. History persisted from such a step is not provider-valid
  (no assistant message holds that id); the agent emitted an inconsistent stream.
* ``Step.usage`` sums the step's usages, ``InvokeResult.usage`` the run's; both are None
  when there was no ``Usage``. Each count is summed over the events that reported it and
  stays None when none did; a count that is no count (negative, a float or NaN, a bool, a
  string) or one past a signed 64-bit integer (no OTLP backend can take it) is not summed,
  and a sum past it is None, as agent-otel's trace drops both: the result's usage and the
  run's totals on the trace agree. ``total_tokens`` is never derived
  from input + output: providers count cached and reasoning tokens differently, so the
  contract reports only what agents reported. ``model`` is kept when every usage naming a
  model names the same one, else None.
* ``Error`` events are collected on their step; they do not stop collection. An exception
  raised by the stream propagates out of ``collect`` (there is no partial result).
* Objects that are not ``AgentEvent`` instances are ignored. When some look like events
  (another package's ``TextDelta``, an ``Agent`` contract ``StreamEvent``), ``collect``
  warns once per call (``LookAlikeEventWarning``): their content is not in the result.
* ``InvokeResult.text`` is the last step's text ("" when there are no steps).

An observer's ``stream_wrapper`` sees the events, not the messages the run was invoked with.
``collect(..., messages=...)`` (``StreamingAgent.invoke`` passes its own) makes them readable
through :func:`invoke_messages` while it calls the wrapper, and only then, so a wrapper can
record the run's input without the wrapper's signature changing.
"""

from __future__ import annotations

import json
import warnings
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_contract._foreign import LOOK_ALIKE, LookAlikeEventWarning, looks_like_event
from agent_contract.events import (
    USAGE_COUNTS,
    AgentEvent,
    Error,
    LLMCallStart,
    Message,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = [
    "InvokeResult",
    "LookAlikeEventWarning",
    "Step",
    "StreamWrapper",
    "StreamingAgent",
    "collect",
    "invoke_messages",
    "sum_usage",
]

StreamWrapper = Callable[[AsyncIterator[AgentEvent]], AsyncIterator[AgentEvent]]
"""Wraps an agent's event stream before ``invoke`` consumes it (how observers hook in)."""

_INVOKE_MESSAGES: ContextVar[Sequence[Message] | None] = ContextVar(
    "agent_contract_invoke_messages", default=None
)


def invoke_messages() -> Sequence[Message] | None:
    """The messages of the ``invoke`` whose ``stream_wrapper`` is being called, else None.

    Set by :func:`collect` for the duration of its ``stream_wrapper(events)`` call only: a
    run started later (a sub-agent's, from a tool) never sees its parent's messages.
    """
    return _INVOKE_MESSAGES.get()


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


def _kind(value: object) -> str:
    """What ``value`` is, for a message (``a bool``, ``the class X``), read by its type alone."""
    kind = type(value)  # (never its own __class__)
    if issubclass(kind, type):
        return f"the class {type.__getattribute__(value, '__name__')}"
    name = kind.__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


_INT64_MAX = 2**63 - 1
"""The largest count a trace carries: OTLP's integers are signed 64-bit."""


def sum_usage(usages: Sequence[Usage]) -> Usage | None:
    """Sum usages field by field (None = not reported); None when there are none."""
    if not usages:
        return None
    total = Usage()
    for name in USAGE_COUNTS:
        counts = [c for u in usages if (c := _count(getattr(u, name))) is not None]
        summed = sum(counts) if counts else None
        setattr(total, name, summed if summed is None or summed <= _INT64_MAX else None)
    models = {u.model if type(u.model) is str else _key(u.model) for u in usages}
    models.discard(None)
    total.model = models.pop() if len(models) == 1 else None
    return total


def _key(call_id: Any) -> Any:
    """A tool call id as a dict key: a ``str`` subclass (a ``str`` enum member) as the ``str``
    it is, so its own ``__hash__`` and ``__eq__`` never run (callers test ``type(x) is str``);
    an id that cannot be a key (a list, one whose hash raises) by its text, else as none."""
    if isinstance(call_id, str):
        return str.__str__(call_id)
    try:
        hash(call_id)
        return call_id
    except Exception:
        pass
    try:
        return str(call_id)
    except Exception:
        return None


def _count(value: Any) -> int | None:
    """A token count as the plain ``int`` it is (an ``int`` subclass's own ``+`` may raise);
    None for one that is no count (negative, a float or NaN, a bool, a string, None): it is
    not summed, as agent-otel's trace drops it (one bad field never costs ``invoke``)."""
    if type(value) is not int:
        kind = type(value)  # (never its own __class__)
        if not issubclass(kind, int) or issubclass(kind, bool):
            return None
        value = int.__int__(value)
    return value if 0 <= value <= _INT64_MAX else None


def _json_ready(value: Any, path: set[int]) -> Any:
    """``value`` with every ``dict``, ``list`` and ``tuple`` in it (a subclass too) read by
    its base type's own methods, for ``json.dumps``: a subclass's own ``items``, ``__iter__``
    or ``__len__`` never runs. A cycle raises ``ValueError``, as ``json.dumps`` does."""
    if not isinstance(value, (dict, list, tuple)):
        return value  # strings and numbers (subclasses too) json encodes by their base type
    key = id(value)
    if key in path:
        raise ValueError("Circular reference detected")
    path.add(key)
    try:
        if isinstance(value, dict):
            return {k: _json_ready(v, path) for k, v in dict.items(value)}
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [_json_ready(item, path) for item in items]
    finally:
        path.discard(key)


def _tool_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:  # a result without content is an empty tool message, not "null"
        return ""
    try:
        return json.dumps(_json_ready(content, set()), default=str)
    except Exception:  # non-str keys, cycles, deep nesting, a value whose str() raises
        pass
    try:
        return str(content)
    except Exception:  # a value too deep to show (its repr recurses too), or whose str raises
        return f"<{type(content).__name__}>"


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
        ids = (c.id if type(c.id) is str else _key(c.id) for c in self.tool_calls)
        for call_id in dict.fromkeys(i for i in ids if i is not None):
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
        self.look_alikes = False

    def add(self, event: object) -> None:
        if not isinstance(event, AgentEvent):
            self.look_alikes = self.look_alikes or looks_like_event(event)
            return
        seg = self.current
        if isinstance(event, TextDelta):
            if issubclass(type(event.text), str):  # a None chunk (a last delta) adds nothing
                seg.text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            if issubclass(type(event.text), str):
                seg.reasoning.append(event.text)
        elif isinstance(event, ToolCall):
            seg.tool_calls.append(event)
            key = event.id if type(event.id) is str else _key(event.id)
            if key is not None:
                self.call_owner[key] = seg
        elif isinstance(event, ToolResult):
            message = Message(
                role="tool",
                content=_tool_content(event.content),
                tool_call_id=event.tool_call_id,
                name=event.name,
            )
            call_id = event.tool_call_id
            if type(call_id) is not str:
                call_id = _key(call_id)
            owner = self.call_owner.get(call_id) if call_id is not None else None
            if owner is not None:  # lands on the call's step: bookkeeping for this segment
                owner.paired.setdefault(call_id, []).append(message)
                return
            seg.orphans.append(message)
        elif isinstance(event, LLMCallStart):
            pass
        else:
            self._bookkeeping(event)
            return
        seg.has_content = True

    def _bookkeeping(self, event: AgentEvent) -> None:
        if isinstance(event, StepBoundary):
            self._close()
        elif isinstance(event, Usage):
            self.current.usages.append(event)
            self.usages.append(event)
        elif isinstance(event, Error):
            self.current.errors.append(event)
        # LLMCallEnd, journey and phase markers: nothing to buffer

    def _close(self) -> None:
        """End the current segment: a step, or bookkeeping for the step before it."""
        seg, self.current = self.current, _Segment()
        if seg.has_content:
            self.done.append(seg)
        elif self.done:
            self.done[-1].usages += seg.usages
            self.done[-1].errors += seg.errors
        else:  # no step yet: usages count for the run only, errors wait for the first step
            self.current.errors = seg.errors

    def result(self) -> InvokeResult:
        self._close()  # the stream's end closes the trailing segment like a boundary
        segments = self.done
        if not segments and self.current.errors:  # errors but no step: one step keeps them
            segments = [self.current]
        steps = [seg.to_step(i) for i, seg in enumerate(segments)]
        return InvokeResult(
            text=steps[-1].text if steps else "",
            steps=steps,
            usage=sum_usage(self.usages),
        )


async def collect(
    events: AsyncIterator[AgentEvent],
    stream_wrapper: StreamWrapper | None = None,
    *,
    messages: Sequence[Message] | None = None,
) -> InvokeResult:
    """Consume an event stream into an ``InvokeResult`` (rules in the module docstring).

    ``stream_wrapper``, when given, is applied to ``events`` first and its output consumed;
    ``messages`` (the run's input) are :func:`invoke_messages` while it is applied.
    """
    stream = events
    if stream_wrapper is not None:
        if not callable(stream_wrapper):  # told here, not as "'bool' object is not callable"
            raise TypeError(
                "stream_wrapper= takes a function of the event stream that returns the stream "
                "to consume (as agent_otel's otel_wrapper(), called), or None, not "
                f"{_kind(stream_wrapper)}"
            )
        token = _INVOKE_MESSAGES.set(messages)
        try:
            stream = stream_wrapper(events)
        finally:
            _INVOKE_MESSAGES.reset(token)
    collector = _Collector()
    async for event in stream:
        collector.add(event)
    if collector.look_alikes:
        warnings.warn(LOOK_ALIKE, LookAlikeEventWarning, stacklevel=2)
    return collector.result()


class StreamingAgent(ABC):
    """Base class giving any agent that implements ``stream`` a correct ``invoke``.

    ``invoke`` is ``collect(self.stream(messages, config), stream_wrapper, messages=messages)``,
    so buffering never diverges from streaming. ``reset()`` is optional and not defined here.
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
        return await collect(self.stream(messages, config), stream_wrapper, messages=messages)

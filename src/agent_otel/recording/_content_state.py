"""The run's captured content: encoding it once, putting it on spans, the root's input/output.

A mixin of :class:`~agent_otel.recording._state.RunState`, which owns the attributes it reads.
"""

from __future__ import annotations

from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import report

from ._calls import RunSlots
from ._fit import recent
from ._messages import input_messages
from ._previews import set_root_content
from ._settings import RunSettings
from ._span import GuardedSpan


class RunContent(RunSlots):
    """Content capture for one run (see the module docstring)."""

    __slots__ = ()  # the attributes are declared in RunSlots

    s: RunSettings
    agent: GuardedSpan
    _has_input: bool
    _has_output: bool

    def _describe_agent(self) -> None:
        s, span = self.s, self.agent
        if s.capture is not None:
            if s.input_messages is not None:
                self.root_input(self._encode(span, "input_messages", s.input_messages))
            if s.system_instructions:
                value = [{"type": "text", "content": s.system_instructions}]
                self._capture(span, "system_instructions", A.SYSTEM_INSTRUCTIONS, value)

    def _encode(self, span: GuardedSpan, kind: Any, value: Any) -> str | None:
        """Captured content as redacted, bounded JSON (None: capture off or dropped)."""
        capture = self.s.capture
        if capture is None or not span.is_recording():
            return None
        try:  # a redaction hook or a value that cannot be serialised: drop the content only
            if kind == "input_messages":
                value = recent(value, capture.max_bytes)  # older ones cannot fit anyway
                if value is None:
                    return None
                value = input_messages(value, capture.max_bytes)
            return capture.encode(kind, value)
        except Exception:
            report("content capture")
            return None

    def _capture(self, span: GuardedSpan, kind: Any, key: str, value: Any) -> str | None:
        """:meth:`_encode`, set on ``span`` as ``key`` when content goes on spans; the JSON."""
        encoded = self._encode(span, kind, value)
        if encoded is not None and self.s.capture is not None and self.s.capture.spans:
            span.set_attribute(key, encoded)
        return encoded

    def root_input(self, encoded: str | None) -> None:
        """The run's input (captured JSON) on the agent span: the invoke messages, else the
        first call's, encoded once for both spans."""
        self._has_input = True
        set_root_content(self.agent, self.s.capture, A.INPUT_MESSAGES, encoded)

    def root_output(self, encoded: str | None) -> None:
        """The run's answer (captured output-message JSON) on the agent span."""
        self._has_output = True
        set_root_content(self.agent, self.s.capture, A.OUTPUT_MESSAGES, encoded)

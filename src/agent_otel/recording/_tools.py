"""Tool events: a tool call opens an ``execute_tool`` span, its result (by id) ends it."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A

from ._calls import ToolRun
from ._messages import parse_arguments
from ._state import RunState


class ToolEvents(RunState):
    """Handlers for ``ToolCall``/``ToolResult`` (and ``tool_call_step``/``tool_result_step``)."""

    __slots__ = ()

    # --- tools -----------------------------------------------------------------------------------
    def tool_call(self, call_id: Any, name: Any, arguments: Any, raw: Any) -> None:
        if self.terminal:
            self.anomaly("event_after_terminal")
        self.ensure_step()
        now = self._now()
        call_id = self.read_id(call_id)
        key: object
        if call_id is None:
            self.anomaly("missing_tool_call_id")
            key = self._key()
        else:
            key = call_id
            old = self._tools.pop(key, None)
            if old is not None:
                self.anomaly("duplicate_tool_call_id")
                old.end(now, self.s.instruments, incomplete=True)
        tool = self._start_tool(name, call_id, now)
        self._tools[key] = tool  # tracked before anything else can fail
        if self.current_call is not None and self.current_call.output is not None:
            self.current_call.tool_calls.append(raw)
        self._refresh()
        if self.s.capture is not None and arguments is not None:
            value = parse_arguments(arguments, self.anomaly)
            self._capture(tool.span, "tool_arguments", A.TOOL_CALL_ARGUMENTS, value)

    def _start_tool(self, name: Any, call_id: str | None, now: int) -> ToolRun:
        name = name if isinstance(name, str) and name else "unknown"
        attributes: dict[str, AttributeValue] = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: name,
            A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
        }
        if call_id is not None:
            attributes[A.TOOL_CALL_ID] = call_id
        attributes.update(self.identity)
        span = self.start_span(
            f"{A.OP_EXECUTE_TOOL} {name}", self._step_ctx, SpanKind.INTERNAL, attributes, now
        )
        return ToolRun(span, now, name)

    def tool_result(self, call_id: Any, name: Any, content: Any, is_error: Any) -> None:
        if self.terminal:
            self.anomaly("event_after_terminal")
        now = self._now()
        call_id = self.read_id(call_id)
        tool = self._tools.pop(call_id, None) if call_id is not None else None
        if tool is None and call_id is None and len(self._tools) == 1:
            self.anomaly("missing_tool_call_id")
            tool = self._tools.pop(next(iter(self._tools)))
        incomplete = tool is None
        if tool is None:
            self.anomaly("tool_result_without_call")
            self.ensure_step()
            tool = self._start_tool(name, call_id, now)
        self._refresh()
        if self.s.capture is not None and is_error is not True:
            # gen_ai.tool.call.result is the result "if execution was successful"
            self._capture(tool.span, "tool_result", A.TOOL_CALL_RESULT, content)
        if is_error is True and tool.span.is_recording():
            tool.span.set_attribute(A.TOOL_IS_ERROR, True)
        error_type = "tool_error" if is_error is True else None
        tool.end(now, self.s.instruments, error_type=error_type, incomplete=incomplete)

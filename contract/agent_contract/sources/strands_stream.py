"""Strands Agents: ``Agent.stream_async`` dict events as contract events.

Strands yields dicts; the adapter reads three kinds by key (nothing of Strands is imported):

* ``{"event": ...}``: the model's Converse stream, raw. ``messageStart`` opens an LLM call
  (``LLMCallStart`` with the model's ``model_id``; a ``StepBoundary`` first when tools ran
  since the call before); ``contentBlockDelta`` text is a ``TextDelta``, its
  ``reasoningContent`` text a ``ReasoningDelta``; ``messageStop`` gives the stop reason and
  ``metadata`` the usage.
* ``{"message": ...}``: a whole message. The assistant's closes the call: its ``toolUse``
  blocks are ``ToolCall``\\ s (Strands' ``toolUseId``), then ``Usage`` and ``LLMCallEnd``. A
  user message's ``toolResult`` blocks are ``ToolResult``\\ s (``status="error"`` an error
  result, which Strands makes of a tool that raised; its ``error_type`` is the exception class
  the ``@tool`` decorator's message names).
* The rest (``data`` and ``reasoningText`` repeat the raw deltas; ``current_tool_use``,
  lifecycle flags, the final ``result``) go to ``sink`` only.

Each tool's body runs under ``agent_contract.scope.tool_scope`` of its call, through Strands'
own seam: hook callbacks added once to the agent's ``hooks`` (outside a traced run they do
nothing). Strands fires ``BeforeToolCallEvent`` and ``AfterToolCallEvent`` inline in the
call's own task, around the tool (a sync tool's thread copies that context), on every path
(a failed or cancelled call included), with the call's ``toolUseId``.

Usage: Strands normalises every provider to Bedrock's names, but ``inputTokens`` means what
the provider says: Bedrock and Anthropic leave cache reads and writes out (their
``totalTokens`` adds them back), OpenAI counts them in. Input tokens here include the cache,
as the GenAI conventions say: the cache counts are added when ``totalTokens`` shows they were
left out. Needs ``strands-agents`` (extra ``strands-agents``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any
from weakref import WeakSet

from agent_contract.events import (
    AgentEvent,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.sources._failure import failed_result
from agent_contract.sources._scoping import OpenScopes
from agent_contract.sources._stream import Sink

__all__ = ["strands_events"]

# A ``@tool`` function's exception, as Strands' decorator reports it to the model.
_DECORATOR_ERROR = re.compile(r"Error: ([A-Za-z_][A-Za-z0-9_.]{0,127}) - ")


async def strands_events(
    agent: Any, prompt: Any = None, *, sink: Sink | None = None, **run: Any
) -> AsyncIterator[AgentEvent]:
    """Run ``agent`` on ``prompt`` with ``stream_async`` (``run`` passed on), as events."""
    _add_scope_hooks(agent)
    stream = agent.stream_async(prompt, **run)
    state = _State(_model_id(agent))
    try:
        async for item in stream:
            if sink is not None:
                sink(item)
            if isinstance(item, dict):
                for out in state.feed(item):
                    yield out
    finally:
        await stream.aclose()


def _model_id(agent: Any) -> str | None:
    model = getattr(agent, "model", None)
    try:
        config = model.get_config() if model is not None else None
    except Exception:  # a model without a readable config still streams
        config = None
    name = config.get("model_id") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None


_SCOPED: WeakSet[Any] = WeakSet()


def _add_scope_hooks(agent: Any) -> None:
    """Scope each tool call of ``agent`` (module doc), once per agent."""
    hooks = getattr(agent, "hooks", None)
    if hooks is None or agent in _SCOPED:
        return
    from strands.hooks import (  # type: ignore[import-not-found,unused-ignore]
        AfterToolCallEvent,
        BeforeToolCallEvent,
    )

    scopes = OpenScopes()

    def key(event: Any) -> object:
        return id(event.tool_use)  # the same dict before and after, one per call

    def before(event: Any) -> None:
        use = event.tool_use
        scopes.enter(key(event), use.get("toolUseId"), use.get("name"))

    def after(event: Any) -> None:
        scopes.exit(key(event))

    hooks.add_callback(BeforeToolCallEvent, before)
    hooks.add_callback(AfterToolCallEvent, after)
    _SCOPED.add(agent)


class _State:
    __slots__ = ("model", "open", "step", "stop", "tools_ran", "usage")

    def __init__(self, model: str | None) -> None:
        self.model = model
        self.open = self.tools_ran = False
        self.step = 0
        self.stop: str | None = None
        self.usage: dict[str, Any] | None = None

    def feed(self, item: dict[str, Any]) -> list[AgentEvent]:
        raw = item.get("event")
        if isinstance(raw, dict):
            return self._raw(raw)
        message = item.get("message")
        if isinstance(message, dict) and len(item) == 1:
            return self._message(message)
        return []

    def _raw(self, raw: dict[str, Any]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        if "messageStart" in raw:
            self._open(out)
        elif "contentBlockDelta" in raw:
            self._open(out)
            delta = raw["contentBlockDelta"].get("delta") or {}
            text = delta.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(text=text))
            thought = (delta.get("reasoningContent") or {}).get("text")
            if isinstance(thought, str) and thought:
                out.append(ReasoningDelta(text=thought))
        elif "messageStop" in raw:
            self.stop = raw["messageStop"].get("stopReason")
        elif "metadata" in raw:
            usage = raw["metadata"].get("usage")
            self.usage = usage if isinstance(usage, dict) else None
        return out

    def _open(self, out: list[AgentEvent]) -> None:
        if self.open:
            return
        if self.tools_ran:
            out.append(StepBoundary(index=self.step))
            self.step, self.tools_ran = self.step + 1, False
        out.append(LLMCallStart(model=self.model, params={"stream": True}))
        self.open, self.stop, self.usage = True, None, None

    def _message(self, message: dict[str, Any]) -> list[AgentEvent]:
        blocks = message.get("content") or []
        out: list[AgentEvent] = []
        if message.get("role") == "assistant":
            if not self.open:
                return out
            for block in blocks:
                use = block.get("toolUse") if isinstance(block, dict) else None
                if isinstance(use, dict):
                    call = FunctionCall(use.get("name"), json.dumps(use.get("input") or {}))
                    out.append(ToolCall(id=use.get("toolUseId"), function=call))
            if self.usage is not None:
                out.append(_usage(self.usage, self.model))
            out.append(LLMCallEnd(model=self.model, finish_reason=self.stop))
            self.open = False
            return out
        for block in blocks:
            result = block.get("toolResult") if isinstance(block, dict) else None
            if isinstance(result, dict):
                self.tools_ran = True
                out.append(_result(result))
        return out


def _usage(usage: dict[str, Any], model: str | None) -> Usage:
    given, output = _count(usage, "inputTokens"), _count(usage, "outputTokens")
    read, wrote = (
        _count(usage, "cacheReadInputTokens") or 0,
        _count(usage, "cacheWriteInputTokens") or 0,
    )
    total = _count(usage, "totalTokens")
    left_out = (read or wrote) and given is not None and output is not None
    if left_out and total == given + output + read + wrote:  # type: ignore[operator]
        given += read + wrote  # type: ignore[operator]  # the provider left the cache out
    return Usage(
        input_tokens=given, output_tokens=output, total_tokens=total,
        cache_read_tokens=read or None, cache_creation_tokens=wrote or None, model=model,
    )  # fmt: skip


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) else None


def _result(result: dict[str, Any]) -> ToolResult:
    parts = result.get("content") or []
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    content: Any = "".join(texts) if len(texts) == len(parts) else parts
    call_id = str(result.get("toolUseId") or "")
    if result.get("status") == "error":
        return failed_result(call_id, content, None, _error_type(content))
    return ToolResult(tool_call_id=call_id, content=content)


def _error_type(content: Any) -> str:
    """The exception class a ``@tool``'s error result names (Strands writes ``Error: {class}
    - {message}``; the exception itself goes only to hooks, not the stream); else
    ``tool_error``."""
    found = _DECORATOR_ERROR.match(content) if isinstance(content, str) else None
    return found.group(1) if found is not None else "tool_error"

"""What the source tests check on a trace beside its tree: token counts, attributes, and what
another instrumentation recorded beside ours (the stand-down tests)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from opentelemetry.trace import StatusCode

from agent_contract.protocol import (
    AgentEvent,
    LLMCallStart,
    Message,
    StepBoundary,
    StreamingAgent,
    ToolCall,
    ToolResult,
)
from agent_otel.testing import InMemoryTelemetry


def as_global(monkeypatch: Any, provider: Any) -> None:
    """For this test, ``provider`` is the global tracer provider, as ``configure()`` makes it,
    so what traces to the global one records there: a framework's own tracer (ADK's, Strands',
    AutoGen's), the MCP SDK. Strands takes its tracer once per process (the first provider it
    finds): a fresh one for this test. The tests never call ``trace.set_tracer_provider``: it
    is once per process."""
    from opentelemetry import trace

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    try:
        import strands.telemetry.tracer as strands_tracer
    except ImportError:
        return
    monkeypatch.setattr(strands_tracer, "_tracer_instance", None)


def tokens(telemetry: InMemoryTelemetry, key: str = "gen_ai.usage.input_tokens") -> int:
    """``key`` summed over every span, as a backend summing spans would (counted once?)."""
    return sum(int((s.attributes or {}).get(key, 0)) for s in telemetry.spans())  # type: ignore[arg-type]


OURS = "agent_otel"  # our instrumentation scope


def input_tokens_counted(telemetry: InMemoryTelemetry) -> int:
    """Input tokens in ``gen_ai.client.token.usage``, summed over every data point (every
    scope's recordings: a token counted twice shows)."""
    points = telemetry.histograms().get("gen_ai.client.token.usage", [])
    return sum(int(getattr(p, "sum", 0)) for p in points
               if dict(p.attributes or {}).get("gen_ai.token.type") == "input")  # fmt: skip


def theirs(telemetry: InMemoryTelemetry) -> list[str]:
    """The names of the spans another instrumentation recorded (any scope but ours), sorted."""
    scopes = [(sp.name, sp.instrumentation_scope) for sp in telemetry.spans()]
    return sorted(name for name, scope in scopes if scope is None or scope.name != OURS)


def ours_recorded_twice(telemetry: InMemoryTelemetry) -> set[str]:
    """Our metrics' names that another scope recorded too (a Prometheus sum counts both)."""
    by_scope: dict[str, set[str]] = {}
    data = telemetry.metric_reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            names = {m.name for m in scope.metrics if m.data.data_points}
            by_scope.setdefault(scope.scope.name, set()).update(names)
    ours = by_scope.pop(OURS, set())
    return {name for names in by_scope.values() for name in names & ours}


def spans_saying(telemetry: InMemoryTelemetry, text: str) -> list[str]:
    """The names of the spans that hold ``text`` anywhere: in their status, their attributes
    or their events' attributes (content capture off: none may)."""
    said = [
        (span.name, span.status.description, dict(span.attributes or {}),
         [dict(e.attributes or {}) for e in span.events])
        for span in telemetry.spans()
    ]  # fmt: skip
    return [name for name, *held in said if text in repr(held)]


def phases(telemetry: InMemoryTelemetry) -> list[Any]:
    """Each step span's ``agent_otel.phase`` (who made its model call), in the order the steps
    started."""
    steps = sorted((s for s in telemetry.spans() if s.name.startswith("step ")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [(s.attributes or {}).get("agent_otel.phase") for s in steps]


def sent(span: Any) -> list[tuple[str, str]]:
    """The role and text of each message of a span's ``gen_ai.input.messages`` (content on)."""
    messages = json.loads(str((span.attributes or {})["gen_ai.input.messages"]))
    return [(m["role"], "".join(p.get("content", "") for p in m["parts"])) for m in messages]


def attributes(telemetry: InMemoryTelemetry, prefix: str) -> dict[str, Any]:
    [span] = [s for s in telemetry.spans() if s.name.startswith(prefix)]
    return dict(span.attributes or {})


def check_answered_then_failed(
    telemetry: InMemoryTelemetry, chat: str, error_type: str, input_tokens: int
) -> None:
    """The run ``bot``, one step of one model call (``chat``) that answered, then failed by an
    exception raised once the answer was whole (a callback's, a hook's: ``error_type``): the
    call ends answered, not cut short; the step and the run fail with that exception; the
    answer's ``input_tokens`` are counted, once."""
    assert telemetry.outline() == [["invoke_agent bot", [["step 0", [chat]]]]]
    answered = telemetry.span(chat)
    assert answered.status.status_code == StatusCode.UNSET
    assert "agent_otel.incomplete" not in (answered.attributes or {})
    for name in ("step 0", "invoke_agent bot"):
        span = telemetry.span(name)
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == error_type
    assert tokens(telemetry) == input_tokens
    assert telemetry.open_spans() == []


Source = Callable[[list[Message]], AsyncIterator[AgentEvent]]


async def model_and_tools(
    source: Source,
    history: list[Message],
    run: Callable[[ToolCall], Awaitable[tuple[str, bool]]],
    steps: int,
) -> AsyncIterator[AgentEvent]:
    """The loop every SDK user writes around a one-call source: call the model, run the tools
    it asked for (``run``: the output and whether it failed), call again with their results,
    stop at an answer (or after ``steps`` steps)."""
    for step in range(steps):
        calls: list[ToolCall] = []
        async for event in source(history):
            if isinstance(event, ToolCall):
                calls.append(event)
            yield event
        if not calls:
            return
        history.append(Message(role="assistant", tool_calls=calls))
        for call in calls:
            output, failed = await run(call)
            yield ToolResult(call.id or "", output, call.function.name, is_error=failed)
            history.append(Message(role="tool", tool_call_id=call.id, content=output))
        yield StepBoundary(index=step)


class ToolLoop(StreamingAgent):
    """A small agent on an SDK source: call the model, run the tools it asks for, repeat."""

    def __init__(self, source: Source, tools: dict[str, Callable[[str], str]]) -> None:
        self.source, self.tools = source, tools

    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[AgentEvent]:
        return model_and_tools(self.source, list(messages), self._run, 5)

    async def _run(self, call: ToolCall) -> tuple[str, bool]:
        return self.tools[call.function.name or ""](call.function.arguments), False


def check_inner_tools(
    telemetry: InMemoryTelemetry,
    inner: tuple[str, ...],
    model_call: tuple[str, str],
    error_type: str,
    looked_up: str | None = None,
) -> None:
    """The inner-tool script's spans past its tree: ``lookup``'s body ran ``forecast`` (which
    failed with ``error_type``) and ``weather`` for each city of ``inner``; the model then
    called ``weather`` for ``model_call``'s city under its call id. Nothing is left open or cut
    short; the model's call keeps its id, the inner ones carry none but their results;
    ``lookup`` succeeds (with ``looked_up`` in its result, if given), ending after ``forecast``."""
    assert telemetry.open_spans() == []
    spans = telemetry.spans()
    assert not any("agent_otel.incomplete" in (x.attributes or {}) for x in spans)
    tools = [dict(x.attributes or {}) for x in spans if x.name == "execute_tool weather"]
    by_city = {json.loads(str(t["gen_ai.tool.call.arguments"]))["city"]: t for t in tools}
    city, call_id = model_call
    assert sorted(by_city) == sorted([*inner, city])
    assert by_city[city]["gen_ai.tool.call.id"] == call_id  # the model's call keeps its own
    for name in inner:  # the inner ones: no model call names them
        assert "gen_ai.tool.call.id" not in by_city[name]
        assert f"sunny in {name}" in str(by_city[name]["gen_ai.tool.call.result"])
    failed = telemetry.span("execute_tool forecast")
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == error_type
    lookup_span = telemetry.span("execute_tool lookup")
    assert lookup_span.status.status_code is StatusCode.UNSET
    if looked_up is not None:
        assert looked_up in str((lookup_span.attributes or {})["gen_ai.tool.call.result"])
    assert failed.end_time is not None and lookup_span.end_time is not None
    assert failed.end_time <= lookup_span.end_time


async def first_start(source: Any) -> LLMCallStart:
    """A source's first event, its call's ``LLMCallStart``, yielded before any request is
    sent; the source closed after it."""
    try:
        start = await source.__anext__()
    finally:
        await source.aclose()
    assert isinstance(start, LLMCallStart)
    return start

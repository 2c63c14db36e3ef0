"""Google ADK, Strands and AutoGen trace to the global provider themselves: in their adapters'
runs, their spans that ours tell stand down.

Each row plays the conformance script on the framework's own test model (``_fw_<name>``) with
the test's telemetry as the global provider, as ``configure()`` makes it. Stand-down on (the
default): the very tree the run has without the globals, one chat span per model call and one
tool span per tool call (ours), in one trace, and a tool body's client span under our tool
span. Opted out (``stand_down_providers=False``) and outside a run of ours, their spans are
recorded as before.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from ._conformance import ROWS, Row

FRAMEWORKS = ("autogen", "google_adk", "strands")
NATIVE_ROWS = [row for row in ROWS if row.name.removesuffix("_openai") in FRAMEWORKS]
TOLD = ("invoke_agent", "invoke_workflow", "invocation", "execute_event_loop_cycle", "chat",
        "generate_content", "call_llm", "execute_tool")  # fmt: skip
"""The operations (a span name's first word) our spans tell: the run, a step, a model call, a
tool call, as each framework names them."""
OURS = "agent_otel"


@pytest.fixture
def global_provider(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry
) -> Iterator[InMemoryTelemetry]:
    """The test's telemetry as the global tracer provider, as ``configure()`` sets it, for the
    frameworks' own tracers too (the tests never call ``trace.set_tracer_provider``: it is
    once per process); every seam as it was afterwards."""
    provider = otel_telemetry.tracer_provider
    adk = _framework("google.adk.telemetry.tracing")  # imported before the global is set
    strands = _framework("strands.telemetry.tracer")
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    if adk is not None:  # its tracer, taken at import: a proxy keeping the first provider
        assert isinstance(adk.tracer, trace.ProxyTracer)
        monkeypatch.setattr(adk.tracer, "_real_tracer", provider.get_tracer("gcp.vertex.agent"))
    if strands is not None:  # its one Tracer took the global provider's tracer when made
        theirs = provider.get_tracer(strands.__name__)
        monkeypatch.setattr(strands.get_tracer(), "tracer", theirs)
    yield otel_telemetry
    from agent_otel.standdown import _native

    _native.restore()


def _framework(module: str) -> Any:
    """The framework's telemetry module, if the framework is installed here."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _theirs(telemetry: InMemoryTelemetry) -> list[str]:
    """The names of the spans the framework made itself that tell what ours tell."""
    return sorted(
        sp.name for sp in telemetry.spans() if _scope(sp) != OURS and sp.name.split(" ")[0] in TOLD
    )


def _scope(span: ReadableSpan) -> str:
    return span.instrumentation_scope.name if span.instrumentation_scope else ""


BUILT = "create_agent"
"""AutoGen's span of an agent's construction: made before the run, in a trace of its own (as
without agent-otel), so not one ours tell."""


def _built(span: ReadableSpan) -> bool:
    return span.parent is None and span.name.startswith(BUILT) and _scope(span) != OURS


def _one_connected_trace(telemetry: InMemoryTelemetry) -> None:
    spans = [sp for sp in telemetry.spans() if not _built(sp)]
    assert len({sp.context.trace_id for sp in spans}) == 1
    ids = {sp.context.span_id for sp in spans}
    roots = [sp for sp in spans if sp.parent is None]
    assert [sp.name for sp in roots] == ["invoke_agent agent"]
    assert all(sp.parent.span_id in ids for sp in spans if sp.parent is not None)  # no orphan


async def _outline_without_globals(row: Row) -> list[Any]:
    alone = InMemoryTelemetry()
    try:
        await run_script(alone, row.events(s.Run()), agent_name="agent")
        return alone.outline()
    finally:
        alone.shutdown()


@pytest.mark.parametrize("row", [row.param() for row in NATIVE_ROWS])
async def test_their_spans_that_ours_tell_stand_down(
    row: Row, global_provider: InMemoryTelemetry
) -> None:
    await run_script(global_provider, row.events(s.Run()), agent_name="agent")

    assert _theirs(global_provider) == []
    outline = [tree for tree in global_provider.outline() if not str(tree).startswith(BUILT)]
    assert outline == await _outline_without_globals(row)
    by_name = global_provider.by_name()
    chats = [sp for name, spans in by_name.items() if name.startswith("chat") for sp in spans]
    tools = [
        sp for name, spans in by_name.items() if name.startswith("execute_tool") for sp in spans
    ]
    assert len(chats) == len(s.TURNS) and len(tools) == len(s.CALLS)
    assert {_scope(sp) for sp in chats + tools} == {OURS}
    _one_connected_trace(global_provider)


@pytest.mark.parametrize("row", [row.param() for row in NATIVE_ROWS if row.runs_tools])
async def test_what_starts_under_their_spans_is_a_child_of_ours(
    row: Row, global_provider: InMemoryTelemetry
) -> None:
    """Each tool body opens a client span (as an HTTP or MCP client would) where the
    framework's tool span would be current: it is a child of our tool span of that call."""
    tracer = global_provider.tracer_provider.get_tracer("some.client")
    async for _ in global_provider.wrapper(agent_name=p.AGENT)(row.parallel(tracer)):
        pass

    assert _theirs(global_provider) == []
    spans = {sp.context.span_id: sp for sp in global_provider.spans() if not _built(sp)}
    clients = [sp for sp in spans.values() if sp.name.startswith("client ")]
    assert len(clients) == len(p.CALLS)
    for client in clients:
        assert client.parent is not None
        parent = spans[client.parent.span_id]
        assert (_scope(parent), parent.name.split(" ")[0]) == (OURS, "execute_tool")
        call = (parent.attributes or {}).get("gen_ai.tool.call.id")
        assert any(cid == call and client.name == f"client {x}" for cid, _, x in p.CALLS)
    assert len({sp.context.trace_id for sp in spans.values()}) == 1


@pytest.mark.parametrize("row", [row.param() for row in NATIVE_ROWS])
async def test_their_spans_stay_opted_out_and_outside_our_runs(
    row: Row, global_provider: InMemoryTelemetry
) -> None:
    opted_out = global_provider.wrapper(agent_name="agent", stand_down_providers=False)
    [_ async for _ in opted_out(row.events(s.Run()))]
    assert any(name.startswith("execute_tool") for name in _theirs(global_provider))
    _one_connected_trace(global_provider)  # theirs under ours, as before

    global_provider.clear()
    [_ async for _ in row.events(s.Run())]  # the adapter alone: no run of ours (gate installed)
    assert any(name.startswith("execute_tool") for name in _theirs(global_provider))
    assert {_scope(sp) for sp in global_provider.spans()} - {OURS} == {
        _scope(sp) for sp in global_provider.spans()
    }


async def test_the_gate_decides_in_each_context_and_comes_out(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two tasks at once through one gated tracer: only the one in a covered run's context
    stands its span down (a client span started under it is the run's child); gating twice
    changes nothing; taken out, the covered one's span is back."""
    from opentelemetry import context as otel_context

    from agent_otel.standdown import _native

    theirs = otel_telemetry.tracer_provider.get_tracer("strands.telemetry.tracer")
    ours = otel_telemetry.tracer_provider.get_tracer(OURS)
    assert _native.gate("strands", theirs) and not _native.gate("strands", theirs)

    async def call(covered: bool) -> None:
        with ours.start_as_current_span("invoke_agent agent"):
            token = otel_context.attach(otel_context.set_value(_native.NATIVE, "strands"))
            if not covered:
                otel_context.detach(token)
            with theirs.start_as_current_span("chat"):
                await asyncio.sleep(0.01)  # the other task runs meanwhile
                with ours.start_as_current_span("client"):
                    pass
            if covered:
                otel_context.detach(token)

    try:
        await asyncio.gather(call(True), call(False))
        spans = otel_telemetry.spans()
        assert [sp.name for sp in spans if _scope(sp) != OURS] == ["chat"]  # the uncovered one
        names = {sp.context.span_id: sp.name for sp in spans}
        parents = sorted(names[sp.parent.span_id] for sp in spans if sp.name == "client")
        assert parents == ["chat", "invoke_agent agent"]
    finally:
        _native.ungate(theirs)
    otel_telemetry.clear()
    await call(True)
    assert [sp.name for sp in otel_telemetry.spans() if _scope(sp) != OURS] == ["chat"]

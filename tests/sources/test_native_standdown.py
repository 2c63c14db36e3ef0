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
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as otel_metrics
from opentelemetry.sdk.metrics.export import HistogramDataPoint, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel.testing import InMemoryTelemetry, run_script, span_outline

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
    """The test's telemetry as the global tracer and meter providers, as ``configure()`` sets
    them, for the frameworks' own tracers and instruments too (the tests never call
    ``trace.set_tracer_provider`` or ``metrics.set_meter_provider``: once per process); every
    seam as it was afterwards."""
    adk = _framework("google.adk.telemetry.tracing")  # imported before the globals are set
    _framework("google.adk.telemetry._instrumentation")  # its meter, a proxy, at import too
    _global_meter(monkeypatch, otel_telemetry)
    provider = otel_telemetry.tracer_provider
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


def _global_meter(monkeypatch: pytest.MonkeyPatch, telemetry: InMemoryTelemetry) -> None:
    """``telemetry``'s meter provider as the global one, as ``metrics.set_meter_provider``
    makes it: the instruments the frameworks made at import on the API's proxy meters record
    into it, and so do those made later (Strands' one ``MetricsClient``, made again here)."""
    provider = telemetry.meter_provider
    proxy = otel_metrics._PROXY_METER_PROVIDER
    monkeypatch.setattr(otel_metrics, "_METER_PROVIDER", provider)
    monkeypatch.setattr(proxy, "_real_meter_provider", provider)
    for meter in proxy._meters:
        real = provider.get_meter(meter._name, meter._version, meter._schema_url)
        monkeypatch.setattr(meter, "_real_meter", real)
        for instrument in meter._instruments:
            monkeypatch.setattr(
                instrument, "_real_instrument", instrument._create_real_instrument(real)
            )
    strands = _framework("strands.telemetry.metrics")
    if strands is not None:  # its one client took the global provider's meter when made
        monkeypatch.setattr(strands.MetricsClient, "_instance", None)
    assert metrics.get_meter_provider() is provider


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
    from agent_otel.standdown._context import cover

    theirs = otel_telemetry.tracer_provider.get_tracer("strands.telemetry.tracer")
    ours = otel_telemetry.tracer_provider.get_tracer(OURS)
    assert _native.gate("strands", theirs) and not _native.gate("strands", theirs)

    async def call(covered: bool) -> None:
        with ours.start_as_current_span("invoke_agent agent"):
            run = cover(otel_context.get_current(), lambda: True)  # an open run's, as a run's
            token = otel_context.attach(otel_context.set_value(_native.NATIVE, "strands", run))
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


TOLD_METRICS = frozenset({
    # Google ADK's, under the very names of ours (meter gcp.vertex.agent)
    "gen_ai.client.token.usage", "gen_ai.client.operation.duration",
    "gen_ai.execute_tool.duration", "gen_ai.invoke_agent.duration",
    "gen_ai.invoke_agent.inference_calls", "gen_ai.invoke_agent.tool_calls",
    # Strands' (its MetricsClient): each model call's tokens, latency and first byte, each
    # tool call's duration
    "strands.event_loop.input.tokens", "strands.event_loop.output.tokens",
    "strands.event_loop.cache_read.input.tokens", "strands.event_loop.cache_write.input.tokens",
    "strands.event_loop.latency", "strands.model.time_to_first_token", "strands.tool.duration",
})  # fmt: skip
"""The frameworks' own metrics that measure what ours measure (a model call's tokens and
duration, a tool call's duration, a run's duration and call counts)."""
KEPT_METRICS = {
    "google_adk": (),  # its workflow and skill metrics: none in a one-agent run
    "strands": ("strands.event_loop.cycle_count", "strands.tool.call_count"),
}
"""The frameworks recording metrics of their own (AutoGen records none), with those of theirs
a run records that nothing of ours measures."""
HAS_METRICS = tuple(KEPT_METRICS)


def _recorded(telemetry: InMemoryTelemetry) -> dict[tuple[str, str], tuple[int, float]]:
    """Every metric recorded so far, by (scope, name): data points' count and sum (a
    histogram's recordings, a counter's value)."""
    out: dict[tuple[str, str], tuple[int, float]] = {}
    data = telemetry.metric_reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                count, total = out.get((scope.scope.name, metric.name), (0, 0.0))
                for point in metric.data.data_points:
                    if isinstance(point, HistogramDataPoint):
                        count, total = count + point.count, total + point.sum
                    elif isinstance(point, NumberDataPoint):
                        count, total = count + 1, total + point.value
                out[(scope.scope.name, metric.name)] = (count, total)
    return out


def _their_told(telemetry: InMemoryTelemetry) -> dict[str, int]:
    """Recordings of the frameworks' own metrics that ours tell, by name."""
    return {
        name: count
        for (scope, name), (count, _) in _recorded(telemetry).items()
        if scope != OURS and name in TOLD_METRICS and count
    }


def _token_sum(telemetry: InMemoryTelemetry) -> tuple[float, float]:
    """``gen_ai.client.token.usage`` summed over every scope (what a dashboard's sum reads),
    and over ours alone."""
    recorded = _recorded(telemetry)
    name = "gen_ai.client.token.usage"
    every = sum(total for (_, metric), (_, total) in recorded.items() if metric == name)
    return every, recorded.get((OURS, name), (0, 0.0))[1]


@pytest.mark.parametrize("row", [row.param() for row in NATIVE_ROWS])
async def test_their_metrics_that_ours_tell_stand_down(
    row: Row, global_provider: InMemoryTelemetry
) -> None:
    """A traced run with the globals set: each model call's tokens are counted once (ours),
    not once more by the framework's own meter under the same metric name; the framework's
    metrics that nothing of ours measures are recorded as before."""
    await run_script(global_provider, row.events(s.Run()), agent_name="agent")

    assert _their_told(global_provider) == {}
    every, ours = _token_sum(global_provider)
    assert ours > 0 and every == ours
    kept = {name for (scope, name), (count, _) in _recorded(global_provider).items() if count}
    assert set(KEPT_METRICS.get(row.name.removesuffix("_openai"), ())) <= kept


@pytest.mark.parametrize(
    "row", [row.param() for row in NATIVE_ROWS if row.name.removesuffix("_openai") in HAS_METRICS]
)
async def test_their_metrics_stay_opted_out_and_outside_our_runs(
    row: Row, global_provider: InMemoryTelemetry
) -> None:
    opted_out = global_provider.wrapper(agent_name="agent", stand_down_providers=False)
    [_ async for _ in opted_out(row.events(s.Run()))]
    told = _their_told(global_provider)
    assert told and all(count > 0 for count in told.values())

    [_ async for _ in row.events(s.Run())]  # the adapter alone: no run of ours (gate installed)
    again = _their_told(global_provider)
    names = set(told) - _WHOLE_MILLISECONDS
    assert set(again) - _WHOLE_MILLISECONDS == names
    assert all(again[name] > told[name] for name in names), (told, again)


_WHOLE_MILLISECONDS = {"strands.model.time_to_first_token"}
"""Recorded by Strands only when the first chunk took a whole millisecond or more (it records
``int(1000 * seconds)`` when truthy): on a fast run, not at all, so it may not grow."""


async def test_adk_model_calls_ours_do_not_tell_keep_their_metrics(
    global_provider: InMemoryTelemetry,
) -> None:
    """In an ADK run of ours, the agent's model call records nothing of ADK's (ours tells it),
    while a model call its model-consult tool makes on its own (through ``_metrics``
    directly; no chat span of ours) keeps its tokens; taken out, the agent's records too."""
    pytest.importorskip("google.adk")
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.telemetry import _instrumentation, _metrics
    from google.genai import types
    from opentelemetry import context as otel_context

    from agent_otel.standdown import _native
    from agent_otel.standdown._context import cover

    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=7, candidates_token_count=3, total_token_count=10
    )
    call: dict[str, Any] = {
        "agent_name": "advisor", "llm_request": LlmRequest(model="scripted-gemini"),
        "responses": [LlmResponse(usage_metadata=usage, model_version="scripted-gemini")],
    }  # fmt: skip
    assert _native.install("google_adk")
    run = cover(otel_context.get_current(), lambda: True)  # an open run's context
    token = otel_context.attach(otel_context.set_value(_native.NATIVE, "google_adk", run))
    try:
        _metrics.record_client_token_usage(**call)  # the model-consult tool's
        _instrumentation._metrics.record_client_token_usage(**call)  # the agent's
    finally:
        otel_context.detach(token)
    adk = ("gcp.vertex.agent", "gen_ai.client.token.usage")
    assert _recorded(global_provider)[adk] == (2, 10.0)  # input and output, once

    _native.restore()
    assert _instrumentation._metrics is _metrics
    _instrumentation._metrics.record_client_token_usage(**call)
    assert _recorded(global_provider)[adk] == (4, 20.0)


@pytest.mark.parametrize("team", ["round_robin", "selector", "swarm"])
async def test_an_autogen_teams_own_spans_stand_down_and_its_messages_nest_in_the_run(
    team: str, global_provider: InMemoryTelemetry
) -> None:
    """A team traced with the globals set: no member's agent, chat or tool span of AutoGen's
    beside ours (the tree the run has without them), its runtime's message spans in the run,
    under our run span, and each step naming the member that spoke."""
    pytest.importorskip("autogen_agentchat")
    from agent_contract.sources.autogen_stream import autogen_events

    from .test_autogen_teams import SPEAKERS, TEAMS

    [(build, steps)] = [(b, o) for name, b, o, _ in TEAMS if name == team]
    await run_script(global_provider, autogen_events(build(), "Weather?"), agent_name="agent")

    assert _theirs(global_provider) == []
    spans = [sp for sp in global_provider.spans() if not _built(sp)]
    ours = [sp for sp in spans if _scope(sp) == OURS]
    assert span_outline(ours) == [["invoke_agent agent", steps]]
    _one_connected_trace(global_provider)
    runtime = [sp for sp in spans if _scope(sp) != OURS]
    assert runtime and all(sp.name.startswith("autogen ") for sp in runtime)
    by_id = {sp.context.span_id: sp for sp in spans}
    for sp in runtime:  # every message span is the run's descendant
        while sp.parent is not None:
            sp = by_id[sp.parent.span_id]
        assert sp.name == "invoke_agent agent" and _scope(sp) == OURS
    named = sorted(
        (sp for sp in ours if sp.name.startswith("step ")), key=lambda sp: sp.start_time or 0
    )
    assert [(sp.attributes or {}).get("agent_otel.phase") for sp in named] == SPEAKERS[team]


@pytest.mark.internal_errors
def test_a_metrics_seam_that_fails_leaves_the_span_gate_on(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Strands whose metrics client cannot be made where the gate reads it (another
    version's constructor) cost the run its span gate too: the whole stand-down was given up
    and every span of Strands' that ours tell was told twice. Each seam is now gated on its
    own: that one failure is reported, the spans still stand down."""
    import types

    from opentelemetry import context as otel_context

    from agent_otel.standdown import _native

    class MetricsClient:
        _instance = None

        def __init__(self) -> None:
            raise RuntimeError("another version's constructor")

    tracer = otel_telemetry.tracer_provider.get_tracer("strands.telemetry.tracer")
    metrics = types.ModuleType(_native._STRANDS_METRICS)
    metrics.MetricsClient = MetricsClient  # type: ignore[attr-defined]
    tracing = types.ModuleType(_native._STRANDS)
    tracing._tracer_instance = types.SimpleNamespace(tracer=tracer)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, _native._STRANDS_METRICS, metrics)
    monkeypatch.setitem(sys.modules, _native._STRANDS, tracing)
    try:
        context = _native.native_run(
            otel_context.Context(), "agent_contract.sources.strands_stream"
        )
        assert otel_context.get_value(_native.NATIVE, context) == "strands"
        assert "_agent_otel_native" in vars(tracer)  # its spans are gated
    finally:
        _native.ungate(tracer)


async def test_a_task_that_outlived_its_adapters_run_keeps_the_frameworks_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """pydantic-ai's own instrumentation (``Agent.instrument_all()``) stands down in a run of
    its adapter. A task that run started (a tool's background work, which copies the run's
    context) and that runs an agent once the run has ended runs outside our runs, yet its
    agent-run and model-request spans stood down: the run's gate outlived the run. Now they
    are recorded as those of any agent run outside ours."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    def theirs() -> list[str]:
        return sorted(sp.name for sp in otel_telemetry.spans() if _scope(sp) != OURS)

    async def later_run() -> None:
        await pydantic_ai.Agent(TestModel(), name="summariser").run("summarise")

    run_ended, left = asyncio.Event(), []

    async def remember(fact: str) -> str:
        """Remember a fact (summarised later, in the background)."""

        async def summarise() -> None:
            await run_ended.wait()
            await later_run()

        left.append(asyncio.create_task(summarise()))
        return "noted"

    settings = InstrumentationSettings(
        tracer_provider=otel_telemetry.tracer_provider, meter_provider=otel_telemetry.meter_provider
    )
    pydantic_ai.Agent.instrument_all(settings)
    try:
        await later_run()  # outside our runs: what its spans are
        outside = theirs()
        assert outside  # its instrumentation records here
        otel_telemetry.clear()

        agent = pydantic_ai.Agent(TestModel(), tools=[remember])
        events = pydantic_ai_events(agent, "remember that it rains")
        async for _ in otel_telemetry.wrapper(agent_name="agent")(events):
            pass
        assert left and theirs() == []  # the run's own stood down; the task waits
        run_ended.set()
        await asyncio.gather(*left)
        assert theirs() == outside  # the task's run, after ours ended: recorded
    finally:
        pydantic_ai.Agent.instrument_all(False)

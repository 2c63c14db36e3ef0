"""Context across runs and processes: config["otel_context"], inject/extract, a worker process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from agent_contract.agent import Agent, MessageFinal
from agent_contract.examples import NonStreamingAgent, ScriptedAgent
from agent_contract.protocol import Message, StreamingAgent, TextDelta
from agent_otel.decorating._instrument import instrument
from agent_otel.decorating._propagation import extract_context, inject_context
from agent_otel.testing import InMemoryTelemetry
from hostile_types import LyingDict, LyingKey, LyingList, LyingStr
from test_instrument_support import USER, agent_spans


def _ids(span: Any) -> tuple[int, int]:
    context = span.get_span_context() if hasattr(span, "get_span_context") else span.context
    return context.trace_id, context.span_id


# --- inject / extract ---------------------------------------------------------------------------
def test_inject_extract_round_trip(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("caller") as span:
        token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            carrier = inject_context()
        finally:
            otel_context.detach(token)
    assert set(carrier) >= {"traceparent", "baggage"}
    json.dumps(carrier)  # plain strings: travels as JSON
    extracted = extract_context(carrier)
    remote = trace.get_current_span(extracted).get_span_context()
    assert (remote.trace_id, remote.span_id) == _ids(span)
    assert remote.is_remote
    assert baggage.get_baggage("tenant", extracted) == "acme"


def test_inject_without_span_is_empty() -> None:
    assert "traceparent" not in inject_context(Context())


# --- the caller's otel_context is the parent --------------------------------------------------
class Reporting(StreamingAgent):
    """Event contract: records the otel_context its stream body sees and the span current."""

    def __init__(self) -> None:
        self.seen: Any = None
        self.current: Any = None

    async def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        self.seen = (config or {}).get("otel_context")
        self.current = trace.get_current_span()
        yield TextDelta("x")


class ReportingAgent(Agent):
    """Agent contract, streaming: records the otel_context kwarg its body sees."""

    tool_name = "reporting"
    tool_description = "Reports its context (test agent)."

    def __init__(self) -> None:
        self.seen: Any = None

    async def astream(self, **kwargs: Any) -> AsyncIterator[Any]:
        self.seen = kwargs.get("otel_context")
        yield MessageFinal(text="ok")

    async def run(self, **kwargs: Any) -> Any:
        return await self._drain(self.astream(**kwargs))


class ReportingRun(NonStreamingAgent):
    async def run(self, **kwargs: Any) -> Any:
        self.last_kwargs = kwargs
        return "ok"


def _caller(telemetry: InMemoryTelemetry) -> tuple[Any, Context]:
    tracer = telemetry.tracer_provider.get_tracer("test")
    span = tracer.start_span("caller")
    return span, trace.set_span_in_context(span)


def _agent_span_parent(telemetry: InMemoryTelemetry) -> tuple[int, int]:
    [span] = agent_spans(telemetry)
    assert span.parent is not None
    return span.context.trace_id, span.parent.span_id  # type: ignore[union-attr]


def _run_context_ids(value: Any) -> tuple[int, int]:
    context = extract_context(value) if not isinstance(value, Context) else value
    return _ids(trace.get_current_span(context))


@pytest.mark.parametrize("form", ["context", "carrier"])
@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_parent_and_agent_context(
    otel_telemetry: InMemoryTelemetry, form: str, entry: str
) -> None:
    span, context = _caller(otel_telemetry)
    value: Any = context if form == "context" else inject_context(context)
    raw = Reporting()
    agent = instrument(raw, **otel_telemetry.providers())
    config = {"otel_context": value}
    if entry == "stream":
        [e async for e in agent.stream(USER, config)]
    else:
        await agent.invoke(USER, config=config)
    span.end()
    assert _agent_span_parent(otel_telemetry) == _ids(span)
    assert config == {"otel_context": value}  # the caller's dict is not touched
    # the agent receives the run's context (its invoke_agent span), in the caller's form
    [run_span] = agent_spans(otel_telemetry)
    assert isinstance(raw.seen, Context if form == "context" else dict)
    assert _run_context_ids(raw.seen) == _ids(run_span)
    assert _ids(raw.current) == _ids(run_span)


async def test_event_agent_gets_context_without_asking(otel_telemetry: InMemoryTelemetry) -> None:
    raw = Reporting()
    await instrument(raw, **otel_telemetry.providers()).invoke(USER)
    [run_span] = agent_spans(otel_telemetry)
    assert isinstance(raw.seen, Context)
    assert _run_context_ids(raw.seen) == _ids(run_span)
    assert run_span.parent is None


@pytest.mark.parametrize("form", ["context", "carrier"])
@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_parent_and_agent_context(
    otel_telemetry: InMemoryTelemetry, form: str, entry: str, streaming: bool
) -> None:
    span, context = _caller(otel_telemetry)
    value: Any = context if form == "context" else inject_context(context)
    raw: Any = ReportingAgent() if streaming else ReportingRun()
    agent = instrument(raw, **otel_telemetry.providers())
    if entry == "run":
        await agent.run(user_message="hi", otel_context=value)
    else:
        [e async for e in agent.astream(user_message="hi", otel_context=value)]
    span.end()
    assert _agent_span_parent(otel_telemetry) == _ids(span)
    seen = raw.seen if streaming else raw.last_kwargs["otel_context"]
    [run_span] = agent_spans(otel_telemetry)
    assert isinstance(seen, Context if form == "context" else dict)
    assert _run_context_ids(seen) == _ids(run_span)


async def test_agent_contract_adds_no_otel_context(otel_telemetry: InMemoryTelemetry) -> None:
    raw = ReportingRun()
    await instrument(raw, **otel_telemetry.providers()).run(user_message="hi")
    assert raw.last_kwargs == {"user_message": "hi"}


@pytest.mark.parametrize("value", [{}, {"traceparent": "garbage"}, 42, None])
async def test_unusable_otel_context_falls_back_to_current(
    otel_telemetry: InMemoryTelemetry, value: Any
) -> None:
    span, context = _caller(otel_telemetry)
    agent = instrument(ScriptedAgent([TextDelta("x")]), **otel_telemetry.providers())
    token = otel_context.attach(context)
    try:
        await agent.invoke(USER, config={"otel_context": value})
    finally:
        otel_context.detach(token)
    span.end()
    assert _agent_span_parent(otel_telemetry) == _ids(span)


# --- across processes: a worker runs the agent, one trace --------------------------------------
WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from agent_contract.agent import Agent, MessageFinal
    from agent_contract.protocol import Message, StreamingAgent, TextDelta
    from opentelemetry import trace
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from agent_otel.decorating._instrument import instrument
    from agent_otel.decorating._propagation import extract_context
    from agent_otel.testing import InMemoryTelemetry

    telemetry = InMemoryTelemetry(ids=RandomIdGenerator())
    tracer = telemetry.tracer_provider.get_tracer("worker")

    class Worker(StreamingAgent):
        async def stream(self, messages, config=None):
            # agent-internal tracing, parented by the context the run hands over (a carrier,
            # the form this agent's callers use)
            parent = extract_context(config["otel_context"])
            with tracer.start_as_current_span("internal", context=parent):
                yield TextDelta("done")

    class Activity(Agent):
        tool_name = "activity"
        tool_description = "A Temporal-style activity (test agent)."

        async def run(self, **kwargs):
            parent = extract_context(kwargs["otel_context"])
            with tracer.start_as_current_span("activity internal", context=parent):
                return "done"

    async def main(carrier):
        await instrument(Worker(), tracer_provider=telemetry.tracer_provider).invoke(
            [Message(role="user", content="go")], config={"otel_context": carrier}
        )
        await instrument(Activity(), tracer_provider=telemetry.tracer_provider).run(
            user_message="go", otel_context=carrier
        )

    asyncio.run(main(json.loads(sys.stdin.read())))
    print(json.dumps([
        {
            "name": s.name,
            "trace_id": s.context.trace_id,
            "span_id": s.context.span_id,
            "parent_id": s.parent.span_id if s.parent else None,
            "remote_parent": bool(s.parent and s.parent.is_remote),
        }
        for s in telemetry.spans()
    ]))
    """
)


def test_agent_in_another_process_joins_the_trace(tmp_path: Path) -> None:
    telemetry = InMemoryTelemetry(ids=RandomIdGenerator())
    tracer = telemetry.tracer_provider.get_tracer("caller")
    with tracer.start_as_current_span("workflow") as caller:
        carrier = inject_context()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    done = subprocess.run(
        [sys.executable, str(script)],
        input=json.dumps(carrier),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spans = {s["name"]: s for s in json.loads(done.stdout)}
    trace_id, caller_id = _ids(caller)
    assert {s["trace_id"] for s in spans.values()} == {trace_id}
    worker, activity = spans["invoke_agent Worker"], spans["invoke_agent activity"]
    for run in (worker, activity):
        assert run["parent_id"] == caller_id
        assert run["remote_parent"]
    assert spans["internal"]["parent_id"] == worker["span_id"]
    assert spans["activity internal"]["parent_id"] == activity["span_id"]
    telemetry.shutdown()


# --- carriers as message headers arrive ---------------------------------------------------------
def _header_forms(carrier: dict[str, str]) -> list[Any]:
    as_bytes = {k: v.encode() for k, v in carrier.items()}
    return [
        as_bytes,  # AMQP / HTTP libraries handing bytes
        {k.encode(): v for k, v in as_bytes.items()},  # bytes keys too
        list(as_bytes.items()),  # Kafka: a list of (str, bytes) pairs
        tuple((k.encode(), bytearray(v)) for k, v in as_bytes.items()),
        {k.title(): [v] for k, v in carrier.items()},  # HTTP-style case and multi-values
    ]


def _hostile_carriers(carrier: dict[str, str]) -> list[Any]:
    return [
        LyingDict(carrier),  # its own items, keys, get, iteration and length raise
        {LyingKey(k): LyingStr(v) for k, v in carrier.items()},
        LyingList([LyingList([k, v]) for k, v in carrier.items()]),  # Kafka-style pairs
        [LyingStr("ab"), LyingDict(a=1, b=2), *carrier.items()],  # no pairs among the pairs
        {k: LyingList([v]) for k, v in carrier.items()},  # multi-values
    ]


@pytest.mark.parametrize(
    ("forms", "form"),
    [(_header_forms, i) for i in range(5)] + [(_hostile_carriers, i) for i in range(5)],
    ids=[f"headers-{i}" for i in range(5)] + [f"subclasses-{i}" for i in range(5)],
)
def test_byte_string_and_pair_carriers_are_read(
    forms: Callable[[dict[str, str]], list[Any]], form: int, otel_telemetry: InMemoryTelemetry
) -> None:
    """Every carrier form (bytes, pairs, multi-values) is read; so is one (or its keys,
    values and pairs) of a ``dict``, ``list`` or ``str`` subclass whose own methods raise,
    by the base type's own methods (its own ``items``, iteration or ``lower`` raised out of
    ``extract_context``)."""
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("producer") as span:
        token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            carrier = forms(inject_context())[form]
        finally:
            otel_context.detach(token)
    extracted = extract_context(carrier)
    remote = trace.get_current_span(extracted).get_span_context()
    assert (remote.trace_id, remote.span_id) == _ids(span)
    assert baggage.get_baggage("tenant", extracted) == "acme"


@pytest.mark.parametrize("form", range(5))
async def test_a_run_given_a_header_carrier_joins_its_trace(
    form: int, otel_telemetry: InMemoryTelemetry
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("producer") as span:
        carrier = _header_forms(inject_context())[form]
    agent = instrument(ScriptedAgent([TextDelta(text="hi")]), **otel_telemetry.providers())
    await agent.invoke(USER, config={"otel_context": carrier})
    (run,) = agent_spans(otel_telemetry)
    assert run.parent is not None and run.parent.span_id == _ids(span)[1]
    assert run.context.trace_id == _ids(span)[0]


@pytest.mark.parametrize("carrier", [[1, 2], [("traceparent", 5)], "00-ab", b"\xff", [b"x"]])
def test_a_carrier_that_is_not_headers_names_no_parent(carrier: Any) -> None:
    extracted = extract_context(carrier) if not isinstance(carrier, (str, bytes)) else Context()
    assert not trace.get_current_span(extracted).get_span_context().is_valid


@pytest.mark.parametrize("entry", ["run", "astream"])
async def test_a_run_id_with_a_lone_surrogate_never_costs_the_run_its_carrier(
    entry: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """A thread id holding a lone surrogate, handed on in a carrier (the caller passed one):
    the W3C baggage cannot encode it, so it is handed on repaired (``?``, as spans record
    it), and the run is traced (the encoding error raised into the caller)."""
    agent = NonStreamingAgent("ok")
    traced = instrument(agent, **otel_telemetry.providers())
    call = {"thread_id": "t\udc80", "otel_context": {}}
    if entry == "run":
        assert await traced.run(**call) == "ok"
    else:
        [e async for e in traced.astream(**call)]
    assert agent.last_kwargs is not None
    assert "traceparent" in agent.last_kwargs["otel_context"]
    assert "t%3F" in agent.last_kwargs["otel_context"]["baggage"]  # the id, repaired
    assert len(agent_spans(otel_telemetry)) == 1


def test_a_callers_own_baggage_that_cannot_be_encoded_leaves_the_carrier_without_baggage(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A baggage entry of the caller's own with a lone surrogate: the W3C propagator raises on
    it, so the carrier goes without baggage, never raising (the trace context still goes)."""
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("producer"):
        token = otel_context.attach(baggage.set_baggage("tenant", "a\udc80"))
        try:
            carrier = inject_context()
        finally:
            otel_context.detach(token)
    assert "traceparent" in carrier and "baggage" not in carrier

"""Run identity: session, user and conversation ids given once apply to every span of the run
and of sub-agent runs, in-process and across processes; never to metrics."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import baggage
from opentelemetry import context as otel_context

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    StreamingAgent,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import instrument, otel_wrapper
from agent_otel.decorating._propagation import extract_context, inject_context
from agent_otel.identity import RunIdentity, identity_of, run_identity
from agent_otel.identity._identity import MAX_ID_LENGTH, make_identity
from agent_otel.testing import InMemoryTelemetry
from otlp_check import Exported

IDS = {"session.id": "sess-1", "user.id": "user-1", "gen_ai.conversation.id": "conv-1"}
ID_VALUES = set(IDS.values())


def ids_of(span: Any) -> dict[str, Any]:
    attributes = dict(span.attributes or {})
    return {k: attributes[k] for k in IDS if k in attributes}


def script(sub: Any = None) -> Sequence[Any]:
    return [
        LLMCallStart(model="m", provider="p", call_id="c"),
        TextDelta("hi"),
        Usage(input_tokens=3, output_tokens=2),
        LLMCallEnd(call_id="c"),
        ToolCall(id="t", function=FunctionCall(name="delegate", arguments="{}")),
        sub,  # the tool's work: a sub-agent run while the tool span is current
        ToolResult(tool_call_id="t", content="ok"),
        StepBoundary(),
    ]


async def events(items: Sequence[Any]) -> AsyncIterator[Any]:
    for item in items:
        if callable(item):
            await item()
        elif item is not None:
            yield item


def metric_attribute_values(telemetry: InMemoryTelemetry) -> set[str]:
    data = telemetry.metric_reader.get_metrics_data()
    assert data is not None
    return {
        str(value)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
        for value in dict(point.attributes or {}).values()
    } | {
        key
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
        for key in dict(point.attributes or {})
    }


async def test_ids_given_once_are_on_every_span_of_the_run_and_its_sub_runs(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    providers = {
        "tracer_provider": otel_telemetry.tracer_provider,
        "meter_provider": otel_telemetry.meter_provider,
    }

    async def sub_agent() -> None:  # no ids given: inherited from the run above
        async for _ in otel_wrapper(agent_name="sub", **providers)(events(script())):
            pass

    outer = otel_wrapper(
        agent_name="root", session_id="sess-1", user_id="user-1", conversation_id="conv-1",
        **providers,
    )  # fmt: skip
    async for _ in outer(events(script(sub_agent))):
        pass
    spans = otel_telemetry.spans()
    names = {s.name for s in spans}
    assert names >= {
        "invoke_agent root",
        "invoke_agent sub",
        "step 0",
        "chat m",
        "execute_tool delegate",
    }
    assert len(spans) == 8
    for span in spans:
        assert ids_of(span) == IDS, span.name
    values = metric_attribute_values(otel_telemetry)
    assert not (ID_VALUES | set(IDS)) & values  # never on a metric


async def test_inner_ids_win_field_by_field(otel_telemetry: InMemoryTelemetry) -> None:
    tp = otel_telemetry.tracer_provider

    async def sub_agent() -> None:
        async for _ in otel_wrapper(agent_name="sub", tracer_provider=tp, user_id="user-2")(
            events([TextDelta("x")])
        ):
            pass

    async for _ in otel_wrapper(
        agent_name="root", tracer_provider=tp, session_id="sess-1", user_id="user-1"
    )(events(script(sub_agent))):
        pass
    spans = {s.name: s for s in otel_telemetry.spans()}
    assert ids_of(spans["invoke_agent sub"]) == {"session.id": "sess-1", "user.id": "user-2"}
    assert ids_of(spans["invoke_agent root"]) == {"session.id": "sess-1", "user.id": "user-1"}


async def test_no_ids_no_attributes(otel_telemetry: InMemoryTelemetry) -> None:
    async for _ in otel_telemetry.wrapper()(events(script())):
        pass
    assert all(ids_of(s) == {} for s in otel_telemetry.spans())


class Echo(StreamingAgent):
    async def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        self.seen = identity_of()
        yield TextDelta("done")


async def test_run_identity_block_reaches_instrumented_agents(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(Echo(), **otel_telemetry.providers())
    with run_identity(session_id="sess-1", user_id="user-1") as identity:
        assert identity == RunIdentity("sess-1", "user-1")
        await agent.invoke([Message(role="user", content="hi")])
    assert identity_of() is None  # the block restored the context
    spans = otel_telemetry.spans()
    assert otel_telemetry.outline() == [["invoke_agent Echo", ["step 0"]]]
    assert all(ids_of(s) == {"session.id": "sess-1", "user.id": "user-1"} for s in spans)


async def test_config_ids_of_an_instrumented_event_agent(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(Echo(), **otel_telemetry.providers())
    config = {"session_id": "sess-1", "user_id": "user-1", "conversation_id": "conv-1"}
    await agent.invoke([Message(role="user", content="hi")], config=config)
    spans = otel_telemetry.spans()
    assert len(spans) == 2
    assert all(ids_of(s) == IDS for s in spans)


async def test_ids_stay_out_of_the_contexts_baggage(otel_telemetry: InMemoryTelemetry) -> None:
    """Global propagators send baggage with every HTTP request: the ids must not be in it."""
    agent = Echo()
    async for _ in otel_telemetry.wrapper(user_id="user-1")(agent.stream([])):
        pass
    assert agent.seen == RunIdentity(user_id="user-1")


def test_carrier_round_trip_moves_ids_out_of_baggage() -> None:
    token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with run_identity(session_id="sess 1/ü", user_id="user-1"):
            assert baggage.get_all() == {"tenant": "acme"}
            carrier = inject_context()
    finally:
        otel_context.detach(token)
    assert "session.id" in carrier["baggage"]
    extracted = extract_context(carrier)
    assert identity_of(extracted) == RunIdentity("sess 1/ü", "user-1")
    assert dict(baggage.get_all(extracted)) == {"tenant": "acme"}


@given(st.one_of(st.none(), st.integers(), st.booleans(), st.text(max_size=600), st.binary()))
def test_hostile_ids_are_dropped_or_cut(value: Any) -> None:
    """A non-empty string is kept, cut; an int (not a bool) as its text (a database's id);
    anything else is dropped."""
    identity = make_identity(value, value, value)
    if isinstance(value, int) and not isinstance(value, bool):
        assert identity.session_id == str(value)[:MAX_ID_LENGTH]
        assert len(identity.attributes()) == 3
    elif isinstance(value, str) and value:
        assert identity.session_id == value[:MAX_ID_LENGTH]
        assert len(identity.attributes()) == 3
    else:
        assert not identity and identity.attributes() == {}


WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from agent_contract.protocol import Message, StreamingAgent, TextDelta
    from agent_otel import instrument
    from agent_otel.testing import InMemoryTelemetry

    telemetry = InMemoryTelemetry()

    class Worker(StreamingAgent):
        async def stream(self, messages, config=None):
            yield TextDelta("done")

    async def main(carrier):
        await instrument(Worker(), tracer_provider=telemetry.tracer_provider).invoke(
            [Message(role="user", content="go")], config={"otel_context": carrier}
        )

    asyncio.run(main(json.loads(sys.stdin.read())))
    print(json.dumps([dict(s.attributes) for s in telemetry.spans()]))
    """
)


def test_ids_cross_a_process_in_the_carrier(
    otel_telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    carriers: list[dict[str, str]] = []

    async def hand_off() -> None:  # the tool hands the work to a worker process
        carriers.append(inject_context())

    async def root_run() -> None:
        wrap = otel_telemetry.wrapper(
            session_id="sess-1", user_id="user-1", conversation_id="conv-1"
        )
        async for _ in wrap(events(script(hand_off))):
            pass

    asyncio.run(root_run())
    script_file = tmp_path / "worker.py"
    script_file.write_text(WORKER)
    done = subprocess.run(
        [sys.executable, str(script_file)],
        input=json.dumps(carriers[0]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    worker_spans = json.loads(done.stdout)
    assert len(worker_spans) == 2  # the worker's agent and step spans
    assert all({k: span.get(k) for k in IDS} == IDS for span in worker_spans)


# --- spans other instrumentations start inside a run ----------------------------------------
async def foreign_span_run(tracer_provider: Any) -> None:
    async def http_call() -> None:  # e.g. an HTTP client span below the tool span
        tracer_provider.get_tracer("opentelemetry.instrumentation.httpx").start_span("POST").end()

    wrap = otel_wrapper(tracer_provider=tracer_provider, session_id="sess-1", user_id="user-1")
    async for _ in wrap(events(script(http_call))):
        pass


async def test_the_processor_puts_the_ids_on_foreign_spans() -> None:
    from agent_otel import RunIdentityProcessor

    for with_processor in (False, True):
        telemetry = InMemoryTelemetry(processors=[RunIdentityProcessor()] if with_processor else [])
        await foreign_span_run(telemetry.tracer_provider)
        expected = {"session.id": "sess-1", "user.id": "user-1"} if with_processor else {}
        assert ids_of(telemetry.span("POST")) == expected
        assert all(ids_of(s) for s in telemetry.spans() if s.name != "POST")
        telemetry.shutdown()


def test_ids_on_foreign_spans_are_encodable() -> None:
    """A lone surrogate in an id (allowed: ids are the caller's strings) was set as it was on
    another library's span, and the OTLP encoder refused it; the run's own spans had it
    repaired. Now the same repair: the lone half as ``?``, a split pair joined."""
    from agent_otel import RunIdentityProcessor

    exported = Exported()
    exported.tracer_provider.add_span_processor(RunIdentityProcessor())
    with run_identity(session_id="s\udc80", user_id="u\ud83d\ude00"):
        exported.tracer_provider.get_tracer("opentelemetry.instrumentation.httpx").start_span(
            "POST"
        ).end()
    exported.assert_encodes()
    assert ids_of(exported.span("POST")) == {"session.id": "s?", "user.id": "u\U0001f600"}


async def test_configure_adds_the_identity_processor() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agent_otel import configure

    exporter = InMemorySpanExporter()
    telemetry = configure(
        "svc", console=False, set_global=False, span_processors=[SimpleSpanProcessor(exporter)]
    )
    try:
        await foreign_span_run(telemetry.tracer_provider)
    finally:
        telemetry.shutdown()
    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    assert all(ids_of(s) == {"session.id": "sess-1", "user.id": "user-1"} for s in spans)

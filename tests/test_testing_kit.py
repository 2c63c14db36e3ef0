"""The test kit users get: the wrapper factory, run_script, span lookups, internal errors."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel import ContentCapture, instrument
from agent_otel.testing import InMemoryTelemetry, run_script, span_outline

EVENTS = [LLMCallStart(model="m", call_id="c"), TextDelta("hi"), LLMCallEnd(call_id="c")]
USER = Message(role="user", content="hi")


async def test_run_script_returns_the_very_events_and_writes_to_the_telemetry(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    received = await run_script(otel_telemetry, EVENTS, agent_name="kit", step_spans=False)
    assert all(a is b for a, b in zip(received, EVENTS, strict=True))
    assert otel_telemetry.tree(attributes=False, events=False) == [
        {
            "name": "invoke_agent kit",
            "kind": "INTERNAL",
            "children": [{"name": "chat m", "kind": "CLIENT", "children": []}],
        }
    ]


@pytest.mark.parametrize(
    ("change", "told"),
    [
        (lambda events: events[1:], "dropped or added"),
        (lambda events: [events[0], TextDelta("hi"), events[2]], "events at [1]"),
    ],
)
async def test_run_script_fails_a_wrapper_that_changes_the_stream(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, change: Any, told: str
) -> None:
    """Its check raises (not ``assert``: it holds under ``python -O`` too)."""

    def wrapper(**options: Any) -> Any:
        async def changed(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
            for event in change([e async for e in stream]):
                yield event

        return changed

    monkeypatch.setattr(otel_telemetry, "wrapper", wrapper)
    with pytest.raises(AssertionError, match=re.escape(told)):
        await run_script(otel_telemetry, EVENTS)


async def test_run_script_takes_an_agents_own_stream(otel_telemetry: InMemoryTelemetry) -> None:
    async def agent() -> AsyncIterator[Any]:
        for event in EVENTS:
            yield event

    assert await run_script(otel_telemetry, agent(), agent_name="kit") == EVENTS
    assert otel_telemetry.span("invoke_agent kit").name == "invoke_agent kit"


async def test_span_and_by_name(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, EVENTS * 2, step_spans=False)
    assert [len(spans) for spans in otel_telemetry.by_name().values()] == [2, 1]
    with pytest.raises(AssertionError, match="2 spans named 'chat m'"):
        otel_telemetry.span("chat m")
    with pytest.raises(AssertionError, match="0 spans named 'nope'"):
        otel_telemetry.span("nope")


async def test_the_wrapper_factory_writes_content_events_to_the_telemetry_logger(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, EVENTS, capture_content=ContentCapture(events=True))
    assert [r.log_record.event_name for r in otel_telemetry.logs()] == [
        "gen_ai.client.inference.operation.details"
    ]


@pytest.mark.internal_errors
async def test_otel_internal_errors_lists_every_swallowed_error(
    otel_telemetry: InMemoryTelemetry, otel_internal_errors: list[str]
) -> None:
    def redact(kind: Any, value: Any) -> Any:
        raise RuntimeError("a redactor bug")

    events = [ToolCall(id="t", function=None), ToolResult(tool_call_id="t", content="x")]
    await run_script(otel_telemetry, events, capture_content=ContentCapture(redact=redact))
    await run_script(otel_telemetry, events, capture_content=ContentCapture(redact=redact))
    assert otel_internal_errors == ["content capture"] * 2  # the repeat too, logged quietly


async def test_span_and_by_name_read_final_spans_when_pending_spans_is_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """With ``pending_spans`` a run exports snapshots named like the spans they show:
    ``span(name)`` is still the one final span, ``pending()`` lists the snapshots."""
    await run_script(otel_telemetry, EVENTS, agent_name="kit", step_spans=False, pending_spans=1)
    run = otel_telemetry.span("invoke_agent kit")
    assert "agent_otel.pending" not in (run.attributes or {})
    assert [len(s) for s in otel_telemetry.by_name().values()] == [1, 1]
    snapshots = otel_telemetry.pending()
    assert snapshots[0].name == "invoke_agent kit"  # the one taken at the start
    assert snapshots[0].parent is not None
    assert snapshots[0].parent.span_id == run.context.span_id
    assert len(otel_telemetry.spans()) == 2 + len(snapshots)  # spans() shows all exported


async def test_outline_is_the_tree_by_names(otel_telemetry: InMemoryTelemetry) -> None:
    call = ToolCall(id="t", function=FunctionCall(name="search", arguments="{}"))
    events = [
        LLMCallStart(model="m"),
        call,
        LLMCallEnd(),
        ToolResult(tool_call_id="t", content="x"),
    ]
    await run_script(otel_telemetry, events, agent_name="kit")
    assert otel_telemetry.outline() == [
        ["invoke_agent kit", [["step 0", ["chat m", "execute_tool search"]]]]
    ]
    assert span_outline([]) == []
    tree = otel_telemetry.tree(attributes=False, events=False)
    assert [node["name"] for node in tree[0]["children"][0]["children"]] == [
        "chat m",
        "execute_tool search",
    ]  # the same order as the tree


async def test_open_spans_names_what_started_and_has_not_ended(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    outer = tracer.start_span("outer")
    inner = tracer.start_span("inner")
    assert otel_telemetry.open_spans() == ["outer", "inner"]
    inner.end()
    assert otel_telemetry.open_spans() == ["outer"]
    outer.end()
    await run_script(otel_telemetry, EVENTS, agent_name="kit")
    assert otel_telemetry.open_spans() == []

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c")
        yield TextDelta("hi")
        yield LLMCallEnd(call_id="c")

    stream = otel_telemetry.wrapper(agent_name="kit")(agent())
    await stream.__anext__()
    assert otel_telemetry.open_spans() == ["invoke_agent kit", "step 0", "chat m"]
    await stream.aclose()  # broken off: every span ends
    assert otel_telemetry.open_spans() == []


async def test_reading_spans_while_the_run_is_open_says_so_once(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """A test asserting inside the consumer's loop got ``[]`` from ``spans()``, ``tree()`` and
    ``outline()`` with no word: a run's spans are recorded as they end. The result is still what
    ended (nothing), and a warning says why, once, naming the open spans and the doc page."""

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c")
        yield TextDelta("hi")
        yield LLMCallEnd(call_id="c")

    assert otel_telemetry.outline() == []  # nothing run, nothing open: a legitimate answer
    assert not [r for r in caplog.records if r.name.startswith("agent_otel")]
    stream = otel_telemetry.wrapper(agent_name="kit")(agent())
    await stream.__anext__()
    assert otel_telemetry.outline() == []
    assert otel_telemetry.spans() == []
    assert otel_telemetry.tree() == []
    told = [r.getMessage() for r in caplog.records if "still open" in r.getMessage()]
    assert len(told) == 1, told
    assert "'invoke_agent kit'" in told[0] and "docs/testing.md" in told[0], told
    await stream.aclose()
    assert otel_telemetry.outline() == [["invoke_agent kit", [["step 0", ["chat m"]]]]]


def _wrapped(telemetry: InMemoryTelemetry, agent: ScriptedAgent) -> Any:
    return telemetry.wrapper(agent_name="kit")(agent.stream([USER]))


def _instrumented(telemetry: InMemoryTelemetry, agent: ScriptedAgent) -> Any:
    return instrument(agent, agent_name="kit", **telemetry.providers()).stream([USER])


@pytest.mark.parametrize("make", [_wrapped, _instrumented])
async def test_reading_spans_before_the_stream_was_pulled_says_so_once(
    make: Any, otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """A newcomer's test that made the traced stream and asserted before iterating it got
    ``[]`` from ``spans()``, ``tree()`` and ``outline()`` with no word: a run starts at its
    stream's first pull, so nothing was open yet either. The answer is still what ended
    (nothing), and a warning says why, once, with what to do and the doc page."""
    stream = make(otel_telemetry, ScriptedAgent(EVENTS))
    assert otel_telemetry.outline() == []
    assert otel_telemetry.spans() == []
    assert otel_telemetry.tree() == []
    told = [r.getMessage() for r in caplog.records if r.name.startswith("agent_otel")]
    assert len(told) == 1, told
    assert "first pull" in told[0] and "async for" in told[0], told
    assert "docs/testing.md" in told[0], told
    assert [event async for event in stream] == EVENTS  # pulled: its run is recorded
    assert otel_telemetry.outline() == [["invoke_agent kit", [["step 0", ["chat m"]]]]]


async def test_a_telemetry_made_with_the_sdk_disabled_says_why_it_recorded_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``OTEL_SDK_DISABLED=true`` left in a test's environment (set to keep tests from
    exporting) turns the kit's SDK providers off too: its runs recorded nothing, and
    ``span(name)`` blamed a stream not consumed or other providers, neither the cause."""
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    with InMemoryTelemetry() as telemetry:
        assert await run_script(telemetry, EVENTS) == EVENTS  # the agent runs as ever
        with pytest.raises(AssertionError) as raised:
            telemetry.span("invoke_agent")
        assert "OTEL_SDK_DISABLED" in str(raised.value), raised.value
        assert "docs/testing.md" in str(raised.value), raised.value
        assert telemetry.outline() == [] and telemetry.spans() == []
        told = [r.getMessage() for r in caplog.records if r.name.startswith("agent_otel")]
        assert len(told) == 1 and "OTEL_SDK_DISABLED" in told[0], told


async def test_an_empty_answer_with_no_stream_of_the_kit_left_unpulled_is_told_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A test may rightly expect nothing: a run its sampler dropped, a run with
    instrumentation suppressed, a stream made and dropped, a stream left unpulled on other
    providers. None is told off."""
    with InMemoryTelemetry(sampler=ALWAYS_OFF) as telemetry:
        assert await run_script(telemetry, EVENTS) == EVENTS  # consumed, sampled out
        with suppress_instrumentation():
            assert [e async for e in telemetry.wrapper()(ScriptedAgent(EVENTS).stream([USER]))]
        telemetry.wrapper()(ScriptedAgent(EVENTS).stream([USER]))  # made and dropped
        elsewhere = InMemoryTelemetry()  # another telemetry's providers
        kept = elsewhere.wrapper()(ScriptedAgent(EVENTS).stream([USER]))
        assert telemetry.spans() == [] and telemetry.outline() == []
        assert not [r for r in caplog.records if r.name.startswith("agent_otel")]
        assert [e async for e in kept] == EVENTS
        elsewhere.shutdown()


async def test_processors_run_before_the_export_and_export_through_wraps_it() -> None:
    seen: list[str] = []

    class Names(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            seen.append(span.name)

    class OnlyRuns(SpanProcessor):
        """Exports the run spans alone: a processor that decides what is exported."""

        def __init__(self, export: SpanProcessor) -> None:
            self.export = export

        def on_end(self, span: ReadableSpan) -> None:
            if span.name.startswith("invoke_agent"):
                self.export.on_end(span)

    telemetry = InMemoryTelemetry(processors=[Names()], export_through=OnlyRuns)
    await run_script(telemetry, EVENTS, agent_name="kit", step_spans=False)
    assert seen == ["chat m", "invoke_agent kit"]
    assert telemetry.outline() == ["invoke_agent kit"]
    telemetry.shutdown()


async def test_providers_are_the_three_as_options(otel_telemetry: InMemoryTelemetry) -> None:
    from agent_contract.examples import ScriptedAgent
    from agent_otel import instrument

    assert otel_telemetry.providers() == {
        "tracer_provider": otel_telemetry.tracer_provider,
        "meter_provider": otel_telemetry.meter_provider,
        "logger_provider": otel_telemetry.logger_provider,
    }
    agent = instrument(ScriptedAgent(EVENTS), name="kit", **otel_telemetry.providers())
    await agent.invoke([])
    assert otel_telemetry.outline() == [["invoke_agent kit", [["step 0", ["chat m"]]]]]
    assert "gen_ai.invoke_agent.duration" in otel_telemetry.histograms()


def test_an_exemplar_filter_reaches_the_meter_and_nothing_waits_for_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    import atexit

    from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, AlwaysOnExemplarFilter

    hooked: list[Any] = []
    monkeypatch.setattr(atexit, "register", lambda *args, **kw: hooked.append(args))
    counts = {}
    for name, exemplars in (("on", AlwaysOnExemplarFilter()), ("off", AlwaysOffExemplarFilter())):
        telemetry = InMemoryTelemetry(exemplar_filter=exemplars)
        asyncio.run(run_script(telemetry, EVENTS, agent_name="kit"))
        points = [p for ps in telemetry.histograms().values() for p in ps]
        assert points
        counts[name] = sum(len(p.exemplars) for p in points)
        telemetry.shutdown()
    assert counts["off"] == 0 < counts["on"]
    assert hooked == []  # one per property-test example costs no exit hook


class _Recording(BaseInstrumentor):  # type: ignore[misc]  # the SDK's base is untyped
    """Notes what it is told in ``told``, or fails to instrument (``fails``). An instrumentor
    class has one instance (``BaseInstrumentor`` is a singleton per class): one class each."""

    fails = False

    def instrumentation_dependencies(self) -> list[str]:
        return []

    def _instrument(self, **kwargs: Any) -> None:
        if self.fails:
            raise RuntimeError("cannot instrument")
        told.append((f"instrument {type(self).__name__}", sorted(kwargs)))

    def _uninstrument(self, **kwargs: Any) -> None:
        told.append((f"uninstrument {type(self).__name__}", None))


class A(_Recording):  # type: ignore[misc]
    pass


class B(_Recording):  # type: ignore[misc]
    pass


class Failing(_Recording):  # type: ignore[misc]
    fails = True


told: list[tuple[str, Any]] = []


def test_instrumented_puts_other_instrumentors_on_the_kits_providers_and_takes_them_off() -> None:
    telemetry = InMemoryTelemetry()
    told.clear()
    with (
        pytest.raises(ValueError, match="the test failed"),
        telemetry.instrumented(A(), B(), option="x") as kit,
    ):
        assert kit is telemetry
        raise ValueError("the test failed")
    keys = ["logger_provider", "meter_provider", "option", "tracer_provider"]
    assert told == [("instrument A", keys), ("instrument B", keys),
                   ("uninstrument B", None), ("uninstrument A", None)]  # fmt: skip
    told.clear()
    with (
        pytest.raises(RuntimeError, match="cannot instrument"),
        telemetry.instrumented(A(), Failing()),
    ):
        pass
    assert told == [("instrument A", keys[:2] + keys[3:]), ("uninstrument A", None)]
    telemetry.shutdown()


class Named(BaseInstrumentor):  # type: ignore[misc]
    """An instrumentor whose ``_instrument`` names what it takes (no ``**kwargs``)."""

    def instrumentation_dependencies(self) -> list[str]:
        return []

    def _instrument(
        self, *, tracer_provider: Any, meter_provider: Any, logger_provider: Any, capture: bool
    ) -> None:
        told.append(("instrument Named", capture))

    def _uninstrument(self, **kwargs: Any) -> None:
        told.append(("uninstrument Named", None))


@pytest.mark.parametrize(
    ("instrumentors", "options", "says"),
    [
        ((A(),), {"tracer_provider": None}, "tracer_provider= is given twice: leave it out"),
        ((A(), Named()), {"captur": True}, "not an option of Named: did you mean 'capture'?"),
    ],
    ids=["a provider", "a misspelt option"],
)
def test_an_option_no_instrumentor_can_take_is_told_before_any_is_instrumented(
    instrumentors: tuple[Any, ...], options: dict[str, Any], says: str
) -> None:
    """``instrumented(OpenAIInstrumentor(), tracer_provider=tp)`` got Python's "multiple values
    for keyword argument", an option misspelt to an instrumentor that names what it takes a
    ``TypeError`` from its ``_instrument`` after those before it were instrumented. Both are
    told at the call, none instrumented; an instrumentor taking ``**kwargs`` gets any option
    (the test above: ``option="x"``)."""
    telemetry = InMemoryTelemetry()
    told.clear()
    with pytest.raises(TypeError) as raised, telemetry.instrumented(*instrumentors, **options):
        pass
    assert says in str(raised.value)
    assert "docs/testing.md" in str(raised.value)
    assert told == []
    with telemetry.instrumented(Named(), capture=True):  # what it takes goes through
        assert told == [("instrument Named", True)]
    telemetry.shutdown()


async def test_a_telemetry_in_a_with_block_ends_with_it_and_keeps_what_it_recorded() -> None:
    """``with InMemoryTelemetry() as telemetry:`` (or ``async with``) raised "does not support
    the context manager protocol"; now the block shuts it down on leaving."""
    script = [LLMCallStart(model="m"), LLMCallEnd()]
    with InMemoryTelemetry() as telemetry:
        await run_script(telemetry, script)
    async with InMemoryTelemetry() as other:
        await run_script(other, script)
    for ended in (telemetry, other):
        assert ended.outline() == [["invoke_agent", [["step 0", ["chat m"]]]]]
        ended.shutdown()  # again: nothing happens


@pytest.mark.parametrize(
    "ask",
    [
        lambda t: t.wrapper(),
        lambda t: t.providers(),
        lambda t: t.instrumented().__enter__(),
        lambda t: run_script(t, []),
    ],
    ids=["wrapper", "providers", "instrumented", "run_script"],
)
async def test_a_telemetry_already_shut_down_is_told_at_the_call(ask: Any) -> None:
    """A run on a telemetry shut down (a fixture's kept past its test, one reused after its
    ``with``) recorded nothing in silence, and ``span()`` then said the runs were given other
    providers. Now asking it for a wrapper or its providers says it has ended."""
    telemetry = InMemoryTelemetry()
    telemetry.shutdown()
    with pytest.raises(ValueError, match=r"already shut down .*make a new InMemoryTelemetry\(\)"):
        made = ask(telemetry)
        if hasattr(made, "__await__"):
            await made
    with pytest.raises(AssertionError, match="which was shut down"):
        telemetry.span("chat m")


class _Ids(IdGenerator):
    """Span ids 1, 2, ... under the trace id given, as each test's own sequential ids are."""

    def __init__(self, trace_id: int, step: int = 1) -> None:
        self.trace_id, self.step, self.span_id = trace_id, step, 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        self.span_id += self.step
        return self.span_id or 1


def _one_run(name: str, ids: IdGenerator) -> list[ReadableSpan]:
    with InMemoryTelemetry(ids=ids) as telemetry:
        tracer = telemetry.tracer_provider.get_tracer("t")
        with tracer.start_as_current_span(f"run {name}"), tracer.start_as_current_span(name):
            pass
        return telemetry.spans()


def test_spans_of_two_traces_with_the_same_span_ids_nest_in_their_own_trace() -> None:
    """A span is named by its trace id and span id together: by the span id alone, two traces
    sharing span ids merged their trees (one run lost, both calls under the other)."""
    spans = _one_run("a", _Ids(1)) + _one_run("b", _Ids(2))
    assert sorted(span_outline(spans)) == [["run a", ["a"]], ["run b", ["b"]]]


def test_spans_sharing_one_id_are_told_not_nested_in_a_loop() -> None:
    """Two spans of one trace with one span id (an id generator giving one id twice): the
    tree cannot tell whose child is whose; the child named its twin its parent, so the tree
    held a loop and ``span_outline`` died of recursion."""
    spans = _one_run("a", _Ids(1, step=0))
    with pytest.raises(ValueError, match=r"share trace id 0+1 and span id 0+1"):
        span_outline(spans)


@pytest.mark.parametrize("inner_ids", [None, RandomIdGenerator()], ids=["sequential", "random"])
async def test_a_kits_run_inside_another_kits_run_is_told_or_nested_never_flattened(
    inner_ids: IdGenerator | None,
) -> None:
    """Two kits in one test, the inner agent's run (a sub-agent) inside the outer's: both
    number span ids from 1 in the outer's trace, so the inner run's span named as its parent
    the outer's step, whose ids are its own step's. The inner tree came out flat
    (``["invoke_agent inner", "step 0", "chat m"]``), a structure no run had, without a word;
    it is told with the fix, and with that fix the tree is the run's."""
    outer_kit, inner_kit = InMemoryTelemetry(), InMemoryTelemetry(ids=inner_ids)

    async def outer() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield LLMCallEnd()
        async for _ in inner_kit.wrapper(agent_name="inner")(ScriptedAgent(EVENTS).stream([USER])):
            pass  # the sub-agent's run, inside the outer step
        yield TextDelta("done")

    await run_script(outer_kit, outer(), agent_name="outer")
    assert outer_kit.outline() == [["invoke_agent outer", [["step 0", ["chat m"]]]]]
    if inner_ids is None:
        with pytest.raises(ValueError, match=r"RandomIdGenerator") as raised:
            inner_kit.outline()
        assert "'invoke_agent inner'" in str(raised.value), raised.value
    else:
        assert inner_kit.outline() == [["invoke_agent inner", [["step 0", ["chat m"]]]]]

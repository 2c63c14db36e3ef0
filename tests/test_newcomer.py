"""A newcomer's common mistakes are told, each with what to do next."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import gc
import inspect
import io
import logging
import os
import re
import subprocess
import sys
import textwrap
import unittest.mock
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, TraceIdRatioBased

from agent_contract.agent import Agent
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta
from agent_otel import (
    Scrubber,
    Telemetry,
    _clock,
    configure,
    continue_trace,
    end_open_runs,
    extract_context,
    instrument,
    is_instrumented,
    otel_wrapper,
    record_evaluation,
    uninstrument,
)
from agent_otel.instrumentor import AgentInstrumentor
from agent_otel.recording import _hints
from agent_otel.testing import FakeClock, InMemoryTelemetry, run_script, span_outline, span_tree

ROOT = Path(__file__).resolve().parents[1]
USER = Message(role="user", content="hi")


async def test_an_uncalled_otel_wrapper_says_to_call_it() -> None:
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    with pytest.raises(TypeError, match=r"stream_wrapper=otel_wrapper\(\) \(called"):
        await agent.invoke(
            [Message(role="user", content="hi")],
            stream_wrapper=otel_wrapper,  # type: ignore[arg-type]
        )


async def test_the_test_kits_wrapper_uncalled_says_to_call_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``stream_wrapper=otel_telemetry.wrapper`` is the README's test with the call dropped, the
    same mistake as ``stream_wrapper=otel_wrapper``; it was told only as Python's
    ``takes 1 positional argument but 2 were given``."""
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    with pytest.raises(TypeError, match=r"pass stream_wrapper=telemetry\.wrapper\(\) \(called"):
        await agent.invoke([USER], stream_wrapper=otel_telemetry.wrapper)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"as keywords, as in telemetry\.wrapper\(agent_name='mine'\)"
    ):
        otel_telemetry.wrapper("mine")  # type: ignore[call-arg, arg-type]
    assert otel_telemetry.spans() == []  # no run started


def test_an_option_given_by_position_is_told_its_keyword() -> None:
    with pytest.raises(TypeError, match=r"as keywords, as in otel_wrapper\(agent_name='greeter'\)"):
        otel_wrapper("greeter")  # type: ignore[misc]


class _Name(str):
    def __repr__(self) -> str:
        raise RuntimeError("a str subclass's own repr")


@pytest.mark.parametrize(
    ("given", "shown"),
    [(_Name("greeter"), "'greeter'"), ("g" * 1_000_000, "'" + "g" * 63 + "\u2026'")],
    ids=["its own repr raises", "a megabyte"],
)
def test_an_option_by_position_is_told_as_plain_text_within_a_line(given: str, shown: str) -> None:
    """The name given is shown as the text it is: a subclass's own ``__repr__`` never runs,
    and a huge one is cut, so the message stays the ``TypeError`` that says what to do."""
    with pytest.raises(TypeError) as caught:
        otel_wrapper(given)  # type: ignore[misc]
    assert f"otel_wrapper(agent_name={shown})" in str(caught.value)
    assert len(str(caught.value)) < 300


async def test_a_wrapped_invoke_coroutine_is_closed_and_told_where_the_wrapper_goes() -> None:
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    coroutine = agent.invoke([USER])
    with pytest.raises(TypeError, match=r"not a coroutine: await agent.invoke\(messages, stream_"):
        async for _ in otel_wrapper()(coroutine):  # type: ignore[arg-type]
            pass
    assert coroutine.cr_frame is None  # closed: Python has no "never awaited" to warn of


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        ([TextDelta(text="x")], "a list"),
        (ScriptedAgent([]), "a ScriptedAgent"),
        (ScriptedAgent, "the class"),
    ],
)
async def test_what_is_no_stream_is_named(given: object, kind: str) -> None:
    with pytest.raises(TypeError, match=f"not {kind}"):
        async for _ in otel_wrapper()(given):  # type: ignore[arg-type]
            pass


def _sync_events() -> Iterator[object]:
    yield TextDelta(text="x")


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        (lambda: [TextDelta(text="x")], "not a list"),
        (lambda: ScriptedAgent([]), "not a ScriptedAgent"),
        (lambda: ScriptedAgent([]).stream, "not a method"),  # agent.stream, uncalled
        (lambda: None, "not a NoneType"),
        (_sync_events, "not a generator"),
        (lambda: ScriptedAgent([]).invoke([USER]), "not a coroutine"),
    ],
    ids=["list", "agent", "stream uncalled", "None", "sync generator", "coroutine"],
)
def test_what_is_no_stream_is_told_at_the_call_that_wraps_it(given: Any, kind: str) -> None:
    """Wrapping what is no async iterator raised only at the first pull, lines after the
    mistake (``events = wrapper(agent.stream)`` ... ``async for``): it is told at the call that
    wrapped it, with nothing recorded and no run named."""
    telemetry = InMemoryTelemetry()
    wrapper = telemetry.wrapper()
    with pytest.raises(TypeError, match=f"wraps an async iterator of agent events, {kind}"):
        wrapper(given())  # no iteration: the call itself raises
    assert telemetry.spans() == []


async def test_a_wrapper_called_with_no_stream_says_to_call_otel_wrapper_once() -> None:
    """``stream_wrapper=otel_wrapper()()`` (called twice) got Python's "wrap() missing 1
    required positional argument: 'stream'", naming a function no page mentions."""
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    with pytest.raises(TypeError, match=r"stream_wrapper=otel_wrapper\(\) \(called once, not tw"):
        await agent.invoke([USER], stream_wrapper=otel_wrapper()())  # type: ignore[call-arg]


@pytest.mark.parametrize("given", [True, "otel_wrapper", 1])
async def test_a_stream_wrapper_that_is_no_function_is_told_by_invoke(given: Any) -> None:
    """``invoke(stream_wrapper=True)`` raised Python's "'bool' object is not callable" from
    inside the contract: it says what ``stream_wrapper=`` takes."""
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    with pytest.raises(TypeError, match=r"stream_wrapper= takes a function of the event stream"):
        await agent.invoke([USER], stream_wrapper=given)


def test_the_wrappers_signature_stays_its_own() -> None:
    import inspect

    params = inspect.signature(otel_wrapper).parameters.values()
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    assert params and all(p.kind in keyword for p in params)  # the check adds no parameter


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from agent_contract.examples import ScriptedAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message
    from agent_otel import otel_wrapper

    async def main():
        for _ in range(3):
            agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
            await agent.invoke([Message(role="user", content="hi")], stream_wrapper=otel_wrapper())
    if sys.argv[1] == "configured":
        from agent_otel import configure
        configure("t", console_stream=open("/dev/null", "w"))
    asyncio.run(main())
    """
)


def _child(mode: str, in_a_test: bool = False) -> str:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'contract'}"}
    for var in [v for v in env if v.startswith("OTEL_") or v == "PYTEST_CURRENT_TEST"]:
        del env[var]
    if in_a_test:  # as pytest sets it while a test runs
        env["PYTEST_CURRENT_TEST"] = "tests/test_agent.py::test_it (call)"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, check=True
    )
    return done.stderr


def test_forgetting_configure_is_told_once_with_what_to_do() -> None:
    stderr = _child("unconfigured")
    assert stderr.count("agent runs are not recorded") == 1, stderr
    assert "agent_otel.configure()" in stderr


def test_a_test_forgetting_the_fixture_is_told_to_take_it() -> None:
    """A pytest test running an agent on no provider was told to call ``configure()``, which
    exports or prints and leaves the test nothing to read: it is told the fixture."""
    stderr = _child("unconfigured", in_a_test=True)
    assert stderr.count("agent runs are not recorded") == 1, stderr
    assert "take the otel_telemetry fixture" in stderr
    assert "stream_wrapper=otel_telemetry.wrapper()" in stderr
    assert "otel_telemetry" not in _child("unconfigured")  # an application is told configure()


def test_nothing_is_told_when_configured() -> None:
    assert "not recorded" not in _child("configured")


async def test_runs_on_the_global_providers_after_configure_apart_are_told_to_pass_its_own(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/configure.md's first example is ``configure(..., set_global=False)``; a run then
    given no provider records nothing, and was told to call configure(), which it had."""
    from opentelemetry import trace

    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # no global one, as in a fresh process
    monkeypatch.setattr(_hints, "_told", [])
    monkeypatch.setattr(_hints, "_apart", [], raising=False)
    telemetry = configure("t", set_global=False, console=False)
    try:
        for _ in range(2):
            await ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()]).invoke(
                [USER], stream_wrapper=otel_wrapper()
            )
    finally:
        telemetry.shutdown()
    told = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
    assert len(told) == 1, told
    assert "configure(set_global=False) built providers that are not global" in told[0]
    assert "otel_wrapper(tracer_provider=telemetry.tracer_provider" in told[0]
    assert "Call agent_otel.configure()" not in told[0]


def _agent_module() -> object:
    """A module an agent lives in, with module-level ``stream`` and ``invoke`` of its own:
    ``import my_agent; instrument(my_agent)`` failed deep inside, on ``object.__new__``."""
    import types

    module = types.ModuleType("my_agent")
    module.stream = module.invoke = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(
    ("call", "hint"),
    [
        (lambda: otel_wrapper()([1, 2]), "otel_wrapper()(agent.stream(messages))"),
        (lambda: __import__("agent_otel").instrument(42), "instrument(MyAgent())"),
        (
            lambda: instrument(_agent_module()),
            "not the module my_agent: pass the agent it defines or makes, as in "
            "instrument(MyAgent())",
        ),
        (lambda: __import__("agent_otel").TailSamplingPolicy(keep_ratio=2), "keep_ratio"),
        # configure()'s own options misspelt, or a run's option given to it: raised as they
        # are made, nothing built, with the nearest name or where the option belongs
        (lambda: configure(servicename="svc"), "did you mean 'service_name'?"),
        # as docs/configure.md promised for record_evaluation(), which raised Python's bare one
        (lambda: record_evaluation("relevance", scor=1.0), "did you mean 'score'?"),
        (lambda: configure("svc", otlp_endpoint="http://localhost:4318"), "'endpoint'?"),
        (
            lambda: configure("svc", capture_content=True),
            "given to otel_wrapper() or instrument(), not to configure(); for every run in the "
            "process, set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true",
        ),
    ],
)
async def test_a_misuse_says_what_to_do(call: object, hint: str) -> None:
    with pytest.raises((TypeError, ValueError)) as raised:
        result = call()  # type: ignore[operator]
        if hasattr(result, "__anext__"):
            await result.__anext__()
    assert hint in str(raised.value)


def _instrumented(**options: Any) -> object:
    return instrument(ScriptedAgent([]), **options)


# configure()'s own options, read from its signature: what a run's entry point does not take
CONFIGURE_ONLY = sorted(
    set(inspect.signature(configure).parameters) - {"semconv", "scrub"}
)  # (both)


@pytest.mark.parametrize("option", CONFIGURE_ONLY)
@pytest.mark.parametrize("entry", [otel_wrapper, _instrumented], ids=["otel_wrapper", "instrument"])
def test_an_option_of_configure_given_to_a_run_says_it_belongs_to_configure(
    entry: Any, option: str
) -> None:
    """``otel_wrapper(endpoint=...)``, ``instrument(agent, service_name=...)``: before, only
    "unexpected keyword argument" (a guessed near name at best), not where the option goes."""
    with pytest.raises(TypeError, match=f"{option!r} is an option of configure\\(\\), which "):
        entry(**{option: None})


@pytest.mark.parametrize(
    ("call", "told"),
    [
        (
            lambda: configure("svc", "http://localhost:4318"),
            "as in configure('svc', endpoint='http://localhost:4318')",
        ),
        (
            lambda: instrument(ScriptedAgent([]), "researcher"),
            "as in instrument(agent_or_class, name='researcher')",
        ),
        (
            lambda: record_evaluation("relevance", 0.9, "pass"),
            "as in record_evaluation('relevance', score=0.9, label='pass')",
        ),
        (lambda: configure("svc", *range(5)), "protocol=1, headers=2, ...)"),
    ],
    ids=["configure", "instrument", "record_evaluation", "many"],
)
def test_an_option_given_by_position_is_told_as_the_keyword_it_is(call: Any, told: str) -> None:
    """``configure("svc", url)`` got Python's "takes from 0 to 1 positional arguments but 2
    were given": which argument went wrong, and as what it belongs, are told."""
    with pytest.raises(TypeError, match="argument by position and its options as keywords") as e:
        call()
    assert told in str(e.value)
    assert len(str(e.value)) < 300


def test_configure_options_told_to_runs_are_configures_own() -> None:
    assert set(inspect.signature(configure).parameters) == _hints.CONFIGURE_OPTIONS


@pytest.mark.parametrize(
    ("call", "meant"),
    [
        (lambda: otel_wrapper(tracer=None), "tracer_provider"),
        (lambda: otel_wrapper(meter=None), "meter_provider"),
        (lambda: otel_wrapper(name="greeter"), "agent_name"),  # instrument()'s own word
        (lambda: _instrumented(session="s-1"), "session_id"),
        (lambda: _instrumented(capture=True), "capture_content"),
        (lambda: configure(name="svc"), "service_name"),
        (lambda: configure(port=9464), "prometheus_port"),
    ],
    ids=["tracer", "meter", "name", "session", "capture", "configure name", "configure port"],
)
def test_a_shortened_option_name_is_told_the_option(call: Any, meant: str) -> None:
    """A word of an option's name alone (``tracer`` for ``tracer_provider``) is too far from it
    by spelling for a guess, so nothing was suggested: the one option with that word is."""
    with pytest.raises(TypeError, match=f"did you mean {meant!r}\\?"):
        call()


def _evaluated(**options: Any) -> object:
    return record_evaluation("relevance", score=1.0, **options)


def _ended(**options: Any) -> object:
    return end_open_runs(options["tracer_provider"])


NOT_PROVIDERS = [
    ("tracer_provider", lambda t: t.tracer_provider.get_tracer("app"), "not a Tracer"),
    ("tracer_provider", lambda t: TracerProvider, "pass an instance, as tracer_provider="),
    ("meter_provider", lambda t: t.meter_provider.get_meter("app"), "not a Meter"),
    ("logger_provider", lambda t: t.logger_provider.get_logger("app"), "not a Logger"),
    ("meter_provider", lambda t: "http://localhost:4318", "not a str"),
]


@pytest.mark.parametrize(
    ("entry", "option", "given", "told"),
    [
        (entry, *case)
        for entry in (otel_wrapper, _instrumented, _evaluated, _ended)
        for case in NOT_PROVIDERS
        if not (entry is _evaluated and case[0] == "tracer_provider")  # it takes none
        if not (entry is _ended and case[0] != "tracer_provider")  # it takes only that one
    ],
)
def test_what_is_not_a_provider_is_told_where_it_is_passed(
    otel_telemetry: InMemoryTelemetry, entry: Any, option: str, given: Any, told: str
) -> None:
    """A tracer where its provider belongs (or the provider's class) used to be taken, the run
    then recorded nothing and the log blamed agent-otel ("internal error"): it is the
    caller's mistake, told at once with what to pass. ``end_open_runs()`` given a tracer (or
    the class) ended nothing, without a word, and the provider's shutdown then dropped the runs
    still open."""
    with pytest.raises(TypeError, match=f"{option}=...\\) takes a ") as raised:
        entry(**{option: given(otel_telemetry)})
    assert told in str(raised.value)


def test_the_instrumentor_tells_an_option_it_ignores(caplog: pytest.LogCaptureFixture) -> None:
    instrumentor = AgentInstrumentor()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        instrumentor.instrument(capture_contents=True, base_classes=[])
    try:
        assert "ignores 'capture_contents', not an option: did you mean 'capture_content'?" in (
            caplog.text
        )
        assert "base_classes" not in caplog.text  # its own key
    finally:
        instrumentor.uninstrument()


def test_the_instrumentor_tells_its_own_key_misspelt(caplog: pytest.LogCaptureFixture) -> None:
    """``base_class=[MyAgent]`` (its own key, singular) was told "not an option" with no
    hint, as the options alone were searched: the base class was then silently not traced."""
    instrumentor = AgentInstrumentor()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        instrumentor.instrument(base_class=[])
    try:
        assert "ignores 'base_class', not an option: did you mean 'base_classes'?" in caplog.text
    finally:
        instrumentor.uninstrument()


class SyncStreaming:
    """A newcomer's agent: its stream a synchronous generator, its invoke ignoring the
    wrapper it is handed."""

    def stream(self, messages: Any, config: Any = None) -> Iterator[Any]:
        yield TextDelta("hi")

    async def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        return list(self.stream(messages))


async def test_an_instrumented_agent_that_cannot_be_traced_says_why_once(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Such an agent used to run untraced without a word: instrument() had nothing to wrap."""
    monkeypatch.setattr(_hints, "_untraced", set())
    agent = instrument(SyncStreaming(), **otel_telemetry.providers())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert [e.text for e in agent.stream([USER])] == ["hi"]  # the agent is unaffected
        list(agent.stream([USER]))
        assert [e.text for e in await agent.invoke([USER])] == ["hi"]
    told = caplog.text
    assert told.count("SyncStreaming.stream() returned a generator, not an async iterator") == 1
    assert "SyncStreaming.invoke() did not pass its stream through stream_wrapper" in told
    assert "docs/faq.md" in told
    assert otel_telemetry.spans() == []


class Cached(ScriptedAgent):
    """An agent whose invoke answers some calls from a cache, without streaming at all."""

    async def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        if messages == ["cached"]:
            return []
        return await super().invoke(messages, stream_wrapper, config)


async def test_a_traceable_agent_is_told_nothing(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_hints, "_untraced", set())
    cached = instrument(Cached([TextDelta("hi")]), **otel_telemetry.providers())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert await cached.invoke(["cached"]) == []  # no stream called: no run to trace
        await cached.invoke([USER])
    assert "not traced" not in caplog.text


async def test_a_streaming_agent_is_told_nothing(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_hints, "_untraced", set())
    agent = instrument(ScriptedAgent([TextDelta("hi")]), **otel_telemetry.providers())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        await agent.invoke([USER])
        [_ async for _ in agent.stream([USER])]
    assert "not traced" not in caplog.text
    assert len([s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]) == 2


QUIET = {"OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}  # a prompt shutdown
OTLP_DEAD = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}  # OTLP on, nobody there


def _only_otel_variables(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Every OTEL_ variable of the process unset, then ``env`` set: what ``configure()``
    reads is the test's alone, whatever the shell running it exports."""
    for var in [v for v in os.environ if v.startswith("OTEL_")]:
        monkeypatch.delenv(var)
    for var, value in env.items():
        monkeypatch.setenv(var, value)


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        ({"endpoint": "http://localhost:4317"}, {}, "use 'http://localhost:4318', or protocol="),
        ({"endpoint": "localhost:4318", "protocol": "grpc"}, {}, "or protocol='http/protobuf'"),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317/"}, "OTLP_PROTOCOL=grpc"),
    ],
)
def test_an_endpoint_on_the_other_protocols_port_is_told(
    options: dict[str, str],
    env: dict[str, str],
    told: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """4317 is OTLP/gRPC's port, 4318 OTLP/HTTP's: the other protocol's port used to fail
    every export with a bare connection or protocol error, nothing saying why."""
    for var, value in {**QUIET, **env}.items():
        monkeypatch.setenv(var, value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure("t", set_global=False, **options)  # type: ignore[arg-type]
    telemetry.shutdown()
    assert caplog.text.count("where a Collector listens for OTLP over") == 1, caplog.text
    assert told in caplog.text


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
def test_an_endpoint_on_its_own_port_is_told_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        configure("t", endpoint="http://localhost:4318", set_global=False).shutdown()
        configure("t", endpoint="http://127.0.0.1:14317", set_global=False).shutdown()
    assert "listens for" not in caplog.text


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        ({"endpoint": "localhost:14317", "protocol": "grpc"}, {}, "endpoint='localhost:14317'"),
        ({"endpoint": "collector.invalid:4317", "protocol": "grpc"}, {}, "'http://collector"),
        (  # OTLP/HTTP's path, which gRPC has no use for: the fix given is host and port alone
            {"endpoint": "localhost:14317/v1/traces", "protocol": "grpc"},
            {},
            "use 'http://localhost:14317' for a Collector without TLS",
        ),
        (
            {},
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:14317",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            },
            "OTEL_EXPORTER_OTLP_ENDPOINT='127.0.0.1:14317'",
        ),
        ({"endpoint": "api.example.invalid:443", "protocol": "grpc"}, {}, None),  # a TLS host
        ({"endpoint": "http://localhost:14317", "protocol": "grpc"}, {}, None),
        (
            {"endpoint": "localhost:14317", "protocol": "grpc"},
            {"OTEL_EXPORTER_OTLP_INSECURE": "true"},  # chosen: plain
            None,
        ),
    ],
)
def test_a_grpc_endpoint_with_no_scheme_on_a_collectors_address_is_told_it_means_tls(
    options: dict[str, str],
    env: dict[str, str],
    told: str | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With no scheme and OTEL_EXPORTER_OTLP_INSECURE unset, the OTLP exporter spec's gRPC
    exporter connects with TLS; a Collector's receiver is plain by default, so ``localhost:4317``
    failed every export on an SSL handshake error that named neither the endpoint nor the fix."""
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP_")]:
        monkeypatch.delenv(var)
    for var, value in {**QUIET, **env}.items():
        monkeypatch.setenv(var, value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure("t", set_global=False, console=False, **options)  # type: ignore[arg-type]
    telemetry.shutdown()
    if told is None:
        assert "has no scheme" not in caplog.text
        return
    assert caplog.text.count("has no scheme, so OTLP/gRPC connects to it with TLS") == 1
    assert told in caplog.text
    assert "for a Collector without TLS" in caplog.text


@contextlib.contextmanager
def _receiver(kind: str) -> Iterator[str]:
    """A real OTLP receiver on a port of its own (no default port to warn about at
    ``configure()``): ``grpc``, ``http``, or ``http 404`` (every request answered 404); its
    base URL, as ``http://127.0.0.1:port``."""
    if kind == "grpc":
        from integration._otlp_grpc import otlp_grpc_receiver

        with otlp_grpc_receiver() as (port, _):
            yield f"http://127.0.0.1:{port}"
        return
    from otlp_receiver import receiving

    with receiving(status=404 if kind == "http 404" else 200) as received:
        yield received.endpoint.removesuffix("/v1/traces")


def _export_two_runs(options: dict[str, Any], env: dict[str, str]) -> None:
    """Two runs exported through ``configure(**options)``, each flushed, then shut down. The
    timeout leaves room for one retry: the SDK names a failure's reason in its retry line
    only (its last line says "due to timeout, max retries or shutdown")."""
    with unittest.mock.patch.dict(os.environ, {**QUIET, **env}):
        telemetry = configure("t", set_global=False, console=False, timeout=2, **options)
    wrap = otel_wrapper(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    for _ in range(2):
        asyncio.run(ScriptedAgent([TextDelta(text="hi")]).invoke([USER], stream_wrapper=wrap))
        telemetry.force_flush(timeout_millis=3_000)
    telemetry.shutdown()


@pytest.mark.heavy  # real exports, each waiting out a retry
@pytest.mark.parametrize(
    ("server", "options", "told"),
    [
        ("grpc", {}, "answers in HTTP/2's binary frames, as an OTLP/gRPC receiver does"),
        ("http", {"protocol": "grpc"}, "answers in HTTP/1, as an OTLP/HTTP receiver does"),
        ("http", {"scheme": "https"}, "is https:// but the receiver speaks plain HTTP"),
        ("grpc", {"protocol": "grpc", "scheme": "https"}, "the gRPC exporter connects with TLS"),
        ("http 404", {}, "answered 404 Not Found, so no receiver serves the URL"),
    ],
    ids=["http to grpc", "grpc to http", "https to plain", "grpc tls to plain", "not found"],
)
def test_an_export_failing_on_a_mistake_in_the_endpoint_tells_it_once(
    server: str,
    options: dict[str, Any],
    told: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A receiver on a port of its own speaking the other OTLP protocol, TLS against a plain
    receiver, a path no receiver serves: the SDK exporter's line named a protocol error
    (``BadStatusLine('\\x00\\x00\\x18\\x04...')``, ``Failed parsing HTTP/2``,
    ``WRONG_VERSION_NUMBER``, ``code: 404``) and agent-otel's only asked "is the collector
    reachable?", which it was. The first failure now tells the mistake and the fix, once."""
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP_")]:
        monkeypatch.delenv(var)
    scheme = options.pop("scheme", "http")
    with _receiver(server) as base, caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_two_runs({"endpoint": base.replace("http", scheme, 1), **options}, {})
    ours = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    assert sum(told in line for line in ours) == 1, ours
    assert "(docs/configure.md)" in next(line for line in ours if told in line)


@pytest.mark.heavy  # real exports, each waiting out a retry
def test_an_export_failure_configure_foretold_is_not_told_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A signal's variable naming no path is told by ``configure()``; the 404s it causes at
    export say nothing more."""
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP_")]:
        monkeypatch.delenv(var)
    with _receiver("http 404") as base, caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_two_runs({}, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base})
    assert caplog.text.count("names no path") == 1, caplog.text
    assert "so no receiver serves the URL" not in caplog.text  # (the 404's own telling)


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
@pytest.mark.parametrize(
    ("server", "given_as", "cause"),
    [
        ("grpc", "endpoint", "the endpoint speaks the other OTLP protocol"),
        ("http 404", "endpoint", "404 Not Found"),
        ("http 404", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "404 Not Found"),
    ],
    ids=["other protocol", "not found", "not found, foretold by configure"],
)
def test_the_loss_line_after_a_cause_was_told_names_it_not_the_collectors_reach(
    server: str,
    given_as: str,
    cause: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once the mistake in the endpoint was told with its fix, the spans it cost were told
    with "is the collector reachable?", which it was: a newcomer went looking for a network
    fault. The loss line now names the cause told, and the question is asked nowhere."""
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP_")]:
        monkeypatch.delenv(var)
    with _receiver(server) as base, caplog.at_level(logging.WARNING, logger="agent_otel"):
        if given_as == "endpoint":
            _export_two_runs({"endpoint": base}, {})
        else:  # the signal's full URL, its path left out: told by configure()
            _export_two_runs({}, {given_as: base})
    ours = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    lost = [line for line in ours if "spans lost so far" in line]
    assert lost and all(cause in line for line in lost), ours
    assert not [line for line in ours if "reachable" in line], ours


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
def test_a_collector_that_refuses_after_a_told_cause_is_asked_about_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The cause named is the latest failure's: after another ``configure()`` whose collector
    is down, the loss line asks whether it is reachable, not the earlier endpoint's mistake."""
    with _receiver("http 404") as base, caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_two_runs({"endpoint": base}, {})
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_two_runs({"endpoint": base}, {})  # the receiver is gone: refused
    lost = [r.getMessage() for r in caplog.records if "spans lost so far" in r.getMessage()]
    assert lost and all("is the collector reachable?" in line for line in lost), caplog.text


@pytest.mark.heavy  # real exports, each waiting out a retry
def test_an_export_that_succeeds_tells_no_cause(caplog: pytest.LogCaptureFixture) -> None:
    with _receiver("http") as base, caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_two_runs({"endpoint": base}, {})
    assert not [r for r in caplog.records if r.name == "agent_otel"], caplog.text


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        (
            {"endpoint": "http://localhost:4318"},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.invalid:4318"},
            "configure(endpoint=...) wins over OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        (
            {"endpoint": "http://localhost:4318"},
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector.invalid:4318/v1/traces"},
            "configure(endpoint=...) wins over OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ),
        (
            {"headers": {"authorization": "Bearer local"}},
            {"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=SECRETVALUE"},
            "the headers it sets are not sent",
        ),
        ({}, {"OTEL_SERVICE_NAME": "checkout-prod"}, "configure(service_name=...) wins over"),
        (
            {"protocol": "http/protobuf"},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "configure(protocol=...) wins over OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
    ],
    ids=["endpoint", "a signal's endpoint", "headers", "service name", "protocol"],
)
def test_an_argument_overriding_a_variable_set_otherwise_is_told_once(
    options: dict[str, Any],
    env: dict[str, str],
    told: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An argument wins over its variable (the SDK's rule): a quickstart's
    ``configure("my-service", endpoint="http://localhost:4318")`` deployed where the platform
    sets ``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_SERVICE_NAME`` sent every span to the
    laptop's address under the quickstart's name, and a header the deployment set (its API
    key) was dropped, all without a word. Each is told once, naming both, quoting neither."""
    _only_otel_variables(monkeypatch, {**QUIET, **env})
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure("my-service", set_global=False, console=False, **options)
        telemetry.shutdown()
        configure("my-service", set_global=False, console=False, **options).shutdown()
    assert caplog.text.count(told) == 1, caplog.text
    assert "SECRETVALUE" not in caplog.text and "collector.invalid" not in caplog.text
    assert telemetry.tracer_provider.resource.attributes["service.name"] == "my-service"


@pytest.mark.parametrize(
    ("options", "env", "unwanted"),
    [
        (
            {"endpoint": "http://localhost:4318/"},
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4318/v1/traces",
            },
            "wins over",
        ),
        (
            {"headers": {"X-Api-Key": "a", "b": "c"}},
            {"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=a"},
            "wins over",
        ),
        ({}, {"OTEL_SERVICE_NAME": "my-service"}, "wins over"),
        ({"max_queue_size": 4096}, {"OTEL_BSP_MAX_QUEUE_SIZE": "4096"}, "wins over"),
        ({}, {}, "sampler"),
        ({"sampler": TraceIdRatioBased(0.5)}, {}, "sampler"),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"},
            "sampler",
        ),
        (  # the argument wins over the variable, as told, and the variable's ratio is not
            {"sampler": ALWAYS_ON},
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "9"},
            "is not a ratio",
        ),
    ],
    ids=[
        "same endpoint",
        "headers kept",
        "same name",
        "same queue",
        "default sampler",
        "half",
        "ratio 1",
        "sampler variable not in force",
    ],
)
def test_an_argument_agreeing_with_its_variable_or_a_sampler_keeping_traces_is_told_nothing(
    options: dict[str, Any],
    env: dict[str, str],
    unwanted: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _only_otel_variables(monkeypatch, {**QUIET, **env})
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        configure("my-service", set_global=False, console=False, **options).shutdown()
    assert unwanted not in caplog.text.lower(), caplog.text


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        ({"sampler": ALWAYS_OFF}, {}, "configure(sampler=...), AlwaysOffSampler, keeps no trace"),
        ({"sampler": TraceIdRatioBased(0.0)}, {}, "TraceIdRatioBased{0.0}, keeps no trace"),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
            "the sampler of OTEL_TRACES_SAMPLER (and _ARG), TraceIdRatioBased{0.0}, keeps no",
        ),
        ({}, {"OTEL_TRACES_SAMPLER": "always_off"}, "AlwaysOffSampler, keeps no trace"),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10"},
            "OTEL_TRACES_SAMPLER_ARG='10' is not a ratio from 0 to 1",
        ),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10%"},
            "OTEL_TRACES_SAMPLER_ARG='10%' is not a ratio from 0 to 1",
        ),
    ],
    ids=["always off", "ratio 0", "variables ratio 0", "variable off", "ratio 10", "ratio 10%"],
)
def test_a_sampler_that_keeps_nothing_or_a_ratio_past_one_is_told_once(
    options: dict[str, Any],
    env: dict[str, str],
    told: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A sampler that keeps no trace started here printed nothing in the terminal and
    exported nothing, without a word (``OTEL_SDK_DISABLED`` is told); a ratio written as a
    percentage (``OTEL_TRACES_SAMPLER_ARG=10``) kept every trace, the SDK saying only that
    it could not convert it to a float."""
    _only_otel_variables(monkeypatch, {**QUIET, **env})
    stream = io.StringIO()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure("t", set_global=False, console_stream=stream, **options)
        wrap = otel_wrapper(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        asyncio.run(ScriptedAgent([TextDelta(text="hi")]).invoke([USER], stream_wrapper=wrap))
        telemetry.shutdown()
    ours = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    assert sum(told in line for line in ours) == 1, ours
    kept = "invoke_agent" in stream.getvalue()
    assert kept is ("ratio" in told), stream.getvalue()  # told as it is in force


def _run_alone(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (OpenTelemetry's globals are set once per process),
    with this checkout's code and no OTEL_ variable."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'contract'}"}
    for var in [v for v in env if v.startswith("OTEL_")]:
        del env[var]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_a_variable_of_our_prefix_we_do_not_read_is_told_with_the_one_meant(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``AGENT_OTEL_SEMCONVV=head`` was ignored without a word: the names stayed v1.41's."""
    monkeypatch.setenv("AGENT_OTEL_SEMCONVV", "head")
    monkeypatch.setenv("AGENT_OTEL_PROMETHEUS", "9464")
    monkeypatch.setenv("AGENT_OTEL_SEMCONV", "v1.41")  # ours: nothing told
    for _ in range(2):
        configure("svc", set_global=False, console=False).shutdown()
    told = [r.getMessage() for r in caplog.records if "is not a variable" in r.getMessage()]
    assert told == [
        "agent-otel: AGENT_OTEL_PROMETHEUS is not a variable agent-otel reads, so it is ignored: "
        "did you mean AGENT_OTEL_PROMETHEUS_PORT? (the variables: docs/configure.md)",
        "agent-otel: AGENT_OTEL_SEMCONVV is not a variable agent-otel reads, so it is ignored: "
        "did you mean AGENT_OTEL_SEMCONV? (the variables: docs/configure.md)",
    ]


def test_a_variable_of_our_prefix_is_told_by_the_first_wrapper_without_configure() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'contract'}"}
    env["AGENT_OTEL_CAPTURE_CONTENT"] = "true"  # a guess: the variable is OTEL_INSTRUMENTATION_...
    code = "from agent_otel import otel_wrapper\nfor _ in range(3):\n    otel_wrapper()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stderr.count("AGENT_OTEL_CAPTURE_CONTENT is not a variable agent-otel") == 1


def test_an_otel_variable_misspelt_is_told_with_the_one_meant(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``OTEL_EXPORTER_OTLP_ENDPIONT=...`` left the endpoint unset without a word: the traces
    showed in the terminal and never reached the Collector. The names meant are the OTel
    specification's (its SDK environment variables and the OTLP exporter's)."""
    _only_otel_variables(
        monkeypatch,
        {
            "OTEL_EXPORTER_OTLP_ENDPIONT": "http://localhost:4318",
            "OTEL_TRACE_EXPORTER": "otlp",
            "OTEL_SERVICENAME": "svc",
            "OTEL_SOME_OTHER_LIBRARY_SETTING": "1",  # far from every name: not ours
            "OTEL_METRIC_EXPORTER": "none",  # one of a name set beside it: its own
            "OTEL_METRICS_EXPORTER": "none",
        },
    )
    for _ in range(2):
        configure(set_global=False, console=False).shutdown()
    told = sorted(r.getMessage() for r in caplog.records if "did you mean OTEL_" in r.getMessage())
    assert told == [
        f"agent-otel: {typo} is not a variable OpenTelemetry or agent-otel reads, so it is "
        f"ignored: did you mean {meant}? (the variables: docs/configure.md)"
        for typo, meant in [
            ("OTEL_EXPORTER_OTLP_ENDPIONT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
            ("OTEL_SERVICENAME", "OTEL_SERVICE_NAME"),
            ("OTEL_TRACE_EXPORTER", "OTEL_TRACES_EXPORTER"),
        ]
    ]


def test_a_misspelt_capture_variable_is_told_by_the_first_wrapper_without_configure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The content variable is read by every run, configured or not: its typo (``MESSAGES``)
    left content off without a word. A longer name of another library is not its typo."""
    _only_otel_variables(
        monkeypatch,
        {
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGES_CONTENT": "true",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT_MODE": "SPAN_ONLY",
        },
    )
    monkeypatch.setattr(_hints, "_variables_read", [])  # as in a process's first wrapper
    for _ in range(3):
        otel_wrapper()
    told = [r.getMessage() for r in caplog.records if "is not a variable" in r.getMessage()]
    assert told == [
        "agent-otel: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGES_CONTENT is not a variable "
        "OpenTelemetry or agent-otel reads, so it is ignored: did you mean "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT? (the variables: docs/configure.md)"
    ]


def test_the_variables_of_our_prefix_are_those_the_code_reads() -> None:
    source = "\n".join(p.read_text() for p in sorted((ROOT / "src").rglob("*.py")))
    read = set(re.findall(r"\"(AGENT_OTEL_[A-Z0-9_]+)\"", source)) - _hints._TOOLING
    assert read == _hints.OWN_VARIABLES


def test_configure_called_twice_is_told_once_with_what_to_do() -> None:
    """A second configure() used to log three warnings about "a global TracerProvider",
    MeterProvider and LoggerProvider, never saying the cause was configure() itself; and each
    later call with other arguments (one per request) told it again."""
    code = textwrap.dedent(
        """
        import io
        from agent_otel import configure
        configure("a", console_stream=io.StringIO())
        second = configure("b", console_stream=io.StringIO())
        assert not second.global_tracer_provider
        configure("c", console_stream=io.StringIO())  # a handler's call, each one different
        """
    )
    done = _run_alone(code)
    assert done.stderr.count("configure() was already called in this process") == 1
    assert "global TracerProvider" not in done.stderr
    assert "keep its handle" in done.stderr


def test_configure_called_again_alike_returns_the_first_handle_and_builds_nothing() -> None:
    """configure() in every request handler (or a notebook cell run again) built a whole
    pipeline per call, nobody using it: four exporter threads and exit hooks each, kept until
    the process ended. The same arguments and environment now get the first call's handle,
    told once; anything else asked (arguments, a variable, a handle shut down) is built."""
    code = textwrap.dedent(
        """
        import os, threading
        from agent_otel import configure
        first = configure("svc", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        threads = threading.active_count()
        again = [configure("svc", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
                 for _ in range(3)]
        assert all(handle is first for handle in again)
        assert threading.active_count() == threads
        other = configure("other", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = "64"
        varied = configure("svc", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        assert other is not first and varied is not first
        for handle in (other, varied):
            handle.shutdown()
        del os.environ["OTEL_BSP_MAX_QUEUE_SIZE"]
        first.shutdown()
        after = configure("svc", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        assert after is not first
        after.shutdown()
        """
    )
    done = _run_alone(code)
    assert done.stderr.count("configure() was called again with the same arguments") == 1
    assert "returns the handle the first call made" in done.stderr


@pytest.mark.heavy  # over a second: pipelines against a dead collector shut down
def test_configure_called_again_with_other_arguments_keeps_one_spare_pipeline_at_most() -> None:
    """configure() in a request handler passing its own values (or a notebook cell edited)
    built a pipeline per call that could not become global, four exporter threads and exit
    hooks each, kept until the process ended: 400 threads after 100 calls. Each such call now
    shuts the previous one's pipeline down; the global one and the newest stay."""
    code = textwrap.dedent(
        """
        import threading, time
        from agent_otel import configure
        first = configure("svc", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        threads = threading.active_count()
        handles = [configure(f"request-{i}", endpoint="http://127.0.0.1:9",
                             shutdown_timeout_millis=100) for i in range(10)]
        deadline = time.monotonic() + 10
        while threading.active_count() > 2 * threads and time.monotonic() < deadline:
            time.sleep(0.02)
        assert threading.active_count() <= 2 * threads, threading.enumerate()
        assert all(handle.is_shutdown for handle in handles[:-1])
        assert not first.is_shutdown and not handles[-1].is_shutdown
        mine = configure("mine", endpoint="http://127.0.0.1:9", set_global=False,
                         shutdown_timeout_millis=100)
        configure("request-last", endpoint="http://127.0.0.1:9", shutdown_timeout_millis=100)
        assert not mine.is_shutdown  # set_global=False: its owner's to shut down
        mine.shutdown()
        """
    )
    done = _run_alone(code)
    assert done.stderr.count("the next call like it shuts this one's pipeline down") == 1


def test_configure_after_the_global_pipeline_was_shut_down_becomes_the_global_one() -> None:
    """A FastAPI lifespan configures at startup and shuts down at its end; the next test's
    client starts it again in the same process (a notebook does the same by hand). The shut
    down providers stayed the globals and the new call's were not: every run from then on was
    dropped ("a run ended after its tracer provider was shut down")."""
    code = textwrap.dedent(
        """
        import asyncio, io
        from agent_contract.examples import ScriptedAgent
        from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message
        from agent_otel import configure, otel_wrapper

        async def run():
            agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
            stream = agent.stream([Message(role="user", content="x")])
            async for _ in otel_wrapper(agent_name="a")(stream):
                pass

        for _ in range(3):
            seen = io.StringIO()
            telemetry = configure("svc", console_stream=seen)
            asyncio.run(run())
            telemetry.shutdown()
            assert telemetry.global_tracer_provider and "invoke_agent a" in seen.getvalue()
        """
    )
    done = _run_alone(code)
    assert "already called" not in done.stderr and "shut down" not in done.stderr, done.stderr


def test_configure_beside_an_unhashable_global_provider_sets_nothing_and_raises_nothing() -> None:
    """Another library's global TracerProvider may be unhashable (a dataclass with eq): asking
    whether configure() had installed it hashed it, and configure() raised TypeError."""
    code = textwrap.dedent(
        """
        import dataclasses, io
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from agent_otel import configure

        @dataclasses.dataclass(eq=True)
        class Theirs(TracerProvider):
            def __post_init__(self):
                super().__init__()

        trace.set_tracer_provider(Theirs())
        assert not configure("a", console_stream=io.StringIO()).global_tracer_provider
        """
    )
    _run_alone(code)


async def test_an_evaluation_naming_no_run_says_what_to_pass(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A judge scoring in the consumer's loop or after the run, with no span context, used to
    record an event attached to no run without a word (the consumer has no current span)."""
    monkeypatch.setattr(_hints, "_unattached", [])
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta("Paris"), LLMCallEnd()])
    async for _ in otel_wrapper(**otel_telemetry.providers())(agent.stream([USER])):
        pass
    logs = otel_telemetry.logger_provider
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        record_evaluation("correctness", score=1.0, logger_provider=logs)
        record_evaluation("correctness", score=0.0, logger_provider=logs)
    assert caplog.text.count("record_evaluation('correctness') names no run") == 1
    assert "span_context=" in caplog.text
    [run] = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        monkeypatch.setattr(_hints, "_unattached", [])
        record_evaluation("correctness", score=1.0, span_context=run.context, logger_provider=logs)
        record_evaluation("correctness", score=1.0, response_id="chatcmpl-1", logger_provider=logs)
    assert "names no run" not in caplog.text


class SyncRun(Agent):
    """A newcomer's Agent: its ``run`` a plain function, not the contract's ``async def``."""

    tool_name = "sync"

    def run(self, **kwargs: Any) -> str:  # type: ignore[override]
        return f"hello, {kwargs['user_message']}"


class SyncInvoke:
    """A newcomer's event agent: its ``invoke`` a plain function returning its events."""

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        yield TextDelta("hi")

    def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        return ["hi"]


def _drop_in(agent: Any, telemetry: InMemoryTelemetry) -> Any:
    return instrument(agent, **telemetry.providers())


def _by_class(agent: Any, telemetry: InMemoryTelemetry) -> Any:
    instrument(type(agent), **telemetry.providers())
    return agent


@pytest.mark.parametrize("how", [_drop_in, _by_class], ids=["instance", "class"])
def test_a_synchronous_invoke_keeps_its_value_and_is_told(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    how: Any,
) -> None:
    """instrument() wrapped every run/invoke in a coroutine: a synchronous one then returned
    a coroutine instead of its value, and awaiting that raised "object str can't be used in
    'await' expression", in the agent's caller (also under opentelemetry-instrument, which
    instruments every Agent subclass). It is called as it is; why it is not traced is told."""
    monkeypatch.setattr(_hints, "_untraced", set())
    traced = how(SyncInvoke(), otel_telemetry)
    try:
        with caplog.at_level(logging.WARNING, logger="agent_otel"):
            assert traced.invoke([USER]) == ["hi"]
            assert traced.invoke([USER]) == ["hi"]
    finally:
        uninstrument(SyncInvoke)
    told = "SyncInvoke.invoke() is a plain function, not async def"
    assert caplog.text.count(told) == 1, caplog.text
    assert otel_telemetry.spans() == []


class FailingSyncRun(SyncRun):
    def run(self, **kwargs: Any) -> str:  # type: ignore[override]
        _work_a_second()
        if kwargs["user_message"] == "fail":
            raise _OWN
        return super().run(**kwargs)


def _work_a_second() -> None:
    """The work of a synchronous run: a second of the installed fake clock, if one is."""
    clock = _clock.now_ns
    if isinstance(clock, FakeClock):
        clock.advance(1.0)


@pytest.mark.parametrize("how", [_drop_in, _by_class], ids=["instance", "class"])
def test_a_synchronous_run_keeps_its_value_and_is_recorded_from_call_to_return(
    otel_telemetry: InMemoryTelemetry,
    otel_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    how: Any,
) -> None:
    """A plain ``def run`` returning its value kept it (instrument() once made it a coroutine)
    but was left untraced and told. Its run is recorded once it returned, from the call: its
    value the output, its exception (re-raised as the same object) the error."""
    monkeypatch.setattr(_hints, "_untraced", set())
    traced = how(FailingSyncRun(), otel_telemetry)
    tracer = otel_telemetry.tracer_provider.get_tracer("caller")
    try:
        with (
            caplog.at_level(logging.WARNING, logger="agent_otel"),
            tracer.start_as_current_span("request"),
        ):
            assert traced.run(user_message="world") == "hello, world"
            with pytest.raises(LookupError) as raised:
                traced.run(user_message="fail")
    finally:
        uninstrument(FailingSyncRun)
    assert raised.value is _OWN
    assert "not traced" not in caplog.text, caplog.text
    assert otel_telemetry.outline() == [["request", ["invoke_agent sync", "invoke_agent sync"]]]
    ok, failed = otel_telemetry.by_name()["invoke_agent sync"]
    assert ok.attributes is not None and failed.attributes is not None
    assert ok.end_time is not None and ok.start_time is not None
    assert ok.end_time - ok.start_time >= 1_000_000_000  # from the call, not from its return
    assert ok.attributes["agent_otel.end_reason"] == "exhausted"
    assert failed.attributes["error.type"] == "LookupError"
    assert failed.status.status_code is trace.StatusCode.ERROR


_OWN = LookupError("the agent's own")


class DelegatingRun(Agent):
    """An Agent whose plain ``run`` returns its async body's coroutine: async in all but name."""

    tool_name = "delegating"

    def run(self, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._run(**kwargs)

    async def _run(self, **kwargs: Any) -> str:
        if kwargs["user_message"] == "fail":
            raise _OWN
        await asyncio.sleep(0)
        return f"hello, {kwargs['user_message']}"


class DelegatingInvoke:
    """An event agent whose plain ``invoke`` returns a coroutine that consumes its stream
    through the ``stream_wrapper`` it was handed."""

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield TextDelta("hi")
        yield LLMCallEnd()

    def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        return self._invoke(messages, stream_wrapper, config)

    async def _invoke(self, messages: Any, stream_wrapper: Any, config: Any) -> list[Any]:
        events = self.stream(messages, config)
        if stream_wrapper is not None:
            events = stream_wrapper(events)
        return [type(event).__name__ async for event in events]


@pytest.mark.parametrize("how", [_drop_in, _by_class], ids=["instance", "class"])
def test_a_plain_run_or_invoke_returning_a_coroutine_is_traced(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    how: Any,
) -> None:
    """``def run(self, **kw): return self._run(**kw)`` is an async run in all but name: its
    callers await what it returns. Read as a synchronous agent's, it was passed through
    untraced with a warning that it was not async def. The coroutine it returns is the run:
    awaited traced, its value and its exception (the same object) the caller's, once only."""
    monkeypatch.setattr(_hints, "_untraced", set())
    run_agent, event_agent = DelegatingRun(), DelegatingInvoke()
    traced_run, traced_event = how(run_agent, otel_telemetry), how(event_agent, otel_telemetry)
    try:
        with caplog.at_level(logging.WARNING, logger="agent_otel"):
            assert asyncio.run(traced_run.run(user_message="world")) == "hello, world"
            with pytest.raises(LookupError) as raised:
                asyncio.run(traced_run.run(user_message="fail"))
            names = ["LLMCallStart", "TextDelta", "LLMCallEnd"]
            assert asyncio.run(traced_event.invoke([USER])) == names
    finally:
        uninstrument(type(run_agent))
        uninstrument(type(event_agent))
    assert raised.value is _OWN
    assert "not traced" not in caplog.text, caplog.text
    assert otel_telemetry.outline() == [
        "invoke_agent delegating",
        "invoke_agent delegating",
        ["invoke_agent DelegatingInvoke", [["step 0", ["chat m"]]]],
    ]
    failed = otel_telemetry.by_name()["invoke_agent delegating"][1]
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "LookupError"


class Scheduling(DelegatingRun):
    """A plain ``run`` that schedules its body: it returns a Task already under way."""

    def run(self, **kwargs: Any) -> Any:
        return asyncio.ensure_future(self._run(**kwargs))


class Submitting(DelegatingRun):
    """A plain ``run`` that hands its body to a thread pool: a ``concurrent.futures.Future``."""

    pool = concurrent.futures.ThreadPoolExecutor(1)

    def run(self, **kwargs: Any) -> Any:
        return self.pool.submit(lambda: asyncio.run(self._run(**kwargs)))


class Futured(DelegatingRun):
    """A plain ``run`` that returns a bare ``asyncio.Future`` it settles later."""

    def run(self, **kwargs: Any) -> Any:
        future = asyncio.get_running_loop().create_future()

        async def settle() -> None:
            try:
                future.set_result(await self._run(**kwargs))
            except Exception as error:
                future.set_exception(error)

        self.settling = asyncio.ensure_future(settle())
        return future


async def _await(work: Any) -> Any:
    concurrent_future = isinstance(work, concurrent.futures.Future)
    return await (asyncio.wrap_future(work) if concurrent_future else work)


@pytest.mark.parametrize("agent_class", [Scheduling, Submitting, Futured])
def test_a_plain_run_returning_work_under_way_is_traced_to_its_end(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    agent_class: type[DelegatingRun],
) -> None:
    """A plain ``run`` returning a Task or Future was left untraced and told. Its work was
    made in a context no run span was in, so nothing it starts can nest; but the run is
    recorded: from the call to the work's end, under the caller's span, its value the
    output and its exception (the same object the caller gets) the error. The caller gets
    that very object back (its ``cancel()``, its callbacks)."""
    monkeypatch.setattr(_hints, "_untraced", set())
    traced = instrument(agent_class(), **otel_telemetry.providers(), capture_content=True)
    tracer = otel_telemetry.tracer_provider.get_tracer("caller")

    async def main() -> tuple[Any, BaseException]:
        with tracer.start_as_current_span("request"):
            work = traced.run(user_message="world")
            assert isinstance(work, (asyncio.Future, concurrent.futures.Future))
            value = await _await(work)
            failed = traced.run(user_message="fail")
            with pytest.raises(LookupError) as raised:
                await _await(failed)
        return value, raised.value

    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        value, error = asyncio.run(main())
    assert (value, error) == ("hello, world", _OWN) and error is _OWN
    assert "not traced" not in caplog.text, caplog.text
    assert otel_telemetry.outline() == [
        ["request", ["invoke_agent delegating", "invoke_agent delegating"]]
    ]
    ok, failed = otel_telemetry.by_name()["invoke_agent delegating"]
    assert ok.attributes is not None and failed.attributes is not None
    assert ok.attributes["output.value"] == "hello, world"
    assert ok.attributes["agent_otel.end_reason"] == "exhausted"
    assert ok.status.status_code is trace.StatusCode.UNSET
    assert failed.attributes["error.type"] == "LookupError"
    assert failed.attributes["agent_otel.end_reason"] == "error"
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


class Yielding(DelegatingRun):
    """A plain ``run`` that is a generator: its body runs only as the caller iterates it."""

    def run(self, **kwargs: Any) -> Any:
        yield f"hello, {kwargs['user_message']}"


class Streaming(DelegatingRun):
    """A plain ``run`` returning an async generator: a stream, not a run's value."""

    def run(self, **kwargs: Any) -> Any:
        return self._stream(**kwargs)

    async def _stream(self, **kwargs: Any) -> AsyncIterator[str]:
        yield f"hello, {kwargs['user_message']}"


async def _drained(work: Any) -> list[Any]:
    return [item async for item in work] if hasattr(work, "__aiter__") else list(work)


@pytest.mark.parametrize(
    ("agent_class", "kind"), [(Yielding, "a generator"), (Streaming, "an async_generator")]
)
def test_a_plain_run_returning_a_stream_is_told_not_recorded_as_done(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    agent_class: type[DelegatingRun],
    kind: str,
) -> None:
    """A plain ``run`` whose value is a generator or an async generator has done no work yet
    when it returns (its caller's iteration runs it): it was recorded as a run that ended as
    it was called, its output the generator's repr, and nobody told. It goes untraced and is
    told once; the caller gets it as it is."""
    monkeypatch.setattr(_hints, "_untraced", set())
    traced = instrument(agent_class(), **otel_telemetry.providers(), capture_content=True)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        work = traced.run(user_message="world")
        assert asyncio.run(_drained(work)) == ["hello, world"]
    assert f"run() is a plain function, not async def (it returned {kind})" in caplog.text
    assert otel_telemetry.spans() == []


def test_a_task_a_plain_run_returned_is_timed_from_the_call_to_its_end(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    """The run starts as the call returns the Task, not when the loop next turns (the
    Task's first step has run by then), and ends with it; cancelled, it says so."""

    class Slow(DelegatingRun):
        def run(self, **kwargs: Any) -> Any:
            async def body() -> str:
                otel_clock.advance(2.0)  # the whole body runs in the Task's first step
                await asyncio.sleep(0)
                return "done"

            return asyncio.ensure_future(body())

    traced = instrument(Slow(), **otel_telemetry.providers())

    async def main() -> None:
        assert await traced.run(user_message="x") == "done"
        task = traced.run(user_message="y")
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    done, cancelled = otel_telemetry.by_name()["invoke_agent delegating"]
    assert done.end_time is not None and done.start_time is not None
    assert done.end_time - done.start_time >= 2_000_000_000
    assert cancelled.attributes is not None
    assert cancelled.attributes["agent_otel.end_reason"] == "cancelled"
    assert cancelled.attributes["error.type"] == "CancelledError"


def test_a_failure_nobody_retrieves_is_still_logged_by_asyncio(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Recording the Task's exception does not retrieve it: asyncio still tells the
    application of a failed Task it never awaited, as without agent-otel."""
    traced = instrument(Scheduling(), **otel_telemetry.providers())
    told: list[str] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: told.append(str(context.get("message")))
        )
        traced.run(user_message="fail")
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()

    asyncio.run(main())
    assert told == ["Task exception was never retrieved"]
    assert otel_telemetry.span("invoke_agent delegating").attributes["error.type"] == "LookupError"  # type: ignore[index]


def test_a_plain_invoke_whose_task_wraps_its_stream_is_traced_and_not_told(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plain ``invoke`` returning a Task that passes its stream through the
    ``stream_wrapper`` was traced, and yet told "not traced" (the Task had not started when
    ``invoke`` returned); one whose Task never wraps it is told, once the Task is done."""
    monkeypatch.setattr(_hints, "_untraced", set())

    class Scheduled(DelegatingInvoke):
        def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
            return asyncio.ensure_future(self._invoke(messages, stream_wrapper, config))

    class Ignoring(Scheduled):
        def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
            return super().invoke(messages, None, config)

    async def main() -> None:
        assert await instrument(Scheduled(), **otel_telemetry.providers()).invoke([USER]) == [
            "LLMCallStart", "TextDelta", "LLMCallEnd",
        ]  # fmt: skip
        assert "not traced" not in caplog.text, caplog.text
        task = instrument(Ignoring(), **otel_telemetry.providers()).invoke([USER])
        assert "not traced" not in caplog.text  # its Task may still wrap it
        await task
        await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        asyncio.run(main())
    assert otel_telemetry.outline() == [["invoke_agent Scheduled", [["step 0", ["chat m"]]]]]
    assert (
        "Ignoring.invoke() returned a Task that never passed its stream through stream_wrapper"
        in caplog.text
    )


def test_an_async_run_behind_a_plain_decorator_is_still_traced(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A plain ``functools.wraps`` decorator over an ``async def run`` returns its coroutine:
    that run is async, and traced."""

    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return call

    class Decorated(Agent):
        tool_name = "decorated"

        @logged
        async def run(self, **kwargs: Any) -> str:
            return "ok"

    traced = instrument(Decorated(), **otel_telemetry.providers())
    assert asyncio.run(traced.run(user_message="x")) == "ok"
    assert otel_telemetry.outline() == ["invoke_agent decorated"]


def _unwrapped(fn: Any) -> Any:
    """A decorator that forgets ``functools.wraps``: a plain function returning the coroutine."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


_BODIES: list[int] = []  # the span current where each run's body ran


class HandsBack(Agent):
    """A ``run`` written as a plain function that hands back its async helper's coroutine."""

    tool_name = "hands_back"

    def run(self, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._answer(kwargs["user_message"])

    async def _answer(self, message: str) -> str:
        _BODIES.append(trace.get_current_span().get_span_context().span_id)
        return f"hello, {message}"


class Undecorated(Agent):
    tool_name = "undecorated"

    @_unwrapped
    async def run(self, **kwargs: Any) -> str:
        _BODIES.append(trace.get_current_span().get_span_context().span_id)
        return f"hello, {kwargs['user_message']}"


@pytest.mark.parametrize("how", [_drop_in, _by_class], ids=["instance", "class"])
@pytest.mark.parametrize("agent_class", [HandsBack, Undecorated])
def test_a_plain_run_handing_back_a_coroutine_is_traced(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    how: Any,
    agent_class: type[Agent],
) -> None:
    """A ``run`` that is a plain function handing back a coroutine (a decorator without
    ``functools.wraps`` over ``async def run``, or a delegation to an async helper) was traced
    until plain functions were passed through: then its runs went untraced, told as "a plain
    function, not async def (it returned a coroutine)". It is async: traced, its value kept."""
    monkeypatch.setattr(_hints, "_untraced", set())
    _BODIES.clear()
    agent = agent_class()
    traced = how(agent, otel_telemetry)
    try:
        with caplog.at_level(logging.WARNING, logger="agent_otel"):
            assert asyncio.run(traced.run(user_message="world")) == "hello, world"
    finally:
        uninstrument(agent_class)
    assert "not traced" not in caplog.text
    [run] = otel_telemetry.spans()
    assert run.name == f"invoke_agent {agent.tool_name}"
    assert run.context is not None
    assert [run.context.span_id] == _BODIES  # its body ran in the run


def test_the_faq_quotes_what_an_untraced_agent_is_told(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/faq.md quotes the messages word for word (it quoted "so its runs are not traced",
    which the code never said): each quote, its class's name put back, is what is logged."""
    monkeypatch.setattr(_hints, "_untraced", set())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        list(instrument(SyncStreaming(), **otel_telemetry.providers()).stream([USER]))
        instrument(SyncInvoke(), **otel_telemetry.providers()).invoke([USER])
    faq = " ".join((ROOT / "docs" / "faq.md").read_text().split())
    quotes = re.findall(r"`(SyncAgent\.[^`]*not traced)`", faq)
    assert len(quotes) == 2, quotes
    told = caplog.text.replace("SyncStreaming.", "SyncAgent.").replace("SyncInvoke.", "SyncAgent.")
    for quote in quotes:
        assert quote in told, (quote, told)


def test_instrumenting_again_with_other_options_is_told_once(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second instrument() asking for other options (content capture, a name) changes
    nothing, as documented, but said nothing: the newcomer's options were lost unseen."""
    monkeypatch.setattr(_hints, "_reinstrumented", set(), raising=False)
    providers = otel_telemetry.providers()

    class Mine(ScriptedAgent):
        pass

    agent = instrument(Mine([TextDelta("hi")]), agent_name="first", **providers)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert instrument(agent, agent_name="first", **providers) is agent  # the same: quiet
        assert "already instrumented" not in caplog.text
        assert instrument(agent, agent_name="second", capture_content=True, **providers) is agent
        instrument(agent, agent_name="third", **providers)  # told once per class
    told = "<locals>.Mine, already instrumented, changes nothing"
    assert caplog.text.count(told) == 1, caplog.text
    assert "(agent_name, capture_content as given here ignored)" in caplog.text
    assert "uninstrument() it first" in caplog.text
    asyncio.run(agent.invoke([USER]))
    assert otel_telemetry.outline() == [["invoke_agent first", ["step 0"]]]  # unchanged

    caplog.clear()
    monkeypatch.setattr(_hints, "_reinstrumented", set(), raising=False)
    try:
        with caplog.at_level(logging.WARNING, logger="agent_otel"):
            instrument(Mine, name="a")
            instrument(Mine, name="a")
            assert "already instrumented" not in caplog.text
            instrument(Mine, name="b")
    finally:
        uninstrument(Mine)
    assert "(name as given here ignored)" in caplog.text


@pytest.mark.parametrize(
    ("given", "told"),
    [
        (lambda t: {"tracer_provider": None}, "tracer_provider=...) takes an SDK TracerProvider"),
        (lambda t: {"tracer_provider": t.tracer_provider.get_tracer("a")}, "not a Tracer"),
        (  # the two swapped
            lambda t: {"tracer_provider": t.meter_provider, "meter_provider": t.tracer_provider},
            "not a MeterProvider: pass the provider you built (what you call get_tracer() on)",
        ),
        (lambda t: {"tracer_provider": TracerProvider}, "as tracer_provider=TracerProvider()"),
        (  # the API's global placeholder, before anything is configured
            lambda t: {"meter_provider": NoOpMeterProvider()},
            "meter_provider=...) takes an SDK MeterProvider (with get_meter(), shutdown() and",
        ),
        (lambda t: {"logger_provider": t.tracer_provider}, "logger_provider=...) takes an SDK"),
        (lambda t: {"shutdown_timeout_millis": "5000"}, "milliseconds from 0 to"),
    ],
)
def test_telemetry_of_what_is_no_sdk_provider_is_told_at_the_call(
    otel_telemetry: InMemoryTelemetry, given: Any, told: str
) -> None:
    """``Telemetry(tracer_provider, meter_provider)`` adopts providers wired by hand. It took
    anything: a tracer, the providers swapped, None or the API's placeholder failed only at
    flush, shutdown or the process's exit, as a traceback from a helper thread (a timeout given
    as text raised in ``atexit``). Each is a TypeError at the call, naming the argument."""
    arguments = {
        "tracer_provider": otel_telemetry.tracer_provider,
        "meter_provider": otel_telemetry.meter_provider,
    }
    arguments.update(given(otel_telemetry))
    with pytest.raises(TypeError, match=r"^Telemetry\(") as raised:
        Telemetry(**arguments)
    assert told in str(raised.value)


@pytest.mark.parametrize(
    ("call", "told"),
    [
        (lambda t: span_tree(t), "span_tree() takes finished spans, not an InMemoryTelemetry: "),
        (lambda t: span_outline(t), "pass telemetry.spans(), or call telemetry.outline()"),
        (lambda t: span_tree(t.tracer_provider), "not a TracerProvider"),
        (
            lambda t: asyncio.run(run_script(t.tracer_provider, [])),  # type: ignore[arg-type]
            "run_script() takes the InMemoryTelemetry first (the otel_telemetry fixture",
        ),
        (
            lambda t: asyncio.run(run_script(t, ScriptedAgent([]))),  # type: ignore[arg-type]
            "a list of events or an agent's stream (agent.stream(messages)), not a ScriptedAgent",
        ),
        (lambda t: asyncio.run(run_script(t, None)), "not a NoneType"),  # type: ignore[arg-type]
        # a key as one string kept every key it contains; a number raised from inside the tree
        (
            lambda t: t.tree(attributes="gen_ai.request.model"),
            "not one string: pass attributes=['gen_ai.request.model']",
        ),
        (lambda t: span_tree([], attributes=1), "span_tree(attributes=...) takes True, False"),
        (lambda t: span_tree([], attributes=[1]), "takes keys as str, not an int"),
        (lambda t: t.tree(attributes=(k for k in "ab")), "not a generator"),
        (lambda t: t.tree(events="no"), "(events=...) takes True or False, not a str"),
        (lambda t: t.tree(attrs=False), "InMemoryTelemetry.tree() got an unexpected keyword"),
        # a tree's dicts or by_name()'s names where spans belong raised AttributeError inside
        (lambda t: span_tree([{"name": "x"}]), "not a collection holding a dict"),
        (lambda t: span_outline({"chat m": None}), "not a collection holding a str"),
    ],
    ids=[
        "tree", "outline", "provider", "script-provider", "script-agent", "script-none",
        "attributes-one-string", "attributes-int", "attributes-of-ints", "attributes-generator",
        "events-str", "tree-misspelt", "tree-of-dicts", "outline-of-names",
    ],
)  # fmt: skip
def test_the_test_kit_given_the_wrong_thing_says_what_to_pass(
    otel_telemetry: InMemoryTelemetry, call: Any, told: str
) -> None:
    """The kit's helpers given its handle where spans belong, a provider where the handle
    belongs or an agent where its stream belongs raised Python's bare "is not iterable" or
    "has no attribute 'wrapper'"."""
    with pytest.raises(TypeError) as raised:
        call(otel_telemetry)
    assert told in str(raised.value)


async def test_a_span_asked_of_a_telemetry_that_recorded_nothing_says_why(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer's test ran the agent with otel_wrapper() (the global providers), then asked
    the fixture for its span: "0 spans named 'chat m'; names: []" said nothing of why."""
    monkeypatch.setattr(_hints, "_told", [True])  # the process-wide hint: not this test's
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    await agent.invoke([USER], stream_wrapper=otel_wrapper())
    with pytest.raises(AssertionError, match="no span was recorded in this telemetry") as raised:
        otel_telemetry.span("chat m")
    assert "telemetry.wrapper(...)" in str(raised.value)
    assert "instrument(agent, **telemetry.providers())" in str(raised.value)
    await agent.invoke([USER], stream_wrapper=otel_telemetry.wrapper())
    with pytest.raises(AssertionError, match=r"0 spans named 'x'; names: \['chat m'"):
        otel_telemetry.span("x")


async def test_a_span_asked_for_inside_its_run_says_the_run_has_not_ended(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``telemetry.span(...)`` read in the consumer's loop, before the run ended, said no span
    was recorded and to give the runs the telemetry's providers, which they had: a run's
    spans are recorded as they end. It now says which are open and when to read them."""
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="hi"), LLMCallEnd(model="m")])
    wrapper = otel_telemetry.wrapper(agent_name="a")
    async with contextlib.aclosing(wrapper(agent.stream([USER]))) as events:
        async for _event in events:
            with pytest.raises(AssertionError) as raised:
                otel_telemetry.span("invoke_agent a")
            break
    told = str(raised.value)
    assert "has ended" in told and "'invoke_agent a'" in told and "still open" in told, told
    assert "Give the runs its providers" not in told
    assert otel_telemetry.span("invoke_agent a")  # ended (closed early): now recorded


@pytest.mark.parametrize("entry", [otel_wrapper, _instrumented, _ended])
def test_a_telemetry_handle_where_its_provider_belongs_says_which_attribute(
    otel_telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """``telemetry = configure(...)`` then ``otel_wrapper(tracer_provider=telemetry)``: the
    handle holds the provider; the message said only "pass the provider itself"."""
    with pytest.raises(TypeError) as raised:
        entry(tracer_provider=otel_telemetry)
    assert "pass its tracer_provider, as tracer_provider=telemetry.tracer_provider" in str(
        raised.value
    )


@pytest.mark.parametrize(
    ("env", "console", "otlp"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, True, False),  # no endpoint: the terminal view
        (
            {"OTEL_TRACES_EXPORTER": "otlp_proto_http", **OTLP_DEAD},
            False,
            True,  # opentelemetry-instrument's name for OTLP/HTTP: the endpoint beside it
        ),
        ({"OTEL_TRACES_EXPORTER": "zipkin,otlp", **OTLP_DEAD}, False, True),
    ],
    ids=["jaeger", "otlp_proto_http", "one-known"],
)
def test_an_exporter_variable_of_unknown_values_is_ignored_as_told(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    env: dict[str, str],
    console: bool,
    otlp: bool,
) -> None:
    """The warning said the value was "ignored", but the variable then switched traces off:
    neither the terminal view nor the OTLP endpoint set beside it got a span."""
    for var, value in {**QUIET, **env}.items():
        monkeypatch.setenv(var, value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure(
            "t", console_stream=io.StringIO(), set_global=False, shutdown_timeout_millis=100
        )
    telemetry.shutdown()
    assert "is not supported by configure(); ignored" in caplog.text
    assert (telemetry.console is not None) is console
    assert bool(telemetry.spans_lost) is otlp  # counted only with OTLP trace export


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        (
            {"protocol": "grpc"},
            {},
            "(protocol='grpc') needs the optional gRPC exporter; install it with: pip install "
            "'agent-otel[grpc]', or use OTLP/HTTP: protocol='http/protobuf'",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "(OTEL_EXPORTER_OTLP_PROTOCOL=grpc) needs the optional gRPC exporter; install it "
            "with: pip install 'agent-otel[grpc]', or use OTLP/HTTP: "
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
        ),
    ],
    ids=["argument", "variable"],
)
def test_grpc_without_its_extra_names_what_asked_for_it(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, str], env: dict[str, str], told: str
) -> None:
    """A deployment's OTEL_EXPORTER_OTLP_PROTOCOL=grpc without the grpc extra was told to
    "use protocol='http/protobuf'", an argument the application never passed."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    for var, value in {**QUIET, **OTLP_DEAD, **env}.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ImportError) as raised:
        configure("t", set_global=False, **options)  # type: ignore[arg-type]
    assert told in str(raised.value)


@pytest.mark.parametrize(
    ("module", "missing", "told"),
    [
        (
            "agent_otel.instrumentor",
            "opentelemetry.instrumentation",
            "needs opentelemetry-instrumentation, the instrumentor extra: "
            "pip install 'agent-otel[instrumentor]'",
        ),
        ("agent_otel.remote.a2a", "a2a", "needs a2a-sdk 1.x, the a2a extra: pip install"),
    ],
)
def test_a_public_module_without_its_extra_names_the_extra(
    module: str, missing: str, told: str
) -> None:
    """docs/instrument.md's `from agent_otel.instrumentor import AgentInstrumentor` on the base
    install raised "No module named 'opentelemetry.instrumentation'", naming no extra."""
    code = textwrap.dedent(
        f"""
        import importlib, sys
        sys.modules[{missing!r}] = None  # as when the extra is not installed
        try:
            importlib.import_module({module!r})
        except ModuleNotFoundError as error:
            print(error)
        """
    )
    assert told in _run_alone(code).stdout


@pytest.mark.parametrize(
    ("options", "env", "told"),
    [
        ({"prometheus_port": 0}, {}, "(prometheus_port=0) needs the prometheus extra"),
        ({}, {"AGENT_OTEL_PROMETHEUS_PORT": "0"}, "(AGENT_OTEL_PROMETHEUS_PORT=0) needs the"),
    ],
    ids=["argument", "variable"],
)
def test_prometheus_without_its_extra_names_what_asked_for_it(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, int], env: dict[str, str], told: str
) -> None:
    """A deployment's AGENT_OTEL_PROMETHEUS_PORT without the extra failed configure() with
    no word of the variable that asked for the endpoint."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)
    for var, value in {**QUIET, **env}.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ImportError) as raised:
        configure("t", set_global=False, console_stream=io.StringIO(), **options)  # type: ignore[arg-type]
    assert told in str(raised.value)
    assert "pip install 'agent-otel[prometheus]'" in str(raised.value)


@pytest.mark.parametrize(
    ("given", "error"),
    [({"step": 0.001}, TypeError), ({"start": "now"}, TypeError), ({"step": -1}, ValueError)],
)
def test_a_fake_clock_of_no_nanoseconds_is_told_at_the_call(
    given: dict[str, Any], error: type[Exception]
) -> None:
    """FakeClock(step=0.001) (seconds for nanoseconds) or a text start was taken, and every
    run under it then failed inside, logged as agent-otel's own internal error."""
    with pytest.raises(error, match=r"FakeClock\((start|step)=\.\.\.\) takes an int number of n"):
        FakeClock(**given)


async def _two_events() -> AsyncIterator[object]:
    yield LLMCallStart(model="m")
    yield LLMCallEnd()


class _StreamByMetaclass(type):
    def __aiter__(cls) -> AsyncIterator[object]:
        return _two_events()


class _StreamClass(metaclass=_StreamByMetaclass):
    """A class that is itself an async iterable: ``__aiter__`` on its metaclass."""


class _Delegating:
    """A proxy that is an async iterator through ``__getattr__`` alone."""

    def __init__(self) -> None:
        self._inner = _two_events()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _mocked(kind: type[Any]) -> Any:
    stream = kind()
    stream.__aiter__.return_value = [LLMCallStart(model="m"), LLMCallEnd()]
    return stream


def _object_proxy() -> Any:
    wrapt = pytest.importorskip("wrapt")
    return wrapt.ObjectProxy(_two_events())


@pytest.mark.parametrize(
    "given",
    [
        lambda: _mocked(unittest.mock.AsyncMock),
        lambda: _mocked(unittest.mock.MagicMock),
        _object_proxy,
        lambda: _StreamClass,
        _Delegating,
    ],
    ids=["AsyncMock", "MagicMock", "wrapt ObjectProxy", "metaclass __aiter__", "__getattr__"],
)
async def test_what_async_for_accepts_is_a_stream_the_wrapper_traces(given: Any) -> None:
    """Whatever ``async for`` takes is a stream: a test's ``AsyncMock`` whose ``__aiter__``
    returns events (its iterator has ``__anext__`` alone), a proxy, a class whose metaclass
    iterates. A mock's iterator raised ``TypeError`` at the first pull ("'async for'
    requires an object with __aiter__ method") where ``async for`` over it ran."""
    telemetry = InMemoryTelemetry()
    events = [type(event).__name__ async for event in telemetry.wrapper()(given())]
    assert events == ["LLMCallStart", "LLMCallEnd"]
    names = [span.name for span in telemetry.spans()]
    assert names[-1] == "invoke_agent" and "chat m" in names, names


def test_a_headers_variable_written_as_http_headers_is_told_with_the_form_the_exporters_read(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``OTEL_EXPORTER_OTLP_HEADERS="Authorization: Bearer ..."`` (a header as curl writes
    it): the SDK's exporters drop the entry, every request goes without it, and the SDK's own
    warning names no variable. The OTLP exporter's specification wants comma-separated
    ``name=value`` entries, URL-encoded; the entry is quoted scrubbed, never with its token."""
    token = "ghp_" + "a1B2c3D4e5" * 4
    _only_otel_variables(
        monkeypatch,
        {
            **QUIET,
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_HEADERS": f"x-tenant=acme,Authorization: Bearer {token}",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=abc, Authorization=Bearer%20x",
        },
    )
    for _ in range(2):
        configure(set_global=False, console=False).shutdown()
    told = [r.getMessage() for r in caplog.records if "is not name=value" in r.getMessage()]
    assert len(told) == 1  # once, and only for the variable holding such an entry
    assert told[0].startswith("agent-otel: OTEL_EXPORTER_OTLP_HEADERS has an entry that is not")
    assert "(Authorization: Bearer [REDACTED:" in told[0] and token[4:] not in told[0]
    assert told[0].endswith("its value URL-encoded (a space as %20)")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_SDK_DISABLED", "1"),
        ("OTEL_SDK_DISABLED", "yes"),
        ("OTEL_EXPORTER_OTLP_INSECURE", "1"),
        ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "on"),
        ("OTEL_EXPORTER_OTLP_METRICS_INSECURE", "true "),  # the gRPC exporters do not strip
    ],
)
def test_a_boolean_variable_of_no_boolean_value_is_told_it_reads_as_false(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, variable: str, value: str
) -> None:
    """OpenTelemetry's boolean variables are true only as ``true`` (any case); the SDK reads
    ``1``, ``yes`` or ``on`` as false without a word, though the specification asks for a
    warning: ``OTEL_SDK_DISABLED=1`` exported everything it was set to stop, and
    ``OTEL_EXPORTER_OTLP_INSECURE=1`` left the gRPC exporter on TLS against a plain Collector."""
    monkeypatch.setenv(variable, value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure(
            "t", console_stream=io.StringIO(), set_global=False, shutdown_timeout_millis=100
        )
        configure("u", console_stream=io.StringIO(), set_global=False).shutdown()
    recording = telemetry.tracer_provider.get_tracer("probe").start_span("s").is_recording()
    telemetry.shutdown()
    told = [r.getMessage() for r in caplog.records if f"{variable}=" in r.getMessage()]
    assert told == [
        f"agent-otel: {variable}={value!r} is read as false: OpenTelemetry reads a boolean "
        f"variable as true only when it is 'true' (any case). Set {variable}=true, or "
        "unset it (docs/configure.md)"
    ]
    assert recording  # read as false, as told: OTEL_SDK_DISABLED=1 disabled nothing


@pytest.mark.parametrize("value", ["false", "FALSE", "", "True", "true"])
def test_a_boolean_variable_of_a_boolean_value_is_not_told_it_reads_as_false(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        configure("t", console_stream=io.StringIO(), set_global=False).shutdown()
    assert "read as false" not in caplog.text


def test_sdk_disabled_with_spaces_around_true_is_told_as_the_sdk_reads_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK strips ``OTEL_SDK_DISABLED`` before reading it, so a ``.env`` file's ``true``
    with a trailing newline disabled every provider; only a bare ``true`` was told, so this
    one recorded nothing with no word of why."""
    monkeypatch.setenv("OTEL_SDK_DISABLED", " true\n")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        telemetry = configure("t", console_stream=io.StringIO(), set_global=False)
    recording = telemetry.tracer_provider.get_tracer("probe").start_span("s").is_recording()
    telemetry.shutdown()
    assert not recording  # the SDK's reading: disabled
    assert caplog.text.count("OTEL_SDK_DISABLED=' true\\n', so the providers configure()") == 1
    assert "read as false" not in caplog.text


class _Dropped(ScriptedAgent):
    pass


def test_a_drop_in_dropped_without_a_run_says_to_keep_what_instrument_returns(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """``instrument(agent)`` on an instance returns a traced drop-in and leaves ``agent`` as
    it was (docs/instrument.md); written as a statement, as one decorates in place, the
    drop-in was thrown away and every run of ``agent`` went untraced, with no word."""
    agent = _Dropped([TextDelta("hi")])
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        instrument(agent, **otel_telemetry.providers())
        gc.collect()  # (CPython frees it at once; another interpreter at a collection)
        asyncio.run(agent.invoke([USER]))
        instrument(agent, **otel_telemetry.providers())  # told once per class
        gc.collect()
    assert otel_telemetry.spans() == []  # the premise: the agent passed stays untraced
    told = [r.getMessage() for r in caplog.records if "drop-in" in r.getMessage()]
    assert told == [
        "agent-otel: instrument() returned a traced drop-in of _Dropped that was "
        "dropped without a run: the agent given to instrument() is left as it was, untraced. "
        "Keep what it returns and run that (agent = instrument(agent)), or instrument the "
        "class (docs/instrument.md)"
    ]


def test_a_drop_in_that_ran_kept_or_uninstrumented_is_told_nothing(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        traced = instrument(_Dropped([TextDelta("hi")]), **otel_telemetry.providers())
        asyncio.run(traced.invoke([USER]))
        del traced  # it ran: dropping it afterwards is no mistake
        uninstrument(instrument(_Dropped([TextDelta("hi")])))  # the plain agent asked back
        kept = instrument(_Dropped([TextDelta("hi")]), **otel_telemetry.providers())
        gc.collect()
    assert otel_telemetry.outline() == [["invoke_agent scripted", ["step 0"]]]
    assert "drop-in" not in caplog.text
    assert is_instrumented(kept)


class _Tagged(ScriptedAgent):
    """An event agent whose entry points take one positional argument past the contract's."""

    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None, tag: str = ""
    ) -> AsyncIterator[Any]:
        self.tag = tag
        return super().stream(messages, config)

    async def invoke(  # type: ignore[override]
        self,
        messages: list[Message],
        stream_wrapper: Any = None,
        config: dict[str, Any] | None = None,
        tag: str = "",
    ) -> Any:
        self.tag = tag
        return await super().invoke(messages, stream_wrapper, config)


class _Prompted(Agent):
    """An Agent of the other contract whose run takes its prompt by position."""

    tool_name = "prompted"

    async def run(self, prompt: str = "", **kwargs: Any) -> str:
        return f"answer to {prompt}"


class _PromptStreamed(_Prompted):
    """The same, streaming: its astream takes the prompt by position too."""

    async def astream(self, prompt: str = "", **kwargs: Any) -> AsyncIterator[Any]:
        yield TextDelta(text=await self.run(prompt, **kwargs))


async def _pydantic_ai_run(agent: Any) -> Any:
    return (await agent.run("Weather?")).output  # pydantic-ai's run(user_prompt)


async def _drain(stream: Any) -> list[Any]:
    return [event async for event in stream]


@pytest.mark.parametrize(
    ("make", "call", "name"),
    [
        (lambda: _pydantic_ai_agent(), _pydantic_ai_run, "weatherbot"),
        (lambda: _Prompted(), lambda a: a.run("q"), "prompted"),
        (lambda: _PromptStreamed(), lambda a: _drain(a.astream("q")), "prompted"),
        (lambda: _Tagged([TextDelta("hi")]), lambda a: _drain(a.stream([USER], None, "t")), ""),
        (lambda: _Tagged([TextDelta("hi")]), lambda a: a.invoke([USER], None, None, "t"), ""),
    ],
    ids=["pydantic-ai run", "run", "astream", "stream", "invoke"],
)
def test_an_entry_point_given_more_by_position_than_the_contract_runs_as_untraced(
    otel_telemetry: InMemoryTelemetry, make: Any, call: Any, name: str
) -> None:
    """instrument() takes an agent by its entry points' names, so a framework's agent
    (pydantic-ai's ``run(user_prompt)``) or one of ours with an extra argument is taken; the
    traced entry point then raised ``TypeError: run() takes 1 positional argument but 2 were
    given`` where the agent's own call worked: tracing broke the agent."""
    plain = asyncio.run(call(make()))
    traced = asyncio.run(call(instrument(make(), **otel_telemetry.providers())))
    assert _same(traced, plain)
    [run] = [s.name for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    assert run == f"invoke_agent {name or 'scripted'}"


def _same(traced: Any, plain: Any) -> bool:
    """The two calls' results alike: values, or events of the same kinds and texts."""
    if isinstance(plain, list):
        return [(type(e), getattr(e, "text", None)) for e in traced] == [
            (type(e), getattr(e, "text", None)) for e in plain
        ]
    return bool(getattr(traced, "text", traced) == getattr(plain, "text", plain))


def _pydantic_ai_agent() -> Any:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.test import TestModel

    return PydanticAgent(TestModel(), name="weatherbot")


_PUBLIC_MODULES = ["agent_otel", "agent_otel.testing", "agent_otel.instrumentor"]
# run_script's keywords are otel_wrapper()'s options, told by it (it needs its two arguments).
_UNCHECKED = {"run_script"}
# Methods the recorder (or the SDK) calls per run, span or event: a check would cost each call.
_PER_RUN = {
    "ContentCapture": {"new_messages", "copied", "encode", "encode_within"},
    "ModelPrice": {"cost"},
    "PriceTable": {"price"},
    "RunIdentity": {"over"},
    "RunIdentityProcessor": {"on_start", "on_end"},
    "Scrubber": {"text", "value", "tree"},
    "TailSampler": {"on_start", "on_end"},
}


def _public_callables() -> list[Any]:
    """Every public callable that takes keywords, with the names it takes (a class's are its
    constructor's, a ``**options: Unpack[...]``'s its keys)."""
    from test_options_doc import public_parameters

    found = []
    for module in _PUBLIC_MODULES:
        imported = __import__(module, fromlist=["__all__"])
        for name in imported.__all__:
            value = getattr(imported, name)
            if not callable(value) or name in _UNCHECKED:
                continue
            try:
                names = public_parameters(value.__init__ if isinstance(value, type) else value)
            except (TypeError, ValueError):  # a typing alias: no signature
                continue
            if names - {"self"}:
                found.append(pytest.param(name, value, names - {"self"}, id=name))
    return found


def _misspelt(name: str, takes: set[str]) -> str:
    """``name`` with its last letter doubled: a typo that is no other name it takes."""
    typo = name + name[-1]
    assert typo not in takes
    return typo


@pytest.mark.parametrize(("name", "callable_", "takes"), _public_callables())
def test_every_public_callable_tells_a_misspelt_keyword_the_one_meant(
    name: str, callable_: Any, takes: set[str]
) -> None:
    """``otel_wrapper()``, ``instrument()`` and ``configure()`` told a misspelt option the one
    meant; ``remote_agent(nam=...)``, ``Scrubber(pattern=...)``, ``InMemoryTelemetry(procesors=
    ...)`` and twenty more got Python's bare "unexpected keyword argument" (``remote_agent``'s
    not even naming the call). Every public callable says the nearest name it takes, at once."""
    for meant in sorted(takes):
        typo = _misspelt(meant, takes)
        with pytest.raises(TypeError) as raised:
            callable_(**{typo: None})
        told = str(raised.value)
        assert told.startswith(f"{name}() got an unexpected keyword argument {typo!r}"), told
        assert f"did you mean {meant!r}?" in told, told


def test_the_keyword_check_skips_only_what_a_run_makes() -> None:
    names = {param.values[0] for param in _public_callables()}
    assert {"remote_agent", "Scrubber", "InMemoryTelemetry", "span_tree", "RunIdentity"} <= names
    assert not names & set(_UNCHECKED)


def _public_methods() -> list[Any]:
    """Every public method of a public class that takes a named argument, with the names it
    takes (an ``**options: Unpack[...]``'s keys too), but those a run calls (``_PER_RUN``)."""
    from test_options_doc import public_parameters

    found = []
    for module in _PUBLIC_MODULES:
        imported = __import__(module, fromlist=["__all__"])
        for name in imported.__all__:
            cls = getattr(imported, name)
            if not isinstance(cls, type):
                continue
            for attribute, value in vars(cls).items():
                if attribute.startswith("_") or attribute in _PER_RUN.get(name, ()):
                    continue
                bound = not isinstance(value, staticmethod | classmethod)
                if not callable(getattr(value, "__func__", value)):
                    continue  # a property, a constant
                method = getattr(cls, attribute)
                takes = public_parameters(method) - {"self", "cls"}
                if takes:
                    qualname = f"{name}.{attribute}"
                    found.append(pytest.param(qualname, method, bound, takes, id=qualname))
    return found


@pytest.mark.parametrize(("name", "method", "bound", "takes"), _public_methods())
def test_every_public_method_tells_a_misspelt_keyword_the_one_meant(
    name: str, method: Any, bound: bool, takes: set[str]
) -> None:
    """``telemetry.span(nme=...)``, ``telemetry.tree(attribute=False)``, ``BUNDLED_PRICES.
    with_prices(..., sourc=...)``, ``call.describe(nam=...)`` got Python's bare "unexpected
    keyword argument" where a public function says the name meant: a method says it too, as
    its own call, before it runs (so no instance is needed here)."""
    for meant in sorted(takes):
        typo = _misspelt(meant, takes)
        with pytest.raises(TypeError) as raised:
            method(*[object()] * bound, **{typo: None})
        told = str(raised.value)
        assert told.startswith(f"{name}() got an unexpected keyword argument {typo!r}"), told
        assert f"did you mean {meant!r}?" in told, told


def test_the_methods_left_to_python_are_those_a_run_calls() -> None:
    """The methods the check leaves out are those it would cost a run (each named)."""
    methods = {param.values[0] for param in _public_methods()}
    assert {"InMemoryTelemetry.span", "PriceTable.with_prices", "Telemetry.shutdown"} <= methods
    assert {name: set(left) for name, left in _hints.UNCHECKED.items()} == _PER_RUN


def test_a_run_given_no_ids_shares_one_identity_and_one_given_ids_records_them() -> None:
    """Runs given no ids (most) skip the public constructor's check; a run given one keeps it."""
    from agent_otel.identity._identity import make_identity

    assert make_identity() is make_identity()
    assert make_identity(user_id=7).user_id == "7"
    assert not make_identity() and make_identity(session_id="s")


@pytest.mark.parametrize(
    ("call", "told"),
    [
        (lambda: instrument(nme="researcher"), "did you mean 'name'?"),
        (lambda: instrument(capture_contents=True), "did you mean 'capture_content'?"),
        (lambda: instrument(agent=ScriptedAgent([])), "pass it first, by position"),
        (lambda: instrument(target=ScriptedAgent), "pass it first, by position"),
    ],
    ids=["misspelt name", "misspelt option", "the agent by keyword", "a class by keyword"],
)
def test_instruments_decorator_form_tells_an_unknown_option_at_the_call(
    call: Any, told: str
) -> None:
    """``instrument(agent=my_agent)`` returned a decorator, told nothing, and the agent went
    untraced (``traced.run`` then an ``AttributeError`` on a function); ``@instrument(nme=
    "x")`` was told only once applied. The options are checked where they are given."""
    with pytest.raises(TypeError, match="instrument\\(\\) got an unexpected keyword") as raised:
        call()
    assert told in str(raised.value)


@pytest.mark.parametrize("protocol", ["http", "http/json", "otlp"])
def test_a_protocol_argument_configure_cannot_use_is_told_as_configures(protocol: str) -> None:
    """Every other argument ``configure()`` cannot work with names the call
    (``configure(timeout=...) must be > 0``); ``protocol="http"``, what a newcomer writes for
    OTLP/HTTP, said only ``protocol must be ...``, as if it came from somewhere else."""
    with pytest.raises(ValueError, match=r"^configure\(protocol=\.\.\.\) takes ") as raised:
        configure(protocol=protocol, set_global=False, console_stream=io.StringIO())
    assert f"'grpc' or 'http/protobuf', not {protocol!r}" in str(raised.value)


_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _continued(headers: Any) -> Any:
    with continue_trace(headers) as context:
        return context


@pytest.mark.parametrize(
    "read",
    [
        lambda given: extract_context(given),
        _continued,
    ],
    ids=["extract_context", "continue_trace"],
)
def test_one_header_value_given_for_the_headers_is_told_once(
    read: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``continue_trace(request.headers["traceparent"])``, one header's value where the headers
    belong, named no parent without a word: the remote run started a trace of its own and the
    caller's trace simply ended at the call. It still starts one (a request's data never
    raises into the server), and the mistake is told once, without the value (a header's value
    may be a credential)."""
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        for given in (_TRACEPARENT, _TRACEPARENT.encode()):
            context = read(given)
            assert not trace.get_current_span(context).get_span_context().is_valid
    told = [r.getMessage() for r in caplog.records if "headers" in r.getMessage()]
    assert len(told) == 1, told
    assert "not one header's value" in told[0]
    assert "request.headers" in told[0]
    assert "0af7651916cd43dd" not in told[0]


def test_headers_that_name_no_parent_are_told_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        for carrier in ({}, None, [], {"traceparent": _TRACEPARENT}):
            extract_context(carrier)
    assert caplog.records == []


def _section(page: str) -> str:
    """The text of ``page`` (``docs/x.md``), or of its section when it names one
    (``docs/x.md#a-heading``: up to the next heading of any level), as the site anchors it."""
    path, _, anchor = page.partition("#")
    text = (ROOT / path).read_text()
    if not anchor:
        return text
    parts = re.split(r"^#+ (.*)$", text, flags=re.MULTILINE)
    slugs = {re.sub(r"[^\w\s-]", "", h.lower()).strip().replace(" ", "-"): body
             for h, body in zip(parts[1::2], parts[2::2], strict=True)}  # fmt: skip
    assert anchor in slugs, f"{path} has no heading #{anchor}"
    return slugs[anchor]


def _points_where_documented(told: str, name: str) -> None:
    """``told`` names one page of docs/, which exists and mentions ``name``'s callable (a
    method by its own name)."""
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told)
    assert len(pages) == 1, f"names no page (or several): {told}"
    callable_name = name.rpartition(".")[2]
    assert re.search(rf"\b{re.escape(callable_name)}\b", _section(pages[0])), (
        f"{pages[0]} does not mention {callable_name}: {told}"
    )


@pytest.mark.parametrize(("name", "callable_", "takes"), _public_callables())
def test_a_misspelt_keyword_is_told_the_page_that_documents_the_callable(
    name: str, callable_: Any, takes: set[str]
) -> None:
    """``run_identity(sesion=...)`` and ``record_evaluation(scor=...)`` were sent to
    docs/options.md, which documents neither; ``Scrubber(pattern=...)`` to no page at all."""
    typo = _misspelt(min(takes), takes)
    with pytest.raises(TypeError) as raised:
        callable_(**{typo: None})
    _points_where_documented(str(raised.value), name)


_WRONG_VALUES = [
    ("step_spans", "false"),  # a variable's text: refused, never read as true
    ("activate_context", "0"),
    ("capture_content", "yes"),
    ("scrub", "no"),
    ("pending_spans", "5"),
    ("semconv", "newest"),
    ("prices", {"m": 1.0}),
    ("attributes", ["team"]),
    ("agent_name", 3),
    ("conversation_id", 1.5),
    ("meter_provider", trace.NoOpTracerProvider()),
]


@pytest.mark.parametrize(("option", "value"), _WRONG_VALUES, ids=[o for o, _ in _WRONG_VALUES])
@pytest.mark.parametrize("entry", [otel_wrapper, _instrumented], ids=["otel_wrapper", "instrument"])
def test_an_option_of_the_wrong_value_is_told_the_page_that_documents_it(
    entry: Any, option: str, value: object
) -> None:
    """``otel_wrapper(step_spans="false")`` (an option read from a variable as text) was told
    what the option takes, and ``capture_content="yes"`` its modes, but not where the options
    are documented: a misspelt name was sent to docs/options.md, a wrong value to no page."""
    with pytest.raises((TypeError, ValueError)) as raised:
        entry(**{option: value})
    told = str(raised.value)
    assert f"{option}=" in told, told
    _points_where_documented(told, "otel_wrapper" if entry is otel_wrapper else "instrument")


class _NoAgent:
    """What is no agent: no stream/invoke, no run/astream."""


def _invoked_with(wrapper: Any) -> None:
    asyncio.run(ScriptedAgent([]).invoke([USER], stream_wrapper=wrapper))


_MISUSES = [
    ("otel_wrapper", lambda t: _invoked_with(otel_wrapper)),
    ("telemetry.wrapper", lambda t: _invoked_with(t.wrapper)),
    ("otel_wrapper", lambda t: otel_wrapper()()),
    ("otel_wrapper", lambda t: otel_wrapper()(ScriptedAgent([]).invoke([USER]))),
    ("instrument", lambda t: instrument(_NoAgent())),
    ("instrument", lambda t: instrument(sys)),
]


@pytest.mark.parametrize(
    ("name", "misuse"),
    _MISUSES,
    ids=["uncalled", "kit-uncalled", "no-stream", "coroutine", "no-agent", "module"],
)
def test_a_misuse_at_the_call_names_the_page_that_documents_it(
    name: str, misuse: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """``stream_wrapper=otel_wrapper`` uncalled, ``otel_wrapper()(agent.invoke(...))``,
    ``instrument(NotAnAgent())``: told the fix, but not where the docs say it (only an option
    given by position or misspelt was sent to a page)."""
    with pytest.raises(TypeError) as raised:
        misuse(otel_telemetry)
    _points_where_documented(str(raised.value), name)


_WRONG_CONFIGURE_VALUES = [
    ("set_global", "false"),
    ("console", "1"),
    ("protocol", "http"),
    ("endpoint", 4318),
    ("service_name", 3),
    ("max_queue_size", "2048"),
    ("scrub", "no"),
    ("semconv", "newest"),
]


@pytest.mark.parametrize(
    ("option", "value"), _WRONG_CONFIGURE_VALUES, ids=[o for o, _ in _WRONG_CONFIGURE_VALUES]
)
def test_a_configure_option_of_the_wrong_value_is_told_the_page_that_documents_it(
    option: str, value: object
) -> None:
    """``configure(set_global="false")``, ``configure(protocol="http")``: told what the option
    takes, but not where configure()'s options are documented."""
    with pytest.raises((TypeError, ValueError)) as raised:
        configure(**{option: value})
    told = str(raised.value)
    assert f"configure({option}=" in told, told
    _points_where_documented(told, "configure")


@pytest.mark.parametrize(("name", "method", "bound", "takes"), _public_methods())
def test_a_methods_misspelt_keyword_is_told_the_page_that_documents_it(
    name: str, method: Any, bound: bool, takes: set[str]
) -> None:
    """``otel_telemetry.span(nme=...)``: its page (docs/testing.md), as a function's."""
    typo = _misspelt(min(takes), takes)
    with pytest.raises(TypeError) as raised:
        method(*[object()] * bound, **{typo: None})
    _points_where_documented(str(raised.value), name)


def _keyword_only() -> list[Any]:
    """The public callables and methods whose options are keyword-only (a positional one too
    many is told by the check, not Python; one taking ``**options`` checks them itself), with
    how many they take by position."""
    found = []
    for param in [*_public_callables(), *_public_methods()]:
        name, fn = param.values[0], param.values[1]
        bound = param.values[2] if len(param.values) == 4 else False
        target = fn.__init__ if isinstance(fn, type) else fn
        kinds = [p.kind for p in inspect.signature(target).parameters.values()]
        by_position = [k for k in kinds if k in (k.POSITIONAL_ONLY, k.POSITIONAL_OR_KEYWORD)]
        loose = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}  # own checks
        if inspect.Parameter.KEYWORD_ONLY in kinds and not loose & set(kinds):
            first = isinstance(fn, type) or bound  # self, given by Python or here
            found.append(pytest.param(name, fn, bool(bound), len(by_position) - first, id=name))
    return found


@pytest.mark.parametrize(("name", "callable_", "bound", "count"), _keyword_only())
def test_an_option_given_by_position_is_told_the_page_that_documents_the_callable(
    name: str, callable_: Any, bound: bool, count: int
) -> None:
    """``record_evaluation("relevance", 0.9, "good")``, ``continue_trace(headers, "conv")``
    were told to name their options and sent to docs/options.md, which documents neither."""
    with pytest.raises(TypeError, match="by position") as raised:
        callable_(*[object()] * (bound + count + 1))
    _points_where_documented(str(raised.value), name)


def test_every_callable_checked_has_a_page_that_documents_it() -> None:
    """The one table the messages read: each name the checks tell, and each entry, is on a page
    that exists and mentions it (a method by its own name, in its class's page)."""
    from agent_otel.recording import _pages

    for module in _PUBLIC_MODULES:  # every public callable decorated: its name in CHECKED
        imported = __import__(module, fromlist=["__all__"])
        for name in imported.__all__:
            getattr(imported, name)
    assert {"record_evaluation", "InMemoryTelemetry.span", "telemetry.wrapper"} <= _hints.CHECKED
    for name in sorted(_hints.CHECKED | set(_pages.PAGES)):
        page = _pages.page_of(name)
        assert page, f"{name}: no page in the table"
        _points_where_documented(page, name)


def test_a_misspelt_detector_to_disable_is_told_the_one_meant_not_every_name() -> None:
    """``Scrubber(disable=["emial"])`` was told ``unknown detectors`` and the tuple of all
    eighty-odd names, without saying which call: it names the call, the one meant and the
    page that lists them."""
    with pytest.raises(ValueError, match="unknown detectors") as raised:
        Scrubber(disable=["bearer_tokn"])
    told = str(raised.value)
    assert told.startswith("Scrubber(disable=...)"), told
    assert "did you mean 'bearer_token'?" in told and "docs/scrubbing.md" in told, told
    assert "openai_api_key" not in told, told  # (not the whole list)


def test_an_endpoint_that_is_no_url_is_told_as_the_configure_argument_it_is() -> None:
    with pytest.raises(ValueError, match="not an OTLP endpoint") as raised:
        configure(endpoint="localhost", console=False, set_global=False)
    assert str(raised.value).startswith("configure(endpoint='localhost')"), raised.value


def test_a_global_provider_set_before_configure_is_told_where_runs_go_and_what_to_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another library's global tracer provider, set first, was told only "Pass
    Telemetry.tracer_provider explicitly": not that runs on the globals record there instead of
    through configure()'s exporters, nor where to pass it."""
    from opentelemetry.trace import ProxyTracerProvider

    from agent_otel.exporting._globals import _set_global

    theirs, ours = InMemoryTelemetry(), InMemoryTelemetry()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        kept = _set_global(
            "TracerProvider",
            lambda: theirs.tracer_provider,
            ProxyTracerProvider,
            lambda _: None,
            ours.tracer_provider,
        )
    theirs.shutdown()
    ours.shutdown()
    assert kept is False
    told = caplog.records[-1].getMessage()
    assert "runs on the global one record there" in told, told
    assert "otel_wrapper(tracer_provider=telemetry.tracer_provider)" in told, told
    assert "docs/configure.md" in told, told


_ENDED = re.compile(r"still open .*were ended")


@pytest.mark.parametrize("shutdown", ["end_open_runs", "Telemetry.shutdown"])
async def test_runs_ended_at_shutdown_are_told_which_why_open_and_what_to_do(
    shutdown: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``end_open_runs()``, ``Telemetry.shutdown()`` and the exit hook each said only "N run(s)
    still open ... were ended", three near-copies: not which run, not why it was still open (a
    stream never consumed to its end nor closed), not what to do. One line now, naming the run,
    the cause, the remedy and the page that explains it."""
    telemetry = InMemoryTelemetry()
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="a"), LLMCallEnd()])
    stream = telemetry.wrapper(agent_name="greeter")(agent.stream([USER]))
    await anext(stream)  # pulled once, then left: the run stays open
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        if shutdown == "end_open_runs":
            assert end_open_runs(telemetry.tracer_provider) == 1
        else:
            Telemetry(telemetry.tracer_provider, telemetry.meter_provider).shutdown()
    told = [r.getMessage() for r in caplog.records if _ENDED.search(r.getMessage())]
    assert len(told) == 1, told
    line = told[0]
    assert "1 run(s)" in line and "invoke_agent greeter" in line, line  # which
    assert "consumed to its end" in line, line  # why it was open
    assert "aclosing" in line, line  # what to do
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", line)
    assert len(pages) == 1, line
    assert "end_open_runs" in _section(pages[0]) and "aclosing" in _section(pages[0])
    await stream.aclose()
    telemetry.shutdown()


class _OwnInvoke:
    """An object whose ``invoke`` is not the event contract's (``invoke(messages,
    stream_wrapper, config)``): a framework's own, LangGraph's ``invoke(input, config)``."""

    def invoke(self, input: Any, config: Any = None) -> Any:
        return {"input": input, "config": config}


def _compiled_graph() -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        x: int

    graph = StateGraph(State)
    graph.add_node("add", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    return graph.compile()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_OwnInvoke, {"input": {"x": 1}, "config": {"c": 1}}),
        (_compiled_graph, {"x": 2}),
    ],
    ids=["own invoke", "langgraph"],
)
def test_an_invoke_that_takes_no_stream_wrapper_is_called_as_written(
    make: Any, expected: Any, otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """``instrument(graph)`` took a compiled LangGraph graph by its ``invoke``; the traced
    ``graph.invoke({"x": 1}, config)`` then handed the graph our stream wrapper as its config and
    raised ``TypeError: Pregel.invoke() takes from 2 to 3 positional arguments but 4 were
    given``: tracing broke the agent. Such an ``invoke`` runs with its caller's arguments, told
    once that it is not traced and what traces it."""
    traced = instrument(make(), **otel_telemetry.providers())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        args = ({"x": 1}, {"c": 1}) if make is _OwnInvoke else ({"x": 1},)
        assert traced.invoke(*args) == expected
        assert traced.invoke(*args) == expected
    told = [r.getMessage() for r in caplog.records if "invoke()" in r.getMessage()]
    assert len(told) == 1, told
    assert "stream_wrapper" in told[0] and "not traced" in told[0], told[0]
    assert "docs/adapters.md" in told[0], told[0]


def test_a_framework_agent_given_to_instrument_is_told_its_adapter(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """``instrument()`` of a framework's agent recorded a bare ``invoke_agent`` span per run (a
    pydantic-ai agent's ``run``), its model and tool calls lost, or refused it (an Agents SDK
    agent: "not an Agent") without a word of the adapter that traces it whole."""
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        instrument(_pydantic_ai_agent(), **otel_telemetry.providers())
        instrument(_pydantic_ai_agent(), **otel_telemetry.providers())
    told = [r.getMessage() for r in caplog.records if "pydantic" in r.getMessage()]
    assert len(told) == 1, told
    assert "pydantic_ai_events(" in told[0] and "docs/adapters.md" in told[0], told[0]

    import agents

    with pytest.raises(TypeError) as raised:
        instrument(agents.Agent(name="a"))
    assert "openai_agents_events(" in str(raised.value), raised.value
    assert "docs/adapters.md" in str(raised.value), raised.value


@pytest.mark.parametrize(
    ("variable", "library"),
    [("TRACELOOP_TRACE_CONTENT", "OpenLLMetry"), ("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "ADK")],
)
async def test_content_switched_on_by_another_librarys_variable_is_told_ours(
    variable: str,
    library: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Content capture switched on by another library's variable (OpenLLMetry's, Google ADK's)
    left agent-otel's off without a word: the newcomer looked for prompts on our spans and
    found none. Told once, naming our variable, the option and the page; content stays off."""
    _only_otel_variables(monkeypatch, {})
    monkeypatch.setenv(variable, "true")
    monkeypatch.setattr(_hints, "_variables_read", [])  # as in a process's first wrapper
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="secret"), LLMCallEnd()])
    for _ in range(2):
        await agent.invoke([USER], stream_wrapper=otel_telemetry.wrapper())
    told = [r.getMessage() for r in caplog.records if variable in r.getMessage()]
    assert len(told) == 1, told
    assert library in told[0], told[0]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in told[0], told[0]
    assert "capture_content=" in told[0], told[0]
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told[0])
    assert len(pages) == 1 and "capture_content" in _section(pages[0]), told[0]
    for span in otel_telemetry.spans():  # still private: the variable is not ours
        assert "secret" not in str(dict(span.attributes or {})), span.name


async def test_a_span_asked_for_before_the_stream_was_consumed_says_so() -> None:
    """A test that wraps the stream and asserts before it iterates it: the run starts at the
    stream's first pull, so nothing is recorded yet; it was told only that its runs went to
    other providers (give them ``telemetry.wrapper(...)``), which it had already done."""
    telemetry = InMemoryTelemetry()
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="a"), LLMCallEnd()])
    stream = telemetry.wrapper(agent_name="a")(agent.stream([USER]))
    with pytest.raises(AssertionError) as raised:
        telemetry.span("invoke_agent a")
    told = str(raised.value)
    assert "first pull" in told and "consumed" in told, told
    assert "telemetry.wrapper(" in told, told  # the other cause, still named
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told)
    assert len(pages) == 1 and "consumed" in _section(pages[0]), told
    assert [e async for e in stream]  # consumed: now it is there
    assert telemetry.span("invoke_agent a").name == "invoke_agent a"
    telemetry.shutdown()


class _Progress:  # an agent's own progress object, no event of the contracts
    stage = "planning"


async def test_objects_that_are_no_events_are_told_once_per_kind_and_passed_through(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent yielding its text as plain strings, dicts or objects of its own: each passed
    through and counted (``unknown_event``), but the run's span stayed bare without a word of
    why. Each kind is told once, naming it, the events to yield instead and the page."""
    caplog.set_level(logging.WARNING, logger="agent_otel")
    script: list[Any] = [
        "Hello",
        {"type": "text", "text": "there"},
        _Progress(),
        "again",
        {"text": "!"},
    ]
    for _ in range(2):  # a second run tells nothing new
        assert await run_script(otel_telemetry, script, agent_name="a") == script
    told = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    assert len(told) == 3, told  # a str, a dict, a _Progress: once each
    for kind, message in zip(("a str", "a dict", "a _Progress"), told, strict=True):
        assert f"yielded {kind}," in message, message
        assert "TextDelta(" in message and "unknown_event" in message, message
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told[0])
    assert len(pages) == 2 and "unknown objects" in _section(pages[-1]), told[0]
    assert "adapter" in _section(pages[0]), told[0]
    agent = otel_telemetry.by_name()["invoke_agent a"][0]
    assert (agent.attributes or {})["agent_otel.anomalies"] == 5


@pytest.mark.parametrize(
    ("variable", "value", "fixed"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "otel-collector:4318", "http://otel-collector:4318"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "otel-collector", "http://otel-collector:4318"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "otel-collector:4317", "http://otel-collector:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector.internal:4318/v1/traces",
         "http://collector.internal:4318/v1/traces"),
        ("endpoint", "otel-collector:4318", "http://otel-collector:4318"),
    ],
)  # fmt: skip
def test_an_endpoint_without_a_scheme_is_told_as_itself_with_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    variable: str, value: str, fixed: str,
) -> None:  # fmt: skip
    """``otel-collector:4318`` (the compose service a newcomer points at) was told to be "a URL
    such as http://localhost:4318": another host, so the fix copied sent every span to a
    port nothing listens on. The fix named is the endpoint given, with its scheme (and an
    OTLP/HTTP Collector's port where it named none, or OTLP/gRPC's)."""
    caplog.set_level(logging.WARNING, logger="agent_otel")
    if variable == "endpoint":
        with pytest.raises(ValueError) as raised:
            configure(set_global=False, endpoint=value)
        told = str(raised.value)
    else:
        monkeypatch.setenv(variable, value)
        configure(
            set_global=False, console_stream=io.StringIO(), shutdown_timeout_millis=0
        ).shutdown()
        [told] = [r.getMessage() for r in caplog.records if variable in r.getMessage()]
    assert repr(fixed) in told or f"such as {fixed}" in told, told
    assert "localhost" not in told, told
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told)
    assert pages and "scheme" in _section(pages[0]), told


async def test_a_kits_wrapper_an_agent_never_called_is_named_when_nothing_was_recorded() -> None:
    """An agent whose ``invoke`` ignores ``stream_wrapper=`` runs untraced: the test then asked
    for a span and was told to iterate its stream and to give the runs the telemetry's
    providers, both done. The telemetry made a wrapper and no run came of it: that is said,
    with the ways to trace such an agent."""

    class Ignoring:
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            yield TextDelta(text="hi")

        async def invoke(self, messages: Any, stream_wrapper: Any = None) -> str:
            return "".join([e.text async for e in self.stream(messages)])

    with InMemoryTelemetry() as telemetry:
        assert await Ignoring().invoke([USER], stream_wrapper=telemetry.wrapper()) == "hi"
        with pytest.raises(AssertionError) as raised:
            telemetry.span("invoke_agent")
        told = str(raised.value)
        assert "never called" in told and "stream_wrapper" in told, told
        assert "telemetry.wrapper(...)(agent.stream(" in told and "instrument(" in told, told


async def test_a_span_asked_for_after_a_break_says_the_stream_is_open_until_closed() -> None:
    """A consumer that left its ``async for`` with ``break`` and asked for the run's span was
    told to read it "after the async for", which it had done: the stream stays open, and its
    run with it, until it is closed. The message names the way to close it."""
    with InMemoryTelemetry() as telemetry:
        agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="a"), LLMCallEnd()])
        stream = telemetry.wrapper(agent_name="a")(agent.stream([USER]))
        async for _ in stream:
            break
        with pytest.raises(AssertionError) as raised:
            telemetry.span("invoke_agent a")
        assert "break" in str(raised.value) and "aclose()" in str(raised.value), raised.value
        await stream.aclose()  # what it says to do
        assert telemetry.span("invoke_agent a").name == "invoke_agent a"


@pytest.mark.parametrize("call", ["otel_wrapper", "instrument"])
def test_a_tracer_provider_with_no_span_processor_is_told_once_where_it_is_given(
    caplog: pytest.LogCaptureFixture, call: str
) -> None:
    """``configure()`` in the script, then a run given ``tracer_provider=TracerProvider()`` (the
    SDK's first line, its exporter never added): the provider given wins, as documented, and
    its runs' spans went nowhere, no terminal view, no export, without a word. Told once where
    it is given, with the three ways out; a provider with a processor is told nothing."""
    caplog.set_level(logging.WARNING, logger="agent_otel")
    for _ in range(2):
        bare = TracerProvider()
        if call == "otel_wrapper":
            otel_wrapper(tracer_provider=bare)
        else:
            instrument(ScriptedAgent([]), tracer_provider=bare)
    with InMemoryTelemetry() as telemetry:  # processors of its own: nothing to tell
        otel_wrapper(**telemetry.providers())
    told = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    told = [m for m in told if "dropped without a run" not in m]  # instrument()'s own tell
    assert len(told) == 1, told
    assert f"{call}(tracer_provider=...)" in told[0] and "no span processor" in told[0], told
    assert "add_span_processor(" in told[0] and "telemetry.tracer_provider" in told[0], told
    pages = re.findall(r"docs/[\w-]+\.md(?:#[\w-]+)?", told[0])
    assert len(pages) == 1 and "tracer_provider" in _section(pages[0]), told[0]


class _TracedByClass(ScriptedAgent):
    pass


class _TracedByBase(_TracedByClass):
    pass


def test_uninstrument_of_what_its_instrumented_class_traces_is_told_the_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``@instrument`` on a class, then ``uninstrument(agent)`` on an instance (or on a
    subclass): it returned what it was given and every run stayed traced, without a word,
    as the class traces every instance and subclass. Told once per class, naming the class
    whose ``uninstrument()`` undoes it; what was never instrumented is told nothing."""
    caplog.set_level(logging.WARNING, logger="agent_otel")
    instrument(_TracedByClass)
    try:
        agent = _TracedByClass([])
        for _ in range(2):
            assert uninstrument(agent) is agent
        assert uninstrument(_TracedByBase) is _TracedByBase
        assert is_instrumented(agent) and is_instrumented(_TracedByBase)  # as documented
        plain = ScriptedAgent([])
        assert uninstrument(plain) is plain  # never instrumented: nothing to tell
    finally:
        uninstrument(_TracedByClass)
    told = [r.getMessage() for r in caplog.records if r.name == "agent_otel"]
    assert len(told) == 2, told  # an instance once, the subclass once
    for message in told:
        assert "uninstrument(_TracedByClass)" in message and "still traced" in message, message
        assert "docs/instrument.md" in message, message
    assert not is_instrumented(agent)

"""Credentials leave the process by no other channel than the spans, metrics and log events
(``test_scrubbing_signals.py``): not in agent-otel's own log lines (warnings quoting a
setting's value, the traceback of an internal error), not in the log lines of the SDK
exporters ``configure()`` builds, not in the run ids a carrier sends to another process."""

from __future__ import annotations

import base64
import io
import json
import logging
import socket
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import LLMCallEnd, LLMCallStart, StepBoundary, TextDelta
from agent_otel import (
    Scrubber,
    _guard,
    configure,
    extract_context,
    inject_context,
    run_identity,
)
from agent_otel import _attributes as A
from agent_otel.exporting import _env
from agent_otel.exporting._exporters import quiet_retries
from agent_otel.identity._identity import MAX_ID_LENGTH, identity_of
from agent_otel.testing import InMemoryTelemetry, run_script
from test_scrubbing import assert_scrubbed, context_fakes, fakes

F = fakes()
CF = context_fakes()
SECRETS = {**{name: (secret, secret) for name, secret in F.items()}, **CF}
"""Every detector's credential: name -> (a text holding it, the credential)."""
PASSWORD = CF["url_credentials"][1].split(":", 1)[1]


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Everything the captured records say, as a handler prints them (traceback included)."""
    return caplog.text + "\n".join(r.getMessage() for r in caplog.records)


@pytest.fixture
def told_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_guard, "_told", set())


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": f"https://ops:{PASSWORD}@collector:4317"}, "port"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": f"https://ops:{PASSWORD}@c:4318/v1/traces"}, "base"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"c:4318/?api_key={PASSWORD}"}, "malformed"),
    ],
    ids=["other_port", "signal_path", "no_scheme"],
)
@pytest.mark.usefixtures("told_afresh")
def test_a_warning_quoting_an_endpoint_never_quotes_its_credentials(
    env: dict[str, str], why: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        _env.endpoint_configured("traces", {**env, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
        _env.base_endpoint("traces", "http/protobuf", env)
    assert caplog.records, "the setting's problem is told"
    assert_scrubbed(logged(caplog), PASSWORD)
    assert "collector" in caplog.text or "c:4318" in caplog.text  # the rest still says where


def test_a_malformed_endpoint_argument_raises_without_its_credentials() -> None:
    with pytest.raises(ValueError, match="not an OTLP endpoint") as raised:
        _env.check_endpoint_argument(f"ftp://ops:{PASSWORD}@collector", None)
    assert_scrubbed(str(raised.value), PASSWORD)


class Boom(RuntimeError):
    pass


@pytest.mark.internal_errors
def test_an_internal_errors_traceback_is_logged_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    """The exception being handled is another library's: its text may hold a credential
    (a processor's connection string). The traceback is printed without it; the exception
    object itself is not touched."""
    error = Boom(f"cannot reach {CF['url_credentials'][0]} with {F['openai_api_key']}")
    with caplog.at_level(logging.DEBUG, logger="agent_otel"):
        for _ in range(2):  # loudly once, then at DEBUG: both scrubbed
            try:
                raise error
            except Boom:
                _guard.report("test channel site")
    assert len(caplog.records) == 2
    text = logged(caplog)
    assert "Boom" in text and "test_scrubbing_channels.py" in text  # still a traceback
    assert_scrubbed(text, CF["url_credentials"][1])
    assert_scrubbed(text, F["openai_api_key"])
    assert F["openai_api_key"] in str(error)  # the object is the agent's, unchanged


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(SECRETS)),
    before=st.text(st.characters(codec="utf-8"), max_size=20).map(lambda s: s + " "),
    after=st.text(st.characters(codec="utf-8"), max_size=20).map(lambda s: " " + s),
    as_exception=st.booleans(),
)
def test_any_credential_in_any_agent_otel_log_line_is_replaced(
    name: str, before: str, after: str, as_exception: bool
) -> None:
    """Whatever a line quotes (an argument, a value's repr, an exception's text), every
    handler gets it scrubbed: here a handler of our own, at DEBUG, on the root logger."""
    text, secret = SECRETS[name]
    lines: list[str] = []
    handler = logging.StreamHandler()
    handler.emit = lambda record: lines.append(handler.format(record))  # type: ignore[method-assign]
    root, logger = logging.getLogger(), logging.getLogger("agent_otel")
    root.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        if as_exception:
            try:
                raise Boom(before + text + after)
            except Boom:
                logger.debug("agent-otel: the value %r failed", "x", exc_info=True)
        else:
            logger.debug("agent-otel: %s=%r is not valid", "SETTING", before + text + after)
    finally:
        root.removeHandler(handler)
        logger.setLevel(level)
    [line] = lines
    assert_scrubbed(line, secret)


def test_the_sdk_exporters_log_lines_are_scrubbed_once_configure_builds_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An OTLP exporter's failure quotes its endpoint and the response's body, where a proxy
    may echo the request's Authorization header."""
    bearer = CF["authorization_header"][1]
    quiet_retries()
    with caplog.at_level(logging.ERROR, logger="opentelemetry.exporter.otlp.common.http"):
        logging.getLogger("opentelemetry.exporter.otlp.common.http").error(
            "Failed to export %s batch code: %s, reason: %s",
            "span",
            401,
            f'{{"error": "bad token", "echo": "Authorization: Bearer {bearer}"}}',
        )
        logging.getLogger("opentelemetry.exporter.otlp.proto.grpc.exporter").error(
            "Failed to export %s to %s, error code: %s",
            "traces",
            f"https://ops:{PASSWORD}@c:4317",
            16,
        )
    assert len(caplog.records) == 2
    assert_scrubbed(logged(caplog), bearer)
    assert_scrubbed(logged(caplog), PASSWORD)
    assert "401" in caplog.text


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
def test_a_grpc_exporters_failure_never_quotes_its_endpoints_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK's gRPC exporter quotes its target as gRPC takes it, the endpoint without its
    scheme (``ops:PASSWORD@host:port``): no ``://`` before the userinfo, which is where a
    URL's credentials were looked for, so its failure lines quoted the password. Here the
    real exporter ``configure()`` builds, failing as it does with a ``user:password`` in
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (gRPC takes none, so it cannot resolve the host)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="opentelemetry.exporter.otlp.proto.grpc"):
        handle = configure(
            "grpc-userinfo",
            endpoint=f"http://ops:{PASSWORD}@127.0.0.1:{port}",
            protocol="grpc",
            timeout=1,
            set_global=False,
            console=False,
        )
        try:
            handle.tracer_provider.get_tracer("t").start_span("s").end()
            handle.force_flush(3000)
        finally:
            handle.shutdown()
    text = logged(caplog)
    assert f"127.0.0.1:{port}" in text, text  # the failure is told, and where it went
    assert_scrubbed(text, PASSWORD)


@pytest.mark.parametrize(
    "text",
    [
        "failed to export to ops:{pw}@collector.internal:4317, retrying",
        "errors resolving ops:{pw}@127.0.0.1:9: lookup failed",
        "target ops:{pw}@[::1]:4317 unavailable",
        "connecting to deploy:{pw}@collector",
    ],
)
def test_a_user_and_password_before_a_host_are_found_without_a_scheme(text: str) -> None:
    out = Scrubber().text(text.format(pw=PASSWORD))
    assert out == text.format(pw=f"[REDACTED:url_credentials len={len(PASSWORD)}]")
    assert Scrubber().text(out) == out


@pytest.mark.parametrize(
    "text",
    ["From:bob@example.com", "see user:alice@example.com for access", "at 12:30@home"],
)
def test_a_name_before_a_host_without_a_scheme_is_kept(text: str) -> None:
    assert Scrubber().text(text) == text


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(SECRETS)),
    field=st.sampled_from(["session_id", "user_id", "conversation_id"]),
    before=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8),
)
def test_a_carrier_sends_the_run_ids_scrubbed_as_the_spans_record_them(
    name: str, field: str, before: str
) -> None:
    """``inject_context()`` puts the run ids in the carrier's baggage, which leaves the process
    (a queue message, a workflow's stored history): a session id that is a token goes as its
    marker, and the other side reads back the id the local spans show. An id longer than its
    bound is scrubbed before it is cut: a private key block or a long JWT leaves no piece."""
    text, secret = SECRETS[name]
    value = f"{before.strip()}-{text}"
    with run_identity(**{field: value}):
        carrier = inject_context()
    sent = urllib.parse.unquote_plus(carrier["baggage"])
    assert_scrubbed(sent, secret)
    received = identity_of(extract_context(carrier))
    assert received is not None
    assert getattr(received, field) == Scrubber().text(value)[:MAX_ID_LENGTH]


def test_a_malformed_headers_variable_is_told_without_its_credentials(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OTEL_EXPORTER_OTLP_HEADERS`` written as a request shows it (``name: value``, not
    ``name=value``): the SDK exporter that configure() builds warns, quoting the entry."""
    bearer = CF["authorization_header"][1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization: Bearer {bearer}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    with caplog.at_level(logging.WARNING):
        handle = configure("channels", set_global=False)
    handle.shutdown()
    assert any("Header format invalid" in r.getMessage() for r in caplog.records)
    assert_scrubbed(logged(caplog), bearer)


async def test_a_long_jwt_session_id_leaves_no_claims_on_any_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An application that uses its user's access token as the session id: a JWT longer than
    the ids' bound was cut before its signature, and the cut token (header and claims: the
    user's email, the scopes) went on every span, which no detector recognised any more."""
    claims = {"email": "bob@example.com", "scope": "admin " * 30, "exp": 1_900_000_000}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    token = f"{F['jwt'].split('.')[0]}.{payload}.{F['jwt'].split('.')[2]}"
    assert len(token) > MAX_ID_LENGTH
    with run_identity(session_id=token):
        await run_script(otel_telemetry, [StepBoundary(index=0)])
    for span in otel_telemetry.spans():
        recorded = str((span.attributes or {})[A.SESSION_ID])
        assert recorded.startswith("[REDACTED:jwt len=")
        assert payload[:12] not in recorded and token[:12] not in recorded


async def test_configures_scrubber_is_the_default_of_the_runs_and_evaluations_made_after_it() -> (
    None
):
    """``configure(scrub=Scrubber(patterns=...))`` is where a user says what their company's
    own identifiers look like; the runs of every wrapper made after it that chose no scrubber of
    its own exported them whole, as did an evaluation's explanation. Like ``semconv=``, it is
    now the default of those; a wrapper's own ``scrub=`` still wins, and a call that gives
    none changes nothing."""
    from agent_otel import record_evaluation

    employee = "EMP-123456"
    hidden = "[REDACTED:employee_id len=10]"
    events = [LLMCallStart(model="m"), TextDelta(text=f"for {employee}"), LLMCallEnd()]
    custom = Scrubber(patterns={"employee_id": r"EMP-\d{6}"})
    for given_scrub, expected in ((None, employee), (custom, hidden)):
        if given_scrub is not None:
            configure("svc", set_global=False, scrub=given_scrub).shutdown()
        configure("svc", set_global=False).shutdown()  # none given: the choice stays
        for own, wanted in ((None, expected), (True, employee)):
            telemetry = InMemoryTelemetry()
            options = {} if own is None else {"scrub": own}
            await run_script(telemetry, events, capture_content=True, **options)
            chat = telemetry.span("chat m")
            output = str((chat.attributes or {})[A.OUTPUT_MESSAGES])
            assert wanted in output
            assert wanted == employee or employee not in output
            record_evaluation(
                "relevance",
                explanation=f"answered {employee}",
                span_context=chat.context,
                logger_provider=telemetry.logger_provider,
                meter_provider=telemetry.meter_provider,
                **options,
            )
            explained = str(
                (telemetry.logs()[-1].log_record.attributes or {})[A.EVALUATION_EXPLANATION]
            )
            assert explained == f"answered {wanted}"
            telemetry.shutdown()


def test_configures_scrubber_reaches_the_run_ids_it_stamps_on_other_spans() -> None:
    """The ids the identity processor ``configure()`` adds put on other instrumentations'
    spans passed the default scrubber whatever ``configure(scrub=...)`` gave: an id holding
    what a user's own pattern hides went out on every HTTP client span of the run."""
    from agent_otel import RunIdentityProcessor

    employee = "EMP-123456"
    custom = Scrubber(patterns={"employee_id": r"EMP-\d{6}"})
    telemetry = configure(
        "svc", console=True, console_stream=io.StringIO(), set_global=False, scrub=custom
    )
    own = InMemoryTelemetry(processors=[RunIdentityProcessor(scrub=custom)])
    for provider in (telemetry.tracer_provider, own.tracer_provider):
        with run_identity(user_id=f"u-{employee}", session_id=f"s-{F['github_token']}"):
            span = provider.get_tracer("opentelemetry.instrumentation.httpx").start_span("POST")
            span.end()
        attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
        assert attributes["user.id"] == "u-[REDACTED:employee_id len=10]"
        assert attributes["session.id"] == f"s-[REDACTED:github_token len={len(F['github_token'])}]"
    telemetry.shutdown()
    own.shutdown()

"""Scrubbing on every signal agent-otel exports, in every capture mode: span names,
attributes, status descriptions, span events (``exception.message`` and
``exception.stacktrace`` of an exception chain included), content log events, evaluation
events, metric attributes, spans of ``instrument()``-ed agents; counted by detector in
``agent_otel.scrubbed``, never by value. ``scrub=False`` shows the same run leaking, which is
what makes these tests able to fail."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics.export import NumberDataPoint

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    PhaseMarker,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import ContentCapture, Scrubber, instrument, record_evaluation
from agent_otel import _attributes as A
from agent_otel.testing import FakeClock, InMemoryTelemetry, run_script
from test_scrubbing import context_fakes, encoded_cases, fakes

F = fakes()
CF = context_fakes()
C = {name: secret for name, (_, secret) in CF.items()}
DB_URL = CF["url_credentials"][0]
BEARER = CF["authorization_header"][0]
API_KEY = "k-" + F["gitlab_token"][6:]  # a value no format detector knows: found by its key
PROSE, PROSE_KEY = CF["key_value/prose_uuid"]  # a key no prefix names, after a label in prose
DSN, DSN_PASSWORD = CF["url_credentials/path_dsn"]  # letters alone, no scheme


class Leak(RuntimeError):
    pass


def script() -> list[Any]:
    """A run that carries a credential on every path a string takes to an export."""
    arguments = json.dumps({"city": "Paris", "api_key": API_KEY, "db": DB_URL})
    return [
        PhaseMarker(name=f"plan with {F['slack_token']}"),
        LLMCallStart(
            model="gpt-4o",
            provider="openai",
            call_id="llm_1",
            messages=[
                Message(role="system", content=f"Use key {F['openai_api_key']}."),
                Message(role="user", content=f"My AWS key is {F['aws_access_key_id']}"),
            ],
        ),
        TextDelta(f"Calling with {BEARER} now"),
        ToolCall(
            id="call_1",
            function=FunctionCall(f"fetch_{F['github_token']}", arguments),
        ),
        LLMCallEnd(call_id="llm_1", finish_reason="tool_calls"),
        Usage(input_tokens=20, output_tokens=5),
        ToolResult(
            tool_call_id="call_1",
            content={"password": "hunter2-and-more", "session": F["jwt"], "pem": F["private_key"]},
        ),
        Error(
            message=f"retrying {DB_URL} with {F['anthropic_api_key']}; {PROSE}; {DSN}",
            error_type="Transient",
        ),
        StepBoundary(index=0),
    ]


def chained_error() -> Leak:
    try:
        try:
            raise KeyError(F["stripe_key"])
        except KeyError as inner:
            raise ValueError(f"bad token {F['google_api_key']}") from inner
    except ValueError as middle:
        error = Leak(f"could not connect to {DB_URL} as {BEARER}")
        error.__cause__ = middle
        return error


SECRETS = {
    "openai": F["openai_api_key"],
    "anthropic": F["anthropic_api_key"],
    "aws": F["aws_access_key_id"],
    "github": F["github_token"],
    "slack": F["slack_token"],
    "stripe": F["stripe_key"],
    "google": F["google_api_key"],
    "jwt": F["jwt"],
    "pem body": F["private_key"].splitlines()[3],
    "db password": "Tr0ub4dor&3x",
    "bearer": C["authorization_header"],
    "api_key field": API_KEY,
    "password field": "hunter2-and-more",
    "prose key": PROSE_KEY,
    "dsn password": DSN_PASSWORD,
}
# Found only when content is captured: the rest also leak through names, errors and events.
CONTENT_ONLY = {"openai", "aws", "jwt", "pem body", "api_key field", "password field"}
# With content on log events only, tool arguments and results are not exported at all.
# (The arguments are also in the chat call's output message, on its event.)
TOOL_CONTENT = {"jwt", "pem body", "password field"}


def exported(telemetry: InMemoryTelemetry) -> str:
    """Every string of every span, span event, status, log record and metric point."""
    parts: list[Any] = []
    for span in telemetry.spans():
        parts += [span.name, dict(span.attributes or {}), span.status.description]
        for event in span.events:
            parts += [event.name, dict(event.attributes or {})]
    for log in telemetry.logs():
        parts += [log.log_record.event_name, log.log_record.body, log.log_record.attributes]
    data = telemetry.metric_reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                parts += [dict(p.attributes or {}) for p in metric.data.data_points]
    return json.dumps(parts, default=str, ensure_ascii=False)


def leaked(text: str) -> set[str]:
    """The secrets of which an 8-character piece is in ``text``."""
    out = set()
    for name, secret in SECRETS.items():
        if any(secret[i : i + 8] in text for i in range(len(secret) - 7)):
            out.add(name)
    return out


def scrubbed_counts(telemetry: InMemoryTelemetry) -> dict[str, int]:
    counts: dict[str, int] = {}
    data = telemetry.metric_reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == A.METRIC_SCRUBBED:
                    for point in metric.data.data_points:
                        assert isinstance(point, NumberDataPoint)
                        detector = str((point.attributes or {})[A.SCRUB_DETECTOR])
                        counts[detector] = int(point.value)
    return counts


async def run(telemetry: InMemoryTelemetry, events: Sequence[Any], **options: Any) -> None:
    """``events``, then the agent fails with a chained error full of secrets."""
    agent = ScriptedAgent(list(events), fail_at=len(events), error=chained_error())
    with pytest.raises(Leak):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(telemetry, stream, agent_name="ops", **options)


MODES = {
    "off": None,
    "span_only": ContentCapture(),
    "event_only": ContentCapture(spans=False, events=True),
    "span_and_event": ContentCapture(spans=True, events=True),
}


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_nothing_of_any_secret_is_exported_in_any_capture_mode(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    await run(otel_telemetry, script(), capture_content=MODES[mode])
    text = exported(otel_telemetry)
    assert leaked(text) == set()
    assert "[REDACTED:url_credentials len=" in text  # the error's text is kept around it
    assert "retrying postgres://[REDACTED:url_credentials" in text
    counts = scrubbed_counts(otel_telemetry)
    assert counts.get("url_credentials", 0) >= 2 and counts.get("stripe_key", 0) >= 1
    assert not leaked(json.dumps(counts))  # counted by detector, never by value


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_the_same_run_with_scrubbing_off_leaks_what_the_default_stops(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    await run(otel_telemetry, script(), capture_content=MODES[mode], scrub=False)
    text = exported(otel_telemetry)
    expected = {
        "off": set(SECRETS) - CONTENT_ONLY,
        "event_only": set(SECRETS) - TOOL_CONTENT,
    }.get(mode, set(SECRETS))
    assert leaked(text) == expected
    assert scrubbed_counts(otel_telemetry) == {}


async def test_exception_chain_message_and_stacktrace_are_scrubbed_text_kept(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run(otel_telemetry, script())
    agent = next(s for s in otel_telemetry.spans() if s.name == "invoke_agent ops")
    (exception,) = [e for e in agent.events if e.name == A.EVENT_EXCEPTION]
    attributes = dict(exception.attributes or {})
    message = str(attributes[A.EXCEPTION_MESSAGE])
    assert message.startswith("could not connect to postgres://[REDACTED:url_credentials len=")
    trace = str(attributes[A.EXCEPTION_STACKTRACE])
    assert "KeyError" in trace and "ValueError: bad token [REDACTED:google_api_key len=39]" in trace
    assert leaked(trace) == set()


async def test_span_names_and_status_descriptions_are_scrubbed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run(otel_telemetry, script())
    names = [span.name for span in otel_telemetry.spans()]
    github = len(F["github_token"])
    assert f"execute_tool fetch_[REDACTED:github_token len={github}]" in names
    descriptions = [s.status.description or "" for s in otel_telemetry.spans()]
    assert any(d.startswith("retrying postgres://[REDACTED:") for d in descriptions)


async def test_content_keeps_its_shape_and_the_redact_hook_sees_the_scrubbed_value(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    seen: list[Any] = []

    def redact(kind: str, value: Any) -> Any:
        seen.append(value)
        return value

    await run(otel_telemetry, script(), capture_content=ContentCapture(redact=redact))
    assert leaked(json.dumps(seen)) == set()  # the default ran first
    tool = next(s for s in otel_telemetry.spans() if s.name.startswith("execute_tool"))
    arguments = json.loads(str((tool.attributes or {})[A.TOOL_CALL_ARGUMENTS]))
    assert arguments["city"] == "Paris"
    assert arguments["api_key"].startswith("[REDACTED:key_name len=")
    result = json.loads(str((tool.attributes or {})[A.TOOL_CALL_RESULT]))
    assert set(result) == {"password", "session", "pem"}
    assert result["session"] == f"[REDACTED:jwt len={len(F['jwt'])}]"


async def test_a_users_pattern_and_callback_apply_to_spans_too(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    scrubber = Scrubber(patterns={"employee": r"EMP-\d{6}"}, callback=str.upper)
    events = [PhaseMarker(name="for EMP-123456"), StepBoundary(index=0)]
    agent = ScriptedAgent(events)
    wrap = otel_telemetry.wrapper(scrub=scrubber)
    async for _ in wrap(agent.stream([])):
        pass
    text = exported(otel_telemetry)
    assert "FOR [REDACTED:EMPLOYEE LEN=10]" in text and "EMP-123456" not in text


async def test_instrumented_agents_are_scrubbed_and_can_turn_it_off() -> None:
    for scrub, expect in ((True, set()), (False, set(SECRETS) - CONTENT_ONLY)):
        telemetry = InMemoryTelemetry()
        events = script()
        agent = ScriptedAgent(events, fail_at=len(events), error=chained_error())
        traced = instrument(
            agent,
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            scrub=scrub,
        )
        with pytest.raises(Leak):
            async for _ in traced.stream([Message(role="user", content="go")]):
                pass
        assert telemetry.spans()
        assert leaked(exported(telemetry)) == expect


def test_evaluation_explanations_are_scrubbed_and_counted(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    for scrub in (True, False):
        record_evaluation(
            "groundedness",
            score=0.2,
            label=f"leaked {F['openai_api_key']}",
            explanation=f"the answer quoted {F['private_key']} and {DB_URL}",
            logger_provider=otel_telemetry.logger_provider,
            meter_provider=otel_telemetry.meter_provider,
            scrub=scrub,
        )
    scrubbed, plain = otel_telemetry.logs()
    assert leaked(json.dumps(dict(scrubbed.log_record.attributes or {}))) == set()
    explanation = str((scrubbed.log_record.attributes or {})[A.EVALUATION_EXPLANATION])
    assert explanation.startswith("the answer quoted [REDACTED:private_key len=")
    plain_text = json.dumps(dict(plain.log_record.attributes or {}))
    assert leaked(plain_text) == {"openai", "db password", "pem body"}
    counts = scrubbed_counts(otel_telemetry)
    assert counts == {"openai_api_key": 1, "private_key": 1, "url_credentials": 1}


SHOWN = {
    "bearer": BEARER,
    "db password": DB_URL,
    "pem body": F["private_key"],
    "prose key": PROSE,
    "dsn password": DSN,
}


@settings(max_examples=25, deadline=None)
@given(
    st.text(max_size=40),
    st.sampled_from(sorted(set(SECRETS) - {"api_key field", "password field"})),
    st.text(max_size=40),
    st.sampled_from(sorted(MODES)),
)
def test_a_secret_anywhere_in_an_error_or_a_message_never_reaches_an_export(
    before: str, name: str, after: str, mode: str
) -> None:
    import asyncio

    secret = SECRETS[name]  # in free text, each of these is known by its format or label
    text = before + SHOWN.get(name, secret) + after
    events = [
        LLMCallStart(model="m", call_id="c", messages=[Message(role="user", content=text)]),
        TextDelta(text),
        LLMCallEnd(call_id="c"),
        Error(message=text),
        StepBoundary(index=0),
    ]
    telemetry = InMemoryTelemetry()
    agent = ScriptedAgent(events, fail_at=len(events), error=RuntimeError(text))
    wrap = telemetry.wrapper(capture_content=MODES[mode])

    async def main() -> None:
        with pytest.raises(RuntimeError):
            async for _ in wrap(agent.stream([])):
                pass

    with FakeClock().installed():  # real durations' digits could hold a piece of the secret
        asyncio.run(main())
    out = exported(telemetry)
    surrounding = before + after
    for i in range(len(secret) - 3):
        piece = secret[i : i + 4]
        assert piece not in out or piece in surrounding or piece in NOT_SECRET, piece


# Pieces any export holds anyway: attribute names, markers, JSON and the run's own words.
NOT_SECRET = (
    json.dumps([A.__dict__[k] for k in dir(A) if k.isupper() and isinstance(A.__dict__[k], str)])
    + "[REDACTED: len=] key_name private_key url_credentials authorization_header"
    + " ".join(sorted(set(fakes()) | set(context_fakes())))
    + "RuntimeError Traceback (most recent call last) File line in raise"
    # and the traceback's file paths: a checkout in /work/wt-api-misuse holds "t-ap"
    + " ".join(sys.path)
    + __file__
)


def test_ids_the_identity_processor_stamps_on_foreign_spans_are_scrubbed() -> None:
    from agent_otel import RunIdentityProcessor, run_identity

    telemetry = InMemoryTelemetry(processors=[RunIdentityProcessor()])
    with run_identity(user_id=f"svc {F['github_token']}", session_id="sess-1"):
        tracer = telemetry.tracer_provider.get_tracer("opentelemetry.instrumentation.httpx")
        tracer.start_span("POST").end()
    post = telemetry.span("POST")
    user = str((post.attributes or {})["user.id"])
    assert user == f"svc [REDACTED:github_token len={len(F['github_token'])}]"
    assert (post.attributes or {})["session.id"] == "sess-1"
    telemetry.shutdown()


class Names(list):  # type: ignore[type-arg]
    """A list subclass, as a framework's typed list of names."""


@pytest.mark.parametrize("scrub", [True, False])
async def test_secrets_in_map_and_subclass_attribute_values_are_scrubbed(
    otel_telemetry: InMemoryTelemetry, scrub: bool
) -> None:
    """The attribute model takes maps, nested lists and subclasses of the built-ins (the SDK
    exports them as they are): every string in them is scrubbed and every value under a
    secret key replaced, as in content (``scrub=False`` leaks them: the test can fail)."""
    attributes = {
        "deploy": {"db": {"url": DB_URL, "password": "hunter2-hunter2"}, "tags": ["a", 1]},
        "owners": Names([F["github_token"]]),
        "nested": [[{"token": API_KEY}]],
    }
    await run_script(
        otel_telemetry, [TextDelta(text="x")], agent_name="ops", attributes=attributes, scrub=scrub
    )
    (root,) = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    text = json.dumps(dict(root.attributes or {}), default=str)
    if not scrub:
        assert {"db password", "github", "api_key field"} <= leaked(text) and "hunter2" in text
        return
    assert leaked(text) == set() and "hunter2" not in text
    deploy = (root.attributes or {})["deploy"]
    assert isinstance(deploy, dict)
    assert deploy["tags"] == ("a", 1)  # the shape kept
    assert str(deploy["db"]["password"]).startswith("[REDACTED:key_name")


@pytest.mark.parametrize("scrub", [True, False])
async def test_a_run_attribute_named_as_a_secret_is_redacted_as_the_resources_are(
    otel_telemetry: InMemoryTelemetry, scrub: bool
) -> None:
    """``attributes={"db_password": ...}`` (a config's fields passed as they are) exported its
    value: a value under a secret key name was replaced nested in a map, and in the resource,
    but not under the option's own keys. It is now (``scrub=False`` leaks: the test can fail);
    the key stays, other values stay as they are."""
    attributes = {"db_password": "hunter2-hunter2", "API_KEY": 12345, "region": "eu-west-1"}
    await run_script(
        otel_telemetry, [TextDelta(text="x")], agent_name="ops", attributes=attributes, scrub=scrub
    )
    root = otel_telemetry.span("invoke_agent ops").attributes or {}
    if not scrub:
        assert root["db_password"] == "hunter2-hunter2" and root["API_KEY"] == 12345
        return
    assert root["db_password"] == "[REDACTED:key_name len=15]"
    assert root["API_KEY"] == "[REDACTED:key_name len=5]"
    assert root["region"] == "eu-west-1"
    assert attributes["db_password"] == "hunter2-hunter2"  # the caller's mapping untouched


def long_text(secret: str, shift: int) -> str:
    """A long error text full of one secret, each cut point (a status description's, an
    exception message's, a stack trace's head and tail) falling inside some occurrence."""
    return "x" * shift + "failed: " + (secret + " ") * (20_000 // len(secret))


def _failing_events(text: str, error_type: str) -> list[Any]:
    """A run telling ``text`` as an error and as a tool's error result: each door a long
    error text goes through."""
    return [
        Error(message=text, error_type=error_type),
        StepBoundary(index=0),
        ToolCall(id="t", function=FunctionCall("fetch", "{}")),
        ToolResult(tool_call_id="t", content=text, is_error=True),
        StepBoundary(index=1),
    ]


@pytest.mark.parametrize("shift", [0, 5, 11])
@pytest.mark.parametrize("name", ["openai", "db password", "jwt", "bearer"])
async def test_a_cut_never_leaves_a_piece_of_a_secret_it_split(
    otel_telemetry: InMemoryTelemetry, name: str, shift: int
) -> None:
    """Status descriptions, ``exception.message`` and ``exception.stacktrace`` are cut to their
    bounds: scrubbing comes first, so the cut cannot keep a prefix no detector knows."""
    text = long_text(SHOWN.get(name, SECRETS[name]), shift)
    events = _failing_events(text, "Transient")
    inner = RuntimeError(text)
    error = Leak(text)
    error.__cause__ = inner
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(Leak):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(otel_telemetry, stream, capture_content=True)
    out = exported(otel_telemetry)
    assert leaked(out) == set()
    assert out.count("[REDACTED:") > 20  # the text around the secrets is kept


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=0, max_value=260),
    st.sampled_from(["openai", "jwt", "db password", "bearer", "pem body", "anthropic"]),
    st.booleans(),
)
def test_content_cut_to_its_budget_never_keeps_a_piece_of_a_secret(
    offset: int, name: str, streamed: bool
) -> None:
    """Messages, streamed text, tool arguments and results cut to ``max_bytes``: each string
    is scrubbed before it is cut, wherever the cut falls in the secret."""
    import asyncio

    text = "x" * offset + SHOWN.get(name, SECRETS[name]) + " and more"
    events: list[Any] = [
        LLMCallStart(model="m", call_id="c", messages=[Message(role="system", content=text)]),
        TextDelta(text) if streamed else TextDelta("ok"),
        LLMCallEnd(call_id="c"),
        ToolCall(id="t", function=FunctionCall("f", json.dumps({"q": text}))),
        ToolResult(tool_call_id="t", content=text.encode() if streamed else text),
        StepBoundary(index=0),
    ]
    telemetry = InMemoryTelemetry()
    capture = ContentCapture(max_bytes=200, events=True)

    async def main() -> None:
        stream = ScriptedAgent(events).stream([Message(role="user", content=text)])
        await run_script(telemetry, stream, capture_content=capture)

    asyncio.run(main())
    out = exported(telemetry)
    assert "x" * min(offset, 20) in out  # the content was captured, cut or not
    assert leaked(out) == set()


async def test_a_tools_structured_error_is_scrubbed_by_key_before_it_becomes_text(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool's error result as a dict becomes the status description and the exception
    event's message as JSON text: values under secret keys are replaced first, nested ones
    too, as in captured content."""
    error = {"error": "login refused", "credentials": {"user": "ops-bot", "pin": 918273}}
    events = [
        ToolCall(id="t", function=FunctionCall("login", "{}")),
        ToolResult(tool_call_id="t", content=error, is_error=True),
        StepBoundary(index=0),
    ]
    await run_script(otel_telemetry, events, capture_content=True)
    tool = otel_telemetry.span("execute_tool login")
    (event,) = [e for e in tool.events if e.name == A.EVENT_EXCEPTION]
    for text in (tool.status.description or "", str((event.attributes or {})[A.EXCEPTION_MESSAGE])):
        assert "login refused" in text
        assert "ops-bot" not in text and "918273" not in text
        assert "[REDACTED:key_name len=7]" in text


@pytest.mark.parametrize(
    "case", ["redirect_uri", "form_separator", "escaped_json_in_json", "base64_pretty_json"]
)
async def test_an_encoded_secret_in_an_error_never_reaches_an_export(
    otel_telemetry: InMemoryTelemetry, case: str
) -> None:
    """A provider's error quoting a request (a URL in a query, a form body, a JSON body in a
    JSON string) carries its credential encoded: every exported copy of it is redacted."""
    text, secret, detector = encoded_cases()[case]
    events = _failing_events(text, "BadRequest")
    agent = ScriptedAgent(events, fail_at=len(events), error=Leak(text))
    with pytest.raises(Leak):
        stream = agent.stream([Message(role="user", content=text)])
        await run_script(otel_telemetry, stream, capture_content=True)
    out = exported(otel_telemetry)
    assert secret not in out and json.dumps(secret)[1:-1] not in out
    assert f"[REDACTED:{detector} len={len(secret)}]" in out
    assert scrubbed_counts(otel_telemetry).get(detector, 0) >= 3


async def test_headers_as_name_value_pairs_lose_their_secret_values(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An HTTP tool's result holding its request's headers as pairs (``httpx``'s raw headers,
    an ASGI scope's), and the agent's error quoting them: every secret header's value is
    redacted in the tool span and in the error, the other headers kept."""
    token, api_key = C["authorization_header"], API_KEY
    headers = [("Authorization", f"Bearer {token}"), ("X-Api-Key", api_key), ("Accept", "json")]
    raw = [(b"authorization", f"Bearer {token}".encode()), (b"x-api-key", api_key.encode())]
    error = Leak(f"upstream refused the request, scope={{'headers': {raw!r}}}")
    events = [
        ToolCall(id="t", function=FunctionCall("fetch", "{}")),
        ToolResult(tool_call_id="t", content={"status": 401, "headers": headers}),
        StepBoundary(index=0),
    ]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(Leak):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(otel_telemetry, stream, capture_content=True)
    out = exported(otel_telemetry)
    assert token not in out and api_key not in out
    assert '["Accept","json"]' in out.replace('\\"', '"')  # the rest of the headers kept
    assert "(b'x-api-key', b'[REDACTED:key_value len=" in out


@pytest.mark.parametrize("mode", ["off", "span_only"])
async def test_a_shell_tools_command_line_credentials_never_reach_an_export(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    """A coding agent's shell tool runs a command with a password on its command line; the
    command fails, and ``CalledProcessError`` quotes it as an argv list: the flag's value and
    curl's ``user:password`` are redacted in the arguments, the tool's error and the run's."""
    password, token = C["key_value"], C["authorization_header"]
    argv = ["curl", "-u", f"deploy:{password}", "https://ci.internal/api"]
    command = f"mysqldump --password {token} prod | gzip"
    error = subprocess.CalledProcessError(22, argv)
    events = [
        ToolCall(id="t", function=FunctionCall("shell", json.dumps({"command": command}))),
        ToolResult(tool_call_id="t", content=str(error), is_error=True),
        StepBoundary(index=0),
    ]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(subprocess.CalledProcessError):
        stream = agent.stream([Message(role="user", content=f"run {command}")])
        await run_script(otel_telemetry, stream, capture_content=MODES[mode])
    out = exported(otel_telemetry)
    assert password not in out and token not in out
    assert "'-u', '[REDACTED:command_line len=" in out  # the rest of the command is kept


@pytest.mark.parametrize("mode", ["span_only", "span_and_event"])
async def test_a_command_given_as_an_argv_list_loses_its_credentials_everywhere(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    """A shell tool's arguments and result hold the command as an argv list (a subprocess
    tool's ``{"argv": [...]}``): the value after ``--password``, ``-p`` or ``-u`` is the next
    item, which was scrubbed alone, not beside its flag. The chat span's output messages
    carry the arguments as that structure, and exported the password whole."""
    password, token = C["key_value"], C["authorization_header"]
    argv = ["mysqldump", "--password", token, "prod"]
    ran = ["curl", "-u", f"deploy:{password}", "https://ci.internal/api"]
    events = [
        LLMCallStart(model="m", provider="openai"),
        ToolCall(id="t", function=FunctionCall("shell", {"argv": argv})),
        LLMCallEnd(),
        ToolResult(tool_call_id="t", content={"ran": ran, "code": 22}),
        StepBoundary(index=0),
    ]
    await run_script(otel_telemetry, events, capture_content=MODES[mode])
    out = exported(otel_telemetry)
    assert password not in out and token not in out
    assert '"--password","[REDACTED:command_line len=' in out.replace('\\"', '"')


async def test_a_pydantic_validation_error_loses_the_secret_input_it_quotes(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool's arguments validated by pydantic (as agent frameworks do) fail, and the
    ``ValidationError`` quotes each bad field's input under its location's line: the values
    of secret fields are redacted in the tool's error and the run's, the others kept."""
    import pydantic

    class Login(pydantic.BaseModel):
        user: int
        db_password: str = pydantic.Field(min_length=16)

    password = "hunter2-" + API_KEY[2:8]
    try:
        Login.model_validate({"user": "ops-bot", "db_password": password})
    except pydantic.ValidationError as caught:
        error = caught
    events = [
        ToolCall(id="t", function=FunctionCall("login", "{}")),
        ToolResult(tool_call_id="t", content=str(error), is_error=True),
        StepBoundary(index=0),
    ]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(pydantic.ValidationError):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(otel_telemetry, stream)
    out = exported(otel_telemetry)
    assert password not in out
    assert "input_value='ops-bot'" in out  # a field that names no secret is kept
    assert "input_value='[REDACTED:key_value len=" in out


@pytest.mark.parametrize("mode", ["off", "span_only"])
@pytest.mark.parametrize("name", ["key", "auth", "code", "sid"])
async def test_an_http_errors_url_loses_the_credential_of_its_query(
    otel_telemetry: InMemoryTelemetry, mode: str, name: str
) -> None:
    """httpx's ``HTTPStatusError`` quotes the URL it failed on: an API key in ``?key=``
    (Google's APIs and many others), ``?auth=``, an OAuth callback's ``?code=`` went out whole
    in the exception event and the status, as the tool's error result did."""
    import httpx

    secret = C["authorization_header"][:24]
    request = httpx.Request("GET", f"https://api.example.com/v1/geo?q=Paris&{name}={secret}&n=1")
    try:
        httpx.Response(403, request=request).raise_for_status()
    except httpx.HTTPStatusError as caught:
        error = caught
    events = [
        ToolCall(id="t", function=FunctionCall("geo", "{}")),
        ToolResult(tool_call_id="t", content=str(error), is_error=True),
        StepBoundary(index=0),
    ]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(httpx.HTTPStatusError):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(otel_telemetry, stream, capture_content=MODES[mode])
    out = exported(otel_telemetry)
    assert secret not in out and secret[:8] not in out
    assert f"geo?q=Paris&{name}=[REDACTED:key_value len=24]&n=1" in out  # the rest kept


@pytest.mark.parametrize("mode", ["off", "span_only"])
@pytest.mark.parametrize(
    "argv",
    [
        ["htpasswd", "-bc", "/etc/nginx/.htpasswd", "ops", "{}"],
        ["redis-cli", "-h", "cache", "--pass", "{}", "PING"],
        ["mongosh", "-u", "admin", "-p", "{}", "mongodb://db"],
        ["aws", "configure", "set", "aws_secret_access_key", "{}"],
    ],
    ids=["htpasswd", "redis-cli", "mongosh", "aws"],
)
async def test_a_failed_commands_password_argument_never_reaches_an_export(
    otel_telemetry: InMemoryTelemetry, mode: str, argv: list[str]
) -> None:
    """``CalledProcessError`` quotes the argv of the command that failed: a password given
    as htpasswd's last argument, redis-cli's ``--pass``, mongosh's ``-p`` or by ``aws
    configure set`` went out whole in the exception event, the status and the tool's error."""
    password = C["key_value"]
    error = subprocess.CalledProcessError(1, [a.format(password) for a in argv])
    events = [
        ToolCall(id="t", function=FunctionCall("shell", "{}")),
        ToolResult(tool_call_id="t", content=str(error), is_error=True),
        StepBoundary(index=0),
    ]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(subprocess.CalledProcessError):
        stream = agent.stream([Message(role="user", content="go")])
        await run_script(otel_telemetry, stream, capture_content=MODES[mode])
    out = exported(otel_telemetry)
    assert password not in out and password[:6] not in out
    assert f"'{argv[0]}', '{argv[1]}'" in out  # the command stays readable


@pytest.mark.parametrize("mode", ["off", "span_and_event"])
async def test_a_url_password_with_symbols_or_a_token_as_its_user_never_reaches_an_export(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    """A driver's error quotes its connection URL: a generated password holding ``@`` and
    ``#`` (cut at its first ``@`` before, the rest exported as the host) and a git remote with
    a token as its user are redacted in the exception event, the status and the log event."""
    password, token = "P@ss:w0rd#1x", C["authorization_header"][:40]
    error = ConnectionError(
        f"mongodb+srv://ops:{password}@cluster0.example.net/db failed; "
        f"fatal: could not read from https://{token}@github.com/o/r.git"
    )
    events = [Error(message=str(error)), StepBoundary(index=0)]
    agent = ScriptedAgent(events, fail_at=len(events), error=error)
    with pytest.raises(ConnectionError):
        stream = agent.stream([Message(role="user", content=str(error))])
        await run_script(otel_telemetry, stream, capture_content=MODES[mode])
    out = exported(otel_telemetry)
    assert "w0rd" not in out and token[:8] not in out
    assert "@cluster0.example.net/db failed" in out and "@github.com/o/r.git" in out


async def test_an_sdks_status_error_quoting_an_unprefixed_key_never_reaches_an_export(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An OpenAI-compatible server that refuses a key quotes it in its error, and the OpenAI
    SDK puts that text in its ``AuthenticationError`` (``Incorrect API key provided: ...``):
    a key with no prefix (a UUID) went out whole in the status and the exception event."""
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    refusal = f"Incorrect API key provided: {PROSE_KEY}. You can find your API key in settings."

    def server(request: Any) -> Any:
        return httpx.Response(401, json={"error": {"message": refusal, "code": "invalid_api_key"}})

    client = openai.AsyncOpenAI(
        api_key=PROSE_KEY,
        base_url="http://compatible.invalid/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
        max_retries=0,
    )
    try:
        with pytest.raises(openai.AuthenticationError) as refused:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        await client.close()
    agent = ScriptedAgent([], fail_at=0, error=refused.value)
    with pytest.raises(openai.AuthenticationError):
        await run_script(otel_telemetry, agent.stream([]), capture_content=True)
    out = exported(otel_telemetry)
    assert leaked(out) == set()
    assert f"Incorrect API key provided: [REDACTED:key_value len={len(PROSE_KEY)}]" in out

"""configure() -> our Collector -> Jaeger, all real, on loopback: what a person sees in Jaeger.

The Collector runs ``exporters/collector/config.yaml`` and Jaeger ``exporters/jaeger/config.yaml``
(the compose stack's files, unchanged but for addresses); the Collector's Tempo exporter goes to
a second Jaeger standing in for Tempo (no Tempo build is reachable here), so the fan-out is
checked too. The scenario run of ``genai_scenario`` (two steps, two chat calls, two tools, the
second failing), content capture on, is read back through Jaeger's query API: the exact tree,
the gen_ai attributes, the content, the failing tool marked as an error with its reason, and
Jaeger's search finds the run by service and by operation. Then the same through zero-code
``opentelemetry-instrument`` as the README writes it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zero_code
from _support import content_heavy_runs, only_loopback, poll
from _tier import Jaeger, Tier, attrs, compose_tier, counter, find_traces, trace_spans
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_zero_code import APP, readme_env

from agent_otel import _attributes as A
from agent_otel import record_evaluation
from agent_otel.exporting._configure import configure
from agent_otel.recording.content._capture import ENV_CAPTURE
from conftest import _missing
from genai_scenario import (
    AGENT,
    ANSWER,
    CONVERSATION,
    MODEL,
    PROVIDER,
    QUESTION,
    RESPONSE_MODEL,
    TOOLS,
    USAGE,
    run_agent_otel,
)

pytestmark = pytest.mark.heavy
SERVICE = "agent-otel-jaeger-tier"


def hex_id(raw: str) -> str:
    """A span or trace id of Jaeger's OTLP JSON as lower-case hex ('' for none)."""
    if not raw:
        return ""
    try:
        int(raw, 16)
    except ValueError:
        return base64.b64decode(raw).hex()
    return raw.lower()


def kind(span: dict[str, Any]) -> str:
    raw = span.get("kind", 0)
    names = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
    return names.get(raw, "") if isinstance(raw, int) else str(raw).removeprefix("SPAN_KIND_")


def tree(spans: list[dict[str, Any]]) -> set[tuple[str, str | None]]:
    """(name, parent name) of every span."""
    names = {hex_id(s["spanId"]): s["name"] for s in spans}
    return {(s["name"], names.get(hex_id(s.get("parentSpanId", "")))) for s in spans}


ROOT, STEP0, STEP1 = (
    f"{A.OP_INVOKE_AGENT} {AGENT}",
    f"{A.STEP_SPAN_NAME} 0",
    f"{A.STEP_SPAN_NAME} 1",
)
CHAT = f"{A.OP_CHAT} {MODEL}"
TOOL_OK, TOOL_FAILED = (f"{A.OP_EXECUTE_TOOL} {name}" for _, name, _, _, _ in TOOLS)
# DESIGN.md's tree for this run, written out by hand: the agent > its steps > the calls in each.
EXPECTED_TREE = {
    (ROOT, None),
    (STEP0, ROOT),
    (STEP1, ROOT),
    (CHAT, STEP0),
    (TOOL_OK, STEP0),
    (TOOL_FAILED, STEP0),
    (CHAT, STEP1),
}


def run_scenario(tier: Tier) -> tuple[str, list[Any]]:
    """The scenario through configure() to the Collector; its trace id and the local copy."""
    local = InMemorySpanExporter()
    tel = configure(
        SERVICE,
        endpoint=tier.otlp_http,
        console=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(local)],
    )
    try:
        asyncio.run(run_agent_otel(tel.tracer_provider, tel.meter_provider))
        assert tel.force_flush(30_000)
    finally:
        assert tel.shutdown(30_000)
    spans = list(local.get_finished_spans())
    [trace_id] = {format(s.context.trace_id, "032x") for s in spans if s.context is not None}
    assert not any(tel.spans_lost.values()), tel.spans_lost
    return trace_id, spans


def whole_trace(backend: Jaeger, trace_id: str, count: int) -> list[dict[str, Any]]:
    return poll(
        lambda: (s := trace_spans(backend, trace_id)) and len(s) >= count and s,
        timeout=60,
        what=f"{count} spans of {trace_id} in Jaeger",
    )


@pytest.fixture(scope="module")
def tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    """One running tier for the module: every test reads back its own trace ids."""
    with compose_tier(tmp_path_factory.mktemp("tier")) as running_tier:
        yield running_tier


def test_jaeger_shows_the_exact_run_with_its_attributes_and_content(
    tier: Tier, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_AND_EVENT")
    trace_id, local = run_scenario(tier)
    assert len(local) == len(EXPECTED_TREE)

    assert tier.tempo is not None
    for backend in (tier.jaeger, tier.tempo):  # the Collector fans out to both stores
        spans = whole_trace(backend, trace_id, len(local))
        assert len(spans) == len(local), "a span arrived twice or one is extra"
        assert tree(spans) == EXPECTED_TREE
        got = {(hex_id(s["spanId"]), hex_id(s.get("parentSpanId", ""))) for s in spans}
        want = {
            (
                format(s.context.span_id, "016x"),
                format(s.parent.span_id, "016x") if s.parent else "",
            )
            for s in local
        }
        assert got == want  # the very ids we recorded, one trace, nothing re-parented
        assert {s["service"] for s in spans} == {SERVICE}

    spans = trace_spans(tier.jaeger, trace_id)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    root = attrs(by_name[ROOT][0]["attributes"])
    assert root[A.OPERATION_NAME] == A.OP_INVOKE_AGENT
    assert root[A.AGENT_NAME] == AGENT
    assert root[A.CONVERSATION_ID] == CONVERSATION
    assert kind(by_name[ROOT][0]) == "INTERNAL"
    # what a trace list shows of the run (capture on): its name, its question and answer
    assert root[A.MLFLOW_TRACE_NAME] == ROOT
    assert root[A.OI_INPUT_VALUE] == QUESTION
    assert root[A.OI_OUTPUT_VALUE] == ANSWER
    chats = sorted(
        (attrs(s["attributes"]) for s in by_name[CHAT]), key=lambda a: a[A.USAGE_INPUT_TOKENS]
    )
    for chat, (tokens_in, tokens_out), span in zip(chats, USAGE, by_name[CHAT]):
        assert chat[A.OPERATION_NAME] == A.OP_CHAT
        assert chat[A.PROVIDER_NAME] == PROVIDER
        assert chat[A.REQUEST_MODEL] == MODEL
        assert chat[A.RESPONSE_MODEL] == RESPONSE_MODEL
        assert (chat[A.USAGE_INPUT_TOKENS], chat[A.USAGE_OUTPUT_TOKENS]) == (tokens_in, tokens_out)
        assert kind(span) == "CLIENT"
    # content, captured because the variable says so: the question in, the answer out
    first_input = json.loads(chats[0][A.INPUT_MESSAGES])
    assert first_input[0]["parts"][0]["content"] == QUESTION
    last_output = json.loads(chats[1][A.OUTPUT_MESSAGES])
    assert last_output[0]["parts"][0]["content"] == ANSWER
    ok_tool = attrs(by_name[TOOL_OK][0]["attributes"])
    assert ok_tool[A.TOOL_NAME] == TOOLS[0][1]
    assert json.loads(ok_tool[A.TOOL_CALL_ARGUMENTS]) == TOOLS[0][2]
    assert json.loads(ok_tool[A.TOOL_CALL_RESULT]) == TOOLS[0][3]

    # Jaeger's search, as the UI's Service and Operation boxes use it
    for operation in (None, ROOT, CHAT, TOOL_FAILED):
        found = poll(
            lambda op=operation: trace_id in find_traces(tier.jaeger, SERVICE, op),
            timeout=30,
            what=f"Jaeger's search for {SERVICE}/{operation}",
        )
        assert found
    assert find_traces(tier.jaeger, SERVICE, f"{A.OP_EXECUTE_TOOL} no-such-tool") == {}


def test_jaeger_shows_what_a_person_looks_for_in_a_failed_run(
    tier: Tier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The browser check through Jaeger's API: the run's root name, the tree, the failure."""
    monkeypatch.delenv(ENV_CAPTURE, raising=False)  # content off: the default
    trace_id, local = run_scenario(tier)
    spans = whole_trace(tier.jaeger, trace_id, len(local))
    roots = [s for s in spans if not hex_id(s.get("parentSpanId", ""))]
    assert [r["name"] for r in roots] == [ROOT]  # the name the trace list shows
    assert tree(spans) == EXPECTED_TREE
    [failed] = [s for s in spans if s["name"] == TOOL_FAILED]
    status = failed.get("status", {})
    assert status.get("code") in (2, "STATUS_CODE_ERROR"), status  # Jaeger's red error mark
    assert attrs(failed["attributes"])[A.ERROR_TYPE]
    healthy = [s for s in spans if s["name"] != TOOL_FAILED]
    assert all(s.get("status", {}).get("code") in (None, 0, 1, "STATUS_CODE_UNSET",
                                                   "STATUS_CODE_OK") for s in healthy)  # fmt: skip
    # content stays off unless opted in, all the way to the store
    for span in spans:
        keys = set(attrs(span["attributes"]))
        assert not keys & {A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.TOOL_CALL_RESULT}, span["name"]


def test_jaeger_shows_the_failing_tools_reason(tier: Tier) -> None:
    """The reason a person reads next to Jaeger's error mark, without the tool's content."""
    trace_id, local = run_scenario(tier)
    spans = whole_trace(tier.jaeger, trace_id, len(local))
    [failed] = [s for s in spans if s["name"] == TOOL_FAILED]
    status = failed.get("status", {})
    assert status.get("code") in (2, "STATUS_CODE_ERROR"), status
    # content is off by default, so the reason is the error type, never the tool's own text
    assert status.get("message") == attrs(failed["attributes"])[A.ERROR_TYPE], status
    assert TOOLS[1][3] not in json.dumps(failed)


def test_the_collector_takes_the_log_events_configure_sends_it(
    tier: Tier, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Content events and evaluation results, OTLP logs by default, are taken, not refused.

    ``configure(endpoint=...)`` sends logs wherever it sends spans; a Collector without a logs
    pipeline answers them 404 and the app's exporter logs an error at every batch.
    """
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_AND_EVENT")
    caplog.set_level(logging.WARNING, logger="opentelemetry")
    tel = configure(SERVICE, endpoint=tier.otlp_http, console=False, set_global=False)
    try:
        asyncio.run(run_agent_otel(tel.tracer_provider, tel.meter_provider, tel.logger_provider))
        record_evaluation(
            "relevance",
            score=0.9,
            response_id="resp_2",
            logger_provider=tel.logger_provider,
            meter_provider=tel.meter_provider,
        )
        assert tel.force_flush(30_000)
    finally:
        assert tel.shutdown(30_000)
    failed = [r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry")]
    assert failed == []
    # two chat calls' content events and the evaluation, counted by the Collector as taken
    accepted = poll(
        lambda: (
            (n := counter(tier.metrics_port, "otelcol_receiver_accepted_log_records")) >= 3 and n
        ),
        timeout=30,
        what="the Collector counting the run's log records",
    )
    assert accepted >= 3
    assert counter(tier.metrics_port, "otelcol_receiver_refused_log_records") == 0


def test_a_burst_of_content_heavy_runs_reaches_jaeger_whole(
    tier: Tier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs with content capture, more megabytes than one gRPC message holds, all arrive.

    The agent's exporter keeps each request under 3 MiB, but a Collector that re-batches by
    span count alone sends Jaeger one request over its 4 MiB limit, refused whole and dropped
    (not retried): every run of the burst lost, while the app counts nothing lost.
    """
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_ONLY")
    runs = 80  # about 5 MB of spans, well within the Collector's 2 s batch timeout
    service = f"{SERVICE}-bulky"
    tel = configure(service, endpoint=tier.otlp_http, console=False, set_global=False)
    try:
        per_run = content_heavy_runs(tel.tracer_provider, tel.meter_provider, runs, fail=False)
        assert tel.force_flush(30_000)
    finally:
        assert tel.shutdown(30_000)
    assert not any(tel.spans_lost.values()), tel.spans_lost
    assert tier.tempo is not None
    for backend in (tier.jaeger, tier.tempo):
        found = poll(
            lambda b=backend: (t := find_traces(b, service)) and len(t) >= runs and t,
            timeout=30,
            what=f"the {runs} content-heavy runs in Jaeger",
        )
        assert len(found) == runs
        assert all(len(spans) == per_run for spans in found.values())  # each run whole


def test_zero_code_run_reaches_jaeger_through_the_collector(tmp_path: Path) -> None:
    """The README's zero-code lines, unchanged, against the compose Collector on :4317."""
    if not zero_code.STAMP.exists():
        _missing(f"{zero_code.VENV.name} (python tests/integration/zero_code.py)")
    isolated, interfaces = only_loopback()
    if not isolated:  # the distro's default port must be ours alone
        pytest.skip(f"needs a private network namespace with only lo (found {interfaces})")
    (tmp_path / "app.py").write_text(APP)
    with compose_tier(tmp_path / "tier", grpc_port=4317) as tier:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + "\n".join(zero_code.run_lines())],
            cwd=tmp_path,
            env=readme_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # no export error on the way
        found = poll(
            lambda: (t := find_traces(tier.jaeger, "my-app")) and len(t) >= 2 and t,
            timeout=60,
            what="the app's two runs in Jaeger",
        )
    names = sorted(s["name"] for spans in found.values() for s in spans)
    assert names == ["chat gpt-4o-mini", "invoke_agent Chat", "invoke_agent researcher", "step 0"]
    [chat_trace] = [spans for spans in found.values() if len(spans) == 3]
    assert tree(chat_trace) == {
        ("invoke_agent Chat", None),
        ("step 0", "invoke_agent Chat"),
        ("chat gpt-4o-mini", "step 0"),
    }
    [chat] = [s for s in chat_trace if s["name"] == "chat gpt-4o-mini"]
    assert attrs(chat["attributes"])[A.USAGE_INPUT_TOKENS] == 5

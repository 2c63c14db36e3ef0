"""Pending spans in Jaeger, Phoenix and MLflow: a run still open is visible through their APIs, and
once it ends nothing is doubled but the span count docs/live.md explains.

The agent opens a run, a step and a chat call, then waits; while it waits, the test reads the
backend for the pending snapshots of the three open spans. Then the run ends, and the backend
holds the three final spans, the token totals once, and the snapshots (each marked
``agent_otel.pending``) under the spans they describe.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from _support import MLFLOW_EXPERIMENT, MLflow, Phoenix, poll, spans_in_phoenix, trace_in_mlflow
from _tier import Jaeger, attrs, find_traces, get_json, jaeger, trace_spans
from opentelemetry import trace
from test_backends import _attributes, _mlflow

from agent_contract.protocol import LLMCallEnd, LLMCallStart, StepBoundary, TextDelta, Usage
from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure

pytestmark = pytest.mark.heavy

PENDING = "agent_otel.pending"
FINAL = {"invoke_agent live", "step 0", "chat gpt-4o"}
TOKENS = (120, 30)


def _run(
    monkeypatch: pytest.MonkeyPatch,
    url: str | None,
    while_open: Callable[[str], Any],
    headers: str | None = None,
    grpc: str | None = None,
) -> tuple[str, Any]:
    """One run with pending spans every second; ``while_open(trace_id)`` runs while it is
    open (the run waits for it); the trace id and what it returned."""
    if url is not None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{url}/v1/traces")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    if headers:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", headers)
    where: dict[str, Any] = {} if grpc is None else {"endpoint": grpc, "protocol": "grpc"}
    tel = configure("agent-otel-pending", timeout=60, console=False, set_global=False, **where)
    seen: dict[str, Any] = {}

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="gpt-4o", provider="openai", call_id="c1", messages=[])
        yield TextDelta(text="thinking")
        trace_id = format(trace.get_current_span().get_span_context().trace_id, "032x")
        seen["trace_id"] = trace_id
        seen["open"] = await asyncio.to_thread(while_open, trace_id)
        yield LLMCallEnd(call_id="c1", finish_reason="stop")
        yield Usage(input_tokens=TOKENS[0], output_tokens=TOKENS[1])
        yield StepBoundary()

    async def consume() -> None:
        wrap = otel_wrapper(tracer_provider=tel.tracer_provider, agent_name="live", pending_spans=1)
        async for _ in wrap(agent()):
            pass

    try:
        asyncio.run(consume())
        assert tel.force_flush(90_000)
    finally:
        assert tel.shutdown(90_000)
    return seen["trace_id"], seen["open"]


def _pending(attributes: dict[str, Any]) -> bool:
    return _mlflow(attributes.get("agent_otel.pending")) is True


def test_phoenix_shows_an_open_run_and_counts_its_tokens_once(
    phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch
) -> None:
    def open_run(trace_id: str) -> list[dict[str, Any]]:
        def shown() -> list[dict[str, Any]] | None:
            spans = spans_in_phoenix(phoenix, trace_id)
            names = {s["name"] for s in spans if _pending(_attributes(s))}
            return spans if names >= FINAL else None

        return poll(shown, timeout=60, what="the open run's pending spans in Phoenix")

    trace_id, while_open = _run(monkeypatch, phoenix.http_url, open_run)
    assert all(_pending(_attributes(s)) for s in while_open)  # nothing final yet
    root = next(s for s in while_open if s["name"] == "invoke_agent live")
    assert _attributes(root)["openinference.span.kind"] == "AGENT"  # Phoenix's kind, as final

    def ended() -> list[dict[str, Any]] | None:
        spans = spans_in_phoenix(phoenix, trace_id)
        finals = [s for s in spans if not _pending(_attributes(s))]
        return spans if {s["name"] for s in finals} == FINAL and len(finals) == 3 else None

    spans = poll(ended, timeout=60, what="the ended run's final spans in Phoenix")
    ids = {s["span_id"] for s in spans if not _pending(_attributes(s))}
    for span in spans:
        if _pending(_attributes(span)):
            assert span["parent_span_id"] in ids  # every snapshot sits under its span
    prompt = [_attributes(s).get("llm.token_count.prompt") for s in spans]
    assert [p for p in prompt if p is not None] == [TOKENS[0]]  # counted once, on the call


def test_mlflow_shows_an_open_run_and_counts_its_tokens_once(
    mlflow: MLflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    def open_run(trace_id: str) -> dict[str, Any]:
        def shown() -> dict[str, Any] | None:
            found = trace_in_mlflow(mlflow, trace_id)
            if not found:
                return None
            names = {s["name"] for s in found["spans"] if _pending(_attributes(s))}
            return found if names >= FINAL else None

        return poll(shown, timeout=90, what="the open run's pending spans in MLflow")

    headers = f"x-mlflow-experiment-id={MLFLOW_EXPERIMENT}"
    trace_id, while_open = _run(monkeypatch, mlflow.url, open_run, headers)
    assert all(_pending(_attributes(s)) for s in while_open["spans"])

    def ended() -> dict[str, Any] | None:
        found = trace_in_mlflow(mlflow, trace_id)
        if not found:
            return None
        finals = [s for s in found["spans"] if not _pending(_attributes(s))]
        return found if {s["name"] for s in finals} == FINAL and len(finals) == 3 else None

    final = poll(ended, timeout=90, what="the ended run's final spans in MLflow")
    usage = json.loads(final["trace_info"]["trace_metadata"]["mlflow.trace.tokenUsage"])
    assert (usage["input_tokens"], usage["output_tokens"]) == TOKENS  # counted once
    by_id = {s["span_id"]: s for s in final["spans"]}
    for span in final["spans"]:
        if _pending(_attributes(span)):
            assert by_id[span["parent_span_id"]]["name"] == span["name"]


def test_jaeger_finds_an_open_run_and_shows_one_tree_after_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with jaeger(tmp_path) as backend:

        def open_run(trace_id: str) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
            def shown() -> list[dict[str, Any]] | None:
                spans = trace_spans(backend, trace_id)
                names = {s["name"] for s in spans if attrs(s["attributes"]).get(PENDING)}
                return spans if names >= FINAL else None

            spans = poll(shown, timeout=60, what="the open run's pending spans in Jaeger")
            return (
                spans,
                find_traces(backend, "agent-otel-pending", "invoke_agent live"),
                _ui_warnings(backend, trace_id),
            )

        grpc = f"http://{backend.otlp_grpc}"
        trace_id, (while_open, search, warnings) = _run(monkeypatch, None, open_run, grpc=grpc)
        assert all(attrs(s["attributes"]).get(PENDING) for s in while_open)
        assert trace_id in search  # Jaeger's search finds the run while it is open
        # What docs/live.md promises of the UI: the spans whose parents have not arrived are
        # shown with Jaeger's warning naming the missing parent id (the root has none).
        missing = {s["parentSpanId"] for s in while_open if s.get("parentSpanId")}
        assert missing and missing.isdisjoint({s["spanId"] for s in while_open})
        assert set(warnings) == {s["name"] for s in while_open if s.get("parentSpanId")}
        for span in while_open:
            if span.get("parentSpanId"):
                shown = warnings[span["name"]]
                assert any(span["parentSpanId"] in w and "not in the trace" in w for w in shown)
                # the snapshot's zero length, which Jaeger notes as a "negative duration"
                assert any(w.startswith("Negative duration detected") for w in shown)

        def ended() -> list[dict[str, Any]] | None:
            spans = trace_spans(backend, trace_id)
            finals = [s for s in spans if not attrs(s["attributes"]).get(PENDING)]
            return spans if {s["name"] for s in finals} == FINAL and len(finals) == 3 else None

        spans = poll(ended, timeout=60, what="the ended run's final spans in Jaeger")
        ids = {s["spanId"] for s in spans}
        roots = [s for s in spans if not s.get("parentSpanId")]
        assert [r["name"] for r in roots] == ["invoke_agent live"]  # one tree again
        assert all(s["parentSpanId"] in ids for s in spans if s.get("parentSpanId"))


def _ui_warnings(backend: Jaeger, trace_id: str) -> dict[str, list[str]]:
    """Span name -> the warnings Jaeger's UI shows for it, from the API its trace page reads."""
    body = get_json(f"{backend.api}/api/traces/{trace_id}")
    return {
        span["operationName"]: list(span["warnings"])
        for found in body["data"]
        for span in found["spans"]
        if span.get("warnings")
    }

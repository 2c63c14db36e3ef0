"""What Arize Phoenix and MLflow show of an agent-otel trace, read back through their own APIs.

The scenario run of ``genai_scenario`` (a run, two chat calls, two tools, one failing) goes
over OTLP/HTTP, content capture on, to a real Phoenix and a real ``mlflow server``, both on
loopback inside the private network namespace. Each backend must give every span of ours a
kind (steps included), see the tokens and the model, and fill its trace list's previews
(Phoenix: Input/Output; MLflow: Request/Response) from the root ``invoke_agent`` span. Both
sets of names (the ``semconv`` option: v1.41.1's and the conventions' head's) read the same.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _support import MLFLOW_EXPERIMENT, MLflow, Phoenix, poll, spans_in_phoenix, trace_in_mlflow
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_otel.exporting._configure import configure
from agent_otel.recording.content._capture import ENV_CAPTURE
from genai_scenario import ANSWER, QUESTION, RESPONSE_MODEL, USAGE, run_agent_otel

pytestmark = pytest.mark.heavy

SPANS = 7  # invoke_agent, 2 steps, 2 chats, 2 tools
SEMCONV = ("v1.41", "head")
KIND_BY_OPERATION = {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}
MLFLOW_TYPE = {"invoke_agent": "AGENT", "chat": "CHAT_MODEL", "execute_tool": "TOOL"}


def _export(
    monkeypatch: pytest.MonkeyPatch, url: str, headers: str | None = None, semconv: str = "v1.41"
) -> str:
    """Run the scenario with content on spans, traces only to ``url``, under ``semconv``'s
    names; the trace id (hex)."""
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_ONLY")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{url}/v1/traces")
    if headers:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", headers)
    local = InMemorySpanExporter()
    # A backend's first ingest can take many seconds (MLflow loads its store): a long timeout.
    tel = configure(
        "agent-otel-backends",
        timeout=60,
        console=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(local)],
    )
    try:
        asyncio.run(run_agent_otel(tel.tracer_provider, tel.meter_provider, semconv=semconv))
        assert tel.force_flush(90_000)
    finally:
        assert tel.shutdown(90_000)
    spans = local.get_finished_spans()
    [trace_id] = {format(s.context.trace_id, "032x") for s in spans if s.context is not None}
    return trace_id


def _value(any_value: dict[str, Any]) -> Any:
    """A value of OTLP JSON (either field-name spelling) as Python."""
    for key in ("string_value", "stringValue", "bool_value", "boolValue", "double_value",
                "doubleValue"):  # fmt: skip
        if any_value.get(key) is not None:
            return any_value[key]
    for key in ("int_value", "intValue"):
        if any_value.get(key) is not None:
            return int(any_value[key])
    array = any_value.get("array_value") or any_value.get("arrayValue")
    if array is not None:
        return [_value(v) for v in array.get("values") or []]
    kvlist = any_value.get("kvlist_value") or any_value.get("kvlistValue")
    if kvlist is not None:
        return {kv["key"]: _value(kv["value"]) for kv in kvlist.get("values") or []}
    return None


def _mlflow(value: Any) -> Any:
    """An MLflow attribute value: MLflow stores its own as JSON text, OTLP ones as given."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {kv["key"]: _value(kv["value"]) for kv in span.get("attributes") or []}


@pytest.mark.parametrize("semconv", SEMCONV)
def test_phoenix_shows_every_span_with_a_kind_and_the_runs_input_and_output(
    phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch, semconv: str
) -> None:
    trace_id = _export(monkeypatch, phoenix.http_url, semconv=semconv)
    spans = poll(
        lambda: (s := spans_in_phoenix(phoenix, trace_id)) and len(s) >= SPANS and s,
        timeout=60,
        what=f"{SPANS} spans of trace {trace_id} in Phoenix",
    )
    by_name = {span["name"]: _attributes(span) for span in spans}
    for name, attributes in by_name.items():
        operation = attributes.get("gen_ai.operation.name")
        expected = KIND_BY_OPERATION[operation] if operation else "CHAIN"
        assert attributes.get("openinference.span.kind") == expected, name
    root = by_name["invoke_agent weather"]
    assert root["input.value"] == QUESTION  # the trace list's Input
    assert root["output.value"] == ANSWER  # and Output
    assert root["session.id"] == "conv-42"  # Phoenix's sessions, from gen_ai.conversation.id
    chats = [s for s in spans if s["name"] == "chat gpt-4o"]
    tokens = sorted(
        (_attributes(c)["llm.token_count.prompt"], _attributes(c)["llm.token_count.completion"])
        for c in chats
    )
    assert tokens == sorted(USAGE)
    assert {_attributes(c)["llm.model_name"] for c in chats} == {"gpt-4o"}
    assert {_attributes(c)["llm.provider"] for c in chats} == {"openai"}


@pytest.mark.parametrize("semconv", SEMCONV)
def test_mlflow_shows_every_span_with_a_type_and_the_runs_request_and_response(
    mlflow: MLflow, monkeypatch: pytest.MonkeyPatch, semconv: str
) -> None:
    trace_id = _export(
        monkeypatch, mlflow.url, f"x-mlflow-experiment-id={MLFLOW_EXPERIMENT}", semconv
    )
    trace = poll(
        lambda: (t := trace_in_mlflow(mlflow, trace_id)) and len(t["spans"]) >= SPANS and t,
        timeout=90,
        what=f"{SPANS} spans of trace {trace_id} in MLflow",
    )
    info = trace["trace_info"]
    assert json.loads(info["request_preview"]) == QUESTION  # the trace list's Request
    assert json.loads(info["response_preview"]) == ANSWER  # and Response
    metadata = info["trace_metadata"]
    usage = json.loads(metadata["mlflow.trace.tokenUsage"])
    assert (usage["input_tokens"], usage["output_tokens"]) == tuple(map(sum, zip(*USAGE)))
    assert json.loads(metadata["mlflow.trace.cost"])["total_cost"] > 0  # model known to MLflow
    assert metadata["mlflow.trace.session"] == "conv-42"
    by_name = {span["name"]: _attributes(span) for span in trace["spans"]}
    assert len(by_name) == SPANS - 2 + 1  # two chat spans share a name
    for name, attributes in by_name.items():
        operation = attributes.get("gen_ai.operation.name")
        expected = MLFLOW_TYPE[operation] if operation else "CHAIN"
        assert _mlflow(attributes["mlflow.spanType"]) == expected, name
    chats = [_attributes(s) for s in trace["spans"] if s["name"] == "chat gpt-4o"]
    assert {_mlflow(c["mlflow.llm.model"]) for c in chats} == {RESPONSE_MODEL}
    per_call = sorted(
        (u["input_tokens"], u["output_tokens"])
        for u in (_mlflow(c["mlflow.chat.tokenUsage"]) for c in chats)
    )
    assert per_call == sorted(USAGE)

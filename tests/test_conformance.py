"""Conformance with the GenAI semantic conventions, read from the vendored ``tests/semconv`` YAML.

A set of runs covering every kind of event and every ending is recorded; then every attribute
on every span (and every ``gen_ai.*`` / ``error.type`` span-event attribute) is checked
against the registry, every span against its span definition, every metric against
``metrics.yaml``. Nothing here is a hand-copied list of keys: emit something the registry
lacks and a test fails.

Each mode of the ``semconv`` option against its own registry: ``v1.41`` against v1.41.1
(``tests/semconv``), ``head`` against semantic-conventions-genai's head
(``tests/semconv/head``). The head's additions we write in both modes (``HEAD_ADDITIONS``)
are checked against the head's registry in the v1.41 mode too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import Histogram, HistogramDataPoint, Metric
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import semconv_registry as semconv
from agent_contract.agent.events import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    ReasoningStep,
    RunUsage,
    StructuredFinal,
    ToolCallStep,
    ToolResultStep,
)
from agent_contract.examples import ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    Message,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import _attributes
from agent_otel.testing import InMemoryTelemetry

EVENTS_TEXT = (semconv.SEMCONV_DIR / "events.yaml").read_text(encoding="utf-8")
MODES = (semconv.V1_41, semconv.HEAD)

# Which span definition of spans.yaml each gen_ai.operation.name we emit follows (v1.41.1).
SPAN_DEFINITIONS = semconv.SPAN_IDS[semconv.V1_41]
KINDS = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
# The development metrics (opentelemetry-util-genai names; not in metrics.yaml v1.41.1).
DEVELOPMENT_METRICS = {"gen_ai.invoke_agent.duration": "s", "gen_ai.execute_tool.duration": "s"}
DEVELOPMENT_METRIC_ATTRIBUTES = {
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
    "error.type",
}
CLIENT_METRICS = (
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.duration",
    "gen_ai.client.operation.time_to_first_chunk",
    "gen_ai.client.operation.time_per_output_chunk",
)
# What the head merged that v1.41.1 lacks and renames nothing: written in both modes.
HEAD_ADDITIONS = {"gen_ai.request.reasoning.level"}
HEAD_METRIC_ADDITIONS = {
    "gen_ai.invoke_agent.inference_calls": "{inference_call}",
    "gen_ai.invoke_agent.tool_calls": "{tool_call}",
}
# Every metric each mode records, with its unit.
MODE_METRICS = {
    semconv.V1_41: {
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.client.operation.duration": "s",
        "gen_ai.client.operation.time_to_first_chunk": "s",
        "gen_ai.client.operation.time_per_output_chunk": "s",
        **DEVELOPMENT_METRICS,
        **HEAD_METRIC_ADDITIONS,
    },
    semconv.HEAD: {
        "gen_ai.client.inference.operation.input_tokens": "{token}",
        "gen_ai.client.inference.operation.output_tokens": "{token}",
        "gen_ai.client.inference.duration": "s",
        "gen_ai.client.inference.time_to_first_chunk": "s",
        "gen_ai.client.inference.time_per_output_chunk": "s",
        "gen_ai.invocation.duration": "s",
        "gen_ai.execute_tool.duration": "s",
        **HEAD_METRIC_ADDITIONS,
    },
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    },
    {"type": "web_search_preview"},
]
# ExplicitBucketBoundaries of the GenAI metrics spec (the markdown; the YAML has none).
SPEC_BUCKETS = {
    "gen_ai.client.token.usage": [
        1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
        67108864,
    ],
    "gen_ai.client.operation.duration": [
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ],
}  # fmt: skip
OUR_PREFIX = "agent_otel."
# Not in the vendored GenAI registry, emitted on purpose, with the type each must have:
# session.id / user.id from the general registry; gen_ai.usage.cost.* from the open GenAI
# proposal (semantic-conventions-genai PR #443).
OUTSIDE_REGISTRY: dict[str, type] = {
    "session.id": str,
    "user.id": str,
    "gen_ai.usage.cost.amount": float,
    "gen_ai.usage.cost.currency": str,
    "gen_ai.usage.cost.source": str,
    # Evaluator provenance on gen_ai.evaluation.result (open proposal, PR #359).
    _attributes.EVALUATOR_ID: str,
    _attributes.EVALUATOR_VERSION: str,
    _attributes.EVALUATOR_TYPE: str,
    # What Phoenix and MLflow read to show a span (docs/backends.md says why): the step
    # spans' kind, the root's input/output previews.
    _attributes.OI_SPAN_KIND: str,
    _attributes.OI_INPUT_VALUE: str,
    _attributes.OI_OUTPUT_VALUE: str,
    _attributes.MLFLOW_TRACE_NAME: str,  # the root's name in MLflow's trace list
    # A tool on an MCP server: the MCP and JSON-RPC conventions' keys (all strings, vendored in
    # tests/semconv/mcp) on its execute_tool span (docs/mcp-and-agents.md).
    **dict.fromkeys(semconv.mcp_attributes(), str),
    # A remote agent's address on the invoke_agent CLIENT span (spans.yaml lists them; they
    # are the general registry's).
    _attributes.SERVER_ADDRESS: str,
    _attributes.SERVER_PORT: int,
    # Read, never written: the SDK's own export metrics tell a batch a collector refused by
    # it (docs/export.md); the general registry's key.
    _attributes.HTTP_RESPONSE_STATUS_CODE: int,
}
# Registered keys we set on a span type whose definition does not list them, on purpose:
# the agent span names the model that answered when an Agent reports it (RunUsage.model);
# invoke_agent lists only gen_ai.request.model. Anything new fails the test below.
# The run's conversation id goes on every span of the run (run identity, docs/production.md).
UNLISTED_ON_PURPOSE = {
    "invoke_agent: gen_ai.response.model",
    "execute_tool: gen_ai.conversation.id",
    # The head's pinned commit predates its PR #546, which restored gen_ai.agent.id on the
    # internal invoke_agent span; we keep writing it when given.
    "invoke_agent: gen_ai.agent.id",
}
IDS = {"llm_a", "llm_b", "llm_c", "call_1", "call_2", "call_3", "t_1", "int_1"}


# --- the scenarios -------------------------------------------------------------------------------


def multi_step() -> list[Any]:
    """Two steps, parallel tools (one failing), usage, a non-fatal error, request params."""
    return [
        JourneyMarker(name="support", journey_id="j-1"),
        PhaseMarker(name="plan"),
        LLMCallStart(
            model="gpt-4o",
            provider="openai",
            call_id="llm_a",
            params={
                "temperature": 0.3,
                "top_p": 1,
                "top_k": 40,
                "max_tokens": 256,
                "frequency_penalty": 0,
                "presence_penalty": 0.5,
                "seed": 7,
                "n": 2,
                "stream": True,
                "stop": ["END"],
                "reasoning_effort": "low",
                "tools": TOOLS,
            },
            messages=[
                Message(role="system", content="Be brief."),
                Message(role="user", content="Hi"),
            ],
        ),
        ReasoningDelta("thinking"),
        TextDelta("Let me check."),
        ToolCall(id="call_1", function=FunctionCall("search", '{"q": "a"}')),
        ToolCall(id="call_2", function=FunctionCall("fetch", '{"url": "u"}')),
        LLMCallEnd(
            model="gpt-4o-2024-08-06", call_id="llm_a", finish_reason="tool_calls", response_id="r1"
        ),
        Usage(
            input_tokens=100,
            output_tokens=20,
            total_tokens=120,
            cache_read_tokens=50,
            cache_creation_tokens=10,
            reasoning_tokens=5,
        ),
        ToolResult(tool_call_id="call_2", content="page", name="fetch"),
        Error(message="search timed out", error_type="timeout"),
        ToolResult(tool_call_id="call_1", content="boom", name="search", is_error=True),
        StepBoundary(index=0),
        LLMCallStart(model="gpt-4o", provider="openai", call_id="llm_b"),
        TextDelta("Done"),
        TextDelta("."),
        LLMCallEnd(call_id="llm_b", finish_reason="stop"),
        Usage(input_tokens=200, output_tokens=3, model="gpt-4o-2024-08-06"),
        StepBoundary(index=1),
        # A model-less call from an unnamed provider, with a call-level error.
        LLMCallStart(call_id="llm_c"),
        Error(message="rate limited", error_type="rate_limit"),
        LLMCallEnd(call_id="llm_c"),
        # Repairs: a result without a call, usage without a call.
        ToolResult(tool_call_id="call_3", content="orphan"),
        Usage(input_tokens=1),
    ]


def fatal() -> list[Any]:
    return [
        LLMCallStart(model="claude-x", provider="anthropic", call_id="llm_a"),
        TextDelta("Hel"),
        Error(message="context overflow", error_type="context_length_exceeded", fatal=True),
        LLMCallEnd(call_id="llm_a"),
    ]


def agent_vocabulary(final: Any) -> list[Any]:
    return [
        ReasoningStep(text="plan"),
        ToolCallStep(tool="lookup", args={"id": 1}, call_id="t_1"),
        ToolResultStep(tool="lookup", call_id="t_1", result={"ok": True}),
        MessageDelta(text="Answer"),
        RunUsage(input_tokens=30, output_tokens=9, total_tokens=39, model="gpt-4o-mini"),
        final,
    ]


async def drain(stream: AsyncIterator[Any]) -> None:
    async for _ in stream:
        pass


async def record_scenarios(telemetry: InMemoryTelemetry, mode: str = semconv.V1_41) -> None:
    """Every scenario into one telemetry (spans and metrics accumulate), ``mode``'s names."""

    def wrap(name: str | None = "researcher", **options: Any) -> Any:
        return telemetry.wrapper(agent_name=name, semconv=mode, **options)

    history = [Message(role="user", content="Hi")]
    await drain(
        wrap(capture_content=True, chunk_metric=True)(ScriptedAgent(multi_step()).stream(history))
    )
    await drain(
        wrap(step_spans=False, conversation_id="conv-1", agent_id="asst_1")(
            ScriptedAgent(multi_step()).stream(history)
        )
    )
    await drain(wrap(name=None)(ScriptedAgent(fatal()).stream(history)))
    for final in (
        StructuredFinal(data={"answer": 42}),
        InterruptFinal(interrupt_id="int_1", payload={"options": ["y", "n"]}, reason="approve?"),
        MessageFinal(text="Answer"),
    ):
        agent = ScriptedStreamingAgent(agent_vocabulary(final))
        await drain(
            wrap(name="assistant", capture_content=True, provider="openai")(agent.astream())
        )

    failing = ScriptedAgent(multi_step(), fail_at=5)  # raises with a call and tools open
    with pytest.raises(RuntimeError):
        await drain(wrap()(failing.stream(history)))

    slow = ScriptedAgent(multi_step(), delay=0.01)
    task = asyncio.ensure_future(drain(wrap()(slow.stream(history))))
    await asyncio.sleep(0.035)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert slow.closed


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def registry(mode: str) -> semconv.Registry:
    return semconv.REGISTRIES[mode]


@pytest.fixture
async def telemetry(otel_telemetry: InMemoryTelemetry, mode: str) -> InMemoryTelemetry:
    await record_scenarios(otel_telemetry, mode)
    return otel_telemetry


def type_error(registry: semconv.Registry, key: str, value: Any) -> str | None:
    """``key``'s type error in ``registry``; the head's additions in the head's."""
    if key in HEAD_ADDITIONS or key in HEAD_METRIC_ADDITIONS:
        return semconv.REGISTRIES[semconv.HEAD].type_error(key, value)
    return registry.type_error(key, value)


def gen_ai_spans(spans: Sequence[ReadableSpan]) -> list[tuple[ReadableSpan, dict[str, Any]]]:
    return [(s, dict(s.attributes or {})) for s in spans if s.attributes]


# --- span attributes -----------------------------------------------------------------------------


def test_scenarios_cover_every_span_type_and_ending(telemetry: InMemoryTelemetry) -> None:
    spans = telemetry.spans()
    operations = {dict(s.attributes or {}).get("gen_ai.operation.name") for s in spans}
    assert operations >= set(SPAN_DEFINITIONS)
    end_reasons = {dict(s.attributes or {}).get("agent_otel.end_reason") for s in spans}
    assert end_reasons >= {"exhausted", "interrupted", "error", "cancelled"}
    assert any(s.status.status_code is StatusCode.ERROR for s in spans)
    keys = {k for s in spans for k in (s.attributes or {})}
    for key in semconv.CONTENT_KEYS[:2] + semconv.CONTENT_KEYS[3:]:
        assert key in keys  # capture on in some runs: their types are checked too


def test_every_attribute_is_registered_with_its_type(
    telemetry: InMemoryTelemetry, registry: semconv.Registry
) -> None:
    problems: list[str] = []
    for span in telemetry.spans():
        for key, value in (span.attributes or {}).items():
            if key.startswith(OUR_PREFIX):
                continue
            if key in OUTSIDE_REGISTRY:
                if type(value) is not OUTSIDE_REGISTRY[key]:
                    problems.append(f"{span.name}: {key} has type {type(value).__name__}")
                continue
            if not (key.startswith("gen_ai.") or key == "error.type"):
                problems.append(f"{span.name}: {key} is neither gen_ai.*, error.type nor ours")
                continue
            if (error := type_error(registry, key, value)) is not None:
                problems.append(f"{span.name}: {error}")
        for event in span.events:
            for key, value in (event.attributes or {}).items():
                if not (key.startswith("gen_ai.") or key == "error.type"):
                    continue
                if (error := type_error(registry, key, value)) is not None:
                    problems.append(f"{span.name} event {event.name}: {error}")
    assert problems == []


def test_enum_values_we_emit_are_spec_members(
    telemetry: InMemoryTelemetry, registry: semconv.Registry
) -> None:
    for span in telemetry.spans():
        attributes = dict(span.attributes or {})
        for key in ("gen_ai.operation.name", "gen_ai.output.type"):
            if key in attributes:
                assert attributes[key] in registry.attributes()[key].members, (span.name, key)


def test_content_attributes_are_valid_json_in_the_spec_shape(telemetry: InMemoryTelemetry) -> None:
    for span in telemetry.spans():
        for key, value in (span.attributes or {}).items():
            if key in semconv.CONTENT_KEYS:
                semconv.validate_content(key, value)


def test_spans_follow_their_span_definition(
    telemetry: InMemoryTelemetry, registry: semconv.Registry
) -> None:
    seen: set[str] = set()
    for span in telemetry.spans():
        attributes = dict(span.attributes or {})
        operation = attributes.get("gen_ai.operation.name")
        if operation is None:  # only our step spans have no operation, and no gen_ai.* keys
            assert span.name.startswith(_attributes.STEP_SPAN_NAME), span.name
            assert not [k for k in attributes if k.startswith("gen_ai.")], span.name
            continue
        definition = registry.span_for(str(operation))
        seen.add(definition.id)
        assert span.kind is KINDS[definition.kind], span.name
        missing = definition.required - set(attributes)
        assert not missing, f"{span.name} lacks required {sorted(missing)}"
        if span.status.status_code is StatusCode.ERROR:
            assert definition.conditionally_required("error.type")
            assert "error.type" in attributes, f"{span.name} ended in error without error.type"
        assert definition.name_template is not None, definition.id
        assert span.name == definition.expected_name(attributes)
    assert seen == set(registry.span_ids.values())


def test_span_definitions_read_from_yaml() -> None:
    """The YAML says what the brief says; if the conventions move, these tests follow them."""
    chat = semconv.span("span.gen_ai.inference.client")
    assert chat.required >= {"gen_ai.operation.name", "gen_ai.provider.name"}
    assert chat.kind == "client"
    assert chat.name_template == "{gen_ai.operation.name} {gen_ai.request.model}"
    agent = semconv.span("span.gen_ai.invoke_agent.internal")
    assert agent.kind == "internal"
    assert agent.name_template == "invoke_agent {gen_ai.agent.name}"
    tool = semconv.span("span.gen_ai.execute_tool.internal")
    assert tool.required == {"gen_ai.operation.name", "gen_ai.tool.name"}
    assert tool.name_template == "execute_tool {gen_ai.tool.name}"
    assert semconv.render_span_name(agent.name_template, {}) == "invoke_agent"


def test_gen_ai_attributes_are_ones_the_span_type_lists(
    telemetry: InMemoryTelemetry, registry: semconv.Registry
) -> None:
    """A registered key on the wrong span type is a non-conformance too (usage on tool spans,
    say). Listed exceptions are deliberate and documented."""
    problems = set()
    for span in telemetry.spans():
        attributes = dict(span.attributes or {})
        operation = attributes.get("gen_ai.operation.name")
        if operation is None:
            continue
        listed = registry.span_for(str(operation)).levels
        if operation == "chat":  # the head lists its additions on the inference span
            listed = {**semconv.REGISTRIES[semconv.HEAD].span_for("chat").levels, **listed}
        for key in attributes:
            if key.startswith("gen_ai.") and key not in listed and key not in OUTSIDE_REGISTRY:
                problems.add(f"{operation}: {key}")
    assert problems <= UNLISTED_ON_PURPOSE


def test_our_attribute_module_uses_gen_ai_only_for_registered_names() -> None:
    """Every ``gen_ai.*`` string in ``_attributes`` (even ones no scenario emits) is in the
    registry or is a metric name; every other key is ``error.type``, one of the ``exception.*``
    attributes the vendored ``events.yaml`` references, or ``agent_otel.*``."""
    head = semconv.REGISTRIES[semconv.HEAD]
    registry = {**head.attributes(), **semconv.attributes()}
    metric_names = set(semconv.metrics()) | set(DEVELOPMENT_METRICS) | set(head.metrics())
    for name, value in vars(_attributes).items():
        if name.startswith("_") or not isinstance(value, str) or "." not in value:
            continue
        if value in OUTSIDE_REGISTRY or name.startswith("SEMCONV_"):  # the option's values
            continue
        if value.startswith("gen_ai."):
            if name.startswith("METRIC_"):
                assert value in metric_names, name
            elif name.startswith("EVENT_"):
                assert value in semconv.events(), name
            else:
                assert value in registry, f"{name} = {value!r} is not in the registry"
        else:
            exception = name.startswith("EXCEPTION_") and f"ref: {value}" in EVENTS_TEXT
            ours = value.startswith(OUR_PREFIX) or value in OUTSIDE_REGISTRY
            assert value == "error.type" or exception or ours, (name, value)


def test_our_mcp_keys_and_method_are_the_mcp_conventions() -> None:
    """The MCP keys of ``_attributes`` are keys of the vendored MCP and JSON-RPC registries,
    and the method an MCP tool's span names is a member of ``mcp.method.name``."""
    registry = semconv.mcp_attributes()
    keys = {n: v for n, v in vars(_attributes).items() if n.startswith(("MCP_", "JSONRPC_"))}
    assert keys.pop("MCP_METHOD_TOOLS_CALL") in registry["mcp.method.name"].members
    assert keys.pop("MCP_SERVER_NAME").startswith(OUR_PREFIX)  # the conventions have none
    assert keys and all(value in registry for value in keys.values()), keys


# --- metrics -------------------------------------------------------------------------------------


def collected(telemetry: InMemoryTelemetry) -> dict[str, Metric]:
    data = telemetry.metric_reader.get_metrics_data()
    assert data is not None
    out: dict[str, Metric] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            if scope.scope.name != "agent_otel":
                continue
            for metric in scope.metrics:
                assert metric.name not in out, f"{metric.name} collected twice"
                if not metric.name.startswith(OUR_PREFIX):  # the cost counter: test_cost.py
                    out[metric.name] = metric
    return out


def points(metric: Metric) -> list[HistogramDataPoint]:
    assert isinstance(metric.data, Histogram), f"{metric.name} is not a histogram"
    result = [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]
    assert result, metric.name
    return result


def test_metrics_match_metrics_yaml(telemetry: InMemoryTelemetry, mode: str) -> None:
    """Each mode records its own metric names, never the other's; every one the mode's
    registry defines has its instrument and unit."""
    metrics = collected(telemetry)
    expected = MODE_METRICS[mode]
    assert set(metrics) == set(expected)
    spec = {**semconv.REGISTRIES[mode].metrics(), **semconv.REGISTRIES[semconv.HEAD].metrics()}
    for name, unit in expected.items():
        assert metrics[name].unit == unit, name
        if name in spec:
            assert spec[name].instrument == "histogram", name
            assert spec[name].unit == unit, name
        points(metrics[name])


def test_calls_per_run_are_one_record_per_run(telemetry: InMemoryTelemetry) -> None:
    """gen_ai.invoke_agent.inference_calls / .tool_calls: one point per run (the six
    scenarios' eight runs), summing the run's own model and tool calls."""
    metrics = collected(telemetry)
    runs = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    for name in HEAD_METRIC_ADDITIONS:
        recorded = sum(p.count for p in points(metrics[name]))
        assert recorded == len(runs), name
    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert sum(p.sum for p in points(metrics["gen_ai.invoke_agent.inference_calls"])) == len(chats)
    orphans = [s for s in tools if dict(s.attributes or {}).get("agent_otel.incomplete")]
    calls = sum(p.sum for p in points(metrics["gen_ai.invoke_agent.tool_calls"]))
    assert len(tools) - len(orphans) <= calls <= len(tools)


def test_token_usage_records_integers(telemetry: InMemoryTelemetry, mode: str) -> None:
    metrics = collected(telemetry)
    token_metrics = [n for n, unit in MODE_METRICS[mode].items() if unit == "{token}"]
    for point in (p for name in token_metrics for p in points(metrics[name])):
        assert isinstance(point.sum, int)
        assert isinstance(point.min, int)
        assert isinstance(point.max, int)


@pytest.mark.parametrize("name", sorted(SPEC_BUCKETS))
def test_bucket_boundaries_are_the_spec_ones(telemetry: InMemoryTelemetry, name: str) -> None:
    metrics = collected(telemetry)
    recorded = name
    if name not in metrics:  # the head's names: the same boundaries (util-genai's)
        recorded = {
            "gen_ai.client.token.usage": "gen_ai.client.inference.operation.input_tokens",
            "gen_ai.client.operation.duration": "gen_ai.client.inference.duration",
        }[name]
    for point in points(metrics[recorded]):
        assert list(point.explicit_bounds) == pytest.approx(SPEC_BUCKETS[name], rel=1e-12)


def test_chunk_metrics_use_their_declared_boundaries(
    telemetry: InMemoryTelemetry, mode: str
) -> None:
    metrics = collected(telemetry)
    names = _attributes.CONVENTIONS[mode]
    for name, buckets in (
        (names.time_to_first_chunk, _attributes.TIME_TO_FIRST_CHUNK_BUCKETS),
        (names.time_per_output_chunk, _attributes.TIME_PER_OUTPUT_CHUNK_BUCKETS),
    ):
        for point in points(metrics[name]):
            assert list(point.explicit_bounds) == list(buckets)


def test_metric_attributes_are_low_cardinality_and_complete(
    telemetry: InMemoryTelemetry, registry: semconv.Registry
) -> None:
    spec = registry.metrics()
    for name, metric in collected(telemetry).items():
        if name in HEAD_METRIC_ADDITIONS:
            definition = semconv.REGISTRIES[semconv.HEAD].metrics()[name]
            allowed, required = set(definition.levels), definition.required
        elif name in spec:
            definition = spec[name]
            # The spec's metric attributes, plus agent name and error.type (DESIGN.md).
            allowed = set(definition.levels) | {"gen_ai.agent.name", "error.type"}
            required = definition.required
        else:
            allowed = DEVELOPMENT_METRIC_ATTRIBUTES
            required = {"gen_ai.operation.name"}
        for point in points(metric):
            attributes = dict(point.attributes or {})
            extra = set(attributes) - allowed
            assert not extra, f"{name} carries {sorted(extra)}"
            missing = required - set(attributes)
            assert not missing, f"{name} lacks {sorted(missing)}"
            for key, value in attributes.items():
                assert type_error(registry, key, value) is None, (name, key, value)
                assert value not in IDS, (name, key, value)
            if name == "gen_ai.client.token.usage":
                members = registry.attributes()["gen_ai.token.type"].members
                assert attributes["gen_ai.token.type"] in members
            if name == "gen_ai.execute_tool.duration":
                assert "gen_ai.tool.name" in attributes
            if name == "gen_ai.invoke_agent.duration":  # the head's lists no provider
                assert "gen_ai.provider.name" in attributes
            if name == "gen_ai.invocation.duration":
                assert attributes["gen_ai.invocation.is_nested"] is False  # no run nests here


def test_metric_definitions_read_from_yaml() -> None:
    spec = semconv.metrics()
    assert spec["gen_ai.client.token.usage"].unit == "{token}"
    assert spec["gen_ai.client.token.usage"].required == {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.token.type",
    }
    for name in CLIENT_METRICS[1:]:
        assert spec[name].unit == "s"
        assert spec[name].required == {"gen_ai.operation.name", "gen_ai.provider.name"}

"""The conventions' head beside v1.41.1: one switch for the renamed names (never both at once),
and the head's additions written in both modes (docs/conformance.md, "The conventions' head").

The full registry check of each mode is ``tests/test_conformance.py``; here, the switch itself
(option, ``configure()``, the environment variable, once per wrapper) and each addition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import semconv_registry as semconv
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import _attributes as A
from agent_otel import configure, otel_wrapper
from agent_otel.recording import _semconv
from agent_otel.recording._chat import request_attributes
from agent_otel.recording._tool import tool_type
from agent_otel.recording.content._tool_definitions import tool_definitions
from agent_otel.testing import InMemoryTelemetry, run_script

# The names v1.41.1 and the head spell differently: a mode must never write the other's.
V1_41_ONLY = {
    A.USAGE_CACHE_CREATION_INPUT_TOKENS,
    A.METRIC_TOKEN_USAGE,
    A.METRIC_OPERATION_DURATION,
    A.METRIC_TIME_TO_FIRST_CHUNK,
    A.METRIC_TIME_PER_OUTPUT_CHUNK,
    A.METRIC_AGENT_DURATION,
}
HEAD_ONLY = {
    A.USAGE_CACHE_WRITE_INPUT_TOKENS,
    A.METRIC_INFERENCE_INPUT_TOKENS,
    A.METRIC_INFERENCE_OUTPUT_TOKENS,
    A.METRIC_INFERENCE_DURATION,
    A.METRIC_INFERENCE_TIME_TO_FIRST_CHUNK,
    A.METRIC_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    A.METRIC_INVOCATION_DURATION,
    A.INVOCATION_IS_NESTED,
}


def call(call_id: str = "c1", **params: Any) -> list[Any]:
    """One streamed call with cache usage and a tool."""
    return [
        LLMCallStart(model="claude-x", provider="anthropic", call_id=call_id, params=params),
        TextDelta("hi"),
        TextDelta("!"),
        ToolCall(id=f"t-{call_id}", function=FunctionCall("lookup", "{}")),
        LLMCallEnd(call_id=call_id, finish_reason="tool_calls"),
        Usage(input_tokens=30, output_tokens=5, cache_read_tokens=10, cache_creation_tokens=20),
        ToolResult(tool_call_id=f"t-{call_id}", content="ok"),
        StepBoundary(index=0),
    ]


def names(telemetry: InMemoryTelemetry) -> set[str]:
    """Every span attribute key, metric name and metric attribute key recorded."""
    out = {k for s in telemetry.spans() for k in (s.attributes or {})}
    for name, points in telemetry.histograms().items():
        out.add(name)
        out |= {k for p in points for k in (p.attributes or {})}
    return out


@pytest.fixture(autouse=True)
def no_process_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(_semconv.ENV_VAR, raising=False)
    yield
    _semconv.set_default_semconv(None)  # configure(semconv=...) is a process setting


async def test_default_is_v1_41_and_never_writes_the_heads_names(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, call(), agent_name="a")
    written = names(otel_telemetry)
    assert written >= V1_41_ONLY - {A.METRIC_TIME_PER_OUTPUT_CHUNK}  # that one is opt-in
    assert not written & HEAD_ONLY
    chat = otel_telemetry.span("chat claude-x")
    assert (chat.attributes or {})[A.USAGE_CACHE_CREATION_INPUT_TOKENS] == 20


async def test_head_writes_the_heads_names_only(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, call(), agent_name="a", semconv="head", chunk_metric=True)
    written = names(otel_telemetry)
    assert written >= HEAD_ONLY
    assert not written & V1_41_ONLY
    chat = otel_telemetry.span("chat claude-x")
    assert (chat.attributes or {})[A.USAGE_CACHE_WRITE_INPUT_TOKENS] == 20
    histograms = otel_telemetry.histograms()
    assert [p.sum for p in histograms[A.METRIC_INFERENCE_INPUT_TOKENS]] == [30]
    assert [p.sum for p in histograms[A.METRIC_INFERENCE_OUTPUT_TOKENS]] == [5]
    for point in histograms[A.METRIC_INFERENCE_INPUT_TOKENS]:
        assert A.TOKEN_TYPE not in (point.attributes or {})  # one histogram per direction


async def test_each_wrapper_keeps_its_own_names_beside_the_other(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """One process, one meter provider, both modes: each run writes its own names only."""
    await run_script(otel_telemetry, call("a"), agent_name="old")
    await run_script(otel_telemetry, call("b"), agent_name="new", semconv="head")
    old, new = otel_telemetry.span("invoke_agent old"), otel_telemetry.span("invoke_agent new")
    chats = {dict(s.attributes or {})[A.LLM_CALL_ID]: s for s in otel_telemetry.spans()
             if s.name.startswith("chat")}  # fmt: skip
    assert A.USAGE_CACHE_CREATION_INPUT_TOKENS in (chats["a"].attributes or {})
    assert A.USAGE_CACHE_WRITE_INPUT_TOKENS in (chats["b"].attributes or {})
    assert A.PROVIDER_NAME in (old.attributes or {})
    assert A.PROVIDER_NAME not in (new.attributes or {})  # the head's invoke span lists none
    histograms = otel_telemetry.histograms()
    assert {p.attributes["gen_ai.agent.name"] for p in histograms[A.METRIC_AGENT_DURATION]} == {
        "old"
    }
    assert {
        p.attributes["gen_ai.agent.name"] for p in histograms[A.METRIC_INVOCATION_DURATION]
    } == {"new"}


async def test_configure_and_the_variable_choose_for_wrappers_without_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_semconv.ENV_VAR, "head")
    assert _semconv.conventions_for(None) is A.HEAD
    assert _semconv.conventions_for("v1.41") is A.V1_41  # the option wins
    telemetry = configure(set_global=False, console=False, semconv="v1.41")
    try:
        assert _semconv.conventions_for(None) is A.V1_41  # configure() wins over the variable
        assert _semconv.conventions_for("head") is A.HEAD
    finally:
        telemetry.shutdown()


def test_an_unknown_variable_value_is_told_once_and_ignored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_semconv, "_told", set())
    monkeypatch.setenv(_semconv.ENV_VAR, "latest")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert _semconv.conventions_for(None) is A.V1_41
        assert _semconv.conventions_for(None) is A.V1_41
    assert caplog.text.count(_semconv.ENV_VAR) == 1


def test_an_unknown_option_or_argument_raises_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'v1\.41', 'head'"):
        otel_wrapper(semconv="latest")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="semconv"):
        configure(set_global=False, console=False, semconv="v2")


async def test_the_names_are_resolved_once_per_wrapper(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot path reads the run's fields: nothing resolves names per event or per run."""
    calls: list[object] = []
    real = _semconv.conventions_for

    def counting(value: str | None) -> A.Conventions:
        calls.append(value)
        return real(value)

    monkeypatch.setattr("agent_otel.recording._options.conventions_for", counting)
    wrap = otel_telemetry.wrapper(semconv="head")
    for _ in range(3):
        received = [e async for e in wrap(_replay(call() * 5))]
        assert len(received) == 40
    assert calls == ["head"]


async def _replay(events: list[Any]) -> Any:
    for event in events:
        yield event


# --- the head's additions, in both modes ---------------------------------------------------


@pytest.mark.parametrize("mode", ["v1.41", "head"])
async def test_calls_per_run_count_the_runs_own_calls(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    """A run with two model calls and two tools, and a run nested in it with one call: each
    records its own counts once; the nested one says so (head)."""
    inner_wrap = otel_telemetry.wrapper(agent_name="inner", semconv=mode)  # type: ignore[typeddict-item]

    async def outer() -> Any:
        for event in call("a"):
            yield event
        async for _ in inner_wrap(_replay(call("i")[:-1])):
            pass
        for event in call("b"):
            yield event

    await run_script(otel_telemetry, outer(), agent_name="outer", semconv=mode)  # type: ignore[typeddict-item]
    histograms = otel_telemetry.histograms()
    by_agent = {
        name: {p.attributes["gen_ai.agent.name"]: (p.count, p.sum) for p in histograms[name]}
        for name in (A.METRIC_AGENT_INFERENCE_CALLS, A.METRIC_AGENT_TOOL_CALLS)
    }
    assert by_agent[A.METRIC_AGENT_INFERENCE_CALLS] == {"outer": (1, 2), "inner": (1, 1)}
    assert by_agent[A.METRIC_AGENT_TOOL_CALLS] == {"outer": (1, 2), "inner": (1, 1)}
    for points in (
        histograms[A.METRIC_AGENT_INFERENCE_CALLS],
        histograms[A.METRIC_AGENT_TOOL_CALLS],
    ):
        for point in points:
            assert set(point.attributes or {}) == {"gen_ai.agent.name"}
    if mode == "head":
        nested = {
            p.attributes["gen_ai.agent.name"]: p.attributes[A.INVOCATION_IS_NESTED]
            for p in histograms[A.METRIC_INVOCATION_DURATION]
        }
        assert nested == {"outer": False, "inner": True}


async def test_a_run_without_calls_records_zero_calls(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, [TextDelta("plain")], agent_name="quiet")
    histograms = otel_telemetry.histograms()
    for name in (A.METRIC_AGENT_INFERENCE_CALLS, A.METRIC_AGENT_TOOL_CALLS):
        assert [(p.count, p.sum) for p in histograms[name]] == [(1, 0)]


@pytest.mark.parametrize(
    ("params", "level"),
    [
        ({"reasoning_effort": "high"}, "high"),  # OpenAI Chat Completions
        ({"reasoning": {"effort": "minimal", "summary": "auto"}}, "minimal"),  # Responses API
        ({"output_config": {"effort": "medium"}}, "medium"),  # Anthropic
        ({"reasoning_effort": ""}, None),
        ({"reasoning_effort": 3}, None),
        ({"reasoning": "high"}, None),
        ({"output_config": {"format": "json"}}, None),
        ({}, None),
    ],
)
def test_the_reasoning_level_is_the_string_sent(params: dict[str, Any], level: str | None) -> None:
    for conventions in (A.V1_41, A.HEAD):
        assert request_attributes(params, conventions).get(A.REQUEST_REASONING_LEVEL) == level


@pytest.mark.parametrize(
    ("value", "v1_41", "head"), [(40, 40.0, 40), (40.0, 40.0, 40), (0.5, 0.5, None)]
)
def test_top_k_is_a_double_in_v1_41_and_an_int_in_the_head(
    value: float, v1_41: float, head: int | None
) -> None:
    registry = {mode: semconv.REGISTRIES[mode].attributes()["gen_ai.request.top_k"].type
                for mode in semconv.REGISTRIES}  # fmt: skip
    assert registry == {"v1.41": "double", "head": "int"}
    old = request_attributes({"top_k": value}, A.V1_41)[A.REQUEST_TOP_K]
    assert old == v1_41 and type(old) is float
    new = request_attributes({"top_k": value}, A.HEAD).get(A.REQUEST_TOP_K)
    assert new == head and (head is None or type(new) is int)


OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {"type": "object"},
    },
}
ANTHROPIC_TOOL = {"name": "get_time", "description": "Time.", "input_schema": {"type": "object"}}
RESPONSES_TOOL = {"type": "function", "name": "search", "parameters": {"type": "object"}}


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def test_tool_definitions_read_every_request_format() -> None:
    definitions = tool_definitions(
        [OPENAI_TOOL, ANTHROPIC_TOOL, RESPONSES_TOOL, {"type": "web_search_preview"},
         {"type": "mcp", "server_label": "docs"}, lookup, {"function": {}}, 7, None]
    )  # fmt: skip
    assert definitions == [
        {"type": "function", "name": "get_weather", "description": "Weather.",
         "parameters": {"type": "object"}},
        {"type": "function", "name": "get_time", "description": "Time.",
         "parameters": {"type": "object"}},
        {"type": "function", "name": "search", "parameters": {"type": "object"}},
        {"type": "web_search_preview", "name": "web_search_preview"},
        {"type": "mcp", "name": "mcp"},
        {"type": "function", "name": "lookup", "description": "Look a city up."},
    ]  # fmt: skip
    validate = semconv.validate_content
    import json

    validate(semconv.TOOL_DEFINITIONS, json.dumps(definitions))


@given(st.lists(st.one_of(st.none(), st.integers(), st.text(), st.dictionaries(
    st.sampled_from(["type", "name", "function", "input_schema", "parameters", "description"]),
    st.one_of(st.none(), st.text(), st.integers(), st.dictionaries(st.text(), st.text())),
))))  # fmt: skip
def test_hostile_tool_lists_give_valid_definitions_or_none(tools: list[Any]) -> None:
    import json

    definitions = tool_definitions(tools)
    if definitions:
        semconv.validate_content(semconv.TOOL_DEFINITIONS, json.dumps(definitions))


@dataclass
class LLMCallStartWithTools:  # a look-alike LLMCallStart (read by shape) with a tools field
    model: str
    call_id: str
    tools: list[Any]
    params: dict[str, Any] = field(default_factory=dict)


LLMCallStartWithTools.__name__ = "LLMCallStart"


@pytest.mark.parametrize("where", ["field", "params"])
async def test_tool_definitions_go_on_the_chat_span_only_with_content_on(
    otel_telemetry: InMemoryTelemetry, where: str
) -> None:
    start = (
        LLMCallStartWithTools(model="m", call_id="c", tools=[OPENAI_TOOL])
        if where == "field"
        else LLMCallStart(model="m", call_id="c", params={"tools": [ANTHROPIC_TOOL]})
    )
    events = [start, TextDelta("x"), LLMCallEnd(call_id="c")]
    await run_script(otel_telemetry, events, agent_name="off")
    assert A.TOOL_DEFINITIONS not in (otel_telemetry.span("chat m").attributes or {})
    otel_telemetry.clear()
    await run_script(otel_telemetry, events, agent_name="on", capture_content=True)
    value = (otel_telemetry.span("chat m").attributes or {})[A.TOOL_DEFINITIONS]
    [definition] = semconv.validate_content(semconv.TOOL_DEFINITIONS, value)
    assert definition["name"] == ("get_weather" if where == "field" else "get_time")


async def test_a_call_without_tools_has_no_definitions(otel_telemetry: InMemoryTelemetry) -> None:
    events = [LLMCallStart(model="m", call_id="c", params={"tools": []}), LLMCallEnd(call_id="c")]
    await run_script(otel_telemetry, events, capture_content=True)
    assert A.TOOL_DEFINITIONS not in (otel_telemetry.span("chat m").attributes or {})


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (None, "function"), ("function", "function"), ("custom", "function"),
        ("mcp", "extension"), ("MCP_call", "extension"), ("web_search_call", "extension"),
        ("code_interpreter_call", "extension"), ("file_search_call", "datastore"),
        ("retrieval", "datastore"), ("something_new", "function"), (7, "function"),
    ],
)  # fmt: skip
def test_tool_types_map_onto_the_registrys_values(kind: Any, expected: str) -> None:
    assert tool_type(kind) == expected


async def test_a_tool_call_naming_its_kind_sets_the_tool_type(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events = [
        ToolCall(id="t1", function=FunctionCall("docs_search", "{}"), type="mcp"),  # type: ignore[arg-type]
        ToolResult(tool_call_id="t1", content="found"),
        ToolCall(id="t2", function=FunctionCall("add", "{}")),
        ToolResult(tool_call_id="t2", content="3"),
    ]
    await run_script(otel_telemetry, events)
    assert (otel_telemetry.span("execute_tool docs_search").attributes or {})[
        A.TOOL_TYPE
    ] == "extension"
    assert (otel_telemetry.span("execute_tool add").attributes or {})[A.TOOL_TYPE] == "function"

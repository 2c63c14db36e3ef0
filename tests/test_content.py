"""Content capture: off by default, opt-in by variable or option, within byte budgets, redacted.

Every captured value is checked against the GenAI JSON schemas vendored in ``tests/semconv``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import types
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract.agent.events import MessageDelta, MessageFinal
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import _guard
from agent_otel.recording._options import settings_from
from agent_otel.recording._wrapper import traced
from agent_otel.recording.content import _capture
from agent_otel.recording.content._capture import (
    ENV_CAPTURE,
    TRUNCATION_MARK,
    ContentCapture,
    ContentKind,
    Redactor,
    TextBuffer,
    fit_json,
)
from agent_otel.recording.content._messages import told_part
from agent_otel.scrubbing import MARGIN
from agent_otel.testing import InMemoryTelemetry, run_script
from semconv_registry import (
    CONTENT_KEYS,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    SCHEMA_FILES,
    SYSTEM_INSTRUCTIONS,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    validate_content,
)

SECRET = "sk-SECRET-1234"

HISTORY = [
    Message(role="system", content=f"You are terse. Key {SECRET}."),
    Message(role="user", content="Weather in Paris and Zürich? 天気"),
    Message(
        role="assistant",
        content=None,
        tool_calls=[
            ToolCall(id="call_1", function=FunctionCall("get_weather", '{"city": "Paris"}'))
        ],
    ),
    Message(role="tool", tool_call_id="call_1", content='{"temp": 21}', name="get_weather"),
]


def rich_events() -> list[Any]:
    """Two LLM calls with history, reasoning, text, a tool call with arguments and results."""
    return [
        LLMCallStart(
            model="gpt-4o", provider="openai", call_id="llm_1", params={}, messages=HISTORY
        ),
        ReasoningDelta("Need Zürich too."),
        TextDelta("Checking "),
        TextDelta("Zürich…"),
        ToolCall(
            id="call_2",
            function=FunctionCall("get_weather", f'{{"city": "Zürich", "key": "{SECRET}"}}'),
        ),
        LLMCallEnd(call_id="llm_1", finish_reason="tool_calls", model="gpt-4o-2024-08-06"),
        Usage(input_tokens=40, output_tokens=12),
        ToolResult(tool_call_id="call_2", content={"temp": 18, "token": SECRET}),
        StepBoundary(index=0),
        LLMCallStart(
            model="gpt-4o",
            provider="openai",
            call_id="llm_2",
            messages=[*HISTORY, Message(role="tool", tool_call_id="call_2", content="18")],
        ),
        TextDelta("Paris 21°, Zürich 18°."),
        LLMCallEnd(call_id="llm_2", finish_reason="stop"),
        Usage(input_tokens=60, output_tokens=8),
        StepBoundary(index=1),
    ]


async def run(events: Sequence[Any], telemetry: InMemoryTelemetry, **options: Any) -> list[Any]:
    """Stream ``events`` as the weather agent and return what the consumer received."""
    return await run_script(telemetry, events, agent_name="weather", **options)


def run_sync(events: Sequence[Any], **options: Any) -> InMemoryTelemetry:
    """One run in a fresh telemetry (for hypothesis, which cannot use function fixtures)."""
    telemetry = InMemoryTelemetry()
    asyncio.run(run(events, telemetry, **options))
    return telemetry


def by_name(telemetry: InMemoryTelemetry) -> dict[str, list[dict[str, Any]]]:
    """Each span's attributes, by span name."""
    return {
        name: [dict(s.attributes or {}) for s in spans]
        for name, spans in telemetry.by_name().items()
    }


def all_attribute_sets(telemetry: InMemoryTelemetry) -> Iterator[dict[str, Any]]:
    """The attributes of every span and every span event."""
    for span in telemetry.spans():
        yield dict(span.attributes or {})
        for event in span.events:
            yield dict(event.attributes or {})


def captured(telemetry: InMemoryTelemetry) -> list[tuple[str, Any]]:
    """Every content attribute recorded anywhere, as (key, value)."""
    return [
        (key, value)
        for attributes in all_attribute_sets(telemetry)
        for key, value in attributes.items()
        if key in CONTENT_KEYS
    ]


# --- off by default ----------------------------------------------------------------------------


@pytest.mark.parametrize("env", [None, "", "false", "NO_CONTENT", "EVENT_ONLY", "0"])
async def test_content_is_off_by_default(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry, env: str | None
) -> None:
    if env is None:
        monkeypatch.delenv(ENV_CAPTURE, raising=False)
    else:
        monkeypatch.setenv(ENV_CAPTURE, env)
    events = rich_events()
    assert await run(events, otel_telemetry) == events
    spans = otel_telemetry.spans()
    assert len(spans) == 6  # the run was traced: agent, 2 steps, 2 chats, 1 tool
    assert captured(otel_telemetry) == []
    for attributes in all_attribute_sets(otel_telemetry):
        for value in attributes.values():
            text = json.dumps(value, default=str, ensure_ascii=False)
            assert SECRET not in text
            assert "Zürich" not in text
            assert "Paris" not in text


async def test_explicit_false_beats_the_variable(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_ONLY")
    await run(rich_events(), otel_telemetry, capture_content=False)
    assert len(otel_telemetry.spans()) == 6
    assert captured(otel_telemetry) == []


# --- on ------------------------------------------------------------------------------------------


@pytest.fixture(params=["env:SPAN_ONLY", "env:span_and_event", "env:true", "option"])
def capture_on(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Turn capture on by the variable (no option) or by ``capture_content=True``."""
    how: str = request.param
    if how == "option":
        monkeypatch.delenv(ENV_CAPTURE, raising=False)
        return {"capture_content": True}
    monkeypatch.setenv(ENV_CAPTURE, how.removeprefix("env:"))
    return {}


async def test_capture_records_messages_tools_and_validates(
    otel_telemetry: InMemoryTelemetry, capture_on: dict[str, Any]
) -> None:
    events = rich_events()
    assert await run(events, otel_telemetry, **capture_on) == events
    spans = by_name(otel_telemetry)
    chat_1, chat_2 = spans["chat gpt-4o"]
    (tool,) = spans["execute_tool get_weather"]

    history = validate_content(INPUT_MESSAGES, chat_1[INPUT_MESSAGES])
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool"]
    assert history[0]["parts"] == [{"type": "text", "content": f"You are terse. Key {SECRET}."}]
    assert history[1]["parts"] == [{"type": "text", "content": "Weather in Paris and Zürich? 天気"}]
    assert history[2]["parts"] == [
        {"type": "tool_call", "name": "get_weather", "id": "call_1", "arguments": {"city": "Paris"}}
    ]
    assert history[3]["parts"] == [
        {"type": "tool_call_response", "response": '{"temp": 21}', "id": "call_1"}
    ]
    assert history[3]["name"] == "get_weather"
    assert len(validate_content(INPUT_MESSAGES, chat_2[INPUT_MESSAGES])) == 5

    (output,) = validate_content(OUTPUT_MESSAGES, chat_1[OUTPUT_MESSAGES])
    assert output["role"] == "assistant"
    assert output["finish_reason"] == "tool_call"
    assert output["parts"] == [
        {"type": "reasoning", "content": "Need Zürich too."},
        {"type": "text", "content": "Checking Zürich…"},
        {
            "type": "tool_call",
            "name": "get_weather",
            "id": "call_2",
            "arguments": {"city": "Zürich", "key": SECRET},
        },
    ]
    (output_2,) = validate_content(OUTPUT_MESSAGES, chat_2[OUTPUT_MESSAGES])
    assert output_2 == {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Paris 21°, Zürich 18°."}],
        "finish_reason": "stop",
    }

    assert json.loads(tool[TOOL_CALL_ARGUMENTS]) == {"city": "Zürich", "key": SECRET}
    # a value under a secret key name is scrubbed by default (docs/scrubbing.md), capture on
    scrubbed = "[REDACTED:key_name len=14]"
    assert json.loads(tool[TOOL_CALL_RESULT]) == {"temp": 18, "token": scrubbed}
    # The JSON is UTF-8 text, not \u escapes (a budget counts what is exported).
    assert "Zürich" in tool[TOOL_CALL_ARGUMENTS]


def _asked_after_the_end(usage_at: str) -> list[Any]:
    """A loop that tells its model's tool calls when it runs them, after ``LLMCallEnd`` (as
    pydantic-ai, LlamaIndex, Agno and smolagents do), one after another's result; the usage
    comes before the end, after the tools, or never. A tool call after the next request starts
    is not the first request's."""
    usage = [Usage(input_tokens=40, output_tokens=12)]
    call = ToolCall(id="c1", function=FunctionCall("get_weather", '{"city": "Paris"}'))
    call_2 = ToolCall(id="c2", function=FunctionCall("get_time", '{"zone": "CET"}'))
    return [
        LLMCallStart(model="gpt-4o", provider="openai"),
        TextDelta("Checking."),
        *(usage if usage_at == "before" else []),
        LLMCallEnd(),
        call,
        ToolResult(tool_call_id="c1", content="sunny"),
        call_2,
        ToolResult(tool_call_id="c2", content="noon"),
        *(usage if usage_at == "after" else []),
        LLMCallStart(model="gpt-4o", provider="openai"),
        ToolCall(id="c3", function=FunctionCall("get_weather", '{"city": "Rome"}')),
        LLMCallEnd(finish_reason="tool_calls"),
        ToolResult(tool_call_id="c3", content="rainy"),
        StepBoundary(index=0),
        ToolCall(id="c4", function=FunctionCall("late", "{}")),
        ToolResult(tool_call_id="c4", content="?"),
    ]


@pytest.mark.parametrize("usage_at", ["before", "after", "never"])
async def test_tool_calls_told_after_the_response_are_its_own(
    otel_telemetry: InMemoryTelemetry, usage_at: str
) -> None:
    """Each chat span's output holds the tool calls told after its ``LLMCallEnd`` until the
    next request or the step's end, and finishes with ``tool_call``; it still ends when its
    response did, before the tools it asked for ran."""
    await run(_asked_after_the_end(usage_at), otel_telemetry, capture_content=True)

    spans = sorted(otel_telemetry.spans(), key=lambda sp: sp.start_time or 0)
    first, second = (sp for sp in spans if sp.name == "chat gpt-4o")
    outputs = [
        validate_content(OUTPUT_MESSAGES, (sp.attributes or {})[OUTPUT_MESSAGES])[0]
        for sp in (first, second)
    ]
    assert [[(p["id"], p["name"]) for p in o["parts"] if p["type"] == "tool_call"]
            for o in outputs] == [[("c1", "get_weather"), ("c2", "get_time")],
                                  [("c3", "get_weather")]]  # fmt: skip
    assert outputs[0]["parts"][1]["arguments"] == {"city": "Paris"}
    assert [o["finish_reason"] for o in outputs] == ["tool_call", "tool_call"]
    tools = {sp.name: sp for sp in spans if sp.name.startswith("execute_tool")}
    assert (first.end_time or 0) <= (tools["execute_tool get_time"].start_time or 0)
    assert (first.attributes or {}).get("gen_ai.usage.input_tokens") == (
        None if usage_at == "never" else 40
    )
    assert otel_telemetry.open_spans() == []


async def _changing_after_telling(how: str) -> AsyncIterator[Any]:
    """A response whose two tool calls are told after its end, the first changed by the agent
    once told (``how``): its arguments edited in place, its function replaced, or the event
    object itself reused for the second call."""
    arguments = {"city": "Paris"}
    function: Any = FunctionCall("get_weather", arguments)
    if how == "edited":  # a framework's function object, its arguments a dict kept as given
        function = types.SimpleNamespace(name="get_weather", arguments=arguments)
    first = ToolCall(id="c1", function=function)
    yield LLMCallStart(model="gpt-4o", provider="openai")
    yield LLMCallEnd(finish_reason="tool_calls")
    yield first
    if how == "edited":
        arguments["city"] = "Lyon"
    elif how == "replaced":
        first.function = FunctionCall("get_time", '{"city": "Lyon"}')
    yield ToolResult(tool_call_id="c1", content="sunny")
    second = ToolCall(id="c2", function=FunctionCall("get_time", '{"zone": "CET"}'))
    if how == "reused":
        first.id, first.function, second = "c2", second.function, first
    yield second
    yield ToolResult(tool_call_id="c2", content="noon")


@pytest.mark.parametrize("how", ["edited", "replaced", "reused"])
async def test_a_held_response_keeps_its_tool_calls_as_they_were_told(
    otel_telemetry: InMemoryTelemetry, how: str
) -> None:
    """The output message lists each tool call as the model asked for it, whatever the agent
    does with its objects afterwards (before, they were read when the response's span ended,
    after the agent had changed them)."""
    await run_script(otel_telemetry, _changing_after_telling(how), capture_content=True)

    chat = otel_telemetry.span("chat gpt-4o")
    output = validate_content(OUTPUT_MESSAGES, (chat.attributes or {})[OUTPUT_MESSAGES])[0]
    calls = [(p["id"], p["name"], p["arguments"]) for p in output["parts"]]
    assert calls == [
        ("c1", "get_weather", {"city": "Paris"}),
        ("c2", "get_time", {"zone": "CET"}),
    ]


def test_tool_calls_held_for_one_response_share_one_budget() -> None:
    """What a held response keeps of its tool calls' arguments is bounded by the capture
    budget for all of them together, not per call: a model asking for many large calls
    holds at most the budget, and every call is still listed."""
    room, parts = 1_000, []
    for i in range(10):
        part, used = told_part(f"c{i}", "search", {"q": "x" * 400}, room)
        room -= used
        parts.append(part)
    held = [json.dumps(p["arguments"], separators=(",", ":")) for p in parts]
    assert sum(len(text) for text in held[:3]) <= 1_000
    assert parts[0]["arguments"] == parts[1]["arguments"] == {"q": "x" * 400}  # whole
    assert held[3:] == ["{}"] * 7  # no room left: an object is whole or dropped, as in a cut
    assert [(p["id"], p["name"]) for p in parts] == [(f"c{i}", "search") for i in range(10)]


@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
async def test_a_call_is_held_for_its_tool_calls_only_when_content_is_captured(
    otel_telemetry: InMemoryTelemetry, capture: bool
) -> None:
    """With capture off a chat span ends as soon as its response and usage are in, as before;
    with capture on it waits for the tool calls told after it (then for the step's end)."""
    events = _asked_after_the_end("before")
    wrapper = otel_telemetry.wrapper(agent_name="weather", capture_content=capture)
    ended_at_the_first_tool_call: list[str] = []

    async def agent() -> Any:
        for event in events:
            if event is events[4]:  # the first ToolCall: the first response ended before it
                ended_at_the_first_tool_call.extend(sp.name for sp in otel_telemetry.spans())
            yield event

    [_ async for _ in wrapper(agent())]
    assert ("chat gpt-4o" in ended_at_the_first_tool_call) is not capture
    assert otel_telemetry.open_spans() == []


async def test_capture_on_agent_span_system_instructions_and_final(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """What an instrumented agent adds: the run's messages, system prompt and final answer."""
    settings = dataclasses.replace(
        settings_from(
            {
                "agent_name": "weather",
                "tracer_provider": otel_telemetry.tracer_provider,
                "meter_provider": otel_telemetry.meter_provider,
                "capture_content": True,
            }
        ),
        input_messages=[{"role": "user", "content": "Hi"}],
        system_instructions="Answer in one line.",
    )
    events = [MessageDelta(text="Hello"), MessageFinal(text="Hello there")]

    async def stream() -> Any:
        for event in events:
            yield event

    assert [e async for e in traced(stream(), settings)] == events
    (agent,) = by_name(otel_telemetry)["invoke_agent weather"]
    assert validate_content(SYSTEM_INSTRUCTIONS, agent[SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": "Answer in one line."}
    ]
    assert validate_content(INPUT_MESSAGES, agent[INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
    ]
    assert validate_content(OUTPUT_MESSAGES, agent[OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Hello there"}],
            "finish_reason": "stop",
        }
    ]


@pytest.mark.parametrize(
    ("after", "answer"),
    [
        pytest.param(["42", " it is."], "42 it is.", id="told-after-the-last-call"),
        pytest.param([], "print(6 * 7)", id="none-after"),
    ],
)
async def test_the_runs_answer_is_the_text_told_after_its_last_call(
    otel_telemetry: InMemoryTelemetry, after: list[str], answer: str
) -> None:
    """An agent whose answer no model call produced (a code agent's code computes it, told as
    text after the call that wrote the code): the run's output is that text, once, and the
    call keeps its own; text told before a later call is not the answer. With none told after
    the last call, the run's answer is that call's."""
    events = [
        TextDelta("Thinking first."),  # before any call: not the answer
        LLMCallStart(model="gpt-4o", provider="openai"),
        TextDelta("print(6 * 7)"),
        LLMCallEnd(finish_reason="stop"),
        *(TextDelta(text) for text in after),
        StepBoundary(0),
    ]
    await run(events, otel_telemetry, capture_content=True)

    (agent,) = by_name(otel_telemetry)["invoke_agent weather"]
    (chat,) = by_name(otel_telemetry)["chat gpt-4o"]
    expected = [{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                 "finish_reason": "stop"}]  # fmt: skip
    assert validate_content(OUTPUT_MESSAGES, agent[OUTPUT_MESSAGES]) == expected
    assert agent["output.value"] == answer
    assert "gen_ai.output.type" not in agent  # no final event named the answer's type
    assert json.loads(chat[OUTPUT_MESSAGES])[0]["parts"] == [
        {"type": "text", "content": "print(6 * 7)"}
    ]


async def test_text_told_outside_any_call_is_kept_only_with_capture_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """With capture off, text told outside a call is not kept, and the run shows no output."""
    await run([TextDelta("secret"), TextDelta(SECRET)], otel_telemetry)

    for attributes in all_attribute_sets(otel_telemetry):
        assert not {OUTPUT_MESSAGES, "output.value"} & set(attributes)
        assert SECRET not in json.dumps(attributes)


# --- byte budget ---------------------------------------------------------------------------------

# Multi-byte UTF-8 on purpose: 2-, 3- and 4-byte characters next to ASCII.
TEXT = st.text(
    alphabet=st.sampled_from('ab z"\\\n\té€漢😀\u0000'), min_size=0, max_size=400
) | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60)


def budget_events(texts: list[str]) -> list[Any]:
    a, b, c, d = texts
    return [
        LLMCallStart(
            model="m",
            provider="openai",
            call_id="llm",
            messages=[
                Message(role="system", content=a),
                Message(role="user", content=b),
                Message(
                    role="assistant",
                    content=c,
                    tool_calls=[ToolCall(id="t0", function=FunctionCall("f", json.dumps([d])))],
                ),
                Message(role="tool", tool_call_id="t0", content=d),
            ],
        ),
        ReasoningDelta(d),
        TextDelta(a),
        TextDelta(b),
        ToolCall(id="t1", function=FunctionCall("lookup", json.dumps({"q": c, "r": [a, d]}))),
        LLMCallEnd(call_id="llm", finish_reason="tool_calls"),
        ToolResult(tool_call_id="t1", content={"hits": [b, c, d]}),
    ]


def check_within_budget(telemetry: InMemoryTelemetry, max_bytes: int) -> None:
    values = captured(telemetry)
    keys = {key for key, _ in values}
    assert keys == {INPUT_MESSAGES, OUTPUT_MESSAGES, TOOL_CALL_ARGUMENTS, TOOL_CALL_RESULT}
    for key, text in values:
        assert isinstance(text, str)
        assert len(text.encode("utf-8")) <= max_bytes, (key, max_bytes, text)
        validate_content(key, text)  # valid JSON, and the schema still holds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXT, min_size=4, max_size=4), max_bytes=st.integers(2, 3000))
def test_every_captured_value_stays_within_the_byte_budget(
    texts: list[str], max_bytes: int
) -> None:
    telemetry = run_sync(budget_events(texts), capture_content=ContentCapture(max_bytes=max_bytes))
    try:
        check_within_budget(telemetry, max_bytes)
    finally:
        telemetry.shutdown()


@pytest.mark.parametrize("max_bytes", [2, 16, 64, 200, 1024])
def test_large_multibyte_content_is_cut_to_the_budget(max_bytes: int) -> None:
    texts = ["😀" * 5000, "漢字" * 3000, "é" * 4000, "x" * 9000]
    telemetry = run_sync(budget_events(texts), capture_content=ContentCapture(max_bytes=max_bytes))
    try:
        check_within_budget(telemetry, max_bytes)
    finally:
        telemetry.shutdown()


def test_budget_cut_keeps_the_message_structure() -> None:
    """A tight budget cuts long text, never the part types and roles consumers key on."""
    telemetry = run_sync(
        budget_events(["A" * 3000, "B" * 3000, "C" * 3000, "D" * 3000]),
        capture_content=ContentCapture(max_bytes=900),
    )
    try:
        chat = by_name(telemetry)["chat m"][0]
        history = validate_content(INPUT_MESSAGES, chat[INPUT_MESSAGES])
        assert [m["role"] for m in history] == ["system", "user", "assistant", "tool"]
        assert [[p["type"] for p in m["parts"]] for m in history] == [
            ["text"],
            ["text"],
            ["text", "tool_call"],
            ["tool_call_response"],
        ]
        assert history[0]["parts"][0]["content"].endswith(TRUNCATION_MARK)
        (output,) = validate_content(OUTPUT_MESSAGES, chat[OUTPUT_MESSAGES])
        assert [p["type"] for p in output["parts"]] == ["reasoning", "text", "tool_call"]
        assert output["finish_reason"] == "tool_call"
    finally:
        telemetry.shutdown()


# --- fit_json directly ---------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=30,
)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=100, deadline=None)
@given(value=JSON_VALUES, max_bytes=st.integers(2, 2000))
def test_fit_json_is_valid_and_within_budget(value: Any, max_bytes: int) -> None:
    text = fit_json(value, max_bytes)
    json.loads(text)
    assert len(text.encode("utf-8")) <= max_bytes


@settings(max_examples=100, deadline=None)
@given(value=JSON_VALUES, slack=st.integers(0, 100))
def test_fit_json_is_the_identity_when_it_fits(value: Any, slack: int) -> None:
    full = compact(value)
    text = fit_json(value, len(full.encode("utf-8")) + slack)
    assert text == full
    assert json.loads(text) == value


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=6), max_bytes=st.integers(2, 1500))
def test_fit_json_of_messages_still_validates(texts: list[str], max_bytes: int) -> None:
    messages = [
        {"role": role, "parts": [{"type": "text", "content": text}]}
        for role, text in zip(["system", "user", "assistant"] * 2, texts)
    ]
    messages.append({"role": "tool", "parts": [{"type": "tool_call_response", "response": texts}]})
    text = fit_json(messages, max_bytes)
    assert len(text.encode("utf-8")) <= max_bytes
    for item in validate_content(INPUT_MESSAGES, text):
        assert item["role"] in {"system", "user", "assistant", "tool"}
        assert {p["type"] for p in item["parts"]} <= {"text", "tool_call_response"}


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=8), max_bytes=st.integers(2, 1500))
def test_fit_json_only_ever_shortens_strings(texts: list[str], max_bytes: int) -> None:
    """Each string is kept whole or cut (and marked) to something shorter, never longer."""
    kept = json.loads(fit_json({"items": texts}, max_bytes)).get("items", [])
    for original, text in zip(texts[len(texts) - len(kept) :], kept):
        if text != original:
            assert text.endswith(TRUNCATION_MARK)
            assert len(text) < len(original)
            assert original.startswith(text.removesuffix(TRUNCATION_MARK))


@pytest.mark.parametrize("max_bytes", [0, 1])
def test_fit_json_below_two_bytes_still_returns_json(max_bytes: int) -> None:
    json.loads(fit_json(["x" * 100], max_bytes))


# --- redaction -----------------------------------------------------------------------------------


def scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(SECRET, "[REDACTED]")
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


async def test_redactor_sees_every_kind_and_its_output_is_recorded(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    seen: list[tuple[ContentKind, Any]] = []

    def redact(kind: ContentKind, value: Any) -> Any:
        seen.append((kind, value))
        return scrub(value)

    hook: Redactor = redact
    events = rich_events()
    assert await run(events, otel_telemetry, capture_content=ContentCapture(redact=hook)) == events
    kinds = [kind for kind, _ in seen]
    assert set(kinds) == {"input_messages", "output_messages", "tool_arguments", "tool_result"}
    assert kinds.count("input_messages") == 2
    assert kinds.count("output_messages") == 2
    # The hook gets JSON-ready values: message parts, parsed arguments, the result as given.
    values = dict(seen)
    assert values["tool_arguments"] == {"city": "Zürich", "key": SECRET}
    # the hook runs after the default scrubber: a secret key's value reaches it as the marker
    assert values["tool_result"] == {"temp": 18, "token": "[REDACTED:key_name len=14]"}
    first_input = next(value for kind, value in seen if kind == "input_messages")
    assert first_input[0]["parts"][0]["type"] == "text"

    recorded = captured(otel_telemetry)
    assert {key for key, _ in recorded} == {
        INPUT_MESSAGES,
        OUTPUT_MESSAGES,
        TOOL_CALL_ARGUMENTS,
        TOOL_CALL_RESULT,
    }
    for key, text in recorded:
        assert SECRET not in text
        validate_content(key, text)
    (tool,) = by_name(otel_telemetry)["execute_tool get_weather"]
    assert json.loads(tool[TOOL_CALL_ARGUMENTS]) == {"city": "Zürich", "key": "[REDACTED]"}


async def test_redactor_returning_none_drops_the_attribute(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    def redact(kind: ContentKind, value: Any) -> Any:
        return None if kind in ("tool_result", "input_messages") else value

    await run(rich_events(), otel_telemetry, capture_content=ContentCapture(redact=redact))
    assert {key for key, _ in captured(otel_telemetry)} == {OUTPUT_MESSAGES, TOOL_CALL_ARGUMENTS}


@pytest.mark.internal_errors
async def test_redactor_that_raises_drops_the_value_logs_once_and_traces_on(
    otel_telemetry: InMemoryTelemetry,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(_guard, "_reported", set())
    calls: list[ContentKind] = []

    def redact(kind: ContentKind, value: Any) -> Any:
        calls.append(kind)
        raise RuntimeError("redactor bug")

    events = rich_events()
    with caplog.at_level(logging.DEBUG, logger="agent_otel"):
        received = await run(events, otel_telemetry, capture_content=ContentCapture(redact=redact))
    assert received == events  # the consumer is unaffected
    assert len(calls) == 6  # the hook was asked every time ...
    assert captured(otel_telemetry) == []  # ... and nothing unredacted was recorded
    # The run is traced as without capture: every span ended, no repairs needed.
    names = sorted(span.name for span in otel_telemetry.spans())
    expected = ["invoke_agent weather", "step 0", "step 1", "chat gpt-4o", "chat gpt-4o"]
    expected.append("execute_tool get_weather")
    assert names == sorted(expected)
    (agent,) = by_name(otel_telemetry)["invoke_agent weather"]
    assert "agent_otel.anomalies" not in agent
    chats = by_name(otel_telemetry)["chat gpt-4o"]
    assert [c.get("gen_ai.usage.input_tokens") for c in chats] == [40, 60]
    warnings = [
        r for r in caplog.records if r.name == "agent_otel" and r.levelno >= logging.WARNING
    ]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].exc_info is not None


# --- memory bound while streaming ----------------------------------------------------------------


@pytest.mark.parametrize("chunk", ["word ", "漢字😀é "])
def test_text_buffer_keeps_at_most_its_budget(chunk: str) -> None:
    buffer = TextBuffer(1000)
    for _ in range(5000):
        buffer.add(chunk)
    assert buffer.truncated
    text = buffer.text()
    assert text.endswith(TRUNCATION_MARK)
    kept = text.removesuffix(TRUNCATION_MARK)
    assert len(kept.encode("utf-8")) <= 1000
    assert len(kept.encode("utf-8")) >= 1000 - 4  # not cut needlessly short
    assert chunk * 10 in kept  # the beginning of the response is kept


def test_text_buffer_cut_leaves_no_hole() -> None:
    buffer = TextBuffer(5)
    for part in ("abc", "😀😀", "d"):  # the emoji does not fit: nothing after it is kept
        buffer.add(part)
    assert buffer.text() == "abc" + TRUNCATION_MARK


def test_text_buffer_under_budget_is_exact() -> None:
    buffer = TextBuffer(100)
    for part in ("Hé", "llo", " 😀"):
        buffer.add(part)
    assert not buffer.truncated
    assert buffer.text() == "Héllo 😀"


@pytest.mark.parametrize("chunk", ["token ", "漢😀"])
async def test_streaming_a_long_response_buffers_within_the_budget(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, chunk: str
) -> None:
    peaks: list[int] = []

    class MeasuredBuffer(TextBuffer):
        __slots__ = ()

        def add(self, text: str) -> None:
            super().add(text)
            peaks.append(sum(len(p.encode("utf-8")) for p in self._parts))

    monkeypatch.setattr(_capture, "TextBuffer", MeasuredBuffer)
    max_bytes = 2048
    events: list[Any] = [LLMCallStart(model="m", call_id="c")]
    events += [TextDelta(chunk) for _ in range(20_000)]
    events += [ReasoningDelta(chunk) for _ in range(2_000)]
    events += [LLMCallEnd(call_id="c", finish_reason="stop")]
    await run(events, otel_telemetry, capture_content=ContentCapture(max_bytes=max_bytes))
    assert len(peaks) == 22_000
    # the budget and the scrubber's margin: the text is scrubbed before it is cut to budget
    assert max(peaks) <= max_bytes + MARGIN
    (chat,) = by_name(otel_telemetry)["chat m"]
    text = chat[OUTPUT_MESSAGES]
    assert len(text.encode("utf-8")) <= max_bytes
    (output,) = validate_content(OUTPUT_MESSAGES, text)
    assert [p["type"] for p in output["parts"]] == ["reasoning", "text"]
    assert output["parts"][1]["content"].startswith(chunk * 10)


def test_schema_files_are_present() -> None:
    for key in SCHEMA_FILES:
        validate_content(key, "[]")

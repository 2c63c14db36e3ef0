"""What an instrumented run records: the allow-list, content capture, interrupts, wrappers."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from agent_contract.agent import (
    AgentInterruptedError,
    InterruptFinal,
    MessageFinal,
    PresetSpec,
    StructuredFinal,
    SubAgentSpec,
)
from agent_contract.examples import NonStreamingAgent, ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import Message, PhaseMarker, TextDelta
from agent_otel.decorating._instrument import instrument
from agent_otel.testing import InMemoryTelemetry
from test_instrument_support import USER, agent_spans

SECRET = "sk-TOPSECRET-7f3a"


class LiveTool:
    """A live tool object (like LangChain's StructuredTool) holding a credential."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.api_key = SECRET
        self.description = f"uses {SECRET}"

    def __repr__(self) -> str:
        return f"LiveTool({self.name}, {SECRET})"


def _run_kwargs() -> dict[str, Any]:
    preset = PresetSpec(name="p1", base_tool="flow", fixed_kwargs={"token": SECRET})
    return {
        "tools": [LiveTool("search"), {"name": "fetch", "api_key": SECRET}],
        "tool_names": ["lookup"],
        "presets": [preset],
        "subagents": [
            SubAgentSpec(
                name="helper",
                system_prompt=SECRET,
                tools=[LiveTool("inner")],
                presets=[preset],
                inline_skills=[{"name": "s", "content": SECRET}],
            )
        ],
        "system_message": f"system {SECRET}",
        "user_message": f"user {SECRET}",
        "response_format": {"title": SECRET},
        "strategy": "react",
        "interrupt_on": {"search": SECRET},
        "skills": ["summarise"],
        "inline_skills": [{"name": "inline", "content": SECRET}],
        "recursion_limit": 12,
        "thread_id": "thread-1",
        "resume": {"answer": SECRET},
        "resume_checkpoint_id": SECRET,
        "llm_provider": "openai",
        "checkpoint_provider": SECRET,
        "store_provider": SECRET,
        "llm_kwargs": {
            "model": "gpt-4o",
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 256,
            "api_key": SECRET,
            "base_url": f"https://{SECRET}.example",
            "extra_headers": {"Authorization": SECRET},
        },
        "role_param": SECRET,
    }


def _exported(telemetry: InMemoryTelemetry, drop: tuple[str, ...] = ()) -> str:
    """Every exported span (attributes, events, resource) and metric, as JSON text."""
    spans = [json.loads(s.to_json()) for s in telemetry.spans()]
    for span in spans:
        for key in drop:
            span["attributes"].pop(key, None)
    data = telemetry.metric_reader.get_metrics_data()
    metrics = data.to_json() if data is not None else ""
    return json.dumps(spans) + metrics


EXPECTED = {
    "gen_ai.agent.name": "scripted_streaming",
    "gen_ai.conversation.id": "thread-1",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.request.temperature": 0.2,
    "gen_ai.request.top_p": 0.9,
    "gen_ai.request.max_tokens": 256,
    "agent_otel.strategy": "react",
    "agent_otel.recursion_limit": 12,
    "agent_otel.tool_names": ("search", "fetch", "lookup"),
    "agent_otel.preset_names": ("p1",),
    "agent_otel.subagent_names": ("helper",),
    "agent_otel.skill_names": ("summarise", "inline"),
    "agent_otel.resumed": True,
}


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_allow_list_and_no_secret_anywhere(
    otel_telemetry: InMemoryTelemetry, capture: bool, entry: str, streaming: bool
) -> None:
    raw: Any = (
        ScriptedStreamingAgent([MessageFinal(text="ok")]) if streaming else NonStreamingAgent("ok")
    )
    agent = instrument(
        raw, capture_content=capture, name="scripted_streaming", **otel_telemetry.providers()
    )
    call = _run_kwargs()
    if entry == "run":
        await agent.run(**call)
    else:
        [e async for e in agent.astream(**call)]
    assert raw.last_kwargs == call  # passed through untouched, nothing added
    [span] = agent_spans(otel_telemetry)
    attributes = dict(span.attributes or {})
    for key, value in EXPECTED.items():
        assert attributes[key] == value, key
    exported = _exported(otel_telemetry)
    if not capture:
        assert SECRET not in exported
        assert "gen_ai.system_instructions" not in attributes
        assert "gen_ai.input.messages" not in attributes
        return
    system = json.loads(str(attributes["gen_ai.system_instructions"]))
    assert system == [{"type": "text", "content": f"system {SECRET}"}]
    messages = json.loads(str(attributes["gen_ai.input.messages"]))
    assert messages == [{"role": "user", "parts": [{"type": "text", "content": f"user {SECRET}"}]}]
    # with capture on, only the two messages (and the root's input preview, the user's text
    # for Phoenix's trace list) carry the secret: nothing else of the call
    assert attributes["input.value"] == f"user {SECRET}"
    captured = ("gen_ai.system_instructions", "gen_ai.input.messages", "input.value")
    assert SECRET not in _exported(otel_telemetry, drop=captured)


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_config_and_messages(
    otel_telemetry: InMemoryTelemetry, capture: bool, entry: str
) -> None:
    raw = ScriptedAgent([TextDelta("hi")])
    agent = instrument(raw, capture_content=capture, **otel_telemetry.providers())
    messages = [Message(role="system", content="be brief"), Message(role="user", content=SECRET)]
    config = {"conversation_id": "conv-9", "api_key": SECRET}
    if entry == "stream":
        [e async for e in agent.stream(messages, config)]
    else:
        await agent.invoke(messages, config=config)
    assert raw.last_messages is messages
    assert raw.last_config is not None
    assert {k: v for k, v in raw.last_config.items() if k != "otel_context"} == config
    assert config == {"conversation_id": "conv-9", "api_key": SECRET}  # the caller's, untouched
    [span] = agent_spans(otel_telemetry)
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.conversation.id"] == "conv-9"
    assert attributes["gen_ai.agent.name"] == "scripted"
    if capture:
        parts = json.loads(str(attributes["gen_ai.input.messages"]))
        assert parts[1] == {"role": "user", "parts": [{"type": "text", "content": SECRET}]}
    else:
        assert "gen_ai.input.messages" not in attributes
        assert SECRET not in _exported(otel_telemetry)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (42, "42"),
        (uuid.UUID(int=5), "00000000-0000-0000-0000-000000000005"),
    ],
    ids=["int", "UUID"],
)
async def test_a_call_id_given_as_an_int_or_a_uuid_is_recorded_as_its_text(
    otel_telemetry: InMemoryTelemetry, value: Any, text: str
) -> None:
    """A ``config`` id or an Agent-contract ``thread_id`` as a database or LangGraph hands it
    out (``uuid4()``, an int key) was dropped without a word, while the same value given as
    the option was recorded: each is recorded as its text, as the options read it."""
    config = {"conversation_id": value, "session_id": value, "user_id": value}
    await instrument(ScriptedAgent([TextDelta("hi")]), **otel_telemetry.providers()).invoke(
        USER, config=config
    )
    await instrument(NonStreamingAgent(), **otel_telemetry.providers()).run(thread_id=value)
    event_run, agent_run = agent_spans(otel_telemetry)
    keys = ("gen_ai.conversation.id", "session.id", "user.id")
    assert [(event_run.attributes or {}).get(key) for key in keys] == [text, text, text]
    assert (agent_run.attributes or {}).get("gen_ai.conversation.id") == text


async def test_name_override_and_defaults(otel_telemetry: InMemoryTelemetry) -> None:
    await instrument(ScriptedAgent([]), name="custom", **otel_telemetry.providers()).invoke(USER)
    await instrument(NonStreamingAgent(), **otel_telemetry.providers()).run()

    class Anonymous:
        async def run(self, **kwargs: Any) -> Any:
            return 1

    await instrument(Anonymous(), **otel_telemetry.providers()).run()
    names = [s.name for s in agent_spans(otel_telemetry)]
    assert names == ["invoke_agent custom", "invoke_agent non_streaming", "invoke_agent Anonymous"]
    description = dict(agent_spans(otel_telemetry)[1].attributes or {})["gen_ai.agent.description"]
    assert description == NonStreamingAgent.tool_description


# --- interrupts are a pause, not a failure -----------------------------------------------------
INTERRUPT = InterruptFinal(interrupt_id="int-1", payload={"options": [SECRET]}, reason="approve?")


@pytest.mark.parametrize("entry", ["run", "astream"])
async def test_interrupt_final_is_an_event(otel_telemetry: InMemoryTelemetry, entry: str) -> None:
    agent = instrument(ScriptedStreamingAgent([INTERRUPT]), **otel_telemetry.providers())
    if entry == "run":
        with pytest.raises(AgentInterruptedError) as caught:
            await agent.run()
        assert caught.value.interrupts == [INTERRUPT]
    else:
        assert [e async for e in agent.astream()] == [INTERRUPT]
    [span] = agent_spans(otel_telemetry)
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {})["agent_otel.end_reason"] == "interrupted"
    [event] = [e for e in span.events if e.name == "agent_otel.interrupt"]
    assert dict(event.attributes or {}) == {
        "agent_otel.interrupt.id": "int-1",
        "agent_otel.interrupt.reason": "approve?",
    }
    assert SECRET not in _exported(otel_telemetry)


@pytest.mark.parametrize("entry", ["run", "astream"])
async def test_interrupted_error_from_run(otel_telemetry: InMemoryTelemetry, entry: str) -> None:
    error = AgentInterruptedError(interrupts=[INTERRUPT])
    agent = instrument(NonStreamingAgent(error=error), **otel_telemetry.providers())
    with pytest.raises(AgentInterruptedError) as caught:
        if entry == "run":
            await agent.run(resume="yes")
        else:
            [e async for e in agent.astream()]
    assert caught.value is error
    [span] = agent_spans(otel_telemetry)
    assert span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    assert attributes["agent_otel.end_reason"] == "interrupted"
    assert "error.type" not in attributes
    assert [e.name for e in span.events] == ["exception"]
    for point in otel_telemetry.histograms()["gen_ai.invoke_agent.duration"]:
        assert "error.type" not in dict(point.attributes or {})
    assert SECRET not in _exported(otel_telemetry)


async def test_structured_final_is_json(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(
        ScriptedStreamingAgent([StructuredFinal(data={"a": 1})]), **otel_telemetry.providers()
    )
    assert await agent.run() == {"a": 1}
    assert await instrument(NonStreamingAgent({"b": 2}), **otel_telemetry.providers()).run() == {
        "b": 2
    }
    for span in agent_spans(otel_telemetry):
        assert dict(span.attributes or {})["gen_ai.output.type"] == "json"


@pytest.mark.parametrize("entry", ["run", "astream"])
async def test_a_requested_output_format_is_the_output_type(
    otel_telemetry: InMemoryTelemetry, entry: str
) -> None:
    # gen_ai.output.type is "the content type requested by the client", conditionally
    # required when the request includes an output format: a run given a response_format (a
    # JSON schema or a pydantic class) asked for JSON, whatever it answered, or if it failed;
    # a run given none says what its final answer was.
    class Answer(BaseModel):
        city: str

    runs: list[tuple[Any, dict[str, Any]]] = [
        (
            ScriptedStreamingAgent([MessageFinal(text='{"city": "Paris"}')]),
            {"response_format": Answer},
        ),
        (NonStreamingAgent(error=ValueError("no")), {"response_format": {"type": "object"}}),
        (ScriptedStreamingAgent([MessageFinal(text="Paris")]), {}),
    ]
    for raw, call in runs:
        agent = instrument(raw, **otel_telemetry.providers())
        with contextlib.suppress(ValueError):
            if entry == "run":
                await agent.run(user_message="q", **call)
            else:
                [e async for e in agent.astream(user_message="q", **call)]
    types = [
        dict(s.attributes or {}).get("gen_ai.output.type") for s in agent_spans(otel_telemetry)
    ]
    assert types == ["json", "json", "text"]


# --- the caller's own stream_wrapper still applies, composed with ours ---------------------
async def test_caller_stream_wrapper_composed(otel_telemetry: InMemoryTelemetry) -> None:
    seen_by_caller: list[Any] = []
    extra = [PhaseMarker("caller"), TextDelta(" (annotated)")]

    def caller_wrapper(events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async def wrapped() -> AsyncIterator[Any]:
            async for event in events:
                seen_by_caller.append(event)
                yield event
            for event in extra:  # ours never sees what the caller's wrapper adds
                yield event

        return wrapped()

    raw_events = [TextDelta("a"), TextDelta("b")]
    agent = instrument(ScriptedAgent(raw_events), **otel_telemetry.providers())
    result = await agent.invoke(USER, stream_wrapper=caller_wrapper)
    assert result.text == "ab (annotated)"
    assert seen_by_caller == raw_events
    assert all(a is b for a, b in zip(seen_by_caller, raw_events))
    [span] = agent_spans(otel_telemetry)
    assert dict(span.attributes or {})["agent_otel.end_reason"] == "exhausted"
    assert "agent_otel.phase" not in dict(span.attributes or {})

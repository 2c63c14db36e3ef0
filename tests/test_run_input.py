"""The messages a run was invoked with reach its ``invoke_agent`` span, however it is traced:
``agent.invoke(messages, stream_wrapper=otel_wrapper())``, an agent of either contract under
``instrument()`` or the instrumentor. Content stays private by default: with capture off the
messages are not even looked at."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.agent import Agent
from agent_contract.examples import ScriptedAgent
from agent_contract.invoke import collect, invoke_messages
from agent_contract.protocol import (
    AgentEvent,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
)
from agent_otel import ContentCapture, instrument
from agent_otel.testing import InMemoryTelemetry

CAPTURE = ContentCapture(spans=True)
QUESTION = "Which spans does a run make?"
ANSWER = "A run, its steps, its calls."
SCRIPT = [
    LLMCallStart(model="m", provider="openai"),  # carries no messages, as the quickstart's
    TextDelta(ANSWER),
    LLMCallEnd(model="m", finish_reason="stop"),
    StepBoundary(0),
]
HISTORY = [
    Message(role="system", content="Be brief."),
    Message(role="user", content="earlier question"),
    Message(role="assistant", content="earlier answer"),
    Message(role="user", content=QUESTION),
]


def _root(telemetry: InMemoryTelemetry, name: str = "invoke_agent scripted") -> dict[str, Any]:
    [root] = [s for s in telemetry.spans() if s.name == name]
    return dict(root.attributes or {})


class _Untouchable(list[Message]):
    """Messages that fail the test when anything reads them."""

    def __iter__(self) -> Iterator[Message]:
        raise AssertionError("the messages were read with content capture off")

    def __len__(self) -> int:
        raise AssertionError("the messages were read with content capture off")


async def test_invoke_messages_reach_the_run_through_the_stream_wrapper(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedAgent(SCRIPT)
    wrapper = otel_telemetry.wrapper(agent_name="scripted", capture_content=CAPTURE)

    result = await agent.invoke(HISTORY, stream_wrapper=wrapper)

    assert result.text == ANSWER
    root = _root(otel_telemetry)
    messages = json.loads(root["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["parts"] == [{"type": "text", "content": QUESTION}]
    assert root["input.value"] == QUESTION  # the trace list's input preview
    assert root["output.value"] == ANSWER


async def test_with_capture_off_the_invoke_messages_are_never_read(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedAgent(SCRIPT)
    wrapper = otel_telemetry.wrapper(agent_name="scripted")

    result = await agent.invoke(_Untouchable(HISTORY), stream_wrapper=wrapper)

    assert result.text == ANSWER
    root = _root(otel_telemetry)
    for key in ("gen_ai.input.messages", "input.value", "output.value"):
        assert key not in root


class _ReadOnce(LLMCallStart):
    """A chat start whose ``messages`` count their reads (an adapter builds them on read);
    named ``LLMCallStart``, as events are recognised by class name."""

    __slots__ = ("reads",)

    @property  # type: ignore[override]
    def messages(self) -> list[Message] | None:
        self.reads += 1
        return [Message(role="user", content=QUESTION)]

    @messages.setter
    def messages(self, value: list[Message] | None) -> None:
        self.reads = 0


_ReadOnce.__name__ = _ReadOnce.__qualname__ = "LLMCallStart"


@pytest.mark.parametrize("capture", [CAPTURE, None], ids=["capture", "no-capture"])
async def test_a_chat_starts_messages_are_read_only_with_capture_on(
    capture: ContentCapture | None, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture off the messages of a call are never looked at, so an adapter that reads
    them from its framework's request only when read (``sources._history``) costs nothing."""
    start = _ReadOnce(model="m")
    script = [start, TextDelta(ANSWER), LLMCallEnd(model="m"), StepBoundary(0)]
    wrapper = otel_telemetry.wrapper(agent_name="scripted", capture_content=capture)

    await collect(ScriptedAgent(script).stream([]), wrapper)

    [chat] = [s for s in otel_telemetry.spans() if s.name == "chat m"]
    assert start.reads == (1 if capture else 0)
    assert ("gen_ai.input.messages" in (chat.attributes or {})) is bool(capture)
    assert ("input.value" in _root(otel_telemetry)) is bool(capture)


async def test_a_run_started_inside_the_run_never_gets_the_outer_invokes_messages(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    inner_wrapper = otel_telemetry.wrapper(agent_name="inner", capture_content=CAPTURE)

    async def inner() -> AsyncIterator[AgentEvent]:
        for event in SCRIPT:
            yield event

    class Outer(ScriptedAgent):
        def stream(self, messages: list[Message], config: Any = None) -> AsyncIterator[Any]:
            async def events() -> AsyncIterator[Any]:
                async for event in inner_wrapper(inner()):  # a sub-agent, wrapped by hand
                    yield event

            return events()

    outer = otel_telemetry.wrapper(agent_name="outer", capture_content=CAPTURE)
    await Outer([]).invoke(HISTORY, stream_wrapper=outer)

    assert _root(otel_telemetry, "invoke_agent outer")["input.value"] == QUESTION
    assert "gen_ai.input.messages" not in _root(otel_telemetry, "invoke_agent inner")


async def test_the_stream_wrapper_sees_the_messages_only_while_it_is_called() -> None:
    seen: list[object] = []

    def wrapper(stream: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        seen.append(invoke_messages())

        async def wrapped() -> AsyncIterator[AgentEvent]:
            seen.append(invoke_messages())  # consumption: the wrapper call is over
            async for event in stream:
                yield event

        return wrapped()

    await ScriptedAgent(SCRIPT).invoke(HISTORY, stream_wrapper=wrapper)
    assert seen == [HISTORY, None]
    assert invoke_messages() is None

    seen.clear()
    await collect(ScriptedAgent(SCRIPT).stream(HISTORY), wrapper)  # no messages given
    assert seen == [None, None]


async def test_a_wrapper_that_raises_leaves_no_messages_behind() -> None:
    def broken(stream: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        raise LookupError("the caller's own wrapper failed")

    with pytest.raises(LookupError):
        await ScriptedAgent(SCRIPT).invoke(HISTORY, stream_wrapper=broken)
    assert invoke_messages() is None


async def test_an_instrumented_agents_invoke_records_its_messages(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(
        ScriptedAgent(SCRIPT),
        **otel_telemetry.providers(),
        capture_content=CAPTURE,
    )
    await agent.invoke(HISTORY)
    assert _root(otel_telemetry)["input.value"] == QUESTION


async def test_an_instrumented_agent_contract_run_records_its_user_message(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    class Greeter(Agent):
        tool_name = "greeter"

        async def run(self, **kwargs: Any) -> str:
            return f"hello, {kwargs['user_message']}"

    agent = instrument(
        Greeter(),
        **otel_telemetry.providers(),
        capture_content=CAPTURE,
    )
    assert await agent.run(user_message=QUESTION) == f"hello, {QUESTION}"
    root = _root(otel_telemetry, "invoke_agent greeter")
    assert root["input.value"] == QUESTION
    assert root["output.value"] == f"hello, {QUESTION}"


_VALUES = st.one_of(
    st.none(), st.text(max_size=20), st.integers(), st.binary(max_size=8),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)  # fmt: skip


@pytest.mark.internal_errors
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.one_of(st.lists(_VALUES, max_size=5), st.just(_Untouchable())))
async def test_whatever_the_messages_are_the_agent_runs_unharmed(messages: Any) -> None:
    telemetry = InMemoryTelemetry()
    try:
        agent = ScriptedAgent(SCRIPT)
        wrapper = telemetry.wrapper(agent_name="scripted", capture_content=CAPTURE)
        result = await agent.invoke(messages, stream_wrapper=wrapper)
        assert result.text == ANSWER
        spans: list[ReadableSpan] = telemetry.spans()
        assert [s.name for s in spans if s.name.startswith("invoke_agent")] == [
            "invoke_agent scripted"
        ]
    finally:
        telemetry.shutdown()

"""The four LLM SDK sources, each driven by its real SDK over a mock HTTP transport.

Every source (``_cases``) must produce the same contract events, keep the SDK's objects for
the caller, and trace to the same tree with tokens counted once, whatever way the run ends.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.invoke import sum_usage
from agent_contract.protocol import (
    AgentEvent,
    Error,
    LLMCallEnd,
    LLMCallStart,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_contract.sources._endpoint import EndpointCallStart
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import CASES, HISTORY, Case, after_text, ids, weather
from ._http import Body, split
from ._trace import ToolLoop, attributes, tokens

pytest.importorskip("openai")
pytest.importorskip("anthropic")


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_one_call_becomes_contract_events_with_the_providers_names(case: Case) -> None:
    events = [e async for e in case.source(case.client(case.body(True)))(HISTORY)]

    told = [e for e in events if not isinstance(e, Usage)]
    assert [type(e) for e in told] == [
        EndpointCallStart, ReasoningDelta, TextDelta, TextDelta, ToolCall, ToolCall, LLMCallEnd,
    ]  # fmt: skip
    assert isinstance(events[-2], Usage)  # the call's usage, last (Anthropic's input at once)
    start, reasoning, *texts, paris, rome, end = told
    usage = sum_usage([e for e in events if isinstance(e, Usage)])
    assert isinstance(start, LLMCallStart) and start.messages is HISTORY
    assert (start.model, start.provider) == (case.request_model, case.provider)
    assert isinstance(start, EndpointCallStart)  # the mock client's server
    assert (start.server_address, start.server_port) == ("mock.invalid", 80)
    assert start.params["stream"] is True
    assert start.params.get("temperature", start.params.get("max_tokens")) in (0.2, 512)
    assert "api_key" not in start.params  # credentials never ride on the event
    assert isinstance(reasoning, ReasoningDelta) and reasoning.text == "Two cities."
    assert "".join(t.text for t in texts if isinstance(t, TextDelta)) == "Checking both."
    assert isinstance(paris, ToolCall) and isinstance(rome, ToolCall)
    assert (paris.function.name, paris.function.arguments) == ("weather", _recorded.PARIS)
    assert (rome.function.name, rome.function.arguments) == ("weather", _recorded.ROME)
    assert paris.id and rome.id and paris.id != rome.id
    assert usage == Usage(
        input_tokens=case.input_tokens, output_tokens=30, total_tokens=150,
        cache_read_tokens=64, cache_creation_tokens=case.cache_creation, reasoning_tokens=12,
        model=case.response_model,
    )  # fmt: skip
    assert end == LLMCallEnd(
        model=case.response_model, finish_reason=case.finish[0], response_id=case.response_id
    )


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_the_caller_keeps_every_sdk_object_and_every_event_passes_unchanged(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    kept: list[Any] = []
    produced: list[AgentEvent] = []
    source = case.source(case.client(case.body(True)), kept.append)

    async def tap() -> AsyncIterator[AgentEvent]:
        async for event in source(HISTORY):
            produced.append(event)
            yield event

    seen = await run_script(otel_telemetry, tap(), agent_name="agent")

    assert len(seen) == len(produced) == 8 + (case.name == "anthropic_messages")  # its input
    assert all(a is b for a, b in zip(seen, produced))  # the very objects, in order
    assert case.sdk_type in {type(chunk).__name__ for chunk in kept}
    assert len(kept) >= 8  # every SDK object streamed reaches the sink


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_tool_loop_traces_the_same_tree_with_tokens_counted_once(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    client = case.client(case.body(True), case.body(False))
    agent = ToolLoop(case.source(client), {"weather": weather})

    result = await agent.invoke(HISTORY, stream_wrapper=otel_telemetry.wrapper(agent_name="agent"))

    assert result.text == "Sunny in both."
    assert [m.content for m in result.steps[0].tool_messages] == ["sunny in Paris", "sunny in Rome"]
    chat = f"chat {case.request_model}"
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", [chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * case.input_tokens  # on chat spans only: counted once
    assert tokens(otel_telemetry, "gen_ai.usage.output_tokens") == 60
    agent_span = attributes(otel_telemetry, "invoke_agent")
    assert agent_span["agent_otel.usage.input_tokens"] == 2 * case.input_tokens
    assert agent_span["agent_otel.end_reason"] == "exhausted"
    chats = [dict(s.attributes or {}) for s in otel_telemetry.spans() if s.name == chat]
    assert [c["gen_ai.response.finish_reasons"] for c in chats] == [
        (case.finish[0],),
        (case.finish[1],),
    ]
    assert {c["gen_ai.provider.name"] for c in chats} == {case.provider}
    assert {c["gen_ai.response.model"] for c in chats} == {case.response_model}
    assert {c["gen_ai.response.id"] for c in chats} == {case.response_id}
    assert {c["gen_ai.usage.cache_read.input_tokens"] for c in chats} == {64}
    assert {c["gen_ai.usage.reasoning.output_tokens"] for c in chats} == {12}
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_each_call_shows_the_messages_it_sent_and_the_run_its_question_and_answer(
    case: Case, capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture on the run shows the question and the answer, each chat span the history
    it sent (the second call's with both tool results) and its response (the first's tool
    calls, finishing with ``tool_call`` whatever the provider calls it); with capture off, no
    content."""
    client = case.client(case.body(True), case.body(False))
    agent = ToolLoop(case.source(client), {"weather": weather})
    wrapper = otel_telemetry.wrapper(agent_name="agent", capture_content=capture)

    await agent.invoke(HISTORY, stream_wrapper=wrapper)

    chat = f"chat {case.request_model}"
    chats = [dict(s.attributes or {}) for s in otel_telemetry.spans() if s.name == chat]
    root = attributes(otel_telemetry, "invoke_agent")
    content = {"gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value"}
    if not capture:
        assert not any(content & set(a) for a in [root, *chats])
        return
    assert (root["input.value"], root["output.value"]) == ("Weather?", "Sunny in both.")
    first, second = (json.loads(c["gen_ai.input.messages"]) for c in chats)
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    results = [m["parts"][0]["response"] for m in second if m["role"] == "tool"]
    assert results == ["sunny in Paris", "sunny in Rome"]
    asked, answered = (json.loads(c["gen_ai.output.messages"]) for c in chats)
    calls = [p for p in asked[0]["parts"] if p["type"] == "tool_call"]  # the conventions' names
    assert [(p["name"], p["arguments"]) for p in calls] == [
        ("weather", json.loads(_recorded.PARIS)),
        ("weather", json.loads(_recorded.ROME)),
    ]
    assert all(p["id"] for p in calls) and asked[0]["finish_reason"] == "tool_call"
    assert answered[0]["finish_reason"] == "stop"


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_an_error_mid_stream_comes_out_as_the_sdks_own_exception(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    parts = split(case.body(False))
    body = b"".join(parts[: after_text(parts)]) + case.error()  # some text, then the error
    raised: list[BaseException] = []

    async def recorded() -> AsyncIterator[AgentEvent]:
        try:
            async for event in case.source(case.client(body))(HISTORY):
                yield event
        except Exception as error:
            raised.append(error)
            raise

    seen: list[AgentEvent] = []
    with pytest.raises(Exception) as caught:
        async for event in otel_telemetry.wrapper(agent_name="agent")(recorded()):
            seen.append(event)

    assert [caught.value] == raised  # the same object the SDK raised
    assert type(caught.value).__module__.split(".")[0] in {"openai", "anthropic", "litellm"}
    assert any(isinstance(e, TextDelta) for e in seen)  # what came before was delivered
    chat = attributes(otel_telemetry, "chat ")
    assert chat["error.type"] == type(caught.value).__qualname__
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "error"
    assert otel_telemetry.open_spans() == []


async def _stopped_after_first_text(case: Case, telemetry: InMemoryTelemetry) -> Body:
    """``case``'s streamed answer traced, its consumer stopping at the first text and closing
    the stream; the response body it read from."""
    body = Body(split(case.body(True)))
    events = telemetry.wrapper(agent_name="agent")(case.source(case.client(body.response))(HISTORY))
    async for event in events:
        if isinstance(event, TextDelta):
            break
    await events.aclose()
    return body


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_consumer_stopping_early_closes_the_http_response(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    body = await _stopped_after_first_text(case, otel_telemetry)

    assert body.closed and body.sent < len(body.events)
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "closed_early"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_cancelling_a_stalled_stream_ends_every_span(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    parts = split(case.body(True))
    body = Body(parts, hang_after=after_text(parts))
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in otel_telemetry.wrapper(agent_name="agent")(
            case.source(case.client(body.response))(HISTORY)
        ):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first_text.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert body.closed
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "cancelled"
    assert attributes(otel_telemetry, "chat ")["error.type"] == "CancelledError"
    assert otel_telemetry.open_spans() == []


_STREAM = {"openai_chat": "stream_chat", "openai_responses": "stream_responses",
           "anthropic_messages": "stream_messages", "litellm_chat": "stream_litellm"}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_the_callers_own_stream_params_reach_the_sdk_once(case: Case) -> None:
    """``stream=True`` (and, where the source sets it, ``stream_options``) from the caller:
    one request, the caller's options beside the source's, and usage still read."""
    import httpx2 as httpx

    seen: list[httpx.Request] = []
    client = case.client(case.body(False), seen=seen)
    params: dict[str, Any] = {"stream": True}
    if case.name == "anthropic_messages":
        params["max_tokens"] = 512
    chat_shaped = case.name in ("openai_chat", "litellm_chat")
    if chat_shaped:
        params["stream_options"] = {"include_obfuscation": False}
    if case.name == "litellm_chat":
        params["api_key"] = "sk-never-recorded"

    source = getattr(importlib.import_module(f"agent_contract.sources.{case.name}"),
                     _STREAM[case.name])  # fmt: skip
    events = [e async for e in source(client, HISTORY, case.request_model, **params)]

    [request] = seen
    body = json.loads(request.content)
    assert body["stream"] is True
    if chat_shaped:
        assert body["stream_options"] == {"include_usage": True, "include_obfuscation": False}
    assert any(isinstance(e, Usage) for e in events)
    assert isinstance(events[-1], LLMCallEnd)


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_request_refused_before_its_first_chunk_fails_its_own_chat_span(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """A 429 (no chunk ever came): the chat span exists, marked with the SDK's error."""
    import httpx2 as httpx

    def refused(request: httpx.Request) -> httpx.Response:
        headers = {"x-should-retry": "false"}  # the SDKs' own "do not retry" header
        error = {"error": {"message": "rate limited", "type": "rate_limit_error"}}
        return httpx.Response(429, headers=headers, json=error, request=request)

    client = case.client(case.body(True), refused)
    agent = ToolLoop(case.source(client), {"weather": weather})
    with pytest.raises(Exception) as caught:
        await agent.invoke(HISTORY, stream_wrapper=otel_telemetry.wrapper(agent_name="agent"))

    assert type(caught.value).__module__.split(".")[0] in {"openai", "anthropic", "litellm"}
    chat = f"chat {case.request_model}"
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", [chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    first, second = [s for s in otel_telemetry.spans() if s.name == chat]
    assert first.status.status_code is not StatusCode.ERROR
    assert second.status.status_code is StatusCode.ERROR
    assert (second.attributes or {})["error.type"] == type(caught.value).__qualname__
    steps = [s for s in otel_telemetry.spans() if s.name.startswith("step ")]
    assert steps[0].status.status_code is not StatusCode.ERROR  # not the previous step
    assert otel_telemetry.open_spans() == []


CUT_QUIETLY = [c for c in CASES if c.name != "litellm_chat"]  # LiteLLM raises on a cut


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_stream_cut_short_is_no_success_and_yields_no_half_tool_call(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """The connection drops inside a tool call's arguments, with no end marker: the SDK ends
    the stream quietly, so the source tells the cut (LiteLLM raises its own error)."""
    parts = split(case.body(True))
    cut = next(i for i, part in enumerate(parts) if b"city" in part) + 1  # '{"city": '
    source = case.source(case.client(b"".join(parts[:cut])))(HISTORY)
    chat = f"chat {case.request_model}"
    if case.name == "litellm_chat":  # LiteLLM's stream raises: the call fails with it
        with pytest.raises(Exception) as caught:
            await run_script(otel_telemetry, source, agent_name="agent")
        assert attributes(otel_telemetry, chat)["error.type"] == type(caught.value).__qualname__
        return
    events = await run_script(otel_telemetry, source, agent_name="agent")

    assert not [e for e in events if isinstance(e, ToolCall)]  # no agent runs half a call
    (error,) = [e for e in events if isinstance(e, Error)]
    assert (error.error_type, error.fatal) == ("stream_incomplete", False)
    assert "weather" in error.message  # the call left unfinished, named
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason is None
    assert events.index(error) < len(events) - 1  # inside the call, before its end
    (span,) = [s for s in otel_telemetry.spans() if s.name == chat]
    assert span.status.status_code is StatusCode.ERROR
    recorded = dict(span.attributes or {})
    assert recorded["error.type"] == "stream_incomplete"
    assert recorded["agent_otel.incomplete"] is True
    assert "gen_ai.response.finish_reasons" not in recorded
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_stream_ending_at_its_end_marker_tells_no_cut(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    events = await run_script(
        otel_telemetry, case.source(case.client(case.body(True)))(HISTORY), agent_name="agent"
    )
    assert not [e for e in events if isinstance(e, Error)]
    assert len([e for e in events if isinstance(e, ToolCall)]) == 2
    chat = attributes(otel_telemetry, f"chat {case.request_model}")
    assert "agent_otel.incomplete" not in chat and "error.type" not in chat


@pytest.mark.parametrize("case", CUT_QUIETLY, ids=[c.name for c in CUT_QUIETLY])
async def test_a_stream_cut_after_its_tool_calls_keeps_the_whole_ones(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """Cut after the last argument fragment, before the end marker: every call's arguments
    are whole JSON, so each is yielded; the call is still told as cut short."""
    parts = split(case.body(True))
    last = max(i for i, part in enumerate(parts[:-1]) if b"Rome" in part)  # not the end's echo
    cut = min(last + 1, len(parts) - 1)
    source = case.source(case.client(b"".join(parts[:cut])))(HISTORY)
    events = await run_script(otel_telemetry, source, agent_name="agent")

    calls = [e.function.arguments for e in events if isinstance(e, ToolCall)]
    assert calls == [_recorded.PARIS, _recorded.ROME]
    (error,) = [e for e in events if isinstance(e, Error)]
    assert error.error_type == "stream_incomplete" and "cut short" not in error.message
    chat = attributes(otel_telemetry, f"chat {case.request_model}")
    assert chat["agent_otel.incomplete"] is True


@pytest.mark.parametrize("case", CUT_QUIETLY, ids=[c.name for c in CUT_QUIETLY])
async def test_a_stream_cut_inside_an_sse_event_is_told_the_same(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """The connection drops in the middle of an event's bytes: the SDK drops the half event,
    and the call is told cut short like any other."""
    parts = split(case.body(True))
    i = next(i for i, part in enumerate(parts) if b"city" in part)
    body = b"".join(parts[:i]) + parts[i][: len(parts[i]) // 2]
    events = await run_script(
        otel_telemetry, case.source(case.client(body))(HISTORY), agent_name="agent"
    )
    assert [e.error_type for e in events if isinstance(e, Error)] == ["stream_incomplete"]
    assert not [e for e in events if isinstance(e, ToolCall)]
    chat = attributes(otel_telemetry, f"chat {case.request_model}")
    assert chat["agent_otel.incomplete"] is True


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_stream_abandoned_midway_keeps_the_tokens_told_so_far(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """The consumer stops reading after the first text: the call's span ends with what the
    provider had told of its usage by then. Anthropic's ``message_start`` tells the prompt's
    tokens (billed whatever the stream's end): 20 fresh, 64 read from the cache, the cache
    write's tokens, all input by the GenAI conventions; the other APIs tell usage only at
    their stream's end, never reached."""
    await _stopped_after_first_text(case, otel_telemetry)

    chat = attributes(otel_telemetry, "chat ")
    told = {k: v for k, v in chat.items() if k.startswith("gen_ai.usage.")}
    if case.name == "anthropic_messages":
        assert told == {
            "gen_ai.usage.input_tokens": 20 + 64 + case.cache_creation,
            "gen_ai.usage.cache_read.input_tokens": 64,
            "gen_ai.usage.cache_creation.input_tokens": case.cache_creation,
        }
        run = attributes(otel_telemetry, "invoke_agent")
        assert run["agent_otel.usage.input_tokens"] == 20 + 64 + case.cache_creation
    else:
        assert told == {}
    assert otel_telemetry.open_spans() == []

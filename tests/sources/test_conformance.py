"""Every framework adapter, the same scripted conversation, the same assertions (``_conformance``).

The script (``_script``): the model thinks, says a few words and asks for ``weather`` and
``forecast`` in parallel; ``forecast`` fails; the model answers. Each row must trace it as
``invoke_agent > step 0 > [chat, execute_tool weather, execute_tool forecast], step 1 > chat``:
one chat span per model call, tokens once (cache and reasoning where the framework carries
them), the tool ids, the failed tool marked with ``error.type``, and no span left open after
the run ends by exhausting, breaking, cancelling or raising.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import traceback
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.agent import Agent
from agent_contract.invoke import StreamingAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import instrument
from agent_otel.testing import InMemoryTelemetry, run_script
from test_scrubbing_signals import exported as _exported

from . import _script as s
from ._conformance import ROWS, Provider, Row
from ._trace import attributes, input_tokens_counted, tokens

TREE = [
    ["invoke_agent agent", [
        ["step 0", ["{chat}", "execute_tool weather", "execute_tool forecast"]],
        ["step 1", ["{chat}"]],
    ]],
]  # fmt: skip
"""The script's tree (``{chat}``: the row's chat span name)."""


def _tree(row: Row) -> list[Any]:
    def fill(node: Any) -> Any:
        if isinstance(node, str):
            return node.format(chat=row.chat)
        return [fill(child) for child in node]

    return fill(TREE)  # type: ignore[no-any-return]


PARAMS = [row.param() for row in ROWS]
# The rows the dev environment runs: the default run takes one provider instrumentation of each
# (a different one row after row, so each is in it), the heavy suite the others. A row of a
# separate environment (.ci/separate-envs) keeps every provider in its own run, which runs no
# heavy suite.
_DEV_ROWS = ("pydantic_ai_openai", "agno", "autogen_openai", "smolagents", "langgraph",
             "openai_agents", "openai_chat", "openai_responses", "anthropic_messages")  # fmt: skip


def _provider_param(row: Row, index: int, provider: Provider) -> Any:
    marks = list(row.param().marks)
    if row.name in _DEV_ROWS and index != _DEV_ROWS.index(row.name) % len(row.providers):
        marks.append(pytest.mark.heavy)
    return pytest.param(row, provider, id=f"{row.name}-{provider.name}", marks=marks)


PROVIDER_PARAMS = [
    _provider_param(row, index, provider)
    for row in ROWS
    for index, provider in enumerate(row.providers)
]
_KEYS = {
    "input": ("gen_ai.usage.input_tokens", "agent_otel.usage.input_tokens"),
    "output": ("gen_ai.usage.output_tokens", "agent_otel.usage.output_tokens"),
    "cache_read": ("gen_ai.usage.cache_read.input_tokens", "agent_otel.usage.cache_read_tokens"),
    "reasoning": ("gen_ai.usage.reasoning.output_tokens", "agent_otel.usage.reasoning_tokens"),
}


_CONTENT = (s.QUESTION, s.REASONING, "".join(s.WORDS), "".join(s.ANSWER), s.weather_sync("Paris"),
            "no forecast for Rome", *(call.json for call in s.CALLS))  # fmt: skip
"""The conversation's content: with capture off, none of it is exported. The failed tool's
text is among it: every framework here catches the tool's exception and hands its text to the
model, as a tool result is (a raised exception's message, which OpenTelemetry records, is not
content; none reaches the run here)."""


def _tools(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return {s.name.removeprefix("execute_tool "): s for s in telemetry.spans()
            if s.name.startswith("execute_tool ")}  # fmt: skip


@pytest.mark.parametrize("row", PARAMS)
async def test_the_script_traces_the_same_tree(row: Row, otel_telemetry: InMemoryTelemetry) -> None:
    run = s.Run()

    events = await run_script(otel_telemetry, row.events(run), agent_name="agent")

    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert text.endswith("".join(s.ANSWER))
    if row.reasoning_text:
        assert s.REASONING in reasoning
    assert s.REASONING not in text, "the model's reasoning reported as its text"
    assert "".join(s.WORDS) not in reasoning, "the model's text reported as its reasoning"
    assert otel_telemetry.outline() == _tree(row)
    servers = {
        (span.name == row.chat, (span.attributes or {}).get("server.address"),
         (span.attributes or {}).get("server.port")) for span in otel_telemetry.spans()
    }  # fmt: skip
    named = (True, *row.server) if row.server else (True, None, None)
    assert servers == {named, (False, None, None)}, "each chat span names the row's server"
    agent = attributes(otel_telemetry, "invoke_agent")
    assert agent["agent_otel.end_reason"] == "exhausted"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("row", PARAMS)
async def test_tokens_are_counted_once(row: Row, otel_telemetry: InMemoryTelemetry) -> None:
    run = s.Run()
    await run_script(otel_telemetry, row.events(run), agent_name="agent")

    totals = row.totals(run)
    assert set(row.reports) <= set(totals) and totals["input"] > 0
    agent = attributes(otel_telemetry, "invoke_agent")
    for key, (span_key, run_key) in _KEYS.items():
        expected = totals.get(key, 0)
        assert tokens(otel_telemetry, span_key) == expected, key  # on chat spans only
        assert agent.get(run_key, 0) == expected, key
    chats = [sp for sp in otel_telemetry.spans() if sp.name == row.chat]
    assert len(chats) == len(s.TURNS)
    if not row.own_usage:  # each call carries its own turn's usage, not a share of the total
        got = [(c.attributes or {}).get("gen_ai.usage.input_tokens") for c in chats]
        assert got == [turn.input for turn in s.TURNS]


@pytest.mark.parametrize("row", PARAMS)
async def test_tool_ids_match_and_the_failed_tool_is_marked(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    run = s.Run()
    events = await run_script(otel_telemetry, row.events(run), agent_name="agent")

    calls = {e.function.name: e.id for e in events if isinstance(e, ToolCall)}
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert set(calls) == {c.name for c in s.CALLS}
    assert set(calls.values()) == set(results) and len(results) == len(s.CALLS)
    if row.model_ids:
        assert calls == {c.name: c.id for c in s.CALLS}
    assert results[calls[s.FAILED_TOOL]].is_error
    assert not results[calls["weather"]].is_error
    spans = _tools(otel_telemetry)
    for name, span in spans.items():
        assert (span.attributes or {})["gen_ai.tool.call.id"] == calls[name]
    failed, fine = spans[s.FAILED_TOOL], spans["weather"]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {}).get("error.type") == row.tool_error
    assert fine.status.status_code is not StatusCode.ERROR
    assert "error.type" not in (fine.attributes or {})


@pytest.mark.parametrize("row", PARAMS)
async def test_a_model_error_comes_out_and_closes_every_span(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    with pytest.raises(Exception) as caught:
        await run_script(otel_telemetry, row.events(s.Run(fail=True)), agent_name="agent")

    assert type(caught.value).__name__ in row.errors
    agent = attributes(otel_telemetry, "invoke_agent")
    assert agent["agent_otel.end_reason"] == "error"
    assert agent["error.type"] == type(caught.value).__qualname__
    [chat] = [sp for sp in otel_telemetry.spans() if sp.name == row.chat]
    assert chat.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


def _framework_detach_failure(record: logging.LogRecord, package: str) -> bool:
    """A "Failed to detach context" record raised in ``package``'s frames, none of agent-otel's."""
    if "Failed to detach context" not in record.getMessage() or not record.exc_info:
        return False
    files = [frame.f_code.co_filename for frame, _ in traceback.walk_tb(record.exc_info[2])]
    root = f"{os.sep}{package.split('.')[0]}{os.sep}"
    ours = f"{os.sep}agent_otel{os.sep}"
    return any(root in f for f in files) and not any(ours in f for f in files)


@pytest.mark.parametrize("row", PARAMS)
@pytest.mark.parametrize("at", [TextDelta, ToolCall, ToolResult])
async def test_breaking_out_closes_every_span(
    row: Row, at: type, otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    events = otel_telemetry.wrapper(agent_name="agent")(row.events(s.Run()))
    async for event in events:
        if isinstance(event, at):
            break
    await events.aclose()
    if row.detaches_across_tasks:  # close the framework's abandoned inner generators now, not
        gc.collect()  # at the loop's teardown, and drop what the framework logs doing so
        await asyncio.get_running_loop().shutdown_asyncgens()
        records = caplog.handler.records
        records[:] = [r for r in records if not _framework_detach_failure(r, row.package)]

    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "closed_early"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("row", PARAMS)
async def test_cancelling_mid_tool_closes_every_span(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    started = asyncio.Event()

    async def consume() -> None:  # weather never returns: the task is cancelled mid-tool
        async for event in otel_telemetry.wrapper(agent_name="agent")(row.events(s.Run(hang=True))):
            if isinstance(event, ToolCall):
                started.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.05)  # let the framework start the tools
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "cancelled"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("row", PARAMS)
async def test_a_sub_agent_nests_under_the_tool_that_ran_it(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    subagent = row.subagent()
    if subagent is None:
        pytest.skip(f"{row.name}: no sub-agent builder yet")
    await subagent(otel_telemetry)

    expert = ["invoke_agent expert", [["step 0", [row.chat]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", [row.chat, ["execute_tool ask_expert", [expert]]]],
            ["step 1", [row.chat]],
        ]],
    ]  # fmt: skip
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("row", PARAMS)
async def test_a_request_refused_before_its_first_chunk_fails_its_own_chat_span(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    """Turn 2's request fails before any chunk: its chat span exists, carries the error, and
    no step does (neither the one before, whose work succeeded, nor its own: the failure is
    the call's, whether the framework raises it or reports it first, as ADK does). A framework
    that retries the request (CrewAI, Strands) shows each refused attempt as a failed chat span
    of its own, named by the run's exception or the one it wraps (Strands'
    ``EventLoopException`` around the 429)."""
    if not row.refuses:
        pytest.skip(f"{row.name}: the builder cannot refuse a request yet")
    with pytest.raises(Exception) as caught:
        await run_script(otel_telemetry, row.events(s.Run(refuse=True)), agent_name="agent")

    first, *refused = [sp for sp in otel_telemetry.spans() if sp.name == row.chat]
    assert first.status.status_code is not StatusCode.ERROR
    assert refused
    names = {type(caught.value).__qualname__, type(caught.value.__cause__).__qualname__}
    for second in refused:
        assert second.status.status_code is StatusCode.ERROR
        assert (second.attributes or {})["error.type"] in names
    steps = [sp for sp in otel_telemetry.spans() if sp.name.startswith("step ")]
    assert [sp.name for sp in steps if sp.status.status_code is StatusCode.ERROR] == []
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("row", PARAMS)
@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
async def test_each_call_shows_the_messages_the_framework_sent(
    row: Row, capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture on, the run shows its question and its answer, and each chat span its own
    request (turn 2's carries both tools' results, the failure's too); with capture off, no
    content anywhere."""
    if not row.messages:
        pytest.skip(f"{row.name}: the adapter does not pass the request's messages on yet")
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=capture)  # fmt: skip
    [_ async for _ in traced(row.events(s.Run()))]

    if not capture:
        for span in otel_telemetry.spans():
            content = {"gen_ai.input.messages", "gen_ai.output.messages", "input.value"}
            assert not content & set(span.attributes or {}), span.name
        return
    agent = attributes(otel_telemetry, "invoke_agent")
    assert s.QUESTION in agent["input.value"]
    assert "".join(s.ANSWER) in agent["output.value"]
    first, second = (
        json.loads((sp.attributes or {})["gen_ai.input.messages"])
        for sp in otel_telemetry.spans() if sp.name == row.chat
    )  # fmt: skip
    assert first[-1]["role"] == "user" and s.QUESTION in json.dumps(first[-1])
    if not row.tool_messages:  # as text: smolagents tells the model the step's error (the
        failure = "no forecast for Rome"  # failed tool's), dropping the other call's result
        assert failure in json.dumps(second) and failure not in json.dumps(first)
        return
    answered = [m for m in second if m["role"] == "tool"]
    responses = [p for m in answered for p in m["parts"] if p["type"] == "tool_call_response"]
    assert len(responses) == 2, second
    assert s.weather_sync("Paris") in json.dumps(responses)
    asked = [p for m in second for p in m["parts"] if p["type"] == "tool_call"]
    assert sorted(p["name"] for p in asked) == ["forecast", "weather"]


@pytest.mark.parametrize("row", PARAMS)
@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
async def test_each_call_shows_the_tool_calls_it_asked_for(
    row: Row, capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture on, turn 1's chat span answers with the tool calls the model asked for
    (the conventions' ``tool_call`` parts: the ids the tool spans carry, the names, the
    arguments as objects) and finishes with ``tool_call``, though the framework tells them
    only when it runs them, after the response; turn 2's asks for none and stops. The tool
    spans stay siblings of that chat span, which ends with its response. With capture off, no
    content anywhere."""
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=capture)  # fmt: skip
    events = [e async for e in traced(row.events(s.Run()))]

    spans = sorted(otel_telemetry.spans(), key=lambda sp: sp.start_time or 0)
    chats = [sp for sp in spans if sp.name == row.chat]
    assert len(chats) == len(s.TURNS)
    if not capture:  # nothing of the conversation on any span, event, status or metric
        exported = _exported(otel_telemetry)
        assert [text for text in _CONTENT if text in exported] == []
        return
    ids = {e.function.name: e.id for e in events if isinstance(e, ToolCall)}
    first, second = (json.loads((sp.attributes or {})["gen_ai.output.messages"]) for sp in chats)
    [asked] = first
    assert asked["role"] == "assistant" and asked["finish_reason"] == "tool_call", asked
    calls = sorted((p for p in asked["parts"] if p["type"] == "tool_call"), key=lambda p: p["name"])
    expected = sorted(s.CALLS, key=lambda c: c.name)
    assert [(p["name"], p["arguments"]) for p in calls] == [(c.name, c.arguments) for c in expected]
    assert [p.get("id") for p in calls] == [ids[c.name] for c in expected]
    if row.model_ids:
        assert [p.get("id") for p in calls] == [c.id for c in expected]
    [answer] = second
    assert answer["finish_reason"] == "stop", answer
    assert not [p for p in answer["parts"] if p["type"] == "tool_call"], answer
    step = chats[0].parent
    for tool in _tools(otel_telemetry).values():  # siblings under the step, timed as they ran:
        assert tool.parent is not None and step is not None  # the chat span ended with its
        assert tool.parent.span_id == step.span_id  # response, before any tool's end
        assert (chats[0].end_time or 0) < (tool.end_time or 0)


@pytest.mark.parametrize("row", PARAMS)
async def test_each_call_shows_the_text_it_produced_and_the_run_its_answer_once(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture on, each chat span's output holds the text its model produced: turn 1's
    words beside its tool calls, turn 2's answer (however the framework has the model give
    it: a ``final_answer`` tool call, an output tool), so no visible text is told outside a
    model call; the run's output is the answer, once. A framework that drops the words beside
    tool calls (``Row.text_beside_calls``) shows none: the docs say which."""
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    events = [e async for e in traced(row.events(s.Run()))]

    calling, outside = False, []
    for event in events:
        if isinstance(event, LLMCallStart | LLMCallEnd):
            calling = isinstance(event, LLMCallStart)
        elif isinstance(event, TextDelta) and not calling:
            outside.append(event.text)
    assert outside == []
    chats = sorted((sp for sp in otel_telemetry.spans() if sp.name == row.chat),
                   key=lambda sp: sp.start_time or 0)  # fmt: skip
    texts = [
        "".join(p["content"] for m in json.loads((sp.attributes or {})["gen_ai.output.messages"])
                for p in m["parts"] if p["type"] == "text")
        for sp in chats
    ]  # fmt: skip
    words = "".join(s.WORDS) if row.text_beside_calls else ""
    assert texts == [words, "".join(s.ANSWER)]
    assert attributes(otel_telemetry, "invoke_agent")["output.value"] == "".join(s.ANSWER)


def _model_call_spans(telemetry: InMemoryTelemetry) -> list[str]:
    """The scope of every span describing a model call, whoever made it."""
    return sorted(
        sp.instrumentation_scope.name if sp.instrumentation_scope else ""
        for sp in telemetry.spans()
        if (sp.attributes or {}).get("gen_ai.operation.name") in ("chat", "text_completion")
        or (sp.attributes or {}).get("openinference.span.kind") == "LLM"
    )


@pytest.mark.parametrize(("row", "provider"), PROVIDER_PARAMS)
async def test_provider_instrumentations_stand_down(
    row: Row, provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """With ``provider`` instrumented in: the same tree, one chat span per model call (ours),
    tokens once on spans and in metrics, the failed tool marked, nothing open after a cancel;
    opted out, the provider's spans are back (it was active)."""
    with provider.instrumented(otel_telemetry):
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")

        assert otel_telemetry.outline() == _tree(row)
        assert _model_call_spans(otel_telemetry) == ["agent_otel"] * len(s.TURNS)
        totals = row.totals(run)
        assert tokens(otel_telemetry) == totals["input"]
        assert input_tokens_counted(otel_telemetry) == totals["input"]
        failed = _tools(otel_telemetry)[s.FAILED_TOOL]
        assert (failed.attributes or {}).get("error.type") == row.tool_error
        assert otel_telemetry.open_spans() == []

        otel_telemetry.clear()
        started = asyncio.Event()

        async def consume() -> None:
            async for event in otel_telemetry.wrapper(agent_name="agent")(
                row.events(s.Run(hang=True))
            ):
                if isinstance(event, ToolCall):
                    started.set()

        task = asyncio.ensure_future(consume())
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert otel_telemetry.open_spans() == []
        assert _model_call_spans(otel_telemetry) == ["agent_otel"]

        otel_telemetry.clear()
        opted_out = otel_telemetry.wrapper(agent_name="agent", stand_down_providers=False)
        [_ async for _ in opted_out(row.events(s.Run()))]
        assert len(_model_call_spans(otel_telemetry)) > len(s.TURNS)  # theirs are back


class _Delegating(StreamingAgent):
    """A contract agent of the caller's whose ``stream`` runs a framework adapter: the way a
    framework agent gets ``invoke()`` and ``instrument()`` (the wrapper sees this generator,
    not the adapter's)."""

    def __init__(self, row: Row, run: s.Run) -> None:
        self.row, self.run = row, run

    async def stream(self, messages: Any, config: Any = None) -> Any:
        async for event in self.row.events(self.run):
            yield event


async def _only_events(stream: Any) -> Any:
    """The caller's own generator between the adapter and the wrapper (a filter, a logger)."""
    async for event in stream:
        yield event


class _Filter:
    """The caller's own filter written as a class, its ``__anext__`` a coroutine (not an async
    generator) handing each event up."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __aiter__(self) -> _Filter:
        return self

    async def __anext__(self) -> Any:
        return await self.stream.__anext__()


ROUTER_TOKENS = 7


async def _after_own_events(stream: Any) -> Any:
    """The caller's own model call and a tool call first (a router delegating to the
    framework), then the adapter's events as that tool's work, then its result."""
    yield LLMCallStart(model="router")
    yield Usage(input_tokens=ROUTER_TOKENS, output_tokens=1)
    yield ToolCall(id="delegate", function=FunctionCall(name="delegate", arguments="{}"))
    yield LLMCallEnd(model="router", finish_reason="tool_calls")
    async for event in stream:
        yield event
    yield ToolResult(tool_call_id="delegate", content="done")


FRAMEWORK_PROVIDER_PARAMS = [p for p in PROVIDER_PARAMS if p.values[0].runs_tools]


# The default run covers the plainest and the hardest shape for every row and provider; the
# two between them (each a wrapper the same recognition sees through) run in the heavy suite.
_SHAPES = [
    "generator",
    pytest.param("agent", marks=pytest.mark.heavy),
    pytest.param("filter class", marks=pytest.mark.heavy),
    "after own events",
]


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize(("row", "provider"), FRAMEWORK_PROVIDER_PARAMS)
async def test_a_framework_adapter_run_inside_the_callers_own_stream_stands_providers_down(
    row: Row, provider: Provider, shape: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """The adapter's stream inside the caller's own generator, or an agent class whose
    ``stream`` runs it: the run was not covered (only the adapter's own generator was
    recognised), so each model call was traced twice (openai-v2's or OpenInference's span
    beside ours) and its tokens counted twice. Now the adapter says so as it starts: one chat
    span per call, tokens once. So too behind a filter class (its ``__anext__`` a coroutine),
    and after the caller's own events opened a step (its own model call, a tool call whose
    work is the adapter's run), which were not covered either."""
    with provider.instrumented(otel_telemetry):
        run = s.Run()
        own = 0
        if shape == "generator":
            await run_script(otel_telemetry, _only_events(row.events(run)), agent_name="agent")
        elif shape == "filter class":
            await run_script(otel_telemetry, _Filter(row.events(run)), agent_name="agent")
        elif shape == "after own events":
            stream = _after_own_events(row.events(run))
            await run_script(otel_telemetry, stream, agent_name="agent")
            own = 1
        else:
            wrapper = otel_telemetry.wrapper(agent_name="agent")
            await _Delegating(row, run).invoke(
                [Message(role="user", content=s.QUESTION)], stream_wrapper=wrapper
            )
        if not own:
            assert otel_telemetry.outline() == _tree(row)
        assert _model_call_spans(otel_telemetry) == ["agent_otel"] * (len(s.TURNS) + own)
        expected = row.totals(run)["input"] + own * ROUTER_TOKENS
        assert input_tokens_counted(otel_telemetry) == expected
        assert otel_telemetry.open_spans() == []


class _Draining(Agent):
    """An agent of the ``Agent`` contract whose ``run()`` drains a framework adapter itself: no
    event of it reaches a run of ours, so no chat span of ours tells its model calls."""

    tool_name = "agent"

    def __init__(self, row: Row) -> None:
        self.row = row

    async def run(self, **kwargs: Any) -> str:
        return "".join([type(e).__name__ async for e in self.row.events(s.Run())])


@pytest.mark.parametrize(("row", "provider"), FRAMEWORK_PROVIDER_PARAMS)
async def test_a_framework_adapter_an_agents_run_drains_keeps_the_providers_spans(
    row: Row, provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """The adapter inside an instrumented agent's ``run()``, which keeps its events: the run
    is not covered, so the provider instrumentation's spans of those calls stay (they are the
    only ones telling them)."""
    with provider.instrumented(otel_telemetry):
        await instrument(_Draining(row), **otel_telemetry.providers()).run(user_message="hi")
    scopes = _model_call_spans(otel_telemetry)
    assert len(scopes) >= len(s.TURNS)
    assert "agent_otel" not in scopes
    assert otel_telemetry.open_spans() == []


def test_every_framework_adapter_is_covered_from_its_runs_start() -> None:
    """A framework starts model calls in its own tasks: its runs stand providers down from
    the start (``FRAMEWORK_SOURCES``); an SDK source's call runs inside our chat span."""
    import pkgutil

    import agent_contract.sources as sources
    from agent_otel.standdown._frameworks import FRAMEWORK_SOURCES

    sdk = {"openai_chat", "openai_responses", "anthropic_messages", "litellm_chat"}
    adapters = {m.name for m in pkgutil.iter_modules(sources.__path__)
                if not m.name.startswith("_")}  # fmt: skip
    assert sdk <= adapters
    assert {f"{sources.__name__}.{name}" for name in adapters - sdk} == FRAMEWORK_SOURCES

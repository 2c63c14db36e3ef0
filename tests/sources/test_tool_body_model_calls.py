"""A model call a tool body makes itself, with a provider's SDK, inside a framework adapter's run.

A framework run stands the provider instrumentations down from its start (its model requests
start in tasks of the framework's own, before our chat span is current: docs/adapters.md), but
a call the tool's own code makes is none the framework reports: no chat span of ours tells it,
so the provider's span of it is the only one. It nests under our ``execute_tool`` span, its
tokens on the provider's metric, while the run's own model calls keep one chat span each
(ours), and an agent a tool runs as a nested run of ours still has its calls told once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _http as http
from . import _litellm_callback as _litellm
from . import _script as s
from . import _script_chat as chat
from ._conformance import OPENAI_SDK, OPENINFERENCE_OPENAI, ROWS, Provider, Row
from ._trace import OURS, input_tokens_counted

TOOL_MODEL = "gpt-4.1-nano"
"""The model the tool body asks (no row's own)."""
TOOL_INPUT = s.TURNS[0].input
"""The input tokens the tool body's call reports (``_script_chat.completion``'s first turn)."""

PARAMS = [
    pytest.param(row, provider, id=f"{row.name}-{provider.name}", marks=row.param().marks)
    for row in ROWS
    if row.runs_tools
    for provider in OPENAI_SDK
]


def _model_calls(telemetry: InMemoryTelemetry) -> tuple[list[Any], list[Any]]:
    """The spans describing a model call: ours, and every other scope's."""
    calls = [
        sp
        for sp in telemetry.spans()
        if (sp.attributes or {}).get("gen_ai.operation.name") in ("chat", "text_completion")
        or (sp.attributes or {}).get("openinference.span.kind") == "LLM"
    ]
    ours = [sp for sp in calls if getattr(sp.instrumentation_scope, "name", None) == OURS]
    return ours, [sp for sp in calls if sp not in ours]


@pytest.mark.parametrize(("row", "provider"), PARAMS)
async def test_a_tool_bodys_own_model_call_is_traced_under_its_tool_span(
    row: Row, provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """``weather``'s body calls ``chat.completions.create`` itself: the provider's span of that
    call is a child of ``execute_tool weather`` and its tokens are on the provider's metric;
    the run's own model calls are still one chat span each, ours."""
    client = http.openai_sync_client(chat.completion(0, "cloudy", [], model=TOOL_MODEL))
    answers: list[str] = []

    def ask() -> None:
        reply = client.chat.completions.create(
            model=TOOL_MODEL, messages=[{"role": "user", "content": "sky?"}]
        )
        answers.append(reply.choices[0].message.content)

    with provider.instrumented(otel_telemetry), s.body_work(ask):
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")

    assert answers == ["cloudy"]
    ours, theirs = _model_calls(otel_telemetry)
    assert len(ours) == len(s.TURNS)
    [tool_call] = theirs
    tool = otel_telemetry.span("execute_tool weather")
    assert tool_call.parent is not None and tool_call.parent.span_id == tool.context.span_id
    counted = row.totals(run)["input"] + (TOOL_INPUT if provider.meters else 0)
    assert input_tokens_counted(otel_telemetry) == counted
    assert otel_telemetry.open_spans() == []


SUBAGENT_PARAMS = [
    pytest.param(row, provider, id=f"{row.name}-{provider.name}", marks=row.param().marks)
    for row in ROWS
    if row.runs_tools
    for provider in row.providers
]


@pytest.mark.parametrize(("row", "provider"), SUBAGENT_PARAMS)
async def test_a_sub_agents_model_calls_in_a_tool_body_are_told_once(
    row: Row, provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """An agent a tool runs (the row's ``expert``, a run of ours nested under the tool): its
    model call is our chat span alone, as the lead's are, with ``provider`` instrumented in."""
    subagent = row.subagent()
    if subagent is None:
        pytest.skip(f"{row.name}: no sub-agent builder yet")
    with provider.instrumented(otel_telemetry):
        await subagent(otel_telemetry)

    ours, theirs = _model_calls(otel_telemetry)
    assert (len(ours), theirs) == (3, [])  # the lead's two calls, the expert's one
    assert otel_telemetry.open_spans() == []


def _litellm_answer(litellm: Any, text: str) -> str:
    """``litellm.completion`` of ``TOOL_MODEL`` (the OpenAI SDK's mock transport answering
    ``text``), as a tool body calls it itself: its answer."""
    client = http.openai_sync_client(chat.completion(0, text, [], model=TOOL_MODEL))
    reply = litellm.completion(model=f"openai/{TOOL_MODEL}", client=client, api_key="test",
                               messages=[{"role": "user", "content": "sky?"}])  # fmt: skip
    return str(reply.choices[0].message.content)


def _logged_under_weather(telemetry: InMemoryTelemetry) -> None:
    """LiteLLM's callback logged one call, in its span under ``execute_tool weather``."""
    [logged] = _litellm.spans(telemetry)
    tool = telemetry.span("execute_tool weather")
    assert logged.parent is not None and logged.parent.span_id == tool.context.span_id


@pytest.mark.parametrize("row", [row.param() for row in ROWS if row.runs_tools])
async def test_a_tool_bodys_own_litellm_call_is_logged_by_its_callback_under_its_tool_span(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    """``weather``'s body calls ``litellm.completion`` itself, with LiteLLM's own OpenTelemetry
    callback on (``litellm.callbacks``): no chat span of ours tells that call, so the callback's
    ``litellm_request`` span of it is a child of ``execute_tool weather`` and its tokens are on
    the callback's metric, as the other providers' instrumentations trace a tool's own call."""
    litellm = pytest.importorskip("litellm")
    answers: list[str] = []

    def ask() -> None:
        answers.append(_litellm_answer(litellm, "cloudy"))

    with _litellm.callback(otel_telemetry), s.body_work(ask):
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")
        expected = row.totals(run)["input"] + TOOL_INPUT
        await _litellm.logged_into(
            otel_telemetry, until=lambda: input_tokens_counted(otel_telemetry) >= expected
        )

    assert answers == ["cloudy"]
    _logged_under_weather(otel_telemetry)
    assert input_tokens_counted(otel_telemetry) == expected
    assert otel_telemetry.open_spans() == []


async def test_a_litellm_call_of_an_agent_a_tool_ran_stays_its_chat_span_once_logged_late(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent ``weather``'s body runs (a run of ours nested there) makes its
    ``litellm.completion`` before it tells the call, as a framework does; LiteLLM logs the
    call once that agent's run has ended (its logging is held until then): the call is the
    agent's, its chat span of ours alone tells it, its tokens counted once."""
    import contextvars
    import threading

    litellm = pytest.importorskip("litellm")
    from litellm.integrations.custom_logger import CustomLogger

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage

    row = next(r for r in ROWS if r.name == "langgraph")
    expert_ended, logged = threading.Event(), threading.Event()

    class Held(CustomLogger):  # type: ignore[misc]
        """Before the OpenTelemetry callback: holds the call's logging until the agent's end."""

        def log_success_event(self, *args: Any, **kwargs: Any) -> None:
            expert_ended.wait(10)

    class Heard(CustomLogger):  # type: ignore[misc]
        """After it: the call's logging has run."""

        def log_success_event(self, *args: Any, **kwargs: Any) -> None:
            logged.set()

    async def expert() -> Any:
        _litellm_answer(litellm, "cloudy")
        yield LLMCallStart(model=TOOL_MODEL, provider="openai", call_id="e1")
        yield TextDelta("cloudy")
        yield Usage(input_tokens=TOOL_INPUT, output_tokens=1)
        yield LLMCallEnd(call_id="e1", model=TOOL_MODEL, finish_reason="stop")

    def ask() -> None:  # the agent, run on a thread of the body's (its context copied)
        async def run() -> None:
            await run_script(otel_telemetry, expert(), agent_name="expert")
            expert_ended.set()

        there = contextvars.copy_context()
        worker = threading.Thread(target=lambda: there.run(asyncio.run, run()))
        worker.start()
        worker.join(20)

    with _litellm.callback(otel_telemetry), s.body_work(ask):
        litellm.callbacks[:0] = [Held()]
        litellm.callbacks.append(Heard())
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")
        assert logged.wait(10)

    assert _litellm.spans(otel_telemetry) == []
    assert input_tokens_counted(otel_telemetry) == row.totals(run)["input"] + TOOL_INPUT
    assert otel_telemetry.open_spans() == []


async def test_a_tool_bodys_own_litellm_call_after_an_agent_it_ran_is_still_logged(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``weather``'s body runs an agent (a run of ours nested there, its call told by its own
    chat span), then calls ``litellm.completion`` itself: that call is the body's own, logged
    by LiteLLM's callback under ``execute_tool weather`` with its tokens, whatever ran in the
    body before it; the agent's call is still told once."""
    import contextvars
    import threading

    litellm = pytest.importorskip("litellm")

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage

    row = next(r for r in ROWS if r.name == "langgraph")
    answers: list[str] = []

    async def expert() -> Any:
        yield LLMCallStart(model=TOOL_MODEL, provider="openai", call_id="e1")
        yield TextDelta("cloudy")
        yield Usage(input_tokens=TOOL_INPUT, output_tokens=1)
        yield LLMCallEnd(call_id="e1", model=TOOL_MODEL, finish_reason="stop")

    def ask() -> None:  # the agent, run on a thread of the body's (its context copied)
        there = contextvars.copy_context()
        worker = threading.Thread(
            target=lambda: there.run(
                asyncio.run, run_script(otel_telemetry, expert(), agent_name="expert")
            )
        )
        worker.start()
        worker.join(20)
        answers.append(_litellm_answer(litellm, "sunny"))

    with _litellm.callback(otel_telemetry), s.body_work(ask):
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")
        expected = row.totals(run)["input"] + 2 * TOOL_INPUT  # the agent's call and the body's
        await _litellm.logged_into(
            otel_telemetry, until=lambda: input_tokens_counted(otel_telemetry) >= expected
        )

    assert answers == ["sunny"]
    _logged_under_weather(otel_telemetry)
    assert input_tokens_counted(otel_telemetry) == expected
    assert otel_telemetry.open_spans() == []


GENAI_OPENAI = Provider("genai-openai", "opentelemetry.instrumentation.genai.openai",
                        "OpenAIInstrumentor", meters=True)  # fmt: skip
"""The official OpenAI package on util-genai's handler (the ``genai`` environment's): it stands
down through the handler's context key, asked with the context of the call."""


@pytest.mark.parametrize("provider", [*OPENAI_SDK, GENAI_OPENAI], ids=lambda p: p.name)
async def test_a_tool_bodys_own_model_call_while_an_agent_it_runs_is_open_is_still_traced(
    provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """``weather``'s body runs an agent on a thread (a run of ours nested there, making its
    own provider call as it streams) and, while that agent's run is still open, calls the model
    itself: the body's call is its own, the provider's span of it under ``execute_tool
    weather`` with its tokens; the agent's call is its chat span alone, its tokens once."""
    import contextvars
    import threading

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage

    row = next(r for r in ROWS if r.name == "langgraph")
    body_client = http.openai_sync_client(chat.completion(0, "cloudy", [], model=TOOL_MODEL))
    agent_client = http.openai_sync_client(chat.completion(0, "sunny", [], model=TOOL_MODEL))
    answers: list[str] = []

    def create(client: Any) -> str:
        reply = client.chat.completions.create(
            model=TOOL_MODEL, messages=[{"role": "user", "content": "sky?"}]
        )
        return str(reply.choices[0].message.content)

    def ask() -> None:
        opened, asked = threading.Event(), threading.Event()

        async def expert() -> Any:
            yield LLMCallStart(model=TOOL_MODEL, provider="openai", call_id="e1")
            yield TextDelta(create(agent_client))
            opened.set()  # the run stays open until the body has made its own call
            asked.wait(10)
            yield Usage(input_tokens=TOOL_INPUT, output_tokens=1)
            yield LLMCallEnd(call_id="e1", model=TOOL_MODEL, finish_reason="stop")

        there = contextvars.copy_context()
        worker = threading.Thread(
            target=lambda: there.run(
                asyncio.run, run_script(otel_telemetry, expert(), agent_name="expert")
            )
        )
        worker.start()
        try:
            assert opened.wait(10)
            answers.append(create(body_client))
        finally:
            asked.set()
            worker.join(20)

    with provider.instrumented(otel_telemetry), s.body_work(ask):
        run = s.Run()
        await run_script(otel_telemetry, row.events(run), agent_name="agent")

    assert answers == ["cloudy"]
    ours, theirs = _model_calls(otel_telemetry)
    assert len(ours) == len(s.TURNS) + 1  # the lead's calls, the agent's one
    [body_call] = theirs
    tool = otel_telemetry.span("execute_tool weather")
    assert body_call.parent is not None and body_call.parent.span_id == tool.context.span_id
    counted = row.totals(run)["input"] + TOOL_INPUT + (TOOL_INPUT if provider.meters else 0)
    assert input_tokens_counted(otel_telemetry) == counted
    assert otel_telemetry.open_spans() == []


async def test_a_function_tools_own_call_beside_the_agent_it_runs_is_the_tools_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An Agents SDK function tool runs an agent (``Runner.run``: a run of ours nested under
    the tool, the adapter's stream pulled there) and, at the same time, calls the model itself
    (``asyncio.gather``): the tool's call is traced by the provider under the tool's span with
    its tokens; the agent's call is its chat span alone, its tokens once."""
    pytest.importorskip("agents")
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)

    def model(*bodies: bytes) -> Any:
        return OpenAIChatCompletionsModel(
            model="gpt-4o-mini", openai_client=http.openai_client(*bodies)
        )

    expert = Agent(name="expert", instructions="Be brief.", model=model(chat.answer("sunny")))
    own = http.openai_client(chat.completion(0, "cloudy", [], model=TOOL_MODEL))
    answers: list[str] = []

    @function_tool
    async def ask_expert(question: str) -> str:
        """Ask the expert, and the model itself."""
        ran, reply = await asyncio.gather(
            Runner.run(expert, question),
            own.chat.completions.create(model=TOOL_MODEL,
                                        messages=[{"role": "user", "content": question}]),
        )  # fmt: skip
        answers.append(str(reply.choices[0].message.content))
        return str(ran.final_output)

    ask = chat.call("ask_expert", {"question": "Paris?"}, "call_e")
    lead = Agent(name="lead", instructions="Delegate.", model=model(ask, chat.answer("Sunny.")),
                 tools=[ask_expert])  # fmt: skip
    with OPENINFERENCE_OPENAI.instrumented(otel_telemetry):
        await run_script(otel_telemetry, openai_agents_events(lead, s.QUESTION), agent_name="lead")

    assert answers == ["cloudy"]
    ours, theirs = _model_calls(otel_telemetry)
    assert len(ours) == 3  # the lead's two calls, the expert's one
    [tool_call] = theirs
    tool = otel_telemetry.span("execute_tool ask_expert")
    assert tool_call.parent is not None and tool_call.parent.span_id == tool.context.span_id
    assert otel_telemetry.open_spans() == []

"""Strands' model-call hooks and retries. An ``AfterModelCallEvent`` hook asking for the
model call again (``retry``): Strands
drops the response (its streamed events already went out; no message of it follows, its tool
calls never run) and asks the model again. The dropped response was made and billed: it is a
chat span of its own with its text and tokens, its step failed ``output_rejected`` (as a
LlamaIndex or pydantic-ai answer sent back is), and the request asked again is the next step.
Before, both responses were one chat span: the dropped text run into the answer, its tokens
lost. A request throttled mid-stream and retried, and one a ``BeforeModelCallEvent`` hook
cancels, below. Runs in Strands' own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import check_answered_then_failed, sent, tokens

pytest.importorskip("strands")

CHAT = "chat scripted-converse"


def _said(span: Any) -> str:
    messages = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
    return "".join(p.get("content", "") for m in messages for p in m["parts"])


async def test_a_response_a_hook_drops_is_a_call_of_its_own_in_a_failed_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from strands.hooks import AfterModelCallEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage, _uses, agent

    dropped = [{"messageStart": {"role": "assistant"}}, *_text("Guess."),
               *_uses(s.Call("d1", "weather", {"city": "Paris"})),
               {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    kept = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
            {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    bot = agent(_model([dropped, kept]), [s.weather_tool()], name="bot")
    heard: list[AfterModelCallEvent] = []

    def check(event: AfterModelCallEvent) -> None:
        heard.append(event)
        event.retry = len(heard) == 1  # the first answer refused, asked again

    bot.hooks.add_callback(AfterModelCallEvent, check)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert len(heard) == 2
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    first, second = sorted((x for x in otel_telemetry.spans() if x.name == CHAT),
                           key=lambda x: x.start_time or 0)  # fmt: skip
    assert (_said(first), _said(second)) == ("Guess.", "Sunny.")
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    step = otel_telemetry.span("step 0")
    assert step.status.status_code is StatusCode.ERROR
    assert (step.attributes or {})["error.type"] == "output_rejected"
    run = otel_telemetry.span("invoke_agent bot")
    assert run.status.status_code is StatusCode.UNSET
    assert _said(run) == "Sunny."
    assert otel_telemetry.open_spans() == []


async def test_the_tool_calls_of_a_dropped_response_are_its_output_and_no_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The dropped response asked for a tool, which never ran (Strands threw the message
    away). The conventions tell what the model asked for in the chat span's output messages
    (a ``tool_call`` part) and a tool's execution as an ``execute_tool`` span: the dropped
    call's output holds its text and its tool call, and no tool span tells a run that never
    happened. Before, its output held the text alone."""
    from strands.hooks import AfterModelCallEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage, _uses, agent

    dropped = [{"messageStart": {"role": "assistant"}}, *_text("Guess."),
               *_uses(s.Call("d1", "weather", {"city": "Paris"})),
               {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    kept = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
            {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    bot = agent(_model([dropped, kept]), [s.weather_tool()], name="bot")

    def check(event: AfterModelCallEvent) -> None:
        event.retry = event.stop_response is not None and event.stop_response.stop_reason == (
            "tool_use"
        )  # a response asking for a tool is refused, asked again

    bot.hooks.add_callback(AfterModelCallEvent, check)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    first = min((x for x in otel_telemetry.spans() if x.name == CHAT),
                key=lambda x: x.start_time or 0)  # fmt: skip
    [message] = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
    calls = [p for p in message["parts"] if p["type"] == "tool_call"]
    assert calls == [{"type": "tool_call", "id": "d1", "name": "weather",
                      "arguments": {"city": "Paris"}}]  # fmt: skip
    assert _said(first) == "Guess."
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_a_request_throttled_mid_stream_and_retried_fails_its_own_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Strands' own retry strategy asks again for a request throttled after its first events
    (``ModelThrottledException`` mid-stream): that request fails its own chat span with the
    class, beside the one that answered, in the same step. Before, the answer was told in
    the throttled call's span, after its cut-off text, which ended as if it had answered."""
    from strands.types.exceptions import ModelThrottledException

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage, agent

    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    model = _model([answer])
    answering = model.stream
    attempts: list[int] = []

    async def stream(*args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:  # the first attempt: its first words, then a 429
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockDelta": {"delta": {"text": "Sun"}}}
            raise ModelThrottledException("429 Too Many Requests")
        async for event in answering(*args, **kwargs):
            yield event

    model.stream = stream
    await run_script(otel_telemetry, strands_events(agent(model, [], name="bot"), s.QUESTION),
                     agent_name="bot", capture_content=True)  # fmt: skip

    assert len(attempts) == 2
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT, CHAT]]]]]
    throttled, answered = sorted((x for x in otel_telemetry.spans() if x.name == CHAT),
                                 key=lambda x: x.start_time or 0)  # fmt: skip
    assert throttled.status.status_code is StatusCode.ERROR
    assert (throttled.attributes or {})["error.type"] == "ModelThrottledException"
    assert (_said(throttled), _said(answered)) == ("Sun", "Sunny.")
    assert answered.status.status_code is StatusCode.UNSET
    assert tokens(otel_telemetry) == s.TURNS[1].input
    assert otel_telemetry.span("invoke_agent bot").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_a_request_that_overflowed_keeps_the_messages_it_sent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A request the model refuses as too long (``ContextWindowOverflowException``): Strands'
    default ``SlidingWindowConversationManager`` drops the oldest messages and asks again.
    The refused call fails with the class and holds the whole history it sent; the retry holds
    the shorter history it sent, ending with the question. Before, the refused call was told
    with the trimmed messages, as the agent held them once the retry was under way."""
    from strands import Agent
    from strands.agent.conversation_manager import SlidingWindowConversationManager

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage

    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    history = [{"role": role, "content": [{"text": f"{role} {i}"}]}
               for i in range(3) for role in ("user", "assistant")]  # fmt: skip
    whole = [(m["role"], m["content"][0]["text"]) for m in history] + [("user", s.QUESTION)]
    bot = Agent(model=_model([answer], overflow=True), messages=history, name="bot",
                conversation_manager=SlidingWindowConversationManager(window_size=4),
                callback_handler=None)  # fmt: skip
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT, CHAT]]]]]
    refused, answered = sorted((x for x in otel_telemetry.spans() if x.name == CHAT),
                               key=lambda x: x.start_time or 0)  # fmt: skip
    assert (refused.attributes or {})["error.type"] == "ContextWindowOverflowException"
    assert sent(refused) == whole
    retried = sent(answered)
    assert retried[-1] == ("user", s.QUESTION)
    assert len(retried) < len(whole) and whole[-len(retried) :] == retried
    assert _said(answered) == "Sunny."
    assert otel_telemetry.span("invoke_agent bot").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_a_model_call_a_hook_cancels_is_no_call_and_its_text_the_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``BeforeModelCallEvent`` hook cancelling the request (``cancel``, a budget check):
    Strands calls no model and answers with the hook's text. No chat span tells it (no model
    was called), and that text is the run's answer, as an ADK agent callback's answer is.
    Before, the run had no answer at all."""
    from strands.hooks import BeforeModelCallEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage, agent

    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    model = _model([answer])
    bot = agent(model, [], name="bot")

    def deny(event: BeforeModelCallEvent) -> None:
        event.cancel = "Over budget today."

    bot.hooks.add_callback(BeforeModelCallEvent, deny)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert model.calls == 0
    assert otel_telemetry.outline() == ["invoke_agent bot"]
    run = otel_telemetry.span("invoke_agent bot")
    assert _said(run) == "Over budget today."
    assert run.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


class _HookFailed(RuntimeError):
    """What the test's ``AfterModelCallEvent`` hook raises."""


async def test_a_hook_raising_after_a_whole_response_fails_the_run_not_the_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An ``AfterModelCallEvent`` hook raising once the model answered whole: Strands ends the
    run with the hook's exception (the same object), telling no message. The model call was
    made and billed: it ends answered, with its tokens; the exception fails its step and the
    run. Before, the call was failed with the hook's exception, cut short, its tokens lost."""
    from strands.hooks import AfterModelCallEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _turns, agent

    bot = agent(_model(_turns()), [s.weather_tool(), s.forecast_tool()], name="bot")
    failure = _HookFailed("the check itself broke")

    def check(event: AfterModelCallEvent) -> None:
        if event.exception is None:
            raise failure

    bot.hooks.add_callback(AfterModelCallEvent, check)
    with pytest.raises(_HookFailed) as raised:
        await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    assert raised.value is failure
    check_answered_then_failed(otel_telemetry, CHAT, "_HookFailed", s.TURNS[0].input)
    chat = otel_telemetry.span(CHAT)
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == s.TURNS[0].input


async def test_the_tool_calls_of_a_response_a_raising_hook_ended_are_its_output(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The hook raises once the model answered whole with tool calls: Strands tells no
    message, and no tool runs. The calls the model asked for are the call's output (content
    on), no tool spans, as a dropped response's are. Before, they were nowhere."""
    from strands.hooks import AfterModelCallEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _turns, agent

    bot = agent(_model(_turns()), [s.weather_tool(), s.forecast_tool()], name="bot")

    def check(event: AfterModelCallEvent) -> None:
        if event.exception is None:
            raise _HookFailed("the check itself broke")

    bot.hooks.add_callback(AfterModelCallEvent, check)
    with pytest.raises(_HookFailed):
        await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                         capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    [message] = json.loads(str((otel_telemetry.span(CHAT).attributes or {})[
        "gen_ai.output.messages"]))  # fmt: skip
    calls = [(p["id"], p["name"], p["arguments"]) for p in message["parts"]
             if p["type"] == "tool_call"]  # fmt: skip
    assert calls == [(c.id, c.name, c.arguments) for c in s.CALLS]


async def test_a_turn_a_hook_ends_after_its_tools_answers_with_the_hooks_message(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An ``AfterToolsEvent`` hook ending the turn once the tools ran (``end_turn``): Strands
    asks the model nothing more and ends with the hook's message, told only in its final
    result. That message is the run's answer; before, the answer was the text the model said
    beside its tool calls."""
    from strands.hooks import AfterToolsEvent

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _turns, agent

    bot = agent(_model(_turns()), [s.weather_tool(), s.forecast_tool()], name="bot")

    def stop(event: AfterToolsEvent) -> None:
        event.end_turn = "Enough for now."

    bot.hooks.add_callback(AfterToolsEvent, stop)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT, "execute_tool weather", "execute_tool forecast"]],
    ]]]  # fmt: skip
    assert _said(otel_telemetry.span("invoke_agent bot")) == "Enough for now."
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("routing", ["fallback", "picked"])
async def test_each_call_of_a_model_router_names_the_model_it_went_to(
    otel_telemetry: InMemoryTelemetry, routing: str
) -> None:
    """A ``ModelRouter`` as the agent's model: its strategy picks a candidate per request (here
    the second, ``picked``) and falls back to the next when one fails (``fallback``: the first
    fails mid-stream). Each call names the model its request went to, its tokens on it. Before,
    every call named the router's first candidate, the model that never answered."""
    from strands import Agent
    from strands.models.routing import ModelRouter, RoutingStrategy

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage

    class Second(RoutingStrategy):
        async def select(self, context: Any, **kwargs: Any) -> Any:
            return context.candidates[1]

    turn = [{"messageStart": {"role": "assistant"}}, *_text("Sunny", "."),
            {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    first = _model([turn], fail=routing == "fallback", name="model-a")
    second = _model([turn], name="model-b")
    router = ModelRouter([first, second], strategy=Second() if routing == "picked" else None)
    bot = Agent(model=router, name="bot", callback_handler=None)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    answered = ["chat model-b"]
    if routing == "fallback":
        answered.insert(0, "chat model-a")
        failed = otel_telemetry.span("chat model-a").attributes or {}
        assert failed["error.type"] == "Overloaded"
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", answered]]]]
    chat = otel_telemetry.span("chat model-b").attributes or {}
    assert chat["gen_ai.response.model"] == "model-b"
    assert chat["gen_ai.usage.input_tokens"] == s.TURNS[1].input
    assert tokens(otel_telemetry) == s.TURNS[1].input
    assert otel_telemetry.open_spans() == []

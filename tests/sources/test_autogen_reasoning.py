"""AutoGen: the model's reasoning and its text reach the trace as what they are.

AutoGen's ``CreateResult.thought`` means two things ("the reasoning text ... and additional
text content besides function calls", its own docstring): every one of its clients puts the
text a model says beside tool calls there, and a text answer's reasoning. Its OpenAI client
streams the reasoning (the SDK's ``reasoning_content``) as chunks wrapped in ``<think>`` tags,
as a local R1 model writes it in its text, then repeats it, or the text beside the calls, in a
``ThoughtEvent``. Each case runs ``AssistantAgent`` with autogen-ext's
``OpenAIChatCompletionClient`` over the OpenAI SDK's mock transport, and is checked against
what AutoGen itself reports (its chunks, its ``ThoughtEvent``) and the chat span's output.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.protocol import ReasoningDelta, TextDelta
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import httpx, sse

pytest.importorskip("autogen_ext.models.openai")


def _streamed(*deltas: dict[str, Any]) -> bytes:
    """A streamed text answer made of ``deltas`` (``content`` or ``reasoning_content``)."""
    out = [chat._chunk(delta, n=5) for delta in deltas]
    out += [chat._chunk({}, "stop", n=5), chat._usage(s.TURNS[1], 5)]
    return sse(out, done=True)


def _whole(content: str | None, reasoning: str | None, *, calls: bool = False) -> Any:
    """A response not streamed: ``content``, the SDK's ``reasoning_content``, the script's
    two tool calls with ``calls``."""
    message: dict[str, Any] = {"role": "assistant", "content": content,
                               "reasoning_content": reasoning}  # fmt: skip
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.json}}
                                 for c in s.CALLS]  # fmt: skip
    body = {"id": "chatcmpl-9", "object": "chat.completion", "created": 1764600000,
            "model": chat.MODEL, "usage": {"prompt_tokens": 9, "completion_tokens": 3,
                                           "total_tokens": 12},
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}]}  # fmt: skip

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body, request=request)

    return respond


async def _run(
    telemetry: InMemoryTelemetry, *bodies: Any, stream: bool = True, family: str | None = None
) -> tuple[str, str, list[Any], list[Any]]:
    """The agent's run: its text and reasoning events, joined; the chat spans' output parts;
    what AutoGen streamed."""
    from autogen_agentchat.agents import AssistantAgent

    from agent_contract.sources.autogen_stream import autogen_events

    from ._fw_autogen_openai import client

    model = client(*bodies)
    if family is not None:
        model._model_info = {**model._model_info, "family": family}
    agent = AssistantAgent("weatherbot", model_client=model, model_client_stream=stream,
                           tools=[s.weather_tool(), s.forecast_tool()],
                           reflect_on_tool_use=True)  # fmt: skip
    kept: list[Any] = []
    events = await run_script(telemetry, autogen_events(agent, s.QUESTION, sink=kept.append),
                              agent_name="agent", capture_content=True)  # fmt: skip
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    parts = [json.loads(str((sp.attributes or {})["gen_ai.output.messages"]))[0]["parts"]
             for sp in telemetry.spans() if sp.name.startswith("chat")]  # fmt: skip
    assert telemetry.open_spans() == []
    return text, reasoning, parts, kept


def _said(parts: list[dict[str, Any]], kind: str) -> str:
    return "".join(p["content"] for p in parts if p["type"] == kind)


def _autogen(kept: list[Any], kind: str) -> list[str]:
    return [item.content for item in kept if type(item).__name__ == kind]


async def test_streamed_reasoning_before_tool_calls_is_reasoning_and_the_text_is_text(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The script's first turn: ``reasoning_content``, the words, two tool calls. AutoGen
    streams the reasoning as ``<think>`` chunks and puts the words in its thought."""
    text, reasoning, parts, kept = await _run(otel_telemetry, chat.turn_one(), chat.turn_two())

    assert _autogen(kept, "ModelClientStreamingChunkEvent")[:2] == ["<think>Two cities.",
                                                                      "</think>"]  # fmt: skip
    assert _autogen(kept, "ThoughtEvent") == ["Checking both."]
    assert reasoning == s.REASONING
    assert text == "Checking both.Sunny in Paris."
    assert _said(parts[0], "reasoning") == s.REASONING
    assert _said(parts[0], "text") == "Checking both."
    assert [p["type"] for p in parts[1]] == ["text"]


@pytest.mark.parametrize("thinking", ["Weigh the sky. ", "think it through, then answer "])
async def test_a_streamed_answers_reasoning_is_reported_once_as_streamed(
    otel_telemetry: InMemoryTelemetry, thinking: str
) -> None:
    """A text answer after reasoning: AutoGen streams the reasoning, then repeats it in a
    ``ThoughtEvent`` (which strips the tags character by character: a reasoning starting
    with "think" loses letters there); the trace has the streamed reasoning, once."""
    answer = _streamed({"role": "assistant", "content": ""},
                       {"reasoning_content": thinking}, {"reasoning_content": "Sunny."},
                       {"content": "It is "}, {"content": "sunny."})  # fmt: skip
    text, reasoning, parts, kept = await _run(otel_telemetry, answer)

    [thought] = _autogen(kept, "ThoughtEvent")
    assert thought.endswith("Sunny.")
    assert reasoning == thinking + "Sunny."
    assert text == "It is sunny."
    [only] = parts
    assert _said(only, "reasoning") == thinking + "Sunny."
    assert _said(only, "text") == "It is sunny."


async def test_a_local_r1_models_think_tags_in_its_text_are_reasoning(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A model of the R1 family writes its reasoning in its text between ``<think>`` tags
    (AutoGen parses them out of the result into its thought)."""
    answer = _streamed({"role": "assistant", "content": ""}, {"content": "<think>"},
                       {"content": "Weigh the sky."}, {"content": "</think>"},
                       {"content": "It is sunny."})  # fmt: skip
    text, reasoning, parts, kept = await _run(otel_telemetry, answer, family="r1")

    assert _autogen(kept, "ThoughtEvent") == ["Weigh the sky."]
    assert reasoning == "Weigh the sky."
    assert text == "It is sunny."
    assert _said(parts[0], "text") == "It is sunny."


async def test_a_text_that_only_mentions_the_tag_stays_text(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Reasoning comes before the answer: once the call said text, a chunk opening with the
    tag is text naming it."""
    answer = _streamed({"role": "assistant", "content": ""}, {"content": "Use a "},
                       {"content": "<think> tag."})  # fmt: skip
    text, reasoning, _, _ = await _run(otel_telemetry, answer)

    assert (text, reasoning) == ("Use a <think> tag.", "")


async def test_not_streamed_the_thought_beside_tool_calls_is_text_and_an_answers_is_reasoning(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``model_client_stream=False``: AutoGen's client puts a tool-calling response's text in
    its thought (and drops its ``reasoning_content``), and a text answer's reasoning there."""
    text, reasoning, parts, kept = await _run(
        otel_telemetry, _whole("Checking both.", "Two cities.", calls=True),
        _whole("Sunny in Paris.", "Weigh it."), stream=False,
    )  # fmt: skip

    assert _autogen(kept, "ThoughtEvent") == ["Checking both.", "Weigh it."]
    assert text == "Checking both.Sunny in Paris."
    assert reasoning == "Weigh it."
    assert [_said(p, "text") for p in parts] == ["Checking both.", "Sunny in Paris."]
    assert [_said(p, "reasoning") for p in parts] == ["", "Weigh it."]

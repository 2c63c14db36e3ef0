"""Strands' side requests: the model requests Strands makes outside the agent loop, with no hook
and no stream event. A ``SummarizingConversationManager`` answers a context overflow by asking
the agent's ``aux_model`` (its ``model`` unless one is given), or the ``summarization_agent`` it
was given, for a summary of the oldest messages, then asks the request again; given
``proactive_compression``, it summarises before a request that would fill the context. That
summary is a billed model call; the providers' spans stand down inside the run, so before it was
nowhere in the trace and its tokens were not counted. Now it is a chat span of its own, with its
tokens, before the request it made room for (after the one that overflowed). Runs in Strands'
own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens

pytest.importorskip("strands")


def _said(span: Any, key: str = "gen_ai.output.messages") -> str:
    messages = json.loads(str((span.attributes or {})[key]))
    return "".join(p.get("content", "") for m in messages for p in m["parts"])


@pytest.mark.parametrize(
    "case", ["overflow", "aux_model", "summarization_agent", "proactive", "proactive_aux_model"]
)
async def test_a_conversation_summary_is_a_call_of_its_own(
    otel_telemetry: InMemoryTelemetry, case: str
) -> None:
    from strands import Agent
    from strands.agent.conversation_manager import SummarizingConversationManager

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _usage

    def turn(text: str, usage: s.Turn) -> list[dict[str, Any]]:
        return [{"messageStart": {"role": "assistant"}}, *_text(text),
                {"messageStop": {"stopReason": "end_turn"}}, _usage(usage)]  # fmt: skip

    summary, answer = turn("They talked.", s.TURNS[0]), turn("Sunny.", s.TURNS[1])
    aux = case in ("aux_model", "summarization_agent", "proactive_aux_model")
    proactive = case.startswith("proactive")
    if aux:
        model = _model([answer], overflow=not proactive)
        side = _model([summary], name="scripted-aux")
    else:
        model = side = _model([summary, answer], overflow=not proactive)
    if proactive:  # any request fills a context this small
        model.config["context_window_limit"] = 10
    history = [{"role": role, "content": [{"text": f"{role} {i}"}]}
               for i in range(3) for role in ("user", "assistant")]  # fmt: skip
    summarizer = None
    if case == "summarization_agent":
        summarizer = Agent(model=side, name="summarizer", callback_handler=None)
    manager = SummarizingConversationManager(preserve_recent_messages=2,
                                             proactive_compression=proactive or None,
                                             summarization_agent=summarizer)  # fmt: skip
    bot = Agent(model=model, aux_model=side if case.endswith("aux_model") else None, name="bot",
                messages=history, conversation_manager=manager, callback_handler=None)  # fmt: skip
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    summarised = "chat scripted-aux" if aux else "chat scripted-converse"
    chats = [summarised, "chat scripted-converse"]
    if not proactive:  # the request that overflowed first
        chats.insert(0, "chat scripted-converse")
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", chats]]]]
    *overflowed, summarising, asked = sorted(
        (span for span in otel_telemetry.spans() if span.name.startswith("chat ")),
        key=lambda span: span.start_time or 0,
    )
    for span in overflowed:
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ContextWindowOverflowException"
    assert _said(summarising) == "They talked."
    assert _said(summarising, "gen_ai.input.messages").endswith(
        "Please summarize this conversation."
    )
    assert (summarising.attributes or {})["gen_ai.usage.input_tokens"] == s.TURNS[0].input
    assert _said(asked) == "Sunny."
    run = otel_telemetry.span("invoke_agent bot")
    assert _said(run) == "Sunny."
    # the summary made first (proactively, on the aux model) does not name the run's model
    assert (run.attributes or {})["gen_ai.request.model"] == "scripted-converse"
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_a_summary_that_fails_fails_its_own_call(otel_telemetry: InMemoryTelemetry) -> None:
    """The summary's request raises: Strands ends the run with that exception (raised from the
    overflow). Both calls fail, each with its own class, and the run with the summary's."""
    from strands import Agent
    from strands.agent.conversation_manager import SummarizingConversationManager
    from strands.types.exceptions import ModelThrottledException

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model

    model = _model([[]], overflow=True)
    side = _model([[]], refuse=True, name="scripted-aux")
    side.calls = 1  # (``refuse`` refuses the second request on): its first is refused, a 429
    history = [{"role": role, "content": [{"text": f"{role} {i}"}]}
               for i in range(3) for role in ("user", "assistant")]  # fmt: skip
    manager = SummarizingConversationManager(preserve_recent_messages=2)
    bot = Agent(model=model, aux_model=side, name="bot", messages=history, callback_handler=None,
                conversation_manager=manager)  # fmt: skip
    with pytest.raises(ModelThrottledException):
        await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot")

    kind = "ModelThrottledException"
    chats = ["chat scripted-converse", "chat scripted-aux"]
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", chats]]]]
    for name, error in zip(chats, ["ContextWindowOverflowException", kind], strict=True):
        span = otel_telemetry.span(name)
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == error
    assert (otel_telemetry.span("invoke_agent bot").attributes or {})["error.type"] == kind
    assert otel_telemetry.open_spans() == []


async def test_strands_models_name_the_server_they_send_to(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent on Strands' ``OpenAIModel`` given ``client_args`` (a gateway whose URL carries
    a password; Strands makes the client per request from them): its chat span names the
    gateway's host and port alone. A ``BedrockModel`` sends to its region's endpoint."""
    from strands import Agent
    from strands.models.bedrock import BedrockModel
    from strands.models.openai import OpenAIModel

    from agent_contract.sources.strands_stream import _server, strands_events

    from . import _script_chat as chat
    from ._http import transport

    secret = "pw-0123456789"
    args = {"api_key": "test", "base_url": f"https://u:{secret}@GW.example:9443/v1",
            "http_client": transport(chat.answer("Sunny."))}  # fmt: skip
    agent = Agent(model=OpenAIModel(client_args=args, model_id="gpt-4o-mini"), name="a",
                  callback_handler=None)  # fmt: skip
    await run_script(otel_telemetry, strands_events(agent, "Weather?"), agent_name="a")

    told = {s.name: s.attributes or {} for s in otel_telemetry.spans()}
    servers = {name: (a.get("server.address"), a.get("server.port")) for name, a in told.items()}
    assert servers == {
        "invoke_agent a": (None, None), "step 0": (None, None),
        "chat gpt-4o-mini": ("gw.example", 9443),
    }  # fmt: skip
    assert not any(secret in str(v) for a in told.values() for v in a.values())
    bedrock = BedrockModel(region_name="eu-west-1")
    assert _server(bedrock) == ("bedrock-runtime.eu-west-1.amazonaws.com", 443)

"""Google ADK's agent callbacks answering for the agent: a ``before_agent_callback`` returning
content (the agent is skipped, its model never called) and an ``after_agent_callback``
returning content (it replaces the agent's answer). ADK streams that content as the agent's
event, shaped as a model's; no model made it. Before, each was a chat span of its own, a
model call that never happened (a second one beside the real call for the ``after`` case);
now no chat span tells it, and the content is the run's answer. So is an
``after_model_callback``'s replacement of a streamed response, and the response of a tool
that skips the model's summary. Runs in ADK's own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("google.adk")

CHAT = "chat scripted-gemini"


def _answer(telemetry: InMemoryTelemetry, name: str) -> list[Any]:
    """The parts of a span's ``gen_ai.output.messages``."""
    [message] = json.loads(str((telemetry.span(name).attributes or {})["gen_ai.output.messages"]))
    return list(message["parts"])


def _says(text: str) -> Any:
    from google.genai import types

    return lambda callback_context: types.Content(role="model", parts=[types.Part(text=text)])


async def _run_bot(telemetry: InMemoryTelemetry, streamed: bool, **callbacks: Any) -> Any:
    """An agent ``bot`` whose model answers "model answer", with ``callbacks``, run streamed
    (SSE) or not with content captured; its model, to count the calls it got."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    model = _model([[types.Part(text="model answer")]])
    bot = LlmAgent(name="bot", model=model, **callbacks)
    mode = StreamingMode.SSE if streamed else StreamingMode.NONE
    source = google_adk_events(bot, "hi", run_config=RunConfig(streaming_mode=mode))
    await run_script(telemetry, source, agent_name="bot", capture_content=True)
    return model


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_a_before_agent_callbacks_answer_is_no_model_call(
    otel_telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    model = await _run_bot(otel_telemetry, streamed, before_agent_callback=_says("closed today"))

    assert model.calls == 0
    assert otel_telemetry.outline() == ["invoke_agent bot"]
    assert _answer(otel_telemetry, "invoke_agent bot") == [
        {"type": "text", "content": "closed today"}
    ]
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_an_after_agent_callbacks_answer_is_the_runs_not_a_second_call(
    otel_telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    from . import _script as s
    from ._trace import tokens

    model = await _run_bot(otel_telemetry, streamed, after_agent_callback=_says("(checked)"))

    assert model.calls == 1
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    assert _answer(otel_telemetry, CHAT) == [{"type": "text", "content": "model answer"}]
    assert _answer(otel_telemetry, "invoke_agent bot") == [{"type": "text", "content": "(checked)"}]
    assert tokens(otel_telemetry) == s.TURNS[0].input
    assert otel_telemetry.open_spans() == []


async def test_an_after_model_callbacks_replacement_is_the_runs_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An ``after_model_callback`` replacing the model's final response (a redaction, ADK's
    documented guardrail), streamed: the model's partials already went out, ADK's final
    response, what the agent answers, holds the callback's text. The call keeps what the model
    said, its tokens once; the run's answer is the agent's. Before, the run's answer was the
    streamed text the callback replaced."""
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    from . import _script as s
    from ._trace import tokens

    def redact(callback_context: Any, llm_response: Any) -> Any:
        if llm_response.partial:
            return None
        return LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text="[redacted]")])
        )

    model = await _run_bot(otel_telemetry, True, after_model_callback=redact)

    assert model.calls == 1
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    assert _answer(otel_telemetry, CHAT) == [{"type": "text", "content": "model answer"}]
    assert _answer(otel_telemetry, "invoke_agent bot") == [
        {"type": "text", "content": "[redacted]"}
    ]
    assert tokens(otel_telemetry) == s.TURNS[0].input
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize(
    ("returned", "answer"),
    [("found it", [{"type": "text", "content": "found it"}]),
     ({"sky": "sunny"}, [{"type": "json", "content": {"sky": "sunny"}}])],
    ids=["text", "dict"],
)  # fmt: skip
async def test_a_tool_that_skips_the_summary_answers_the_run(
    otel_telemetry: InMemoryTelemetry, returned: Any, answer: list[Any]
) -> None:
    """A tool setting ``tool_context.actions.skip_summarization``: ADK asks the model nothing
    more, the tool's response is the agent's final response. Before, the run's answer was the
    model's call of the tool."""
    from google.adk.agents import LlmAgent
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    def lookup(city: str, tool_context: ToolContext) -> Any:
        """Look the city up."""
        tool_context.actions.skip_summarization = True
        return returned

    ask = types.Part(
        function_call=types.FunctionCall(id="c1", name="lookup", args={"city": "Paris"})
    )
    model = _model([[ask], [types.Part(text="never asked")]])
    bot = LlmAgent(name="bot", model=model, tools=[lookup])
    await run_script(otel_telemetry, google_adk_events(bot, "Paris?"), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert model.calls == 1
    assert otel_telemetry.outline() == [
        ["invoke_agent bot", [["step 0", [CHAT, "execute_tool lookup"]]]]
    ]
    assert _answer(otel_telemetry, "invoke_agent bot") == answer
    assert otel_telemetry.open_spans() == []


class _CheckFailed(RuntimeError):
    """What the test's ``after_model_callback`` raises."""


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_an_after_model_callback_raising_fails_the_run_not_the_call(
    otel_telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    """An ``after_model_callback`` raising on the model's whole response: ADK ends the run with
    it (the same object) and never streams that response. The model answered and was billed:
    its call ends answered, with its text and tokens; the exception fails the step and the
    run. Before, the call failed with the callback's exception, cut short, its tokens lost."""
    from . import _script as s
    from ._trace import check_answered_then_failed

    failure = _CheckFailed("the check itself broke")

    def check(callback_context: Any, llm_response: Any) -> None:
        if not llm_response.partial:
            raise failure

    with pytest.raises(_CheckFailed) as raised:
        await _run_bot(otel_telemetry, streamed, after_model_callback=check)

    assert raised.value is failure
    check_answered_then_failed(otel_telemetry, CHAT, "_CheckFailed", s.TURNS[0].input)
    assert _answer(otel_telemetry, CHAT) == [{"type": "text", "content": "model answer"}]


class _GuardBroke(RuntimeError):
    """What the test's ``before_tool_callback`` raises."""


@pytest.mark.parametrize("owner", ["agent", "plugin"])
async def test_a_before_tool_callback_raising_fails_the_calls_it_stopped(
    otel_telemetry: InMemoryTelemetry, owner: str
) -> None:
    """A ``before_tool_callback`` (the agent's, or another plugin's) raising: ADK never runs
    the tools nor answers their calls, and the run ends with the exception (the same object;
    a plugin's in ADK's ``RuntimeError`` naming the plugin). Each call it stopped fails with
    its class, as a tool raising it does; the model's call stays answered. Before, the calls
    were only cut short (``incomplete``, no error)."""
    from google.adk.apps import App
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import InMemoryRunner

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fw
    from . import _script as s

    ran: list[str] = []
    failure = _GuardBroke("the guard itself broke")

    def weather(city: str) -> str:
        """Current weather of a city."""
        ran.append(city)
        return "sunny"

    def forecast(city: str) -> str:
        """Tomorrow's weather of a city."""
        ran.append(city)
        return "rain"

    def guard(*args: Any, **kwargs: Any) -> None:
        raise failure

    class Guard(BasePlugin):  # type: ignore[misc,unused-ignore]
        async def before_tool_callback(self, **kwargs: Any) -> None:
            guard()

    model = fw._model(fw._turns())
    bot = fw.agent(model, [weather, forecast])
    if owner == "agent":
        bot.before_tool_callback = guard
    plugins = [Guard(name="guard")] if owner == "plugin" else []
    runner = InMemoryRunner(app=App(name="app", root_agent=bot, plugins=plugins))
    with pytest.raises(Exception) as raised:
        await run_script(otel_telemetry, google_adk_events(runner, s.QUESTION), agent_name="adk")

    out = raised.value if owner == "agent" else raised.value.__cause__
    assert out is failure
    kind = "_GuardBroke" if owner == "agent" else "RuntimeError"  # ADK's, for a plugin's
    assert (model.calls, ran) == (1, [])
    assert otel_telemetry.outline() == [["invoke_agent adk", [
        ["step 0", [CHAT, "execute_tool weather", "execute_tool forecast"]],
    ]]]  # fmt: skip
    failed = {x.name: (x.attributes or {}).get("error.type") for x in otel_telemetry.spans()
              if x.name.startswith("execute_tool") and not x.status.is_ok}  # fmt: skip
    assert failed == {"execute_tool weather": kind, "execute_tool forecast": kind}
    assert otel_telemetry.span(CHAT).status.is_ok
    assert (otel_telemetry.span(CHAT).attributes or {})["gen_ai.usage.input_tokens"] == 120
    assert not otel_telemetry.span("invoke_agent adk").status.is_ok
    assert otel_telemetry.open_spans() == []


async def test_an_adk_gemini_on_a_vertex_client_names_its_regional_endpoint(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """ADK's ``Gemini`` given a google-genai client on Vertex AI in ``europe-west4`` (over
    httpx's mock transport): its chat span names the region's endpoint, as the client
    resolved it, and no other span names a server."""
    import httpx
    from google import genai
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini
    from google.oauth2.credentials import Credentials

    from agent_contract.sources.google_adk_stream import google_adk_events

    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny."}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2,
                              "totalTokenCount": 5}}  # fmt: skip
    sse = f"data: {json.dumps(body)}\n\n".encode()
    transport = httpx.MockTransport(
        lambda _: httpx.Response(200, content=sse, headers={"content-type": "text/event-stream"})
    )
    client = genai.Client(vertexai=True, project="p", location="europe-west4",
                          credentials=Credentials(token="test"),
                          http_options={"httpx_async_client": httpx.AsyncClient(
                              transport=transport)})  # fmt: skip
    agent = LlmAgent(name="bot", model=Gemini(model="gemini-2.5-flash", client=client))
    await run_script(otel_telemetry, google_adk_events(agent, "Weather?"), agent_name="bot")

    servers = {
        s.name: (
            (s.attributes or {}).get("server.address"),
            (s.attributes or {}).get("server.port"),
        )
        for s in otel_telemetry.spans()
    }
    assert servers == {
        "invoke_agent bot": (None, None), "step 0": (None, None),
        "chat gemini-2.5-flash": ("europe-west4-aiplatform.googleapis.com", 443),
    }  # fmt: skip

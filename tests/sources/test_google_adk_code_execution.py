"""Google ADK's code executors run on the agent's side (``UnsafeLocalCodeExecutor``, a
container's, Vertex's): the model writes a code block, ADK cuts its response at that block,
runs the code, and streams two events the model never made, the code it runs (the cut
response, rebuilt without the model's usage) and the execution's result (content of role
``model``), then asks the model again. The code's run is a tool execution of the agent's (an
``execute_tool code_execution`` span, its output the result), the request that wrote it keeps
its tokens, and no chat span tells the result as a model call. Runs in ADK's own environment
(``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from ._trace import tokens

pytest.importorskip("google.adk")

CHAT = "chat scripted-gemini"


async def _run(telemetry: InMemoryTelemetry, code: str, *, streamed: bool = True) -> Any:
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.code_executors import UnsafeLocalCodeExecutor
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    model = _model([[types.Part(text=f"Let me compute.\n```tool_code\n{code}\n```\n")],
                    [types.Part(text="It is 42.")]])  # fmt: skip
    bot = LlmAgent(name="bot", model=model, code_executor=UnsafeLocalCodeExecutor())
    mode = RunConfig(streaming_mode=StreamingMode.SSE if streamed else StreamingMode.NONE)
    await run_script(telemetry, google_adk_events(bot, "6*7?", run_config=mode),
                     agent_name="bot", capture_content=True)  # fmt: skip
    return model


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_code_the_agent_runs_is_a_tool_call_and_no_model_call(
    otel_telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    model = await _run(otel_telemetry, "print(6*7)", streamed=streamed)

    assert model.calls == 2
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [CHAT, "execute_tool code_execution"]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    # each request's tokens on its own call, once (the first one's event lost them)
    first, second = sorted((x for x in otel_telemetry.spans() if x.name == CHAT),
                           key=lambda x: x.start_time or 0)  # fmt: skip
    assert (first.attributes or {})["gen_ai.usage.input_tokens"] == s.TURNS[0].input
    assert (second.attributes or {})["gen_ai.usage.input_tokens"] == s.TURNS[1].input
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    ran = otel_telemetry.span("execute_tool code_execution")
    assert ran.status.status_code is StatusCode.UNSET
    assert "42" in str((ran.attributes or {})["gen_ai.tool.call.result"])
    assert "print(6*7)" in str((ran.attributes or {})["gen_ai.tool.call.arguments"])
    run = otel_telemetry.span("invoke_agent bot")
    assert json.loads(str((run.attributes or {})["gen_ai.output.messages"]))[0]["parts"] == [
        {"type": "text", "content": "It is 42."}
    ]
    assert otel_telemetry.open_spans() == []


async def test_code_that_fails_fails_its_tool_call(otel_telemetry: InMemoryTelemetry) -> None:
    await _run(otel_telemetry, "raise ValueError('no')")

    ran = otel_telemetry.span("execute_tool code_execution")
    assert ran.status.status_code is StatusCode.ERROR
    assert (ran.attributes or {})["error.type"] == "tool_error"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "unstreamed"])
async def test_code_gemini_ran_in_the_request_is_a_server_tool_call_part(
    otel_telemetry: InMemoryTelemetry, streamed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BuiltInCodeExecutor``: Gemini's own code execution tool runs the code within the
    request, the response telling the code (``executable_code``) and its outcome
    (``code_execution_result``) beside the text. The application ran nothing: a
    ``server_tool_call`` part and its response in the chat span's output, shaped as the
    official Google GenAI instrumentation writes them, and no tool span. They were dropped."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.code_executors import BuiltInCodeExecutor
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    monkeypatch.setenv("ADK_DISABLE_GEMINI_MODEL_ID_CHECK", "1")  # (a scripted Gemini's name)
    code = types.ExecutableCode(code="print(6*7)", language=types.Language.PYTHON)
    ran = types.CodeExecutionResult(outcome=types.Outcome.OUTCOME_OK, output="42\n")
    model = _model([[types.Part(executable_code=code), types.Part(code_execution_result=ran),
                     types.Part(text="It is 42.")]])  # fmt: skip
    bot = LlmAgent(name="bot", model=model, code_executor=BuiltInCodeExecutor())
    mode = RunConfig(streaming_mode=StreamingMode.SSE if streamed else StreamingMode.NONE)
    await run_script(otel_telemetry, google_adk_events(bot, "6*7?", run_config=mode),
                     agent_name="bot", capture_content=True)  # fmt: skip

    assert model.calls == 1
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    chat = otel_telemetry.span(CHAT)
    [said] = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert said["parts"] == [
        {"type": "text", "content": "It is 42."},
        {"type": "server_tool_call", "name": "code_execution",
         "server_tool_call": {"type": "code_execution", "code": "print(6*7)",
                              "language": "PYTHON"}},
        {"type": "server_tool_call_response",
         "server_tool_call_response": {"type": "code_execution", "outcome": "OUTCOME_OK",
                                       "output": "42\n"}},
    ]  # fmt: skip
    assert said["finish_reason"] == "stop"
    assert otel_telemetry.open_spans() == []


async def test_a_search_gemini_ran_in_the_request_is_a_server_tool_call_part(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool Gemini runs on its side (``tool_call`` and ``tool_response`` parts: its web
    search, named by their ``tool_type``): a ``server_tool_call`` part and its response in the
    chat span's output, as the official Google GenAI instrumentation writes them (``type`` the
    tool type, lowercase; ``arguments``; ``response``), no tool span. They were dropped."""
    from google.adk.agents import LlmAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    web = types.ToolType.GOOGLE_SEARCH_WEB
    asked = types.ToolCall(id="tc_1", tool_type=web, args={"queries": ["Paris weather"]})
    found = types.ToolResponse(id="tc_1", tool_type=web, response={"results": ["sunny"]})
    model = _model([[types.Part(tool_call=asked), types.Part(tool_response=found),
                     types.Part(text="Sunny.")]])  # fmt: skip
    bot = LlmAgent(name="bot", model=model)
    await run_script(otel_telemetry, google_adk_events(bot, "Weather?"), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    [said] = json.loads(str((otel_telemetry.span(CHAT).attributes or {})["gen_ai.output.messages"]))
    assert said["parts"] == [
        {"type": "text", "content": "Sunny."},
        {"type": "server_tool_call", "id": "tc_1", "name": "google_search_web",
         "server_tool_call": {"type": "google_search_web",
                              "arguments": {"queries": ["Paris weather"]}}},
        {"type": "server_tool_call_response", "id": "tc_1",
         "server_tool_call_response": {"type": "google_search_web",
                                       "response": {"results": ["sunny"]}}},
    ]  # fmt: skip
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("chunks", [True, False], ids=["found", "nothing-found"])
async def test_a_google_search_gemini_grounded_its_answer_in_is_a_server_tool_call_part(
    otel_telemetry: InMemoryTelemetry, chunks: bool
) -> None:
    """ADK's ``google_search`` tool: Gemini searches within the request and tells it only in
    the response's ``grounding_metadata`` (the ``web_search_queries`` it ran, the
    ``grounding_chunks`` it found). A ``google_search`` server tool call part, its response
    the chunks found, no tool span. It was dropped."""
    from google.adk.agents import LlmAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    web = types.GroundingChunkWeb(uri="https://example.org/paris", title="Paris")
    found = [types.GroundingChunk(web=web)] if chunks else None
    grounding = types.GroundingMetadata(web_search_queries=["Paris weather"],
                                        grounding_chunks=found)  # fmt: skip
    model = _model([[types.Part(text="Sunny.")]], grounding=grounding)
    bot = LlmAgent(name="bot", model=model)
    await run_script(otel_telemetry, google_adk_events(bot, "Weather?"), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", [CHAT]]]]]
    [said] = json.loads(str((otel_telemetry.span(CHAT).attributes or {})["gen_ai.output.messages"]))
    search = {
        "type": "server_tool_call",
        "name": "google_search",
        "server_tool_call": {"type": "google_search", "queries": ["Paris weather"]},
    }
    result = [{"web": {"uri": "https://example.org/paris", "title": "Paris"}}]
    response = {
        "type": "server_tool_call_response",
        "server_tool_call_response": {"type": "google_search", "result": result},
    }
    assert said["parts"] == [{"type": "text", "content": "Sunny."}, search,
                             *([response] if chunks else [])]  # fmt: skip
    assert said["finish_reason"] == "stop"
    counted = otel_telemetry.histograms()["gen_ai.invoke_agent.tool_calls"]
    assert sum(point.sum for point in counted) == 0
    assert otel_telemetry.open_spans() == []

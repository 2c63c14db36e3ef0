"""OpenAI Agents SDK hosted tools (``WebSearchTool``, ``FileSearchTool``): the provider runs
them inside the model's response and the SDK streams their calls (``tool_called`` items, the
raw item a ``web_search_call`` or ``file_search_call``) with no result item after. The
conventions tell a tool's execution as an ``execute_tool`` span whose ``gen_ai.tool.type``
says where it ran: ``extension`` for a provider's search, ``datastore`` for retrieval. Before,
such a call was in no span and no part of the response's output; the model's text beside it
is still the run's answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _fw_openai_agents as fw

pytest.importorskip("agents")


def _response_with(item: Any, text: str) -> Any:
    """The SDK's scripted model step streaming one response: the hosted tool's ``item`` (added
    searching, done as given), then the assistant's ``text``, then the completed response."""
    from agents.testing import ModelStep, assistant_message
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    message = assistant_message(text)
    usage = ResponseUsage(
        input_tokens=10, output_tokens=3, total_tokens=13,
        input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )  # fmt: skip

    def response(output: list[Any], status: Any) -> Response:
        return Response(
            id="resp_1", created_at=0, model="gpt-4o", object="response", output=output,
            parallel_tool_calls=True, tool_choice="auto", tools=[], status=status,
            usage=usage if status == "completed" else None,
        )  # fmt: skip

    searching = item.model_copy(update={"status": "in_progress"})
    return ModelStep.stream([
        ResponseCreatedEvent(type="response.created", response=response([], "in_progress"),
                             sequence_number=0),
        ResponseOutputItemAddedEvent(type="response.output_item.added", item=searching,
                                     output_index=0, sequence_number=1),
        ResponseOutputItemDoneEvent(type="response.output_item.done", item=item,
                                    output_index=0, sequence_number=2),
        ResponseTextDeltaEvent(type="response.output_text.delta", item_id=message.id,
                               output_index=1, content_index=0, delta=text, logprobs=[],
                               sequence_number=3),
        ResponseOutputItemDoneEvent(type="response.output_item.done", item=message,
                                    output_index=1, sequence_number=4),
        ResponseCompletedEvent(type="response.completed",
                               response=response([item, message], "completed"),
                               sequence_number=5),
    ])  # fmt: skip


async def _run(telemetry: InMemoryTelemetry, tool: Any, item: Any) -> None:
    from agents import Agent

    from agent_contract.sources.openai_agents import openai_agents_events

    agent = Agent(name="a", tools=[tool], model=fw.scripted(_response_with(item, "Sunny.")))
    await run_script(telemetry, openai_agents_events(agent, "Weather in Paris?"), agent_name="a",
                     capture_content=True)  # fmt: skip


def _answered(telemetry: InMemoryTelemetry, call_id: str) -> None:
    """The response said both, the hosted call and the model's text (the chat span's output,
    and so the run's answer), the text once; every span ended."""
    run = telemetry.span("invoke_agent a")
    assert run.status.status_code is StatusCode.UNSET
    for span in (run, telemetry.span("chat")):
        [said] = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
        kinds = [(part["type"], part.get("id") or part.get("content")) for part in said["parts"]]
        assert sorted(kinds) == [("text", "Sunny."), ("tool_call", call_id)]
    assert telemetry.open_spans() == []


@pytest.mark.parametrize("status", ["completed", "failed"])
async def test_a_web_search_the_provider_ran_is_an_extension_tool_span(
    otel_telemetry: InMemoryTelemetry, status: str
) -> None:
    from agents import WebSearchTool
    from openai.types.responses import ResponseFunctionWebSearch
    from openai.types.responses.response_function_web_search import ActionSearch

    search = ActionSearch(type="search", query="Paris weather")
    item = ResponseFunctionWebSearch(id="ws_1", status=status, type="web_search_call",  # type: ignore[arg-type]
                                     action=search)  # fmt: skip
    await _run(otel_telemetry, WebSearchTool(), item)

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat", "execute_tool web_search"]]]]
    ]
    tool = otel_telemetry.span("execute_tool web_search")
    attributes = dict(tool.attributes or {})
    assert attributes["gen_ai.tool.type"] == "extension"
    assert attributes["gen_ai.tool.call.id"] == "ws_1"
    arguments = json.loads(str(attributes["gen_ai.tool.call.arguments"]))
    assert arguments["query"] == "Paris weather"
    if status == "failed":
        assert tool.status.status_code is StatusCode.ERROR
        assert attributes["error.type"] == "tool_error"
    else:
        assert tool.status.status_code is StatusCode.UNSET
    _answered(otel_telemetry, "ws_1")


async def test_a_file_search_the_provider_ran_is_a_datastore_tool_span_with_its_results(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents import FileSearchTool
    from openai.types.responses import ResponseFileSearchToolCall
    from openai.types.responses.response_file_search_tool_call import Result

    found = Result(file_id="f1", filename="paris.txt", score=0.9, text="Paris: sunny")
    item = ResponseFileSearchToolCall(id="fs_1", status="completed", type="file_search_call",
                                      queries=["Paris weather"], results=[found])  # fmt: skip
    await _run(otel_telemetry, FileSearchTool(vector_store_ids=["vs_1"]), item)

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat", "execute_tool file_search"]]]]
    ]
    attributes = dict(otel_telemetry.span("execute_tool file_search").attributes or {})
    assert attributes["gen_ai.tool.type"] == "datastore"
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {
        "queries": ["Paris weather"]
    }
    [result] = json.loads(str(attributes["gen_ai.tool.call.result"]))
    assert result["text"] == "Paris: sunny"
    _answered(otel_telemetry, "fs_1")

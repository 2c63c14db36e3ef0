"""OpenAI Agents SDK hosted tools (``WebSearchTool``, ``FileSearchTool``, code interpreter,
hosted MCP): the provider runs them inside the model's response, which tells each as an output
item (a ``web_search_call``, ``file_search_call``...) beside the model's text; the SDK streams a
``tool_called`` item for it with no result item after. The application ran nothing, so the
GenAI conventions (``ServerToolCallPart``: "executed by the model provider on the server side
rather than by the client application") tell it as a ``server_tool_call`` part of the chat
span's output message, no ``execute_tool`` span, no count of the run's tool calls; the part
as the official OpenAI instrumentation writes it: the whole item, its ``type`` the tool's
name. Before, each was an ``execute_tool`` span and a ``tool_call`` part.
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


async def _run(telemetry: InMemoryTelemetry, tool: Any, item: Any, *, content: bool = True) -> None:
    from agents import Agent

    from agent_contract.sources.openai_agents import openai_agents_events

    agent = Agent(name="a", tools=[tool], model=fw.scripted(_response_with(item, "Sunny.")))
    await run_script(telemetry, openai_agents_events(agent, "Weather in Paris?"), agent_name="a",
                     capture_content=content)  # fmt: skip


def _server_part(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    """The hosted call's part of the response's output (the chat span's, and so the run's
    answer), the model's text beside it once; no tool span, no tool call counted, every span
    ended, the run answered."""
    assert telemetry.outline() == [["invoke_agent a", [["step 0", ["chat"]]]]]
    run = telemetry.span("invoke_agent a")
    assert run.status.status_code is StatusCode.UNSET
    assert telemetry.span("chat").status.status_code is StatusCode.UNSET
    counted = telemetry.histograms().get("gen_ai.invoke_agent.tool_calls", [])
    assert sum(point.sum for point in counted) == 0
    parts = []
    for span in (run, telemetry.span("chat")):
        [said] = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
        assert said["finish_reason"] == "stop"  # it answered; the provider ran the tool
        parts.append(said["parts"])
    assert parts[0] == parts[1]
    text, server = parts[0]
    assert text == {"type": "text", "content": "Sunny."}
    assert telemetry.open_spans() == []
    return server  # type: ignore[no-any-return]


@pytest.mark.parametrize("status", ["completed", "failed"])
async def test_a_web_search_the_provider_ran_is_a_server_tool_call_part(
    otel_telemetry: InMemoryTelemetry, status: str
) -> None:
    from agents import WebSearchTool
    from openai.types.responses import ResponseFunctionWebSearch
    from openai.types.responses.response_function_web_search import ActionSearch

    search = ActionSearch(type="search", query="Paris weather")
    item = ResponseFunctionWebSearch(id="ws_1", status=status, type="web_search_call",  # type: ignore[arg-type]
                                     action=search)  # fmt: skip
    await _run(otel_telemetry, WebSearchTool(), item)

    # a failed search is told by its status, as the item says it (the response answered)
    assert _server_part(otel_telemetry) == {
        "type": "server_tool_call", "id": "ws_1", "name": "web_search",
        "server_tool_call": {"type": "web_search", "status": status,
                             "action": {"type": "search", "query": "Paris weather"}},
    }  # fmt: skip


async def test_a_file_search_the_provider_ran_is_a_server_tool_call_part_with_its_results(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents import FileSearchTool
    from openai.types.responses import ResponseFileSearchToolCall
    from openai.types.responses.response_file_search_tool_call import Result

    found = Result(file_id="f1", filename="paris.txt", score=0.5, text="Paris: sunny")
    item = ResponseFileSearchToolCall(id="fs_1", status="completed", type="file_search_call",
                                      queries=["Paris weather"], results=[found])  # fmt: skip
    await _run(otel_telemetry, FileSearchTool(vector_store_ids=["vs_1"]), item)

    assert _server_part(otel_telemetry) == {
        "type": "server_tool_call", "id": "fs_1", "name": "file_search",
        "server_tool_call": {
            "type": "file_search", "status": "completed", "queries": ["Paris weather"],
            "results": [{"file_id": "f1", "filename": "paris.txt", "score": 0.5,
                         "text": "Paris: sunny"}],
        },
    }  # fmt: skip


async def test_a_hosted_mcp_call_is_named_after_its_tool_and_private_by_default(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents import HostedMCPTool
    from openai.types.responses.response_output_item import McpCall

    item = McpCall(id="mcp_1", type="mcp_call", name="forecast", server_label="weather",
                   arguments='{"city": "Paris"}', output="sunny", status="completed")  # fmt: skip
    config = {"type": "mcp", "server_label": "weather", "server_url": "https://mcp.invalid",
              "require_approval": "never"}  # fmt: skip
    tool = HostedMCPTool(tool_config=config)  # type: ignore[arg-type]
    await _run(otel_telemetry, tool, item)

    server = _server_part(otel_telemetry)
    assert (server["name"], server["id"]) == ("forecast", "mcp_1")
    assert server["server_tool_call"]["type"] == "mcp"
    assert server["server_tool_call"]["output"] == "sunny"

    otel_telemetry.clear()  # content off (the default): nothing of it is written
    await _run(otel_telemetry, tool, item, content=False)
    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", ["chat"]]]]]
    assert not any("forecast" in str(v) or "Paris" in str(v) for sp in otel_telemetry.spans()
                   for v in (sp.attributes or {}).values())  # fmt: skip


async def test_a_computer_call_the_application_ran_is_a_tool_span_with_its_action(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``computer_call`` is the model asking the application to act (``ComputerTool``: the
    SDK runs the action on the agent's computer and answers with a screenshot, its
    ``computer_call_output``): a tool call the client ran, so an ``execute_tool computer``
    span with the action as its arguments and a ``tool_call`` part of the asking chat span.
    It was an ``execute_tool unknown`` span with no arguments, the asking call telling none."""
    from agents import Agent, AsyncComputer, ComputerTool
    from agents.testing import ModelStep, assistant_message
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseComputerToolCall,
        ResponseCreatedEvent,
        ResponseOutputItemDoneEvent,
    )

    from agent_contract.sources.openai_agents import openai_agents_events

    class Screen(AsyncComputer):
        """A browser the agent clicks in, each click kept."""

        def __init__(self) -> None:
            self.clicked: list[tuple[int, int]] = []

        environment = "browser"  # type: ignore[assignment]
        dimensions = (800, 600)  # type: ignore[assignment]

        async def screenshot(self) -> str:
            return "aGVsbG8="

        async def click(self, x: int, y: int, button: str) -> None:
            self.clicked.append((x, y))

        async def double_click(self, x: int, y: int) -> None: ...
        async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None: ...
        async def type(self, text: str) -> None: ...
        async def wait(self) -> None: ...
        async def move(self, x: int, y: int) -> None: ...
        async def keypress(self, keys: list[str]) -> None: ...
        async def drag(self, path: list[tuple[int, int]]) -> None: ...

    call = ResponseComputerToolCall.model_validate({
        "id": "cu_1", "call_id": "call_1", "type": "computer_call", "status": "completed",
        "action": {"type": "click", "x": 1, "y": 2, "button": "left"},
        "pending_safety_checks": [],
    })  # fmt: skip

    def response(output: list[Any], status: Any) -> Response:
        return Response(id="resp_1", created_at=0, model="gpt-4o", object="response",
                        output=output, parallel_tool_calls=True, tool_choice="auto", tools=[],
                        status=status)  # fmt: skip

    asking = ModelStep.stream([
        ResponseCreatedEvent(type="response.created", response=response([], "in_progress"),
                             sequence_number=0),
        ResponseOutputItemDoneEvent(type="response.output_item.done", item=call,
                                    output_index=0, sequence_number=1),
        ResponseCompletedEvent(type="response.completed",
                               response=response([call], "completed"), sequence_number=2),
    ])  # fmt: skip
    model = fw.scripted(asking, ModelStep(output=[assistant_message("Clicked.")]))
    screen = Screen()
    agent = Agent(name="a", tools=[ComputerTool(computer=screen)], model=model)
    await run_script(otel_telemetry, openai_agents_events(agent, "Click it"), agent_name="a",
                     capture_content=True)  # fmt: skip

    assert screen.clicked == [(1, 2)]
    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat", "execute_tool computer"]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    ran = dict(otel_telemetry.span("execute_tool computer").attributes or {})
    assert ran["gen_ai.tool.call.id"] == "call_1"
    assert json.loads(str(ran["gen_ai.tool.call.arguments"])) == {
        "type": "click", "x": 1, "y": 2, "button": "left"
    }  # fmt: skip
    asker = min((sp for sp in otel_telemetry.spans() if sp.name == "chat"),
                key=lambda sp: sp.start_time or 0)  # fmt: skip
    [said] = json.loads(str((asker.attributes or {})["gen_ai.output.messages"]))
    assert [(p["type"], p["name"], p["id"]) for p in said["parts"]] == [
        ("tool_call", "computer", "call_1")
    ]
    assert otel_telemetry.open_spans() == []

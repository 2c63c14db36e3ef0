"""LangGraph: a tool the provider ran inside the model's response (Anthropic's web search
here: a ``server_tool_use`` block and its ``web_search_tool_result``), which LangChain's
``content_blocks`` translate to its standard ``server_tool_call`` / ``server_tool_result``
blocks whatever the provider. The application ran nothing: the conventions tell it in the chat
span's output message, a ``server_tool_call`` part and its ``server_tool_call_response``, no
``execute_tool`` span, no tool call of the run's counted, and the call's finish reason its
own. Before, it was on no span at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("langgraph")


def _graph(content: list[dict[str, Any]]) -> Any:
    """LangChain's ``create_agent`` on its fake chat model answering once with ``content``, as
    ``ChatAnthropic`` gives a response's blocks."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
            message = AIMessageChunk(
                content=content, id="r1", usage_metadata=usage,  # type: ignore[arg-type]
                response_metadata={"model_provider": "anthropic", "model_name": "claude",
                                   "stop_reason": "end_turn"},
                chunk_position="last",
            )  # fmt: skip
            yield ChatGenerationChunk(message=message)

    return create_agent(Scripted(messages=iter(())), [], name="searcher")


@pytest.mark.parametrize("failed", [False, True], ids=["found", "failed"])
async def test_a_web_search_the_provider_ran_is_a_server_tool_call_part(
    otel_telemetry: InMemoryTelemetry, failed: bool
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    found = [{"type": "web_search_result", "url": "https://example.org/paris", "title": "P"}]
    error = {"type": "web_search_tool_result_error", "error_code": "unavailable"}
    content = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "Paris weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": error if failed else found},
        {"type": "text", "text": "Sunny."},
    ]  # fmt: skip
    source = langgraph_events(_graph(content), {"messages": [("user", "Weather in Paris?")]})
    await run_script(otel_telemetry, source, agent_name="searcher", capture_content=True)

    [chat] = [s.name for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert otel_telemetry.outline() == [["invoke_agent searcher", [["step 0", [chat]]]]]
    [said] = json.loads(
        str(dict(otel_telemetry.span(chat).attributes or {})["gen_ai.output.messages"])
    )
    assert said["finish_reason"] == "stop"  # it answered; the search ran on the provider's side
    by_type = {p["type"]: p for p in said["parts"]}
    assert by_type["text"]["content"] == "Sunny."
    assert by_type["server_tool_call"] == {
        "type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search",
        "server_tool_call": {"type": "web_search", "arguments": {"query": "Paris weather"}},
    }  # fmt: skip
    response = by_type["server_tool_call_response"]
    assert response["id"] == "srvtoolu_1"
    detail = response["server_tool_call_response"]
    assert detail["type"] == "web_search"
    assert detail["status"] == ("error" if failed else "success")
    if not failed:
        assert "https://example.org/paris" in json.dumps(detail["result"])
    counted = otel_telemetry.histograms()["gen_ai.invoke_agent.tool_calls"]
    assert sum(point.sum for point in counted) == 0
    assert otel_telemetry.open_spans() == []

"""pydantic-ai's built-in tools (``WebSearchTool``, ``CodeExecutionTool``): the provider runs
them within the request, and the response tells each call and its outcome beside the text
(a ``builtin-tool-call`` part and its ``builtin-tool-return``). The application runs nothing,
so there is no ``execute_tool`` span: the GenAI conventions tell such calls in the chat span's
output message, a ``server_tool_call`` part and its ``server_tool_call_response``. They were
dropped: a chat span told only the text, as if no search had run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("pydantic_ai")

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _agent() -> Any:
    """A ``FunctionModel`` streaming what a provider answers after running its web search and
    its code execution: each call, its outcome, then the text."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import NativeToolCallPart, NativeToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def ran(name: str, call_id: str, args: dict[str, Any]) -> Any:
        return NativeToolCallPart(tool_name=name, args=args, tool_call_id=call_id,
                                  provider_name="function")  # fmt: skip

    found = NativeToolReturnPart(tool_name="web_search", content={"found": "sunny"},
                                 tool_call_id="ws_1", provider_name="function")  # fmt: skip

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield {0: ran("web_search", "ws_1", {"query": "Paris weather"})}
        yield {1: found}
        yield {2: ran("code_execution", "ce_1", {"code": f"k='{SECRET}'"})}
        yield "Sunny in Paris."

    return Agent(FunctionModel(stream_function=stream), name="a")  # fmt: skip


def _output(telemetry: InMemoryTelemetry) -> list[Any]:
    chat = telemetry.span("chat function::stream").attributes or {}
    [message] = json.loads(str(chat["gen_ai.output.messages"]))
    return [message["parts"], message["finish_reason"]]


async def test_built_in_tools_are_server_tool_call_parts_of_the_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    await run_script(otel_telemetry, pydantic_ai_events(_agent(), "Weather?"), agent_name="a",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", ["chat function::stream"]]]]]
    parts, finish = _output(otel_telemetry)
    assert finish == "stop"  # it answered: the tools it told ran on the provider's side
    assert parts[0] == {"type": "text", "content": "Sunny in Paris."}
    search, found, code = parts[1:]
    assert search == {"type": "server_tool_call", "id": "ws_1", "name": "web_search",
                      "server_tool_call": {"type": "web_search",
                                           "arguments": {"query": "Paris weather"}}}  # fmt: skip
    assert found == {"type": "server_tool_call_response", "id": "ws_1",
                     "server_tool_call_response": {"type": "web_search",
                                                   "result": {"found": "sunny"}}}  # fmt: skip
    assert (code["type"], code["id"], code["name"]) == ("server_tool_call", "ce_1",
                                                        "code_execution")  # fmt: skip
    assert SECRET not in json.dumps(code)  # scrubbed as any content
    assert not [sp.name for sp in otel_telemetry.spans() if sp.name.startswith("execute_tool")]
    assert otel_telemetry.open_spans() == []

    otel_telemetry.clear()  # content off (the default): none of it is written
    await run_script(otel_telemetry, pydantic_ai_events(_agent(), "Weather?"), agent_name="a")
    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", ["chat function::stream"]]]]]
    assert not any("Paris weather" in str(v) for sp in otel_telemetry.spans()
                   for v in (sp.attributes or {}).values())  # fmt: skip

"""Tools the provider runs within a request (OpenAI's web search, file search, code
interpreter, hosted MCP, image generation; Anthropic's web search and code execution): the
response tells each call, and its outcome, beside the model's text. The GenAI conventions
(``ServerToolCallPart``: "executed by the model provider on the server side rather than by the
client application") tell them as ``server_tool_call`` and ``server_tool_call_response`` parts
of the chat span's output message, shaped as the official OpenAI and Anthropic
instrumentations write them (the item's or block's own fields, ``type`` the tool's name): no
``execute_tool`` span, no tool call counted. The plain Responses and Messages readers dropped
them. The real SDKs over their mock transports, serving the bodies each provider sends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.events import Message
from agent_otel.testing import InMemoryTelemetry, run_script

from ._http import anthropic_client, openai_client, sse

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SEARCH = {"id": "ws_1", "type": "web_search_call", "status": "completed",
          "action": {"type": "search", "query": "Paris weather"}}  # fmt: skip
CODE = {"id": "ci_1", "type": "code_interpreter_call", "status": "completed",
        "code": f"key = '{SECRET}'\nprint(6 * 7)", "container_id": "cntr_1",
        "outputs": [{"type": "logs", "logs": "42\n"}]}  # fmt: skip


def _responses(streamed: list[dict[str, Any]], whole: list[dict[str, Any]]) -> bytes:
    """A Responses stream: each of ``streamed`` added in progress and done, then the answer's
    text, then ``response.completed`` whose output is ``whole`` and the message."""
    response = {"id": "resp_1", "object": "response", "created_at": 1764600000,
                "model": "gpt-4o-2024-08-06", "status": "in_progress", "output": [],
                "usage": None, "error": None, "incomplete_details": None,
                "parallel_tool_calls": True, "tools": []}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for index, item in enumerate(streamed):
        events += [
            {"type": "response.output_item.added", "output_index": index,
             "item": {k: v for k, v in item.items() if k not in ("outputs", "results")}
             | {"status": "in_progress"}},
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]  # fmt: skip
    part = {"type": "output_text", "text": "It is 42.", "annotations": [], "logprobs": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [part]}  # fmt: skip
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": len(streamed),
         "content_index": 0, "delta": "It is 42.", "logprobs": []},
        {"type": "response.output_item.done", "output_index": len(streamed), "item": message},
    ]  # fmt: skip
    usage = {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 25}  # fmt: skip
    final = response | {"status": "completed", "output": [*whole, message], "usage": usage}
    events.append({"type": "response.completed", "response": final})
    return sse([e | {"sequence_number": k} for k, e in enumerate(events)])


def _responses_run(body: bytes) -> AsyncIterator[Any]:
    """One streamed Responses request answered ``body``, as events."""
    from agent_contract.sources.openai_responses import stream_responses

    messages = [Message(role="user", content="What is 6 times 7?")]
    return stream_responses(openai_client(body), messages, "gpt-4o")


async def _run_responses(telemetry: InMemoryTelemetry, body: bytes) -> list[dict[str, Any]]:
    await run_script(telemetry, _responses_run(body), agent_name="a", capture_content=True)
    return _output(telemetry, "chat gpt-4o")


def _output(telemetry: InMemoryTelemetry, chat: str) -> list[dict[str, Any]]:
    """The chat span's output parts, checked: one step of one chat span (no tool span), none
    failed, no tool call counted, every span ended, finish ``stop`` (it answered), the
    text first."""
    assert telemetry.outline() == [["invoke_agent a", [["step 0", [chat]]]]]
    assert all(sp.status.status_code is StatusCode.UNSET for sp in telemetry.spans())
    counted = telemetry.histograms().get("gen_ai.invoke_agent.tool_calls", [])
    assert sum(point.sum for point in counted) == 0
    assert telemetry.open_spans() == []
    [message] = json.loads(str(telemetry.span(chat).attributes["gen_ai.output.messages"]))  # type: ignore[index]
    assert message["finish_reason"] == "stop"
    assert message["parts"][0]["type"] == "text"
    return message["parts"][1:]  # type: ignore[no-any-return]


async def test_responses_streamed_server_tools_are_server_tool_call_parts_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    parts = await _run_responses(otel_telemetry, _responses([SEARCH, CODE], [SEARCH, CODE]))

    search, code = parts  # each once, though told done and again in the whole response
    assert search == {"type": "server_tool_call", "id": "ws_1", "name": "web_search",
                      "server_tool_call": {"type": "web_search", "status": "completed",
                                           "action": {"type": "search",
                                                      "query": "Paris weather"}}}  # fmt: skip
    assert (code["id"], code["name"]) == ("ci_1", "code_interpreter")
    told = code["server_tool_call"]
    assert (told["type"], told["outputs"]) == (
        "code_interpreter",
        [{"type": "logs", "logs": "42\n"}],
    )
    assert "print(6 * 7)" in told["code"] and SECRET not in told["code"]  # scrubbed as any content

    otel_telemetry.clear()  # content off (the default): nothing of them is written
    await run_script(otel_telemetry, _responses_run(_responses([SEARCH], [SEARCH])), agent_name="a")
    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", ["chat gpt-4o"]]]]]
    assert "gen_ai.output.messages" not in (otel_telemetry.span("chat gpt-4o").attributes or {})
    assert not any("Paris" in str(v) or "web_search" in str(v) for sp in otel_telemetry.spans()
                   for v in (sp.attributes or {}).values())  # fmt: skip


async def test_responses_server_tools_told_only_in_the_whole_response_failed_by_their_status(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    mcp = {"id": "mcp_1", "type": "mcp_call", "name": "roll", "server_label": "dice",
           "arguments": '{"expression": "2d4"}', "status": "failed",
           "error": {"type": "mcp_protocol_error", "code": -32000,
                     "message": "the server refused"}}  # fmt: skip
    image = {"id": "ig_1", "type": "image_generation_call", "status": "completed",
             "result": "iVBORw0KGgo="}  # fmt: skip
    parts = await _run_responses(otel_telemetry, _responses([], [mcp, image]))

    called, drawn = parts
    # a failed tool of the provider's: its part says so (the response itself answered)
    assert called == {"type": "server_tool_call", "id": "mcp_1", "name": "roll",
                      "server_tool_call": {"type": "mcp", "server_label": "dice",
                                           "arguments": '{"expression": "2d4"}',
                                           "status": "failed",
                                           "error": {"type": "mcp_protocol_error", "code": -32000,
                     "message": "the server refused"}}}  # fmt: skip
    assert (drawn["name"], drawn["server_tool_call"]["type"]) == ("image_generation",) * 2


def _messages(blocks: list[tuple[dict[str, Any], str | None]]) -> bytes:
    """An Anthropic stream of ``blocks``, each started as given and its input streamed as
    JSON deltas when a text is given, then the answer's text."""
    usage = {"input_tokens": 20, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": 1}  # fmt: skip
    message = {"id": "msg_01", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": usage}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    blocks = [*blocks, ({"type": "text", "text": ""}, None)]
    for index, (block, streamed) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        if streamed is not None:
            delta = {"type": "input_json_delta", "partial_json": streamed}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        if block["type"] == "text":
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": "It is 42."}})  # fmt: skip
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return sse(events, named=True)


async def test_anthropic_server_tools_are_server_tool_call_parts_with_their_results(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.anthropic_messages import stream_messages

    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://weather.invalid/paris",
                          "title": "Paris", "encrypted_content": "EqgfCioI",
                          "page_age": None}]}  # fmt: skip
    run = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {}}
    ran = {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_2",
           "content": {"type": "code_execution_result", "stdout": "42\n", "stderr": "",
                       "return_code": 0, "content": []}}  # fmt: skip
    body = _messages([(use, '{"query": "Paris weather"}'), (found, None),
                      (run, '{"code": "print(6 * 7)"}'), (ran, None)])  # fmt: skip
    client = anthropic_client(body)
    messages = [Message(role="user", content="What is 6 times 7?")]
    events = stream_messages(client, messages, "claude-sonnet-4-5", max_tokens=256)
    await run_script(otel_telemetry, events, agent_name="a", capture_content=True)

    search, result, code, outcome = _output(otel_telemetry, "chat claude-sonnet-4-5")
    assert search == {"type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search",
                      "server_tool_call": {"type": "web_search",
                                           "input": {"query": "Paris weather"}}}  # fmt: skip
    assert result["type"] == "server_tool_call_response" and result["id"] == "srvtoolu_1"
    assert result["server_tool_call_response"]["type"] == "web_search"
    [page] = result["server_tool_call_response"]["content"]
    assert page["url"] == "https://weather.invalid/paris"
    assert code["server_tool_call"] == {"type": "code_execution", "input": {"code": "print(6 * 7)"}}
    assert outcome["id"] == "srvtoolu_2"
    told = outcome["server_tool_call_response"]
    assert (told["type"], told["content"]["stdout"]) == ("code_execution", "42\n")


async def test_a_server_tool_detail_whose_type_cannot_be_read_costs_nothing_but_its_type(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A detail whose ``type`` runs code that raises when read (its truth, its text): the
    call's parts are still written, typed by the tool's name, its other fields kept."""
    from agent_contract.protocol import LLMCallStart, TextDelta, Usage
    from agent_contract.sources._server_tools import ServerToolCall, ServerToolCallsEnd
    from hostile_types import Unreadable

    told = ServerToolCall("ws_1", "web_search", {"type": Unreadable(), "query": "Paris"},
                          {"type": Unreadable(), "result": "Sunny"})  # fmt: skip
    events = [LLMCallStart(model="m", provider="openai", messages=[Message(role="user",
                                                                           content="Weather?")]),
              TextDelta(text="Sunny."), Usage(input_tokens=3, output_tokens=1),
              ServerToolCallsEnd(model="m", calls=(told,))]  # fmt: skip
    await run_script(otel_telemetry, events, agent_name="a", capture_content=True)

    [message] = json.loads(str(otel_telemetry.span("chat m").attributes["gen_ai.output.messages"]))
    assert message["parts"][1:] == [
        {"type": "server_tool_call", "id": "ws_1", "name": "web_search",
         "server_tool_call": {"type": "web_search", "query": "Paris"}},
        {"type": "server_tool_call_response", "id": "ws_1",
         "server_tool_call_response": {"type": "web_search", "result": "Sunny"}},
    ]  # fmt: skip


@pytest.mark.parametrize("ending", ["server", "unrun"])
async def test_tools_told_by_a_calls_end_go_to_the_call_it_names(
    otel_telemetry: InMemoryTelemetry, ending: str
) -> None:
    """Two requests open at once (by ``call_id``): the tools an end tells (the provider's own,
    or calls that never ran) are parts of the output of the call that end names, as its
    text and its end are, not of the other call, the newer."""
    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, Usage
    from agent_contract.sources._server_tools import ServerToolCall, ServerToolCallsEnd
    from agent_contract.sources._unrun import UnrunCallsEnd

    asked = [Message(role="user", content="Weather?")]
    if ending == "server":
        told: Any = ServerToolCallsEnd(
            model="first",
            call_id="a",
            calls=(ServerToolCall("ws_1", "web_search", {"type": "web_search", "query": "Paris"}),),
        )
        kind = "server_tool_call"
    else:
        told = UnrunCallsEnd(
            model="first",
            call_id="a",
            unrun=(ToolCall(id="c1", function=FunctionCall("weather", '{"city": "Paris"}')),),
        )
        kind = "tool_call"
    events = [LLMCallStart(model="first", provider="openai", call_id="a", messages=asked),
              LLMCallStart(model="second", provider="openai", call_id="b", messages=asked),
              Usage(input_tokens=3, output_tokens=1, model="first"), told,
              Usage(input_tokens=3, output_tokens=1, model="second"),
              LLMCallEnd(model="second", call_id="b")]  # fmt: skip
    await run_script(otel_telemetry, events, agent_name="a", capture_content=True)

    def kinds(name: str) -> list[str]:
        said = (otel_telemetry.span(name).attributes or {}).get("gen_ai.output.messages")
        return [part["type"] for m in json.loads(str(said or "[]")) for part in m["parts"]]

    assert kinds("chat first") == [kind]
    assert kind not in kinds("chat second")

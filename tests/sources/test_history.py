"""Each framework's model request, read as contract messages, on the framework's own classes;
and the ``LLMCallStart`` that reads it only when someone reads its ``messages``."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_contract.events import LLMCallStart, Message
from agent_contract.invoke import collect
from agent_contract.sources import _history as h


def _shape(messages: list[Message] | None) -> list[tuple[Any, ...]]:
    assert messages is not None
    return [
        (m.role, m.content, m.tool_call_id,
         [(c.id, c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls or ()])
        for m in messages
    ]  # fmt: skip


# --- the lazy event ------------------------------------------------------------------------------
def test_a_call_starts_messages_are_read_only_when_read_and_only_once() -> None:
    reads: list[tuple[Any, ...]] = []

    def read(*request: Any) -> list[Message]:
        reads.append(request)
        return [Message(role="user", content=str(request[0]))]

    start = h.call_start("m", "openai", {"stream": True}, read, "hi")

    assert reads == []
    assert type(start).__name__ == "LLMCallStart" and isinstance(start, LLMCallStart)
    assert (start.model, start.provider, start.params) == ("m", "openai", {"stream": True})
    assert start.messages == [Message(role="user", content="hi")]
    assert start.messages is start.messages
    assert reads == [("hi",)]


def test_a_call_start_keeps_its_own_request_when_the_framework_list_grows() -> None:
    history = ["first"]
    start = h.call_start(None, None, {}, h.langchain_messages, tuple(history))
    history.append("second")  # the framework's next call

    assert [m.content for m in start.messages or ()] == ["first"]


def test_setting_a_call_starts_messages_replaces_the_request() -> None:
    start = h.call_start(None, None, {}, pytest.fail)
    start.messages = [Message(role="user", content="set")]

    assert start.messages == [Message(role="user", content="set")]


def test_a_call_start_copies_pickles_and_compares_as_the_contract_event() -> None:
    start = h.call_start("m", None, {}, h.langchain_messages, ("hi",))
    plain = LLMCallStart(model="m", params={}, messages=[Message(role="user", content="hi")])

    for twin in (copy.copy(start), copy.deepcopy(start), pickle.loads(pickle.dumps(start))):
        assert twin.messages == plain.messages
    assert start == type(start)(model="m", params={}, messages=plain.messages)
    assert "content='hi'" in repr(start)


async def test_collect_counts_the_lazy_start_as_a_call() -> None:
    async def events() -> Any:
        yield h.call_start("m", None, {}, pytest.fail)

    result = await collect(events())

    assert len(result.steps) == 1  # an LLM call is step content; its messages were not read


# --- LangChain -----------------------------------------------------------------------------------
def test_langchain_messages_read_as_the_contracts() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    history = [
        messages.SystemMessage("Be brief."),
        messages.HumanMessage([{"type": "text", "text": "Look:"},
                               {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]),
        messages.AIMessage("Checking.", tool_calls=[{"name": "weather", "args": {"city": "Paris"},
                                                     "id": "c1"}]),
        messages.ToolMessage("sunny", tool_call_id="c1"),
        messages.ChatMessage(role="developer", content="Mind the units."),
    ]  # fmt: skip

    read = h.langchain_messages(history)

    assert _shape(read) == [
        ("system", "Be brief.", None, []),
        ("user", [{"type": "text", "text": "Look:"},
                  {"type": "image_url", "image_url": {"url": "https://x/y.png"}}], None, []),
        ("assistant", "Checking.", None, [("c1", "weather", {"city": "Paris"})]),
        ("tool", "sunny", "c1", []),
        ("system", "Mind the units.", None, []),
    ]  # fmt: skip
    assert h.langchain_messages(["a prompt"]) == [Message(role="user", content="a prompt")]


# --- OpenAI Responses input (the Agents SDK) -----------------------------------------------------
def test_responses_input_items_read_as_the_contracts() -> None:
    items = [
        {"role": "user", "content": "Weather?"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "P"}'},
        {"type": "function_call", "call_id": "c2", "name": "forecast", "arguments": "{}"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text",
                                                                        "text": "none"}]},
    ]  # fmt: skip

    read = h.responses_messages("Be brief.", items)

    assert _shape(read) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?", None, []),
        ("assistant", [{"type": "text", "text": "Checking."}], None,
         [("c1", "weather", {"city": "P"}), ("c2", "forecast", {})]),
        ("tool", "sunny", "c1", []),
        ("tool", '[{"type": "input_text", "text": "none"}]', "c2", []),
    ]  # fmt: skip
    assert _shape(h.responses_messages(None, "Hi")) == [("user", "Hi", None, [])]


def test_the_agents_sdks_own_item_models_read_like_its_dicts() -> None:
    pytest.importorskip("agents")
    from openai.types.responses import ResponseFunctionToolCall

    call = ResponseFunctionToolCall(type="function_call", call_id="c1", name="w", arguments="{}")

    assert _shape(h.responses_messages(None, [call])) == [("assistant", None, None,
                                                           [("c1", "w", {})])]  # fmt: skip


# --- pydantic-ai ---------------------------------------------------------------------------------
def test_pydantic_ai_history_and_request_read_as_the_contracts() -> None:
    m = pytest.importorskip("pydantic_ai.messages")
    first = m.ModelRequest(
        parts=[m.SystemPromptPart("Be brief."),
               m.UserPromptPart(["Look:", m.ImageUrl(url="https://x/y.png")])],
        instructions="Use tools.",
    )  # fmt: skip
    response = m.ModelResponse(parts=[m.TextPart("Checking."),
                                      m.ToolCallPart("weather", {"city": "P"}, "c1")])  # fmt: skip
    request = m.ModelRequest(parts=[m.ToolReturnPart("weather", "sunny", "c1")])

    read = h.pydantic_ai_messages((first, response), request)

    assert _shape(read) == [
        ("system", "Use tools.", None, []),
        ("system", "Be brief.", None, []),
        ("user", [{"type": "text", "text": "Look:"},
                  {"type": "image_url", "image_url": {"url": "https://x/y.png"}}], None, []),
        ("assistant", "Checking.", None, [("c1", "weather", {"city": "P"})]),
        ("tool", "sunny", "c1", []),
    ]  # fmt: skip


# --- Agno ----------------------------------------------------------------------------------------
def test_agno_messages_read_as_the_contracts() -> None:
    agno = pytest.importorskip("agno.models.message")
    call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"a": 1}'}}
    history = [
        agno.Message(role="system", content="Be brief."),
        agno.Message(role="user", content="Weather?"),
        agno.Message(role="assistant", content=None, tool_calls=[call]),
        agno.Message(role="tool", content="sunny", tool_call_id="c1", tool_name="w"),
    ]

    assert _shape(h.agno_messages(history)) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?", None, []),
        ("assistant", None, None, [("c1", "w", {"a": 1})]),
        ("tool", "sunny", "c1", []),
    ]


# --- LlamaIndex ----------------------------------------------------------------------------------
def test_llama_index_messages_read_as_the_contracts() -> None:
    t = pytest.importorskip("llama_index.core.base.llms.types")
    openai_call = {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        t.ChatMessage(role="system", content="Be brief."),
        t.ChatMessage(role="user", blocks=[t.TextBlock(text="Look:"),
                                           t.ImageBlock(url="https://x/y.png")]),
        t.ChatMessage(role="assistant", blocks=[
            t.TextBlock(text="Checking."),
            t.ToolCallBlock(tool_call_id="c1", tool_name="w", tool_kwargs={"a": 1})]),
        t.ChatMessage(role="assistant", content="",
                      additional_kwargs={"tool_calls": [openai_call]}),
        t.ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": "c1"}),
    ]  # fmt: skip

    assert _shape(h.llama_index_messages(history)) == [
        ("system", "Be brief.", None, []),
        ("user", [{"type": "text", "text": "Look:"},
                  {"type": "image_url", "image_url": {"url": "https://x/y.png"}}], None, []),
        ("assistant", "Checking.", None, [("c1", "w", {"a": 1})]),
        ("assistant", None, None, [("c2", "f", {})]),
        ("tool", "sunny", "c1", []),
    ]  # fmt: skip


def test_a_llama_index_call_held_twice_is_read_once() -> None:
    """llama-index-llms-openai keeps an answer's tool calls both as ``tool_call`` blocks and as
    the OpenAI-shaped ``additional_kwargs["tool_calls"]``: each call is one tool call."""
    t = pytest.importorskip("llama_index.core.base.llms.types")
    calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
             for cid, name in (("c1", "w"), ("c2", "f"))]  # fmt: skip
    blocks = [t.ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs={})
              for cid, name in (("c1", "w"), ("c2", "f"))]  # fmt: skip
    both = t.ChatMessage(role="assistant", blocks=blocks, additional_kwargs={"tool_calls": calls})

    assert _shape(h.llama_index_messages([both])) == [
        ("assistant", None, None, [("c1", "w", {}), ("c2", "f", {})]),
    ]


# --- OpenAI-shaped dicts (CrewAI) ---------------------------------------------------------------
def test_openai_message_dicts_read_as_the_contracts() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"a": 1}'}}
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        {"role": "developer", "content": 7},
    ]

    assert _shape(h.openai_messages(history)) == [
        ("system", "Be brief.", None, []),
        ("user", [{"type": "text", "text": "Weather?"}], None, []),
        ("assistant", None, None, [("c1", "w", {"a": 1})]),
        ("tool", "sunny", "c1", []),
        ("system", "7", None, []),
    ]
    assert _shape(h.openai_messages("Weather?")) == [("user", "Weather?", None, [])]


def test_crewai_reprs_of_tool_calls_read_back() -> None:
    """CrewAI's event serializer cuts what lies five levels deep to its repr(): a tool call's
    function name and arguments; they read as they were (and as CrewAI sends them)."""
    call = {"id": "c1", "type": "function",
            "function": {"name": "'w'", "arguments": repr('{"a": 1}')}}  # fmt: skip
    weird = {"id": "c2", "type": "function", "function": {"name": "'x'y'", "arguments": '{"b": 2}'}}
    history = [{"role": "assistant", "content": None, "tool_calls": [call, weird]}]

    assert _shape(h.crewai_messages(history)) == [
        ("assistant", None, None, [("c1", "w", {"a": 1}), ("c2", "'x'y'", {"b": 2})]),
    ]


# --- AutoGen -------------------------------------------------------------------------------------
def test_autogen_messages_read_as_the_contracts() -> None:
    m = pytest.importorskip("autogen_core.models")
    from autogen_core import FunctionCall

    history = [
        m.SystemMessage(content="Be brief."),
        m.UserMessage(content=["Weather?", "Now."], source="user"),
        m.AssistantMessage(content=[FunctionCall(id="c1", name="w", arguments='{"a": 1}')],
                           thought="Checking.", source="bot"),
        m.FunctionExecutionResultMessage(content=[
            m.FunctionExecutionResult(content="sunny", name="w", call_id="c1", is_error=False)]),
        m.AssistantMessage(content="Sunny.", source="bot"),
    ]  # fmt: skip

    assert _shape(h.autogen_messages(history)) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?Now.", None, []),
        ("assistant", "Checking.", None, [("c1", "w", {"a": 1})]),
        ("tool", "sunny", "c1", []),
        ("assistant", "Sunny.", None, []),
    ]


# --- Strands -------------------------------------------------------------------------------------
def test_strands_converse_messages_read_as_the_contracts() -> None:
    use = {"toolUse": {"toolUseId": "c1", "name": "w", "input": {"a": 1}}}
    result = {"toolResult": {"toolUseId": "c1", "status": "success",
                             "content": [{"text": "sunny"}]}}  # fmt: skip
    history = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [{"text": "Checking."}, use]},
        {"role": "user", "content": [result]},
    ]

    assert _shape(h.strands_messages("Be brief.", history)) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?", None, []),
        ("assistant", "Checking.", None, [("c1", "w", {"a": 1})]),
        ("tool", "sunny", "c1", []),
    ]


# --- smolagents ----------------------------------------------------------------------------------
def test_smolagents_messages_read_in_the_roles_they_are_sent_in() -> None:
    m = pytest.importorskip("smolagents.models")
    history = [
        m.ChatMessage(role=m.MessageRole.SYSTEM, content=[{"type": "text", "text": "Be brief."}]),
        m.ChatMessage(role=m.MessageRole.USER, content=[{"type": "text", "text": "Weather?"}]),
        m.ChatMessage(role=m.MessageRole.TOOL_CALL,
                      content=[{"type": "text", "text": "Calling tools: w"}]),
        m.ChatMessage(role=m.MessageRole.TOOL_RESPONSE,
                      content=[{"type": "text", "text": "Observation: sunny"}]),
        {"role": "assistant", "content": "Sunny.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"a": 1}}}]},
    ]  # fmt: skip

    assert _shape(h.smolagents_messages(history)) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?", None, []),
        ("assistant", "Calling tools: w", None, []),
        ("user", "Observation: sunny", None, []),
        ("assistant", "Sunny.", None, [("c1", "w", {"a": 1})]),
    ]


# --- Google ADK ----------------------------------------------------------------------------------
def test_google_adk_contents_read_as_the_contracts() -> None:
    types = pytest.importorskip("google.genai.types")
    call = types.FunctionCall(id="c1", name="w", args={"a": 1})
    response = types.FunctionResponse(id="c1", name="w", response={"result": "sunny"})
    contents = [
        types.Content(role="user", parts=[types.Part(text="Weather?")]),
        types.Content(role="model", parts=[types.Part(text="Hm.", thought=True),
                                           types.Part(text="Checking."),
                                           types.Part(function_call=call)]),
        types.Content(role="user", parts=[types.Part(function_response=response)]),
    ]  # fmt: skip

    assert _shape(h.google_adk_messages("Be brief.", contents)) == [
        ("system", "Be brief.", None, []),
        ("user", "Weather?", None, []),
        ("assistant", "Checking.", None, [("c1", "w", {"a": 1})]),
        ("tool", '{"result": "sunny"}', "c1", []),
    ]


# --- hostile requests ----------------------------------------------------------------------------
class _Hostile:
    """An object whose every attribute read raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("no")


_KEYS = st.sampled_from(["role", "type", "content", "tool_calls", "id", "name", "arguments",
                         "call_id", "output", "text"])  # fmt: skip
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.builds(_Hostile),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=8,
)
_READERS = [h.langchain_messages, h.agno_messages, h.llama_index_messages,
            h.pydantic_ai_messages, lambda v: h.responses_messages(None, v),
            h.openai_messages, h.crewai_messages, h.autogen_messages,
            lambda v: h.google_adk_messages(v, v), lambda v: h.strands_messages(v, v),
            h.smolagents_messages]  # fmt: skip


@pytest.mark.parametrize("read", _READERS)
@given(value=st.lists(_VALUES, max_size=4) | _VALUES)
def test_a_request_of_any_shape_reads_as_messages_or_none_never_an_error(
    read: Any, value: Any
) -> None:
    messages = read(value)

    assert messages is None or all(isinstance(m, Message) for m in messages)


def test_every_reader_takes_content_of_one_shape_the_same_way() -> None:
    """One reading of a message's content for LangChain, Responses and pydantic-ai requests:
    text as it is, a list or a tuple of blocks as parts, anything else as its JSON text."""
    from types import SimpleNamespace

    def langchain(content: Any) -> Any:
        [message] = h.langchain_messages([SimpleNamespace(type="human", content=content)])
        return message.content

    def responses(content: Any) -> Any:
        [message] = h.responses_messages(None, [{"type": "message", "role": "user",
                                                 "content": content}])  # fmt: skip
        return message.content

    def pydantic_ai(content: Any) -> Any:
        part = SimpleNamespace(part_kind="user-prompt", content=content)
        [message] = h.pydantic_ai_messages([SimpleNamespace(kind="request", parts=[part])])
        return message.content

    for read in (langchain, responses, pydantic_ai):
        assert read("hi") == "hi", read
        assert read({"a": 1}) == '{"a": 1}', read  # JSON, not a Python repr
        assert read(7) == "7", read
    text = {"type": "text", "text": "hi"}
    assert langchain(("hi",)) == langchain(["hi"]) == [text]
    assert responses(({"type": "input_text", "text": "hi"},)) == [text]
    assert pydantic_ai(("hi",)) == [text]

"""Hostile values in the history an SDK source builds its request from, sent by the real SDKs
over their mock transports.

The agent's history is the agent's: building the request from it never raises our exception
into the run (a value the SDK itself refuses is the SDK's error). A call whose arguments are no
JSON object goes to Anthropic as ``{"INVALID_JSON": text}`` (the key Anthropic's tool-use docs
name; ``tool_use.input`` must be an object), told by an ``Error`` (``unencodable_arguments``,
not fatal) after the ``LLMCallStart`` and counted; a tool result the Responses API takes as
text is written as strict JSON by the rule every adapter's arguments follow (docs/hostile.md).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import Error, FunctionCall, LLMCallEnd, Message, ToolCall
from agent_otel import otel_wrapper
from hostile_types import BadHash, LyingDict, LyingList, LyingStr, NoStr, Unreadable
from otlp_check import Exported

from . import _recorded
from ._http import anthropic_client, openai_client, sse

pytest.importorskip("openai")
pytest.importorskip("anthropic")


def _history(arguments: Any = "{}", result: Any = "sunny") -> list[Message]:
    call = ToolCall(id="c1", function=FunctionCall("weather", arguments))
    return [
        Message(role="user", content="Weather?"),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=result),
    ]


def _refuse(name: str) -> Any:
    raise ValueError(name)


_DEEP = '{"a": ' * 5000 + "1" + "}" * 5000  # whole JSON, past the parser's nesting


@pytest.mark.parametrize(
    "arguments",
    ['{"city": "Par', "[1, 2]", '"Paris"', '{"city": NaN}', _DEEP],
    ids=["cut short", "a list", "a string", "NaN", "past the parser"],
)
async def test_a_history_call_whose_arguments_are_no_json_object_goes_as_invalid_json(
    arguments: str,
) -> None:
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    with Exported() as telemetry:
        wrapper = otel_wrapper(**telemetry.providers())
        source = stream_messages(client, _history(arguments), "claude-sonnet-4-5", max_tokens=64)
        events = [e async for e in wrapper(source)]
    telemetry.assert_encodes()

    [request] = seen
    turns = json.loads(request.content)["messages"]
    assert turns[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "weather", "input": {"INVALID_JSON": arguments}}
    ]
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "end_turn"
    [told] = [e for e in events if isinstance(e, Error)]
    assert events.index(told) == 1 and told.error_type == "unencodable_arguments"
    assert told.fatal is not True
    run = telemetry.span("invoke_agent")
    assert run.attributes is not None
    assert run.attributes["agent_otel.anomalies"] == 1
    assert run.attributes["agent_otel.anomaly.kinds"] == ("unencodable_arguments",)


async def test_a_history_call_whose_arguments_are_an_object_goes_as_that_object_untold() -> None:
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    history = _history('{"city": "Paris", "days": [1, 2]}')
    events = [e async for e in stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)]

    [request] = seen
    [block] = json.loads(request.content)["messages"][1]["content"]
    assert block["input"] == {"city": "Paris", "days": [1, 2]}
    assert not [e for e in events if isinstance(e, Error)]


async def test_a_tool_result_of_no_content_goes_to_anthropic_without_content_not_null() -> None:
    """``tool_result.content`` is optional in Anthropic's API and never ``null``: a contract tool
    message may have ``content=None`` (a tool that returned nothing)."""
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    history = _history(result=None)
    events = [e async for e in stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)]

    [request] = seen
    [block] = json.loads(request.content)["messages"][2]["content"]
    assert block == {"type": "tool_result", "tool_use_id": "c1"}
    assert isinstance(events[-1], LLMCallEnd)


async def test_an_assistant_turn_of_parts_and_calls_goes_to_anthropic_as_its_blocks() -> None:
    """An assistant message whose content is parts (the contract's list) and which calls a
    tool: its parts are the turn's blocks before the ``tool_use`` one, as a user turn's parts
    are, not one text block whose ``text`` is the list."""
    from agent_contract.sources.anthropic_messages import stream_messages

    seen: list[Any] = []
    client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    history = _history()
    history[1].content = [{"type": "text", "text": "Checking."}]
    [e async for e in stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)]

    [request] = seen
    assert json.loads(request.content)["messages"][1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "c1", "name": "weather", "input": {}},
    ]


async def _sent(source: str, messages: Any) -> tuple[Any, Any]:
    """What a request of ``messages`` does: (the messages sent, the exception raised), through
    the source (``messages`` a contract history) or straight through the SDK (dicts)."""
    from agent_contract.sources.litellm_chat import stream_litellm
    from agent_contract.sources.openai_chat import stream_chat

    seen: list[Any] = []
    client = openai_client(sse(_recorded.chat(tools=False), done=True), seen=seen)
    chat = source == "openai_chat"
    model = "gpt-4o-mini" if chat else "openai/gpt-4o-mini"
    key: dict[str, Any] = {} if chat else {"api_key": "sk-test"}
    try:
        if isinstance(messages[0], Message):
            read = stream_chat if chat else stream_litellm
            [e async for e in read(client, messages, model, **key)]
        elif chat:
            [c async for c in await client.chat.completions.create(
                model=model, messages=messages, stream=True,
                stream_options={"include_usage": True})]  # fmt: skip
        else:
            import litellm

            [c async for c in await litellm.acompletion(
                model=model, messages=messages, client=client, stream=True,
                stream_options={"include_usage": True}, **key)]  # fmt: skip
    except Exception as error:
        return None, (type(error), str(error))
    return json.loads(seen[0].content)["messages"], None


@pytest.mark.parametrize("part", ["Paris?", b"\x89PNG", None], ids=["a string", "bytes", "None"])
@pytest.mark.parametrize("source", ["openai_chat", "litellm_chat"])
async def test_a_content_part_that_is_no_mapping_goes_to_the_sdk_as_it_is(
    source: str, part: Any
) -> None:
    """A Chat Completions request hands the history's content on: a part that is no mapping is
    the SDK's to send or refuse (its own exception, as it raises it for the same message
    given to it directly), never our ``ValueError`` from copying it."""
    text = {"type": "text", "text": "Weather?"}
    ours = await _sent(source, [Message(role="user", content=[text, part])])
    theirs = await _sent(source, [{"role": "user", "content": [text, part]}])

    assert ours == theirs


@pytest.mark.parametrize(
    ("result", "output"),
    [
        ({1, 2}, '"{1, 2}"'),  # JSON has no set: its str()
        ({"at": datetime.date(2026, 1, 2)}, '{"at": "2026-01-02"}'),
        ({"score": math.nan, "top": math.inf}, '{"score": null, "top": null}'),
        (b"\x00\xff", json.dumps(str(b"\x00\xff"))),
        (ValueError("tool broke"), '"tool broke"'),
    ],
    ids=["a set", "a date", "NaN and infinity", "bytes", "an exception"],
)
async def test_a_tool_result_json_has_no_form_for_goes_to_the_responses_api_as_strict_json(
    result: Any, output: str
) -> None:
    from agent_contract.sources.openai_responses import stream_responses

    seen: list[Any] = []
    client = openai_client(sse(_recorded.responses(tools=False)), seen=seen)
    events = [e async for e in stream_responses(client, _history(result=result), "gpt-5-mini")]

    [request] = seen
    items = json.loads(request.content)["input"]
    [sent] = [item for item in items if item.get("type") == "function_call_output"]
    assert sent == {"type": "function_call_output", "call_id": "c1", "output": output}
    json.loads(sent["output"], parse_constant=_refuse)  # strict JSON: no NaN
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "completed"


# --- any history: the request is built, never our exception --------------------------------------
def _too_long() -> int:
    return 10**5000  # an integer Python will not write as text


_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.builds(_too_long) | st.floats()
    | st.text(max_size=8) | st.binary(max_size=4) | st.dates()
    | st.builds(NoStr) | st.builds(BadHash) | st.builds(Unreadable)
    | st.builds(ValueError, st.text(max_size=3))
    | st.builds(LyingStr, st.text(max_size=4)) | st.builds(LyingDict, st.just({"a": 1}))
)  # fmt: skip
_KEYS = st.text(max_size=3) | st.integers() | st.tuples(st.integers())
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.frozensets(st.integers(), max_size=3)
        | st.dictionaries(_KEYS, inner, max_size=3)
    ),
    max_leaves=8,
)
_ARGUMENTS = st.text(max_size=12) | st.sampled_from(['{"a": 1', "[]", "NaN", '{"a": Infinity}',
                                                    "null", _DEEP]) | _VALUES  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(arguments=_ARGUMENTS, result=_VALUES)
def test_any_history_builds_a_request_the_sdks_can_send(arguments: Any, result: Any) -> None:
    """Whatever an agent's history holds, ``anthropic_input`` and ``response_input`` return:
    Anthropic's ``tool_use.input`` is a JSON object, the Responses ``output`` text (strict JSON
    where the result was no text)."""
    from agent_contract.sources.anthropic_messages import anthropic_input
    from agent_contract.sources.openai_responses import response_input

    history = _history(arguments, result)

    _, turns = anthropic_input(history)
    [block] = turns[1]["content"]
    assert type(block["input"]) is dict
    json.dumps(block["input"], allow_nan=False)
    _, items = response_input(history)
    output = items[-1]["output"]
    assert isinstance(output, str)
    if not isinstance(result, str):
        json.loads(output, parse_constant=_refuse)


# --- subclasses of the built-ins: read as the plain values they are -------------------------------
def _subclassed(case: str) -> list[Message]:
    """A history whose ``case`` field is a subclass whose own methods raise (``hostile_types``)."""
    history = _history()
    history.insert(0, Message(role="system", content="Be brief."))
    text = [{"type": "text", "text": "Weather?"}]
    if case == "role":
        history[1].role = LyingStr("user")  # type: ignore[assignment]
    elif case == "text":
        history[0].content, history[1].content = LyingStr("Be brief."), LyingStr("Weather?")
        history[2].content, history[3].content = LyingStr(""), LyingStr("sunny")
    elif case == "parts":
        history[1].content = LyingList(text)
        history[3].content = LyingList([{"type": "text", "text": "sunny"}])
    else:
        history[2].tool_calls = LyingList(history[2].tool_calls or [])
    return history


_PLAIN = {"role": "user", "content": "Weather?"}


@pytest.mark.parametrize("case", ["role", "text", "parts", "tool calls"])
@pytest.mark.parametrize("target", ["anthropic", "responses"])
async def test_a_history_of_builtin_subclasses_goes_as_the_plain_values_they_are(
    target: str, case: str
) -> None:
    """A ``str`` enum role, a typed list of parts or of tool calls, a ``str`` subclass as a
    message's text: the request is built by the base types' own methods (none of the agent's
    code runs, nothing of ours raises) and carries the plain values."""
    from agent_contract.sources.anthropic_messages import stream_messages
    from agent_contract.sources.openai_responses import stream_responses

    seen: list[Any] = []
    history = _subclassed(case)
    if target == "anthropic":
        client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
        source = stream_messages(client, history, "claude-sonnet-4-5", max_tokens=64)
    else:
        client = openai_client(sse(_recorded.responses(tools=False)), seen=seen)
        source = stream_responses(client, history, "gpt-5-mini")
    events = [e async for e in source]

    [request] = seen
    body = json.loads(request.content)
    assert isinstance(events[-1], LLMCallEnd)
    if target == "anthropic":
        user, assistant, tool = body["messages"]
        assert body["system"] == "Be brief."
        assert user["role"] == "user"
        assert user["content"] in ("Weather?", [{"type": "text", "text": "Weather?"}])
        assert assistant["content"] == [
            {"type": "tool_use", "id": "c1", "name": "weather", "input": {}}
        ]
        assert tool["content"][0]["content"] in ("sunny", [{"type": "text", "text": "sunny"}])
    else:
        user, call, result = body["input"]
        assert body["instructions"] == "Be brief."
        assert user in (_PLAIN, {"role": "user", "content": [{"type": "input_text",
                                                               "text": "Weather?"}]})  # fmt: skip
        assert call["type"] == "function_call" and call["call_id"] == "c1"
        assert result["output"] in ("sunny", [{"type": "input_text", "text": "sunny"}])

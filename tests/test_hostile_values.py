"""Ids, arguments and values the recorder cannot use are repaired and counted (issue 9).

An unusable id (unhashable, or ``str()`` raising) or arguments nested past the JSON parser's
limit are anomalies like the malformed-stream rules' (``test_malformed.py``), never internal
errors, and no span is started that the run does not end. Nothing the OTLP encoders reject
reaches the SDK: strings are made encodable and out-of-range integers dropped, both counted,
checked by running the real encoders over every span, metric point and exemplar.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Sequence
from enum import Enum, IntEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.agent import RunUsage, StructuredFinal, ToolCallStep, ToolResultStep
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import ContentCapture, instrument, otel_wrapper
from hostile_types import (
    BadHash,
    HostileStr,
    LazyMapping,
    LazySequence,
    LyingClass,
    LyingDict,
    LyingInt,
    LyingList,
    LyingStr,
    NoStr,
    Unreadable,
    UnreadableIterable,
)
from otlp_check import Exported, assert_nested_in_time

SURROGATE = "\udc80"


async def run(
    exported: Exported,
    events: Sequence[Any],
    caplog: pytest.LogCaptureFixture | None,
    **options: Any,
) -> ReadableSpan:
    """Run ``events``; check pass-through, balance, and (given ``caplog``; a Hypothesis test
    has none, the suite's internal-error check still holds) nothing logged. Returns the agent
    span."""

    async def agent() -> AsyncIterator[Any]:
        for event in events:
            yield event

    wrapper = otel_wrapper(
        agent_name="h",
        tracer_provider=exported.tracer_provider,
        meter_provider=exported.meter_provider,
        **options,
    )
    received = [event async for event in wrapper(agent())]
    assert len(received) == len(events)
    assert all(a is b for a, b in zip(received, events))
    assert not exported.ledger.double_ends
    assert sorted(exported.ledger.ended) == sorted(exported.ledger.started)
    assert caplog is None or not [r for r in caplog.records if r.name.startswith("agent_otel")]
    (root,) = [s for s in exported.spans() if s.name.startswith("invoke_agent")]
    return root


def kinds(root: ReadableSpan) -> list[str]:
    return [str(k) for k in (root.attributes or {}).get("agent_otel.anomaly.kinds") or ()]  # type: ignore[union-attr]


def named(exported: Exported, prefix: str) -> list[ReadableSpan]:
    return [s for s in exported.spans() if s.name.startswith(prefix)]


@pytest.mark.parametrize("capture", [False, True])
async def test_unhashable_ids_are_matched_by_their_text(
    capture: bool, caplog: pytest.LogCaptureFixture
) -> None:
    exported = Exported()
    events = [
        LLMCallStart(model="m", call_id=["c", 1]),  # type: ignore[arg-type]
        LLMCallEnd(call_id=["c", 1]),  # type: ignore[arg-type]
        ToolCall(id=["t"], function=FunctionCall(name="search", arguments="{}")),  # type: ignore[arg-type]
        ToolResult(tool_call_id=["t"], content="r"),  # type: ignore[arg-type]
    ]
    root = await run(exported, events, caplog, capture_content=capture)
    assert kinds(root) == ["unusable_id"]
    assert (root.attributes or {})["agent_otel.anomalies"] == 4
    (chat,) = named(exported, "chat")
    (tool,) = named(exported, "execute_tool")
    assert (chat.attributes or {})["agent_otel.llm.call_id"] == "['c', 1]"
    assert (tool.attributes or {})["gen_ai.tool.call.id"] == "['t']"
    assert "agent_otel.incomplete" not in (tool.attributes or {})  # the result found its call


async def test_an_id_whose_str_raises_counts_as_missing(caplog: pytest.LogCaptureFixture) -> None:
    exported = Exported()
    events = [
        LLMCallStart(model="m", call_id=NoStr()),  # type: ignore[arg-type]
        LLMCallEnd(call_id=NoStr()),  # type: ignore[arg-type]
        ToolCall(id=NoStr(), function=FunctionCall(name="search", arguments="{}")),  # type: ignore[arg-type]
        ToolResult(tool_call_id=NoStr(), content="r"),  # type: ignore[arg-type]
    ]
    root = await run(exported, events, caplog)
    assert kinds(root) == ["missing_tool_call_id", "unusable_id"]
    (chat,) = named(exported, "chat")
    (tool,) = named(exported, "execute_tool")
    assert "agent_otel.llm.call_id" not in (chat.attributes or {})
    assert "gen_ai.tool.call.id" not in (tool.attributes or {})


@pytest.mark.parametrize("depth", [100_000])
async def test_arguments_nested_past_the_parser_limit(
    depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    exported = Exported()
    deep = "[" * depth + "]" * depth
    events = [
        ToolCall(id="t1", function=FunctionCall(name="f", arguments=deep)),
        ToolResult(tool_call_id="t1", content="r"),
        ToolCallStep.model_construct(call_id="t2", tool="g", args=_nested(depth)),
        ToolResultStep.model_construct(call_id="t2", tool="g", result=_nested(depth)),
    ]
    root = await run(exported, events, caplog, capture_content=ContentCapture(max_bytes=256))
    assert kinds(root) == ["unparseable_arguments"]
    first, second = sorted(named(exported, "execute_tool"), key=lambda s: s.name)
    arguments = str((first.attributes or {})["gen_ai.tool.call.arguments"])
    assert len(arguments.encode()) <= 256 and arguments.startswith('"[[[')  # kept as text
    assert "gen_ai.tool.call.arguments" in (second.attributes or {})
    exported.assert_encodes()


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _holding_itself() -> tuple[list[Any], dict[str, Any]]:
    """A list that holds itself, and a dict that holds itself under a secret key name."""
    looped: list[Any] = ["a"]
    looped.append(looped)
    secret: dict[str, Any] = {"a": 1}
    secret["password"] = secret
    return looped, secret


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("shape", ["list holding itself", "secret holding itself", "deep"])
async def test_a_tool_error_result_that_holds_itself_or_nests_deep_is_no_internal_error(
    caplog: pytest.LogCaptureFixture, capture: bool, shape: str
) -> None:
    """A tool's error result is scrubbed as structured content before it becomes the span's
    status description; the scrubber read it to its end, so a result that holds itself (or
    nests 2,000 deep) raised RecursionError: an internal error, and the tool span's error
    lost. What nests past the scrubber's depth is cut, and the tool span fails as told."""
    looped, secret = _holding_itself()
    content = {"list holding itself": looped, "secret holding itself": {"x": secret}}.get(
        shape, _nested(2_000)
    )
    exported = Exported()
    events = [
        ToolCall(id="t1", function=FunctionCall(name="f", arguments="{}")),
        ToolResult(tool_call_id="t1", content=content, is_error=True),
    ]
    await run(exported, events, caplog, capture_content=capture)
    (tool,) = named(exported, "execute_tool")
    assert tool.status.is_ok is False
    assert (tool.attributes or {})["error.type"] == "tool_error"
    exported.assert_encodes()


async def test_attributes_option_holding_itself_is_no_error_at_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ``attributes=`` option is read by the scrubber when the wrapper is made: a value
    that holds itself is cut there, not a RecursionError raised to the caller."""
    looped, secret = _holding_itself()
    exported = Exported()
    root = await run(exported, [TextDelta(text="x")], caplog, attributes={"l": looped, "s": secret})
    assert "[truncated]" in str((root.attributes or {})["l"])
    assert "hunter" not in str(root.attributes)
    exported.assert_encodes()


async def test_unencodable_strings_and_huge_integers_never_reach_the_encoder(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exported = Exported()
    bad = f"se{SURROGATE}arch"
    events = [
        LLMCallStart(model=f"m{SURROGATE}", provider=bad, call_id=bad, messages=[]),
        TextDelta(text=bad),
        Usage(input_tokens=2**64, output_tokens=2**63 - 1, model=bad),
        Usage(input_tokens=1, output_tokens=2**63 - 1),  # the sums overflow 64 bits
        LLMCallEnd(model=bad, call_id=bad, finish_reason=bad, response_id=bad),
        ToolCall(id=bad, function=FunctionCall(name=bad, arguments=f'{{"q": "{bad}"}}')),
        ToolResult(tool_call_id=bad, content=bad, is_error=True),
        Error(message=bad, error_type=bad, fatal=False),
        StepBoundary(index=0),
        ToolCallStep.model_construct(call_id=bad, tool=bad, args={bad: bad}),
        ToolResultStep.model_construct(call_id=bad, tool=bad, result=bad, is_error=False),
        RunUsage.model_construct(input_tokens=2**70, output_tokens=5, model=bad),
    ]
    root = await run(
        exported,
        events,
        caplog,
        capture_content=True,
        conversation_id=bad,
        attributes={bad: bad, "big": 2**64},
    )
    assert kinds(root) == ["integer_out_of_range", "unencodable_string"]
    exemplars = exported.assert_encodes()
    assert exemplars > 0  # the metric points' exemplars were encoded too
    (tool, _) = named(exported, "execute_tool")
    assert tool.name == "execute_tool se?arch"
    assert (tool.attributes or {})["gen_ai.tool.name"] == "se?arch"
    usage = {k: v for k, v in (root.attributes or {}).items() if "usage" in k}
    assert all(isinstance(v, int) and v < 2**63 for v in usage.values()), usage


async def test_a_repair_made_as_the_run_ends_is_an_event_within_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The answer (its text, with a lone surrogate) is written only as the run ends: the
    # repair's anomaly event is stamped with the run's end, not after it.
    exported = Exported()
    root = await run(exported, [TextDelta(text=f"an{SURROGATE}swer")], caplog, capture_content=True)
    assert kinds(root) == ["unencodable_string"]
    assert [e.timestamp for e in root.events] == [root.end_time] * len(root.events)
    assert_nested_in_time(exported.spans())


async def test_a_character_split_between_two_deltas_is_recorded_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # JSON writes a character past U+FFFF as two escapes (a surrogate pair); a server cutting
    # its text between them sends each half in a chunk of its own, so the text a run joins
    # holds the pair as two code points. Together they are the character, not two "?".
    exported = Exported()
    events = [
        LLMCallStart(model="m"),
        TextDelta(text="a\ud83d"),
        TextDelta(text="\ude00b"),
        LLMCallEnd(),
        ToolCall(id="t", function=FunctionCall(name="f", arguments='{"q": "\ud83d\ude00"}')),
        ToolResult(tool_call_id="t", content=f"x{SURROGATE}\ud83d\ude00"),
    ]
    root = await run(exported, events, caplog, capture_content=True)
    exported.assert_encodes()
    assert (root.attributes or {})["output.value"] == "a\U0001f600b"
    (tool,) = named(exported, "execute_tool")
    assert (tool.attributes or {})["gen_ai.tool.call.arguments"] == '{"q":"\U0001f600"}'
    # a lone surrogate beside a pair is still one "?", counted
    assert (tool.attributes or {})["gen_ai.tool.call.result"] == '"x?\U0001f600"'  # as JSON
    assert kinds(root) == ["unencodable_string"]


def _fields(model: Any) -> list[str]:
    kind = type(model)
    return list(kind.model_fields) if hasattr(kind, "model_fields") else list(kind.__slots__)


def _field_raises(model: Any, field: str) -> Any:
    """A look-alike of ``model`` (same class name, same fields) whose ``field`` raises when read,
    as a lazy property or a detached ORM object's does."""

    def read(_self: Any) -> Any:
        raise LookupError(field)

    space: dict[str, Any] = {name: getattr(model, name) for name in _fields(model)}
    space[field] = property(read)
    return type(type(model).__name__, (), space)()


EVENT_MODELS: list[Any] = [
    LLMCallStart(model="m", call_id="c"),
    LLMCallEnd(call_id="c", finish_reason="stop"),
    TextDelta(text="t"),
    ToolCall(id="t1", function=FunctionCall(name="f", arguments="{}")),
    ToolResult(tool_call_id="t1", content="r"),
    Usage(input_tokens=1, output_tokens=2),
    Error(message="e"),
    ToolCallStep.model_construct(call_id="t1", tool="f", args={}),
    RunUsage.model_construct(input_tokens=1, output_tokens=2),
]
FIELD_THAT_RAISES = st.sampled_from(EVENT_MODELS).flatmap(
    lambda model: st.sampled_from(
        [f for f in _fields(model) if f not in ("final", "messages")]  # (read for some only)
    ).map(lambda field: _field_raises(model, field))
)


@settings(max_examples=25, deadline=None)
@given(event=FIELD_THAT_RAISES, capture=st.booleans())
def test_an_event_whose_field_raises_when_read_is_counted_not_an_internal_error(
    event: Any, capture: bool
) -> None:
    exported = Exported()
    script = [
        LLMCallStart(model="m", call_id="c"),
        event,
        TextDelta(text="x"),
        LLMCallEnd(call_id="c"),
    ]

    root = asyncio.run(run(exported, script, None, capture_content=capture))
    assert "unreadable_event" in kinds(root)


def _content_holding(value: Any) -> list[list[Any]]:
    """Scripts whose every content-bearing field in turn holds ``value`` (content capture reads
    them all): a chat's messages, a message's fields, its tool calls, the tools a request
    offers, a tool call's arguments, a tool's result, and the Agent vocabulary's."""
    llm = LLMCallStart
    end = LLMCallEnd(call_id="c")
    call = ToolCall(id="t", function=FunctionCall(name="f", arguments=value))
    return [
        [llm(model="m", call_id="c", messages=value), end],
        [llm(model="m", call_id="c", messages=[value]), end],
        [llm(model="m", call_id="c", messages=[{"role": "user", "content": value}]), end],
        [llm(model="m", call_id="c", messages=[{"role": "tool", "content": value}]), end],
        [llm(model="m", call_id="c", messages=[{"role": "ai", "tool_calls": [value]}]), end],
        [llm(model="m", call_id="c", messages=[{"role": value, "name": value}]), end],
        [llm(model="m", call_id="c", params={"tools": [value]}), end],
        [llm(model="m", call_id="c"), call, end, ToolResult(tool_call_id="t", content="r")],
        [call, ToolResult(tool_call_id="t", content=value)],
        [ToolCallStep.model_construct(call_id="t", tool="f", args=value)],
        [
            ToolCallStep.model_construct(call_id="t", tool="f", args={}),
            ToolResultStep.model_construct(call_id="t", tool="f", result=value),
        ],
        [StructuredFinal.model_construct(data=value)],
    ]


_MESSAGES = LLMCallStart(model="m", call_id="c")
HOSTILE_CONTENT = st.sampled_from(
    [
        *(s for v in (Unreadable(), LazyMapping(), LazySequence()) for s in _content_holding(v)),
        [_field_raises(_MESSAGES, "messages"), LLMCallEnd(call_id="c")],  # the property itself
    ]
)


@settings(max_examples=25, deadline=None)
@given(script=HOSTILE_CONTENT)
def test_content_whose_own_code_raises_as_capture_reads_it_is_the_agents_not_ours(
    script: list[Any],
) -> None:
    """Content capture reads the agent's values after the event was read: what their own code
    raises then (a ``messages`` property, a message's ``__getattr__``, arguments or a result
    that cannot be iterated) is the agent's by the same rule as an event's field, counted
    (``unreadable_event``) and never an internal error; the content is dropped, the spans
    are the same."""
    exported = Exported()

    root = asyncio.run(run(exported, script, None, capture_content=True))
    assert "internal" not in str(root.attributes)
    exported.assert_encodes()


async def test_input_messages_that_cannot_be_iterated_leave_the_run_traced() -> None:
    """An instrumented agent's ``stream`` given messages whose own iteration raises (content
    capture on): the run is traced without its input, no internal error; the agent, which
    may never iterate them, is called as it was."""
    exported = Exported()
    script = [LLMCallStart(model="m"), TextDelta(text="x"), LLMCallEnd()]
    agent = instrument(ScriptedAgent(script), capture_content=True, **exported.providers())
    received = [event async for event in agent.stream(UnreadableIterable())]
    assert all(a is b for a, b in zip(received, script, strict=True))
    (root,) = named(exported, "invoke_agent")
    assert "gen_ai.input.messages" not in (root.attributes or {})
    assert named(exported, "chat m")


async def test_a_tool_kind_whose_equality_raises_is_no_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The kind is compared only once it is known to be a ``str``: a hostile ``type`` never
    runs its ``__eq__`` in the recorder (the tool span keeps its default kind)."""
    exported = Exported()
    call = ToolCall(id="c1", type=BadHash(), function=FunctionCall(name="t", arguments="{}"))  # type: ignore[arg-type]
    await run(exported, [StepBoundary(), call, ToolResult(tool_call_id="c1", content="ok")], caplog)
    (tool,) = named(exported, "execute_tool")
    assert (tool.attributes or {}).get("gen_ai.tool.type") == "function"


async def test_hostile_names_never_enter_the_start_memo(caplog: pytest.LogCaptureFixture) -> None:
    """A chat or tool span's start is remembered per model, provider and tool name; a name of a
    ``str`` subclass is checked on every span instead, so its ``__hash__`` never runs."""
    exported = Exported()
    model, provider, tool = HostileStr("m"), HostileStr("p"), HostileStr("search")
    events: list[Any] = []
    for i in range(2):
        events += [
            LLMCallStart(model=model, provider=provider, call_id=f"c{i}"),
            LLMCallEnd(call_id=f"c{i}"),
            ToolCall(id=f"t{i}", function=FunctionCall(name=tool, arguments="{}")),
            ToolResult(tool_call_id=f"t{i}", content="r"),
        ]
    await run(exported, events, caplog)
    chats, tools = named(exported, "chat"), named(exported, "execute_tool")
    assert [s.name for s in chats] == ["chat m", "chat m"]
    assert [s.name for s in tools] == ["execute_tool search", "execute_tool search"]
    for span in chats:
        assert (span.attributes or {})["gen_ai.provider.name"] == "p"


async def test_a_responses_strings_of_a_str_subclass_are_written_as_the_str_they_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The response's model, id and finish reason are checked where they are written: a
    ``str`` subclass whose hash and equality raise is written as the ``str`` it is (the scrub's
    memo of known strings never hashes it), and nothing of the call is lost."""
    exported = Exported()
    end = LLMCallEnd(
        model=HostileStr("m-2"),
        call_id="c1",
        finish_reason=HostileStr("stop"),
        response_id=HostileStr("r1"),
    )
    events = [LLMCallStart(model="m", call_id="c1"), Usage(input_tokens=3, output_tokens=2), end]
    await run(exported, events, caplog)
    (chat,) = named(exported, "chat")
    attributes = chat.attributes or {}
    assert type(attributes["gen_ai.response.id"]) is str
    assert attributes["gen_ai.response.id"] == "r1"
    assert list(attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert type(attributes["gen_ai.response.model"]) is str
    assert attributes["gen_ai.response.model"] == "m-2"
    assert attributes["gen_ai.usage.output_tokens"] == 2
    exported.assert_encodes()


async def test_a_repaired_start_is_repaired_and_counted_on_every_span(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only a start that needed nothing is remembered: a model or tool name that needs a repair
    (or holds a secret) is repaired, and counted, on each of its spans, as on the first."""
    counts = []
    for calls in (1, 2):
        exported = Exported()
        events: list[Any] = []
        for i in range(calls):
            events += [
                LLMCallStart(model=f"m{SURROGATE}", call_id=f"c{i}"),
                LLMCallEnd(call_id=f"c{i}"),
                ToolCall(id=f"t{i}", function=FunctionCall(name=f"s{SURROGATE}", arguments="{}")),
                ToolResult(tool_call_id=f"t{i}", content="r"),
            ]
        root = await run(exported, events, caplog)
        counts.append((root.attributes or {})["agent_otel.anomalies"])
        assert {s.name for s in named(exported, "chat")} == {"chat m?"}
        assert {s.name for s in named(exported, "execute_tool")} == {"execute_tool s?"}
        exported.assert_encodes()
    assert counts[0] > 0 and counts[1] == 2 * counts[0]


@pytest.mark.parametrize(
    ("agent_name", "span_name", "repaired"),
    [
        ("plain", "invoke_agent plain", False),
        (f"a{SURROGATE}", "invoke_agent a?", True),
        (HostileStr("h"), "invoke_agent h", False),
    ],
    ids=["plain", "needs-a-repair", "str-subclass"],
)
async def test_a_run_start_is_remembered_only_when_it_needed_nothing(
    agent_name: str, span_name: str, repaired: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A run's start (the wrapper's agent name, provider, description and id) is checked once
    per wrapper when it came out unchanged; an agent name that needs a repair is repaired and
    counted on every run, and a ``str`` subclass never enters the memo (its hash raises)."""
    exported = Exported()
    wrapper = otel_wrapper(
        agent_name=agent_name,
        tracer_provider=exported.tracer_provider,
        meter_provider=exported.meter_provider,
    )

    async def agent() -> AsyncIterator[Any]:
        yield TextDelta(text="x")

    for _ in range(3):
        assert len([e async for e in wrapper(agent())]) == 1
    roots = named(exported, "invoke_agent")
    assert [r.name for r in roots] == [span_name] * 3
    counts = [(r.attributes or {}).get("agent_otel.anomalies", 0) for r in roots]
    assert counts == [counts[0]] * 3  # the same repairs, counted on every run
    assert (counts[0] > 0) is repaired  # (the name and the agent name attribute)
    exported.assert_encodes()


class Kind(str, Enum):
    """A ``str`` enum, as frameworks type model names, finish reasons and roles."""

    MODEL = "gpt-4o"
    PROVIDER = "openai"
    TOOL = "search"
    STOP = "stop"
    ID = "r-1"


@pytest.mark.parametrize("capture", [False, True])
async def test_str_enums_are_recorded_as_their_value(
    capture: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``str`` enum member names a model, a provider, a tool, a finish reason and an id as
    its value on every Python (``str()`` and ``format()`` of one differ between versions)."""
    exported = Exported()
    events = [
        LLMCallStart(model=Kind.MODEL, provider=Kind.PROVIDER, call_id=Kind.ID),
        TextDelta(text=Kind.STOP),
        LLMCallEnd(model=Kind.MODEL, call_id=Kind.ID, finish_reason=Kind.STOP, response_id=Kind.ID),
        ToolCall(id=Kind.ID, function=FunctionCall(name=Kind.TOOL, arguments="{}")),
        ToolResult(tool_call_id=Kind.ID, content=Kind.STOP, name=Kind.TOOL),
    ]
    await run(exported, events, caplog, capture_content=capture, session_id=Kind.ID)
    (chat,) = named(exported, "chat")
    (tool,) = named(exported, "execute_tool")
    assert chat.name == "chat gpt-4o" and tool.name == "execute_tool search"
    chat_attributes = chat.attributes or {}
    assert chat_attributes["gen_ai.provider.name"] == "openai"
    assert chat_attributes["gen_ai.response.id"] == "r-1"
    assert list(chat_attributes["gen_ai.response.finish_reasons"]) == ["stop"]  # type: ignore[arg-type]
    assert chat_attributes["session.id"] == "r-1"
    assert (tool.attributes or {})["gen_ai.tool.call.id"] == "r-1"
    for span in exported.spans():
        for value in (span.attributes or {}).values():
            assert type(value) is not Kind and not isinstance(value, Enum), (span.name, value)
    exported.assert_encodes()


@pytest.mark.parametrize("capture", [False, True])
async def test_a_str_subclass_whose_methods_raise_costs_nothing(
    capture: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Every string field of the events, and the options, as a ``str`` subclass whose own
    methods (hash, equality, length, ``isascii``, ``str()``, ``format()``) raise: the run is
    recorded with the ``str`` each one is, and nothing is reported as an internal error."""
    exported = Exported()
    s = LyingStr
    events = [
        LLMCallStart(model=s("m"), provider=s("p"), call_id=s("c1"), params={"stop": s("x")}),
        TextDelta(text=s("hello")),
        Usage(input_tokens=3, output_tokens=2, model=s("m-2")),
        LLMCallEnd(model=s("m-2"), call_id=s("c1"), finish_reason=s("stop"), response_id=s("r1")),
        ToolCall(id=s("t1"), type=s("mcp"), function=FunctionCall(name=s("q"), arguments=s("{}"))),
        ToolResult(tool_call_id=s("t1"), content=s("bad"), is_error=True, name=s("q")),
        Error(message=s("boom"), error_type=s("Oops"), fatal=False),
        ToolCallStep.model_construct(
            call_id=s("t2"), tool=s("w"), args={"n": LyingInt(3), "k": s("v")}
        ),
        ToolResultStep.model_construct(call_id=s("t2"), tool=s("w"), result=s("ok")),
        StepBoundary(index=0),
    ]
    await run(
        exported,
        events,
        caplog,
        capture_content=capture,
        provider=s("p"),
        session_id=s("s1"),
        user_id=s("u1"),
        conversation_id=s("v1"),
    )
    (chat,) = named(exported, "chat")
    assert chat.name == "chat m"
    assert (chat.attributes or {})["gen_ai.response.id"] == "r1"
    assert sorted(t.name for t in named(exported, "execute_tool")) == [
        "execute_tool q",
        "execute_tool w",
    ]
    for span in exported.spans():
        for value in (span.attributes or {}).values():
            assert not isinstance(value, LyingStr), (span.name, value)
    exported.assert_encodes()


class Count(IntEnum):
    FIVE = 5


async def test_token_counts_of_an_int_subclass_count_as_the_int_they_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A token count of an ``IntEnum`` or of an ``int`` subclass whose methods raise is the
    ``int`` it is, on the chat span and in the run's totals (a ``bool`` still is no count)."""
    exported = Exported()
    events = [
        LLMCallStart(model="m", call_id="c1"),
        Usage(input_tokens=Count.FIVE, output_tokens=LyingInt(7), reasoning_tokens=True),
        LLMCallEnd(call_id="c1"),
    ]
    root = await run(exported, events, caplog)
    (chat,) = named(exported, "chat")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.usage.input_tokens"] == 5
    assert attributes["gen_ai.usage.output_tokens"] == 7
    assert type(attributes["gen_ai.usage.output_tokens"]) is int
    assert "gen_ai.usage.reasoning.output_tokens" not in attributes
    assert (root.attributes or {})["agent_otel.usage.output_tokens"] == 7
    exported.assert_encodes()


async def test_containers_whose_methods_raise_are_read_as_the_dict_or_list_they_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Request parameters, messages, tool arguments and results of a ``dict`` or ``list``
    subclass whose own methods raise are read as the ``dict`` or ``list`` they are, content
    capture on: nothing is reported as an internal error and nothing of them is lost."""
    exported = Exported()
    message = LyingDict(role="user", content="hi")
    events = [
        LLMCallStart(
            model="m",
            call_id="c1",
            params=LyingDict(temperature=0.5, max_tokens=9),
            messages=LyingList([message]),
        ),
        LLMCallEnd(call_id="c1"),
        ToolCallStep.model_construct(call_id="t1", tool="w", args=LyingDict(q="x")),
        ToolResultStep.model_construct(call_id="t1", tool="w", result=LyingList(["r"])),
    ]
    await run(exported, events, caplog, capture_content=True)
    (chat,) = named(exported, "chat")
    (tool,) = named(exported, "execute_tool")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.request.temperature"] == 0.5
    assert attributes["gen_ai.request.max_tokens"] == 9
    assert '"hi"' in str(attributes["gen_ai.input.messages"])
    assert (tool.attributes or {})["gen_ai.tool.call.arguments"] == '{"q":"x"}'
    assert (tool.attributes or {})["gen_ai.tool.call.result"] == '["r"]'
    exported.assert_encodes()


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


async def test_map_and_nested_attribute_values_are_made_encodable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The attribute model takes maps and nested lists (the SDK exports them as they are): a
    surrogate anywhere in one is repaired, an integer out of range drops its attribute, and
    nesting past 16 levels (or a cycle) ends in the truncation mark, as deep as a receiver's
    protobuf parser reads (100 messages): each is counted, and the batch encodes."""
    cycle: list[Any] = []
    cycle.append(cycle)
    attributes = {
        "map": {f"k{SURROGATE}": [f"v{SURROGATE}", {"n": 1}], 2: "int key", object(): "dropped"},
        "big": {"n": [2**70]},
        "deep": _deep(1_000),
        "cycle": cycle,
        "tuple": LyingList(["a"]),
    }
    exported = Exported()
    root = await run(exported, [TextDelta(text="x")], caplog, attributes=attributes)
    got = root.attributes or {}
    assert got["map"] == {"k?": ("v?", {"n": 1}), "2": "int key"}
    assert "big" not in got
    assert kinds(root) == ["integer_out_of_range", "unencodable_string"]
    depth, value = 0, got["deep"]
    while isinstance(value, tuple):
        depth, value = depth + 1, value[0]
    assert (depth, value) == (16, "...[truncated]")
    assert str(got["cycle"]).endswith("'...[truncated]',)" + ",)" * 15)
    assert got["tuple"] == ("a",)
    exported.assert_encodes()


async def test_an_agent_events_type_of_a_str_subclass_is_read_as_the_str_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The Agent vocabulary is read by its ``type`` field: one of a ``str`` subclass whose
    hash raises is dispatched by the ``str`` it is (it was an internal error)."""
    exported = Exported()
    events = [
        ToolCallStep.model_construct(
            call_id="t1", tool="w", args={}, type=LyingStr("tool_call_step")
        ),
        ToolResultStep.model_construct(
            call_id="t1", tool="w", result="ok", type=LyingStr("tool_result_step")
        ),
    ]
    await run(exported, events, caplog)
    (tool,) = named(exported, "execute_tool")
    assert tool.name == "execute_tool w"


async def test_options_and_messages_of_hostile_subclasses_cost_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ``attributes`` option as a ``dict`` subclass whose own methods raise, and messages
    whose role, tool call id, name and tool calls are subclasses whose own methods raise
    (content capture on): the run is recorded with the plain values they are."""
    exported = Exported()
    s = LyingStr
    messages = [
        {"role": s("user"), "content": s("hi"), "name": s("ana")},
        {"role": "assistant", "content": None, "tool_calls": LyingList([])},
        {"role": s("tool"), "content": "r", "tool_call_id": s("t1")},
    ]
    events = [LLMCallStart(model="m", call_id="c1", messages=messages), LLMCallEnd(call_id="c1")]
    root = await run(
        exported, events, caplog, capture_content=True, attributes=LyingDict(team=s("core"))
    )
    assert (root.attributes or {})["team"] == "core"
    (chat,) = named(exported, "chat")
    sent = str((chat.attributes or {})["gen_ai.input.messages"])
    assert '"role":"user"' in sent and '"name":"ana"' in sent and '"id":"t1"' in sent
    exported.assert_encodes()


async def test_a_value_whose_class_raises_costs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A tool result, a stream an instrumented agent returns, or a stream handed to the wrapper
    whose ``__class__`` raises: the checks added for returned exceptions, for streams traced
    twice and for the newcomer's hints read types only (the result's tool span ended, as any)."""
    exported = Exported()
    events = [ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}")),
              ToolResult("t1", LyingClass()), StepBoundary(0)]  # fmt: skip
    await run(exported, events, caplog)  # every span ended once, no internal error
    assert named(exported, "execute_tool lookup")

    hostile = LyingClass()

    class Returns:
        def stream(self, messages: Any, config: Any = None) -> Any:
            return hostile

    providers: Any = {"tracer_provider": exported.tracer_provider}
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert instrument(Returns(), **providers).stream([]) is hostile
    assert "Returns.stream() returned a LyingClass, not an async iterator" in caplog.text
    with pytest.raises(TypeError, match="wraps an async iterator of agent events, not a Lying"):
        otel_wrapper(**providers)(hostile)  # the documented misuse error, at the wrap call


@pytest.mark.parametrize(
    "calls", [True, 3, 0.5, "search", {"id": "t1"}, NoStr()], ids=lambda v: type(v).__name__
)
async def test_a_messages_tool_calls_that_are_no_collection_add_no_tool_call_parts(
    calls: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A history message's ``tool_calls`` that is no list or tuple of calls (a bool, a number,
    text, one call's dict, an object), content capture on: the chat span's input holds the
    message's text and no tool call; no internal error (iterating it raised ours)."""
    exported = Exported()
    message = Message(role="assistant", content="let me look", tool_calls=calls)
    await run(exported, [LLMCallStart(model="m", messages=[message]), LLMCallEnd()], caplog,
              capture_content=True)  # fmt: skip
    (chat,) = named(exported, "chat m")
    items = json.loads(str((chat.attributes or {})["gen_ai.input.messages"]))
    assert items == [{"role": "assistant", "parts": [{"type": "text", "content": "let me look"}]}]


async def test_a_messages_one_shot_tool_calls_are_never_consumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A message's ``tool_calls`` given as a one-shot iterator: capture leaves it whole for the
    agent (as a history given so is, docs/hostile.md), and records the calls of a reusable
    collection that is no list (a ``deque``)."""
    exported = Exported()
    call = ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": 1}'))
    once = iter([call])
    messages = [
        Message(role="assistant", tool_calls=once),  # type: ignore[arg-type]
        Message(role="assistant", tool_calls=deque([call])),  # type: ignore[arg-type]
    ]
    await run(exported, [LLMCallStart(model="m", messages=messages), LLMCallEnd()], caplog,
              capture_content=True)  # fmt: skip
    assert list(once) == [call]
    (chat,) = named(exported, "chat m")
    items = json.loads(str((chat.attributes or {})["gen_ai.input.messages"]))
    told = {"type": "tool_call", "name": "search", "id": "t1", "arguments": {"q": 1}}
    assert items == [{"role": "assistant", "parts": []}, {"role": "assistant", "parts": [told]}]


@pytest.mark.parametrize(
    "events",
    [
        [LLMCallStart(model="m", call_id=LyingClass()), LLMCallEnd(model="m")],
        [LLMCallStart(model="m", call_id="c1"), LLMCallEnd(model="m", call_id=LyingClass())],
        [ToolCall(id=LyingClass(), function=FunctionCall(name="lookup", arguments="{}"))],
        [
            ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}")),
            ToolResult(LyingClass(), "done"),
        ],
    ],
    ids=["call-start", "call-end", "tool-call", "tool-result"],
)
async def test_an_id_whose_class_raises_is_read_as_its_text(
    events: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """An id whose ``__class__`` raises (ids are matched as text: only its type is read to
    tell a ``str``): no internal error, every span ended once."""
    exported = Exported()
    await run(exported, events, caplog)  # every span ended once, no internal error
    assert named(exported, "invoke_agent h")

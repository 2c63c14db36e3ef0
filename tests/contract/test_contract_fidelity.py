"""Issue 14: code written against the original packages runs here as it ran there.

Each test pins one behaviour CONTRACT.md fixes: trailing usage keeps the answer, ``_drain``
decides by the ``final`` flag, ``preset_bakeable_fields`` takes any iterable, the interrupt
error takes a message, multimodal content parts round-trip, and the small fixes.
"""

from __future__ import annotations

import asyncio
import pickle
import warnings
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_contract.agent import (
    AgentInterruptedError,
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    StreamEvent,
    StructuredFinal,
)
from agent_contract.examples import NonStreamingAgent, ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    LookAlikeEventWarning,
    Message,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)


def _tc(call_id: str, name: str = "f") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


# ---- 1. bookkeeping after the last boundary never wipes the answer ---------------------------


async def test_trailing_usage_keeps_the_answer_and_joins_the_step_before() -> None:
    usage = Usage(input_tokens=7, output_tokens=2, model="m")
    result = await ScriptedAgent([TextDelta("answer"), StepBoundary(), usage]).invoke([])
    (step,) = result.steps
    assert result.text == "answer"
    assert step.usage == usage
    assert result.usage == usage


async def test_trailing_error_and_markers_join_the_step_before() -> None:
    err = Error("late", error_type="Late")
    events = [
        LLMCallStart(model="m"),
        TextDelta("answer"),
        StepBoundary(),
        LLMCallEnd(),
        err,
        PhaseMarker("done"),
        JourneyMarker("j"),
        StepBoundary(),
    ]
    result = await ScriptedAgent(events).invoke([])
    (step,) = result.steps
    assert (result.text, step.errors) == ("answer", [err])


async def test_bookkeeping_between_steps_goes_to_the_step_before_and_indexes_stay_dense() -> None:
    u1, u2 = Usage(input_tokens=1), Usage(input_tokens=10)
    events = [TextDelta("a"), StepBoundary(), u1, StepBoundary(), TextDelta("b"), u2]
    result = await ScriptedAgent(events).invoke([])
    assert [(s.index, s.text, s.usage) for s in result.steps] == [(0, "a", u1), (1, "b", u2)]


async def test_usage_in_a_segment_with_content_stays_with_that_segment() -> None:
    u = Usage(output_tokens=3)
    result = await ScriptedAgent([TextDelta("a"), StepBoundary(), u, TextDelta("b")]).invoke([])
    assert [(s.text, s.usage) for s in result.steps] == [("a", None), ("b", u)]


async def test_leading_bookkeeping_usage_counts_for_the_run_errors_wait_for_the_first_step() -> (
    None
):
    u, err = Usage(input_tokens=5), Error("retrying")
    result = await ScriptedAgent([u, err, StepBoundary(), TextDelta("a")]).invoke([])
    (step,) = result.steps
    assert (step.text, step.usage, step.errors) == ("a", None, [err])
    assert result.usage == u


async def test_a_run_with_errors_but_no_step_keeps_them_in_one_step() -> None:
    err = Error("boom", fatal=True)
    result = await ScriptedAgent([Usage(input_tokens=1), StepBoundary(), err]).invoke([])
    (step,) = result.steps
    assert (result.text, step.errors, step.usage) == ("", [err], None)


async def test_an_llm_call_alone_makes_a_step() -> None:
    result = await ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd(), StepBoundary()]).invoke([])
    assert [(s.index, s.text) for s in result.steps] == [(0, "")]


_call_ids = st.sampled_from(["a", "b"])
content_events = st.one_of(
    st.builds(TextDelta, text=st.text(max_size=3)),
    st.builds(ReasoningDelta, text=st.text(max_size=3)),
    st.builds(LLMCallStart, model=st.none() | st.just("m")),
    st.builds(_tc, _call_ids),
    st.builds(ToolResult, tool_call_id=_call_ids, content=st.none() | st.text(max_size=3)),
    st.builds(StepBoundary),
)
counts = st.none() | st.integers(0, 100)
bookkeeping_events = st.one_of(
    st.builds(Usage, input_tokens=counts, output_tokens=counts, model=st.none() | st.just("m")),
    st.builds(Error, message=st.text(max_size=3), fatal=st.booleans()),
    st.builds(LLMCallEnd),
    st.builds(PhaseMarker, name=st.just("p")),
    st.builds(JourneyMarker, name=st.just("j")),
    st.builds(StepBoundary, index=st.none() | st.integers(0, 3)),
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(content_events, max_size=12),
    st.lists(bookkeeping_events, max_size=10),
    st.sampled_from(["a", "b"]),
)
def test_bookkeeping_after_the_last_content_never_changes_the_text(
    content: list[Any], bookkeeping: list[Any], answer_id: str
) -> None:
    """A final answer followed by any bookkeeping (results of earlier calls included)."""
    stream = [*content, TextDelta("the answer")]
    before = asyncio.run(ScriptedAgent(stream).invoke([]))
    called = any(isinstance(e, ToolCall) and e.id == answer_id for e in content)
    late = [ToolResult(tool_call_id=answer_id, content="late")] if called else []
    bookkeeping = [*bookkeeping[:3], *late, *bookkeeping[3:]]
    after = asyncio.run(ScriptedAgent([*stream, *bookkeeping]).invoke([]))
    assert before.text.endswith("the answer")
    assert after.text == before.text
    assert len(after.steps) == len(before.steps)


# ---- 2. _drain decides by the final flag -------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([MessageFinal(text="a"), MessageFinal(text="b", final=False)], "a"),
        (
            [
                MessageFinal(text="draft", final=False),
                MessageDelta(text="x"),
                MessageFinal(text="b"),
            ],
            "b",
        ),
        ([StructuredFinal(data=1), StructuredFinal(data=2, final=False)], 1),
    ],
)
async def test_drain_takes_only_final_true_events_as_terminal(
    events: list[Any], expected: Any
) -> None:
    assert await ScriptedStreamingAgent(events).run() == expected


async def test_drain_non_final_interrupts_do_not_raise_and_no_terminal_still_says_so() -> None:
    events = [InterruptFinal(interrupt_id="i", payload=None, final=False)]
    with pytest.raises(RuntimeError, match="without a terminal event"):
        await ScriptedStreamingAgent([*events, MessageFinal(text="x", final=False)]).run()


class _Custom(StreamEvent):
    type: str = "custom_final"
    final: bool = True


async def test_drain_final_event_of_unknown_type_raises_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="custom_final"):
        await ScriptedStreamingAgent([MessageFinal(text="a"), _Custom()]).run()
    # the same type without the flag is simply not terminal
    assert await ScriptedStreamingAgent([MessageFinal(text="a"), _Custom(final=False)]).run() == "a"


# ---- 3. preset_bakeable_fields: any iterable of names -------------------------------------------


class _Input(BaseModel):
    query: str = ""
    thread_id: str | None = None


@pytest.mark.parametrize(
    "names",
    [{"thread_id"}, ["thread_id", "query"], ("query",), (n for n in ["thread_id"]), frozenset()],
    ids=["set", "list", "tuple", "generator", "frozenset"],
)
def test_preset_bakeable_fields_accepts_any_iterable_and_stores_a_frozenset(
    names: Iterable[str],
) -> None:
    expected = frozenset(names) if not hasattr(names, "__next__") else frozenset({"thread_id"})
    cls = type(
        "Baked", (NonStreamingAgent,), {"ToolInput": _Input, "preset_bakeable_fields": names}
    )
    assert type(cls.preset_bakeable_fields) is frozenset
    assert cls.preset_bakeable_fields == expected


def test_preset_bakeable_fields_unknown_names_still_raise() -> None:
    with pytest.raises(TypeError, match="no_such"):
        type(
            "Bad",
            (NonStreamingAgent,),
            {"ToolInput": _Input, "preset_bakeable_fields": {"no_such"}},
        )


# ---- 4. AgentInterruptedError takes an optional message ---------------------------------------


def test_interrupted_error_accepts_a_message_like_any_exception() -> None:
    interrupt = InterruptFinal(interrupt_id="i1", payload={"options": [1, 2]})
    err = AgentInterruptedError("paused for approval", interrupts=[interrupt])
    assert (str(err), err.args, err.interrupts) == (
        "paused for approval",
        ("paused for approval",),
        [interrupt],
    )
    copy = pickle.loads(pickle.dumps(err))
    assert (str(copy), copy.interrupts) == ("paused for approval", [interrupt])
    default = AgentInterruptedError(interrupts=[interrupt])
    assert "interrupt" in str(default) and "options" not in str(default)
    assert str(pickle.loads(pickle.dumps(default))) == str(default)


# ---- multimodal history -------------------------------------------------------------------------

B64 = "iVBORw0KGgo" * 1000
PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "what is in these?"},
    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}},
    {"type": "image_url", "image_url": "https://example.com/dog.jpg"},  # LiteLLM's str form
    {"type": "input_audio", "input_audio": {"data": B64, "format": "wav"}},
    {"type": "file", "file": {"file_id": "file-abc123"}},
    {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{B64}", "filename": "a"}},
    {"type": "refusal", "refusal": "no"},  # another kind: kept as given
]


def test_content_parts_round_trip_and_share_large_payloads() -> None:
    message = Message.from_dict({"role": "user", "content": PARTS})
    assert message.content == PARTS
    assert Message.from_dict(message.to_dict()) == message
    data = message.to_dict()["content"]
    assert data == PARTS and data is not PARTS
    assert data[4]["input_audio"]["data"] is B64, "inline data is shared, never copied"


async def test_multimodal_history_passes_through_invoke_unchanged() -> None:
    history = [Message.from_dict({"role": "user", "content": PARTS})]
    agent = ScriptedAgent([TextDelta("two animals")])
    result = await agent.invoke(history)
    assert agent.last_messages is history
    assert result.text == "two animals"


# ---- small fixes -------------------------------------------------------------------------------


async def test_tool_result_without_content_is_an_empty_tool_message() -> None:
    result = await ScriptedAgent([_tc("a"), ToolResult(tool_call_id="a")]).invoke([])
    (message,) = result.steps[0].tool_messages
    assert message.to_dict() == {"role": "tool", "content": "", "tool_call_id": "a"}


def test_function_call_is_as_lenient_as_litellms() -> None:
    assert FunctionCall() == FunctionCall(name=None, arguments="")
    assert FunctionCall(name="f").arguments == ""
    assert FunctionCall("f", {"q": 1}).arguments == '{"q": 1}'  # type: ignore[arg-type]
    assert FunctionCall("f", None).arguments == ""  # type: ignore[arg-type]
    legacy = FunctionCall.from_dict({"name": "f", "parameters": {"q": 1}})
    assert legacy == FunctionCall("f", '{"q": 1}')
    assert ToolCall.from_dict({"id": "c", "function": {"name": "f"}}).function.arguments == ""


class _OtherPackage:
    """Stands in for the original package's module of event classes."""

    class TextDelta:  # same name and fields as ours, another class
        def __init__(self, text: str) -> None:
            self.text = text


async def test_collect_warns_once_when_it_meets_look_alike_events() -> None:
    look_alikes = [
        _OtherPackage.TextDelta("a"),
        _OtherPackage.TextDelta("b"),
        MessageDelta(text="c"),
        StepBoundary(),
    ]
    with pytest.warns(LookAlikeEventWarning) as caught:
        result = await ScriptedAgent(look_alikes).invoke([])
    assert len(caught) == 1
    assert result.steps == []
    assert "look like agent events" in str(caught[0].message)


async def test_collect_stays_silent_for_objects_that_are_not_event_like() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = await ScriptedAgent([object(), 42, None, TextDelta("ok")]).invoke([])
    assert result.text == "ok"


# ---- the seed's usage example, nearly verbatim ------------------------------------------------


async def test_seed_usage_example_persisting_a_step_into_history() -> None:
    """seed 000: "Persisting a step back into LLM history is a copy:
    Message(role="assistant", tool_calls=step.tool_calls) followed by
    history.extend(step.tool_messages)." With the provider's usage arriving last."""
    agent = ScriptedAgent(
        [
            LLMCallStart(model="m"),
            _tc("call_1", "search"),
            LLMCallEnd(finish_reason="tool_calls"),
            Usage(input_tokens=10, output_tokens=5),
            ToolResult(tool_call_id="call_1", content={"hits": 3}),
            StepBoundary(),
            LLMCallStart(model="m"),
            TextDelta("Three hits."),
            LLMCallEnd(finish_reason="stop"),
            StepBoundary(),
            Usage(input_tokens=20, output_tokens=4),  # usage last, after the boundary
        ]
    )
    history = [Message(role="user", content="search it")]
    result = await agent.invoke(history)

    step = result.steps[0]
    history.append(Message(role="assistant", tool_calls=step.tool_calls))
    history.extend(step.tool_messages)

    assert [m.to_dict() for m in history] == [
        {"role": "user", "content": "search it"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "content": '{"hits": 3}', "tool_call_id": "call_1"},
    ]
    assert len(result.steps) == 2
    assert result.text == "Three hits."
    assert result.steps[1].usage == Usage(input_tokens=20, output_tokens=4)
    history.append(Message(role="assistant", content=result.steps[-1].text or None))
    assert history[-1].to_dict() == {"role": "assistant", "content": "Three hits."}

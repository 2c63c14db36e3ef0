"""Long conversations: history recorded once, and a byte budget per run.

``ContentCapture(history="new")`` records on each chat span only the messages new since the
previous call of the run; a reader rebuilds what each call saw from the chain
(docs/tracing.md#long-conversations). ``ContentCapture(max_run_bytes=...)`` bounds what a
whole run records; past it, values are replaced by markers carrying ``stripped_reason``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.protocol import (
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    Usage,
)
from agent_otel import _attributes as A
from agent_otel.recording.content._capture import ContentCapture
from agent_otel.testing import InMemoryTelemetry, run_script
from semconv_registry import INPUT_MESSAGES, OUTPUT_MESSAGES, validate_content


def conversation(turns: int, *, rewrite_at: int | None = None) -> list[Any]:
    """A run whose history grows by the answer and a new user message per call, sent whole
    each call as agents do; ``rewrite_at``: the history is summarised before that call."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    events: list[Any] = []
    for turn in range(turns):
        if turn == rewrite_at:
            history = [{"role": "system", "content": f"summary of {len(history)} messages"}]
        history = [*history, {"role": "user", "content": f"question {turn}"}]
        events += [
            LLMCallStart(model="m", messages=list(history), call_id=f"c{turn}"),
            TextDelta(text=f"answer {turn}"),
            LLMCallEnd(call_id=f"c{turn}", finish_reason="stop"),
            Usage(input_tokens=1, output_tokens=1),
            StepBoundary(),
        ]
        history = [*history, {"role": "assistant", "content": f"answer {turn}"}]
    return events


def run(events: list[Any], capture: ContentCapture) -> InMemoryTelemetry:
    telemetry = InMemoryTelemetry()
    asyncio.run(run_script(telemetry, events, capture_content=capture))
    return telemetry


def chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted(
        (s for s in telemetry.spans() if s.name.startswith("chat")), key=lambda s: s.start_time
    )


def texts(attribute: Any) -> list[str]:
    messages = validate_content(INPUT_MESSAGES, attribute)
    return [part.get("content", "") for m in messages for part in m["parts"]]


def rebuild(spans: list[Any]) -> list[list[str]]:
    """What each call saw, read back as docs/tracing.md#long-conversations says."""
    seen: list[list[str]] = []
    for span in spans:
        own = texts(span.attributes[A.INPUT_MESSAGES])
        omitted = span.attributes.get(A.INPUT_MESSAGES_OMITTED, 0)
        if omitted:
            assert seen and len(seen[-1]) == omitted
            seen.append(seen[-1] + own)
        else:
            seen.append(own)
    return seen


def test_default_records_the_whole_history_on_every_call() -> None:
    spans = chats(run(conversation(4), ContentCapture()))
    assert [len(texts(s.attributes[A.INPUT_MESSAGES])) for s in spans] == [2, 4, 6, 8]
    assert all(A.INPUT_MESSAGES_OMITTED not in s.attributes for s in spans)


def test_new_records_each_message_once_and_the_calls_can_be_rebuilt() -> None:
    events = conversation(5)
    full = rebuild(chats(run(events, ContentCapture())))
    telemetry = run(events, ContentCapture(history="new"))
    spans = chats(telemetry)
    assert [len(texts(s.attributes[A.INPUT_MESSAGES])) for s in spans] == [2, 2, 2, 2, 2]
    assert [s.attributes.get(A.INPUT_MESSAGES_OMITTED) for s in spans] == [None, 2, 4, 6, 8]
    assert rebuild(spans) == full
    # the agent span carries the run's whole input once: the first call's
    root = telemetry.span("invoke_agent")
    assert texts(root.attributes[A.INPUT_MESSAGES]) == full[0]


def test_a_rewritten_history_is_recorded_whole() -> None:
    events = conversation(5, rewrite_at=3)
    full = rebuild(chats(run(events, ContentCapture())))
    spans = chats(run(events, ContentCapture(history="new")))
    assert [s.attributes.get(A.INPUT_MESSAGES_OMITTED) for s in spans] == [None, 2, 4, None, 2]
    assert rebuild(spans) == full


@pytest.mark.parametrize(
    "system",
    [
        lambda turn: f"be brief; the time is 10:{turn:02}",  # a prompt made again each call
        lambda turn: "you are the researcher" if turn < 2 else "you are the writer",  # handoff
    ],
    ids=["dynamic_prompt", "handoff"],
)
def test_an_edited_first_message_is_a_rewrite_and_recorded_whole(system: Any) -> None:
    """The history grows as before, but its system prompt is made again for each call (a
    dynamic prompt, the next agent's after a handoff): a call that omitted the messages the
    previous one saw would be rebuilt with the previous prompt."""
    events = conversation(4)
    for turn, event in enumerate(e for e in events if isinstance(e, LLMCallStart)):
        event.messages = [{"role": "system", "content": system(turn)}, *event.messages[1:]]
    full = rebuild(chats(run(events, ContentCapture())))
    spans = chats(run(events, ContentCapture(history="new")))
    assert rebuild(spans) == full
    assert [s.attributes.get(A.INPUT_MESSAGES_OMITTED) for s in spans] == (
        [None, None, None, None] if "10:" in full[0][0] else [None, 2, None, 6]
    )


@pytest.mark.parametrize("shape", [dict, Message], ids=["dict", "Message"])
def test_a_system_prompt_edited_in_place_is_a_rewrite(shape: Any) -> None:
    """A hand-written loop that keeps one history list and writes each call's prompt into its
    first message (``history[0]["content"] = prompt()``): the message is the same object, its
    text is not, so the next call records its whole input."""

    def message(role: str, content: str) -> Any:
        return {"role": role, "content": content} if shape is dict else Message(role, content)

    async def agent() -> AsyncIterator[Any]:
        history = [message("system", ""), message("user", "question")]
        for turn in range(3):
            if shape is dict:
                history[0]["content"] = f"the time is 10:0{turn}"
            else:
                history[0].content = f"the time is 10:0{turn}"
            yield LLMCallStart(model="m", messages=history, call_id=f"c{turn}")
            yield TextDelta(text=f"answer {turn}")
            yield LLMCallEnd(call_id=f"c{turn}", finish_reason="stop")
            yield StepBoundary()
            history += [message("assistant", f"answer {turn}"), message("user", f"more {turn}")]

    telemetry = InMemoryTelemetry()
    asyncio.run(run_script(telemetry, agent(), capture_content=ContentCapture(history="new")))
    seen = rebuild(chats(telemetry))
    assert [messages[0] for messages in seen] == [f"the time is 10:0{t}" for t in range(3)]
    assert [len(messages) for messages in seen] == [2, 4, 6]


def test_runs_keep_their_own_history() -> None:
    """Two runs of one wrapper (and two concurrent runs) never omit each other's messages."""
    telemetry = InMemoryTelemetry()
    wrapper_options: dict[str, Any] = {"capture_content": ContentCapture(history="new")}

    async def both() -> None:
        await asyncio.gather(
            run_script(telemetry, conversation(3), **wrapper_options),
            run_script(telemetry, conversation(3), **wrapper_options),
        )

    asyncio.run(both())
    omitted = sorted(s.attributes.get(A.INPUT_MESSAGES_OMITTED, 0) for s in chats(telemetry))
    assert omitted == [0, 0, 2, 2, 4, 4]


def test_the_run_budget_bounds_a_run_and_marks_what_it_dropped() -> None:
    budget = 600
    spans = run(conversation(30), ContentCapture(max_run_bytes=budget)).spans()
    recorded = stripped = 0
    for span in spans:
        for key in (INPUT_MESSAGES, OUTPUT_MESSAGES):
            value = span.attributes.get(key)
            if value is None:
                continue
            messages = validate_content(key, value)  # markers are valid messages too
            parts = [p for m in messages for p in m["parts"]]
            if any(A.STRIPPED_REASON in p for p in parts):
                assert parts == [
                    {"type": "text", "content": "", A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED}
                ]
                stripped += 1
            elif span.name.startswith("chat"):
                recorded += len(value.encode())
    assert stripped > 0
    assert 0 < recorded <= budget


@pytest.mark.parametrize("budget", [300, 600, 2000])
def test_every_copy_a_run_records_counts_against_its_budget(budget: int) -> None:
    """The agent span holds a second copy of the run's input and answer, and their plain-text
    previews (``input.value``, ``output.value``): what one run records in all, every span's
    values counted as encoded, stays within ``max_run_bytes``; what did not fit is a marker."""
    content = (INPUT_MESSAGES, OUTPUT_MESSAGES, A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE)
    telemetry = run(conversation(12), ContentCapture(max_run_bytes=budget))
    recorded, stripped = 0, 0
    for span in telemetry.spans():
        for key in content:
            value = span.attributes.get(key)
            if value is None:
                continue
            if key in (INPUT_MESSAGES, OUTPUT_MESSAGES):
                messages = validate_content(key, value)
                if any(A.STRIPPED_REASON in p for m in messages for p in m["parts"]):
                    stripped += 1
                    continue
            recorded += len(value.encode())
    assert stripped > 0
    assert 0 < recorded <= budget


def test_a_stripped_tool_payload_says_why() -> None:
    capture = ContentCapture(max_run_bytes=0).for_run()
    for kind in ("tool_arguments", "tool_result"):
        marker = json.loads(capture.encode(kind, {"a": 1}) or "")
        assert marker == {A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED}
    assert json.loads(capture.encode("system_instructions", "x") or "") == [
        {"type": "text", "content": "", A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED}
    ]


@pytest.mark.parametrize(
    ("settings_", "error"),
    [
        ({"history": "all"}, ValueError),
        ({"max_run_bytes": -1}, ValueError),
        ({"max_run_bytes": 1.5}, ValueError),
        ({"max_run_bytes": True}, ValueError),
    ],
)
def test_bad_settings_raise_at_construction(settings_: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        ContentCapture(**settings_)


def test_without_accounts_a_run_shares_the_capture() -> None:
    capture = ContentCapture()
    assert capture.for_run() is capture
    per_run = ContentCapture(history="new")
    assert per_run.for_run() is not per_run.for_run()


class Hostile:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no")

    __hash__ = object.__hash__


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.integers(), st.text(), st.just(Hostile())), min_size=0, max_size=6
    ),
    st.lists(
        st.one_of(st.none(), st.integers(), st.text(), st.just(Hostile())), min_size=0, max_size=6
    ),
)
def test_hostile_histories_never_raise(first: list[Any], second: list[Any]) -> None:
    capture = ContentCapture(history="new").for_run()
    for messages in (first, first + second, second):
        part, omitted = capture.new_messages(messages)
        assert list(part) == list(messages[omitted:])

"""``collect`` — the one buffering implementation — under property-based and example tests.

Properties hold for ANY sequence of the eleven event kinds (tool-call ids come from a pool of
three so they collide, results arrive before, after or without their call):

* steps split at ``StepBoundary``; content segments (text, reasoning, LLM call start, tool
  call or orphan result) become steps; a bookkeeping-only segment (usage, errors, call ends,
  markers, results of earlier calls) makes none: its usages and errors join the step before
  it; with none before, usages count for the run only and errors wait for the first step (a
  run with errors but no step makes one step holding them);
* text / reasoning are the joined deltas; tool_calls are the very same objects;
* every ToolResult becomes exactly one tool message, on the step of the most recent EARLIER
  ToolCall with its id, in that step's tool-call order; orphans (no earlier call) land on
  their own segment's step after the paired ones, in arrival order. For orphans the test
  asserts placement only: history persisted from them is not provider-valid by nature;
* ``InvokeResult.text`` is the last step's text; usage sums per step and per run;
* persisting the steps into history yields OpenAI-shaped messages (JSON Schema plus
  ordering checks below).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    AgentEvent,
    AgentProtocol,
    Error,
    FunctionCall,
    InvokeResult,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    Message,
    PhaseMarker,
    ReasoningDelta,
    Step,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    collect,
)
from hostile_types import HostileStr, LyingDict, LyingInt, LyingList, LyingStr, NoStr

T = TypeVar("T")
IDS = ["call_a", "call_b", "call_c"]
COUNTS = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
]


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine that never really suspends (our streams are in-memory)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("coroutine suspended")


async def aiter_of(items: Iterable[object]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def collect_sync(events: Sequence[object], **kwargs: Any) -> InvokeResult:
    return run_sync(collect(aiter_of(events), **kwargs))


# ---- strategies: one per event kind -------------------------------------------------------

texts = st.text(max_size=4)
opt_str = st.none() | st.sampled_from(["m1", "m2"])
opt_count = st.none() | st.integers(min_value=0, max_value=1000)
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)

tool_calls = st.builds(
    ToolCall,
    id=st.sampled_from(IDS),
    function=st.builds(FunctionCall, name=st.sampled_from(["f", "g"]), arguments=st.just("{}")),
)
EVENT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    TextDelta: st.builds(TextDelta, text=texts),
    ReasoningDelta: st.builds(ReasoningDelta, text=texts),
    LLMCallStart: st.builds(LLMCallStart, model=opt_str, call_id=st.none() | st.just("llm")),
    LLMCallEnd: st.builds(LLMCallEnd, model=opt_str, finish_reason=st.none() | st.just("stop")),
    ToolCall: tool_calls,
    ToolResult: st.builds(
        ToolResult,
        tool_call_id=st.sampled_from([*IDS, "call_zzz"]),
        content=json_like | st.text(max_size=4),
        name=st.none() | st.just("f"),
        is_error=st.booleans(),
    ),
    StepBoundary: st.builds(StepBoundary, index=st.none() | st.integers(0, 5)),
    Usage: st.builds(Usage, **dict.fromkeys(COUNTS, opt_count), model=opt_str),
    Error: st.builds(Error, message=texts, fatal=st.booleans()),
    JourneyMarker: st.builds(JourneyMarker, name=texts),
    PhaseMarker: st.builds(PhaseMarker, name=texts),
}
events_strategy = st.lists(st.one_of(*EVENT_STRATEGIES.values()), max_size=30)


def test_strategies_cover_the_eleven_kinds() -> None:
    # By name: on 3.10, dataclass(slots=True) leaves the pre-slots class in __subclasses__.
    names = {c.__name__ for c in AgentEvent.__subclasses__()}
    assert {c.__name__ for c in EVENT_STRATEGIES} == names
    assert len(names) == len(EVENT_STRATEGIES) == 11


# ---- an independent list-based model of the rules ------------------------------------------

CONTENT = (TextDelta, ReasoningDelta, ToolCall, LLMCallStart)


def model_of(events: list[object]) -> list[dict[str, Any]]:
    """Segments as lists; each result is placed by scanning BACKWARDS for its call."""
    segments: list[list[object]] = [[]]
    placed: list[tuple[int, ToolResult, bool]] = []  # (segment, result, paired)
    for position, event in enumerate(events):
        if isinstance(event, StepBoundary):
            segments.append([])
            continue
        segments[-1].append(event)
        if isinstance(event, ToolResult):
            owner = None
            seg_no = len(segments) - 1
            for earlier in reversed(events[:position]):
                if isinstance(earlier, StepBoundary):
                    seg_no -= 1
                elif isinstance(earlier, ToolCall) and earlier.id == event.tool_call_id:
                    owner = seg_no
                    break
            placed.append((len(segments) - 1 if owner is None else owner, event, owner is not None))

    def is_content(no: int, seg: list[object]) -> bool:
        has_orphan = any(s == no and not paired for s, _, paired in placed)
        return has_orphan or any(isinstance(e, CONTENT) for e in seg)

    out: list[dict[str, Any]] = []
    waiting: list[Error] = []  # errors before the first step
    for no, seg in enumerate(segments):
        usages = [e for e in seg if isinstance(e, Usage)]
        errors = [e for e in seg if isinstance(e, Error)]
        if not is_content(no, seg):
            if out:
                out[-1]["usages"] += usages
                out[-1]["errors"] += errors
            else:
                waiting += errors
            continue
        calls = [e for e in seg if isinstance(e, ToolCall)]
        order = list(dict.fromkeys(c.id for c in calls))
        paired = [r for s, r, p in placed if s == no and p]
        paired.sort(key=lambda r: order.index(r.tool_call_id))  # stable: arrival within an id
        orphans = [r for s, r, p in placed if s == no and not p]
        out.append(
            {
                "text": "".join(e.text for e in seg if isinstance(e, TextDelta)),
                "reasoning": "".join(e.text for e in seg if isinstance(e, ReasoningDelta)),
                "tool_calls": calls,
                "results": paired + orphans,
                "n_paired": len(paired),
                "usages": usages,
                "errors": [*waiting, *errors],
            }
        )
        waiting = []
    if not out and waiting:
        empty = {"text": "", "reasoning": "", "tool_calls": [], "results": [], "n_paired": 0}
        out.append({**empty, "usages": [], "errors": waiting})
    return out


def expected_content(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def check_usage(actual: Usage | None, usages: list[Usage]) -> None:
    if not usages:
        assert actual is None
        return
    assert actual is not None
    for name in COUNTS:
        reported = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        assert getattr(actual, name) == (sum(reported) if reported else None), name
    models = {u.model for u in usages} - {None}
    assert actual.model == (models.pop() if len(models) == 1 else None)


# ---- persisted history must be OpenAI-shaped -------------------------------------------------

TOOL_CALL_SCHEMA = {
    "type": "object",
    "required": ["id", "type", "function"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string"},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "properties": {"name": {"type": ["string", "null"]}, "arguments": {"type": "string"}},
        },
    },
}
MESSAGE_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["role", "content"],
            "additionalProperties": False,
            "properties": {
                "role": {"enum": ["system", "user"]},
                "content": {"type": "string"},
                "name": {"type": "string"},
            },
        },
        {
            "type": "object",
            "required": ["role"],
            "additionalProperties": False,
            "properties": {
                "role": {"const": "assistant"},
                "content": {"type": "string", "minLength": 1},
                "tool_calls": {"type": "array", "minItems": 1, "items": TOOL_CALL_SCHEMA},
                "name": {"type": "string"},
            },
        },
        {
            "type": "object",
            "required": ["role", "content", "tool_call_id"],
            "additionalProperties": False,
            "properties": {
                "role": {"const": "tool"},
                "content": {"type": "string"},
                "tool_call_id": {"type": "string"},
                "name": {"type": "string"},
            },
        },
    ]
}


def persist(history: list[Message], steps: list[Step]) -> list[Message]:
    """CONTRACT.md's recipe, verbatim."""
    for step in steps:
        history.append(
            Message(role="assistant", content=step.text or None, tool_calls=step.tool_calls)
        )
        history.extend(step.tool_messages)
    return history


def check_history(history: list[Message], orphan_ids: set[int]) -> None:
    """Shape by JSON Schema, then order: a tool message follows the assistant holding its id.

    An assistant message with neither content nor tool calls (the recipe's output for a step
    with neither) is not provider-valid; it is skipped here and counted by the caller.
    """
    holder: set[str] | None = None  # ids held by the assistant message a tool run follows
    for message in history:
        d = message.to_dict()
        json.dumps(d)  # plain JSON all the way down
        if d == {"role": "assistant"}:
            holder = set()
            continue
        jsonschema.validate(d, MESSAGE_SCHEMA)
        if d["role"] == "assistant":
            holder = {c["id"] for c in d.get("tool_calls", [])}
        elif d["role"] == "tool":
            assert holder is not None, "a tool message must follow an assistant message"
            if id(message) not in orphan_ids:
                assert d["tool_call_id"] in holder
        else:
            holder = None


@settings(max_examples=100, deadline=None)
@given(events_strategy)
def test_collect_properties(events: list[object]) -> None:
    result = collect_sync(events)
    model = model_of(events)
    assert [s.index for s in result.steps] == list(range(len(model)))
    assert len(result.steps) == len(model)

    orphan_ids: set[int] = set()
    for step, want in zip(result.steps, model):
        assert step.text == want["text"]
        assert step.reasoning == want["reasoning"]
        if want["tool_calls"]:
            assert step.tool_calls is not None
            assert [id(c) for c in step.tool_calls] == [id(c) for c in want["tool_calls"]]
        else:
            assert step.tool_calls is None
        assert [(m.role, m.tool_call_id, m.content, m.name) for m in step.tool_messages] == [
            ("tool", r.tool_call_id, expected_content(r.content), r.name) for r in want["results"]
        ]
        orphan_ids |= {id(m) for m in step.tool_messages[want["n_paired"] :]}
        assert [id(e) for e in step.errors] == [id(e) for e in want["errors"]]
        check_usage(step.usage, want["usages"])

    # Conservation: every result became exactly one tool message.
    n_results = sum(isinstance(e, ToolResult) for e in events)
    assert sum(len(s.tool_messages) for s in result.steps) == n_results

    assert result.text == (result.steps[-1].text if result.steps else "")
    check_usage(result.usage, [e for e in events if isinstance(e, Usage)])

    history = persist([Message(role="user", content="question")], result.steps)
    n_empty = sum(1 for m in history if m.to_dict() == {"role": "assistant"})
    assert n_empty == sum(1 for s in result.steps if not s.text and not s.tool_calls)
    check_history(history, orphan_ids)


# ---- examples that pin the decisions ---------------------------------------------------------


def _tc(call_id: str, name: str = "f") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


def test_two_steps_parallel_tools_results_out_of_order() -> None:
    a, b = _tc("a", "search"), _tc("b", "fetch")
    result = collect_sync(
        [
            LLMCallStart(model="m"),
            ReasoningDelta("plan "),
            ReasoningDelta("it"),
            a,
            b,
            LLMCallEnd(),
            Usage(input_tokens=10, output_tokens=2, total_tokens=12, model="m"),
            ToolResult(tool_call_id="b", content={"n": 1}),
            ToolResult(tool_call_id="a", content="found"),
            StepBoundary(index=0),
            LLMCallStart(model="m"),
            TextDelta("The "),
            TextDelta("answer"),
            Usage(input_tokens=20, output_tokens=3, model="m"),
            LLMCallEnd(),
            StepBoundary(index=1),
        ]
    )
    first, second = result.steps
    assert first.reasoning == "plan it" and first.text == ""
    assert first.tool_calls == [a, b]
    assert [(m.tool_call_id, m.content) for m in first.tool_messages] == [
        ("a", "found"),
        ("b", '{"n": 1}'),
    ]
    assert second.text == "The answer" and second.tool_calls is None
    assert result.text == "The answer"
    assert result.usage == Usage(input_tokens=30, output_tokens=5, total_tokens=12, model="m"), (
        "total_tokens is summed as reported, never derived"
    )


def test_late_result_pairs_with_the_earlier_step_and_makes_no_step() -> None:
    result = collect_sync(
        [_tc("a"), StepBoundary(), ToolResult("a", 7), StepBoundary(), TextDelta("done")]
    )
    assert len(result.steps) == 2
    assert [m.content for m in result.steps[0].tool_messages] == ["7"]
    assert result.steps[1].text == "done"


def test_orphan_result_is_kept_after_paired_ones() -> None:
    result = collect_sync(
        [ToolResult("ghost", "boo"), _tc("a"), ToolResult("a", None), ToolResult("x", [1])]
    )
    (step,) = result.steps
    assert [(m.tool_call_id, m.content) for m in step.tool_messages] == [
        ("a", ""),
        ("ghost", "boo"),
        ("x", "[1]"),
    ]


def test_empty_segments_make_no_step_and_unknown_objects_are_ignored() -> None:
    result = collect_sync(
        [
            StepBoundary(),
            PhaseMarker("plan"),
            LLMCallEnd(),
            object(),
            StepBoundary(),
            StepBoundary(),
            JourneyMarker("j"),
        ]
    )
    assert result == InvokeResult(text="", steps=[], usage=None)


def test_trailing_segment_and_errors() -> None:
    err = Error("rate limited", error_type="RateLimit")
    result = collect_sync([TextDelta("a"), StepBoundary(), err, TextDelta("")])
    assert [s.text for s in result.steps] == ["a", ""]
    assert result.steps[1].errors == [err]
    assert result.text == "", "the last step's text, even when empty"


def test_unserialisable_tool_content_falls_back_to_str() -> None:
    circular: list[Any] = []
    circular.append(circular)
    result = collect_sync(
        [_tc("a"), ToolResult("a", {(1, 2): "tuple key"}), ToolResult("a", circular)]
    )
    contents = [m.content for m in result.steps[0].tool_messages]
    assert contents == [str({(1, 2): "tuple key"}), str(circular)]


def test_usage_model_disagreement_and_absent_fields() -> None:
    result = collect_sync([Usage(input_tokens=1, model="a"), Usage(output_tokens=2, model="b")])
    assert result.usage == Usage(input_tokens=1, output_tokens=2, model=None)


# ---- stream_wrapper ---------------------------------------------------------------------------


def test_stream_wrapper_is_applied_before_consumption() -> None:
    seen: list[object] = []

    def wrapper(stream: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        async def wrapped() -> AsyncIterator[AgentEvent]:
            async for event in stream:
                seen.append(event)
                if isinstance(event, TextDelta):
                    yield TextDelta(event.text.upper())
                else:
                    yield event

        return wrapped()

    events = [TextDelta("hi"), StepBoundary(), TextDelta("there")]
    result = collect_sync(events, stream_wrapper=wrapper)
    assert seen == events
    assert [s.text for s in result.steps] == ["HI", "THERE"]
    assert result.text == "THERE"


async def test_streaming_agent_invoke_uses_collect_and_wrapper() -> None:
    events = [TextDelta("x"), _tc("a"), ToolResult("a", "r"), StepBoundary(), TextDelta("y")]
    agent = ScriptedAgent(events)
    seen: list[object] = []

    def observer(stream: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        async def wrapped() -> AsyncIterator[AgentEvent]:
            async for event in stream:
                seen.append(event)
                yield event

        return wrapped()

    history = [Message(role="user", content="q")]
    result = await agent.invoke(history, stream_wrapper=observer, config={"conversation_id": "c"})
    assert result == collect_sync(events)
    assert seen == events
    assert agent.last_messages is history
    assert agent.last_config == {"conversation_id": "c"}


# ---- AgentProtocol -----------------------------------------------------------------------------


class _OnlyStream:
    def stream(self, messages: list[Message], config: dict[str, Any] | None = None) -> Any:
        return aiter_of([])


class _OnlyInvoke:
    async def invoke(self, messages: list[Message], stream_wrapper: Any = None) -> Any:
        return None


class _Both(_OnlyStream, _OnlyInvoke):
    pass


def test_agent_protocol_isinstance() -> None:
    assert isinstance(ScriptedAgent([]), AgentProtocol)
    assert isinstance(_Both(), AgentProtocol), "duck-typed: no base class needed"
    assert not isinstance(_OnlyStream(), AgentProtocol)
    assert not isinstance(_OnlyInvoke(), AgentProtocol)
    assert not isinstance(object(), AgentProtocol)


def test_builtin_subclasses_in_events_are_read_as_the_builtins_they_are() -> None:
    """Tool call ids of a ``str`` subclass whose own hash and equality raise, tool content of a
    ``dict`` or ``list`` subclass whose own ``items`` and iteration raise, token counts of an
    ``int`` subclass whose own ``+`` raises, a usage model of a ``str`` subclass: ``collect``
    (so ``invoke``) reads each as the built-in it is, where each raised out of it."""
    calls = [_tc(HostileStr("a")), _tc(LyingStr("b"))]  # type: ignore[arg-type]
    events = [
        *calls,
        ToolResult(LyingStr("b"), LyingDict(k=LyingList([1, LyingStr("x")]))),  # type: ignore[arg-type]
        ToolResult(HostileStr("a"), LyingList(["r"])),  # type: ignore[arg-type]
        Usage(input_tokens=LyingInt(3), model=HostileStr("m")),
        Usage(output_tokens=LyingInt(2), model=HostileStr("m")),
    ]
    result = collect_sync(events)
    (step,) = result.steps
    assert step.tool_calls is not None and all(a is b for a, b in zip(step.tool_calls, calls))
    assert [m.content for m in step.tool_messages] == ['["r"]', '{"k": [1, "x"]}']
    assert result.usage == Usage(input_tokens=3, output_tokens=2, model="m")
    assert type(result.usage.input_tokens) is int and type(result.usage.model) is str


def test_tool_content_too_deep_or_unprintable_is_named_by_its_type() -> None:
    """Tool content nested past the recursion limit (``json.dumps`` and ``repr`` both raise
    on it), or whose ``str()`` raises, becomes ``<type>``: ``collect`` (so ``invoke``) still
    returns, where the RecursionError came out of it."""
    deep: list[Any] = []
    inner = deep
    for _ in range(5_000):
        inner.append([])
        inner = inner[0]

    class Mute:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    events = [_tc("a"), _tc("b"), ToolResult("a", deep), ToolResult("b", Mute())]
    (step,) = collect_sync(events).steps
    assert [m.content for m in step.tool_messages] == ["<list>", "<Mute>"]


def test_tool_call_ids_that_cannot_be_keys_pair_by_their_text() -> None:
    """A tool call id that is a list, or whose hash raises, pairs its result by its text (the
    TypeError of an unhashable key came out of ``invoke``); one whose ``str()`` also raises is
    as no id: its result is an orphan, never paired with another id-less one."""

    class NoKey:
        def __hash__(self) -> int:
            raise RuntimeError("no hash")

        def __str__(self) -> str:
            return "nk"

    class Nothing:
        __hash__ = None  # type: ignore[assignment]

        def __str__(self) -> str:
            raise RuntimeError("no text")

    events = [
        _tc(["a"]),  # type: ignore[arg-type]
        _tc(NoKey()),  # type: ignore[arg-type]
        _tc(Nothing()),  # type: ignore[arg-type]
        _tc("z"),
        ToolResult(["a"], "ra"),  # type: ignore[arg-type]
        ToolResult(NoKey(), "rn"),  # type: ignore[arg-type]
        ToolResult(None, "orphan"),  # type: ignore[arg-type]
        ToolResult("z", "rz"),
    ]
    (step,) = collect_sync(events).steps  # paired results in their calls' order, then orphans
    assert [m.content for m in step.tool_messages] == ["ra", "rn", "rz", "orphan"]


# Values no field promised: a None chunk (a provider's last delta), counts that are no count.
NOT_TEXT = st.sampled_from([None, 0, 1.5, b"x", ["a"], {"a": 1}, NoStr()])
NOT_COUNT = st.sampled_from([-1, 1.5, math.nan, math.inf, True, "5", b"5", [1], NoStr()])


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(texts | NOT_TEXT, max_size=5),
    counts=st.lists(st.fixed_dictionaries(dict.fromkeys(COUNTS, opt_count | NOT_COUNT))),
)
def test_values_that_are_not_what_the_fields_say_never_cost_invoke(
    texts: list[Any], counts: list[dict[str, Any]]
) -> None:
    """``collect`` (so ``invoke``) never fails on a delta whose text is no ``str``, or a count
    that is no count: the text is the ``str`` chunks joined, the usage the counts summed."""
    events: list[object] = [TextDelta(t) for t in texts] + [Usage(**c) for c in counts]
    result = collect_sync(events)
    assert result.text == "".join(t for t in texts if isinstance(t, str))
    if not counts:
        assert result.usage is None
        return
    assert result.usage is not None
    for name in COUNTS:
        valid = [c[name] for c in counts if type(c[name]) is int and c[name] >= 0]
        assert getattr(result.usage, name) == (sum(valid) if valid else None), name

"""The ``Agent`` ABC: the terminal rule (``_drain``), default ``astream``, class checks, inputs."""

from __future__ import annotations

import pickle
import types
from collections.abc import AsyncIterator, Iterable
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, PydanticInvalidForJsonSchema

from agent_contract.agent import (
    Agent,
    AgentInterruptedError,
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    PresetSpec,
    ReasoningStep,
    RunUsage,
    StreamEvent,
    StructuredFinal,
    SubAgentSpec,
    ToolCallStep,
    ToolResultStep,
)
from agent_contract.examples import ExampleToolInput, NonStreamingAgent, ScriptedStreamingAgent
from hostile_types import BadHash, HostileStr, LyingInt, LyingStr, NoStr


async def drain(events: Iterable[Any]) -> Any:
    return await NonStreamingAgent()._drain(_aiter(events))


async def _aiter(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


class Answer(BaseModel):
    value: int


def _interrupt(n: int) -> InterruptFinal:
    return InterruptFinal(interrupt_id=f"i{n}", payload={"options": [n]}, reason=f"r{n}")


NON_TERMINAL = [
    MessageDelta(text="par"),
    ReasoningStep(text="think"),
    ToolCallStep(tool="t", args={"a": 1}, call_id="c"),
    ToolResultStep(tool="t", call_id="c", result=[1]),
    RunUsage(input_tokens=1),
]


# ---- _drain: the terminal rule ---------------------------------------------------------------


async def test_drain_text() -> None:
    assert await drain([*NON_TERMINAL, MessageFinal(text="hello")]) == "hello"


async def test_drain_structured_returns_the_same_object() -> None:
    answer = Answer(value=3)
    assert await drain([*NON_TERMINAL, StructuredFinal(data=answer)]) is answer


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([MessageFinal(text="a"), StructuredFinal(data=1)], 1),
        ([StructuredFinal(data=1), MessageFinal(text="a")], "a"),
        ([MessageFinal(text="a"), MessageFinal(text="b")], "b"),
        ([StructuredFinal(data=1), StructuredFinal(data=None)], None),
        ([MessageFinal(text="a"), StructuredFinal(data=2), MessageDelta(text="x")], 2),
        ([MessageFinal(text="")], ""),
    ],
)
async def test_drain_several_terminals_last_one_wins(events: list[Any], expected: Any) -> None:
    assert await drain(events) == expected


@pytest.mark.parametrize(
    "events",
    [
        [_interrupt(1)],
        [MessageFinal(text="a"), _interrupt(1), _interrupt(2)],
        [_interrupt(1), StructuredFinal(data=1), _interrupt(2), MessageFinal(text="z")],
    ],
)
async def test_drain_any_interrupt_raises_with_all_of_them_in_order(events: list[Any]) -> None:
    with pytest.raises(AgentInterruptedError) as caught:
        await drain(events)
    expected = [e for e in events if isinstance(e, InterruptFinal)]
    assert [id(e) for e in caught.value.interrupts] == [id(e) for e in expected]


@pytest.mark.parametrize("events", [[], NON_TERMINAL])
async def test_drain_without_terminal_raises(events: list[Any]) -> None:
    with pytest.raises(RuntimeError, match="without a terminal event"):
        await drain(events)


async def test_drain_consumes_the_whole_stream() -> None:
    consumed: list[int] = []

    async def stream() -> AsyncIterator[Any]:
        yield MessageFinal(text="early")
        consumed.append(1)
        yield _interrupt(9)
        consumed.append(2)

    with pytest.raises(AgentInterruptedError):
        await NonStreamingAgent()._drain(stream())
    assert consumed == [1, 2]


async def test_drain_recognises_look_alike_events_by_type() -> None:
    class ForeignFinal(BaseModel):  # another package's event with the same shape
        type: str = "message_final"
        text: str
        final: bool = True

    assert await drain([ForeignFinal(text="theirs")]) == "theirs"


def test_interrupted_error_survives_pickling() -> None:
    err = AgentInterruptedError(interrupts=[_interrupt(1)])
    back = pickle.loads(pickle.dumps(err))
    assert back.interrupts == err.interrupts
    assert str(back) == str(err)


# ---- default astream --------------------------------------------------------------------------


async def _events(agent: Agent, **kwargs: Any) -> list[StreamEvent]:
    return [e async for e in agent.astream(**kwargs)]


async def test_default_astream_str_becomes_message_final() -> None:
    agent = NonStreamingAgent("plain answer")
    events = await _events(agent, user_message="q", custom=1)
    assert events == [MessageFinal(text="plain answer")]
    assert events[0].final is True
    assert agent.last_kwargs == {"user_message": "q", "custom": 1}
    assert agent.runs == 1, "run is awaited exactly once"


@pytest.mark.parametrize("value", [Answer(value=1), {"k": "v"}, None, 42, b"bytes"])
async def test_default_astream_non_str_becomes_structured_final(value: Any) -> None:
    (event,) = await _events(NonStreamingAgent(value))
    assert isinstance(event, StructuredFinal)
    assert event.data is value
    assert event.final is True


async def test_default_astream_round_trips_through_drain() -> None:
    agent = NonStreamingAgent(Answer(value=5))
    assert await agent._drain(agent.astream()) == Answer(value=5)


async def test_default_astream_propagates_run_errors() -> None:
    boom = ValueError("boom")
    with pytest.raises(ValueError) as caught:
        await _events(NonStreamingAgent(error=boom))
    assert caught.value is boom


async def test_streaming_agent_runs_by_draining_its_astream() -> None:
    script = [MessageDelta(text="hi"), MessageFinal(text="hi there")]
    agent = ScriptedStreamingAgent(script)
    assert await agent.run(user_message="q", thread_id="t") == "hi there"
    assert agent.last_kwargs == {"user_message": "q", "thread_id": "t"}
    interrupted = ScriptedStreamingAgent(lambda kw: [_interrupt(int(kw["n"]))])
    with pytest.raises(AgentInterruptedError) as caught:
        await interrupted.run(n=7)
    assert caught.value.interrupts[0].interrupt_id == "i7"


# ---- class creation checks --------------------------------------------------------------------


class _Input(BaseModel):
    query: str
    thread_id: str | None = None


def test_bad_preset_bakeable_field_fails_at_class_creation() -> None:
    with pytest.raises(TypeError, match="no_such_field"):

        class Bad(NonStreamingAgent):
            ToolInput = _Input
            preset_bakeable_fields = frozenset({"thread_id", "no_such_field"})


def test_bad_preset_bakeable_field_is_checked_against_an_inherited_tool_input() -> None:
    with pytest.raises(TypeError):

        class Bad(NonStreamingAgent):  # inherits ExampleToolInput
            preset_bakeable_fields = frozenset({"query"})


def test_valid_declarations_create_classes() -> None:
    class Good(NonStreamingAgent):
        ToolInput = _Input
        spec_runnable = True
        preset_bakeable_fields = frozenset({"thread_id"})

    class Intermediate(Agent):  # no ToolInput yet: nothing to check against
        preset_bakeable_fields = frozenset({"later"})

    assert Good.preset_bakeable_fields == {"thread_id"}
    assert Intermediate.preset_bakeable_fields == {"later"}
    with pytest.raises(TypeError):

        class Concrete(Intermediate):
            ToolInput = _Input  # lacks "later"


@pytest.mark.parametrize(
    "attrs",
    [
        {"preset_bakeable_fields": "thread_id"},  # a str is not a collection of names
        {"preset_bakeable_fields": 3},
        {"preset_bakeable_fields": ["thread_id", 3]},
        {"ToolInput": dict},
    ],
)
def test_malformed_declarations_fail_loudly(attrs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        type("Malformed", (NonStreamingAgent,), attrs)


def test_agent_without_run_cannot_be_instantiated() -> None:
    class NoRun(Agent):
        tool_name = "x"
        tool_description = "x"
        ToolInput = _Input

    with pytest.raises(TypeError):
        NoRun()  # type: ignore[abstract]


class _Live:
    """A non-JSON thing, like a live tool object."""


def test_non_json_tool_input_field_fails_at_json_schema_time() -> None:
    class LiveInput(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        tool: _Live

    class LiveAgent(NonStreamingAgent):  # class creation itself is fine
        ToolInput = LiveInput

    with pytest.raises(PydanticInvalidForJsonSchema):
        LiveAgent.ToolInput.model_json_schema()
    assert ExampleToolInput.model_json_schema()["required"] == ["user_message"]


# ---- from_tool_input ---------------------------------------------------------------------------


class _Rich(BaseModel):
    user_message: str
    thread_id: str | None = None
    presets: list[PresetSpec] = []
    subagents: list[SubAgentSpec] = []
    strategy: str | None = "auto"


def test_from_tool_input_passes_set_fields_and_keeps_nested_models() -> None:
    validated = _Rich.model_validate(
        {
            "user_message": "hi",
            "presets": [{"name": "p", "base_tool": "flow", "fixed_kwargs": {"flow_graph": {}}}],
            "subagents": [{"name": "helper", "subagents": [{"name": "inner"}]}],
            "strategy": None,  # explicitly set, even to None
        }
    )
    kwargs = Agent.from_tool_input(validated)
    assert list(kwargs) == ["user_message", "presets", "subagents", "strategy"]
    assert "thread_id" not in kwargs, "unset defaults are not passed"
    assert kwargs["strategy"] is None
    assert isinstance(kwargs["presets"][0], PresetSpec)
    assert kwargs["presets"][0].fixed_kwargs == {"flow_graph": {}}
    assert isinstance(kwargs["subagents"][0], SubAgentSpec)
    assert isinstance(kwargs["subagents"][0].subagents[0], SubAgentSpec)
    assert kwargs["presets"][0] is validated.presets[0]


def test_from_tool_input_includes_set_extras() -> None:
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int = 0

    assert Agent.from_tool_input(Open.model_validate({"b": 2, "a": 1})) == {"a": 1, "b": 2}


def test_subagent_spec_accepts_live_tools_and_response_formats() -> None:
    live = _Live()
    spec = SubAgentSpec(name="s", tools=[live], response_format=Answer)
    assert spec.tools[0] is live
    assert spec.response_format is Answer
    assert SubAgentSpec(name="s", response_format={"type": "object"}).response_format == {
        "type": "object"
    }


class _Typed(Agent):
    """Checks that a concrete Agent type-checks with the seed's class attributes."""

    tool_name = "typed"
    tool_description = "d"
    ToolInput = _Input
    spec_runnable: ClassVar[bool] = True

    async def run(self, **kwargs: Any) -> Any:
        return kwargs.get("user_message", "")


async def test_concrete_agent_roundtrip() -> None:
    assert await _Typed()._drain(_Typed().astream(user_message="x")) == "x"


# ---- _drain: hostile discriminators ------------------------------------------------------------


def _final(kind: Any, **fields: Any) -> Any:
    """A look-alike terminal event (``_drain`` reads any object by its ``type`` and ``final``)."""
    return types.SimpleNamespace(type=kind, final=True, **fields)


@pytest.mark.parametrize("hostile", [LyingStr, HostileStr])
async def test_drain_reads_a_str_subclass_type_as_the_str_it_is(hostile: type[str]) -> None:
    """A ``type`` of a ``str`` subclass whose own equality and hash raise (or also its
    ``str()`` and ``repr()``) is the ``str`` it is: the terminal rule holds as for a plain
    ``str`` (comparing it raised out of ``run``)."""
    assert await drain([_final(hostile("message_final"), text="hi")]) == "hi"
    answer = Answer(value=1)
    assert await drain([_final(hostile("structured_final"), data=answer)]) is answer
    with pytest.raises(AgentInterruptedError):
        await drain([_final(hostile("interrupt_final"))])
    with pytest.raises(TypeError, match="'custom_final'"):
        await drain([_final(hostile("custom_final"))])


@pytest.mark.parametrize("kind", [NoStr(), BadHash(), LyingInt(3)], ids=["no-str", "no-eq", "int"])
async def test_drain_names_a_hostile_non_str_type_without_running_it(kind: Any) -> None:
    """A ``final`` event whose ``type`` is not a string, and whose own equality or ``repr()``
    raise, is a final event of an unknown type: ``TypeError``, as for any other."""
    with pytest.raises(TypeError, match="unknown type"):
        await drain([_final(kind)])

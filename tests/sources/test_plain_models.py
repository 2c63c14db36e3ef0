"""The Chat Completions reader reads a plain pydantic delta's reasoning from its dicts: the
same events, and the same exception, as a reader reading every field with ``getattr``.

``ChatCompletionsReader.feed`` reads ``reasoning_content`` / ``reasoning`` of a delta whose
class is a plain pydantic model (``PlainModels``) from its ``__dict__`` and extras, and with
``getattr`` otherwise. Each case here is fed to it and to ``_by_getattr``, the reader as it was
before (every field read by name), and both outcomes must be equal, exceptions included.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, PrivateAttr

from agent_contract.events import AgentEvent, ReasoningDelta, TextDelta
from agent_contract.sources import openai_chat
from agent_contract.sources._stream import MAX_CLASSES, PlainModels, optional_field
from agent_contract.sources.openai_chat import ChatCompletionsReader
from sources._getattr_reference import Extras

pytest.importorskip("openai")

from openai.types.chat.chat_completion_chunk import (
    ChatCompletionChunk,
    Choice,
    ChoiceDelta,
)


def _by_getattr(reader: ChatCompletionsReader, chunk: Any) -> list[AgentEvent]:
    """The reference: ``feed`` with every field read by ``getattr``."""
    reader._id = chunk.id or reader._id
    reader._model = chunk.model or reader._model
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        reader._usage = usage
    out: list[AgentEvent] = []
    for choice in chunk.choices or ():
        if choice.index:
            continue
        delta = choice.delta
        if delta is not None:
            reasoning = getattr(delta, "reasoning_content", None) or getattr(
                delta, "reasoning", None
            )
            if reasoning and isinstance(reasoning, str):
                out.append(ReasoningDelta(reasoning))
            content = delta.content
            if content:
                out.append(TextDelta(content))
            if delta.tool_calls:
                reader._assemble(delta.tool_calls)
        if choice.finish_reason:
            reader._finish = choice.finish_reason
    return out


def _outcome(feed: Any, chunks: list[Any]) -> Any:
    reader = ChatCompletionsReader()
    events: list[Any] = []
    try:
        for chunk in chunks:
            events.append(list(feed(reader, chunk)))
        events.append(list(reader.close()))
    except Exception as exc:  # the same exception, with the same message
        events.append((type(exc), str(exc)))
    return events


def assert_read_as_getattr_reads(*chunks: Any) -> None:
    fed = _outcome(ChatCompletionsReader.feed, list(chunks))
    assert fed == _outcome(_by_getattr, list(chunks))
    again = _outcome(ChatCompletionsReader.feed, list(chunks))  # classes now remembered
    assert again == fed


def _chunk(delta: Any = None, *, index: Any = 0, finish: Any = None, **fields: Any) -> Any:
    if delta is None:
        delta = ChoiceDelta(content="hi")
    choice = Choice.model_construct(index=index, delta=delta, finish_reason=finish)
    values = {"id": "c1", "model": "m", "object": "chat.completion.chunk", "created": 0}
    return ChatCompletionChunk.model_construct(**{**values, "choices": [choice], **fields})


def _without(model: Any, *names: str) -> Any:
    for name in names:
        del model.__dict__[name]
    return model


def test_the_sdks_delta_is_plain_and_its_extras_read_directly() -> None:
    chunk = ChatCompletionChunk.model_validate(
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "a", "reasoning_content": "r"}}]}
    )  # fmt: skip
    assert_read_as_getattr_reads(chunk, chunk)
    assert openai_chat._PLAIN.get(id(ChoiceDelta)) is ChoiceDelta  # the fast path is taken
    assert list(ChatCompletionsReader().feed(chunk)) == [ReasoningDelta("r"), TextDelta("a")]


@pytest.mark.parametrize(
    "extra",
    [{}, {"reasoning_content": "why"}, {"reasoning": "why"}, {"reasoning_content": ""},
     {"reasoning_content": "", "reasoning": "then"}, {"reasoning_content": None, "reasoning": 0},
     {"reasoning_content": 3}, {"reasoning_content": "a", "reasoning": "b"}],
)  # fmt: skip
def test_reasoning_extras_present_absent_or_falsy(extra: dict[str, Any]) -> None:
    delta = ChoiceDelta.model_validate({"content": "x", **extra})
    assert delta.__pydantic_extra__ == extra
    assert_read_as_getattr_reads(_chunk(delta))


@pytest.mark.parametrize(
    "own", [{"reasoning_content": "", "reasoning": "own"}, {"reasoning": "own"},
            {"reasoning_content": "own"}, {"reasoning": ""}],
)  # fmt: skip
def test_reasoning_fields_in_the_dict_itself_come_first(own: dict[str, Any]) -> None:
    delta = ChoiceDelta(content="x", reasoning_content="extra")
    delta.__dict__.update(own)
    assert_read_as_getattr_reads(_chunk(delta))
    bare = ChoiceDelta(content="x")
    bare.__dict__.update(own)
    assert_read_as_getattr_reads(_chunk(bare))


@pytest.mark.parametrize(
    "chunk",
    [
        _without(_chunk(), "id"),
        _without(_chunk(), "model"),
        _without(_chunk(), "usage"),
        _without(_chunk(), "choices"),
        _chunk(_without(ChoiceDelta(content="c"), "content")),
        _chunk(_without(ChoiceDelta(content="c"), "tool_calls")),
        _chunk(_without(ChoiceDelta(content="c"), "content", "tool_calls")),
    ],
    ids=["id", "model", "usage", "choices", "content", "tool_calls", "both"],
)
def test_a_model_built_without_a_field_reads_as_getattr(chunk: Any) -> None:
    assert_read_as_getattr_reads(chunk)


@pytest.mark.parametrize("missing", ["index", "delta", "finish_reason"])
@pytest.mark.parametrize("index", [0, 1, None])
def test_a_choice_built_without_a_field_reads_as_getattr(missing: str, index: Any) -> None:
    chunk = _chunk(index=index, finish="stop")
    _without(chunk.choices[0], missing)
    assert_read_as_getattr_reads(chunk)


def test_a_model_built_without_its_required_fields_raises_pydantics_error() -> None:
    chunk = BaseModel.model_construct.__func__(ChatCompletionChunk, choices=[])  # pydantic's own
    fed = _outcome(ChatCompletionsReader.feed, [chunk])
    assert fed[-1][0] is AttributeError and "'id'" in fed[-1][1]
    assert_read_as_getattr_reads(chunk)


class WithProperty(ChoiceDelta):
    @property
    def reasoning(self) -> str:
        return "from the property"


class WithClassAttribute(ChoiceDelta):
    reasoning_content: ClassVar[str] = "from the class"


class WithPrivate(ChoiceDelta):
    _secret: str = PrivateAttr(default="private")


class WithGetattr(ChoiceDelta):
    def __getattr__(self, name: str) -> Any:
        if name == "reasoning":
            return "from __getattr__"
        return super().__getattr__(name)


class WithGetattribute(ChoiceDelta):
    def __getattribute__(self, name: str) -> Any:
        if name == "content":
            return "from __getattribute__"
        return super().__getattribute__(name)


class ChoiceWithProperty(Choice):
    @property
    def finish_reason(self) -> str:  # type: ignore[override]
        return "from the property"


@pytest.mark.parametrize(
    "cls", [WithProperty, WithClassAttribute, WithPrivate, WithGetattr, WithGetattribute]
)
@pytest.mark.parametrize("extra", [{}, {"reasoning_content": "extra"}, {"reasoning": "extra"}])
def test_a_class_answering_a_name_itself_is_read_as_getattr(
    cls: type[ChoiceDelta], extra: dict[str, Any]
) -> None:
    delta = cls.model_validate({"content": "x", **extra})
    assert_read_as_getattr_reads(_chunk(delta), _chunk(delta))
    assert openai_chat._MODELS.admit(cls) is (cls is WithPrivate)


def test_a_choice_class_answering_a_name_itself_is_read_as_getattr() -> None:
    try:
        choice = ChoiceWithProperty.model_construct(index=0, delta=ChoiceDelta(content="x"))
    except Exception:  # pragma: no cover - pydantic refusing the shadowing property
        pytest.skip("pydantic refuses a property shadowing a field")
    chunk = _chunk()
    chunk.__dict__["choices"] = [choice]
    assert_read_as_getattr_reads(chunk)


class HostileDict(dict[str, Any]):
    """A ``__dict__`` answering ``in`` and subscripts its own way (``getattr`` does not ask)."""

    def __contains__(self, name: object) -> bool:
        return False

    def __getitem__(self, name: str) -> Any:
        return "from a hostile __getitem__"

    def get(self, name: str, default: Any = None) -> Any:
        return "from a hostile get"


def test_a_dict_subclass_as_dict_or_extras_is_read_as_getattr() -> None:
    delta = ChoiceDelta(content="x", reasoning="r")
    object.__setattr__(delta, "__dict__", HostileDict(delta.__dict__))
    chunk = _chunk()
    object.__setattr__(chunk, "__dict__", HostileDict(chunk.__dict__))
    assert_read_as_getattr_reads(_chunk(delta), chunk)
    extras = ChoiceDelta(content="x")
    object.__setattr__(extras, "__pydantic_extra__", HostileDict({"reasoning": "r"}))
    assert_read_as_getattr_reads(_chunk(extras))


@pytest.mark.parametrize("extras", [Extras(), None, [], ["reasoning"], {"reasoning": "r"}])
def test_extras_of_any_kind_are_read_as_getattr(extras: Any) -> None:
    delta = ChoiceDelta(content="x")
    object.__setattr__(delta, "__pydantic_extra__", extras)
    assert_read_as_getattr_reads(_chunk(delta))  # (optional_field's own: test_optional_field)


def test_extras_not_set_at_all_are_read_as_getattr() -> None:
    delta = ChoiceDelta(content="x", reasoning="r")
    object.__delattr__(delta, "__pydantic_extra__")
    assert_read_as_getattr_reads(_chunk(delta))


def test_a_dict_naming_private_attributes_is_read_as_getattr() -> None:
    delta = ChoiceDelta(content="x", reasoning="extra")
    delta.__dict__["__private_attributes__"] = {"reasoning": "private"}
    assert_read_as_getattr_reads(_chunk(delta))
    with pytest.raises(TypeError):  # pydantic looks in __pydantic_private__, which is None
        getattr(delta, "reasoning", None)
    with pytest.raises(TypeError):
        optional_field(delta, "reasoning")


class Liar(type):
    """A metaclass claiming to be every class: equal to all, hashed as ``ChoiceDelta``."""

    def __hash__(cls) -> int:
        return hash(ChoiceDelta)

    def __eq__(cls, other: object) -> bool:
        return True


class Impostor(metaclass=Liar):
    tool_calls = None
    content = "text"

    @property
    def reasoning(self) -> str:
        return "from the property"


def test_a_class_equal_to_a_plain_one_is_not_taken_for_it() -> None:
    impostor = Impostor()
    assert_read_as_getattr_reads(_chunk(), _chunk(impostor))  # ChoiceDelta remembered first
    assert list(ChatCompletionsReader().feed(_chunk(impostor))) == [
        ReasoningDelta("from the property"),
        TextDelta("text"),
    ]


def test_other_objects_are_read_as_getattr() -> None:
    delta = SimpleNamespace(content="x", tool_calls=None, reasoning="r")
    choice = SimpleNamespace(index=0, delta=delta, finish_reason="stop")
    chunk = SimpleNamespace(id="c", model="m", usage=None, choices=[choice])
    assert_read_as_getattr_reads(chunk, SimpleNamespace(id="c", model="m", choices=None))


def test_litellms_chunks_read_as_getattr() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import
    utils = pytest.importorskip("litellm.types.utils")
    for delta in (
        utils.Delta(content="x", reasoning_content="r"),
        utils.Delta(content="x"),
        utils.Delta(content=None, reasoning_content=""),
    ):
        choice = utils.StreamingChoices(index=0, delta=delta, finish_reason=None)
        chunk = utils.ModelResponseStream(id="c", model="m", choices=[choice])
        assert_read_as_getattr_reads(chunk, chunk)


def test_the_memory_of_classes_is_bounded_and_keeps_what_it_names_alive() -> None:
    models = PlainModels({"content"})
    made = [type(f"Made{i}", (ChoiceDelta,), {}) for i in range(MAX_CLASSES + 10)]
    assert all(models.admit(cls) for cls in made)
    assert len(models.plain) + len(models.other) <= MAX_CLASSES
    assert all(models.plain[id(cls)] is cls for cls in made[-5:])
    assert not models.admit(WithGetattr) and not models.admit(dict)


# Generated models: every field present or missing, extras of every truthiness, each class.
_VALUES = st.sampled_from([None, "", "text", 0, 7])
_CLASSES = [ChoiceDelta, WithProperty, WithClassAttribute, WithPrivate, WithGetattr]


@st.composite
def _chunks(draw: st.DrawFn) -> Any:
    cls = draw(st.sampled_from(_CLASSES))
    extra = draw(st.dictionaries(st.sampled_from(["reasoning_content", "reasoning"]), _VALUES))
    delta = cls.model_validate(extra)
    delta.__dict__["content"] = draw(_VALUES)
    for name in draw(st.sets(st.sampled_from(["content", "tool_calls", "role"]))):
        del delta.__dict__[name]
    own = draw(st.dictionaries(st.sampled_from(["reasoning_content", "reasoning"]), _VALUES))
    delta.__dict__.update(own)
    index = draw(st.sampled_from([0, 1, None]))
    chunk = _chunk(delta, index=index, finish=draw(st.sampled_from([None, "", "stop"])))
    for name in draw(st.sets(st.sampled_from(["index", "delta", "finish_reason"]))):
        del chunk.choices[0].__dict__[name]
    for name in draw(st.sets(st.sampled_from(["id", "model", "usage"]), max_size=1)):
        del chunk.__dict__[name]
    return chunk


@settings(max_examples=100, deadline=None, derandomize=True)  # the same examples every run
@given(chunks=st.lists(_chunks(), min_size=1, max_size=3))
def test_generated_models_read_as_getattr_reads(chunks: list[Any]) -> None:
    assert_read_as_getattr_reads(*chunks)

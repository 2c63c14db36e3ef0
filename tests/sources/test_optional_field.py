"""``optional_field`` answers as ``getattr(obj, name, None)`` does, for every kind of object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, PrivateAttr

from agent_contract.sources._stream import optional_field
from sources._getattr_reference import Extras, or_of_getattrs


class Open(BaseModel):
    """Like the SDKs' models: undeclared fields a server sends are kept as extras."""

    model_config = ConfigDict(extra="allow")
    content: str | None = None

    @property
    def shown(self) -> str:
        return f"<{self.content}>"


class Closed(BaseModel):
    content: str | None = None


class WithPrivate(Open):
    _secret: str = PrivateAttr(default="private")


class Dynamic(Open):
    """A model whose own ``__getattr__`` answers names pydantic does not know."""

    def __getattr__(self, name: str) -> Any:
        if name == "dynamic":
            return "made"
        return super().__getattr__(name)


@dataclass(slots=True)
class Slotted:
    content: str | None = None


class Plain:
    def __init__(self) -> None:
        self.content = "plain"

    def __getattr__(self, name: str) -> Any:  # dynamic attributes, as some SDK objects have
        if name == "dynamic":
            return "made"
        raise AttributeError(name)


OBJECTS = [
    Open(content="a", reasoning_content="thinking"),
    Open(content=None),
    Closed(content="c"),
    WithPrivate(content="p"),
    Dynamic(content="d", reasoning="extra"),
    Slotted("s"),
    Plain(),
    None,
    {"content": "a dict has no attributes"},
]
NAMES = [
    "content", "reasoning_content", "reasoning", "shown", "dynamic", "model_fields_set", "_secret",
]  # fmt: skip


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
@pytest.mark.parametrize("name", NAMES)
def test_optional_field_is_getattr_with_a_default(obj: Any, name: str) -> None:
    assert optional_field(obj, name) == getattr(obj, name, None)


def test_extras_a_server_sends_are_read() -> None:
    assert optional_field(Open(reasoning_content="why"), "reasoning_content") == "why"
    assert optional_field(Open(), "reasoning_content") is None


def test_each_class_is_looked_at_once_and_the_memory_is_bounded() -> None:
    from agent_contract.sources import _stream

    for i in range(_stream.MAX_CLASSES + 10):  # classes made on the fly
        cls = type(f"Made{i}", (Open,), {})
        assert optional_field(cls(reasoning=str(i)), "reasoning") == str(i)
    assert len(_stream._CLASS_NAMES) <= _stream.MAX_CLASSES


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
@pytest.mark.parametrize("first", NAMES)
@pytest.mark.parametrize("second", NAMES)
def test_several_names_read_as_anor_of_getattrs(obj: Any, first: str, second: str) -> None:
    expected = getattr(obj, first, None) or getattr(obj, second, None)
    assert optional_field(obj, first, second) == expected


def _read(read: Any, obj: Any, *names: str) -> Any:
    try:
        return read(obj, *names)
    except Exception as exc:  # the same exception type as getattr's
        return type(exc)


@pytest.mark.parametrize("extras", [Extras(), None, [], ["reasoning"], {"reasoning": "r"}])
def test_extras_of_any_kind_are_read_as_pydantic_reads_them(extras: Any) -> None:
    obj = Open(content="a")
    object.__setattr__(obj, "__pydantic_extra__", extras)
    names = ("reasoning_content", "reasoning")
    assert _read(optional_field, obj, *names) == _read(or_of_getattrs, obj, *names)


def test_a_dict_naming_private_attributes_is_read_as_pydantic_reads_it() -> None:
    obj = Open(content="a", reasoning="extra")
    obj.__dict__["__private_attributes__"] = {"reasoning": "private"}
    assert _read(optional_field, obj, "reasoning") is TypeError  # __pydantic_private__ is None
    assert _read(or_of_getattrs, obj, "reasoning") is TypeError


class Liar(type):
    """A metaclass whose classes are equal to every class and hashed as ``Open``."""

    def __hash__(cls) -> int:
        return hash(Open)

    def __eq__(cls, other: object) -> bool:
        return True


class Impostor(metaclass=Liar):
    @property
    def reasoning(self) -> str:
        return "from the property"


def test_a_class_equal_to_a_remembered_one_is_not_taken_for_it() -> None:
    assert optional_field(Open(reasoning="r"), "reasoning") == "r"  # Open remembered
    assert optional_field(Impostor(), "reasoning") == "from the property"

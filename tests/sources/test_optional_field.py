"""``optional_field`` answers as ``getattr(obj, name, None)`` does, for every kind of object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_contract.sources._stream import optional_field


class Open(BaseModel):
    """Like the SDKs' models: undeclared fields a server sends are kept as extras."""

    model_config = ConfigDict(extra="allow")
    content: str | None = None

    @property
    def shown(self) -> str:
        return f"<{self.content}>"


class Closed(BaseModel):
    content: str | None = None


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
    Slotted("s"),
    Plain(),
    None,
    {"content": "a dict has no attributes"},
]
NAMES = ["content", "reasoning_content", "reasoning", "shown", "dynamic", "model_fields_set"]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
@pytest.mark.parametrize("name", NAMES)
def test_optional_field_is_getattr_with_a_default(obj: Any, name: str) -> None:
    assert optional_field(obj, name) == getattr(obj, name, None)


def test_extras_a_server_sends_are_read() -> None:
    assert optional_field(Open(reasoning_content="why"), "reasoning_content") == "why"
    assert optional_field(Open(), "reasoning_content") is None

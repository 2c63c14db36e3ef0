"""Every public event class of the contract, and a Hypothesis strategy for each that fills every
field with hostile values: derived from the contract itself, so a new subclass or field is
fuzzed without anyone adding it here.

The classes are the descendants of ``AgentEvent`` (the eleven kinds and the subclasses the
adapters yield: ``SideCallStart``, ``CallUsage``, ``UnrunCallsEnd``, ...) and of the Agent
vocabulary's ``StreamEvent``, found with every module of ``agent_contract`` imported first and
kept only where a contract module holds them by their name (a test's own subclass is none of
them, so what is fuzzed never depends on which tests ran before). Their fields come from the
class (``dataclasses.fields``, pydantic's ``model_fields``); a field whose type holds a
contract structure (``ToolCall.function``, ``LLMCallStart.messages``, ``UnrunCallsEnd.unrun``,
``ServerToolCallsEnd.calls``) is also drawn as that structure, itself with every field hostile.
A class or a structure of no kind these know fails ``event_strategy()`` (and the coverage
test), rather than going unfuzzed.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
import sys
import typing
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

import agent_contract
from agent_contract import protocol
from agent_contract.agent.events import StreamEvent
from agent_contract.events import AgentEvent
from hostile_types import (
    BadHash,
    HostileStr,
    LyingDict,
    LyingFloat,
    LyingInt,
    LyingList,
    LyingStr,
    NoStr,
    Unreadable,
)


class BrokenError(Exception):
    """An exception whose ``__init__`` skips ``super().__init__()`` and whose ``__str__`` fails."""

    def __init__(self) -> None:
        pass

    def __str__(self) -> str:
        raise AttributeError("message")


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


SURROGATES = st.sampled_from(["\udc80", "a\ud800b", "tool\udfff", "\ud83d"])
HOSTILE_SCALARS: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    2**64,
    -(2**70),
    10**5000,
    math.nan,
    math.inf,
    -0.0,
    b"\xff\xfe",
    "",
    "x" * 100_000,
    "[" * 50_000 + "]" * 50_000,
    '{"a": ' * 5_000 + "1" + "}" * 5_000,
]
HOSTILE_OBJECTS = st.sampled_from(
    [
        lambda: NoStr(),
        lambda: BadHash(),
        lambda: ["unhashable", "id"],
        lambda: {"a": ["b"]},
        lambda: {1: "int key", None: "none key", (1, 2): "tuple key"},
        lambda: _nested(3_000),
        lambda: [0.5] * 30_000,
        lambda: [{"role": "user", "content": "m"}] * 5_000,
        lambda: [protocol.Message(role="user", content="\udc80")],
        lambda: object(),
        lambda: BrokenError(),
        lambda: iter([1, 2]),
        lambda: HostileStr("search"),
        lambda: LyingStr("t1"),
        lambda: LyingInt(3),
        lambda: LyingFloat(0.5),
        lambda: LyingDict(temperature=0.5, role="user", content="hi"),
        lambda: LyingList([{"role": "user", "content": "hi"}]),
        lambda: (LyingStr("t1"), NoStr()),
    ]
).map(lambda make: make())
HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_SCALARS),
    SURROGATES,
    HOSTILE_OBJECTS,
    st.text(max_size=20),
    st.integers(),
    st.sampled_from(["c1", "c2", "t1", "t2"]),  # ids that collide, so calls match
)
"""Any value for any field: the hostile classes of docs/hostile.md, wrong types and ``None``."""

# --- the classes, from the contract ------------------------------------------------------------


def _import_contract() -> None:
    """Import every module of the contract: a subclass exists only once its module ran."""
    for module in pkgutil.walk_packages(agent_contract.__path__, "agent_contract."):
        importlib.import_module(module.name)


def _held_by_contract(cls: type) -> bool:
    """Whether a contract module holds ``cls`` by its name (a public class of the contract,
    not a test's subclass nor a class made in a function)."""
    module = sys.modules.get(cls.__module__)
    return (
        cls.__module__.split(".")[0] == "agent_contract"
        and getattr(module, cls.__qualname__, None) is cls
    )


def descendants(base: type) -> list[type]:
    found: list[type] = []
    todo = [base]
    while todo:
        for sub in type.__subclasses__(todo.pop()):
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return sorted(
        (c for c in found if _held_by_contract(c)), key=lambda c: (c.__module__, c.__qualname__)
    )


_import_contract()
LATENT_CLASSES: list[type] = descendants(AgentEvent)
"""Every class of the Latent vocabulary the contract defines: the kinds and their subclasses."""
AGENT_CLASSES: list[type] = descendants(StreamEvent)
"""Every event class of the Agent vocabulary the contract defines."""
EVENT_CLASSES: list[type] = LATENT_CLASSES + AGENT_CLASSES

# --- the fields, from the classes --------------------------------------------------------------


def fields_of(cls: type) -> list[str]:
    """The fields of an event or structure class, from the class: a dataclass's, a pydantic
    model's. Any other kind raises: a class whose fields are not known is never fuzzed."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return list(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    raise TypeError(f"{cls.__module__}.{cls.__qualname__}: no way to know its fields")


def _structures(hint: Any) -> list[tuple[type | None, type]]:
    """The contract structures a field's type holds, each with its container (``list``,
    ``tuple`` or ``None`` for the structure itself)."""
    found: list[tuple[type | None, type]] = []
    origin = typing.get_origin(hint)
    if isinstance(hint, type) and hint.__module__.split(".")[0] == "agent_contract":
        found.append((None, hint))
    elif origin in (list, tuple):
        for arg in typing.get_args(hint):
            if isinstance(arg, type) and arg.__module__.split(".")[0] == "agent_contract":
                found.append((origin, arg))
    for arg in typing.get_args(hint) if origin not in (list, tuple) else ():
        found.extend(_structures(arg))
    return found


def _hints(cls: type) -> dict[str, Any]:
    """Every field's type, resolved as the class's modules name them."""
    return typing.get_type_hints(cls)


def _build(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` holding ``values``, no validation run: every field hostile."""
    if issubclass(cls, BaseModel):
        return cls.model_construct(**values)
    made = object.__new__(cls)
    for name, value in values.items():  # (a property's setter runs, as the class's own)
        object.__setattr__(made, name, value)
    return made


def field_strategy(cls: type, name: str, depth: int = 0) -> st.SearchStrategy[Any]:
    """What ``cls.name`` is drawn from: any hostile value, or (a field holding contract
    structures) those structures, in their container, each with every field hostile."""
    shapes: list[st.SearchStrategy[Any]] = [HOSTILE]
    hint = _hints(cls).get(name)
    for container, structure in _structures(hint) if depth < 3 else ():
        one = structure_strategy(structure, depth + 1)
        if container is None:
            shapes.append(one)
        elif container is tuple:
            shapes.append(st.lists(one, max_size=3).map(tuple))
        else:
            shapes += [st.lists(one, max_size=3), st.lists(one, max_size=3).map(LyingList)]
    if name == "type" and issubclass(cls, BaseModel):  # mostly read as its own kind
        default = cls.model_fields["type"].default
        shapes += [st.just(default), st.just(default), st.just(default).map(HostileStr)]
    if name in ("final", "is_error", "fatal", "message_is_content"):
        shapes.append(st.booleans())
    return st.one_of(shapes)


def structure_strategy(cls: type, depth: int = 0) -> st.SearchStrategy[Any]:
    """``cls`` (an event or a structure of one) with every field drawn by ``field_strategy``,
    or a value whose every read raises."""
    values = st.fixed_dictionaries({n: field_strategy(cls, n, depth) for n in fields_of(cls)})
    return st.one_of(values.map(lambda v: _build(cls, v)), st.builds(Unreadable))


def event_strategy(cls: type) -> st.SearchStrategy[Any]:
    """An instance of event class ``cls`` with every field drawn by ``field_strategy``."""
    fields = fields_of(cls)
    values = st.fixed_dictionaries({n: field_strategy(cls, n) for n in fields})
    return values.map(lambda v: _build(cls, v))


def drawn_fields(event: Any) -> dict[str, Any]:
    """The fields an event holds, read as the class declares them (for the coverage test)."""
    return {name: getattr(event, name) for name in fields_of(type(event))}


STRATEGIES: dict[type, st.SearchStrategy[Any]] = {c: event_strategy(c) for c in EVENT_CLASSES}
EVENTS: st.SearchStrategy[Any] = st.sampled_from(EVENT_CLASSES).flatmap(STRATEGIES.__getitem__)
"""Any event of either vocabulary, every field hostile."""

__all__: list[str] = [
    "AGENT_CLASSES",
    "EVENTS",
    "EVENT_CLASSES",
    "HOSTILE",
    "LATENT_CLASSES",
    "STRATEGIES",
    "BrokenError",
    "drawn_fields",
    "field_strategy",
    "fields_of",
]

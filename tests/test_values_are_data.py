"""Values are data (issue 26, point 3): what a tool returns reaches the redact hook as JSON.

A pydantic model, a dataclass, a mapping that is not a dict, a set, a deque or bytes used to
reach the hook as its ``str()``, so a key-based redactor missed the secret inside, and the
text cost what the whole value cost. Now each is copied as the JSON it stands for, within the
budget: the work done is counted here (item reads), never timed.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel

from agent_contract.agent import StructuredFinal
from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
from agent_otel import ContentCapture
from agent_otel.recording.content._fit import fit_json, plain_copy
from agent_otel.testing import InMemoryTelemetry

SECRET = "sk-live-123"


class Credentials(BaseModel):
    user: str = "ada"
    api_key: str = SECRET


class Reply(BaseModel):
    text: str = "ok"
    credentials: Credentials = Credentials()
    scores: list[float] = [0.5, 0.25]


@dataclass
class Row:
    city: str = "Zürich"
    api_key: str = SECRET
    tags: tuple[str, ...] = ("a", "b")
    nested: dict[str, Any] = field(default_factory=lambda: {"api_key": SECRET})


def redact_keys(value: Any) -> Any:
    """A key-based redactor, as a user writes one: it walks dicts and lists only."""
    if isinstance(value, dict):
        return {k: "[x]" if k == "api_key" else redact_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_keys(v) for v in value]
    return value


VALUES: list[tuple[str, Any, Any]] = [
    ("pydantic", Reply(), {"text": "ok", "credentials": {"user": "ada", "api_key": SECRET},
                           "scores": [0.5, 0.25]}),
    ("dataclass", Row(), {"city": "Zürich", "api_key": SECRET, "tags": ["a", "b"],
                          "nested": {"api_key": SECRET}}),
    ("mapping proxy", MappingProxyType({"api_key": SECRET}), {"api_key": SECRET}),
    ("ordered", OrderedDict(api_key=SECRET), {"api_key": SECRET}),
    ("deque of models", deque([Credentials()]), [{"user": "ada", "api_key": SECRET}]),
    ("frozenset", frozenset({"one"}), ["one"]),
    ("bytes", b'{"k": 1}', '{"k": 1}'),
]  # fmt: skip


@pytest.mark.parametrize(("label", "value", "expected"), VALUES, ids=[v[0] for v in VALUES])
def test_a_value_is_copied_as_the_json_it_stands_for(label: str, value: Any, expected: Any) -> None:
    assert plain_copy(value, 32 * 1024) == expected


def _strict_json(text: str) -> Any:
    """``text`` read as JSON is defined (RFC 8259), which has no NaN or Infinity: what
    Python's ``json`` would read as one raises, as a consumer's parser in another language
    does."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is no JSON")

    return json.loads(text, parse_constant=no_constant)


def test_a_number_json_has_none_for_is_copied_as_null() -> None:
    class Score(float):
        pass

    value = {"nan": math.nan, "all": [math.inf, -math.inf, 1.5, Score("nan")]}
    expected = {"nan": None, "all": [None, None, 1.5, None]}
    assert plain_copy(value, 32 * 1024) == expected
    assert _strict_json(fit_json(value, 32 * 1024)) == expected
    assert _strict_json(fit_json([math.nan] * 100, 64)) == [None] * 12  # newest items kept


async def test_content_holding_nan_or_infinity_is_recorded_as_json(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool's result or a run's answer holding NaN was written as ``NaN``, which the
    JSON parsers of the backends that show content refuse."""

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t", function=FunctionCall(name="score", arguments="{}"))
        yield ToolResult(tool_call_id="t", content={"score": math.nan, "bound": math.inf})
        yield StructuredFinal(data=[math.nan, 2.0])

    wrapper = otel_telemetry.wrapper(agent_name="v", capture_content=True)
    [_ async for _ in wrapper(agent())]
    (tool,) = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    result = str((tool.attributes or {})["gen_ai.tool.call.result"])
    assert _strict_json(result) == {"score": None, "bound": None}
    (run,) = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    assert _strict_json(str((run.attributes or {})["output.value"])) == [None, 2.0]
    _strict_json(str((run.attributes or {})["gen_ai.output.messages"]))


@pytest.mark.parametrize(("label", "value", "expected"), VALUES, ids=[v[0] for v in VALUES])
async def test_a_key_based_redactor_reaches_the_secret_inside_any_value(
    label: str, value: Any, expected: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    seen: list[Any] = []

    def redact(kind: str, plain: Any) -> Any:
        seen.append(plain)
        return redact_keys(plain)

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t", function=FunctionCall(name="lookup", arguments="{}"))
        yield ToolResult(tool_call_id="t", content=value)

    wrapper = otel_telemetry.wrapper(
        agent_name="v",
        capture_content=ContentCapture(redact=redact),
        scrub=False,  # the hook alone: the default scrubber would find these keys first
    )
    [_ async for _ in wrapper(agent())]
    assert expected in seen  # the hook saw plain JSON
    recorded = " ".join(
        str(v) for s in otel_telemetry.spans() for v in (s.attributes or {}).values()
    )
    assert SECRET not in recorded
    (tool,) = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    json.loads(str((tool.attributes or {})["gen_ai.tool.call.result"]))


class Counted(Sequence[float]):
    """A huge sequence that counts the items read from it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.reads = 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise AssertionError("copied whole")
        self.reads += 1
        return 0.123456789

    def __iter__(self) -> Iterator[float]:
        for index in range(self.size):
            yield self[index]

    def __reversed__(self) -> Iterator[float]:
        for index in range(self.size - 1, -1, -1):
            yield self[index]


@dataclass
class Embedding:
    vector: Any


class Counting(set[int]):
    """A huge set that counts the items read from it."""

    reads = 0

    def __iter__(self) -> Iterator[int]:
        for item in super().__iter__():
            type(self).reads += 1
            yield item


@pytest.mark.parametrize("budget", [256, 4096])
def test_copy_work_is_bounded_by_the_budget_whatever_the_value(budget: int) -> None:
    inside_dataclass = Counted(1_000_000)
    copied = plain_copy(Embedding(inside_dataclass), budget)
    assert inside_dataclass.reads <= budget  # each float costs more than a byte
    assert len(json.dumps(copied, separators=(",", ":"))) <= budget
    in_deque = Counted(1_000_000)
    plain_copy(deque([Embedding(in_deque)]), budget)
    assert in_deque.reads <= budget
    big_set = Counting(range(200_000))
    plain_copy(big_set, budget)
    assert Counting.reads <= budget
    blob = b"x" * 10_000_000
    assert len(plain_copy(blob, budget)) <= budget + 64

"""The one rule every adapter writes a tool call's arguments by (``agent_contract.sources.
_arguments``, docs/hostile.md): valid JSON always, never raising; what JSON holds written as
``json.dumps`` writes it, unchanged; the rest repaired, and the repair said.

Each adapter's own run through its framework is in tests/sources (``_odd_arguments``); here
are the values no framework's test model hands over on its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_contract.events import Error, ToolCall
from agent_contract.sources._arguments import arguments_json, tool_call
from hostile_types import LyingDict, LyingFloat, LyingInt, LyingList, LyingStr, NoStr

MARK = "...[truncated]"


def _strict(text: str) -> Any:
    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "value",
    [
        {"city": "Paris", "days": [1, 2.5], "ok": True, "note": None},
        {2: "two", False: "no", None: "none"},  # keys JSON writes as text itself
        [],
        {},
    ],
)
def test_what_json_holds_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert arguments_json(value) == (json.dumps(value), False)


def test_text_is_the_call_s_arguments_as_they_are_and_none_is_no_arguments() -> None:
    assert arguments_json('{"q": NaN, cut') == ('{"q": NaN, cut', False)  # the model's own
    assert arguments_json(LyingStr("{}")) == ("{}", False)  # the str it is, none of its code run
    assert arguments_json(None) == ("{}", False)


def _cycle() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def _deep(levels: int) -> list[Any]:
    value: list[Any] = [{1}]
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"score": float("nan"), "top": float("-inf")}, '{"score": null, "top": null}'),
        ({"on": {1}}, '{"on": "{1}"}'),  # its str()
        ({"raw": b"\x00"}, '{"raw": "b\'\\\\x00\'"}'),
        ({"who": NoStr()}, '{"who": "<unprintable NoStr>"}'),
        ({(1, 2): "pair", NoStr(): 1, 3: "x"},
         '{"(1, 2)": "pair", "<unprintable NoStr>": 1, "3": "x"}'),
        ({"loop": _cycle()}, f'{{"loop": [1, "{MARK}"]}}'),
        ({"n": 10**5000, "m": {10**5000: 1}}, f'{{"n": "{MARK}", "m": {{"{MARK}": 1}}}}'),
        # the subclasses as the dict, list and numbers they are (their own code never runs)
        (LyingDict({"s": {2}, "n": LyingInt(3), "f": LyingFloat(float("inf"))}),
         '{"s": "{2}", "n": 3, "f": null}'),
        (LyingList([{4}]), '["{4}"]'),
    ],
)  # fmt: skip
def test_what_json_has_no_form_for_is_repaired_by_the_rule(value: Any, text: str) -> None:
    assert arguments_json(value) == (text, True)


def test_nesting_json_cannot_write_ends_in_the_mark_at_depth_64() -> None:
    """Past the encoder's recursion: 64 lists, then the mark in place of the rest."""
    text, repaired = arguments_json(_deep(5000))
    assert repaired
    assert text == "[" * 64 + f'"{MARK}"' + "]" * 64


def test_a_repaired_call_is_told_by_an_error_after_it_a_clean_one_is_not() -> None:
    clean = tool_call("c1", "book", {"on": "Monday"})
    assert len(clean) == 1 and isinstance(clean[0], ToolCall)
    assert (clean[0].id, clean[0].function.name, clean[0].function.arguments) == (
        "c1",
        "book",
        '{"on": "Monday"}',
    )
    call, told = tool_call("c2", "book", {"on": {1}})
    assert isinstance(call, ToolCall) and call.function.arguments == '{"on": "{1}"}'
    assert isinstance(told, Error)
    assert (told.error_type, told.fatal) == ("unencodable_arguments", False)


_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(max_size=4),
    st.sets(st.integers(), max_size=3),
    st.dates(),
    st.builds(NoStr),
    st.builds(LyingStr, st.text(max_size=4)),
)
_KEYS = st.one_of(st.text(max_size=4), st.integers(), st.floats(), st.tuples(st.integers()))


@given(
    st.recursive(
        _LEAVES,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.tuples(inner),
            st.dictionaries(_KEYS, inner, max_size=3),
        ),
        max_leaves=12,
    )
)
def test_any_value_gives_strict_json_and_never_raises(value: Any) -> None:
    arguments = {"v": value}  # (text at the top is the model's own, passed as it is)
    text, repaired = arguments_json(arguments)
    read = _strict(text)
    if not repaired:
        assert read == _strict(json.dumps(arguments, allow_nan=False))

"""Every write of a run passes one check (``checked``): the same result, and the same counted
repairs and scrub finds, as scrubbing each value and then repairing the mapping, whatever the
values and whatever the scrub has already seen."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_otel.recording._encodable import checked, clean_attributes
from agent_otel.scrubbing import Scrubber
from agent_otel.scrubbing._scrubber import DEFAULT, Scrub

SECRET = "sk-proj-" + "a1B2c3D4e5" * 4
_texts = st.one_of(
    st.sampled_from(["chat", "openai", "m", "stop", "", "key=" + SECRET, SECRET, "x" * 300]),
    st.text(max_size=12),  # surrogates and non-ASCII included
    st.text(alphabet="ab:=-_ ", max_size=30),
)
_ascii = st.one_of(
    st.sampled_from(["chat", "openai", "m", "stop", "key=" + SECRET, SECRET, "x" * 300]),
    st.text(alphabet="abzk:=-_ ", max_size=30),
)
_plain = st.dictionaries(  # the common case, with a secret or a new string among its values
    st.sampled_from(["gen_ai.request.model", "a", "b", "c"]),
    st.one_of(
        _ascii,
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=False),
        st.booleans(),
        st.lists(_ascii, max_size=2),
    ),
    max_size=5,
)
_values = st.one_of(
    _texts,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(_texts, max_size=3),
    st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=2),
    st.none(),
)
_attributes = st.dictionaries(
    st.one_of(st.sampled_from(["gen_ai.request.model", "a", "b", "c"]), st.text(max_size=4)),
    _values,
    max_size=6,
)


def _reference(attributes: dict[str, Any], scrub: Scrub | None, count: Any) -> Any:
    if scrub is not None:
        attributes = scrub.attributes(attributes)
    return clean_attributes(attributes, count)


def _same(a: Any, b: Any) -> bool:
    return a == b and list(a or ()) == list(b or ())  # same keys, same order


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(_plain, _attributes),
    st.lists(_ascii, max_size=4),
    st.sampled_from(["default", "callback", "off"]),
)
@example({"a": SECRET}, [], "default")
def test_checked_matches_scrub_then_repair(
    attributes: dict[str, Any], seen: list[str], mode: str
) -> None:
    scrubber: Scrubber | None = {
        "default": DEFAULT,
        "off": None,
        "callback": Scrubber(callback=lambda text: text.replace("zz", "[cut]")),
    }[mode]
    told: dict[str, list[str]] = {"finds": [], "reference finds": []}
    scrub = Scrub(scrubber, told["finds"].append) if scrubber else None
    reference = Scrub(scrubber, told["reference finds"].append) if scrubber else None
    for text in seen:  # what other writes of the run taught the scrub
        if scrub is not None and reference is not None:
            scrub.text(text)
            reference.text(text)
    results = []
    for _ in range(2):  # the second time, the scrub has seen every string of the mapping
        for kinds in told.values():
            kinds.clear()
        repairs: list[str] = []
        reference_repairs: list[str] = []
        out = checked(attributes, repairs.append, scrub)
        expected = _reference(attributes, reference, reference_repairs.append)
        assert _same(out, expected)
        assert sorted(repairs) == sorted(reference_repairs)
        assert sorted(told["finds"]) == sorted(told["reference finds"])
        results.append(out)
    assert _same(results[0], results[1])


def test_a_clean_mapping_comes_back_as_it_is() -> None:
    scrub = Scrub(DEFAULT)
    attributes = {"gen_ai.request.model": "m", "n": 3, "t": 0.5, "b": True, "f": ["stop"]}
    assert checked(attributes, scrub=scrub) is not None
    assert checked(attributes, scrub=scrub) is attributes  # seen once: nothing to redo


def test_a_secret_among_new_strings_is_scrubbed_and_counted_once() -> None:
    finds: Counter[str] = Counter()
    scrub = Scrub(DEFAULT, lambda name: finds.update([name]))
    out = checked({"id": "call-1", "key": SECRET, "n": 2**64}, scrub=scrub)
    assert out["id"] == "call-1"
    assert SECRET not in out["key"] and out["key"].startswith("[REDACTED:")
    assert "n" not in out  # out of int64: dropped
    assert sum(finds.values()) == 1

"""Hostile JSON a compatible server (or a model provider plugin) may send where a stream's
fields go, and the places inside an event it may go: shared by the SDK sources' and the
framework adapters' fuzz tests."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import strategies as st

_VALUES: list[Any] = [None, True, False, 0, -1, 2**63, 2**64, 10**30, 1.5, -0.5, "", "12"]
_VALUES += ["x" * 70_000, "\udc80", "a\ud800b", [], [None], {}, {"a": [1]}, [1, "b"]]
HOSTILE_JSON = st.sampled_from(_VALUES)
_FIXED = frozenset({"type", "object"})  # the discriminators the SDKs parse by


def paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside an event a hostile value may go (but the discriminators)."""
    found = [path] if len(path) > 1 else []
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in _FIXED:
                found += paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*path, index))
    return found


def replace(value: Any, path: tuple[Any, ...], new: Any) -> None:
    """Put ``new`` at ``path`` inside ``value``."""
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def spoil(data: st.DataObject, events: Any) -> None:
    """Put hostile JSON at one to three places inside ``events``, drawn from ``data`` (a place
    whose parent an earlier draw replaced is left as it is). Each value placed is a copy: a
    later draw placing a value inside it must not change the drawn constant itself (the same
    ``{}`` placed twice became a dict holding itself, which no JSON can send)."""
    for path in data.draw(st.lists(st.sampled_from(paths(events)), min_size=1, max_size=3)):
        new = copy.deepcopy(data.draw(HOSTILE_JSON))  # a list or dict of its own: never shared
        with contextlib.suppress(KeyError, IndexError, TypeError):
            replace(events, path, new)


def responses_events() -> list[dict[str, Any]]:
    """A Responses stream's events: text, a function call, the completed response."""
    response = {"id": "r1", "object": "response", "created_at": 0, "model": "m",
                "status": "in_progress", "output": [], "usage": None}  # fmt: skip
    item = {"id": "fc1", "type": "function_call", "call_id": "call_1", "name": "f",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
             "input_tokens_details": {"cached_tokens": 1},
             "output_tokens_details": {"reasoning_tokens": 1}}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0,
         "content_index": 0, "delta": "Hello"},
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {"type": "response.function_call_arguments.delta", "item_id": "fc1", "output_index": 1,
         "delta": '{"a": 1}'},
        {"type": "response.output_item.done", "output_index": 1,
         "item": {**item, "arguments": '{"a": 1}', "status": "completed"}},
        {"type": "response.completed",
         "response": {**response, "status": "completed", "usage": usage}},
    ]  # fmt: skip
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]

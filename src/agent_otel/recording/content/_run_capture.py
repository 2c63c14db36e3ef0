"""One run's content accounts: the history already recorded, and the bytes left.

:class:`RunCapture` is the :class:`~._capture.ContentCapture` a run records with when its
capture asks for ``history="new"`` or a ``max_run_bytes`` budget (``ContentCapture.for_run``);
every span owner of the run already holds it through the run's settings, so nothing else
changes hands.

History: a call's input is recorded from where the previous call's ended, when it starts with
what the previous call saw. Checking that costs two comparisons (the previous call's first and
last messages against the same positions now), so a long history costs its new messages only.
When the history was rewritten (summarised, trimmed, its system prompt edited, another agent's
after a handoff), the call's whole input is recorded. An edit between the first and the last
message that keeps both is not seen: checking every message on every call would cost the
square of the history again.

Budget: each value is encoded within what the run has left (older messages dropped and
strings cut as the per-value budget does); once nothing of a value fits, it is replaced by a
marker of constant size whose part (or object) carries ``stripped_reason`` (proposed for the
conventions' message parts in semantic-conventions-genai PR #144).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import reads_values, report
from agent_otel.recording._encodable import Count
from agent_otel.scrubbing import Scrub

from ._capture import ContentCapture, ContentKind
from ._fit import dumps, size

__all__ = ["RunCapture", "stripped"]
reads_values(__name__, frozenset({"new_messages", "_same"}))  # the history's ends

_MESSAGE_KINDS = frozenset({"input_messages", "output_messages"})
_EMPTY = frozenset({"[]", "{}", '""'})
_SMALLEST = 16  # bytes left below which no value can show anything


def stripped(kind: ContentKind, value: Any) -> str:
    """The marker recorded instead of ``value`` when the run's budget is spent.

    Messages keep the role (and finish reason) of the last one; their one part is an empty
    text part with ``stripped_reason``, valid against the conventions' message schemas.
    """
    part = {"type": "text", "content": "", A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED}
    if kind == "system_instructions":
        return dumps([part])
    if kind not in _MESSAGE_KINDS:
        return dumps({A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED})
    last = value[-1] if isinstance(value, list) and value else None
    role = last.get("role") if isinstance(last, dict) else None
    message: dict[str, Any] = {
        "role": role if isinstance(role, str) else "user",
        "parts": [part],
    }
    if kind == "output_messages":
        reason = last.get("finish_reason") if isinstance(last, dict) else None
        message["finish_reason"] = reason if isinstance(reason, str) else "stop"
    return dumps([message])


def _is_marker(kind: ContentKind | None, encoded: str) -> bool:
    try:
        return kind is not None and encoded == stripped(kind, json.loads(encoded))
    except ValueError:
        return False


def _kept(message: Any) -> Any:
    """A message as this call saw it, for the next call to compare: a plain dict (the
    OpenAI/LiteLLM shape) or the contract's ``Message`` copied one level, so that an edit in
    place (``history[0]["content"] = new_prompt``) shows as a rewrite; another object as it is
    (an edit in place of one is not seen). Copying never runs the agent's code."""
    kind = type(message)
    if kind is dict:
        return dict(message)
    if kind.__name__ == "Message" and kind.__module__ == "agent_contract.events":
        return copy.copy(message)  # a slotted dataclass of ours
    return message


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # a hostile __eq__: taken as a rewritten history
        return False


class _Accounts:
    __slots__ = ("first", "last", "left", "seen")

    def __init__(self, left: int | None) -> None:
        self.left = left  # bytes the run may still record (None: no run budget)
        self.seen = 0  # how many messages the previous call's input held
        self.first: Any = None  # the first of them (a system prompt, often)
        self.last: Any = None  # and the last


class RunCapture(ContentCapture):
    """A run's :class:`ContentCapture`: the settings, plus the run's accounts (see the module
    docstring). One per run; calls of a run share it."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        # The settings stay frozen; the accounts are the one mutable thing, set once.
        object.__setattr__(self, "accounts", _Accounts(self.max_run_bytes))

    accounts: _Accounts

    def new_messages(self, messages: Any, count: Count | None = None) -> tuple[Any, int]:
        if self.history != "new" or not isinstance(messages, Sequence) or not messages:
            return messages, 0
        if isinstance(messages, (str, bytes)):
            return messages, 0
        accounts = self.accounts
        try:
            seen, total = accounts.seen, len(messages)
            carried = (
                0 < seen <= total
                and _same(messages[seen - 1], accounts.last)
                and _same(messages[0], accounts.first)
            )
            accounts.seen = total
            accounts.first, accounts.last = _kept(messages[0]), _kept(messages[total - 1])
        except Exception:  # a sequence that raises on len() or indexing: recorded whole
            report("content history", count)
            return messages, 0
        if not carried:
            return messages, 0
        return messages[seen:], seen

    def copied(self, kind: ContentKind | None, encoded: str) -> str | None:
        """A copy on a second span costs the run's budget as any value: a value the run
        records twice counts twice. One that does not fit becomes the marker (a preview,
        ``kind`` None: left out); a marker costs nothing, as everywhere."""
        accounts = self.accounts
        left = accounts.left
        if left is None or (A.STRIPPED_REASON in encoded and _is_marker(kind, encoded)):
            return encoded
        spent = size(encoded)
        if spent <= left:
            accounts.left = left - spent
            return encoded
        if kind is None:
            return None
        try:
            value = json.loads(encoded)
        except ValueError:
            value = None
        return stripped(kind, value)

    def encode_within(
        self,
        kind: ContentKind,
        value: Any,
        scrub: Scrub | None,
        budget: int,
        count: Count | None = None,
    ) -> str | None:
        accounts = self.accounts
        left = accounts.left
        if left is None:
            return super().encode_within(kind, value, scrub, budget, count)
        if left < _SMALLEST:
            return stripped(kind, value)
        text = super().encode_within(kind, value, scrub, min(budget, left), count)
        if text is None:
            return None
        if left < budget and text in _EMPTY:  # nothing of it fitted what the run had left
            return stripped(kind, value)
        accounts.left = left - size(text)
        return text

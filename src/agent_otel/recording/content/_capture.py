"""Opt-in capture of prompts, completions and tool payloads, within byte budgets.

Off unless ``capture_content=True`` (or a :class:`ContentCapture`) is passed, or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (the official GenAI instrumentations'
variable) is, case-insensitively, one of the values they read: ``SPAN_ONLY`` or ``true``
(content on spans), ``EVENT_ONLY`` (on ``gen_ai.client.inference.operation.details`` log
events only), ``SPAN_AND_EVENT`` (both); ``NO_CONTENT``/``false``/unset is off, and any other
value is off with a warning. Values are JSON in the semantic
conventions' message-part shape; a value over budget is cut so that the JSON stays valid
(see :mod:`._fit`: the cost is bounded by the budget, not by the value's size).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from agent_contract.sources._arguments import TRUNCATION_MARK
from agent_otel._guard import report, warn_once
from agent_otel._plain import a_kind, int_of, shown, text_of
from agent_otel.recording._encodable import MAX_TEXT_BYTES, Count
from agent_otel.recording._hints import ENV_CAPTURE, keyworded_but
from agent_otel.scrubbing import MARGIN, Scrub

from ._fit import fit_json, fit_plain, plain_copy

__all__ = [
    "ENV_CAPTURE",
    "TRUNCATION_MARK",
    "ContentCapture",
    "TextBuffer",
    "fit_json",
    "capture_from",
]

ContentKind = Literal[
    "input_messages",
    "output_messages",
    "system_instructions",
    "tool_arguments",
    "tool_result",
    "tool_definitions",
]
History = Literal["every_call", "new"]
Redactor = Callable[[ContentKind, Any], Any]
"""``redact(kind, value) -> value``: return the (possibly edited) JSON-ready value, or
``None`` to drop the attribute. Called before serialisation, only when capture is on, with a
plain-JSON copy (dicts, lists, strings, numbers) it may edit in place: never the agent's own
objects. Lists in the copy hold only the newest items the budget can show."""

# value -> (on spans, as events); None is off. util-genai reads the mode names,
# opentelemetry-instrumentation-openai-v2's default path reads true/false.
_MODES: dict[str, tuple[bool, bool] | None] = {
    "no_content": None,
    "false": None,
    "span_only": (True, False),
    "true": (True, False),
    "event_only": (False, True),
    "span_and_event": (True, True),
}


@keyworded_but("new_messages", "copied", "encode", "encode_within")  # per event
@dataclass(frozen=True, slots=True)
class ContentCapture:
    """How content is captured once it is on.

    ``max_bytes`` bounds each attribute's UTF-8 JSON text (and the text buffered for it while
    a call streams; at most 256 KiB, the bound on every string a run records); ``redact``
    sees every value before it is recorded, after the default scrubber (option ``scrub``)
    replaced the credentials it recognises. ``spans`` puts content on the spans; ``events``
    also emits each chat call as a ``gen_ai.client.inference.operation.details`` log event
    (through the OTel Logs API).

    ``history="new"`` records on each chat span only the messages new since the previous
    call of the run (the full input once, on the first call and the agent span), with
    ``agent_otel.input.messages.omitted`` saying how many earlier messages a reader takes
    from the previous call (docs/tracing.md#long-conversations). ``max_run_bytes`` bounds
    the content one run records in all; past it, a value is replaced by a small marker
    carrying ``stripped_reason`` (None: no run budget).
    """

    max_bytes: int = 32 * 1024
    redact: Redactor | None = None
    spans: bool = True
    events: bool = False
    history: History = "every_call"
    max_run_bytes: int | None = None

    def __post_init__(self) -> None:
        """Invalid settings raise here, at construction, not as content silently missing."""
        max_bytes, run_bytes = int_of(self.max_bytes), int_of(self.max_run_bytes)
        if max_bytes is None:
            raise TypeError(
                f"ContentCapture(max_bytes=...) must be an int number of bytes, "
                f"not {shown(self.max_bytes)}"
            )
        if max_bytes < 1:
            raise ValueError(f"ContentCapture(max_bytes=...) must be >= 1, not {max_bytes}")
        if self.redact is not None and not callable(self.redact):
            raise TypeError(
                f"ContentCapture(redact=...) must be a callable redact(kind, value), "
                f"not {a_kind(self.redact)}"
            )
        for name in ("spans", "events"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"ContentCapture({name}=...) must be True or False")
        if text_of(self.history) not in get_args(History):
            raise ValueError(
                "ContentCapture(history=...) must be 'every_call' or 'new', "
                f"not {shown(self.history)}"
            )
        object.__setattr__(self, "history", text_of(self.history))  # a str enum: the str
        if self.max_run_bytes is not None and (run_bytes is None or run_bytes < 0):
            raise ValueError(
                "ContentCapture(max_run_bytes=...) must be None or an int >= 0, "
                f"not {shown(self.max_run_bytes)}"
            )
        object.__setattr__(self, "max_bytes", max_bytes)  # an IntEnum: the int it is
        object.__setattr__(self, "max_run_bytes", run_bytes)

    def for_run(self) -> ContentCapture:
        """What one run captures with: this, or a copy that keeps the run's own accounts
        (history seen, bytes left) when ``history`` or ``max_run_bytes`` asks for them."""
        if self.history == "every_call" and self.max_run_bytes is None:
            return self
        from ._run_capture import RunCapture  # it subclasses this class

        return RunCapture(
            max_bytes=self.max_bytes, redact=self.redact, spans=self.spans,
            events=self.events, history=self.history, max_run_bytes=self.max_run_bytes,
        )  # fmt: skip

    def new_messages(self, messages: Any, count: Count | None = None) -> tuple[Any, int]:
        """The part of a call's input to record, and how many earlier messages it omits."""
        return messages, 0

    def copied(self, kind: ContentKind | None, encoded: str) -> str | None:
        """A second copy of a value already encoded (the agent span's copy of its run's input
        or answer, or that copy's plain-text preview, ``kind`` None), as the run records it:
        here, as it is; within a run budget, charged to it (``RunCapture``)."""
        return encoded

    def encode(
        self, kind: ContentKind, value: Any, scrub: Scrub | None = None, count: Count | None = None
    ) -> str | None:
        """The attribute value for ``value``: scrubbed, redacted, JSON, within budget.

        ``scrub`` (the run's, :mod:`agent_otel.scrubbing`) runs on the bounded copy before
        the ``redact`` hook and before strings are cut to the budget, so a cut cannot leave a
        secret's prefix it no longer recognises. ``None`` (no attribute) when the redactor
        returns ``None`` or when the redactor or serialisation raises: the error is reported
        once and nothing unredacted is recorded (a value whose own code raises as it is read:
        counted through ``count`` as the agent's, ``agent_otel._guard.report``).
        """
        return self.encode_within(kind, value, scrub, min(self.max_bytes, MAX_TEXT_BYTES), count)

    def encode_within(
        self,
        kind: ContentKind,
        value: Any,
        scrub: Scrub | None,
        budget: int,
        count: Count | None = None,
    ) -> str | None:
        """:meth:`encode` within ``budget`` bytes (at most ``max_bytes`` and 256 KiB)."""
        try:
            plain = plain_copy(value, budget, scrub)  # bounded by the budget
            if scrub is not None:
                plain = scrub.value(plain)
            if self.redact is None:
                text = fit_plain(plain, budget)
                if scrub is not None:
                    scrub.trust(text)
                return text
            redacted = self.redact(kind, plain)  # a copy: the hook may edit it in place
            return None if redacted is None else fit_json(redacted, budget, scrub)
        except Exception:
            report("content capture", count)
            return None


def capture_from(
    option: bool | str | ContentCapture | None, caller: str = "otel_wrapper"
) -> ContentCapture | None:
    """The capture settings in force: the explicit option wins, else the environment.

    A string option means what the same value of ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_
    CONTENT`` means (``"false"`` is off, never truthy). One that is no mode (``"yes"``, a typo)
    is a ``ValueError`` at the call that gave it, naming the modes: a line of code is fixed
    where it is written (the variable's unknown value keeps content off, told once, as the SDK
    reads its variables). Any other type is a programming error (``TypeError``).
    """
    if isinstance(option, ContentCapture):
        return option
    if isinstance(option, str):
        text = str.__str__(option)  # a subclass's strip never runs
        if text.strip().lower() not in _MODES and text.strip():
            raise ValueError(
                f"{caller}(capture_content=...) takes True, False, a ContentCapture or a mode "
                f"({', '.join(repr(m.upper()) for m in _MODES)}, any case), not {shown(text)}"
            )
        return _mode("capture_content", text)
    if option is not None:
        if not isinstance(option, bool):
            raise TypeError(
                f"{caller}(capture_content=...) takes True, False, a mode such as 'SPAN_ONLY', "
                f"or a ContentCapture, not {a_kind(option)}"
            )
        return ContentCapture() if option else None
    return _mode(ENV_CAPTURE, os.environ.get(ENV_CAPTURE, ""))


def _mode(setting: str, value: str) -> ContentCapture | None:
    raw = value.strip().lower()
    if not raw:
        return None
    if raw not in _MODES:
        warn_once(
            setting, raw,
            "agent-otel: %s=%r is not a capture mode; content stays off (use one of: %s)",
            setting, value, ", ".join(m.upper() for m in _MODES),
        )  # fmt: skip
        return None
    mode = _MODES[raw]
    return None if mode is None else ContentCapture(spans=mode[0], events=mode[1])


class TextBuffer:
    """Deltas of one streamed response, kept only up to a byte budget (:func:`buffer_for`:
    the content budget and the scrubber's margin)."""

    __slots__ = ("_budget", "_parts", "truncated")

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._parts: list[str] = []
        self.truncated = False

    def add(self, text: str) -> None:
        if self._budget <= 0:
            self.truncated = True
            return
        if type(text) is not str:  # a subclass as the str it is: none of its methods runs
            text = str.__str__(text)
        # isascii is O(1); a lone surrogate (made encodable when written) counts its 3 bytes
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if size > self._budget:  # keep the whole characters that fit, then nothing more
            cut = text.encode("utf-8", "surrogatepass")[: self._budget]
            self._parts.append(cut.decode("utf-8", "ignore"))
            self._budget = 0
            self.truncated = True
            return
        self._budget -= size
        parts = self._parts
        parts.append(text)
        if len(parts) >= 64:  # fold: one string costs less heap than many small ones
            self._parts = ["".join(parts)]

    def text(self) -> str:
        joined = "".join(self._parts)
        return joined + TRUNCATION_MARK if self.truncated else joined


def buffer_for(capture: ContentCapture) -> TextBuffer:
    """A buffer for text captured under ``capture``: ``max_bytes`` and ``MARGIN`` more, since
    the text is cut to its budget only after it is scrubbed, so that a secret the buffer's end
    would split is seen whole (:class:`~._fit.Copy`)."""
    return TextBuffer(capture.max_bytes + MARGIN)

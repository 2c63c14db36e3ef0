"""The embedded default exporter: each finished trace printed as a tree in the terminal.

``ConsoleTreeExporter`` buffers spans by trace id and prints a trace once its local root
ends (rendered by ``render_tree``); a token and cost summary per model follows at shutdown.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, TextIO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agent_otel import _attributes as A
from agent_otel._fork import in_forked_child
from agent_otel._guard import logger as _log
from agent_otel.exporting._render import format_duration, printable, render_tree
from agent_otel.exporting._summary import (
    ModelUsage,
    cost_of,
    render_token_summary,
    usage_of,
)
from agent_otel.scrubbing._scrubber import Scrubber, resolve_scrubber

if TYPE_CHECKING:
    from agent_otel.exporting._live import LiveRuns

__all__ = [
    "ConsoleTreeExporter",
    "ModelUsage",
    "format_duration",
    "render_token_summary",
    "render_tree",
]


class ConsoleTreeExporter(SpanExporter):
    """Print each finished trace as a tree once its local root span ends; tokens at shutdown.

    Use it with a ``SimpleSpanProcessor``: it only buffers, rendering happens when a root
    ends. A local root is a span with no parent or a remote parent. At most
    ``max_buffered_spans`` spans wait for their root; past that the oldest traces are
    dropped (counted in the summary), so a trace that never finishes cannot grow memory.
    ``stream`` defaults to ``sys.stderr`` (looked up at write time); ``color`` defaults to the
    stream's ``isatty()`` unless ``NO_COLOR`` is set; ``width`` to the terminal's width.
    Never raises into the traced code: write errors are logged once and swallowed.

    Every string of a span or note it prints (names, error types, status descriptions, model
    names, evaluations, also a note printed after its trace) is scrubbed by ``scrub`` first:
    ``True`` the default scrubber, a :class:`~agent_otel.Scrubber`, ``False`` none; not given,
    ``configure(scrub=...)``'s: the terminal (a container's log) is an export too.

    Notes (evaluations, :meth:`add_note`) show under the span they name: in the tree when its
    trace prints, or, for one of the last ``window`` traces printed, at once below its name.
    It is also the ``agent_otel_console`` traces exporter of ``opentelemetry-instrument``.

    ``live`` (set by ``configure()`` on a terminal): open runs update in place above it, and
    what this prints goes above that area. Pending spans (option ``pending_spans``) are
    snapshots of spans this view shows when they end, so it leaves them out.
    """

    live: LiveRuns | None = None

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        color: bool | None = None,
        width: int | None = None,
        max_buffered_spans: int = 10_000,
        window: int = 256,
        scrub: bool | Scrubber | None = None,
    ) -> None:
        self._stream = stream
        self._scrubber = resolve_scrubber(scrub)
        self._color = color
        self._width = width
        self._max_buffered = max(1, max_buffered_spans)
        self._shutdown = False
        self._window = max(0, window)
        self._start_empty()
        in_forked_child(self._start_empty)

    def _start_empty(self) -> None:
        """Nothing pending, nothing totalled: at construction, and in a forked child, where
        the pending trees and token totals are the parent's (printed again at the child's
        exit, the parent's runs showed twice and its tokens were summed twice)."""
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._buffered = 0
        self._dropped = 0
        self._usage: dict[str, ModelUsage] = {}
        self._warned = False
        self._printed: OrderedDict[int, dict[int, str]] = OrderedDict()  # trace -> span names
        self._notes: OrderedDict[int, dict[int, list[str]]] = OrderedDict()  # not printed yet

    @property
    def buffered_spans(self) -> int:
        """Spans waiting for their trace's root span to end."""
        return self._buffered

    def token_usage(self) -> dict[str, ModelUsage]:
        """A copy of the token totals per model seen so far."""
        with self._lock:
            return {
                m: ModelUsage(u.calls, u.input_tokens, u.output_tokens, u.cost, u.currency)
                for m, u in self._usage.items()
            }

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ready: list[list[ReadableSpan]] = []
        ready_notes: list[tuple[list[ReadableSpan], dict[int, list[str]]]] = []
        with self._lock:
            if self._shutdown:
                return SpanExportResult.FAILURE
            for span in spans:
                if span.context is None or (span.attributes or {}).get(A.PENDING):
                    continue
                self._count_usage(span)
                group = self._traces.setdefault(span.context.trace_id, [])
                group.append(span)
                self._buffered += 1
                if span.parent is None or span.parent.is_remote:
                    self._buffered -= len(group)
                    ready.append(self._traces.pop(span.context.trace_id))
                    self._remember(ready[-1])
            for group in ready:
                trace_id = group[0].context.trace_id if group[0].context else 0
                ready_notes.append((group, self._notes.pop(trace_id, {})))
            while self._buffered > self._max_buffered and self._traces:
                _, oldest = self._traces.popitem(last=False)
                self._buffered -= len(oldest)
                self._dropped += len(oldest)
        for group, notes in ready_notes:
            self._write(partial(_tree, group, None, notes, self._scrubber))
        return SpanExportResult.SUCCESS

    def add_note(self, trace_id: int, span_id: int, text: str) -> None:
        """Show ``text`` under span ``span_id``: with its trace, or now if that was printed."""
        with self._lock:
            if self._shutdown:
                return
            names = self._printed.get(trace_id)
            if names is None or span_id not in names:
                notes = self._notes.setdefault(trace_id, {})
                notes.setdefault(span_id, []).append(text)
                while len(self._notes) > max(self._window, 1):  # bounded, oldest first
                    self._notes.popitem(last=False)
                return
            name = names[span_id]
        self._write(partial(_late_note, trace_id, name, text, self._scrubber))

    def _remember(self, group: list[ReadableSpan]) -> None:
        if self._window == 0:
            return
        trace_id = group[0].context.trace_id if group[0].context else 0
        self._printed[trace_id] = {s.context.span_id: s.name for s in group if s.context}
        while len(self._printed) > self._window:
            self._printed.popitem(last=False)

    def shutdown(self) -> None:
        """Print traces whose root never ended, then the token summary. Idempotent."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            leftovers = [(g, self._notes.pop(t, {})) for t, g in self._traces.items()]
            orphans = [(t, notes) for t, notes in self._notes.items() if notes]
            self._notes.clear()
            self._traces.clear()
            self._buffered = 0
            usage = dict(self._usage)
            dropped = self._dropped
        note = "(root span not ended)"
        for group, notes in leftovers:
            self._write(partial(_tree, group, note, notes, self._scrubber))
        for trace_id, notes in orphans:  # evaluations of runs this view never showed
            for text in (t for texts in notes.values() for t in texts):
                self._write(
                    partial(_late_note, trace_id, "(run not in this view)", text, self._scrubber)
                )
        if usage:
            scrubber = self._scrubber
            self._write(
                lambda color, _w: render_token_summary(usage, color=color, scrubber=scrubber)
            )
        if dropped:
            self._write(lambda _c, _w: f"agent-otel: {dropped} spans of unfinished traces dropped")

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def note(self, line: str) -> None:
        """Print one line of the shutdown summary (e.g. the spans an exporter lost)."""
        self._write(lambda _c, _w: line)

    def _count_usage(self, span: ReadableSpan) -> None:
        found = usage_of(span)
        if found is None:
            return
        model, inp, out = found
        entry = self._usage.setdefault(model, ModelUsage())
        entry.calls += 1
        entry.input_tokens += inp
        entry.output_tokens += out
        cost = cost_of(span)
        if cost is not None:
            entry.add_cost(*cost)

    def _write(self, render: Callable[[bool, int], str]) -> None:
        try:
            stream = self._stream if self._stream is not None else sys.stderr
            tty = _isatty(stream)
            color = self._color if self._color is not None else tty and "NO_COLOR" not in os.environ
            width = self._width or (shutil.get_terminal_size((100, 24)).columns if tty else 100)
            text = render(color, width)
            live = self.live
            if live is not None and live.print_above(text):
                return
            stream.write(text + "\n")
            stream.flush()
        except Exception:  # never hurt the agent: a closed stream at exit, a bad attribute
            if not self._warned:
                self._warned = True
                _log.warning("agent-otel: the terminal trace view failed to print", exc_info=True)


def _tree(
    spans: list[ReadableSpan],
    title: str | None,
    notes: dict[int, list[str]] | None,
    scrubber: Scrubber | None,
    color: bool,
    width: int,
) -> str:
    return render_tree(spans, color=color, width=width, title=title, notes=notes, scrubber=scrubber)


def _late_note(
    trace_id: int, name: str, text: str, scrubber: Scrubber | None, color: bool, width: int
) -> str:
    """A note for a trace already printed: its id, the span's name, the note below it, the
    name and the note scrubbed as the tree's are."""
    dim, yellow, reset = ("\x1b[2m", "\x1b[33m", "\x1b[0m") if color else ("", "", "")
    name, text = printable(name, scrubber), printable(text, scrubber)  # as the tree shows them
    return f"{dim}trace {trace_id:032x}{reset}\n{name}\n{dim}└─ {reset}{yellow}{text}{reset}"


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False

"""The embedded default exporter: each finished trace printed as a tree in the terminal.

``ConsoleTreeExporter`` buffers spans by trace id and prints a trace once its local root
ends (rendered by ``render_tree``); a token and cost summary per model follows at shutdown.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import TextIO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agent_otel.exporting._render import (
    ModelUsage,
    cost_of,
    format_duration,
    render_token_summary,
    render_tree,
    usage_of,
)

__all__ = [
    "ConsoleTreeExporter",
    "ModelUsage",
    "format_duration",
    "render_token_summary",
    "render_tree",
]

_log = logging.getLogger("agent_otel")


class ConsoleTreeExporter(SpanExporter):
    """Print each finished trace as a tree once its local root span ends; tokens at shutdown.

    Use it with a ``SimpleSpanProcessor``: it only buffers, rendering happens when a root
    ends. A local root is a span with no parent or a remote parent. At most
    ``max_buffered_spans`` spans wait for their root; past that the oldest traces are
    dropped (counted in the summary), so a trace that never finishes cannot grow memory.
    ``stream`` defaults to ``sys.stderr`` (looked up at write time); ``color`` defaults to the
    stream's ``isatty()`` unless ``NO_COLOR`` is set; ``width`` to the terminal's width.
    Never raises into the traced code: write errors are logged once and swallowed.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        color: bool | None = None,
        width: int | None = None,
        max_buffered_spans: int = 10_000,
    ) -> None:
        self._stream = stream
        self._color = color
        self._width = width
        self._max_buffered = max(1, max_buffered_spans)
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._buffered = 0
        self._dropped = 0
        self._usage: dict[str, ModelUsage] = {}
        self._shutdown = False
        self._warned = False

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
        with self._lock:
            if self._shutdown:
                return SpanExportResult.FAILURE
            for span in spans:
                if span.context is None:
                    continue
                self._count_usage(span)
                group = self._traces.setdefault(span.context.trace_id, [])
                group.append(span)
                self._buffered += 1
                if span.parent is None or span.parent.is_remote:
                    self._buffered -= len(group)
                    ready.append(self._traces.pop(span.context.trace_id))
            while self._buffered > self._max_buffered and self._traces:
                _, oldest = self._traces.popitem(last=False)
                self._buffered -= len(oldest)
                self._dropped += len(oldest)
        for group in ready:
            self._write(partial(_tree, group, None))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Print traces whose root never ended, then the token summary. Idempotent."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            leftovers = list(self._traces.values())
            self._traces.clear()
            self._buffered = 0
            usage = dict(self._usage)
            dropped = self._dropped
        note = "(root span not ended)"
        for group in leftovers:
            self._write(partial(_tree, group, note))
        if usage:
            self._write(lambda color, _width: render_token_summary(usage, color=color))
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
            stream.write(render(color, width) + "\n")
            stream.flush()
        except Exception:  # never hurt the agent: a closed stream at exit, a bad attribute
            if not self._warned:
                self._warned = True
                _log.warning("agent-otel: the terminal trace view failed to print", exc_info=True)


def _tree(spans: list[ReadableSpan], title: str | None, color: bool, width: int) -> str:
    return render_tree(spans, color=color, width=width, title=title)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False

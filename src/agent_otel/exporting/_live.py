"""The terminal view's live part: open runs updating in place while they run.

When ``configure()``'s terminal view writes to a terminal and ``rich`` is installed (the
``live`` extra), :class:`LiveRuns` (a span processor) keeps the spans that started and have
not ended, per trace, and shows them with ``rich.live.Live``: each open run as a tree of its
open spans, with elapsed time, the tokens its ended calls reported so far, and the call or
tool in progress. When a run's root ends it leaves the live area, and the terminal view
prints its final tree as it always did. The live area exists only while a run is open (its
refresh thread with it) and is cleared when it stops; a forked child starts without it. In a
non-terminal (CI, a log file) none of this is built: the view prints as before.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, TextIO

from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel.exporting._render import format_duration, printable
from agent_otel.exporting._summary import usage_of
from agent_otel.recording._open import held as _held
from agent_otel.scrubbing._scrubber import Scrubber, resolve_scrubber

__all__ = ["LiveRuns", "live_runs_for"]

_IN_PROGRESS = {A.OP_CHAT, A.OP_EXECUTE_TOOL}
MOST_CHILDREN = 20
"""The open children shown under one span; past it, one line says how many more."""


@dataclass
class _Run:
    root: int
    spans: dict[int, Span] = field(default_factory=dict)  # open spans of the run, by id
    input_tokens: int = 0
    output_tokens: int = 0


def live_runs_for(stream: TextIO | None, scrub: bool | Scrubber | None = None) -> LiveRuns | None:
    """The live view for ``stream`` (stderr when None): only on a terminal, with ``rich``;
    its names scrubbed by ``scrub`` (the terminal view's)."""
    target = stream
    try:
        if target is None:
            import sys

            target = sys.stderr
        if not target.isatty():
            return None
        from rich.console import Console
    except Exception:  # no rich (the `live` extra), or a stream that cannot tell
        return None
    return LiveRuns(Console(file=target), scrub=scrub)


class LiveRuns(SpanProcessor):
    """Open runs, redrawn in place on ``console`` (a ``rich.console.Console``), each span's
    name scrubbed by ``scrub`` (``True`` the default scrubber, a ``Scrubber``, ``False`` none:
    ``configure(scrub=...)``'s, as the tree printed when the run ends is)."""

    def __init__(
        self, console: Any, refresh_per_second: float = 4.0, *, scrub: bool | Scrubber | None = None
    ) -> None:
        self.console = console
        self._scrubber = resolve_scrubber(scrub)
        self._refresh = refresh_per_second
        # Lock order: _switch (starting, stopping, printing), then rich's own, then _lock (the
        # runs, also read by rich's refresh thread); _lock is never held while taking another.
        self._switch = threading.Lock()
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}  # trace id -> open run
        self._live: Any = None
        view = weakref.ref(self)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=lambda: _forget(view))

    # --- spans -----------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            context = span.context
            if context is None or (span.attributes or {}).get(A.PENDING):
                return
            with self._lock:
                run = self._runs.get(context.trace_id)
                if run is None:
                    if span.parent is not None and not span.parent.is_remote:
                        return  # a span of a trace whose root this view did not see start
                    run = self._runs[context.trace_id] = _Run(context.span_id)
                run.spans[context.span_id] = span
            if self._live is None:
                self._switch_live()
        except Exception:
            report("live view")

    def on_end(self, span: ReadableSpan) -> None:
        try:
            context = span.context
            if context is None:
                return
            with self._lock:
                run = self._runs.get(context.trace_id)
                if run is None:
                    return
                run.spans.pop(context.span_id, None)
                found = usage_of(span)
                if found is not None:
                    run.input_tokens += found[1]
                    run.output_tokens += found[2]
                ended = context.span_id == run.root
                if ended:
                    del self._runs[context.trace_id]
            if ended:
                self._switch_live()
        except Exception:
            report("live view")

    def shutdown(self) -> None:
        with self._lock:
            self._runs.clear()
        self._switch_live()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    # --- the live area ---------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._live is not None

    def print_above(self, text: str) -> bool:
        """Print ``text`` (ANSI allowed) above the live area; False when it is not shown."""
        with self._switch:
            live = self._live
            if live is None:
                return False
            from rich.text import Text

            live.console.print(Text.from_ansi(text), soft_wrap=True)
            return True

    def _switch_live(self) -> None:
        """Show the live area while a run is open, and only then."""
        with self._switch:
            with self._lock:
                wanted = bool(self._runs)
            if wanted and self._live is None:
                self._start()
            elif not wanted and self._live is not None:
                live, self._live = self._live, None
                thread = getattr(live, "_refresh_thread", None)
                live.stop()
                if isinstance(thread, threading.Thread):  # rich stops it without waiting
                    thread.join(timeout=5)  # so no thread outlives the runs it showed

    def _start(self) -> None:
        from rich.live import Live

        live = Live(
            get_renderable=self.render,
            console=self.console,
            refresh_per_second=self._refresh,
            transient=True,  # cleared when the last run ends: its final tree prints instead
            redirect_stdout=False,
            redirect_stderr=False,
        )
        live.start()
        self._live = live

    def after_fork_in_child(self) -> None:
        """The parent's open runs and refresh thread do not exist in a forked child."""
        self._runs.clear()
        self._live = None
        self._switch = threading.Lock()
        self._lock = threading.Lock()

    def render(self) -> Any:
        """The open runs as ``rich`` trees (called by the refresh thread).

        The lock is held only to copy each run's open spans: span starts and ends in every
        thread of the agent wait on it. The trees are built outside it, in time linear in the
        open spans, and show at most :data:`MOST_CHILDREN` children under a span (a fan-out of
        a thousand tools is one line more, not a thousand: a terminal shows a screenful)."""
        from rich.console import Group
        from rich.text import Text
        from rich.tree import Tree

        now = time.time_ns()
        held = _held()  # ended, and held by their run for what may still come: not shown
        with self._lock:
            runs = [
                (run.root, list(run.spans.items()), run.input_tokens, run.output_tokens)
                for run in self._runs.values()
            ]
        trees = []
        for root_id, spans, input_tokens, output_tokens in runs:
            root = None
            children: dict[int, list[Span]] = {}
            for span_id, span in spans:
                if id(span) in held:
                    continue
                if span_id == root_id:
                    root = span
                elif span.parent is not None:
                    children.setdefault(span.parent.span_id, []).append(span)
            if root is None:
                continue
            tokens = f"  {input_tokens:,} in / {output_tokens:,} out tokens"
            label = Text.assemble(
                (printable(root.name, self._scrubber), "bold"), *_elapsed(root, now), tokens
            )
            tree = Tree(label)
            below = [(tree, root_id)]  # (a node, its span's id): children still to add
            while below:
                node, parent = below.pop()
                under = children.pop(parent, ())  # popped: a cycle of ids ends here
                for span in under[:MOST_CHILDREN]:
                    operation = (span.attributes or {}).get(A.OPERATION_NAME)
                    doing = ("  ", ("in progress", "yellow")) if operation in _IN_PROGRESS else ()
                    label = Text.assemble(
                        printable(span.name, self._scrubber), *_elapsed(span, now), *doing
                    )
                    if span.context is not None:
                        below.append((node.add(label), span.context.span_id))
                if len(under) > MOST_CHILDREN:
                    node.add(Text(f"… {len(under) - MOST_CHILDREN:,} more", "dim"))
            trees.append(tree)
        return Group(*trees)


def _elapsed(span: Span, now: int) -> tuple[str, tuple[str, str]]:
    """Text parts: the time since ``span`` started, dimmed. A label is plain ``Text`` parts,
    never markup: a span's name (``printable``: scrubbed, its controls shown as escapes) is
    the agent's text, and ``[bold]``, ``[/]`` or a trailing backslash in it show as written."""
    return "  ", (format_duration(now - (span.start_time or now)), "dim")


def _forget(view: weakref.ref[LiveRuns]) -> None:
    live = view()
    if live is not None:
        live.after_fork_in_child()

"""Pure text rendering for the terminal view: a trace as a tree (the token summary: _summary).

No I/O here, so every line is testable. Colour is ANSI escapes around plain segments only:
stripping them from the coloured output gives exactly the plain output.

A trace renders like this (``width=72``; timeline bar relative to the whole trace)::

    trace 0af7651916cd43dd8448eb211c80319c
    invoke_agent researcher               1.00s  ████████████████████
    └─ step                              800ms  ·····████████████████
       ├─ chat gpt-4o  in=12 out=34      250ms  ·····█████··········
       └─ execute_tool search  [ERROR…   300ms  ··········██████····
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_otel import _attributes as A
from agent_otel.scrubbing._scrubber import DEFAULT, Scrubber

_RESET = "\x1b[0m"
_DIM = "\x1b[2m"
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_MAGENTA = "\x1b[35m"
_CYAN = "\x1b[36m"

_FILL = "█"
_EMPTY = "·"
_ELLIPSIS = "…"
_DURATION_WIDTH = 7
_MIN_BAR = 10
_MIN_LABEL = 16


def printable(text: object, scrubber: Scrubber | None = DEFAULT) -> str:
    """A string of a span as the terminal view shows it: scrubbed by the view's scrubber (the
    one ``configure(scrub=...)`` gave, else the default; None: scrubbing off), its control
    characters shown as escapes (``\\x1b``, ``\\n``). Our runs' strings were scrubbed as they
    were written; the spans of other instrumentations and the application's own in the same
    trace, the evaluation notes of any emitter and their model names were not, and the
    terminal (a container's log) is an export too. Any of them (an agent's name, a model's, a
    tool's) may hold escape codes that a terminal would run (clear the screen, set its title,
    move the cursor into the live area) or a newline that breaks the tree: shown, never run."""
    shown = str(text) if scrubber is None else scrubber.text(str(text))
    return shown if shown.isprintable() else _CONTROL.sub(_escaped, shown)


# C0, DEL and C1 controls, line and paragraph separators, and the bidirectional overrides and
# isolates (which reorder the characters a terminal shows after them).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # Python's escape: \x1b, \n, \t, \u202e


Segment = tuple[str, str]  # (text, ANSI style or "")


def format_duration(ns: int) -> str:
    """A short human duration: ``850µs``, ``12ms``, ``1.25s``, ``2m03.5s``."""
    ns = max(ns, 0)
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{round(ns / 1_000)}µs"
    ms = round(ns / 1_000_000)
    if ms < 1_000:
        return f"{ms}ms"
    seconds = ns / 1_000_000_000
    if seconds < 59.995:
        return f"{seconds:.2f}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:04.1f}s"


def _style(segments: Sequence[Segment], color: bool) -> str:
    if not color:
        return "".join(text for text, _ in segments)
    return "".join(f"{style}{text}{_RESET}" if style and text else text for text, style in segments)


def _fit(segments: list[Segment], width: int, shrink: int) -> list[Segment]:
    """Fit to ``width`` characters, padding with spaces; cut segment ``shrink`` (the name)
    first so that marks like ``[ERROR …]`` survive, then the tail. An ellipsis marks a cut."""
    total = sum(len(text) for text, _ in segments)
    excess = total - width
    if excess <= 0:
        return [*segments, (" " * -excess, "")]
    segments = list(segments)
    text, style = segments[shrink]
    if len(text) > excess + 1:
        segments[shrink] = (text[: len(text) - excess - 1] + _ELLIPSIS, style)
        return segments
    out: list[Segment] = []
    room = width - 1
    for text, style in segments:
        if room <= 0:
            break
        out.append((text[:room], style))
        room -= len(text[:room])
    out.append((_ELLIPSIS, _DIM))
    return out


def _details(span: ReadableSpan, scrubber: Scrubber | None) -> list[Segment]:
    attrs = span.attributes or {}
    parts: list[Segment] = []
    tokens = []
    if A.USAGE_INPUT_TOKENS in attrs:
        tokens.append("in=" + printable(attrs[A.USAGE_INPUT_TOKENS], scrubber))
    if A.USAGE_OUTPUT_TOKENS in attrs:
        tokens.append("out=" + printable(attrs[A.USAGE_OUTPUT_TOKENS], scrubber))
    if tokens:
        parts.append((" ".join(tokens), _CYAN))
    tool = attrs.get(A.TOOL_NAME)
    if tool is not None and str(tool) not in span.name:
        parts.append((f"tool={printable(tool, scrubber)}", _MAGENTA))
    if span.status.status_code is StatusCode.ERROR:
        kind = attrs.get(A.ERROR_TYPE) or span.status.description
        parts.append((f"[ERROR {printable(kind, scrubber)}]" if kind else "[ERROR]", _RED))
    if attrs.get(A.INCOMPLETE) is True:
        parts.append(("[incomplete]", _YELLOW))
    out: list[Segment] = []
    for part in parts:
        out += [("  ", ""), part]
    return out


def _bar_style(span: ReadableSpan) -> str:
    attrs = span.attributes or {}
    if span.status.status_code is StatusCode.ERROR:
        return _RED
    if attrs.get(A.INCOMPLETE) is True:
        return _YELLOW
    operation = attrs.get(A.OPERATION_NAME)
    if operation == A.OP_CHAT:
        return _CYAN
    if operation == A.OP_EXECUTE_TOOL:
        return _MAGENTA
    return _GREEN


def _bar(span: ReadableSpan, t0: int, total: int, width: int) -> list[Segment]:
    start = span.start_time or t0
    end = span.end_time or start
    first = min(max(math.floor((start - t0) / total * width), 0), width - 1)
    last = min(max(math.ceil((end - t0) / total * width), first + 1), width)
    return [
        (_EMPTY * first, _DIM),
        (_FILL * (last - first), _bar_style(span)),
        (_EMPTY * (width - last), _DIM),
    ]


def render_tree(
    spans: Sequence[ReadableSpan],
    *,
    color: bool,
    width: int = 100,
    title: str | None = None,
    notes: Mapping[int, Sequence[str]] | None = None,
    scrubber: Scrubber | None = DEFAULT,
) -> str:
    """Render the spans of one trace as an indented tree with a timeline bar per span.

    Roots are spans whose parent is absent from ``spans`` (so a partial trace still renders).
    Children are ordered by start time. Each line: tree prefix, span name, tokens
    (``in=``/``out=``), ``tool=`` when the name lacks it, ``[ERROR type]``, ``[incomplete]``;
    then the duration and a bar whose offset and width are proportional to the trace.
    ``notes`` (by span id: evaluations of that span) are rows below the span's children.
    Every string of a span or note is shown as :func:`printable` with ``scrubber`` makes it.
    """
    if not spans:
        return ""
    by_id = {span.context.span_id: span for span in spans if span.context is not None}
    children: dict[int, list[ReadableSpan]] = {}
    roots: list[ReadableSpan] = []
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        if parent is None or parent not in by_id:
            roots.append(span)
        else:
            children.setdefault(parent, []).append(span)

    def order(group: list[ReadableSpan]) -> list[ReadableSpan]:
        return sorted(group, key=lambda s: s.start_time or 0)  # stable: ties keep input order

    t0 = min(s.start_time or 0 for s in spans)
    t1 = max(s.end_time or s.start_time or 0 for s in spans)
    total = max(t1 - t0, 1)

    rows: list[tuple[list[Segment], ReadableSpan | None]] = []

    def walk(span: ReadableSpan, prefix: str, connector: str, is_root: bool) -> None:
        name_style = _BOLD if is_root else ""
        label = [(prefix + connector, _DIM), (printable(span.name, scrubber), name_style)]
        label += _details(span, scrubber)
        rows.append((label, span))
        span_id = span.context.span_id if span.context else None
        kids = order(children.get(span_id, []) if span_id is not None else [])
        extra = list(notes.get(span_id, ())) if notes and span_id is not None else []
        below = "" if is_root else prefix + ("   " if connector.startswith("└") else "│  ")
        count = len(kids) + len(extra)
        for i, kid in enumerate(kids):
            walk(kid, below, "└─ " if i == count - 1 else "├─ ", False)
        for j, text in enumerate(extra):
            last = len(kids) + j == count - 1
            rows.append(
                (
                    [
                        (below + ("└─ " if last else "├─ "), _DIM),
                        (printable(text, scrubber), _YELLOW),
                    ],
                    None,
                )
            )

    for root in order(roots):
        walk(root, "", "", True)

    fixed = 2 + _DURATION_WIDTH + 2
    longest = max(sum(len(t) for t, _ in label) for label, row in rows if row is not None)
    cap = min(width - fixed - _MIN_BAR, width * 3 // 5)  # the bar keeps at least 40%
    label_width = max(_MIN_LABEL, min(longest, cap))
    bar_width = max(_MIN_BAR, width - fixed - label_width)

    trace_id = next((s.context.trace_id for s in roots if s.context is not None), 0)
    header: list[Segment] = [(f"trace {trace_id:032x}", _DIM)]
    if title:
        header.append((f"  {title}", _YELLOW))
    lines = [_style(header, color)]
    for label, row in rows:
        if row is None:  # a note: no duration, no bar
            lines.append(_style(_fit(label, width, shrink=1), color).rstrip())
            continue
        duration = format_duration((row.end_time or 0) - (row.start_time or 0))
        line = [
            *_fit(label, label_width, shrink=1),
            ("  " + duration.rjust(_DURATION_WIDTH) + "  ", ""),
            *_bar(row, t0, total, bar_width),
        ]
        lines.append(_style(line, color))
    return "\n".join(lines)

"""Whether each span of ours lies within its parent of ours: the check behind
:func:`nesting_faults` and ``InMemoryTelemetry.nesting_faults()``.

Trace backends (Jaeger, Tempo, Phoenix) draw a child that starts before its parent or ends
after it as broken, so a run's spans must end children first on every exit path. One pass
over the finished spans, in the order they ended: cheap enough for every test.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.sdk.trace import ReadableSpan

from agent_otel._attributes import PENDING, SCOPE_NAME
from agent_otel.recording._hints import keyworded

from ._tree import _spans


def _ours(span: ReadableSpan) -> bool:
    """A final span agent-otel's tracer made (not another instrumentation's, not a snapshot
    of option ``pending_spans``)."""
    scope = span.instrumentation_scope
    return (
        scope is not None
        and scope.name == SCOPE_NAME
        and not (span.attributes or {}).get(PENDING)
        and span.context is not None
    )


def _key(span: ReadableSpan) -> tuple[int, int]:
    context = span.context
    return (context.trace_id, context.span_id) if context is not None else (0, 0)


def _parent_key(span: ReadableSpan) -> tuple[int, int] | None:
    """Its parent's ids; ``None`` for a root, and for a remote parent (another process's
    span, as ``continue_trace()`` or an extracted carrier gives it: its own clock and life)."""
    parent = span.parent
    if parent is None or parent.is_remote:
        return None
    return (parent.trace_id, parent.span_id)


def _cycle(span: ReadableSpan, ended: dict[tuple[int, int], tuple[int, ReadableSpan]]) -> bool:
    """Whether ``span``'s parents lead back to it: ids two telemetries' sequential
    generators both gave (a kit's run inside another kit's), whose nesting no one can judge."""
    key, seen = _parent_key(span), {_key(span)}
    while key is not None and key in ended:
        if key in seen:
            return True
        seen.add(key)
        key = _parent_key(ended[key][1])
    return False


@keyworded
def nesting_faults(
    spans: Iterable[ReadableSpan], still_open: Iterable[ReadableSpan] = ()
) -> list[str]:
    """Each span of agent-otel's whose parent is also agent-otel's and that does not lie within
    it: started before it, ended after it (by timestamp, or exported after it: ``spans`` in
    the order they ended, as an exporter's ``get_finished_spans()`` and
    ``telemetry.spans()`` give them), or still open (``still_open``) after it ended. ``[]``
    when every child lies within its parent, as backends expect to draw a trace; each fault
    says which span and which parent. Not judged: a span whose parent is remote (another
    process's, a run continuing a caller's trace), and spans whose parents lead back to
    themselves (two telemetries' sequential ids in one trace)."""
    finished = [s for s in _spans("nesting_faults", spans) if _ours(s)]
    ended = {_key(span): (index, span) for index, span in enumerate(finished)}
    faults: list[str] = []
    for index, span in enumerate(finished):
        found = ended.get(_parent_key(span) or (0, 0))
        if found is None:
            continue
        parent_index, parent = found
        early = (span.start_time or 0) < (parent.start_time or 0)
        late = index > parent_index or (span.end_time or 0) > (parent.end_time or 0)
        if (early or late) and not _cycle(span, ended):  # (walked only for a fault)
            if early:
                faults.append(f"{span.name!r} started before its parent {parent.name!r}")
            if late:
                faults.append(f"{span.name!r} ended after its parent {parent.name!r}")
    for span in still_open:
        found = ended.get(_parent_key(span) or (0, 0))
        if found is not None and _ours(span):
            faults.append(f"{span.name!r} still open after its parent {found[1].name!r} ended")
    return faults

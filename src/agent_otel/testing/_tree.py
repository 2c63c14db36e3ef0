"""Finished spans as a tree of plain dicts, for snapshot tests you can read."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, cast

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_otel._plain import a_kind, shown
from agent_otel.recording._hints import keyworded


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _start_order(span: ReadableSpan) -> tuple[int, int]:
    return (span.start_time or 0, span.context.span_id if span.context else 0)


_METHODS = {"span_tree": "tree", "nesting_faults": "nesting_faults"}


def _spans(caller: str, spans: object) -> Iterable[ReadableSpan]:
    """``spans`` when it is an iterable of finished spans' kind; the test kit's handle or a
    provider (a newcomer's first try) raised Python's bare "is not iterable"."""
    if hasattr(spans, "spans") and hasattr(spans, "tree"):  # an InMemoryTelemetry
        raise TypeError(
            f"{caller}() takes finished spans, not {a_kind(spans)}: pass telemetry.spans(), "
            f"or call telemetry.{_METHODS.get(caller, 'outline')}()"
        )
    if isinstance(spans, (str, bytes)) or not hasattr(spans, "__iter__"):
        raise TypeError(
            f"{caller}() takes finished spans (an exporter's get_finished_spans(), "
            f"telemetry.spans()), not {a_kind(spans)}"
        )
    items = list(cast("Iterable[object]", spans))
    for item in items:  # a tree's dicts, by_name()'s names: told here, not deep in the sort
        if not isinstance(item, ReadableSpan):
            raise TypeError(
                f"{caller}() takes finished spans (an exporter's get_finished_spans(), "
                f"telemetry.spans()), not a collection holding {a_kind(item)}"
            )
    return cast("list[ReadableSpan]", items)


def _keys(caller: str, attributes: object, events: object) -> bool | frozenset[str]:
    """``attributes=`` as ``True``/``False`` or the keys to keep, ``events=`` checked: a key
    given as one string (kept every key it contains: ``"gen_ai.request.model"`` kept
    ``gen_ai.request``), a number, or a flag of another type raise here, naming the option,
    not deep in the tree (``argument of type 'int' is not iterable``)."""
    if events is not None and type(events) is not bool:
        raise TypeError(f"{caller}(events=...) takes True or False, not {a_kind(events)}")
    if attributes is None or type(attributes) is bool:
        return bool(attributes)
    if issubclass(type(attributes), (str, bytes)):
        raise TypeError(
            f"{caller}(attributes=...) takes True, False or a collection of attribute keys, "
            f"not one string: pass attributes=[{shown(attributes)}]"
        )
    if not isinstance(attributes, Collection):
        raise TypeError(
            f"{caller}(attributes=...) takes True, False or a collection of attribute keys "
            f"(a list or set of str), not {a_kind(attributes)}"
        )
    keys = list(attributes)
    for key in keys:
        if not issubclass(type(key), str):
            raise TypeError(f"{caller}(attributes=...) takes keys as str, not {a_kind(key)}")
    return frozenset(str.__str__(key) for key in keys)


def _node(span: ReadableSpan, attributes: bool | Collection[str], events: bool) -> dict[str, Any]:
    node: dict[str, Any] = {"name": span.name, "kind": span.kind.name}
    if span.status.status_code is not StatusCode.UNSET:
        node["status"] = span.status.status_code.name
    if attributes:
        items = dict(span.attributes or {})
        if not isinstance(attributes, bool):
            items = {k: v for k, v in items.items() if k in attributes}
        node["attributes"] = {k: _plain(items[k]) for k in sorted(items)}
    if events and span.events:
        node["events"] = [
            {"name": e.name, "attributes": {k: _plain(v) for k, v in (e.attributes or {}).items()}}
            for e in span.events
        ]
    node["children"] = []
    return node


@keyworded
def span_tree(
    spans: Iterable[ReadableSpan],
    *,
    attributes: bool | Collection[str] = True,
    events: bool = True,
) -> list[dict[str, Any]]:
    """Nest ``spans`` by parent id: a list of root nodes, children in start-time order.

    Each node is ``{"name", "kind", "status"?, "attributes"?, "events"?, "children"}``.
    ``attributes`` may be a collection of keys to keep (timings and ids make poor snapshots).
    A span is known by its trace id and span id together (spans of two traces may share span
    ids); a span whose parent is not among ``spans`` is a root. Two spans sharing both ids,
    or spans whose parents lead back to themselves (a parent's ids given again by another id
    generator in the same trace), raise ``ValueError``: no tree can tell whose children are
    whose.
    """
    keys = _keys("span_tree", attributes, events)
    ordered = sorted(_spans("span_tree", spans), key=_start_order)
    nodes: dict[tuple[int, int], dict[str, Any]] = {}
    parents: dict[tuple[int, int], tuple[int, int] | None] = {}
    for span in ordered:
        if span.context is None:
            continue
        key = (span.context.trace_id, span.context.span_id)
        if key in nodes:
            raise ValueError(
                f"span_tree(): two finished spans ({shown(nodes[key]['name'])} and "
                f"{shown(span.name)}) share trace id {key[0]:032x} and span id {key[1]:016x}: "
                "no tree can tell whose children are whose (an id generator gave one id twice)"
            )
        nodes[key] = _node(span, keys, bool(events))
        parent = span.parent
        parents[key] = None if parent is None else (parent.trace_id, parent.span_id)
    roots: list[dict[str, Any]] = []
    for key, node in nodes.items():
        parent_key = parents[key]
        if parent_key is not None and parent_key in nodes:
            _no_loop(key, parents, nodes)
            nodes[parent_key]["children"].append(node)
        else:
            roots.append(node)
    return roots


def _no_loop(
    key: tuple[int, int],
    parents: dict[tuple[int, int], Any],
    nodes: dict[tuple[int, int], dict[str, Any]],
) -> None:
    """Raise ``ValueError`` when the parents of the span ``key`` lead back to it: a span's
    parent, made by another id generator, has the ids one of these spans has (two test kits'
    sequential ids, both from 1, a run of one inside a run of the other); nested as they
    say, the spans vanished from the tree, and as roots they made a flat list."""
    seen = [key]
    parent = parents.get(key)
    while parent is not None and parent in nodes:
        if parent in seen:
            names = ", ".join(shown(nodes[k]["name"]) for k in seen[seen.index(parent) :])
            raise ValueError(
                f"span_tree(): the spans {names} of trace {key[0]:032x} are each other's "
                "ancestors: a parent from another id generator had the ids of one of them "
                "(two InMemoryTelemetry in one trace, both numbering from 1, a run recorded "
                "by one inside a run of the other): give the inner one "
                "InMemoryTelemetry(ids=RandomIdGenerator()), or record both runs in one"
            )
        seen.append(parent)
        parent = parents.get(parent)


@keyworded
def span_outline(spans: Iterable[ReadableSpan]) -> list[Any]:
    """The span tree by names alone, for asserting structure in one line per level.

    A span without children is its name; a span with children is ``[name, [children...]]``,
    children in start-time order as in :func:`span_tree`.
    """

    def walk(node: dict[str, Any]) -> Any:
        children = [walk(child) for child in node["children"]]
        return [node["name"], children] if children else node["name"]

    checked = _spans("span_outline", spans)
    return [walk(root) for root in span_tree(checked, attributes=False, events=False)]

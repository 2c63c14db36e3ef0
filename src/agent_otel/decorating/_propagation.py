"""Trace context across processes: W3C trace-context carriers for ``config["otel_context"]``.

A run handed to another process (a worker, a Temporal activity) carries its parent as a plain
``dict[str, str]`` (``traceparent``, ``tracestate``, ``baggage``): JSON- and pickle-friendly.
The W3C propagators are used explicitly, so this works whatever global propagator is (or is
not) configured. In-process, an OTel ``Context`` object can be passed as is. The run ids of
:mod:`agent_otel.identity` ride in the carrier's baggage and come back out as run ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agent_otel._guard import warn_once
from agent_otel._plain import a_kind, items_of
from agent_otel.identity._identity import identity_from_baggage, identity_to_baggage
from agent_otel.recording._hints import keyworded

__all__ = [
    "agent_context_value",
    "check_context",
    "extract_context",
    "inject_context",
    "parent_from",
]

TRACE = TraceContextTextMapPropagator()
BAGGAGE = W3CBaggagePropagator()
BAGGAGE_HEADER = "baggage"  # the W3C baggage header: the caller's entries, not a trace


@keyworded
def inject_context(context: Context | None = None) -> dict[str, str]:
    """A W3C trace-context carrier for ``context`` (default: the current context).

    Pass it as ``config["otel_context"]`` (event contract) or the ``otel_context`` keyword
    (Agent contract) of an instrumented agent running in another process: its run becomes a
    child of the span current here.
    """
    check_context("inject_context", "context", context)
    carrier: dict[str, str] = {}
    TRACE.inject(carrier, context=context)
    # The run ids are encodable (identity_to_baggage); a caller's own baggage entry with a
    # lone surrogate is not: then the carrier goes without baggage, the run is not hurt.
    with suppress(UnicodeEncodeError):
        BAGGAGE.inject(carrier, context=identity_to_baggage(context))
    return carrier


@keyworded
def extract_context(carrier: Any, context: Context | None = None) -> Context:
    """The context a carrier made by :func:`inject_context` describes (its span and baggage).

    Carriers are read as message headers arrive: a mapping or a sequence of ``(key, value)``
    pairs (Kafka, an ASGI scope's headers), keys in any case, keys and values as ``str`` or
    ``bytes`` (UTF-8), a list value read by its first item (but see below); a WSGI environ too (its
    ``HTTP_TRACEPARENT`` is the ``traceparent`` header). ``tracestate`` and ``baggage`` sent as
    several headers (or a list value) are their values joined, in order, as the W3C specs
    combine them, cut to the limits by whole members from the end (:func:`within`). ``context``
    is the base the carrier's values are added to (default: an empty
    context).
    """
    check_context("extract_context", "context", context)
    headers = text_carrier(carrier)
    extracted = TRACE.extract(headers, context=context if context is not None else Context())
    return identity_from_baggage(BAGGAGE.extract(headers, context=extracted))


def check_context(caller: str, name: str, value: object) -> None:
    """``value`` is an OTel ``Context`` or None, else ``TypeError`` saying how to make one (a
    span given for its context is the usual slip): never an ``AttributeError`` from the SDK."""
    if value is not None and not issubclass(type(value), Context):  # (never its __class__)
        raise TypeError(
            f"{caller}({name}=...) takes an OpenTelemetry Context or None, not {a_kind(value)}: "
            "pass trace.set_span_in_context(span) for a span, context.get_current() for the "
            "current one"
        )


def text_carrier(carrier: Any) -> dict[str, str]:
    """The W3C fields of a header carrier as lower-case ``str`` keys and ``str`` values."""
    if isinstance(carrier, (str, bytes, bytearray)):  # told by kind, never its value: a
        # header's value may be a credential
        warn_once(
            "carrier",
            "text",
            "agent-otel: a trace carrier was given one text (%s), which names no parent, so the "
            "run started a trace of its own: pass the headers themselves, not one header's "
            "value, as in continue_trace(request.headers) or extract_context(request.headers)",
            a_kind(carrier),
        )
        return {}  # no pairs (and a subclass's own iteration may raise)
    # A carrier's dicts, lists and strings are read by their base type's own methods (a
    # subclass's own items, iteration, length or lower may raise, or say something else).
    pairs: Any
    if isinstance(carrier, dict):
        pairs = dict.items(carrier)
    elif isinstance(carrier, Mapping):
        pairs = carrier.items()
    elif isinstance(carrier, (list, tuple)):
        pairs = items_of(carrier)
    else:
        pairs = carrier
    headers: dict[str, str] = {}
    try:
        for pair in pairs:
            if isinstance(pair, (str, bytes, Mapping)):
                continue  # no pair (and a subclass's own iteration may raise)
            key, value = items_of(pair) if isinstance(pair, (list, tuple)) else pair
            name = _text(key)
            if name is None:
                continue
            name = name.lower()
            if name.startswith(_CGI):  # a WSGI environ's (CGI's) spelling: HTTP_TRACEPARENT
                name = name[len(_CGI) :]
            if name not in _FIELDS:
                continue
            values = items_of(value) if isinstance(value, (list, tuple)) else [value]
            texts = [text for text in map(_text, values) if text is not None]
            if name in _LISTS:  # a list field sent as several headers is their values joined
                texts = [t for t in (headers.get(name), *texts) if t is not None]
                if texts:
                    headers[name] = ",".join(texts)
            elif name not in headers and texts:
                headers[name] = texts[0]  # traceparent: the first
    except (TypeError, ValueError):  # not pairs at all: no context in it
        return {}
    for name, limit in _LIMITS.items():
        if name in headers:
            headers[name] = within(headers[name], *limit)
    return headers


def within(value: str, members: int, size: int) -> str:
    """A list field (``tracestate``, ``baggage``) cut to ``members`` list-members and ``size``
    UTF-8 bytes, whole members dropped from its end, as the W3C specs tell a vendor to
    truncate: OpenTelemetry's propagators drop the whole field when it is over a limit (all
    of a caller's tracestate, all of its baggage and the run's ids with it), which several
    headers joined, each within the limits, easily are. Unchanged when within them."""
    if value.count(",") < members and len(value) <= size // 4:
        return value  # (the usual: far within both, no member read)
    kept: list[str] = []
    used = 0
    for member in value.split(","):
        member = member.strip(" \t")
        if not member:
            continue  # an empty member (the specs allow them): nothing to keep
        cost = len(member.encode("utf-8", "surrogatepass")) + (1 if kept else 0)
        if len(kept) == members or used + cost > size:
            break
        kept.append(member)
        used += cost
    return ",".join(kept)


_FIELDS = frozenset({"traceparent", "tracestate", "baggage"})
_LISTS = frozenset({"tracestate", "baggage"})
"""The fields that are lists: W3C Trace Context and Baggage let a request carry each as several
headers (HTTP/1.1's list-valued header rule), which a receiver combines, in order, with
commas. An ASGI scope and aiohttp's multidict give them as separate pairs."""
_LIMITS = {"tracestate": (32, 8192), "baggage": (180, 8192)}
"""Each list field's limits as OpenTelemetry's propagators read it (list-members, bytes): 32
tracestate members (W3C Trace Context's; beyond, the whole field is dropped), 180 baggage
members and 8192 bytes (beyond the bytes, the whole field is dropped)."""
_CGI = "http_"


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return None


def parent_from(value: Any) -> Context | None:
    """The parent a caller's ``otel_context`` names; None when it names none (use current).

    A ``Context`` is taken as is; a mapping or a list of header pairs is read as a W3C carrier
    (see :func:`extract_context`), honoured only when it holds a valid ``traceparent``.
    Anything else is ignored.
    """
    if isinstance(value, Context):  # before Mapping: a Context is a dict
        return value
    if isinstance(value, (Mapping, list, tuple)):
        extracted = extract_context(value)
        if trace.get_current_span(extracted).get_span_context().is_valid:
            return extracted
    return None


def agent_context_value(caller_value: Any, run_context: Context | None = None) -> Any:
    """What the agent receives as ``otel_context``: the run's context, in the caller's form.

    A caller that passed a carrier gets a carrier (the agent may forward it across a process
    boundary); otherwise an OTel ``Context``. ``run_context`` defaults to the current one.
    """
    context = run_context if run_context is not None else otel_context.get_current()
    if isinstance(caller_value, (Mapping, list, tuple)) and not isinstance(caller_value, Context):
        return inject_context(context)
    return context

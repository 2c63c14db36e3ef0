"""``RunIdentityProcessor``: the run's ids on spans other instrumentations start inside it.

Our own spans carry the ids from their start; an HTTP client span, a database span or a
framework's span started below a run does not know them. This span processor reads the ids
from the context each span starts in and adds them, so every span of the run has them.
``configure()`` adds it; with your own ``TracerProvider``, add it first. The ids are
agent-otel's strings on another's span: they pass its ``scrub`` first (the default scrubber;
``configure(scrub=...)``'s in the one ``configure()`` adds; docs/scrubbing.md), as on the
run's own spans, then made encodable as there (a lone surrogate as ``?``).

One id goes the other way: an MCP ``tools/call`` request sent from an MCP tool's body (the MCP
SDK's client span starts with its ``jsonrpc.request.id``) gives that id to the tool's
``execute_tool`` span, which the request's id is not known to until it is sent.
"""

from __future__ import annotations

from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agent_otel._attributes import SCOPE_NAME
from agent_otel.recording._encodable import clean_attributes
from agent_otel.recording._hints import keyworded_but
from agent_otel.recording._scope import mcp_request_started
from agent_otel.scrubbing import Scrub, Scrubber, resolve_scrubber
from agent_otel.scrubbing._scrubber import DEFAULT

from ._identity import identity_of

_SCRUB = Scrub(DEFAULT)  # ids recur: its memory of clean strings makes this a set lookup


@keyworded_but("on_start", "on_end")  # the SDK calls them per span
class RunIdentityProcessor(SpanProcessor):
    """Adds ``session.id``, ``user.id`` and ``gen_ai.conversation.id`` at span start; an MCP
    tool's request id to its tool span (module doc). ``scrub``: ``True`` (the default
    scrubber), ``False`` or a :class:`~agent_otel.Scrubber`, what the ids pass first (not
    given: ``configure(scrub=...)``'s, else the default)."""

    def __init__(self, scrub: bool | Scrubber | None = None) -> None:
        scrubber = resolve_scrubber(scrub)
        self._scrub: Scrub | None = None
        if scrubber is not None:
            self._scrub = _SCRUB if scrubber is DEFAULT else Scrub(scrubber)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        scope = span.instrumentation_scope
        if scope is not None and scope.name == SCOPE_NAME:
            return  # set when the span started
        mcp_request_started(span.kind, span.attributes, parent_context)
        identity = identity_of(parent_context)
        if identity is None:
            return
        scrub = self._scrub
        attributes = identity.attributes()
        if scrub is not None:
            attributes = scrub.attributes(attributes)
        span.set_attributes(clean_attributes(attributes))  # encodable, as on the run's spans

    def on_end(self, span: ReadableSpan) -> None:
        return None

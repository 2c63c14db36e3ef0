"""The caller's side of a remote agent: one ``invoke_agent`` CLIENT span per call.

:class:`RemoteAgentCall` owns the span from start to end, as the recording layer's span owners
do, and gives the W3C headers that make the remote run its child. :func:`remote_agent` is the
door for any HTTP agent: a ``with`` (or ``async with``) block with the span current (so an
HTTP client's own spans nest under it) whose ``headers`` go on the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, TracerProvider
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel import _clock
from agent_otel._block import Block, detach
from agent_otel._guard import ending, report
from agent_otel._plain import text_of
from agent_otel.decorating._propagation import BAGGAGE, TRACE, check_context
from agent_otel.identity._identity import clean_id, identity_of
from agent_otel.recording._encodable import checked, checked_text, uncounted
from agent_otel.recording._errors import error_type_of, fail_span, mark_error, report_failure
from agent_otel.recording._hints import keyworded, nearest, unexpected
from agent_otel.recording._options import scrub_for, tracer_for
from agent_otel.recording._span import GuardedSpan, start_span
from agent_otel.scrubbing import Scrubber

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["CallOptions", "RemoteAgentCall", "address_of", "remote_agent", "w3c_headers"]


class CallOptions(TypedDict, total=False):
    """The options of a remote agent call, written once: :func:`remote_agent` and
    :class:`RemoteAgentCall` take them as keywords (the class also takes ``parent``)."""

    conversation_id: str | None
    """``gen_ai.conversation.id``, when known before the call (else the remote side's)."""
    description: str | None
    """``gen_ai.agent.description``."""
    version: str | None
    """``gen_ai.agent.version``."""
    provider: str | None
    """``gen_ai.provider.name`` (default ``unknown``)."""
    tracer_provider: TracerProvider | None
    """Where the span goes (default: the global provider)."""
    meter_provider: MeterProvider | None
    """Where scrubbing counts (default: the global provider)."""
    scrub: bool | Scrubber
    """As for a run (default ``True``: credentials in names are scrubbed)."""


_CALL_OPTIONS = frozenset(CallOptions.__optional_keys__)


def _check_options(name: str, options: Mapping[str, object], takes: frozenset[str]) -> None:
    """A keyword that is no option of ``name()`` raises as Python's would, with the nearest."""
    unknown = options.keys() - _CALL_OPTIONS
    if unknown:
        raise TypeError(unexpected(name, min(unknown), takes | _CALL_OPTIONS, hint=nearest))


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@keyworded
class RemoteAgentCall(Block["RemoteAgentCall"]):
    """One call of a remote agent and its ``invoke_agent {name}`` span (kind CLIENT).

    ============================================  ======================================
    attribute                                     written
    ============================================  ======================================
    ``gen_ai.operation.name`` (``invoke_agent``)  at start
    ``gen_ai.provider.name``                      at start: the one given, else ``unknown``
    ``gen_ai.agent.name``, ``.description``,      at start, when known (an A2A agent card
    ``.version``                                  names all three)
    ``server.address``, ``server.port``           at start, from the agent's URL (the port
                                                  the scheme implies when it names none)
    ``gen_ai.conversation.id``                    at start when known, else once the remote
                                                  side names it (A2A's ``contextId``); the
                                                  enclosing run's id until then
    ``session.id``, ``user.id``                   at start: the enclosing run's ids
    ``error.type`` (+ ERROR status)               when the call raised (the ``exception``
                                                  event too); ``CancelledError`` included;
                                                  or when the remote side answered with a
                                                  failure (:meth:`fail`: an A2A task that
                                                  ended ``TASK_STATE_FAILED``)
    ``agent_otel.incomplete``,                    at the end of a call whose remote task's
    ``agent_otel.end_reason``                     end was never learned (:meth:`unfinished`)
    ============================================  ======================================

    A call that returned with its remote task still at work says so by an ``agent_otel.held``
    event, when it returned (:meth:`held`): its span stays open until the caller learns how the
    task ended.

    ``context`` is the caller's context with this span current: attach it around whatever
    sends the request (``with`` does). ``headers`` is the W3C trace context naming this span,
    to put on the request: ``traceparent``, ``tracestate`` and the context's own baggage,
    never the run's ids (a remote agent may be someone else's service). No metric: the remote
    run records its own, so the call counts once.
    """

    __slots__ = (
        "_described",
        "_ended",
        "_failed",
        "_span",
        "_tokens",
        "context",
        "conversation_id",
        "name",
        "url",
    )

    def __init__(
        self,
        name: str | None = None,
        url: str | None = None,
        *,
        parent: Context | None = None,
        **options: Unpack[CallOptions],
    ) -> None:
        """``parent``: the context the span starts in (default: the current one); the options
        as for :func:`remote_agent`."""
        _check_options("RemoteAgentCall", options, frozenset({"name", "url", "parent"}))
        conversation_id = options.get("conversation_id")
        description, version = options.get("description"), options.get("version")
        provider, scrub = options.get("provider"), options.get("scrub", True)
        tracer_provider = options.get("tracer_provider")
        meter_provider = options.get("meter_provider")
        check_context("RemoteAgentCall", "parent", parent)
        self._ended = self._failed = False
        self._described = description is not None or version is not None
        self._tokens: list[Token[Context]] = []
        parent = parent if parent is not None else otel_context.get_current()
        identity = identity_of(parent)
        self.name = _text(name)
        self.url = _text(url)
        self.conversation_id = clean_id(conversation_id)
        attributes: dict[str, AttributeValue] = {
            A.OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.PROVIDER_NAME: _text(provider) or A.PROVIDER_UNKNOWN,
        }
        if identity is not None:
            attributes.update(identity.attributes())
        attributes.update(_described(self.name, self.url, description, version))
        if self.conversation_id is not None:
            attributes[A.CONVERSATION_ID] = self.conversation_id
        try:
            scrub_with = scrub_for(meter_provider, scrub)
        except Exception:  # nothing unscrubbed is recorded: the span goes, the call does not
            report("remote agent scrub")
            scrub_with, tracer_provider = None, trace.NoOpTracerProvider()
        self._span: GuardedSpan = start_span(
            tracer_for(tracer_provider), uncounted, scrub_with,
            checked_text(_span_name(self.name), uncounted, scrub_with), parent, SpanKind.CLIENT,
            checked(attributes, uncounted, scrub_with), _clock.now_ns(),
        )  # fmt: skip
        self.context: Context = trace.set_span_in_context(self._span.raw, parent)

    def describe(
        self,
        name: str | None = None,
        url: str | None = None,
        description: str | None = None,
        version: str | None = None,
    ) -> None:
        """What was not known at start (the agent card the call is made with), once: a name or
        URL given at start is kept; the span takes the name once it has one."""
        if self._ended or self._described:
            return
        self._described = True
        fresh_name = _text(name) if self.name is None else None
        fresh_url = _text(url) if self.url is None else None
        self.name = self.name or fresh_name
        self.url = self.url or fresh_url
        attributes = _described(fresh_name, fresh_url, description, version)
        if attributes:
            self._span.set_attributes(attributes)
        if fresh_name is not None:
            self._span.update_name(_span_name(fresh_name))

    @property
    def headers(self) -> dict[str, str]:
        """The W3C headers naming this call's span, for the request (a new dict each time)."""
        return w3c_headers(self.context)

    def set_conversation_id(self, conversation_id: object) -> None:
        """The conversation the remote side named (A2A's ``contextId``), when none was given."""
        if self.conversation_id is None and not self._ended:
            cleaned = clean_id(conversation_id)
            if cleaned is not None:
                self.conversation_id = cleaned
                self._span.set_attribute(A.CONVERSATION_ID, cleaned)

    def fail(self, error_type: object, description: object = None) -> None:
        """The remote side answered with a failure, nothing raised here (an A2A task that
        ended failed or rejected, an HTTP error status the caller does not raise for): ERROR
        status, ``error.type`` (a short, low-cardinality name: ``TASK_STATE_FAILED``, ``503``)
        and the ``exception`` event a raised error would have had. ``description``: the
        status's reason (default: the type); never the remote side's content unasked. Once:
        a stream telling the same failure twice (a status update, then the task) is one."""
        if self._ended or self._failed:
            return
        self._failed = True
        kind = _text(error_type) or A.ERROR_TYPE_OTHER
        try:
            mark_error(self._span, kind, _text(description))
            report_failure(self._span, kind, None, _clock.now_ns())
        except Exception:
            report("remote agent failure")

    def held(self, state: object) -> None:
        """The call returned with its remote task still at work, in ``state`` (its name:
        ``TASK_STATE_WORKING``): an ``agent_otel.held`` event, now, tells where its span's
        time past the response went; the span stays open until the task's end is learned."""
        if not self._ended:
            attributes = {A.EVENT_HELD_STATE: _text(state) or A.ERROR_TYPE_OTHER}
            self._span.add_event(A.EVENT_HELD, attributes, _clock.now_ns())

    def unfinished(self, reason: str | None = None) -> None:
        """End the span of a call whose remote task's end was never learned (a held call the
        process shut down with, ``reason`` ``shutdown``; one dropped past the limit, or
        followed on by a newer call on its task): ``agent_otel.incomplete``, and
        ``agent_otel.end_reason`` when ``reason`` is given; neither failed nor a success."""
        if self._ended:
            return
        said = _text(reason)
        self._span.set_attributes(
            {A.INCOMPLETE: True} if said is None else {A.INCOMPLETE: True, A.END_REASON: said}
        )
        self.end()

    def end(self, error: BaseException | None = None) -> None:
        """End the span once (later calls do nothing); ``error``: the call raised it."""
        if self._ended:
            return
        self._ended = True
        now = _clock.now_ns()
        with ending(self._span, now, "remote agent end"):
            if error is not None and not isinstance(error, GeneratorExit):
                fail_span(self._span, error, error_type_of(error), now)

    # --- the block form (``with`` or ``async with``): the span current inside, ended on the way
    # out ------------------------------------------------------------------------------------
    def __enter__(self) -> RemoteAgentCall:
        self._tokens.append(otel_context.attach(self.context))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._tokens:
            detach(self._tokens.pop())
        self.end(error)


def w3c_headers(context: Context) -> dict[str, str]:
    """The W3C headers naming ``context``'s span, with its own baggage (never the run's ids,
    which are not baggage): ``traceparent``, ``tracestate``, ``baggage``. Never raises."""
    carrier: dict[str, str] = {}
    try:
        TRACE.inject(carrier, context=context)
        BAGGAGE.inject(carrier, context=context)
    except Exception:
        report("remote agent headers")
    return carrier


def remote_agent(
    name: str | None = None, url: str | None = None, **options: Unpack[CallOptions]
) -> RemoteAgentCall:
    """A call of the remote agent ``name`` at ``url``, as a ``with`` or ``async with`` block::

        async with remote_agent("weather", url, tracer_provider=provider) as call:
            response = await http.post(url, json=request, headers=call.headers)
            call.set_conversation_id(response.json().get("conversation_id"))

    The block is an ``invoke_agent`` CLIENT span under the current one (in a tool body run
    under ``agent_contract.scope.tool_scope``: that tool's span), current inside the block;
    ``call.headers`` carry it to the remote side, where ``continue_trace()`` (or an
    instrumented agent's ``otel_context``) makes the remote run its child. An exception
    leaving the block is recorded on the span and passes through unchanged. ``provider`` is
    ``gen_ai.provider.name`` when the caller knows it (default ``unknown``); ``scrub`` as for
    a run (credentials in names are scrubbed, counted on ``meter_provider``). The options are
    :class:`CallOptions`.
    """
    _check_options("remote_agent", options, frozenset({"name", "url"}))  # parent= too:
    # the call starts where the block is (RemoteAgentCall(parent=...) starts elsewhere)
    return RemoteAgentCall(name, url, **options)


def address_of(url: object) -> Mapping[str, AttributeValue]:
    """``server.address`` and ``server.port`` of an agent's URL (none when it names no host).

    A URL without a scheme (``host:port``, as gRPC targets are written) is read as one. The
    port is the URL's, else the scheme's (80, 443); never the path, query or credentials.
    """
    url = text_of(url)
    if not url:
        return {}
    try:
        parts = urlsplit(url if "//" in url else f"//{url}")
        host = parts.hostname
        port = parts.port
    except ValueError:  # a port out of range, an unbalanced IPv6 bracket
        return {}
    if not host:
        return {}
    if port is None:
        port = _DEFAULT_PORTS.get(parts.scheme.lower())
    out: dict[str, AttributeValue] = {A.SERVER_ADDRESS: host}
    if port is not None:
        out[A.SERVER_PORT] = port
    return out


def _text(value: object) -> str | None:
    return text_of(value) or None


def _span_name(name: str | None) -> str:
    return f"{A.OP_INVOKE_AGENT} {name}" if name else A.OP_INVOKE_AGENT


def _described(
    name: object, url: object, description: object, version: object
) -> dict[str, AttributeValue]:
    """The agent's attributes: name, description, version and address, those given."""
    out: dict[str, AttributeValue] = {}
    for key, value in (
        (A.AGENT_NAME, name),
        (A.AGENT_DESCRIPTION, description),
        (A.AGENT_VERSION, version),
    ):
        text = _text(value)
        if text is not None:
            out[key] = text
    out.update(address_of(url))
    return out

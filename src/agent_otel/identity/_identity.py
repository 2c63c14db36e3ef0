"""Who a run is for: session, user and conversation ids, given once, on every span below.

The ids live in the OTel context under a private key, so every run started below (a sub-agent,
an instrumented agent called from a tool) inherits them, and they travel to another process in
the carrier of :func:`agent_otel.inject_context` as W3C baggage entries. They are never put in
the context's own baggage: global propagators would then send a user id with every outgoing
HTTP request. Span attributes only, never metric attributes (cardinality).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._block import Block, block, detach
from agent_otel._plain import id_text, shown, text_of
from agent_otel.recording._encodable import clean_text
from agent_otel.recording._hints import keyworded_but, keywords
from agent_otel.scrubbing._scrubber import DEFAULT, Scrub

_KEY = otel_context.create_key("agent_otel.run_identity")
_FIELDS = (
    ("session_id", A.SESSION_ID),
    ("user_id", A.USER_ID),
    ("conversation_id", A.CONVERSATION_ID),
)
MAX_ID_LENGTH = 256
"""Longer ids are cut to this many characters (they are repeated on every span), scrubbed by
the default scrubber first: a JWT session id cut before its signature would keep its header
and claims where no detector finds them any more."""
_BEFORE_CUT = Scrub(DEFAULT)


@keyworded_but("over")  # per run
@dataclass(frozen=True, slots=True)
class RunIdentity:
    """The ids of a run; None is "not given" (the enclosing run's id, if any, applies)."""

    session_id: str | None = None
    user_id: str | None = None
    conversation_id: str | None = None

    def over(self, outer: RunIdentity | None) -> RunIdentity:
        """These ids, with ``outer``'s filling the ones not given here."""
        if outer is None:
            return self
        return replace(
            outer, **{name: v for name, _ in _FIELDS if (v := getattr(self, name)) is not None}
        )

    def attributes(self) -> dict[str, AttributeValue]:
        """The span attributes of the ids that are given."""
        if not self:  # most runs: none
            return {}
        return {key: v for name, key in _FIELDS if (v := getattr(self, name)) is not None}

    def __bool__(self) -> bool:
        return (
            self.session_id is not None
            or self.user_id is not None
            or self.conversation_id is not None
        )


def clean_id(value: object) -> str | None:
    """An id as recorded: a non-empty string (an int or UUID as its text), cut to
    :data:`MAX_ID_LENGTH`; else None."""
    if value is None:  # most ids: not given
        return None
    if type(value) is not str:  # a str subclass as the str it is, an int or UUID as its text
        value = text_of(id_text(value))
    if not value:
        return None
    if len(value) > MAX_ID_LENGTH:  # scrubbed before the cut, which would leave a piece of a
        value = _BEFORE_CUT.prefix(value, MAX_ID_LENGTH)  # secret it split unrecognised
    return value[:MAX_ID_LENGTH]


_NO_IDS = RunIdentity()


def make_identity(
    session_id: object = None, user_id: object = None, conversation_id: object = None
) -> RunIdentity:
    """The ids a run is given, cleaned; most runs are given none, and share one (made once:
    the public constructor checks its keywords)."""
    if session_id is None and user_id is None and conversation_id is None:
        return _NO_IDS
    return RunIdentity(clean_id(session_id), clean_id(user_id), clean_id(conversation_id))


def identity_of(context: Context | None = None) -> RunIdentity | None:
    """The ids set in ``context`` (default: the current one), None when none are."""
    value = otel_context.get_value(_KEY, context)
    return value if isinstance(value, RunIdentity) else None


def with_identity(identity: RunIdentity, context: Context | None = None) -> Context:
    """``context`` (default: current) with ``identity`` over the ids it already carries."""
    merged = identity.over(identity_of(context))
    return otel_context.set_value(_KEY, merged, context)


@keywords({})  # a misspelt id (session=) told with the one meant
def run_identity(
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    conversation_id: str | None = None,
) -> Block[RunIdentity]:
    """Every run started inside the block (and its sub-agent runs) carries these ids.

    For agents traced by :func:`agent_otel.instrument`, whose calls take no tracing options;
    ``otel_wrapper(session_id=..., user_id=..., conversation_id=...)`` does the same for one
    wrapper. Ids given by an inner block or run win over outer ones, field by field. An id is
    a ``str``, an ``int`` or a ``uuid.UUID`` (recorded as its text), as the options take it:
    anything else raises ``TypeError`` here, not a block whose runs silently carry no id.
    ``with`` and ``async with`` alike.
    """
    given = {"session_id": session_id, "user_id": user_id, "conversation_id": conversation_id}
    for name, value in given.items():
        if value is not None and not issubclass(type(id_text(value)), str):
            raise TypeError(
                f"run_identity({name}=...) takes a str, an int, a UUID or None, not {shown(value)}"
            )
    return _identity_block(make_identity(session_id, user_id, conversation_id))


@block
def _identity_block(identity: RunIdentity) -> Iterator[RunIdentity]:
    token = otel_context.attach(with_identity(identity))
    try:
        yield identity_of() or RunIdentity()
    finally:
        detach(token)


def identity_to_baggage(context: Context | None) -> Context:
    """``context`` with its run ids as baggage entries, for a carrier only. The ids leave the
    process there: each is scrubbed by the default scrubber first (a session id that is a
    bearer token or JWT goes as its marker, as the spans record it)."""
    identity = identity_of(context)
    if identity is None:
        return context if context is not None else otel_context.get_current()
    out = context
    for key, value in identity.attributes().items():
        if isinstance(value, str):
            value = DEFAULT.text(value)
        if isinstance(value, str):  # W3C baggage is UTF-8: a lone surrogate as ?, as on spans
            value = clean_text(value)
        out = baggage.set_baggage(key, value, out)
    return out if out is not None else otel_context.get_current()


def identity_from_baggage(context: Context) -> Context:
    """A context extracted from a carrier, with run-id baggage entries moved to the run ids."""
    entries: Mapping[str, object] = baggage.get_all(context)
    ids = {name: entries.get(key) for name, key in _FIELDS}
    identity = make_identity(**ids)
    if not identity:
        return context
    for _, key in _FIELDS:
        context = baggage.remove_baggage(key, context)
    return with_identity(identity, context)

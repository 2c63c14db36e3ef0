"""Conversation ids a run's source knows: ``ConversationCallStart`` and the frameworks' ids.

A request can continue a conversation the provider keeps (the Responses API's
``conversation``). The GenAI conventions put that id on the spans as
``gen_ai.conversation.id`` ("when instrumenting GenAI client libraries that maintain
conversation on the backend side"). A ``previous_response_id`` is no such id: it names the
turn before, a new one every turn, so a conversation's turns would share none. The run's span
starts before the source's code runs, so an SDK source tells it by an event: it starts such a
call with ``ConversationCallStart``, an ``LLMCallStart`` to any reader (``collect()`` starts
the call), whose ``conversation_id`` agent-otel's recorder puts on the run (unless the caller
gave the run one), on the call's span and on every span of the run started after it. A
subclass of a contract event, as ``CallUsage`` is, so the contract keeps its eleven kinds.

A framework adapter knows the conversation its framework keeps the run in ("when client
framework being instrumented manages conversation history") as it starts, and names it to
``agent_contract.scope.framework_started``; :func:`id_of` and :func:`thread_id` read it.
"""

from __future__ import annotations

from typing import Any

from agent_contract.events import LLMCallStart
from agent_contract.sources import _history
from agent_contract.sources._endpoint import EndpointCallStart

__all__ = [
    "ConversationCallStart", "id_of", "in_conversation", "requested_conversation", "thread_id",
]  # fmt: skip


class ConversationCallStart(EndpointCallStart):
    """A model request that continues the conversation ``conversation_id``; its ``messages``
    read when first read, as the start it was made from had them (``_history``), and the
    server it goes to, as an ``EndpointCallStart`` it was made from named it."""

    __slots__ = ("conversation_id",)
    conversation_id: str | None


_PLAIN_STARTS = (LLMCallStart, _history.LLMCallStart, EndpointCallStart)
"""The starts a conversation's is made from (an ``EndpointCallStart``'s server kept)."""


def in_conversation(start: LLMCallStart, conversation_id: Any) -> LLMCallStart:
    """``start`` as the start of a call continuing ``conversation_id`` (a text; the start as
    it is when there is none, or when it is another kind of start: a side call's); the
    server an ``EndpointCallStart`` names stays. Its messages are not read here: a request
    read only when first read stays so."""
    if not isinstance(conversation_id, str) or not conversation_id:
        return start
    if type(start) not in _PLAIN_STARTS:
        return start
    out = _history.remade(
        start,
        ConversationCallStart,
        server_address=getattr(start, "server_address", None),
        server_port=getattr(start, "server_port", None),
    )
    out.conversation_id = conversation_id
    return out


def requested_conversation(params: dict[str, Any]) -> Any:
    """The conversation a Responses request's ``params`` continue: its ``conversation`` (an id,
    or an object with its ``id``); not its ``previous_response_id`` (the turn before)."""
    conversation = params.get("conversation")
    if isinstance(conversation, dict):
        return conversation.get("id")
    return getattr(conversation, "id", conversation)


def id_of(owner: Any, name: str = "session_id") -> Any:
    """The conversation id a framework's object keeps as ``name`` (an Agents SDK session's, a
    Strands session manager's or a LlamaIndex memory's ``session_id``, a pydantic-ai run's
    ``conversation_id``); None when it has none yet (a property that raises, as the Agents
    SDK's conversations session does before its first request)."""
    try:
        return getattr(owner, name, None)
    except Exception:
        return None


def thread_id(config: Any) -> Any:
    """The thread a LangChain ``config`` runs in (``config["configurable"]["thread_id"]``, the
    id a LangGraph checkpointer keeps the conversation under), None when it names none."""
    configurable = config.get("configurable") if isinstance(config, dict) else None
    return configurable.get("thread_id") if isinstance(configurable, dict) else None

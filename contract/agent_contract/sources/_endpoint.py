"""The server a model request goes to: ``EndpointCallStart`` and the hosts of the SDKs' clients.

The GenAI conventions recommend ``server.address`` and ``server.port`` on a chat span and on
its ``gen_ai.client.*`` metrics (sampling-relevant: known when the span starts), as the
official instrumentations set them from the client's base URL. An SDK source knows its
client, so it starts the call with an ``EndpointCallStart``, an ``LLMCallStart`` to any reader,
whose ``server_address`` and ``server_port`` agent-otel's recorder puts on the call's span
(only there: not on the run, its steps or tools). A subclass of a contract event, as
``CallUsage`` is, so the contract keeps its eleven kinds; ``ConversationCallStart`` is one.

Only the host and the port are taken from a URL, never the URL itself: a base URL may carry a
user and password, or a key in its query, and neither is a host.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent_contract.events import LLMCallStart
from agent_contract.sources import _history

__all__ = [
    "EndpointCallStart", "address_of", "at_endpoint", "base_url_of", "client_endpoint",
    "held_endpoint", "sdk_default",
]  # fmt: skip

_DEFAULT_PORTS = {"https": 443, "http": 80, "wss": 443, "ws": 80}

Endpoint = tuple[str, int | None]
"""A server's host (lowercase, an IPv6 address without its brackets) and port."""


@dataclass(slots=True)
class EndpointCallStart(_history.LLMCallStart):
    """A model request sent to the server ``server_address`` (a host name or IP address) on
    ``server_port``; its ``messages`` read when first read, as the start it was made from had
    them (``_history``)."""

    server_address: str | None = None
    server_port: int | None = None


def address_of(url: Any) -> Endpoint | None:
    """The host and port ``url`` names (an ``httpx.URL``, a text): the port given, else the
    scheme's (443 for ``https``); None when it names no host. The user, password, path and
    query are never read out."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname  # lowercase; no userinfo, no brackets
        if not host:
            return None
        port = parts.port
    except Exception:  # a value whose str fails, a port out of range or not a number
        return None
    return host, port if port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())


def base_url_of(owner: Any) -> Endpoint | None:
    """The host and port of ``owner``'s ``base_url``: an OpenAI or Anthropic SDK client's
    (sync or async; Azure's client sets it to its deployment's endpoint), a pydantic-ai
    model's; None when it has none (a property that raises included)."""
    try:
        url = owner.base_url
    except Exception:
        return None
    return None if url is None else address_of(url)


def client_endpoint(client: Any) -> Endpoint | None:
    """The host and port an SDK ``client`` sends to: its ``base_url`` (``base_url_of``), else
    a botocore client's ``meta.endpoint_url`` (Bedrock's, by its region or as given), else a
    google-genai ``Client``'s base URL (the Gemini API's, or the Vertex AI endpoint of its
    location, as the client resolved it when made)."""
    found = base_url_of(client)
    if found is not None or client is None:
        return found
    try:
        url = client.meta.endpoint_url
    except Exception:
        try:
            url = client._api_client._http_options.base_url
        except Exception:
            return None
    return address_of(url) if isinstance(url, str) else None


def held_endpoint(
    owner: Any, clients: Iterable[str] = (), urls: Iterable[str] = ()
) -> Endpoint | None:
    """The server a framework's model object ``owner`` sends to: that of the first SDK client
    among its attributes ``clients`` (``client_endpoint``), else of the first URL among its
    attributes ``urls`` (a text or ``httpx.URL``); None when it has neither. A property that
    raises costs only the server."""
    try:
        for name in clients:
            found = client_endpoint(getattr(owner, name, None))
            if found is not None:
                return found
        for name in urls:
            url = getattr(owner, name, None)
            if url is not None and not isinstance(url, bool) and str(url):
                return address_of(url)
    except Exception:
        return None
    return None


_SDK_BASES = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
}
"""The base URL an SDK's client takes when given none: its environment variable's, else the
provider's API (the SDK's own rule, as it makes a client)."""


def sdk_default(sdk: str) -> Endpoint | None:
    """The server a client of ``sdk`` (``openai``, ``anthropic``) made with no base URL sends
    to, for a framework that makes its client only as a request goes out."""
    variable, url = _SDK_BASES[sdk]
    return address_of(os.environ.get(variable) or url)


def at_endpoint(start: LLMCallStart, endpoint: Endpoint | None) -> LLMCallStart:
    """``start`` as the start of a call sent to ``endpoint`` (the start as it is when there is
    none, or when it is another kind of start: a side call's). Its messages are not read here:
    a request read only when first read stays so."""
    if endpoint is None:
        return start
    if type(start) is not LLMCallStart and type(start) is not _history.LLMCallStart:
        return start
    return _history.remade(
        start, EndpointCallStart, server_address=endpoint[0], server_port=endpoint[1]
    )

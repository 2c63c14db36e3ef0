"""The settings a chat span naming its server starts with (an ``EndpointCallStart``).

``server.address`` and ``server.port`` are the call's, like its model and provider: part of
the memoised start of its span (``LLMCall``), so its metrics carry them too and samplers see
them. A call naming a server is started with a copy of the run's settings whose ``endpoint``
holds them and whose ``starts`` are that server's, kept per wrapper; the agent's plain calls,
started with the run's own settings, pay nothing for it (figure 2).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A

from ._settings import RunSettings
from ._span import remember

MAX_ENDPOINTS = 16
"""The servers one run keeps settings for (a run calling more makes them again)."""

_PORTS = range(1, 65536)


def server_attributes(address: Any, port: Any) -> dict[str, AttributeValue] | None:
    """``server.address`` (an exact, non-empty ``str``) and ``server.port`` (an exact ``int``
    in range, else left out); None without an address."""
    if type(address) is not str or not address:
        return None
    if type(port) is int and port in _PORTS:
        return {A.SERVER_ADDRESS: address, A.SERVER_PORT: port}
    return {A.SERVER_ADDRESS: address}


def endpoint_settings(
    settings: RunSettings, address: Any, port: Any, memo: dict[Any, Any]
) -> RunSettings | None:
    """``settings`` for a call sent to ``address``:``port`` (None when it names no server),
    remembered in the run's ``memo`` for as long as the run's settings are ``settings``."""
    endpoint = server_attributes(address, port)
    if endpoint is None:
        return None
    key = (A.SERVER_ADDRESS, *endpoint.values())  # exact str and int: no hostile __eq__
    known = memo.get(key)
    if known is not None and known[0] is settings:
        return known[1]  # type: ignore[no-any-return]
    starts = settings.starts.get(key)
    if type(starts) is not dict:
        starts = {}
        remember(settings.starts, key, starts)
    at = replace(settings, endpoint=endpoint, starts=starts)
    if len(memo) >= MAX_ENDPOINTS:
        memo.clear()
    memo[key] = (settings, at)
    return at

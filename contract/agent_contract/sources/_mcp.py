"""What an MCP client session tells of its server, for ``agent_contract.scope.McpServer``.

Read by shape from the clients the frameworks hold: the MCP SDK's ``ClientSession`` (2.x:
``server_info``, ``protocol_version``), fastmcp's ``Client`` (``initialize_result``,
``protocol_version``, its transport's ``get_session_id()`` over streamable HTTP) and what
holds the MCP SDK 1.x's ``InitializeResult`` (AutoGen's ``McpWorkbench``: its
``initialize_result``, whose fields are named as on the wire, ``serverInfo`` and
``protocolVersion``). A property that raises (a session not connected yet) reads as unknown.
"""

from __future__ import annotations

from typing import Any

from agent_contract.scope import McpServer

__all__ = ["server_of"]


def server_of(session: Any, name: Any = None) -> McpServer:
    """The server ``session`` is connected to; ``name``: the framework's own name for it,
    used when the server's own (its ``serverInfo``) is unknown."""
    initialized = _read(session, "initialize_result")
    info = _either(session, "server_info", "serverInfo") or _either(
        initialized, "server_info", "serverInfo"
    )
    transport_id = _read(_read(session, "transport"), "get_session_id")
    version = _text(_either(session, "protocol_version", "protocolVersion")) or _text(
        _either(initialized, "protocol_version", "protocolVersion")
    )
    return McpServer(
        name=_text(_read(info, "name")) or _text(name),
        session_id=_text(transport_id() if callable(transport_id) else None),
        protocol_version=version,
    )


def _either(value: Any, snake: str, wire: str) -> Any:
    """``value``'s field by the MCP SDK 2.x's name, else by 1.x's (the wire's)."""
    return _read(value, snake) or _read(value, wire)


def _read(value: Any, attribute: str) -> Any:
    if value is None:
        return None
    try:
        return getattr(value, attribute, None)
    except Exception:  # a property that raises until the session is initialised
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

"""A history message's fields as the SDK sources' request builders read them: plain values.

``response_input`` and ``anthropic_input`` compare a message's role, test its content for
emptiness and iterate its parts and tool calls. The agent's history may hold subclasses of
the built-ins (a ``str`` enum role, a typed list, a ``str`` subclass whose own methods raise);
each is read as the plain value it is, with the base type's own methods, as every other read
of the agent's values is (docs/hostile.md), so none of its own code runs and the request
carries plain values. Content of a type the contract does not give is handed on as it is:
the SDK's to send or refuse.
"""

from __future__ import annotations

from typing import Any

from agent_contract.events import Message

__all__ = ["fields", "is_empty"]


def fields(message: Message) -> tuple[Any, Any, list[Any]]:
    """``message``'s role, content and tool calls (a list, empty for none), as plain values."""
    role: Any = message.role
    content: Any = message.content
    calls: Any = message.tool_calls
    if isinstance(role, str):
        role = str.__str__(role)
    if isinstance(content, str):
        content = str.__str__(content)
    elif isinstance(content, list) and type(content) is not list:
        content = list(list.__iter__(content))
    if calls is None:
        return role, content, []
    if isinstance(calls, list):
        return role, content, list(list.__iter__(calls))
    if isinstance(calls, tuple):
        return role, content, list(tuple.__iter__(calls))
    return role, content, list(calls)


def is_empty(content: Any) -> bool:
    """Whether ``content`` (as ``fields`` gives it) is none: None, ``""`` or ``[]``; content of
    another type is never read here (its own ``__len__`` may raise)."""
    return content is None or (type(content) in (str, list) and not content)

"""A failed tool's result that also says what kind of failure it was.

The contract's ``ToolResult`` says only that a call failed (``is_error``). A framework often
knows more: the exception class its handler turned into text, or its own outcome (a retry the
model is asked for). An adapter yields this subclass, still named ``ToolResult`` (the
middleware reads events by class name, and ``collect()`` by ``isinstance``), with
``error_type`` set, so the tool span's ``error.type`` names that class instead of the generic
``tool_error``. ``error_type`` must be low-cardinality: a class name or a fixed word, never
the error's text. Its ``Error`` says the same of an error a framework reports without a
call: one whose message is content (below).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agent_contract import events

CANCELLED = asyncio.CancelledError.__name__
"""The failure a cancel is named by: a cancelled task's class, as the middleware names it."""

__all__ = ["Error", "ToolResult", "cancelled_run", "error_name", "failed_result"]


@dataclass(slots=True)
class ToolResult(events.ToolResult):
    """``events.ToolResult`` with ``error_type``: the class of a failed call's error."""

    error_type: str | None = None


@dataclass(slots=True)
class Error(events.Error):
    """``events.Error`` whose ``message`` is content: a prompt the framework sends the model
    about its answer (a retry asking for another, which often quotes the answer). Named
    ``Error``, as the middleware reads it, which records the message only where content goes on
    spans, as it does a tool's failed result; with capture off the failure is its type alone."""

    message_is_content: bool = True


def failed_result(call_id: str, content: Any, name: str | None, error_type: str) -> ToolResult:
    """A failed call's result, ``is_error`` set, ``error_type`` naming the failure."""
    return ToolResult(
        tool_call_id=call_id, content=content, name=name, is_error=True, error_type=error_type
    )


def cancelled_run(how: str) -> events.Error:
    """The framework says its own cancel stopped the run (``agent.cancel()``, a cancel of the
    run by its id): a fatal ``Error`` of type ``CancelledError``, which the middleware ends the
    run with as it ends a cancelled task (``end_reason=cancelled``). ``how`` names the cancel,
    a fixed text: never the message a framework hands the model in its place."""
    return events.Error(message=f"run cancelled ({how})", error_type=CANCELLED, fatal=True)


def error_name(error: object) -> str:
    """An exception's class name, as ``error.type`` spells an exception (no module path);
    ``Exception`` for a class that will not say its name as a string (a metaclass whose
    attributes raise): the adapter reads it inside the framework's own handling of the
    failure, where raising would change what the agent does."""
    try:
        name = type(error).__qualname__
    except Exception:
        return "Exception"
    return name if type(name) is str and name else "Exception"

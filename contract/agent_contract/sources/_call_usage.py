"""``CallUsage``: a ``Usage`` naming the LLM call it belongs to.

The contract routes a ``Usage`` to the open LLM call (the newest, when several are), which is
right for a stream telling one call at a time. A framework whose agents work at once (CrewAI's
``async_execution`` tasks) has calls open together, and a call that ends while a newer one is
open would give that one its tokens. Its adapter tells the counts as a ``CallUsage``, the
call's ``LLMCallStart.call_id`` with them: it is a ``Usage`` to any reader (``collect()``
sums it as one), and agent-otel's recorder counts it on the call it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_contract.events import Usage

__all__ = ["CallUsage"]


@dataclass(slots=True)
class CallUsage(Usage):
    """Token counts of the LLM call whose ``call_id`` they carry."""

    call_id: str | None = None

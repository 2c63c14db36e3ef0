"""A model request an adapter watches beside the run's stream (a side request, an output
model's): its stream's items pass through unchanged, and its call's events are told whole
once the request ended, as the call the run's stream never shows.

Agno's output model and Strands' side requests stream through the framework's model, not
through the events the adapter reads; :func:`watched` wraps such a stream and puts the call's
events in the adapter's ``told`` queue: its start, what the adapter reads of each item, then
the end its ``ended`` makes when the stream ran out, a bare end when the caller closed it
early, or the failure (``Error`` of its class) and an end when it raised (raised on as it was).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from agent_contract.events import AgentEvent, Error, LLMCallEnd, LLMCallStart
from agent_contract.sources._failure import error_name

__all__ = ["failed_call", "watched"]


async def watched(
    items: AsyncIterator[Any],
    start: LLMCallStart,
    told: deque[AgentEvent],
    read: Callable[[Any], Iterable[AgentEvent]],
    ended: Callable[[], Iterable[AgentEvent]],
) -> AsyncIterator[Any]:
    """Every item of ``items``, unchanged; the call's events go to ``told`` (module doc)."""
    out: list[AgentEvent] = [start]
    try:
        async for item in items:
            out += read(item)
            yield item
    except GeneratorExit:  # closed early: cut short
        out.append(LLMCallEnd())
        raise
    except BaseException as error:
        out += failed_call(error)
        raise
    else:
        out += ended()
    finally:
        told.extend(out)


def failed_call(error: BaseException) -> tuple[AgentEvent, ...]:
    """The end of a call its request's ``error`` ended: the ``Error`` of its class, the end."""
    kind = error_name(error)
    return (Error(message=str(error) or kind, error_type=kind), LLMCallEnd())

"""CrewAI's kickoffs on an instrumented crew or agent: each input one whole run.

A ``Crew`` or ``Agent`` has no entry point of the contracts, only CrewAI's kickoffs;
``instrument()`` of one traced nothing (it refused it). Its drop-in's ``kickoff`` and
``kickoff_async`` now run CrewAI's own ``kickoff`` through the adapter
(``crewai_events``, which runs it on a thread of its own, as ``kickoff_async`` does) under the
drop-in's options: one run, with its steps, model and tool calls and tokens, the kickoff's
result returned and its exception raised as the same object. ``kickoff_for_each`` and
``kickoff_for_each_async`` are CrewAI's own: they run each input on a ``copy()`` of the crew,
and a drop-in's copy is a drop-in with the same options, so each input is a run of its own
(those ``kickoff_for_each_async`` runs at once each in its own context, none crossing).
``akickoff`` (CrewAI's native async run; so ``akickoff_for_each`` too) runs through
``crewai_async_events``: a task on the caller's own loop, so the async clients it awaits stay
on the loop they were made on. A streaming crew (``stream=True``, whose kickoff returns before
it runs) and a resumed one (``from_checkpoint``) pass through untraced, told once each.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import threading
from collections.abc import Callable
from typing import Any

from agent_otel._guard import report
from agent_otel.recording._hints import hint_untraced
from agent_otel.recording._wrapper import traced

from ._adapted import adapter_of
from ._base import Bound, Lookup
from ._params import agent_settings

__all__ = ["COPY", "KICKOFFS", "kickoff_entry", "kicks_off"]

COPY = "copy"
KICKOFFS = ("kickoff", "kickoff_async", "akickoff", COPY)
"""A CrewAI drop-in's methods: the kickoffs every other one runs through, and ``copy``."""
_SEAM, _SEAM_NAMES = "crewai.events.stream_context", ("add_stream_sink", "reset_stream_sinks")
"""Where the adapter listens (it raises without it: here the kickoff runs untraced instead)."""
_FIX = "call kickoff() or await kickoff_async(), each traced as a run (docs/instrument.md)"


def kicks_off(cls: type) -> bool:
    """Whether an agent of class ``cls`` is CrewAI's (a ``Crew``, an ``Agent``) with a
    ``kickoff``: its drop-in's kickoffs are traced here."""
    return adapter_of(cls).startswith("crewai_events") and callable(getattr(cls, "kickoff", None))


class _Runner:
    """The crew as the adapter runs it: its own ``kickoff`` (not the drop-in's) and its role."""

    def __init__(self, kickoff: Callable[..., Any], akickoff: object, role: object) -> None:
        self.kickoff = kickoff
        self.akickoff = akickoff
        self.role = role


def _plain_kickoff(agent: Any) -> _Runner:
    """``agent``'s class's own ``kickoff`` and ``akickoff``, bound to it (the drop-in class's
    base's)."""
    plain: Any = super(type(agent), agent)
    return _Runner(plain.kickoff, getattr(plain, "akickoff", None), getattr(agent, "role", None))


def _untraced(agent: Any, name: str, kwargs: dict[str, Any]) -> bool:
    """A run the adapter cannot read whole (a streaming kickoff, a resumed one), told."""
    if getattr(agent, "stream", False) is True:
        why = "streams (stream=True: its kickoff returns before the crew runs)"
    elif kwargs.get("from_checkpoint") is not None:
        why = "resumes from a checkpoint"
    else:
        return False
    hint_untraced(agent, name, why, _FIX)
    return True


async def _drained(
    agent: Any, settings: Any, args: Any, kwargs: Any, *, native: bool = False
) -> Any:
    """The kickoff of ``agent`` run once through the adapter, recorded; its result.
    ``native``: CrewAI's ``akickoff``, a task on this loop, instead of ``kickoff`` on a thread."""
    from agent_contract.sources.crewai_stream import crewai_async_events, crewai_events

    kept: list[Any] = []
    adapter = crewai_async_events if native else crewai_events
    events = adapter(_plain_kickoff(agent), *args, sink=kept.append, **kwargs)
    async for _ in traced(events, settings):
        pass
    return kept[-1]  # the kickoff's result, last in the sink


def _blocking(agent: Any, settings: Any, args: Any, kwargs: Any) -> Any:
    """:func:`_drained` from a plain call: on the caller's thread when no loop runs there (so
    a Ctrl-C reaches the run, which ends cancelled), else on a thread of its own with its own
    loop, in a copy of the caller's context."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_drained(agent, settings, args, kwargs))
    outcome: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(_drained(agent, settings, args, kwargs)))
        except BaseException as error:  # the kickoff's own, as the same object
            failed.append(error)

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(run,), name="crewai-kickoff")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return outcome[0]


def _settings(agent: Any, lookup: Lookup) -> tuple[Bound, Any]:
    """The kickoff as CrewAI has it and the run's settings (None: the kickoff runs as it is,
    not instrumented, or a CrewAI without the seam the adapter listens at)."""
    original, options = lookup(agent)
    if options is None:
        return original, None
    try:
        seam = importlib.import_module(_SEAM)
        if not all(callable(getattr(seam, name, None)) for name in _SEAM_NAMES):
            hint_untraced(agent, "kickoff", f"has a CrewAI without {_SEAM}", "see docs/adapters.md")
            return original, None
        return original, agent_settings(options, agent, {})
    except Exception:
        report("instrument kickoff")
        return original, None


def kickoff_entry(name: str, lookup: Lookup) -> Bound:
    """The drop-in's ``name`` (of :data:`KICKOFFS`)."""
    if name == COPY:

        def copy(self: Any, *args: Any, **kwargs: Any) -> Any:
            from ._instrument import instrument_copy  # (it imports this module)

            return instrument_copy(self, lookup(self)[1], args, kwargs)

        return copy

    if name == "akickoff":

        async def akickoff(self: Any, *args: Any, **kwargs: Any) -> Any:
            original, settings = _settings(self, lookup)
            if settings is None or _untraced(self, name, kwargs):
                return await original(*args, **kwargs)
            return await _drained(self, settings, args, kwargs, native=True)

        return akickoff

    if name == "kickoff_async":

        async def kickoff_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            original, settings = _settings(self, lookup)
            if settings is None or _untraced(self, name, kwargs):
                return await original(*args, **kwargs)
            return await _drained(self, settings, args, kwargs)

        return kickoff_async

    def kickoff(self: Any, *args: Any, **kwargs: Any) -> Any:
        original, settings = _settings(self, lookup)
        if settings is None or _untraced(self, name, kwargs):
            return original(*args, **kwargs)
        return _blocking(self, settings, args, kwargs)

    return kickoff

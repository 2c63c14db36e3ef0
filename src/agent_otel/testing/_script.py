"""Running a scripted stream of events through a wrapper, the way most tests of a run start."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from agent_otel._plain import a_kind

from ._telemetry import InMemoryTelemetry

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from agent_otel.recording._options import Options


async def _replay(events: Iterable[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


async def run_script(
    telemetry: InMemoryTelemetry,
    events: Iterable[Any] | AsyncIterable[Any],
    **options: Unpack[Options],
) -> list[Any]:
    """Stream ``events`` through ``telemetry.wrapper(**options)``; the events the consumer got.

    ``events`` is a list of events (replayed by a plain async generator) or an agent's own
    stream. Every event must come out as the very object that went in, in order: anything
    else fails with ``AssertionError``. An exception the stream raises comes out unchanged.
    """
    if not callable(getattr(type(telemetry), "wrapper", None)):  # failed inside, on .wrapper
        raise TypeError(
            f"run_script() takes the InMemoryTelemetry first (the otel_telemetry fixture, or "
            f"InMemoryTelemetry()), not {a_kind(telemetry)}: run_script(telemetry, events)"
        )
    if not isinstance(events, (AsyncIterable, Iterable)) or isinstance(events, (str, bytes)):
        raise TypeError(
            f"run_script(telemetry, events) takes a list of events or an agent's stream "
            f"(agent.stream(messages)), not {a_kind(events)}"
        )
    stream: AsyncIterable[Any]
    if isinstance(events, AsyncIterable):
        script, stream = None, events
    else:
        script = list(events)
        stream = _replay(script)
    received = [event async for event in telemetry.wrapper(**options)(stream.__aiter__())]
    if script is not None:  # raised, not asserted: the check holds under python -O too
        if len(received) != len(script):
            raise AssertionError("the wrapper dropped or added events")
        changed = [i for i, (a, b) in enumerate(zip(received, script, strict=True)) if a is not b]
        if changed:
            raise AssertionError(f"events at {changed} did not come out as the same objects")
    return received

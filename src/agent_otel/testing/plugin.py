"""pytest plugin (``pytest11`` entry point): in-memory telemetry, a fake clock and the internal
errors agent-otel swallowed, as fixtures.

Every pytest run of a project that has agent-otel installed imports this module, so it
imports pytest only: the OTel SDK and agent-otel's recording modules load when a test first
asks for a fixture. ``pytest -p no:agent_otel`` turns the plugin off.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._clock import FakeClock
    from ._telemetry import InMemoryTelemetry


@pytest.fixture
def otel_telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory tracer and meter providers with sequential ids, shut down after the test."""
    from ._telemetry import InMemoryTelemetry

    telemetry = InMemoryTelemetry()
    yield telemetry
    telemetry.shutdown()


@pytest.fixture
def otel_clock() -> Iterator[FakeClock]:
    """A deterministic clock (1 ms per reading) that every run started in the test reads."""
    from ._clock import FakeClock

    with FakeClock().installed() as clock:
        yield clock


class _Sites(logging.Handler):
    """Collects the site of every internal error agent-otel logs (and swallows)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sites: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.msg
        if isinstance(message, str) and message.startswith("agent-otel internal error in "):
            args = record.args
            self.sites.append(str(args[0]) if isinstance(args, tuple) and args else "?")


@pytest.fixture
def otel_internal_errors() -> Iterator[list[str]]:
    """The sites of the internal errors agent-otel swallowed during the test, in order.

    agent-otel never lets its own failure reach the agent: it logs it (loudly once per site,
    then at DEBUG) and carries on. In a test that is a bug hidden; assert this list is empty
    (our own suite does so for every test that does not provoke one on purpose).
    """
    logger = logging.getLogger("agent_otel")
    handler, level = _Sites(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.sites
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

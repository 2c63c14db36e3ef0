"""pytest plugin (``pytest11`` entry point): in-memory telemetry and a fake clock as fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._clock import FakeClock
from ._telemetry import InMemoryTelemetry


@pytest.fixture
def otel_telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory tracer and meter providers with sequential ids, shut down after the test."""
    telemetry = InMemoryTelemetry()
    yield telemetry
    telemetry.shutdown()


@pytest.fixture
def otel_clock() -> Iterator[FakeClock]:
    """A deterministic clock (1 ms per reading) that every run started in the test reads."""
    with FakeClock().installed() as clock:
        yield clock

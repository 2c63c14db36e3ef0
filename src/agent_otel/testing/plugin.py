"""pytest plugin (``pytest11`` entry point): in-memory telemetry and a fake clock as fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._clock import FakeClock
from ._telemetry import Telemetry


@pytest.fixture
def otel_telemetry() -> Iterator[Telemetry]:
    """In-memory tracer and meter providers with sequential ids, shut down after the test."""
    telemetry = Telemetry()
    yield telemetry
    telemetry.shutdown()


@pytest.fixture
def otel_clock() -> Iterator[FakeClock]:
    """A deterministic clock (1 ms per reading) that every run started in the test reads."""
    with FakeClock().installed() as clock:
        yield clock

"""pytest plugin (``pytest11`` entry point): in-memory telemetry and a fake clock as fixtures.

Every pytest run of a project that has agent-otel installed imports this module, so it
imports pytest only: the OTel SDK and agent-otel's recording modules load when a test first
asks for a fixture. ``pytest -p no:agent_otel`` turns the plugin off.
"""

from __future__ import annotations

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

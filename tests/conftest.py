"""Shared fixtures. The in-memory telemetry and fake clock come from agent-otel's own pytest
plugin (``otel_telemetry``, ``otel_clock``), the one users get."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _no_context_detach_failures(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail any test during which OpenTelemetry logs "Failed to detach context"."""
    caplog.set_level(logging.WARNING)
    yield
    failures = [r for r in caplog.records if "Failed to detach context" in r.getMessage()]
    assert not failures, "a context token was detached in the wrong context"

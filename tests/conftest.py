"""Shared fixtures. The in-memory telemetry and fake clock come from agent-otel's own pytest
plugin (``otel_telemetry``, ``otel_clock``), the one users get."""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_context_detach_failures(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail any test during which OpenTelemetry logs "Failed to detach context"."""
    caplog.set_level(logging.WARNING)
    yield
    failures = [r for r in caplog.records if "Failed to detach context" in r.getMessage()]
    assert not failures, "a context token was detached in the wrong context"


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every test module, its items and parameters) lives all session:
    moved out of the collector's sight, so each collection a test asks for (``gc.collect()``
    where it checks that something was freed) or the interpreter runs scans only what the
    tests made since, not the whole suite's objects again."""
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "internal_errors: the test provokes agent-otel internal errors on purpose (a raising "
        "provider, hook or value); without it, any swallowed internal error fails the test",
    )
    config.addinivalue_line(
        "markers",
        "span_outlives_parent(why): a span of ours may end after its parent of ours in this "
        "test, for the reason given (a framework's work that by design outlives its run); "
        "without it, any such span fails the test",
    )


@pytest.fixture(autouse=True)
def _nothing_told_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with nothing told: agent-otel tells a bad setting once per process, so
    a test asserting the warning must not depend on which test ran before it."""
    from agent_otel import _guard

    monkeypatch.setattr(_guard, "_told", set())


@pytest.fixture(autouse=True)
def _no_process_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no ``configure(scrub=...)`` choice in force: it is a process
    default, and a test configuring one must not change what the next test's runs scrub."""
    from agent_otel.scrubbing import _scrubber

    monkeypatch.setattr(_scrubber, "_chosen", [None])


@pytest.fixture(autouse=True)
def _internal_errors_fail_the_test(
    request: pytest.FixtureRequest, otel_internal_errors: list[str]
) -> Iterator[None]:
    """An internal error agent-otel swallowed fails the test that caused it, unless the test
    is marked ``internal_errors`` (it provokes them on purpose)."""
    yield
    if request.node.get_closest_marker("internal_errors") is None:
        assert not otel_internal_errors, (
            f"agent-otel swallowed internal errors in {otel_internal_errors} (the log above "
            "has the traceback); mark the test internal_errors if it provokes them"
        )


@pytest.fixture(scope="session", autouse=True)
def _telemetries_made() -> Iterator[list[Any]]:
    """Every ``InMemoryTelemetry`` made in the session, from its first fixture on (one another
    plugin's fixture makes before this conftest's per-test ones too), for the check below."""
    from agent_otel.testing import _telemetry

    made: list[Any] = []
    init = _telemetry.InMemoryTelemetry.__init__

    @functools.wraps(init)
    def recorded(self: _telemetry.InMemoryTelemetry, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    _telemetry.InMemoryTelemetry.__init__ = recorded  # type: ignore[method-assign]
    yield made
    _telemetry.InMemoryTelemetry.__init__ = init  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _spans_lie_within_their_parents(
    request: pytest.FixtureRequest, _telemetries_made: list[Any]
) -> Iterator[None]:
    """Every ``InMemoryTelemetry`` the test makes (the ``otel_telemetry`` fixture's too) is
    checked after it: a span of ours that starts before its parent of ours, ends after it or
    is left open after it fails the test (backends draw such a child as broken), unless the
    test is marked ``span_outlives_parent`` with the reason."""
    yield
    made = list(_telemetries_made)
    _telemetries_made.clear()
    marker = request.node.get_closest_marker("span_outlives_parent")
    if marker is not None:
        assert marker.args and marker.args[0], "span_outlives_parent(why) names the reason"
        return
    faults = [fault for telemetry in made for fault in telemetry.nesting_faults()]
    assert not faults, (
        f"spans of ours outside their parents: {faults}; mark the test "
        "span_outlives_parent('why') if the framework's work outlives its run by design"
    )

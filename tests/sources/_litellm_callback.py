"""LiteLLM's own OpenTelemetry callback into a test's providers, and what it logged.

LiteLLM logs each call once it has ended, on its logging worker or its thread pool: a test
waits for that logging (``logged``, ``logged_into``) before it reads the spans."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry


@contextmanager
def callback(telemetry: InMemoryTelemetry, kind: str = "") -> Iterator[None]:
    """LiteLLM's own OpenTelemetry callback (``litellm.callbacks = ["otel"]``, metrics on), or
    the one built on it at ``kind`` (``"module:Class"`` under ``litellm.integrations``), into
    ``telemetry``'s providers; every callback list as it was afterwards."""
    litellm = pytest.importorskip("litellm")
    from importlib import import_module

    from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig

    module, _, name = kind.partition(":")
    cls = getattr(import_module(f"litellm.integrations.{module}"), name) if kind else OpenTelemetry
    config = OpenTelemetryConfig(exporter="console", enable_metrics=True)
    callback = cls(
        config=config,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [callback]
    try:
        yield
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


async def logged() -> None:
    """LiteLLM's success callbacks run on its logging worker after the call: wait for them."""
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    await GLOBAL_LOGGING_WORKER.flush()


def spans(telemetry: InMemoryTelemetry) -> list[Any]:
    """LiteLLM's callback's account of each call (not the raw request's span under it)."""
    return [sp for sp in telemetry.spans()
            if sp.instrumentation_scope and sp.instrumentation_scope.name == "litellm"
            and not sp.name.startswith("raw_")]  # fmt: skip


async def logged_into(telemetry: InMemoryTelemetry, until: Any = None) -> None:
    """LiteLLM enqueues its logging once the call's wrappers have returned, some loop turns
    after the call, and records its metrics after its span: wait (up to about 10 s, for a
    loaded machine) until its callback made a span of its own and ``until()``, if given, holds
    (e.g. the call's tokens are on its metric)."""
    import asyncio

    for _ in range(1000):
        await logged()
        if spans(telemetry) and (until is None or until()):
            return
        await asyncio.sleep(0.01)

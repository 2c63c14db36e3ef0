"""Tests and benchmarks take their providers from the test kit, not from wiring of their own.

``agent_otel.testing.InMemoryTelemetry`` is the one in-memory setup (its ``processors=``,
``export_through=``, ``ids=`` and ``sampler=`` cover a processor under test, a sampler in
front of the export, random ids); ``otel_telemetry.wrapper()`` and ``run_script()`` are the
one way a test runs a wrapper on it (``instrument(agent, **otel_telemetry.providers())`` an
instrumented agent). A provider, in-memory exporter or reader built by hand
is allowed only in the files below, each with the reason the kit cannot serve it; a file
listed that no longer needs it fails too, so the list stays true.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILT = {
    "TracerProvider",
    "MeterProvider",
    "LoggerProvider",
    "InMemorySpanExporter",
    "InMemoryMetricReader",
    "InMemoryLogRecordExporter",
}
"""What a test would build by hand instead of using the kit."""

_CONFIGURE = "configure() under test: its own providers, fed an in-memory exporter or reader"
_BACKEND = "a local in-memory copy beside the real OTLP export, to compare with the backend"
_BENCHMARK = "a figure's setup or hand-written SDK baseline: what is measured, kit-free"
ALLOWED = {
    "tests/test_resilience.py": "an exporter that raises, in place of the kit's in-memory one",
    "tests/test_bounded_values.py": "an exporter under test (SizeBoundSpanExporter) recording "
    "into an in-memory one",
    "tests/test_console_evaluations.py": _CONFIGURE,
    "tests/test_configure.py": _CONFIGURE,
    "tests/test_identity.py": _CONFIGURE,
    "tests/test_events.py": _CONFIGURE,
    "tests/test_loss.py": _CONFIGURE + "; and the SDK's own batch processor metrics beside it",
    "tests/test_newcomer.py": "a TracerProvider() given no span processor: the mistake told",
    "tests/sources/_mcp.py": "the MCP stdio server's own process: its SDK spans go nowhere",
    "tests/integration/scale_agent.py": _BACKEND,
    "tests/integration/test_backends.py": _BACKEND,
    "tests/integration/test_browser.py": _BACKEND,
    "tests/integration/test_jaeger_tier.py": _BACKEND,
    "tests/integration/test_phoenix.py": _BACKEND,
    "tests/integration/test_tail_sampling_phoenix.py": _BACKEND,
    "benchmarks/": _BENCHMARK,
}
"""File (or folder, ending in ``/``) -> why it builds providers or in-memory exporters itself."""


def _allowed(path: str) -> bool:
    return any(path == key or (key.endswith("/") and path.startswith(key)) for key in ALLOWED)


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


@functools.cache
def _sources() -> dict[str, ast.Module]:
    """Every test and benchmark file, parsed once for the checks below (they only read it)."""
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    return {
        p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
        for p in files
        if "semconv" not in p.parts
    }


def _hand_built(tree: ast.Module) -> list[tuple[int, str]]:
    return [
        (node.lineno, name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (name := _called(node)) in BUILT
    ]


def test_providers_and_in_memory_exporters_are_built_by_the_kit_or_listed_with_a_reason() -> None:
    sources = _sources()
    found = {path: hits for path, tree in sources.items() if (hits := _hand_built(tree))}
    unlisted = {path: hits for path, hits in found.items() if not _allowed(path)}
    assert not unlisted, (
        f"hand-wired telemetry in {unlisted}: use agent_otel.testing.InMemoryTelemetry "
        "(processors=, export_through=, ids=, sampler=), or list the file in ALLOWED with why"
    )
    stale = [key for key in ALLOWED if not any(p == key or p.startswith(key) for p in found)]
    assert not stale, f"listed but no longer wiring by hand (take them out of ALLOWED): {stale}"


def _kit_providers_passed_by_hand(tree: ast.Module) -> list[int]:
    """``otel_wrapper(..., tracer_provider=otel_telemetry.tracer_provider, ...)`` (or
    ``instrument(...)``): the kit's fixture wired in by hand, which is what
    ``otel_telemetry.wrapper()`` and ``**otel_telemetry.providers()`` do."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in ("otel_wrapper", "instrument"):
            for keyword in node.keywords:
                value = keyword.value
                if (
                    keyword.arg == "tracer_provider"
                    and isinstance(value, ast.Attribute)
                    and isinstance(value.value, ast.Name)
                    and value.value.id == "otel_telemetry"
                ):
                    lines.append(node.lineno)
    return lines


def test_wrappers_and_instrumented_agents_on_the_fixture_take_its_providers_from_it() -> None:
    found = {
        path: lines
        for path, tree in _sources().items()
        if (lines := _kit_providers_passed_by_hand(tree))
    }
    assert not found, f"the fixture's providers passed by hand in {found}: use " + (
        "otel_telemetry.wrapper(**options) or instrument(agent, **otel_telemetry.providers())"
    )


def test_the_checks_find_what_they_look_for() -> None:
    """Each check fails on the code it forbids (so a passing run means something)."""
    built = ast.parse(
        "from x import TracerProvider\np = TracerProvider()\ne = sdk.InMemorySpanExporter()"
    )
    assert _hand_built(built) == [(2, "TracerProvider"), (3, "InMemorySpanExporter")]
    wired = ast.parse(
        "w = otel_wrapper(agent_name='a', tracer_provider=otel_telemetry.tracer_provider)"
    )
    assert _kit_providers_passed_by_hand(wired) == [1]
    assert _kit_providers_passed_by_hand(ast.parse("w = otel_telemetry.wrapper()")) == []
    traced = ast.parse("a = instrument(b)\nc = instrument(d, tracer_provider=otel_telemetry.t)")
    assert _kit_providers_passed_by_hand(traced) == [2]
    assert _allowed("benchmarks/fig5_dead_collector.py") and not _allowed("tests/test_x.py")

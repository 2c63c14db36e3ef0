"""The layout a newcomer relies on: small modules, and the import paths users write unchanged.

The names below are the ones the README, docs/ and examples import. Others may be added; none
of these may move or vanish (a move breaks every user's import line).
"""

from __future__ import annotations

import importlib
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 300

PUBLIC = {
    "agent_otel": [
        "ContentCapture",
        "ContentKind",
        "Redactor",
        "StreamWrapper",
        "Telemetry",
        "__version__",
        "configure",
        "extract_context",
        "inject_context",
        "instrument",
        "is_instrumented",
        "otel_wrapper",
        "uninstrument",
    ],
    "agent_otel.instrumentor": ["AgentInstrumentor"],
    "agent_otel.testing": ["FakeClock", "InMemoryTelemetry", "SequentialIdGenerator", "span_tree"],
    "agent_otel.testing.plugin": ["otel_telemetry", "otel_clock"],
    "agent_contract.protocol": [
        "AgentProtocol",
        "FunctionCall",
        "LLMCallEnd",
        "LLMCallStart",
        "Message",
        "StepBoundary",
        "TextDelta",
        "ToolCall",
        "ToolResult",
        "Usage",
    ],
    "agent_contract.agent": ["Agent", "MessageDelta", "MessageFinal", "StreamEvent", "RunUsage"],
    "agent_contract.examples": ["ScriptedAgent"],
    "agent_contract.invoke": ["StreamingAgent"],
}


def modules() -> list[Path]:
    return sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "contract").rglob("*.py")])


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_exceeds_300_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it"


def test_the_three_layers_are_folders() -> None:
    package = ROOT / "src" / "agent_otel"
    folders = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert {"recording", "decorating", "exporting", "testing"} <= folders


@pytest.mark.parametrize(("module", "names"), PUBLIC.items(), ids=list(PUBLIC))
def test_public_import_paths_are_unchanged(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"from {module} import {', '.join(missing)} no longer works"
    if hasattr(imported, "__all__") and module.startswith("agent_otel"):
        assert set(names) - {"otel_telemetry", "otel_clock"} <= set(imported.__all__)


def test_entry_points_name_importable_objects() -> None:
    points = {(p.group, p.name): p for p in distribution("agent-otel").entry_points}
    assert points[("pytest11", "agent_otel")].value == "agent_otel.testing.plugin"
    assert points[("opentelemetry_instrumentor", "agent_otel")].load().__name__ == (
        "AgentInstrumentor"
    )
    for point in points.values():
        assert point.load() is not None, point.value

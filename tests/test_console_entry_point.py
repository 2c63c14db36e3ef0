"""``OTEL_TRACES_EXPORTER=agent_otel_console opentelemetry-instrument python app.py``: the tree
of configure()'s terminal view with no Collector and no code change.

The entry point is declared in pyproject.toml; the test installs that very declaration as a
distribution's metadata on the child's path (the editable install of the checkout under test
may predate it), then runs the real ``opentelemetry-instrument``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

APP = textwrap.dedent(
    """
    import asyncio
    from agent_contract.examples import ScriptedAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta, Usage

    agent = ScriptedAgent([
        LLMCallStart(model="gpt-4o-mini", provider="openai"),
        TextDelta(text="Hello!"),
        Usage(input_tokens=12, output_tokens=2),
        LLMCallEnd(model="gpt-4o-mini", finish_reason="stop"),
    ])
    asyncio.run(agent.invoke([Message(role="user", content="Hi")]))
    """
)


def _declared() -> str:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    value: str = project["entry-points"]["opentelemetry_traces_exporter"]["agent_otel_console"]
    return value


def test_the_entry_point_names_the_terminal_view() -> None:
    from agent_otel.exporting._console import ConsoleTreeExporter

    module, _, name = _declared().partition(":")
    imported = __import__(module, fromlist=[name])
    assert getattr(imported, name) is ConsoleTreeExporter
    ConsoleTreeExporter().shutdown()  # the SDK builds it with no arguments


def test_opentelemetry_instrument_prints_the_tree(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "opentelemetry-instrument"
    if not command.exists():
        pytest.skip("opentelemetry-instrument is not installed")
    dist = tmp_path / "site" / "agent_otel_console_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-otel-console-check\n")
    (dist / "entry_points.txt").write_text(
        f"[opentelemetry_traces_exporter]\nagent_otel_console = {_declared()}\n"
    )
    (tmp_path / "app.py").write_text(APP)
    others = [e.name for e in entry_points(group="opentelemetry_instrumentor")]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "contract"), str(tmp_path / "site")]
        ),
        "OTEL_TRACES_EXPORTER": "agent_otel_console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": ",".join(n for n in others if n != "agent_otel"),
    }
    done = subprocess.run(
        [str(command), sys.executable, "app.py"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("trace "), done.stderr
    assert lines[1].startswith("invoke_agent scripted")
    assert any("chat gpt-4o-mini  in=12 out=2" in line for line in lines)
    assert "token usage" in done.stderr and "{" not in done.stderr  # the tree, not JSON

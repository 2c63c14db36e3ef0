"""Every example runs, as a user would run it, and shows what its docstring promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
        check=False,
    )


def test_quickstart_prints_the_trace_tree_and_token_summary() -> None:
    done = run_example("quickstart.py")

    assert done.returncode == 0, done.stderr
    assert "answer: agent-otel turns agent events into spans." in done.stdout
    lines = done.stderr.splitlines()
    names = [
        "invoke_agent researcher",
        "step 0",
        "chat gpt-4o-mini  in=412 out=38",
        "execute_tool web_search",
        "execute_tool read_docs",
        "step 1",
        "chat gpt-4o-mini  in=655 out=21",
    ]
    found = [next((i for i, line in enumerate(lines) if name in line), -1) for name in names]
    assert -1 not in found, done.stderr
    assert found == sorted(found)  # the tree's order: parents before children, by start
    assert "\x1b[" not in done.stderr  # not a TTY: no colour codes
    summary = next(i for i, line in enumerate(lines) if line.startswith("token usage"))
    assert "1,067" in lines[summary + 1]  # 412 + 655 input tokens
    assert lines[summary + 1].split()[-1] == "59"  # 38 + 21 output tokens

"""Each framework example runs as a user would run it, with no API key, and prints its trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("example", "package", "tree"),
    [
        ("pydantic_ai_agent.py", "pydantic_ai",
         ["invoke_agent weatherbot", "step 0", "chat test", "execute_tool weather", "step 1"]),
        ("langgraph_agent.py", "langgraph", ["invoke_agent weatherbot", "step 0", "chat"]),
        ("openai_agents_sdk.py", "agents",
         ["invoke_agent weatherbot", "step 0", "chat gpt-5-mini  in=42 out=7"]),
    ],
)  # fmt: skip
def test_a_framework_example_runs_offline_and_prints_its_tree(
    example: str, package: str, tree: list[str]
) -> None:
    pytest.importorskip(package)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "answer: " in done.stdout and "sunny" in done.stdout.lower()
    lines = done.stderr.splitlines()
    found = [next((i for i, line in enumerate(lines) if name in line), -1) for name in tree]
    assert -1 not in found, done.stderr
    assert found == sorted(found)  # parents before children, in start order

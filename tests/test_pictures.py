"""The README's output pictures match what a real run prints (docs/pictures.py regenerates
them); only trace ids, durations and timeline bars may differ."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "pictures.py"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("pictures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_readme_picture_matches_a_real_run() -> None:
    assert "<!-- picture: " in (ROOT / "README.md").read_text()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_ignores_timing_only() -> None:
    normalized = _module().normalized
    a = "trace 0af7651916cd43dd8448eb211c80319c\ninvoke_agent a   1.25s  ████··\n"
    b = "trace 1bf7651916cd43dd8448eb211c80319c\ninvoke_agent a    80ms  ··████\n"
    assert normalized(a) == normalized(b)
    assert normalized(a) != normalized(a.replace("invoke_agent a", "invoke_agent b"))
    assert normalized("  gpt-4o  2  1,067  59") != normalized("  gpt-4o  2  1,067  59  0.1 USD")

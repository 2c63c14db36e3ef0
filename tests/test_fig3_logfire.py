"""Figure 3's Logfire side, in Logfire's own environment (extra ``bench-logfire``, a row of
``.ci/separate-envs``): Logfire's pydantic plugin imports OpenTelemetry into every process
that defines a pydantic model, so it is installed nowhere else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("logfire")
ROOT = Path(__file__).resolve().parents[1]


def test_figure_3_measures_logfire_beside_the_other_peers(tmp_path: Path) -> None:
    out = tmp_path / "fig3.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "3", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert any(r["measure"] == "per chunk: agent-otel (adapter + wrapper) / logfire" for r in rows)
    peers = [r for r in rows if r["figure"].startswith("3 ") and r["extra"].get("spans")]
    spans, requests = peers[0]["extra"]["spans"], peers[0]["extra"]["requests"]
    for name in ("official", "openinference", "openllmetry", "logfire", "agent_otel"):
        assert requests[name] > 0
        assert spans[name] >= requests[name], f"{name} produced no spans of its own"

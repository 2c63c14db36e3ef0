"""The benchmark suite's smoke run: every figure at a tiny N, so the suite never rots.

Checks that the table and the results files are produced with every figure present and that
each peer instrumentation of figure 3 really produced its spans. No timing is asserted: the
quick run's figures mean nothing and this machine is shared.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIGURES = tuple(f"{n} " for n in (1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17))


@pytest.mark.heavy
@pytest.mark.timeout(900)  # the subprocess's own limit; the suite's 300 s is about 4 min 40 s away
def test_quick_benchmark_run_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "latest.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # figure 15 imports seven frameworks, three in their own venvs
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    text = out.read_text()
    assert "| Figure | Measure | Median | Min | Max |" in text
    assert "Python: CPython" in text or "Python: " in text
    assert "opentelemetry-sdk" in text
    assert "| Figure | Measure |" in done.stdout  # the table is printed too

    raw = json.loads(out.with_suffix(".json").read_text())
    assert raw["mode"] == "quick"
    rows = raw["rows"]
    for figure in FIGURES:
        assert any(r["figure"].startswith(figure) for r in rows), f"figure {figure} missing"
    assert all(r["median"] is not None for r in rows)

    peers = [r for r in rows if r["figure"].startswith("3 ") and r["extra"].get("spans")]
    assert peers, "figure 3 reported no span counts"
    spans, requests = peers[0]["extra"]["spans"], peers[0]["extra"]["requests"]
    logfire = ("logfire",) if importlib.util.find_spec("logfire") else ()  # bench-logfire
    for name in ("official", "openinference", "openllmetry", *logfire, "agent_otel"):
        assert requests[name] > 0
        assert spans[name] >= requests[name], f"{name} produced no spans of its own"


@pytest.mark.heavy
def test_framework_figure_measures_both_tracers_on_agno() -> None:
    """Figure 15 in-process on one framework, one run: both tracers really traced the run
    (heavy: importing Agno, OpenAI and the peer costs tens of seconds on a loaded machine)."""
    pytest.importorskip("agno")
    pytest.importorskip("openinference.instrumentation.agno")
    import asyncio

    from benchmarks import fig15_frameworks as fig

    result = asyncio.run(fig.measure("agno", runs=1, rounds=1))
    ours, theirs = result["seen"]["ours"], result["seen"]["theirs"]
    assert ours["tree"].startswith("invoke_agent agent > [step 0 > [chat")
    assert "execute_tool forecast" in ours["tree"]
    assert theirs["spans"] > 0 and "invoke_agent" not in theirs["tree"]
    assert ours["open"] == 0
    assert result["events"] > 0
    rows = fig.rows(result)
    assert [r.measure.split(":")[0] for r in rows[:2]] == ["agent-otel", "OpenInference"]
    assert all(r.stat is not None and r.stat.n == 1 for r in rows)

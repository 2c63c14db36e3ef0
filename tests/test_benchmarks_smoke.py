"""The benchmark suite's smoke run: every figure at a tiny N, so the suite never rots.

Checks that the table and the results files are produced with every figure present and that
each peer instrumentation of figure 3 really produced its spans. No time and no goal is
asserted: the quick run's figures mean nothing and this machine is shared. The one figure
checked is figure 2's A/A control (the same work timed twice), against a wide band: heavy too,
as figure 2 took a minute inside the default suite (4 to 6 seconds alone).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
def test_figure_2_a_a_control_reads_about_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Figure 2 in quick mode (about a second): its A/A control row, the hand-written side
    timed twice in each round, is there for every workload, and its median is a finite ratio
    between 0.5 and 2.0.

    The band is wide for a shared machine. In 225 quick runs the medians of 3 rounds read 0.65
    to 1.56, and none fell outside it; should noise push one out, figure 2 runs once more. The
    band still fails a control that times different work on its two sides, on both runs: the
    bare stream against the hand-written side reads about 0.01 (checked below, from the same
    measurements), and one agent run timed against 20, per run, reads about 0.07. A control
    that divides one measurement by itself reads exactly 1 in every round, and fails at once.
    A control timing agent-otel as its second side (about 1.25) would pass: the band cannot
    see a bias of that size.
    """
    from benchmarks import fig2_sdk_parity as fig2
    from benchmarks._harness import ratio

    measured: list[dict[str, list[float]]] = []  # each workload's raw times, in run order
    compare = fig2._compare

    async def keep(*args: Any, **kwargs: Any) -> dict[str, list[float]]:
        measured.append(await compare(*args, **kwargs))
        return measured[-1]

    monkeypatch.setattr(fig2, "_compare", keep)
    cpu = ": hand-written CPU"
    for _attempt in range(2):  # noise may push a median out once; a broken control stays out
        measured.clear()
        rows = asyncio.run(fig2.run(quick=True))
        workloads = [r.measure.removesuffix(cpu) for r in rows if r.measure.endswith(cpu)]
        assert len(workloads) == len(fig2.GOALS) == len(measured)  # llm, llm5, tool, run
        outside: dict[str, float] = {}
        for workload, times in zip(workloads, measured, strict=True):
            control = f"{workload}: hand-written / hand-written again (A/A control)"
            stats = [r.stat for r in rows if r.measure == control]
            assert len(stats) == 1, f"{workload}: {len(stats)} A/A control rows"
            stat = stats[0]
            assert stat is not None and math.isfinite(stat.median), workload
            assert not stat.lo == stat.hi == 1.0, f"{workload}: a measurement divided by itself"
            different_work = ratio(times, "bare", "hand").median  # what the band tells apart
            assert not 0.5 <= different_work <= 2.0, f"{workload}: bare / hand {different_work}"
            if not 0.5 <= stat.median <= 2.0:
                outside[workload] = round(stat.median, 3)
        if not outside:
            break
    assert not outside, f"A/A control outside 0.5 to 2.0 twice running: {outside}"


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


@pytest.mark.parametrize("only", ["6", "2,9", "fig2"])
def test_a_figure_the_suite_has_not_is_refused_before_any_runs(
    only: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--only 6`` (a figure ``4`` measures) or a typo ended in a ``KeyError`` traceback,
    and ``--only 2,9`` only after figure 2 had run for minutes, its rows lost."""
    from benchmarks import run

    with pytest.raises(SystemExit) as refused:
        run.main(["--only", only, "--out", "/nonexistent/never-written.md"])
    assert refused.value.code == 2  # argparse's usage error, before any figure runs
    err = capsys.readouterr().err
    assert "--only: no figure" in err and "the figures: 1, 2, 3, 4 (also 6), 5, 7" in err

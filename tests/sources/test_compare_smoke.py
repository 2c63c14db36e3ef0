"""The side-by-side comparison runs and reports what docs/adapters.md says (one tiny round)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.heavy
def test_the_comparison_prints_a_row_per_tracer_with_tokens_once_and_nothing_left_open() -> None:
    for package in ("pydantic_ai", "agents", "langgraph", "openinference.instrumentation"):
        pytest.importorskip(package)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.adapters_compare", "--runs", "1", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    rows = [
        line.split(" | ")
        for line in done.stdout.splitlines()
        if line.startswith("| ") and "µs" not in line
    ]
    rows = [r for r in rows if r[0] != "| framework"]
    assert [(r[0].lstrip("| "), r[1]) for r in rows] == [
        ("pydantic-ai", "agent-otel"), ("pydantic-ai", "pydantic-ai's own"),
        ("OpenAI Agents SDK", "agent-otel"), ("OpenAI Agents SDK", "OpenInference"),
        ("LangGraph", "agent-otel"), ("LangGraph", "OpenInference"),
    ]  # fmt: skip
    ours = [r for r in rows if r[1] == "agent-otel"]
    assert all(r[2].startswith("invoke_agent agent > [step 0 > [chat") for r in ours)
    assert [r[3] for r in rows[2:]] == ["240"] * 4  # every tracer: the run's tokens, once
    assert {r[4] for r in rows} == {"0"}  # no span left open after a cancel


@pytest.mark.heavy
def test_the_hard_cases_compare_as_docs_adapters_md_says() -> None:
    for package in ("pydantic_ai", "agents", "langgraph", "openinference.instrumentation"):
        pytest.importorskip(package)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cases_compare"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    rows = {
        tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): line.split(" | ")
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| case")
    }
    graph = rows[("LangGraph sub-graph as a node", "agent-otel")]
    assert graph[3:5] == ["2", "240"]  # both calls of the sub-graph, their tokens once
    failing = rows[("Agents SDK tool failing, default handler", "agent-otel")]
    assert failing[5].strip(" |") == "ERROR ToolFailure; UNSET"  # that call only, by class
    retry = rows[("pydantic-ai ModelRetry", "agent-otel")]
    assert retry[5].strip(" |") == "ERROR ModelRetry"

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
def test_the_cases_compare_as_docs_adapters_md_says() -> None:
    """agent-otel's side of every case of the comparison holds what docs/adapters.md reads
    from it: the same tree, one chat span per model call beside any provider instrumentation,
    the failure on the span that failed (and only there), sub-agents under their tool."""
    for package in ("pydantic_ai", "agents", "langgraph", "openinference.instrumentation"):
        pytest.importorskip(package)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cases_compare"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and cells[0] != "case":
            rows[tuple(cells[:3])] = cells[3:]
    ours = {key: cells for key, cells in rows.items() if key[2].startswith("agent-otel")}
    assert {key[1] for key in ours} >= {"pydantic-ai", "LangGraph", "OpenAI Agents SDK"}
    for (case, framework, tracer), (tree, calls, _, errors) in ours.items():
        assert tree.startswith("invoke_agent "), (case, framework)
        if case == "parallel tools, one failing" or case.startswith("beside "):
            assert calls == "2", (case, framework, tracer)
            assert errors.startswith("execute_tool forecast") and ";" not in errors, errors
        elif case.startswith("refused request"):
            assert calls == "2" and errors.startswith("chat "), (framework, errors)
            assert "execute_tool weather" not in errors
        elif case in ("sub-agent in a tool", "agent.as_tool()"):
            assert "execute_tool ask_expert > [invoke_agent expert > [step 0 > [chat" in tree
    for (case, framework, _), cells in ours.items():
        if case.startswith("beside "):  # tokens once, as without the provider's spans
            assert cells[2] == ours[("parallel tools, one failing", framework, "agent-otel")][2]
    assert ours[("sub-graph as a node", "LangGraph", "agent-otel")][1:3] == ["2", "240"]
    failing = ours[("tool failing under the default handler", "OpenAI Agents SDK", "agent-otel")]
    assert failing[3] == "execute_tool weather: ToolFailure"  # one of the two calls, by class
    retry = ours[("tool raising ModelRetry", "pydantic-ai", "agent-otel")]
    assert retry[3] == "execute_tool forecast: ModelRetry"

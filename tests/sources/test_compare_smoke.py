"""The side-by-side comparison runs and reports what docs/adapters.md says (one tiny round)."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
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


Rows = dict[tuple[str, str, str], list[str]]
"""The comparison's table: (case, framework, tracer) to (tree, calls, tokens, errors)."""


def _rows(stdout: str) -> Rows:
    rows = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and cells[0] != "case":
            rows[(cells[0], cells[1], cells[2])] = cells[3:]
    return rows


def _ours(stdout: str) -> Rows:
    """agent-otel's rows, held to what every case says of it in docs/adapters.md: the same
    tree, one chat span per model call beside any provider instrumentation, tokens as
    without it, the failure on the span that failed (and only there), sub-agents under
    their tool."""
    ours = {key: cells for key, cells in _rows(stdout).items() if key[2].startswith("agent-otel")}
    for (case, framework, tracer), (tree, calls, _, errors) in ours.items():
        assert tree.startswith("invoke_agent "), (case, framework)
        if case == "parallel tools, one failing" or case.startswith("beside "):
            assert calls == "2", (case, framework, tracer)
            assert errors.startswith("execute_tool forecast") and ";" not in errors, errors
        elif case.startswith("refused request"):
            assert int(calls) >= 2, (framework, calls)  # a retrying framework: one per attempt
            assert errors.startswith("chat ") and "step " not in errors, (framework, errors)
            assert "execute_tool weather" not in errors
        elif case in ("sub-agent in a tool", "agent.as_tool()"):
            assert "> [invoke_agent expert > [step 0 > [chat" in tree, (case, framework)
    for (case, framework, _), cells in ours.items():
        if case.startswith("beside "):  # tokens once, as without the provider's spans
            assert cells[2] == ours[("parallel tools, one failing", framework, "agent-otel")][2]
    return ours


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
    ours = _ours(done.stdout)
    assert {key[1] for key in ours} >= {"pydantic-ai", "LangGraph", "OpenAI Agents SDK"}
    assert ours[("sub-graph as a node", "LangGraph", "agent-otel")][1:3] == ["2", "240"]
    failing = ours[("tool failing under the default handler", "OpenAI Agents SDK", "agent-otel")]
    assert failing[3] == "execute_tool weather: ToolFailure"  # one of the two calls, by class
    retry = ours[("tool raising ModelRetry", "pydantic-ai", "agent-otel")]
    assert retry[3] == "execute_tool forecast: ModelRetry"


# What docs/adapters.md reads from the rows of each framework of a separate environment:
# (case, tracer) -> (model-call spans, input tokens summed, spans in error)
SEPARATE: dict[str, tuple[str, dict[tuple[str, str], tuple[str, str, str]]]] = {
    "google_adk": ("Google ADK", {
        ("parallel tools, one failing", "agent-otel"):
            ("2", "320", "execute_tool forecast: ToolFailure"),
        ("beside openai-v2", "ADK's own + openai-v2"):
            ("4", "640", "execute_tool forecast: TOOL_ERROR"),
        ("parallel tools, one failing", "OpenInference"):
            ("1", "200", "execute_tool forecast: TOOL_ERROR"),
        ("AgentTool, two calls in parallel", "agent-otel"): ("4", "640", "none"),
        ("AgentTool, two calls in parallel", "ADK's own"): ("4", "640", "none"),
    }),
    "strands": ("Strands Agents", {
        ("parallel tools, one failing", "agent-otel"):
            ("2", "320", "execute_tool forecast: ToolFailure"),
        ("parallel tools, one failing", "Strands' own"):
            ("2", "640", "execute_tool forecast: no forecast for Rome"),
        ("agent.as_tool()", "agent-otel"): ("4", "640", "none"),
        ("agent.as_tool()", "Strands' own"): ("4", "1280", "none"),
    }),
    "crewai": ("CrewAI", {
        ("parallel tools, one failing", "agent-otel"):
            ("2", "320", "execute_tool forecast: ToolFailure"),
        ("parallel tools, one failing", "OpenInference"):
            ("0", "0", "forecast.run: no forecast for Rome"),
        ("hierarchical crew delegating twice", "agent-otel"): ("4", "720", "none"),
        ("hierarchical crew delegating twice", "OpenInference"): ("0", "0", "none"),
    }),
}  # fmt: skip


@pytest.mark.parametrize("row", sorted(SEPARATE))
def test_a_separate_environment_compares_its_own_framework_as_the_docs_say(row: str) -> None:
    """Google ADK, Strands and CrewAI install only in their own environments
    (``.ci/separate-envs``): each runs its framework's comparison there, as docs/adapters.md
    says (``--only <row>``), and its rows hold what the docs read from them."""
    package = {"google_adk": "google.adk", "strands": "strands", "crewai": "crewai"}[row]
    try:  # found, not imported: the comparison imports it in its own process
        found = find_spec(package) is not None
    except ModuleNotFoundError:  # google itself is missing
        found = False
    if not found:
        pytest.skip(f"{package} is not installed here (.ci/separate-envs)")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cases_compare", "--only", row],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    framework, expected = SEPARATE[row]
    ours = _ours(done.stdout)
    assert {key[1] for key in ours} == {framework}
    assert sum(1 for key in ours if key[0].startswith("beside ")) == 3  # the OpenAI SDK's three
    rows = _rows(done.stdout)
    for (case, tracer), cells in expected.items():
        assert tuple(rows[(case, framework, tracer)][1:]) == cells, (case, tracer)
    nested = [tree for (case, *_), (tree, *_) in ours.items() if case in NESTED_CASES]
    assert len(nested) == 1 and " > [invoke_agent " in nested[0]


NESTED_CASES = ("AgentTool, two calls in parallel", "agent.as_tool()",
                "hierarchical crew delegating twice")  # fmt: skip

"""Each framework example runs as a user would run it, with no API key, and prints its trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from otlp_receiver import receiving

from ._conformance import ROWS

# Each example in a process of its own, importing its framework there (as tests/test_examples.py,
# for the same reason): run by the heavy suite.
pytestmark = pytest.mark.heavy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOOLS_ONE_FAILING = ["execute_tool weather", "execute_tool forecast  [ERROR"]
_CAPTURED = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
             "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}  # fmt: skip
_ROWS = {  # each example's framework package, and its adapter's row in the conformance matrix
    "pydantic_ai_agent.py": ("pydantic_ai", "pydantic_ai"),
    "langgraph_agent.py": ("langgraph", "langgraph"),
    "openai_agents_sdk.py": ("agents", "openai_agents"),
    "agno_agent.py": ("agno", "agno"),
    "autogen_agent.py": ("autogen_agentchat", "autogen"),
    "google_adk_agent.py": ("google.adk", "google_adk"),
    "strands_agent.py": ("strands", "strands"),
    "smolagents_agent.py": ("smolagents", "smolagents"),
    "llama_index_agent.py": ("llama_index.core", "llama_index"),
    "crewai_agent.py": ("crewai", "crewai"),
}
_PASSES_MESSAGES = {row.name for row in ROWS if row.messages}
_TOOL_MESSAGES = {row.name for row in ROWS if row.tool_messages}


def _run(example: str, *options: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, *options, str(EXAMPLES / example)],
        capture_output=True, text=True, timeout=120, env=env | extra, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("example", "package", "tree"),
    [
        ("pydantic_ai_agent.py", "pydantic_ai",
         ["invoke_agent weatherbot", "step 0", "chat test  in=53", *TOOLS_ONE_FAILING, "step 1",
          "chat test  in=64"]),
        ("langgraph_agent.py", "langgraph",
         ["invoke_agent weatherbot", "step 0", "chat", *TOOLS_ONE_FAILING, "step 1"]),
        ("openai_agents_sdk.py", "agents",
         ["invoke_agent weatherbot", "step 0", "chat gpt-5-mini  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat gpt-5-mini  in=95 out=9"]),
        ("agno_agent.py", "agno",
         ["invoke_agent weatherbot", "step 0", "chat gpt-4o-mini  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat gpt-4o-mini  in=95 out=9"]),
        ("autogen_agent.py", "autogen_agentchat",
         ["invoke_agent weatherbot", "step 0", "chat scripted-model  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat scripted-model  in=21"]),
        ("google_adk_agent.py", "google.adk",
         ["invoke_agent weatherbot", "step 0", "chat scripted-gemini  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat scripted-gemini  in=95 out=9"]),
        ("strands_agent.py", "strands",
         ["invoke_agent weatherbot", "step 0", "chat scripted-converse  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat scripted-converse  in=95 out=9"]),
        ("smolagents_agent.py", "smolagents",
         ["invoke_agent weatherbot", "step 0", "chat gpt-4o-mini  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat gpt-4o-mini  in=95 out=9"]),
        ("llama_index_agent.py", "llama_index.core",
         ["invoke_agent weatherbot", "step 0", "chat", *TOOLS_ONE_FAILING, "step 1"]),
        ("crewai_agent.py", "crewai",
         ["invoke_agent weatherbot", "step 0", "chat gpt-4o-mini  in=60 out=12",
          *TOOLS_ONE_FAILING, "step 1", "chat gpt-4o-mini  in=95 out=9"]),
    ],
)  # fmt: skip
def test_a_framework_example_runs_offline_and_prints_its_tree(
    example: str, package: str, tree: list[str]
) -> None:
    pytest.importorskip(package)
    done = _run(example)

    assert done.returncode == 0, done.stderr
    assert "answer: " in done.stdout and "sunny" in done.stdout.lower()
    lines = done.stderr.splitlines()
    found = [next((i for i, line in enumerate(lines) if name in line), -1) for name in tree]
    assert -1 not in found, done.stderr
    assert found == sorted(found)  # parents before children, in start order


@pytest.mark.parametrize("example", sorted(_ROWS))
def test_a_framework_examples_run_shows_its_input_and_output_with_capture_on(
    example: str,
) -> None:
    """Sent to a backend with content capture on, as a user sends it, each framework
    example's run shows the question it was asked and its answer (the previews of a trace
    list), and each chat span the messages its model was sent."""
    package, row = _ROWS[example]
    pytest.importorskip(package)
    if row not in _PASSES_MESSAGES:
        pytest.skip(f"{row}: the adapter does not pass the request's messages on yet")
    with receiving() as received:
        done = _run(example, **_CAPTURED, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=received.endpoint)

    assert done.returncode == 0, done.stderr
    [root] = received.named("invoke_agent weatherbot")
    chats = received.named("chat")
    assert len(chats) == 2, received.spans
    assert "Weather" in root["input.value"]
    printed = done.stdout.split("answer: ", 1)[1]  # all the run's text
    printed = printed.split("\u256d", 1)[0].strip()  # not CrewAI's panels (its threads print them)
    assert root["output.value"] and printed.endswith(root["output.value"])
    for chat in chats:
        assert "Weather" in chat["gen_ai.input.messages"]
    if row in _TOOL_MESSAGES:  # the tools' results, as messages of their own
        assert '"tool_call_response"' in chats[-1]["gen_ai.input.messages"]
    else:  # as text (smolagents)
        assert "Observation" in chats[-1]["gen_ai.input.messages"]


def test_with_capture_off_a_framework_examples_run_shows_no_content() -> None:
    """The default: nothing of the conversation leaves the process (each adapter's run with
    capture off: ``test_conformance``)."""
    pytest.importorskip("langgraph")
    with receiving() as received:
        done = _run("langgraph_agent.py", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=received.endpoint,
                    OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert len(received.named("chat")) == 2
    content = {"gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value"}
    for name, attributes in received.spans:
        assert not content & set(attributes), name


@pytest.mark.parametrize(
    ("example", "module", "install"),
    [
        ("agno_agent.py", "agno", "pip install 'agent-otel[agno,openai]'"),
        ("autogen_agent.py", "autogen_agentchat", "pip install 'agent-otel[autogen-agentchat]'"),
        ("google_adk_agent.py", "google", "pip install 'agent-otel[google-adk]'"),
        ("strands_agent.py", "strands", "pip install 'agent-otel[strands-agents]'"),
        ("smolagents_agent.py", "smolagents", "pip install 'agent-otel[smolagents]'"),
        ("llama_index_agent.py", "llama_index", "pip install 'agent-otel[llama-index]'"),
        ("crewai_agent.py", "crewai", "pip install 'agent-otel[crewai]'"),
    ],
)
def test_a_framework_example_without_its_extra_names_the_install_in_one_line(
    example: str, module: str, install: str, tmp_path: Path
) -> None:
    # A sitecustomize on the path makes the framework's import fail, as when not installed.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {module!r}:\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run([sys.executable, str(EXAMPLES / example)], capture_output=True,
                          text=True, timeout=60, env=env, check=False)  # fmt: skip

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert install in done.stderr

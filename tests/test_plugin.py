"""The pytest plugin costs bystanders nothing: pytest imports it in every run of a project that
has agent-otel installed, so importing it loads neither the OTel SDK nor agent-otel's
recording modules; the fixtures import what they need when a test asks for them.

Each check runs in a fresh interpreter or a fresh pytest in an empty folder: this process has
long since imported everything.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agent_otel
import agent_otel.testing

pytestmark = pytest.mark.heavy  # fresh interpreters and pytest runs: run by the heavy suite

HEAVY = ("opentelemetry.sdk", "agent_otel.recording", "agent_otel.exporting")
LOADED = """
import json, sys
{imports}
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "agent_otel")))))
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTEST_"))}


def loaded_after(imports: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(imports=imports)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=_env(),
    )
    modules: list[str] = json.loads(done.stdout)
    return modules


def run_pytest(folder: Path, test: str, *options: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_bystander.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=False,
    )


def test_importing_the_plugin_loads_no_sdk_and_no_recording_module() -> None:
    modules = loaded_after("import pytest, agent_otel.testing.plugin")

    assert "agent_otel.testing.plugin" in modules
    assert [m for m in modules if m.startswith(HEAVY)] == []
    assert set(modules) <= {
        "agent_otel",
        "agent_otel._lazy",
        "agent_otel._version",
        "agent_otel.testing",
        "agent_otel.testing.plugin",
    }


def test_a_bystanding_pytest_run_loads_the_plugin_but_not_the_sdk(tmp_path: Path) -> None:
    done = run_pytest(
        tmp_path,
        "import sys\n"
        "def test_nothing_loaded():\n"
        "    assert 'agent_otel.testing.plugin' in sys.modules  # the plugin is active\n"
        "    heavy = [m for m in sys.modules if m.startswith(" + repr(HEAVY) + ")]\n"
        "    assert heavy == []\n",
        # langsmith (a LangGraph dependency, extra ``langgraph``) and Logfire (figure 3's peer,
        # extra ``bench``) have pytest plugins of their own that import the OTel SDK: not ours
        # to measure here.
        "-p",
        "no:langsmith_plugin",
        "-p",
        "no:logfire",
        "-p",
        "no:pytest_logfire",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_fixtures_import_what_they_need_when_asked(tmp_path: Path) -> None:
    done = run_pytest(
        tmp_path,
        "import sys\n"
        "def test_fixtures(otel_telemetry, otel_clock):\n"
        "    from opentelemetry.sdk.trace import TracerProvider\n"
        "    assert isinstance(otel_telemetry.tracer_provider, TracerProvider)\n"
        "    assert otel_clock() < otel_clock()\n"
        "    assert 'opentelemetry.sdk.trace' in sys.modules\n",
    )
    assert done.returncode == 0, done.stdout + done.stderr


_RUNNERS = """
import asyncio
import pytest
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta

TREE = [["invoke_agent a", [["step 0", ["chat m"]]]]]


async def _run(telemetry):
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="hi"), LLMCallEnd()])
    wrapper = telemetry.wrapper(agent_name="a")
    await agent.invoke([Message(role="user", content="x")], stream_wrapper=wrapper)


@pytest.mark.asyncio
async def test_pytest_asyncio(otel_telemetry, otel_clock, otel_internal_errors):
    await _run(otel_telemetry)
    assert otel_telemetry.outline() == TREE and otel_internal_errors == []


@pytest.mark.anyio
async def test_anyio(otel_telemetry, otel_clock, otel_internal_errors):
    await _run(otel_telemetry)
    assert otel_telemetry.outline() == TREE and otel_internal_errors == []


class TestInAClass:
    @pytest.mark.asyncio
    async def test_method(self, otel_telemetry):
        await _run(otel_telemetry)
        assert otel_telemetry.outline() == TREE

    def test_plain(self, otel_telemetry, otel_clock):
        asyncio.run(_run(otel_telemetry))
        assert otel_telemetry.outline() == TREE
"""


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_the_fixtures_serve_every_async_runner_and_class_based_tests(
    tmp_path: Path, mode: str
) -> None:
    """docs/testing.md: the fixtures are plain (synchronous) ones, so a test takes them under
    pytest-asyncio in either mode, anyio's marker, or as a method of a test class."""
    done = run_pytest(tmp_path, _RUNNERS, "-o", f"asyncio_mode={mode}", "-W", "ignore")
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout + done.stderr


def test_dash_p_no_agent_otel_turns_the_plugin_off(tmp_path: Path) -> None:
    """The README's switch: with the plugin off, its fixtures are unknown and it is not loaded."""
    test = (
        "import sys\n"
        "def test_off():\n"
        "    assert 'agent_otel.testing.plugin' not in sys.modules\n"
        "def test_needs_fixture(otel_telemetry):\n"
        "    pass\n"
    )
    done = run_pytest(tmp_path, test, "-p", "no:agent_otel")

    assert "fixture 'otel_telemetry' not found" in done.stdout
    assert "1 passed, 1 error" in done.stdout


def test_lazy_package_still_shows_and_imports_every_public_name() -> None:
    for package in (agent_otel, agent_otel.testing):
        assert set(package.__all__) <= set(dir(package))
        for name in package.__all__:
            assert getattr(package, name) is not None
    assert agent_otel.otel_wrapper.__module__ == "agent_otel.recording._wrapper"
    modules = loaded_after("from agent_otel import *; from agent_otel.testing import *")
    assert "opentelemetry.sdk.trace" in modules  # configure, Telemetry, InMemoryTelemetry


def test_an_unknown_name_is_an_attribute_error() -> None:
    for package in (agent_otel, agent_otel.testing):
        with pytest.raises(AttributeError, match="no_such_name"):
            package.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_with_plugin_autoload_off_the_page_says_how_to_load_it(tmp_path: Path) -> None:
    """``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (a common CI setting) leaves the fixtures unknown:
    pytest says only "fixture 'otel_telemetry' not found", before any code of ours runs. The
    testing page names that cause and the load it needs; the load it gives works."""
    (tmp_path / "test_fixture.py").write_text(
        "def test_needs_fixture(otel_telemetry):\n    assert otel_telemetry.spans() == []\n"
    )

    def pytest_run(*options: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            check=False,
        ).stdout

    assert "fixture 'otel_telemetry' not found" in pytest_run()
    page = (Path(__file__).resolve().parents[1] / "docs" / "testing.md").read_text()
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" in page, "the page names no cause"
    assert "fixture 'otel_telemetry' not found" in page, "the page quotes no message"
    loads = re.findall(r"`pytest (-p [\w.]+)`", page)
    assert loads, "the page shows no -p option that loads the plugin"
    done = pytest_run(*loads[0].split())
    assert "1 passed" in done, done

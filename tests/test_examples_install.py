"""Every example in the quickstart's install (``pip install -e .``, no extras): it runs, or it
exits with one line naming the ``pip install`` to run; never a traceback. And every example
states its extras at the top of its docstring (``Extra: none``, ``Extra: ``name````,
or ``Extras: ``a``, ``b````).

The quickstart's install is reproduced by blocking, in the example's interpreter, every
top-level module that neither the standard library nor agent-otel's base requirements (read
from the installed metadata, recursively) provide."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.heavy  # each example in a blocked interpreter, 3 s: run by the heavy suite

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
EXTRA = re.compile(r"^Extras?: (?:none\b|(?P<names>``[\w-]+``(?:, ``[\w-]+``)*))", re.M)


def _top_level(dist: Distribution) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for file in dist.files or []:
        first = file.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".data")) or first in ("..", "__pycache__"):
            continue
        names.add(first.removesuffix(".py") if len(file.parts) == 1 else first)
    return {n for n in names if n.isidentifier()}


def base_modules() -> set[str]:
    """Top-level modules of agent-otel's base requirements, recursively, without extras."""
    modules, seen, todo = {"agent_otel", "agent_contract"}, set(), ["agent-otel"]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        modules |= _top_level(dist)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return modules


BLOCKER = textwrap.dedent(
    """
    import sys, sysconfig
    from importlib.machinery import PathFinder

    ALLOWED = set({allowed!r})
    SITE = tuple({{sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}})

    class QuickstartInstall:
        # a top-level module installed in site-packages that the base install lacks is missing
        def find_spec(self, name, path=None, target=None):
            if "." in name or name in ALLOWED:
                return None
            spec = PathFinder.find_spec(name)
            where = [spec.origin] if spec and spec.origin else list(
                (spec.submodule_search_locations or []) if spec else []
            )
            if any(str(w).startswith(SITE) for w in where):
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, QuickstartInstall())
    """
)


SEND_TO_NOBODY = {"send_to_collector.py": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}}


@pytest.fixture(scope="module")
def quickstart_install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("quickstart-install")
    allowed = base_modules() | {p.stem for p in EXAMPLES} | {"_distutils_hack"}
    (site / "sitecustomize.py").write_text(BLOCKER.format(allowed=sorted(allowed)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT / "contract")])
    return env


def _extra(path: Path) -> str | None:
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    found = EXTRA.search(docstring)
    assert found, f"{path.name}: its docstring states no 'Extra: none' or 'Extra: ``name``'"
    return ",".join(re.findall(r"``([\w-]+)``", found["names"])) if found["names"] else None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_example_states_an_extra_the_project_has(path: Path) -> None:
    import tomllib

    extra = _extra(path)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for name in (extra or "").split(","):
        assert not name or name in extras["optional-dependencies"], name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_example_runs_in_the_quickstarts_install(
    path: Path, quickstart_install: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**quickstart_install, **SEND_TO_NOBODY.get(path.name, {})},
        cwd=path.parent,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    extra = _extra(path)
    if extra is None:
        return  # it ran (its own test checks what it prints); the exit status is its own
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert f"pip install 'agent-otel[{extra}]'" in done.stderr


def test_every_public_name_imports_in_the_quickstarts_install(
    quickstart_install: dict[str, str],
) -> None:
    """``from agent_otel import *`` without any extra: a name whose module needs an extra's
    package (a2a-sdk, rich, ...) lives on its own public path, never in ``agent_otel``'s
    names, or the star import of every user without that extra would fail."""
    script = (
        "import agent_otel, agent_otel.testing\n"
        "from agent_otel import *\n"
        "from agent_otel.testing import *\n"
        "for package in (agent_otel, agent_otel.testing):\n"
        "    for name in package.__all__:\n"
        "        assert getattr(package, name) is not None, name\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=quickstart_install,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

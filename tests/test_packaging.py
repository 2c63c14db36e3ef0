"""The built wheel and sdist hold exactly what they should: listed against expected files.

The wheel: the two packages' modules and ``py.typed`` markers, and the metadata with the
Apache-2.0 ``LICENSE``. The sdist: what a user needs to build and test (the packages, tests
with their vendored data, examples, benchmarks, docs, the compose stack and its configs) and
nothing by accident: with a git checkout, exactly the tracked files of those folders, so a
stray or ignored file (``__pycache__``, ``.venv``, a scratch file) cannot slip in.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from agent_otel import __version__

pytestmark = pytest.mark.heavy  # builds the sdist and the wheel, 7 s: run by the heavy suite

ROOT = Path(__file__).resolve().parents[1]
NAME = f"agent_otel-{__version__}"
SDIST_FOLDERS = ("src", "contract", "tests", "examples", "benchmarks", "docs", "exporters", "tools")
SDIST_FILES = {
    "PKG-INFO",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    ".gitignore",
    "docker-compose.otel.yml",
    "CHANGELOG.md",
    "mkdocs.yml",
}
METADATA = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}
NEVER = ("__pycache__", ".pyc", ".venv", ".hypothesis", ".pytest_cache", ".mypy_cache", ".egg")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def source_files(*folders: str) -> set[str]:
    """Files of ``folders``: git's tracked files when this is a checkout, else those on disk."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", *folders],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if tracked.returncode == 0 and (ROOT / ".git").exists():
        return {f for f in tracked.stdout.split("\0") if f and (ROOT / f).is_file()}
    on_disk = (p for folder in folders for p in (ROOT / folder).rglob("*") if p.is_file())
    return {str(p.relative_to(ROOT)) for p in on_disk if not any(n in str(p) for n in NEVER)}


def test_wheel_holds_the_packages_and_the_licence(dist: Path) -> None:
    names = set(zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl").namelist())

    package_files = {
        str(Path(f).relative_to(Path(f).parts[0]))
        for f in source_files("src/agent_otel", "contract/agent_contract")
        if f.endswith((".py", "py.typed"))
    }
    expected = package_files | {f"{NAME}.dist-info/{m}" for m in METADATA}
    assert sorted(names - expected) == [], "in the wheel by accident"
    assert sorted(expected - names) == [], "missing from the wheel"
    licence = zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl").read(
        f"{NAME}.dist-info/licenses/LICENSE"
    )
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in licence


def test_sdist_holds_what_a_user_needs_to_build_and_test(dist: Path) -> None:
    with tarfile.open(dist / f"{NAME}.tar.gz") as sdist:
        members = [m for m in sdist.getmembers() if m.isfile()]
        names = {m.name.removeprefix(f"{NAME}/") for m in members}
        licence = sdist.extractfile(f"{NAME}/LICENSE")
        assert licence is not None and licence.read() == (ROOT / "LICENSE").read_bytes()

    expected = SDIST_FILES | source_files(*SDIST_FOLDERS)
    assert sorted(names - expected) == [], "in the sdist by accident (untracked? git add it)"
    assert sorted(expected - names) == [], "missing from the sdist"
    assert not [n for n in names if any(part in n for part in NEVER)]
    assert "tests/semconv/registry.yaml" in names  # the tests' vendored data


def test_the_licence_is_the_apache_2_0_text() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n")
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()

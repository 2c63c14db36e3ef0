"""The documentation builds as a site (mkdocs, Material theme) in strict mode: a broken link
or anchor in any page, one added later included, fails the build. mkdocs comes with the dev
extra; the page list is docs/ itself, so a new page needs no nav entry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy  # the whole site (.ci/run builds it again): the heavy suite

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")
pytest.importorskip("material")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*")}
    for page in (ROOT / "docs").glob("*.md"):  # every page, with no nav entry to forget
        name = "index.html" if page.stem == "README" else f"{page.stem}/index.html"
        assert name in built, page.name
    assert "CHANGELOG/index.html" in built  # linked from docs/, outside it


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for entry in ("docs", "mkdocs.yml", "README.md", "CHANGELOG.md", "exporters", "benchmarks"):
        source = ROOT / entry
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / entry)
    (copy / "docs" / "new-page.md").write_text(
        "# New\n\n[a](tracing.md#no-such-heading) and [b](no-such-page.md).\n"
    )
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "does not contain an anchor '#no-such-heading'" in done.stderr
    assert "'no-such-page.md'" in done.stderr

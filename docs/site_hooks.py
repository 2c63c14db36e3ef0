"""mkdocs hooks: the pages link to repository files outside docs/ (the changelog, READMEs,
source files), which a site built from docs/ alone would report as broken.

Markdown files the docs link to from outside docs/ (CHANGELOG.md, exporters/README.md, ...)
become pages of the site at their repository path; a link to any other existing repository
file or folder becomes its path as code (the site has no repository browser); a link to
nothing is left for mkdocs to report, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")
_pulled: set[str] = set()  # repository paths of outside pages in the site


def _repo_path(page: str, target: str) -> str | None:
    """The repository path a relative link of the page at repository path ``page`` names."""
    if re.match(r"^[a-z]+:|^#|^/", target):
        return None
    path = target.partition("#")[0]
    if not path:
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), path))


def _outside_pages() -> set[str]:
    found = set()
    for page in (ROOT / "docs").rglob("*.md"):
        repo_page = page.relative_to(ROOT).as_posix()
        for match in LINK.finditer(page.read_text()):
            path = _repo_path(repo_page, match["target"])
            outside = path and not path.startswith("docs/") and path != "README.md"
            if outside and path.endswith(".md") and (ROOT / path).is_file():
                found.add(path)
    return found


def on_files(files: Files, config: Any) -> Files:
    _pulled.clear()
    for path in sorted(_outside_pages()):
        _pulled.add(path)
        files.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    site_path = page.file.src_uri
    repo_page = site_path if site_path in _pulled else f"docs/{site_path}"

    def rewrite(match: re.Match[str]) -> str:
        target = match["target"]
        path = _repo_path(repo_page, target)
        if path is None or not (ROOT / path).exists():
            return match[0]  # external, an anchor, or broken: mkdocs validates it
        anchor = target.partition("#")[2]
        if path.startswith("docs/"):
            site_target = path.removeprefix("docs/")
        elif path in _pulled:
            site_target = path
        else:
            return f"{match['text']} (`{path}`)" if f"`{path}`" != match["text"] else match[0]
        relative = posixpath.relpath(site_target, posixpath.dirname(site_path) or ".")
        return f"[{match['text']}]({relative}{'#' + anchor if anchor else ''})"

    # "```python no-run" marks a snippet tests/test_docs.py does not run: plain Python here
    markdown = re.sub(r"^(\s*```\w+) no-run\s*$", r"\1", markdown, flags=re.M)
    return LINK.sub(rewrite, markdown)

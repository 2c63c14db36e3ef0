"""README.md and every docs/*.md page hold: each Python snippet runs, each reference resolves.

The rules (also in ``docs/README.md``, for whoever adds a page):

* A fenced block whose info string is exactly ``python`` runs as written, as a script, in a
  fresh interpreter of this venv, in an empty temporary folder, with no ``OTEL_*`` variable
  set; it must exit 0 without a traceback. A block holding a test function (a line starting
  with ``def test_`` or ``async def test_``) is run with ``python -m pytest`` instead and must
  pass.
* ``python no-run`` skips a block; its first line must be a ``# no-run: <reason>`` comment.
  Any other info string starting with ``python``/``py`` is an error, so no block is skipped
  by a typo.
* Every relative Markdown link points at a file or folder of the repository, and its
  ``#anchor`` at a heading of the target page. Every path-like token (in inline code, or in a
  non-Python code block) whose first part is a top-level entry of the repository exists;
  an MCP method name (``tools/call``: a member of ``mcp.method.name`` in the vendored MCP
  conventions) is a protocol's word, not a path.
  External links are only checked for form: the tests run offline.
* The README stays a short tour: at most about 200 lines, with its six sections in order.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import semconv_registry as semconv

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```+|~~~+)\s*(.*)$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
PATH_LIKE = re.compile(r"^[\w.\-]+(/[\w.\-]*)+$")
TEST_FUNCTION = re.compile(r"^(async\s+)?def test_", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    info: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def parse(page: Path) -> tuple[list[Block], str]:
    """The fenced code blocks of ``page``, and its prose: the text outside them."""
    found: list[Block] = []
    text: list[str] = []
    opened: tuple[str, int, str] | None = None
    lines: list[str] = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        match = FENCE.match(line)
        if opened is None:
            if match:
                opened, lines = (match.group(1), number, match.group(2).strip()), []
            else:
                text.append(line)
        elif match and match.group(1).startswith(opened[0]) and not match.group(2):
            found.append(Block(page, opened[1], opened[2], "\n".join(lines) + "\n"))
            opened = None
        else:
            lines.append(line)
    assert opened is None, f"{page.relative_to(ROOT)}:{opened[1]}: unclosed code block"
    return found, "\n".join(text)


def blocks(page: Path) -> list[Block]:
    return parse(page)[0]


def prose(page: Path) -> str:
    return parse(page)[1]


def python_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.info.split(" ")[0] in PYTHONISH]


PYTHONISH = {"python", "py", "python3", "pycon", "py3"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.mark.heavy  # each snippet in a fresh interpreter (a pytest one for a test): heavy suite
@pytest.mark.parametrize("block", python_blocks(), ids=lambda b: b.id)
def test_python_snippet_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.info == "python no-run":
        first = block.code.splitlines()[0] if block.code.strip() else ""
        assert re.match(r"#\s*no-run:\s*\S", first), f"{block.id}: say why on the first line"
        pytest.skip(f"{block.id}: {first.split(':', 1)[1].strip()}")
    assert block.info == "python", f"{block.id}: use `python` or `python no-run`"
    if TEST_FUNCTION.search(block.code):
        (tmp_path / "test_snippet.py").write_text(block.code)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command.append("test_snippet.py")
    else:
        (tmp_path / "snippet.py").write_text(block.code)
        command = [sys.executable, "snippet.py"]
    done = subprocess.run(
        command, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.id} failed:\n{output}"
    assert "Traceback" not in output, f"{block.id} printed a traceback:\n{output}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in prose(page).splitlines():
        if match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def _ignored() -> set[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return {line.strip().strip("/") for line in lines if line.strip()} | {".git"}


TOP_LEVEL = {p.name for p in ROOT.iterdir()} - _ignored()
# MCP methods read like paths under tools/ (tools/call, tools/list): the conventions name them.
MCP_METHODS = frozenset(semconv.mcp_attributes()["mcp.method.name"].members)


def file_references(page: Path) -> list[str]:
    """Path-like tokens naming something in the repository: in inline code or shell blocks."""
    tokens = [m.group(2).strip() for m in CODE_SPAN.finditer(prose(page))]
    for block in blocks(page):
        if block.info.split(" ")[0] not in PYTHONISH:
            tokens.extend(block.code.split())
    refs = []
    for token in tokens:
        token = token.strip("'\"(),:;")
        if token in MCP_METHODS:
            continue
        if PATH_LIKE.match(token) and token.split("/")[0] in TOP_LEVEL:
            refs.append(token)
    return refs


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(CODE_SPAN.sub("", prose(page))):
        parts = urlsplit(target)
        if parts.scheme in ("http", "https"):
            if not parts.netloc:
                broken.append(f"{target}: no host")
            continue
        if parts.scheme:  # mailto: and the like
            continue
        path = (page.parent / parts.path).resolve() if parts.path else page
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(f"{target}: no such file in the repository")
        elif parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
            broken.append(f"{target}: no heading #{parts.fragment} in {path.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_reference_exists(page: Path) -> None:
    missing = sorted({ref for ref in file_references(page) if not (ROOT / ref).exists()})
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_rules_catch_what_they_should(tmp_path: Path) -> None:
    """The checkers themselves: a broken link, a missing file, an unmarked snippet are found."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A `code` heading: here\n\n[ok](#a-code-heading-here) [bad](#nope)\n"
        "`src/agent_otel/nowhere.py` and `examples/quickstart.py`, `tools/call` `tools/calls`\n\n"
        "```py\nprint(1)\n```\n\n```bash\npython examples/missing.py\n```\n"
        "```text\nexecute_tool add\n  tools/call add [SERVER]\n```\n"
    )
    assert anchors(page) == {"a-code-heading-here"}
    assert file_references(page) == [
        "src/agent_otel/nowhere.py",
        "examples/quickstart.py",
        "tools/calls",  # not an MCP method: a path under tools/, checked
        "examples/missing.py",
    ]
    [py, bash, _] = blocks(page)
    assert (py.info, py.code, py.line) == ("py", "print(1)\n", 6)
    assert bash.info == "bash"
    assert LINK.findall(prose(page)) == ["#a-code-heading-here", "#nope"]


README_MAX_LINES = 220  # "at most about 200": room for the link lines each issue adds
README_SECTIONS = ("## Quickstart", "## Use", "## Decorate", "## Export and view", "## Test")


def test_readme_is_a_short_tour() -> None:
    """What it is, quickstart, use, decorate, export and view, test; reference goes to docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, "move reference material to a docs/ page"
    headings = [line for line in lines if line.startswith("## ")]
    found = [next((h for h in headings if h.startswith(s)), None) for s in README_SECTIONS]
    assert None not in found, f"missing sections: {README_SECTIONS} in {headings}"
    assert found == sorted(found, key=headings.index), "the sections' order"


def unlisted(index: str, pages: list[str]) -> list[str]:
    """The pages the index's list links to none of: a page only other pages link to is one
    a reader browsing the index never finds."""
    listed = set(re.findall(r"^- \[[^\]]*\]\(([^)#\s]+)", index, re.MULTILINE))
    return sorted(page for page in pages if page not in listed)


def test_the_index_lists_every_page() -> None:
    """docs/README.md, the site's index, lists every other page of docs/."""
    pages = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "README.md"]
    missing = unlisted((ROOT / "docs" / "README.md").read_text(), pages)
    assert not missing, f"docs/README.md lists no entry for {missing}"


def test_the_index_check_finds_a_page_only_linked_in_prose() -> None:
    index = "- [a.md](a.md): a\n- [b](b.md#part): b\n\nSee [c.md](c.md).\n"
    assert unlisted(index, ["a.md", "b.md", "c.md"]) == ["c.md"]

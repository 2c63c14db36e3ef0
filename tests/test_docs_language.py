"""User docs speak of the product, not of how it was developed: no issue numbers, no "seeds",
no paths outside the repository, no "oracle" left unexplained, and benchmark figures linked
rather than named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
CODE = re.compile(r"`[^`\n]+`")
PARENT_PATH = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-]*")
FIGURE_LINK = re.compile(r"\[[^\]]*\bfigures? \d[^\]]*\]\(benchmarks\.md(?:#[\w-]+)?\)", re.I)

RULES = {
    "an issue number": re.compile(r"\bissues? \d", re.I),
    "'seed'": re.compile(r"\bseeds?\b", re.I),
    "'oracle' (say what it is: the differential test against the reference)": re.compile(
        r"\boracle", re.I
    ),
}


def prose(markdown: str) -> str:
    """The page without code blocks, HTML comments (machinery markers) and inline code."""
    return CODE.sub("", COMMENT.sub("", FENCE.sub("", markdown)))


def problems(page: Path, markdown: str | None = None) -> list[str]:
    """What the page at ``page`` (its text read from there unless given) says that it should not."""
    text = prose(page.read_text() if markdown is None else markdown)
    found = [f"{what}: {m[0]!r}" for what, rule in RULES.items() for m in rule.finditer(text)]
    found += [
        f"a path outside the repository: {m[0]!r}"
        for m in PARENT_PATH.finditer(text)
        if not (page.parent / m[0]).resolve().is_relative_to(ROOT)
    ]
    if page.name != "benchmarks.md":
        named = re.findall(r"\bfigures? \d+", FIGURE_LINK.sub("", text), re.I)
        found += [f"a benchmark figure named, not linked: {n!r}" for n in named]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_speak_of_the_product(page: Path) -> None:
    assert problems(page) == []


def test_the_rules_catch_what_they_should() -> None:
    markdown = (
        "Since issue 9, the seeds and ../../notes; the oracle says so; see figure 2.\n"
        "Fine: [the changelog](../CHANGELOG.md).\n"
        "Fine: [figure 3](benchmarks.md#latest) and `tests/test_oracle.py`.\n"
        "<!-- oracle:begin -->\n```python\nrandom.seed(1)\n```\n"
    )
    assert len(problems(ROOT / "docs" / "page.md", markdown)) == 5

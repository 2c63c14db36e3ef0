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
FIGURE_LINK = re.compile(r"\[[^\]]*\bfigures? \d[^\]]*\]\(benchmarks\.md(?:#[\w-]+)?\)", re.I)

RULES = {
    "an issue number": re.compile(r"\bissues? \d", re.I),
    "'seed'": re.compile(r"\bseeds?\b", re.I),
    "a path outside the repository": re.compile(r"\.\./shared"),
    "'oracle' (say what it is: the differential test against the reference)": re.compile(
        r"\boracle", re.I
    ),
}


def prose(page: Path) -> str:
    """The page without code blocks, HTML comments (machinery markers) and inline code."""
    return CODE.sub("", COMMENT.sub("", FENCE.sub("", page.read_text())))


def problems(page: Path) -> list[str]:
    text = prose(page)
    found = [f"{what}: {m[0]!r}" for what, rule in RULES.items() for m in rule.finditer(text)]
    if page.name != "benchmarks.md":
        named = re.findall(r"\bfigures? \d+", FIGURE_LINK.sub("", text), re.I)
        found += [f"a benchmark figure named, not linked: {n!r}" for n in named]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_speak_of_the_product(page: Path) -> None:
    assert problems(page) == []


def test_the_rules_catch_what_they_should(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Since issue 9, the seeds and ../shared; the oracle says so; see figure 2.\n"
        "Fine: [figure 3](benchmarks.md#latest) and `tests/test_oracle.py`.\n"
        "<!-- oracle:begin -->\n```python\nrandom.seed(1)\n```\n"
    )
    assert len(problems(page)) == 5

"""docs/options.md lists every public parameter of the public entry points, and nothing else.

Read from the signatures through ``inspect`` (what users call), so it holds whatever the
functions are built from; ``**options: Unpack[SomeTypedDict]`` counts each key of the dict.
"""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typing_extensions
from typing_extensions import TypedDict, Unpack

from agent_otel import ContentCapture, TailSamplingPolicy, configure, instrument, otel_wrapper

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "options.md"
DOCUMENTED: dict[str, Callable[..., Any]] = {
    "otel_wrapper()": otel_wrapper,
    "instrument()": instrument,
    "configure()": configure,
    "ContentCapture": ContentCapture,
    "TailSamplingPolicy": TailSamplingPolicy,
}


def public_parameters(fn: Callable[..., Any]) -> set[str]:
    names: set[str] = set()
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            names |= _unpacked(fn, parameter.name)
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            names.add(parameter.name)
    return {name for name in names if not name.startswith("_")}


def _unpacked(fn: Callable[..., Any], name: str) -> set[str]:
    """The keys of ``**kwargs: Unpack[TypedDict]``; a bare ``**kwargs`` documents nothing.

    Read without evaluating every annotation (some exist for type checkers only)."""
    function = inspect.unwrap(fn)
    annotation = inspect.signature(function).parameters[name].annotation
    if isinstance(annotation, str):
        match = re.fullmatch(r"(?:\w+\.)?Unpack\[(\w+)\]", annotation.strip())
        target = function.__globals__.get(match[1]) if match else None
    else:
        args = typing.get_args(annotation)
        target = args[0] if args else None
    if target is not None and typing_extensions.is_typeddict(target):
        return set(target.__required_keys__) | set(target.__optional_keys__)
    return set()


def sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## `([^`]+)`\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def documented(section: str) -> set[str]:
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


@pytest.mark.parametrize("title", DOCUMENTED)
def test_every_parameter_is_documented_and_every_documented_one_exists(title: str) -> None:
    found = sections(PAGE.read_text())
    assert title in found, f"docs/options.md has no section ## `{title}`"
    actual, listed = public_parameters(DOCUMENTED[title]), documented(found[title])
    assert not actual - listed, f"{title}: not in docs/options.md: {sorted(actual - listed)}"
    assert not listed - actual, f"{title}: documented, no longer exists: {sorted(listed - actual)}"


def test_the_check_catches_a_missing_and_a_stale_option() -> None:
    def f(a: int, *, b: int = 0, **kwargs: Any) -> None: ...

    page = "## `f()`\n\n| option | default |\n|---|---|\n| `a`, `c` | x |\n"
    listed = documented(sections(page)["f()"])
    assert public_parameters(f) - listed == {"b"}
    assert listed - public_parameters(f) == {"c"}


class _Options(TypedDict, total=False):
    agent_name: str
    session_id: str


def _typed(**options: Unpack[_Options]) -> None: ...


def test_typed_keyword_options_count_each_key() -> None:
    assert public_parameters(_typed) == {"agent_name", "session_id"}


def test_pages_that_mention_options_point_here() -> None:
    for page in ("README.md", "docs/tracing.md", "docs/configure.md"):
        assert "options.md" in (ROOT / page).read_text(), page


ENV = r"[A-Z][A-Z0-9]*_[A-Z0-9_]+"  # a variable named as the default: read, not a literal


def literal_defaults(section: str) -> dict[str, str]:
    """Each option whose default cell (after its type's) is one backticked literal per name, by
    name (``| `a`, `b` | `int` | `1`, `2` |``); a default told in words (the global ones, a
    variable) is not read."""
    found: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 3:
            continue
        names = re.findall(r"`(\w+)`", cells[0])
        values = re.fullmatch(r"`([^`]+)`(?:, `([^`]+)`)*", cells[2])
        literals = re.findall(r"`([^`]+)`", cells[2]) if values else []
        if len(literals) == len(names) and not any(re.fullmatch(ENV, v) for v in literals):
            found.update(zip(names, literals, strict=True))
    return found


NOT_A_SETTING = object()  # an option the settings hold under another name, or resolved


def _default_of(title: str, name: str) -> object:
    """The default the code gives ``name``: the signature's, else (``otel_wrapper()``'s
    options, a TypedDict with none) the settings a run starts from with no options."""
    parameter = inspect.signature(DOCUMENTED[title]).parameters.get(name)
    if parameter is not None and parameter.default is not inspect.Parameter.empty:
        return parameter.default
    from agent_otel.recording._options import settings_from

    value = getattr(settings_from({}), name, NOT_A_SETTING)
    return value if type(value) is bool else NOT_A_SETTING  # a flag is kept as given


@pytest.mark.parametrize("title", DOCUMENTED)
def test_every_literal_default_is_the_codes(title: str) -> None:
    wrong = []
    for name, said in literal_defaults(sections(PAGE.read_text())[title]).items():
        actual = _default_of(title, name)
        if actual is NOT_A_SETTING:
            continue
        try:
            value = ast.literal_eval(said)
        except (ValueError, SyntaxError):  # an address, a name: its text
            value = said
        if value != actual or type(value) is not type(actual):
            wrong.append(f"{name}: documented {said}, is {actual!r}")
    assert not wrong, f"docs/options.md, {title}: {wrong}"


def test_the_default_check_reads_literals_only() -> None:
    section = (
        "| option | type | default | meaning |\n|---|---|---|---|\n| `a` | `bool` | `True` | x |\n"
        "| `b`, `c` | `int` | `1`, `'x'` | y |\n| `d` | `P` | the global one | z |\n"
        "| `e` | `int` | `V`, else `2` | w |\n| `f` | `str` | `127.0.0.1` | v |\n"
        "| `g` | `str` | `OTEL_X_Y` | u |\n"
    )
    assert literal_defaults(section) == {"a": "True", "b": "1", "c": "'x'", "f": "127.0.0.1"}


def _annotation(title: str, name: str) -> str:
    """The annotation of option ``name`` as written in the code: the signature's, else (an
    option of ``**options: Unpack[Options]``) the TypedDict's."""
    from agent_otel.recording._options import Options

    parameter = inspect.signature(DOCUMENTED[title]).parameters.get(name)
    if parameter is not None and parameter.kind is not inspect.Parameter.VAR_KEYWORD:
        annotation = parameter.annotation
    else:
        annotation = Options.__annotations__[name]
    return getattr(annotation, "__forward_arg__", annotation)


def _alternatives(annotation: str) -> list[str]:
    """``a | b[c | d] | None`` as its top-level alternatives: ``a``, ``b[c | d]``, ``None``."""
    found, depth, start = [], 0, 0
    for i, char in enumerate(annotation):
        depth += (char == "[") - (char == "]")
        if char == "|" and depth == 0:
            found.append(annotation[start:i].strip())
            start = i + 1
    return [*found, annotation[start:].strip()]


@pytest.mark.parametrize("title", DOCUMENTED)
def test_every_option_states_its_type_as_the_signature_does(title: str) -> None:
    """Each row says the option's type (its column after the name): the alternatives of its
    annotation, each in backticks, ``or`` between them. A newcomer read ``scrub`` or
    ``capture_content``'s accepted types only from prose, and a type changed in the code
    changed no page."""
    section = sections(PAGE.read_text())[title]
    header = next(line for line in section.splitlines() if line.startswith("| option"))
    assert [c.strip() for c in header.strip("|").split("|")][:3] == ["option", "type", "default"]
    wrong = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        said = re.findall(r"`([^`]+)`", cells[1])
        for name in re.findall(r"`(\w+)`", cells[0]):
            expected = _alternatives(_annotation(title, name))
            if said != expected:
                wrong.append(f"{name}: documented {said}, is {expected}")
    assert not wrong, f"docs/options.md, {title}: {wrong}"

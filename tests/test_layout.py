"""The layout a newcomer relies on: a map that matches the tree, cohesive modules, and the
import paths users write unchanged.

The names below are the ones the README, docs/ and examples import. Others may be added; none
of these may move or vanish (a move breaks every user's import line).
"""

from __future__ import annotations

import ast
import importlib
import re
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "agent_otel"

PUBLIC = {
    "agent_otel": [
        "ContentCapture",
        "ContentKind",
        "Redactor",
        "StreamWrapper",
        "Telemetry",
        "__version__",
        "configure",
        "extract_context",
        "inject_context",
        "instrument",
        "is_instrumented",
        "otel_wrapper",
        "run_context",
        "uninstrument",
        "with_trace_headers",
    ],
    "agent_otel.instrumentor": ["AgentInstrumentor"],
    "agent_otel.testing": ["FakeClock", "InMemoryTelemetry", "SequentialIdGenerator", "span_tree"],
    "agent_otel.testing.plugin": ["otel_telemetry", "otel_clock"],
    "agent_contract.protocol": [
        "AgentProtocol",
        "FunctionCall",
        "LLMCallEnd",
        "LLMCallStart",
        "Message",
        "StepBoundary",
        "TextDelta",
        "ToolCall",
        "ToolResult",
        "Usage",
    ],
    "agent_contract.agent": ["Agent", "MessageDelta", "MessageFinal", "StreamEvent", "RunUsage"],
    "agent_contract.examples": ["ScriptedAgent"],
    "agent_contract.invoke": ["StreamingAgent"],
}


def modules() -> list[Path]:
    return sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "contract").rglob("*.py")])


def test_docs_layout_lists_every_module_and_nothing_else() -> None:
    """docs/layout.md names every module by its path under src/agent_otel/, and only those."""
    text = (ROOT / "docs" / "layout.md").read_text()
    named = set(re.findall(r"`([A-Za-z0-9_/]+\.py)`", text)) - {"__init__.py"}
    named = {name for name in named if not name.startswith("tests/")}
    tree = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert not tree - named, f"docs/layout.md does not list {sorted(tree - named)}"
    assert not named - tree, f"docs/layout.md lists modules that do not exist: {named - tree}"


# Words in a folder's docstring that name no module beside it, on purpose (a field, not a module).
_NOT_MODULES = {"remote/__init__.py": {"_meta"}}


@pytest.mark.parametrize(
    "path",
    sorted([*PACKAGE.rglob("__init__.py"), *(ROOT / "contract").rglob("__init__.py")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_folders_docstring_names_only_modules_it_holds(path: Path) -> None:
    """A folder's ``__init__`` docstring, the first page a newcomer reads there, names only
    modules that exist beside it (a module renamed or merged takes its name with it)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    here = {p.stem for p in path.parent.iterdir() if p.suffix == ".py" or p.is_dir()}
    allowed = _NOT_MODULES.get(str(path.relative_to(PACKAGE)) if PACKAGE in path.parents else "")
    named = set(re.findall(r"``(_[a-z][a-z0-9_]*)``", doc)) - (allowed or set())
    assert not named - here, f"{path.relative_to(ROOT)} names no such module: {named - here}"


# Reaching into another object's private attributes is how one class ends up cut across files;
# these are known and deliberate (a stdlib frame API; a wrapper reading its owner's counters in
# the same module; ``os._exit``, the documented way a forked child ends without exit hooks).
_PRIVATE_READS_ALLOWED = {
    ("standdown/_context.py", "sys"),
    ("exporting/_tally.py", "self._owner"),
    ("exporting/_process.py", "os"),
}


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_reads_another_objects_private_attributes(path: Path) -> None:
    where = str(path.relative_to(PACKAGE))
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or (
            isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        ):
            continue
        if (where, ast.unparse(node.value)) not in _PRIVATE_READS_ALLOWED:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not found, f"{where} reads private attributes of other objects: {found}"


# The span owners spell attribute keys; the modules that route events spell none (the values
# they pass on, end reasons and output types, are not keys).
_ROUTING = ("recording/_recorder.py", "recording/_read.py", "recording/_wrapper.py")
_VALUES = re.compile(r"(END|OUTPUT_TYPE)_[A-Z_]+")


@pytest.mark.parametrize("module", _ROUTING)
def test_the_modules_that_route_events_spell_no_attribute(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text())
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "A"
    }
    assert not {name for name in used if not _VALUES.fullmatch(name)}, module
    assert "set_attribute" not in (PACKAGE / module).read_text(), module


def test_the_three_layers_are_folders() -> None:
    package = ROOT / "src" / "agent_otel"
    folders = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert {"recording", "decorating", "exporting", "testing"} <= folders


@pytest.mark.parametrize(("module", "names"), PUBLIC.items(), ids=list(PUBLIC))
def test_public_import_paths_are_unchanged(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"from {module} import {', '.join(missing)} no longer works"
    if hasattr(imported, "__all__") and module.startswith("agent_otel"):
        assert set(names) - {"otel_telemetry", "otel_clock"} <= set(imported.__all__)


def test_entry_points_name_importable_objects() -> None:
    points = {(p.group, p.name): p for p in distribution("agent-otel").entry_points}
    assert points[("pytest11", "agent_otel")].value == "agent_otel.testing.plugin"
    assert points[("opentelemetry_instrumentor", "agent_otel")].load().__name__ == (
        "AgentInstrumentor"
    )
    for point in points.values():
        assert point.load() is not None, point.value


def _constants(path: Path) -> dict[str, str]:
    """The module-level names in capitals ``path`` assigns a literal to, with the literal."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Constant):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                found[target.id] = repr(value.value)
    return found


def test_a_shared_constant_is_written_once() -> None:
    """A constant agent-otel and the contract (or two of agent-otel's modules) share is written
    in one module and imported by the others (the contract never imports agent-otel, so the
    contract's is the one): a second copy drifts (a truncation mark spelt two ways, two depth
    limits where the content rule has one). Two meanings take two names: one name on both
    sides of the contract's line with another value reads as the same limit. Private names,
    and a public name each module of a family sets for itself (``MODULE``), are their own."""
    where: dict[str, list[tuple[str, str]]] = {}
    for path in modules():
        for name, value in _constants(path).items():
            if not name.startswith("_"):
                where.setdefault(name, []).append((str(path.relative_to(ROOT)), value))
    copied = {
        name: [path for path, _ in found]
        for name, found in where.items()
        if len(found) > 1
        and (
            len({value for _, value in found}) < len(found)  # the same value twice: a copy
            or len({path.startswith("contract/") for path, _ in found}) == 2  # both sides
        )
    }
    assert not copied, f"written in more than one module: {copied}"


def _private_constants(path: Path) -> dict[str, str]:
    """The module-level private names in capitals ``path`` assigns a constant to: a literal (a
    tuple of literals too), or a stateless helper made with no arguments (``Propagator()``);
    each with its source text. Mutable state (``{}``, ``set()``) and sentinels
    (``object()``) are each module's own."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is None:
            continue
        literal = isinstance(value, ast.Constant) or (
            isinstance(value, ast.Tuple) and all(isinstance(e, ast.Constant) for e in value.elts)
        )
        made = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id[:1].isupper()
            and not value.args
            and not value.keywords
        )
        if not (literal or made):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                found[target.id] = ast.unparse(value)
    return found


def test_a_private_constant_is_written_once() -> None:
    """A private constant two modules need (a factor, a header's name, a hint both adapters of
    one client give, a propagator) is written in one module and imported by the other: two
    copies drift apart. Caught: one private name given the same value in two modules, a key or
    mark (a string of no spaces) that a private name writes again where another module has
    it, and an attribute key (dotted) written again outside ``_attributes.py``, which names
    them."""
    by_name: dict[tuple[str, str], list[str]] = {}
    by_key: dict[str, list[tuple[str, str]]] = {}
    for path in modules():
        where = str(path.relative_to(ROOT))
        for name, value in _private_constants(path).items():
            if name.startswith("_"):
                by_name.setdefault((name, value), []).append(where)
        for name, value in {**_constants(path), **_private_constants(path)}.items():
            if value.startswith(("'", '"')) and len(value) >= 10 and " " not in value:
                by_key.setdefault(value, []).append((where, name))
    copied = [f"{name} = {value}: {paths}" for (name, value), paths in by_name.items()
              if len(paths) > 1]  # fmt: skip
    copied += [
        f"{value}: {found}"
        for value, found in by_key.items()
        if len({where for where, _ in found}) > 1
        and (
            any(name.startswith("_") for _, name in found)
            or ("." in value and any(w.endswith("/_attributes.py") for w, _ in found))
        )
    ]
    assert not copied, f"written in more than one module: {copied}"

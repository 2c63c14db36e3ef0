"""What a newcomer reads matches what they import: every public name, each parameter and
field of the public callables, and every environment variable the code reads is named in
README.md or docs/ (a name in ``__all__`` no page mentions lags the code)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_otel.recording._options import Options
from test_options_doc import _unpacked, public_parameters

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ["agent_otel", "agent_otel.testing", "agent_otel.instrumentor", "agent_otel.remote.a2a"]
# Telemetry(tracer_provider, meter_provider) is what a user builds; its keyword-only arguments
# are configure()'s own wiring of the handle it returns.
WIRING = {("Telemetry", "console"), ("Telemetry", "loss"), ("Telemetry", "exporters")}
WIRING |= {("Telemetry", "prometheus_server"), ("Telemetry", "shutdown_timeout_millis")}
# Set by the code for the SDK while it builds a provider, then restored: no user setting.
NOT_SETTINGS = {"OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED"}
# The repository's test and build tooling's, named in the code only to be told from a typo.
NOT_SETTINGS |= {"AGENT_OTEL_CHROMIUM", "AGENT_OTEL_DOCS_SCREENSHOTS", "AGENT_OTEL_TOOLS_CACHE"}


def _docs() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def _inline_words(text: str) -> set[str]:
    """Every identifier in the pages' inline code (and code blocks: a snippet names it too)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(re.findall(r"`([^`\n]+)`", text))))


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:  # agent_otel.remote.a2a needs the a2a extra
        pytest.skip(f"{name} needs an extra not installed here")


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_is_documented(module: str) -> None:
    words = _inline_words(_docs())
    missing = [name for name in _module(module).__all__ if name not in words]
    assert not missing, f"{module}: no page names {missing} in inline code"


@pytest.mark.parametrize("module", PUBLIC)
def test_every_parameter_and_field_of_a_public_callable_is_named(module: str) -> None:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _docs()))
    missing = []
    for name in _module(module).__all__:
        value = getattr(_module(module), name)
        if not callable(value):
            continue
        try:  # a class's are its __init__'s (there the **options: Unpack[...] is read)
            init = value.__init__ if isinstance(value, type) else value
            parameters = public_parameters(init) - {"self"}
        except (TypeError, ValueError):  # no signature (a typing alias)
            continue
        missing += [f"{name}({p})" for p in sorted(parameters - words) if (name, p) not in WIRING]
    assert not missing, f"{module}: no page names {missing}"


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    source = "\n".join(p.read_text() for p in sorted((ROOT / "src").rglob("*.py")))
    read = set(re.findall(r"\"((?:OTEL|AGENT_OTEL)_[A-Z0-9_]+|NO_COLOR)\"", source))
    text = _docs()
    # a family named with its own prefix (`OTEL_BSP_*`), not every variable (`OTEL_*`)
    families = [f for f in re.findall(r"`([A-Z0-9_]+_)\*`", text) if f.count("_") >= 2]
    missing = sorted(
        var
        for var in read - NOT_SETTINGS
        if not re.search(rf"\b{var}\b", text) and not any(var.startswith(f) for f in families)
    )
    assert not missing, f"read by the code, named on no page: {missing}"


def test_the_checks_find_what_is_missing() -> None:
    assert _inline_words("a `ContentCapture(max_bytes=1)` and ContentKind") == {
        "ContentCapture",
        "max_bytes",
    }


# `name(keyword=...)` in a page, outside a method call (`.instrument(`): the keywords given
CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(([^()`]*)")
KEYWORD = re.compile(r"(?:^|[,(\s])([a-z_]\w*)=(?!=)")


def _accepted(value: object) -> set[str] | None:
    """The keywords a public callable takes (a class: its ``__init__``'s), None when any goes
    (a bare ``**kwargs``) or it has no signature. ``**options: Unpack[Options]`` imported for
    type checkers only (``run_script``) is read from where the options live."""
    function: Any = value.__init__ if isinstance(value, type) else value  # type: ignore[misc]
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    names = public_parameters(function) - {"self"}
    for parameter in parameters:
        if parameter.kind is parameter.VAR_KEYWORD and not _unpacked(function, parameter.name):
            if "Unpack[Options]" not in str(parameter.annotation):
                return None
            names |= set(Options.__optional_keys__)
    return names


def misused_keywords(text: str, public: dict[str, set[str] | None]) -> list[str]:
    """Each ``name(keyword=`` in ``text`` where ``name`` is a public callable that takes no
    such keyword; a page's own function of that name (``async def remote_agent(``) and a
    mistake shown on purpose (followed by the "did you mean" it is told) are not calls of it."""
    found = []
    for match in CALL.finditer(text):
        name = match.group(1)
        takes = public.get(name)
        if takes is None or re.search(rf"\bdef {name}\(", text):
            continue
        if re.search(r"did\s+you\s+mean", text[match.end() : match.end() + 60]):
            continue
        for keyword in KEYWORD.findall(match.group(2)):
            if keyword not in takes:
                found.append(f"{name}({keyword}=...)")
    return found


def test_every_keyword_a_page_passes_to_a_public_callable_exists() -> None:
    """A page that calls a public name with a keyword it does not take lags the code: a
    reader copying it gets a ``TypeError`` (``TailSampler(keep_ratio=0.1)``: the ratio is the
    policy's, ``TailSamplingPolicy(keep_ratio=0.1)``)."""
    public: dict[str, set[str] | None] = {}
    for module in PUBLIC:
        try:
            loaded = importlib.import_module(module)
        except ImportError:  # agent_otel.remote.a2a needs the a2a extra
            continue
        for name in loaded.__all__:
            value = getattr(loaded, name)
            if callable(value):
                public[name] = _accepted(value)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = [
        f"{page.relative_to(ROOT)}: {call}"
        for page in pages
        for call in misused_keywords(page.read_text(), public)
    ]
    assert not missing, f"pages pass keywords the code does not take: {missing}"


def test_the_keyword_check_finds_a_keyword_no_callable_takes() -> None:
    public: dict[str, set[str] | None] = {"f": {"a"}, "g": None}
    text = "`f(a=1, b=2)`, `obj.f(c=3)`, g(z=1)\n" + "-" * 80 + "\n`f(bb=1)`: did you mean 'b'?"
    assert misused_keywords(text, public) == ["f(b=...)"]
    assert misused_keywords("async def f(b=1): ...\nf(b=2)", public) == []


# A path of a file the source names: a folder or more, then a file of a kind the repo holds.
SOURCE_PATH = re.compile(r"(?<![\w/.])((?:[\w.\-]+/)+[\w.\-]+\.(?:md|py|yaml|yml|json|toml|txt))\b")
# Where a path named in a module is read from: the repository, the packages, the module's own
# folder. A path inside a third-party package the module names is that package's, not ours.
THEIRS = {"integrations/opentelemetry.py"}  # LiteLLM's own callback module


def unresolved(text: str, here: Path) -> list[str]:
    roots = (ROOT, ROOT / "src", ROOT / "src" / "agent_otel", ROOT / "contract")
    roots += (ROOT / "contract" / "agent_contract", here)
    return [
        path
        for path in SOURCE_PATH.findall(text)
        if path not in THEIRS and not any((root / path).exists() for root in roots)
    ]


def test_every_path_the_source_names_exists() -> None:
    """A docstring or comment that points a reader at a file (``docs/export.md``,
    ``tests/semconv/registry.yaml``) points at one in the repository: one moved, renamed or
    outside it (a design note the package does not ship) sends the reader nowhere."""
    modules = sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "contract").rglob("*.py")])
    missing = [
        f"{module.relative_to(ROOT)}: {path}"
        for module in modules
        for path in unresolved(module.read_text(), module.parent)
    ]
    assert not missing, f"the source names files the repository does not hold: {missing}"


def test_the_path_check_finds_a_path_outside_the_repository() -> None:
    text = "see ``docs/export.md``, ``shared/semconv/registry.yaml`` and tools/call, a/b.py."
    assert unresolved(text, ROOT / "src") == ["shared/semconv/registry.yaml", "a/b.py"]


# Members a public class has for the SDK or for our own layers to call, not for a user.
NOT_FOR_USERS = {
    "on_start", "on_end", "force_flush", "shutdown",  # a span processor's, called by the SDK
    "generate_trace_id", "generate_span_id",  # an IdGenerator's, called by the SDK
    "instrumentation_dependencies",  # a BaseInstrumentor's, called by opentelemetry-instrument
}  # fmt: skip
NOT_FOR_USERS_OF = {
    ("ContentCapture", "for_run"): "the recorder's: one run's accounts",
    ("ContentCapture", "new_messages"): "the chat span's: history='new'",
    ("ContentCapture", "encode"): "the content writers'",
    ("ContentCapture", "encode_within"): "the content writers'",
    ("ContentCapture", "copied"): "the agent span's: its copy of the run's input and answer",
    ("RunIdentity", "over"): "run_identity()'s: nested ids merged",
    ("Scrubber", "patterns"): "the scrubber's compiled patterns (given as patterns=)",
}


def undocumented_members(module: ModuleType, words: set[str]) -> list[str]:
    """``Class.member`` for each public method or property of a public class no page names."""
    found = []
    for name in module.__all__:
        value = getattr(module, name)
        if not isinstance(value, type):
            continue
        for member in vars(value):
            if member.startswith("_") or member in words or (name, member) in NOT_FOR_USERS_OF:
                continue
            if member in NOT_FOR_USERS and name not in ("Telemetry", "InMemoryTelemetry"):
                continue
            found.append(f"{name}.{member}")
    return found


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_member_of_a_public_class_is_named(module: str) -> None:
    """``Telemetry.spans_unsent()``, ``RemoteAgentCall.describe()``, ``FakeClock.installed()``:
    a method a user calls on what they import is on a page, or they never learn it exists."""
    missing = undocumented_members(_module(module), _inline_words(_docs()))
    assert not missing, f"{module}: no page names {missing} in inline code"


def test_the_member_check_finds_a_method_no_page_names() -> None:
    class Handle:
        def flush(self) -> None: ...
        def shutdown(self) -> None: ...
        def on_end(self) -> None: ...
        def _private(self) -> None: ...

    module = ModuleType("m")
    module.__all__ = ["Handle"]  # type: ignore[attr-defined]
    module.Handle = Handle  # type: ignore[attr-defined]
    assert undocumented_members(module, {"shutdown"}) == ["Handle.flush"]


def test_the_stability_page_names_every_public_module() -> None:
    """docs/stability.md says what is public: each module whose ``__all__`` the checks above
    read is one (``agent_otel.remote.a2a`` was public in the code and absent there)."""
    page = (ROOT / "docs" / "stability.md").read_text()
    missing = [module for module in PUBLIC if f"`{module}" not in page]
    assert not missing, f"docs/stability.md does not name the public modules {missing}"


def _layers() -> list[str]:
    """agent-otel's modules with no underscore in their name that are not public modules."""
    import pkgutil

    import agent_otel

    found = []
    for info in pkgutil.walk_packages(agent_otel.__path__, "agent_otel."):
        private = any(part.startswith("_") for part in info.name.split("."))
        public = info.name in PUBLIC or info.name.startswith("agent_otel.testing")
        if info.ispkg and not private and not public:
            found.append(info.name)
    return found


def test_the_stability_page_says_the_layers_are_internal() -> None:
    """``agent_otel.cost`` lists ``call_cost`` in its ``__all__`` and has no underscore: by the
    page's rule (an underscore marks what is internal) a newcomer read it as public, yet no
    page documents it. The page names each such package as internal."""
    page = (ROOT / "docs" / "stability.md").read_text()
    layers = _layers()
    assert "agent_otel.cost" in layers and "agent_otel.remote" in layers, layers
    missing = [module for module in layers if f"`{module}`" not in page]
    assert not missing, f"docs/stability.md does not say these are internal: {missing}"

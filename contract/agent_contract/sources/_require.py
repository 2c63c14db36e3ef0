"""What an adapter says when it is given the wrong thing, or its framework is missing.

Each adapter checks once per run, at the point it first touches them, the object it was given
(:func:`expect`; an SDK source's messages too, :func:`expect_messages`) and the framework
modules it imports (:func:`require`), so a newcomer's
mistake is told as what was given, what the adapter takes and what to do, instead of an
``AttributeError`` from deep inside the run or a bare ``No module named ...``.

The checks keep the adapters' duck typing: :func:`expect` asks for the attributes the adapter
calls, not a class, so a look-alike still runs. The given object is named by its type only
(``type(obj)``): never its ``repr``, nor its own ``__class__``, which a hostile or broken
object may not survive. Nothing here imports a framework until an adapter runs.
"""

from __future__ import annotations

import importlib
import sys
from importlib import metadata
from types import CoroutineType, ModuleType
from typing import Any

__all__ = ["FRAMEWORKS", "expect", "expect_messages", "require"]

# The modules the adapters import, each with the distribution that brings it, the version the
# adapter was written and tested against (tests/constraints.txt, else the extra's pin) and the
# pyproject.toml extra that installs it (tests/sources/test_adapter_misuse.py holds this table
# to pyproject.toml).
FRAMEWORKS: dict[str, tuple[str, str, str]] = {
    "litellm": ("litellm", "1.110.2", "litellm"),
    "agents": ("openai-agents", "0.24.0", "openai-agents"),
    "langgraph": ("langgraph", "1.2.24", "langgraph"),
    "langchain_core": ("langchain-core", "1.8.1", "langgraph"),
    "pydantic_ai": ("pydantic-ai-slim", "2.68.0", "pydantic-ai"),
    "smolagents": ("smolagents", "1.26.0", "smolagents"),
    "llama_index.core": ("llama-index-core", "0.14.25", "llama-index"),
    "llama_index_instrumentation": ("llama-index-instrumentation", "0.6.0", "llama-index"),
    "agno": ("agno", "3.1.10", "agno"),
    "autogen_agentchat": ("autogen-agentchat", "0.7.5", "autogen-agentchat"),
    "google.adk": ("google-adk", "2.13.0", "google-adk"),
    "strands": ("strands-agents", "1.62.0", "strands-agents"),
    "crewai": ("crewai", "1.15.30", "crewai"),
}


def _install(extra: str) -> str:
    return (
        f"install agent-otel's {extra!r} extra: pip install '.[{extra}]' in the agent-otel "
        f"checkout, or pip install '/path/to/agent-otel[{extra}]' (docs/install.md)"
    )


def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except Exception:  # not installed, or metadata unreadable
        return None


def _import_error(root: str) -> ImportError | None:
    """Why ``root`` (or its top-level package) does not import; None when it does."""
    try:
        for name in dict.fromkeys((root.partition(".")[0], root)):
            importlib.import_module(name)
    except ImportError as error:
        return error
    return None


def _framework(module: str) -> str:
    return max((k for k in FRAMEWORKS if module == k or module.startswith(k + ".")), key=len)


def require(module: str, *names: str) -> Any:
    """``module`` imported (or its attribute ``names``: one value, or a tuple of several).

    A missing framework raises ``ImportError`` naming the extra to install; a framework
    present but without ``module`` or one of ``names`` (a version older or newer than the
    adapter's) names the installed and the tested versions. Once imported, a call costs a
    dictionary look-up: adapters call it once per run.
    """
    root = _framework(module)
    distribution, tested, extra = FRAMEWORKS[root]
    top = root.partition(".")[0]
    found: Any = None
    try:
        for name in dict.fromkeys((top, root)):
            importlib.import_module(name)
        found = importlib.import_module(module)
        values = tuple(getattr(found, name) for name in names)
    except (ImportError, AttributeError) as error:
        adapter = sys._getframe(1).f_globals.get("__name__", "this adapter")
        broken = _import_error(root)
        if broken is not None:
            absent = isinstance(broken, ModuleNotFoundError) and broken.name in (top, root)
            raise ImportError(
                f"{adapter} needs {distribution} (module {root!r}), which is not installed: "
                f"{_install(extra)}"
                if absent  # else a dependency of it is missing or broken: say which
                else f"{adapter} needs {distribution} (module {root!r}), which is installed "
                f"but does not import ({broken}): {_install(extra)} for the versions it runs "
                f"with",
                name=root,
            ) from error
        missing = [n for n in names if found is not None and not hasattr(found, n)]
        what = f"{module}.{missing[0]}" if missing else module
        raise ImportError(
            f"{adapter} needs {what}, which the installed {distribution} "
            f"{_installed(distribution) or '(version unknown)'} does not have; it was written "
            f"for {distribution} {tested}: {_install(extra)} to get a version it runs with",
            name=module,
        ) from error
    if not names:
        return found
    return values[0] if len(values) == 1 else values


def _type_name(obj: object) -> str:
    return _qualified(type(obj))


def _qualified(kind: type) -> str:
    try:
        module = type.__dict__["__module__"].__get__(kind)
        name = type.__dict__["__qualname__"].__get__(kind)
    except Exception:  # a type hostile even to that: its name alone
        return type.__repr__(kind)
    return name if module in (None, "builtins") else f"{module}.{name}"


def _has(obj: object, path: str) -> bool:
    for name in path.split("."):
        try:
            obj = getattr(obj, name)
        except Exception:  # a property raising, a broken __getattr__: not there, as far as we go
            return False
    return True


def expect(
    obj: object, adapter: str, takes: str, *paths: str, hint: str = "", sdk: str = ""
) -> None:
    """Raise ``TypeError`` unless ``obj`` is an instance with every attribute of ``paths``.

    ``adapter`` is the adapter function's name, ``takes`` what it takes ("a pydantic_ai.Agent"),
    ``paths`` the (dotted) attributes the adapter calls on it, ``hint`` how to get one. A
    module is never one (the ``openai`` module has a ``chat.completions.create``: its
    module-level client's, synchronous). ``sdk``: the package of an SDK source's client
    (``"openai"``): a client of that SDK whose resource is not its ``Async`` one
    (``openai.OpenAI``) is refused before any request is sent, as the synchronous client it is.
    """
    kind = type(obj)  # never obj.__class__, nor isinstance (which may read it)
    if issubclass(kind, ModuleType):  # before its attributes are read (a module client's)
        name = _module_name(obj)
        raise TypeError(
            f"{adapter}() takes {takes}; got the module {name}, not an object made with it. "
            + (hint or f"Pass an instance made with {name}, not the module.")
        )
    if obj is not None and not issubclass(kind, type) and all(_has(obj, p) for p in paths):
        if sdk and _synchronous(obj, paths, sdk):
            raise TypeError(
                f"{adapter}() takes {takes}; got {_type_name(obj)}, a synchronous client: its "
                "stream cannot be read in an async run, and its request would block the event "
                f"loop. {hint}"
            )
        return
    if obj is None:
        given = "None"
    elif issubclass(kind, type):
        given = f"the class {_qualified(obj)}"  # type: ignore[arg-type]
        hint = f"Pass an instance of it, not the class. {hint}".strip()
    elif issubclass(kind, CoroutineType) or _has(kind, "__await__"):
        if issubclass(kind, CoroutineType):
            obj.close()  # type: ignore[attr-defined]  # never awaited now: no warning of it
        given = f"an awaitable ({_type_name(obj)})"
        hint = f"Await what makes the object first. {hint}".strip()
    else:
        missing = [p for p in paths if not _has(obj, p)]
        given = f"an object of type {_type_name(obj)}, which has no .{', .'.join(missing)}"
    message = f"{adapter}() takes {takes} (or an object with .{', .'.join(paths)}); got {given}"
    raise TypeError(f"{message}. {hint}" if hint else message)


def _module_name(module: object) -> str:
    try:
        name = vars(module).get("__name__")  # its namespace: no __getattr__ of its own runs
    except Exception:  # a module hostile even to that
        name = None
    return name if type(name) is str else "(unnamed)"


def _synchronous(client: object, paths: tuple[str, ...], sdk: str) -> bool:
    """Whether a resource ``client`` calls ``create`` on is the synchronous one of ``sdk``:
    a class of that package whose name is not ``Async...`` (``Completions``, not
    ``AsyncCompletions``). A look-alike of any other package is taken as it is."""
    for path in paths:
        resource: object = client
        for name in path.split(".")[:-1]:
            try:
                resource = getattr(resource, name)
            except Exception:  # read above already: not ours to judge
                return False
        kind = type(resource)
        module = type.__dict__["__module__"].__get__(kind)
        name = type.__dict__["__name__"].__get__(kind)
        ours = issubclass(type(module), str) and module.partition(".")[0] == sdk
        if ours and not name.startswith("Async"):
            return True
    return False


def expect_messages(messages: object, adapter: str) -> None:
    """Raise ``TypeError`` unless ``messages`` is a list (or tuple) of contract messages.

    The SDKs take plain dicts or a prompt string, so a newcomer passes those here; each used to
    fail at the first pull with an ``AttributeError`` (``'dict' object has no attribute
    'to_dict'``). An item is a message by shape: a ``role`` and ``to_dict()``.
    """
    if issubclass(type(messages), (list, tuple)):
        items: list[object] | tuple[object, ...] = messages  # type: ignore[assignment]
        for index, item in enumerate(items):
            if not (_has(item, "role") and _has(item, "to_dict")):
                given = f"a {_type_name(messages)} whose item {index} is {_a(item)}"
                break
        else:
            return
    else:
        given = _a(messages)
    raise TypeError(
        f"{adapter}() takes messages as a list of agent_contract.protocol.Message; got {given}. "
        "Pass [Message(role='user', content='...')] (a dict in the SDK's shape becomes one "
        "with Message.from_dict(d))"
    )


def _a(obj: object) -> str:
    """``obj`` named by its type only: "None", "a str", "a dict"."""
    return "None" if obj is None else f"a {_type_name(obj)}"

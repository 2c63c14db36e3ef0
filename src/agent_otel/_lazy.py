"""Public names imported on first access (PEP 562), for the package ``__init__`` modules.

``import agent_otel`` must stay nearly free: pytest imports ``agent_otel.testing.plugin`` in
every run of a project that has agent-otel installed, and that imports both package
``__init__`` modules. So they name where each public object lives instead of importing it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any, NoReturn


def lazy_exports(
    package: str, where: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``; ``where`` maps a name to the
    (relative) module defining it. A name is imported once, then cached in the package."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *public})

    return __getattr__, __dir__


def needs_extra(missing: ModuleNotFoundError, package: str, what: str, extra: str) -> NoReturn:
    """Raise for a public module that could not import ``package`` (the ``extra``'s), naming
    the extra to install (Python's bare error names a module only); any other missing module
    is raised as it is. Called in the ``except`` of the module's import."""
    if not (missing.name or "").startswith(package):
        raise missing
    raise ModuleNotFoundError(
        f"{what}, the {extra} extra: pip install 'agent-otel[{extra}]' ({missing})",
        name=missing.name,
    ) from missing

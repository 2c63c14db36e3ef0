"""The loader of a watched instrumentation module: the real one, then the guards."""

from __future__ import annotations

from collections.abc import Callable
from importlib.abc import Loader
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from agent_otel._guard import report


class GuardingLoader(Loader):
    """Runs ``real``'s ``exec_module``, then ``then`` (the guards), once the module has run.

    Only the spec is handed this loader: the module's ``__loader__`` and ``__spec__.loader``
    are the real one's again before its code runs, so what reads them (``importlib.resources``,
    ``inspect``, a reload) sees the import system's own loader."""

    def __init__(self, real: Any, then: Callable[[], object]) -> None:
        self.real, self.then = real, then

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        create = getattr(self.real, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        spec = getattr(module, "__spec__", None)
        if getattr(spec, "loader", None) is self:
            spec.loader = self.real  # type: ignore[union-attr]
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.real
        self.real.exec_module(module)  # its own error is the importer's, as without us
        try:  # inside the caller's import: nothing may raise there
            self.then()
        except Exception:
            report("stand-down")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)  # get_code, is_package, get_resource_reader, ...

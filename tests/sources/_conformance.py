"""The conformance matrix: one row per framework adapter, all held to the same assertions.

A row names a framework and the few facts that differ between frameworks and are not the
adapter's to choose: the chat span's name, what usage the framework carries, whether it keeps
the model's tool-call ids. Its builder module, ``_fw_<name>.py`` beside this one, plays the
script of ``_script`` on the framework's own test model: ``events(run)`` returns the
adapter's events for one play; optionally ``usage(run)`` (the framework's own token totals,
where it counts them itself) and ``subagent(telemetry)`` (an agent whose tool runs another
agent, each through the adapter and its own ``otel_wrapper``, named ``lead`` and ``expert``).
``test_conformance`` asserts the rest, the same for every row. A new adapter joins by adding
one ``Row`` to ``ROWS`` and its builder module; the existing adapters join the same way.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from agent_contract.protocol import AgentEvent
from agent_otel.testing import InMemoryTelemetry

from ._script import TURNS, Run

USAGE_KEYS = ("input", "output", "cache_read", "reasoning")
Totals = dict[str, int]
"""Token totals of a run by ``USAGE_KEYS`` name (a key the framework does not carry is absent)."""


@dataclass(frozen=True)
class Row:
    name: str
    """The pytest id; the builder module is ``_fw_<name>``."""
    package: str
    """The import that must succeed for the row to run (the row skips without it)."""
    chat: str
    """The chat spans' name (``chat {model}``: the model name the framework reports)."""
    reports: tuple[str, ...] = USAGE_KEYS
    """The usage the framework carries from the model to its events (``USAGE_KEYS`` names)."""
    own_usage: bool = False
    """The framework counts tokens itself (a test model estimating them): the trace must show
    the builder's ``usage(run)`` once instead of the script's ``TURNS``."""
    model_ids: bool = True
    """Tool spans carry the script's ids (``call_w``, ``call_f``); False where the framework
    makes its own (they must still match between each call and its result)."""
    reasoning_text: bool = True
    """The framework passes the model's reasoning text on (a ``ReasoningDelta``)."""
    tool_error: str = "ToolFailure"
    """The failed tool span's ``error.type``: the exception ``forecast`` raised, or the
    framework's own name for the failure (``ModelRetry``), or ``tool_error`` where the
    framework hands on only the error's text."""
    errors: tuple[str, ...] = ("Overloaded",)
    """Type names the model error may come out as (a framework may wrap it)."""
    detaches_across_tasks: bool = False
    """The framework itself logs "Failed to detach context" when its stream is closed early (it
    holds ``use_span`` across yields in a generator it runs in another task; plain, without
    agent-otel, too). Those records, raised in the framework's frames and none of ours, are
    dropped before the suite's guard against detach failures looks."""
    subagent_under_tool: bool = True
    """A sub-agent run inside a tool nests under that tool's span. False where the framework
    runs tools in a task of its own made at the run's start, whose context is the run's: the
    sub-agent then nests under the run's agent span (still one trace, not under the tool)."""

    @property
    def builder(self) -> ModuleType:
        pytest.importorskip(self.package)
        return importlib.import_module(f"{__package__}._fw_{self.name}")

    def events(self, run: Run) -> AsyncIterator[AgentEvent]:
        events: Callable[[Run], AsyncIterator[AgentEvent]] = self.builder.events
        return events(run)

    def totals(self, run: Run) -> Totals:
        if self.own_usage:
            usage: Callable[[Run], Totals] = self.builder.usage
            return usage(run)
        return {key: sum(getattr(turn, key) for turn in TURNS) for key in self.reports}

    def subagent(self) -> Callable[[InMemoryTelemetry], Awaitable[Any]] | None:
        return getattr(self.builder, "subagent", None)


ROWS = [
    Row("pydantic_ai", "pydantic_ai", "chat scripted-model", reports=("input", "output"),
        own_usage=True, tool_error="ModelRetry"),
    Row("agno", "agno", "chat gpt-4o-mini", errors=("AgnoRunError",), tool_error="tool_error"),
    Row("autogen", "autogen_agentchat", "chat", reports=("input", "output"), own_usage=True,
        tool_error="tool_error"),
    Row("google_adk", "google.adk", "chat scripted-gemini", subagent_under_tool=False,
        tool_error="tool_error"),
    Row("strands", "strands", "chat scripted-converse", reports=("input", "output", "cache_read"),
        detaches_across_tasks=True),
    Row("smolagents", "smolagents", "chat gpt-4o-mini", reasoning_text=False,
        errors=("AgentGenerationError",)),
    Row("llama_index", "llama_index.core", "chat gpt-4o-mini", subagent_under_tool=False),
    Row("crewai", "crewai", "chat gpt-4o-mini", reasoning_text=False, errors=("ConnectionError",),
        subagent_under_tool=False),
]  # fmt: skip

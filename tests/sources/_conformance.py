"""The conformance matrix: one row per framework adapter, all held to the same assertions.

A row names a framework and the few facts that differ between frameworks and are not the
adapter's to choose: the chat span's name, what usage the framework carries, whether it keeps
the model's tool-call ids. Its builder module, ``_fw_<name>.py`` beside this one, plays the
script of ``_script`` on the framework's own test model: ``events(run)`` returns the
adapter's events for one play; optionally ``usage(run)`` (the framework's own token totals,
where it counts them itself), ``parallel(tracer)`` (the tool-scope script of ``_parallel``,
for ``test_tool_scopes``) and ``subagent(telemetry)`` (an agent whose tool runs another
agent, each through the adapter and its own ``otel_wrapper``, named ``lead`` and ``expert``).
``test_conformance`` asserts the rest, the same for every row. A new adapter joins by adding
one ``Row`` to ``ROWS`` and its builder module; the existing adapters join the same way.

A row's ``providers`` name the provider instrumentations (``PROVIDERS``) its model calls go
through: each is instrumented in beside the run, and must stand down (the same tree, one chat
span per model call, tokens counted once), and trace again when the run opts out.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_otel.testing import InMemoryTelemetry

from ._script import TURNS, Run

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM (CrewAI's too): no fetch

USAGE_KEYS = ("input", "output", "cache_read", "reasoning")
Totals = dict[str, int]
"""Token totals of a run by ``USAGE_KEYS`` name (a key the framework does not carry is absent)."""


@dataclass(frozen=True)
class Provider:
    """A provider instrumentation we stand down for, as a user installs it."""

    name: str
    """The pytest id."""
    module: str
    """Its instrumentor's module (the provider skips where it is not installed)."""
    instrumentor: str
    """The instrumentor class in ``module``."""
    meters: bool = False
    """It records token metrics too (``meter_provider`` is passed)."""

    @contextmanager
    def instrumented(self, telemetry: InMemoryTelemetry) -> Iterator[None]:
        """The instrumentation active into ``telemetry``'s providers, then removed."""
        module = pytest.importorskip(self.module)
        unpatch(*(p.module for p in PROVIDERS), GUARD)  # an earlier test's, never undone
        _unhandle(LLAMA_INDEX_HANDLERS)
        instrumentor = getattr(module, self.instrumentor)()
        providers: dict[str, Any] = {"tracer_provider": telemetry.tracer_provider}
        if self.meters:
            providers["meter_provider"] = telemetry.meter_provider
        instrumentor.instrument(**providers)
        try:
            yield
        finally:
            instrumentor.uninstrument()
            unpatch(self.module)


_PATCHED = ("openai.resources", "anthropic.resources", "agno.", "langchain_core.", "langgraph.")
"""The packages whose classes the instrumentations under test wrap (and may leave wrapped)."""


def unpatch(*modules: str) -> None:
    """Undo every wrapper of ``modules``' left on an SDK class after its ``uninstrument()``
    (the outer ones, down to the first wrapper of another's).

    OpenLLMetry's OpenAI instrumentation 0.62.4 unwraps ``"Completions.create"`` from the
    module path ``openai.resources.chat.completions``, which OTel's ``unwrap`` reads as the
    attribute ``"Completions.create"`` of module ``completions``: nothing is restored, and its
    wrappers would go on tracing (into this test's providers) in every later test. Its Agno
    and LangChain instrumentations unwrap the same way, and leave ``Team.run``/``Team.arun``
    (its wrapper of a streamed ``Team.arun`` is a coroutine function: every later team run
    would break), ``BaseCallbackManager.__init__`` (its callback handler in every later
    LangChain run) and ``Pregel.stream``/``astream`` wrapped.
    """
    for name, loaded in list(sys.modules.items()):
        if not name.startswith(_PATCHED):
            continue
        for cls in list(vars(loaded).values()):
            if not isinstance(cls, type) or cls.__module__ != name:
                continue
            for attr, value in list(vars(cls).items()):
                plain = value
                while _owned(plain, modules) and hasattr(plain, "__wrapped__"):
                    plain = plain.__wrapped__
                if plain is not value:
                    setattr(cls, attr, plain)


def _owned(value: object, modules: tuple[str, ...]) -> bool:
    owner = str(getattr(getattr(value, "_self_wrapper", None), "__module__", ""))
    return any(owner == module or owner.startswith(f"{module}.") for module in modules)


LLAMA_INDEX_HANDLERS = "opentelemetry.instrumentation.llamaindex"
"""OpenLLMetry's LlamaIndex instrumentation: its ``uninstrument()`` leaves its span and event
handlers on LlamaIndex's root dispatcher, and each attaches a context of its own (its parent's,
with OpenLLMetry's model-call key set) around every dispatcher span: a tool body's own call
stood down there in every later test."""


def _unhandle(module: str) -> None:
    """Take ``module``'s handlers off LlamaIndex's root dispatcher (if LlamaIndex is loaded)."""
    instrumentation = sys.modules.get("llama_index.core.instrumentation")
    if instrumentation is None:
        return
    root = instrumentation.get_dispatcher()
    for kind in ("span_handlers", "event_handlers"):
        handlers = getattr(root, kind, None)
        if isinstance(handlers, list):
            handlers[:] = [h for h in handlers if not type(h).__module__.startswith(module)]


GUARD = "agent_otel.standdown._openai_v2"
"""The stand-down's guard of openai-v2's wrapper: an instrumentation another one wrapped and
that failed to unwrap (OpenLLMetry's, above) leaves it on the SDK, around openai-v2's wrapper
bound to that test's providers; outside our runs' cover it traces there."""
OPENAI_V2 = Provider("openai-v2", "opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor",
                     meters=True)  # fmt: skip
OPENINFERENCE_OPENAI = Provider("openinference-openai", "openinference.instrumentation.openai",
                                "OpenAIInstrumentor")  # fmt: skip
OPENLLMETRY_OPENAI = Provider("openllmetry-openai", "opentelemetry.instrumentation.openai",
                              "OpenAIInstrumentor", meters=True)  # fmt: skip
OPENINFERENCE_ANTHROPIC = Provider("openinference-anthropic",
                                   "openinference.instrumentation.anthropic",
                                   "AnthropicInstrumentor")  # fmt: skip
OPENLLMETRY_ANTHROPIC = Provider("openllmetry-anthropic",
                                 "opentelemetry.instrumentation.anthropic",
                                 "AnthropicInstrumentor", meters=True)  # fmt: skip
PROVIDERS = (OPENAI_V2, OPENINFERENCE_OPENAI, OPENLLMETRY_OPENAI, OPENINFERENCE_ANTHROPIC,
             OPENLLMETRY_ANTHROPIC)  # fmt: skip
"""Every provider instrumentation a row may name (those the default environment installs)."""
OPENAI_SDK = (OPENAI_V2, OPENINFERENCE_OPENAI, OPENLLMETRY_OPENAI)
"""A row whose model calls go through the OpenAI SDK's Chat Completions."""
ANTHROPIC_SDK = (OPENINFERENCE_ANTHROPIC, OPENLLMETRY_ANTHROPIC)
"""A row whose model calls go through the Anthropic SDK's Messages."""


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
    refuses: bool = False
    """The builder can play ``Run(refuse=True)``: turn 2's request fails before its first chunk."""
    messages: bool = False
    """Each ``LLMCallStart`` carries the messages the framework sends the model (the run's
    input, with capture on, is the first call's)."""
    tool_messages: bool = True
    """The framework sends the model's tool calls and their results as messages of their own;
    False where it writes them into its messages as text (smolagents)."""
    providers: tuple[Provider, ...] = ()
    """The provider instrumentations the row's model calls go through (``PROVIDERS``)."""
    runs_tools: bool = True
    """The framework runs the tools itself, so its adapter must run each body under the call's
    own span: the builder plays ``_parallel``'s script with ``parallel(tracer)``. False for
    the SDK sources (the caller's own loop runs the tools)."""

    server: tuple[str, int] | None = None
    """The host and port the row's chat spans name (``server.address``, ``server.port``): the
    server of the SDK client its model calls through (the mock transport's base URL, or the
    SDK's default when the builder gives none); None where the model has no server (a
    scripted one) or the adapter cannot know it."""

    text_beside_calls: bool = True
    """The framework passes on the text the model sends beside its tool calls; False where it
    keeps only the calls (CrewAI's native tool calling returns the message's ``tool_calls``
    alone, so its ``LLMCallCompletedEvent`` never carries the words)."""

    def param(self) -> Any:
        """The row as a pytest parameter (id: its name), skipped at collection when its
        framework is not installed (a skip raised later, inside a task the test starts, would
        not skip the test)."""
        try:
            missing = find_spec(self.package) is None
        except ModuleNotFoundError:  # the parent package is missing too
            missing = True
        skip = pytest.mark.skipif(missing, reason=f"needs {self.package}")
        return pytest.param(self, id=self.name, marks=skip)

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

    def parallel(self, tracer: Tracer) -> AsyncIterator[AgentEvent]:
        parallel: Callable[[Tracer], AsyncIterator[AgentEvent]] = self.builder.parallel
        return parallel(tracer)


MOCK = ("mock.invalid", 80)
"""The server of the builders' SDK clients (``_http``: ``http://mock.invalid``)."""

ROWS = [
    Row("pydantic_ai", "pydantic_ai", "chat scripted-model", reports=("input", "output"),
        own_usage=True, tool_error="ModelRetry", refuses=True, messages=True),
    Row("pydantic_ai_openai", "pydantic_ai.models.openai", "chat gpt-4o-mini",
        tool_error="ModelRetry", errors=("ModelServerError",), providers=OPENAI_SDK, refuses=True,
        messages=True, server=MOCK),
    Row("agno", "agno", "chat gpt-4o-mini", errors=("AgnoRunError",),
        providers=OPENAI_SDK, refuses=True, messages=True, server=MOCK),
    Row("autogen", "autogen_agentchat", "chat", reports=("input", "output"), own_usage=True,
        messages=True),
    Row("autogen_openai", "autogen_ext.models.openai", "chat gpt-4o-mini",
        reports=("input", "output"), errors=("APIError",), providers=OPENAI_SDK, refuses=True,
        messages=True, server=MOCK),
    Row("google_adk", "google.adk", "chat scripted-gemini", refuses=True, messages=True),
    Row("google_adk_openai", "google.adk.integrations.openai", "chat gpt-4o-mini",
        reasoning_text=False, errors=("APIError",), providers=OPENAI_SDK, refuses=True,
        messages=True, server=MOCK),
    Row("strands", "strands", "chat scripted-converse", reports=("input", "output", "cache_read"),
        detaches_across_tasks=True, refuses=True, messages=True),
    Row("strands_openai", "strands.models.openai", "chat gpt-4o-mini",
        reports=("input", "output", "cache_read"), errors=("APIError",),
        detaches_across_tasks=True, providers=OPENAI_SDK, refuses=True, messages=True, server=MOCK),
    Row("smolagents", "smolagents", "chat gpt-4o-mini", reasoning_text=False,
        errors=("AgentGenerationError",), providers=OPENAI_SDK, refuses=True, messages=True,
        tool_messages=False, server=MOCK),
    Row("llama_index", "llama_index.core", "chat gpt-4o-mini", refuses=True, messages=True),
    Row("llama_index_openai", "llama_index.llms.openai", "chat gpt-4o-mini", errors=("APIError",),
        providers=OPENAI_SDK, refuses=True, messages=True, server=MOCK),
    Row("crewai", "crewai", "chat gpt-4o-mini", reasoning_text=False, errors=("ConnectionError",),
        providers=OPENAI_SDK, refuses=True, messages=True, text_beside_calls=False,
        server=("api.openai.com", 443)),
    Row("langgraph", "langgraph", "chat gpt-4o-mini", errors=("APIError",), providers=OPENAI_SDK,
        refuses=True, messages=True),
    Row("openai_agents", "agents", "chat gpt-4o-mini", errors=("APIError",), providers=OPENAI_SDK,
        refuses=True, messages=True, server=MOCK),
    # SDK sources: the caller's own tool loop (``_sdk_row``) around one source.
    Row("openai_chat", "openai", "chat gpt-4o-mini", errors=("APIError",), providers=OPENAI_SDK,
        tool_error="tool_error", refuses=True, runs_tools=False, messages=True, server=MOCK),
    # openai-v2 does not instrument the Responses API.
    Row("openai_responses", "openai", "chat gpt-4o-mini", errors=("APIError",),
        providers=(OPENINFERENCE_OPENAI, OPENLLMETRY_OPENAI), tool_error="tool_error",
        refuses=True, runs_tools=False, messages=True, server=MOCK),
    Row("anthropic_messages", "anthropic", "chat claude-sonnet-4-5",
        errors=("APIStatusError", "OverloadedError"), providers=ANTHROPIC_SDK,
        tool_error="tool_error", refuses=True, runs_tools=False, messages=True, server=MOCK),
    # openai-v2 and OpenLLMetry's OpenAI do not see LiteLLM's calls (the SDK's raw-response
    # method; both were tried: opted out, neither traces them).
    Row("litellm_chat", "litellm", "chat openai/gpt-4o-mini", errors=("MidStreamFallbackError",),
        providers=(OPENINFERENCE_OPENAI,), tool_error="tool_error", refuses=True,
        runs_tools=False, messages=True, server=MOCK),
]  # fmt: skip

"""The frameworks' own spans stand down in a framework run of ours, where ours tell the same.

Google ADK, Strands Agents and AutoGen trace to the global tracer provider themselves (and
pydantic-ai, once ``Agent.instrument_all()`` or ``agent.instrument`` turns its instrumentation
on, as Logfire's ``instrument_pydantic_ai()`` does), so with
``configure()``'s globals their agent, model-call and tool spans land in our run's trace,
under our spans: every model call and tool call told twice, tokens twice. Inside a run of
their adapter with the stand-down on (:data:`NATIVE` names the framework in the run's
context), a span of theirs that tells what ours tell (:data:`TOLD`, by the operation its name
starts with, or the ``gen_ai.operation.name`` it is started with) is not started: the
framework gets a non-recording span carrying the context of the span it would have been a
child of (ours, or another stood-down one), so whatever starts
under it (an HTTP client span, an MCP request span) is a child of our span, in our trace.
Every other span of theirs (AutoGen's ``create_agent`` at construction, ADK's nodes, context
caches and compactions, Strands' memory and multi-agent spans, AutoGen's runtime message
delivery) is recorded as before: nothing of ours tells it. Outside such a run, and with
``stand_down_providers=False``, every span of theirs is started as before.

The seams, read in their sources (the versions in ``tests/constraints.txt``):

- Google ADK (2.13.0): one module-level tracer, ``google.adk.telemetry.tracing.tracer``,
  imported by name into its other modules: that object's ``start_span`` and
  ``start_as_current_span`` are gated in place (its runner imports that module lazily, at its
  first run: the adapter's run imports it first).
- Strands Agents (1.62.0): one ``strands.telemetry.tracer.Tracer`` (``get_tracer()``'s
  singleton, made by the first ``Agent``) holds the OTel tracer as ``.tracer``: gated in place.
- AutoGen (autogen-core 0.7.5): ``trace_invoke_agent_span``, ``trace_tool_span`` and
  ``trace_create_agent_span`` ask ``trace.get_tracer("autogen-core")`` each time; the module's
  ``trace`` becomes a view of OTel's whose ``get_tracer`` gives a gated tracer. Its runtime's
  message spans (``TraceHelper``) are not gated: we tell no message delivery.
- pydantic-ai (2.68.0): its agent-run, model-request and tool spans start through one function,
  ``pydantic_ai._durable_replay.start_as_current_span(tracer, name, ...)``, imported by name
  into ``pydantic_ai._instrumentation`` and ``pydantic_ai.capabilities.instrumentation``: that
  name becomes a gated function in both. Its spans of retried attempts, concurrency waits,
  embeddings and images stay.
- OpenLLMetry's LangChain instrumentation (``opentelemetry-instrumentation-langchain``
  0.62.4) reads the general suppression key in its callbacks (:mod:`._context` stands it down)
  but not in its wrapper of LangGraph's ``Pregel.stream`` / ``astream``, which starts an
  ``invoke_agent`` span of the graph: the tracer that wrapper holds is gated in place, in a run
  of the LangGraph adapter. Its ``create_agent`` span (the agent's construction) stays.
- OpenInference's Agno instrumentation (``openinference-instrumentation-agno`` 1.0.15) reads
  the general suppression key before each agent or team run, but its suppressed path of a
  streamed run is broken with agno 3 (the async one awaits an async generator and raises
  ``TypeError`` into the agent; the sync one returns it from a generator, so the run yields
  nothing): :mod:`._context` answers it False, and its run wrapper's tracer (the
  ``_RunWrapper`` its ``wrapt`` wrappers of ``agno.agent._run`` and ``agno.team._run`` are
  bound to) is replaced with a gated one, in a run of the Agno adapter.
- Peers hooking a framework's own tracing that read no context key (:data:`HELD`):
  OpenLLMetry's trace processor for the OpenAI Agents SDK's tracing (``.tracer``), the official
  one (``opentelemetry-instrumentation-openai-agents-v2``, ``._tracer``, and its token and
  duration histograms) hold a gated tracer, every span of theirs standing down in their
  adapter's run; OpenLLMetry's span and event handlers on LlamaIndex's dispatcher (whose
  ``uninstrument()`` leaves them there) do nothing in a run of its adapter's, so no context of
  theirs is made current there; Logfire's ``instrument_openai_agents()`` wrapper of the SDK's
  trace provider gives the SDK's own trace and spans there (``create_trace``,
  ``create_span``). Its run spans tell our
  agent run (``openinference.span.kind`` ``AGENT``); its model and tool wrappers read the key
  and stand down as every provider instrumentation does.

Their own metrics, the same way: those that measure what ours measure are not recorded in a
run of their adapter's (their other metrics are):

- Google ADK records ``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``,
  ``gen_ai.execute_tool.duration``, ``gen_ai.invoke_agent.duration`` and
  ``gen_ai.invoke_agent.inference_calls``/``.tool_calls`` to the global meter (scope
  ``gcp.vertex.agent``), the very names of ours, so a dashboard's sum counted every call
  twice. Its ``telemetry._instrumentation`` (the agent's model calls, tools and invocations)
  calls them through its module ``_metrics``: that name becomes a view whose six records
  (:data:`ADK_TOLD`) are gated. A model call its model-consult tool makes on its own is
  recorded through ``_metrics`` directly: nothing of ours tells that call, so it stays.
  Workflow, skill and ``adk.experimental`` metrics stay.
- Strands' one ``strands.telemetry.metrics.MetricsClient`` holds its instruments as
  attributes: those of each model call's tokens, latency and first byte and each tool call's
  duration (:data:`STRANDS_TOLD`) are gated in place. Its loop-cycle and tool-count counters
  stay.
- AutoGen (autogen-core 0.7.5) records no metrics.
- pydantic-ai's ``InstrumentationSettings`` holds its ``gen_ai.client.token.usage`` and
  ``gen_ai.client.operation.time_to_first_chunk`` histograms as attributes of each settings
  object (made before any run of ours): the class gets a data descriptor for each
  (:data:`PYDANTIC_AI_TOLD`), which every settings object's reads go through, giving the
  instrument gated. Its ``operation.cost`` histogram stays (ours is another metric).

The gate is installed when a run of that framework's adapter starts (idempotent), decides per
call from the context (so concurrent runs, tasks and threads each get their own answer), and
:func:`restore` takes it out. A version without the seam is left alone (its spans stay).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import NonRecordingSpan, Span, Tracer

from agent_otel import _attributes as A
from agent_otel._guard import report

from ._context import covering
from ._langsmith import restore_langsmith
from ._openai_v2 import WRAPPER_DEPTH

NATIVE = otel_context.create_key("agent_otel.native_stand_down")
"""The framework whose own spans stand down in this context (a run of its adapter's)."""

TOLD = frozenset(
    {
        "invoke_agent",  # ours: the run (AutoGen, ADK, Strands)
        "invoke_workflow",  # ADK 2's run of the agent's workflow: the same run
        "invocation",  # ADK's legacy run span
        "execute_event_loop_cycle",  # Strands' turn: ours is the step
        "chat",  # Strands' model call
        "generate_content",  # ADK's model call
        "call_llm",  # ADK's legacy model call
        "execute_tool",  # every one's tool call
    }
)
"""The operations (a span name's first word) our spans tell: a framework's span of one of
them in its adapter's run is not recorded."""

ADAPTERS = {
    "agent_contract.sources.agno_stream": "agno",
    "agent_contract.sources.autogen_stream": "autogen",
    "agent_contract.sources.google_adk_stream": "google_adk",
    "agent_contract.sources.langgraph_stream": "langgraph",
    "agent_contract.sources.llama_index_stream": "llama_index",
    "agent_contract.sources.openai_agents": "openai_agents",
    "agent_contract.sources.pydantic_ai_stream": "pydantic_ai",
    "agent_contract.sources.strands_stream": "strands",
}
"""The framework adapters whose framework (or an instrumentation of it that reads no context
key) traces on its own."""
OI_TOLD = frozenset({"AGENT", "LLM", "TOOL"})
"""OpenInference's span kinds (``openinference.span.kind``) our spans tell."""

_MARK = "_agent_otel_native"


def told(name: object, attributes: object = None) -> bool:
    """Whether a span named ``name``, started with ``attributes``, tells an operation our spans
    tell (:data:`TOLD`): by its name's first word, or by its ``gen_ai.operation.name`` (or
    OpenInference's span kind, :data:`OI_TOLD`)."""
    if isinstance(name, str) and name.split(" ", 1)[0] in TOLD:
        return True
    if not isinstance(attributes, dict):
        return False
    operation = attributes.get(A.OPERATION_NAME)
    if isinstance(operation, str) and operation in TOLD:
        return True
    kind = attributes.get(A.OI_SPAN_KIND)
    return isinstance(kind, str) and kind in OI_TOLD


def stand_in(
    framework: str,
    name: object,
    context: Context | None,
    attributes: object = None,
    every: bool = False,
) -> Span | None:
    """The span to give ``framework`` instead of starting its span ``name`` (with
    ``attributes``) under ``context`` (None: the current one), or None to start theirs: a
    non-recording span with the parent's context, so what starts under it is a child of that
    parent. ``every``: each of its spans stands down, told or not (:data:`HELD`).

    The parent is the current span when the current context is in the same run: a peer that
    names its parent from its own record of spans (OpenLLMetry's LlamaIndex handler, which
    then makes the stand-in current around the tool's call) would otherwise put a tool body's
    own spans under the span current when the run's workflow started, not under our tool span
    that is current where the body runs."""
    try:
        if otel_context.get_value(NATIVE, context) != framework or not covering(context):
            return None  # not in a run of its adapter, or in a task that outlived that run
        if not every and not told(name, attributes):
            return None
        parent = trace.get_current_span(context).get_span_context()
        if context is not None and otel_context.get_value(NATIVE) == framework:
            here = trace.get_current_span().get_span_context()
            if here.is_valid and here.trace_id == parent.trace_id:
                parent = here
        if not parent.is_valid:
            return None  # a root of theirs (detached work): nothing of ours tells it
        return NonRecordingSpan(parent)
    except Exception:  # inside the framework's call: nothing may raise there
        report("native stand-down")
        return None


def _gated_start_span(
    framework: str, start_span: Callable[..., Span], every: bool = False
) -> Callable[..., Span]:
    def start(name: str, context: Context | None = None, *args: Any, **kwargs: Any) -> Span:
        span = stand_in(framework, name, context, kwargs.get("attributes"), every)
        return span if span is not None else start_span(name, context, *args, **kwargs)

    return start


def _gated_current(framework: str, start_as_current: Callable[..., Any]) -> Callable[..., Any]:
    @contextmanager
    def start(
        name: str, context: Context | None = None, *args: Any, **kwargs: Any
    ) -> Iterator[Span]:
        span = stand_in(framework, name, context, kwargs.get("attributes"))
        if span is None:
            with start_as_current(name, context, *args, **kwargs) as theirs:
                yield theirs
            return
        with trace.use_span(span, end_on_exit=False):
            yield span

    return start


def _gated_function(framework: str, start_as_current: Callable[..., Any]) -> Callable[..., Any]:
    """pydantic-ai's ``start_as_current_span(tracer, name, **kwargs)``, gated."""

    @contextmanager
    def start(tracer: Any, name: str, **kwargs: Any) -> Iterator[Span]:
        span = stand_in(framework, name, kwargs.get("context"), kwargs.get("attributes"))
        if span is None:
            with start_as_current(tracer, name, **kwargs) as theirs:
                yield theirs
            return
        with trace.use_span(span, end_on_exit=False):
            yield span

    setattr(start, _MARK, start_as_current)
    return start


def gate(framework: str, tracer: object) -> bool:
    """Gate ``tracer``'s two span starts in place for ``framework``; whether it was done now
    (False: already gated, or not a tracer)."""
    if not isinstance(tracer, Tracer) or _MARK in vars(tracer):
        return False
    start_span = tracer.start_span
    start_as_current = tracer.start_as_current_span
    tracer.start_span = _gated_start_span(framework, start_span)  # type: ignore[method-assign]
    tracer.start_as_current_span = _gated_current(framework, start_as_current)  # type: ignore[method-assign]
    setattr(tracer, _MARK, framework)
    return True


def ungate(tracer: object) -> None:
    """``tracer`` as it was before :func:`gate`."""
    if isinstance(tracer, Tracer) and _MARK in vars(tracer):
        for name in ("start_span", "start_as_current_span", _MARK):
            vars(tracer).pop(name, None)


class _AutoGenTrace:
    """OTel's ``trace`` module as AutoGen's ``_telemetry._genai`` sees it: ``get_tracer``
    gives a gated tracer, everything else is OTel's own."""

    def __init__(self, real: ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_tracer(self, *args: Any, **kwargs: Any) -> Tracer:
        tracer: Tracer = self._real.get_tracer(*args, **kwargs)
        try:
            gate("autogen", tracer)
        except Exception:
            report("native stand-down")
        return tracer


ADK_TOLD = frozenset(
    {
        "record_client_token_usage",  # gen_ai.client.token.usage
        "record_client_operation_duration",  # gen_ai.client.operation.duration
        "record_tool_execution_duration",  # gen_ai.execute_tool.duration
        "record_agent_invocation_duration",  # gen_ai.invoke_agent.duration
        "record_invoke_agent_inference_calls",  # gen_ai.invoke_agent.inference_calls
        "record_invoke_agent_tool_calls",  # gen_ai.invoke_agent.tool_calls
    }
)
"""Google ADK's records (functions of ``google.adk.telemetry._metrics``) of what ours measure."""

STRANDS_TOLD = (
    "event_loop_input_tokens",  # strands.event_loop.input.tokens
    "event_loop_output_tokens",  # strands.event_loop.output.tokens
    "event_loop_cache_read_input_tokens",  # strands.event_loop.cache_read.input.tokens
    "event_loop_cache_write_input_tokens",  # strands.event_loop.cache_write.input.tokens
    "event_loop_latency",  # strands.event_loop.latency: a model call's
    "model_time_to_first_token",  # strands.model.time_to_first_token
    "tool_duration",  # strands.tool.duration
)
"""Strands' instruments (attributes of its ``MetricsClient``) measuring what ours measure."""


def stands_down(framework: str, context: Context | None = None) -> bool:
    """Whether a metric of ``framework``'s that ours tell is not recorded in ``context``
    (None: the current one): a run of its adapter's."""
    try:
        return otel_context.get_value(NATIVE, context) == framework and covering(context)
    except Exception:  # inside the framework's call: nothing may raise there
        report("native stand-down")
        return False


def _gated_record(framework: str, record: Callable[..., Any]) -> Callable[..., Any]:
    def gated(*args: Any, **kwargs: Any) -> Any:
        return None if stands_down(framework) else record(*args, **kwargs)

    return gated


class _AdkMetrics:
    """ADK's ``telemetry._metrics`` module as its ``telemetry._instrumentation`` sees it: the
    records of :data:`ADK_TOLD` do nothing in a run of its adapter's; everything else is
    the module's own."""

    def __init__(self, real: ModuleType) -> None:
        self.real = real
        self._gated = {
            name: _gated_record("google_adk", getattr(real, name))
            for name in ADK_TOLD
            if callable(getattr(real, name, None))
        }

    def __getattr__(self, name: str) -> Any:
        gated = self._gated.get(name)
        return gated if gated is not None else getattr(self.real, name)


class _GatedInstrument:
    """A framework's instrument that records nothing in a run of its adapter's; every other
    attribute is the instrument's own."""

    def __init__(self, framework: str, real: Any) -> None:
        self.framework = framework
        self.real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def record(self, amount: Any, attributes: Any = None, context: Any = None) -> None:
        if not stands_down(self.framework, context):
            self.real.record(amount, attributes, context)

    def add(self, amount: Any, attributes: Any = None, context: Any = None) -> None:
        if not stands_down(self.framework, context):
            self.real.add(amount, attributes, context)


_AUTOGEN = "autogen_core._telemetry._genai"
_ADK = "google.adk.telemetry.tracing"
_ADK_INSTRUMENTATION = "google.adk.telemetry._instrumentation"
_ADK_SEAM = "_metrics"  # the name it calls ADK's metric records through
_STRANDS = "strands.telemetry.tracer"
_STRANDS_METRICS = "strands.telemetry.metrics"


def _strands_tracer() -> object:
    instance = getattr(sys.modules.get(_STRANDS), "_tracer_instance", None)
    return getattr(instance, "tracer", None)


def _install_adk_metrics() -> None:
    module = sys.modules.get(_ADK_INSTRUMENTATION)
    if module is None and "google.adk" in sys.modules:
        module = importlib.import_module(_ADK_INSTRUMENTATION)
    theirs = getattr(module, _ADK_SEAM, None)
    if isinstance(theirs, ModuleType):  # else gated already, or a version without the seam
        setattr(module, _ADK_SEAM, _AdkMetrics(theirs))


def _strands_metrics_client() -> object:
    client = getattr(sys.modules.get(_STRANDS_METRICS), "MetricsClient", None)
    if not isinstance(client, type) or not hasattr(client, "_instance"):
        return None  # a version without the seam
    return client()  # the singleton; made now if no model call made it yet (this run's will)


def _install_strands_metrics() -> None:
    client = _strands_metrics_client()
    for name in STRANDS_TOLD if client is not None else ():
        instrument = vars(client).get(name)
        if instrument is not None and not isinstance(instrument, _GatedInstrument):
            setattr(client, name, _GatedInstrument("strands", instrument))


PYDANTIC_AI_TOLD = ("tokens_histogram", "time_to_first_chunk_histogram")
"""pydantic-ai's instruments (attributes of each ``InstrumentationSettings``) under our
metrics' names: ``gen_ai.client.token.usage``, ``gen_ai.client.operation.time_to_first_chunk``."""
_PYDANTIC_AI_SPANS = ("pydantic_ai._instrumentation", "pydantic_ai.capabilities.instrumentation")
_PYDANTIC_AI_SEAM = "start_as_current_span"
_PYDANTIC_AI_SETTINGS = "pydantic_ai.models.instrumented"


class _GatedAttribute:
    """A data descriptor on a framework's class: an instrument its objects hold as
    ``name`` is read gated (:class:`_GatedInstrument`); written, it is stored as before."""

    def __init__(self, framework: str, name: str) -> None:
        self.framework = framework
        self.name = name

    def __get__(self, instance: object, owner: object = None) -> Any:
        if instance is None:
            return self
        try:
            value = vars(instance)[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        return _GatedInstrument(self.framework, value)

    def __set__(self, instance: object, value: Any) -> None:
        vars(instance)[self.name] = value


def _pydantic_ai_settings() -> object:
    return getattr(sys.modules.get(_PYDANTIC_AI_SETTINGS), "InstrumentationSettings", None)


def _install_pydantic_ai_metrics() -> None:
    settings = _pydantic_ai_settings()
    if not isinstance(settings, type):
        return
    for name in PYDANTIC_AI_TOLD:
        if not isinstance(vars(settings).get(name), _GatedAttribute):
            setattr(settings, name, _GatedAttribute("pydantic_ai", name))


_METRICS = {
    "google_adk": _install_adk_metrics,
    "pydantic_ai": _install_pydantic_ai_metrics,
    "strands": _install_strands_metrics,
}
"""Each framework's metrics seam, gated apart from its spans."""


def _install_autogen() -> bool:
    module = sys.modules.get(_AUTOGEN)
    theirs = getattr(module, "trace", None)
    if isinstance(theirs, _AutoGenTrace):
        return True
    if theirs is not trace:
        return False  # a version without the seam: its spans stay
    module.trace = _AutoGenTrace(trace)  # type: ignore[union-attr]
    return True


def _install_adk() -> bool:
    if _ADK not in sys.modules and "google.adk" in sys.modules:
        importlib.import_module(_ADK)  # ADK's runner imports it lazily, at its first run
    tracer = getattr(sys.modules.get(_ADK), "tracer", None)
    gate("google_adk", tracer)
    return isinstance(tracer, Tracer)


def _install_strands() -> bool:
    tracer = _strands_tracer()
    gate("strands", tracer)
    return isinstance(tracer, Tracer)


def _install_pydantic_ai() -> bool:
    gated = False
    for name in _PYDANTIC_AI_SPANS:
        module = sys.modules.get(name)
        theirs = getattr(module, _PYDANTIC_AI_SEAM, None)
        if callable(theirs) and not hasattr(theirs, _MARK):
            setattr(module, _PYDANTIC_AI_SEAM, _gated_function("pydantic_ai", theirs))
        gated = gated or hasattr(getattr(module, _PYDANTIC_AI_SEAM, None), _MARK)
    return gated


_LANGGRAPH = ("langgraph.pregel", "Pregel", ("stream", "astream"))
_OPENLLMETRY_LANGCHAIN = "opentelemetry.instrumentation.langchain"


def _langgraph_tracers() -> Iterator[Tracer]:
    """The tracers OpenLLMetry's wrappers of LangGraph's graph runs hold (in their closure),
    at whatever depth of wrappers they sit."""
    module, class_name, methods = _LANGGRAPH
    cls = getattr(sys.modules.get(module), class_name, None)
    for method in methods if isinstance(cls, type) else ():
        current = vars(cls).get(method)
        for _ in range(WRAPPER_DEPTH):
            wrapper = getattr(current, "_self_wrapper", None)
            if wrapper is None:
                break
            if str(getattr(wrapper, "__module__", "")).startswith(_OPENLLMETRY_LANGCHAIN):
                for cell in getattr(wrapper, "__closure__", None) or ():
                    try:
                        value = cell.cell_contents
                    except ValueError:  # an empty cell
                        continue
                    if isinstance(value, Tracer):
                        yield value
            current = getattr(current, "__wrapped__", None)


def _install_langgraph() -> bool:
    gated = False
    for tracer in _langgraph_tracers():
        gate("langgraph", tracer)
        gated = True
    return gated


_AGNO_RUNS = ("agno.agent._run", "agno.team._run")
_OPENINFERENCE_AGNO = "openinference.instrumentation.agno"
_AGENTS_SETUP = "agents.tracing.setup"  # the Agents SDK's global trace provider
_OPENLLMETRY_AGENTS = "opentelemetry.instrumentation.openai_agents"
_LOGFIRE_AGENTS = "logfire._internal.integrations.openai_agents"
_LLAMA_INDEX_DISPATCHER = "llama_index.core.instrumentation"
_OPENLLMETRY_LLAMA_INDEX = "opentelemetry.instrumentation.llamaindex"


class _GatedTracer:
    """A tracer that a wrapper holds as an attribute, seen through a gate: its ``start_span``
    gives :func:`stand_in`'s span where there is one; everything else is the tracer's own."""

    def __init__(self, framework: str, real: Any, every: bool) -> None:
        self.real = real
        self.start_span = _gated_start_span(framework, real.start_span, every)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _theirs(value: object, module: str) -> bool:
    return str(type(value).__module__).startswith(module)


def _agno_run_wrappers() -> Iterator[Any]:
    """The objects OpenInference's wrappers of Agno's module-level run functions are bound to
    (one ``_RunWrapper`` for agents and teams, each function's ``_self_wrapper.__self__``)."""
    seen: set[int] = set()
    for name in _AGNO_RUNS:
        module = sys.modules.get(name)
        for function in list(vars(module).values()) if module is not None else ():
            bound = getattr(getattr(function, "_self_wrapper", None), "__self__", None)
            if bound is None or id(bound) in seen:
                continue
            if _theirs(bound, _OPENINFERENCE_AGNO):
                seen.add(id(bound))
                yield bound


def _agents_providers() -> Iterator[Any]:
    """The Agents SDK's global trace provider and every provider wrapped in it (Logfire's
    ``instrument_openai_agents()`` wraps it: ``.wrapped``); none before the SDK made one."""
    provider = getattr(sys.modules.get(_AGENTS_SETUP), "GLOBAL_TRACE_PROVIDER", None)
    for _ in range(WRAPPER_DEPTH):
        if provider is None:
            return
        yield provider
        provider = vars(provider).get("wrapped") if hasattr(provider, "__dict__") else None


def _agents_processors() -> Iterator[Any]:
    """OpenLLMetry's trace processors registered with the Agents SDK's trace provider."""
    for provider in _agents_providers():
        processors = getattr(vars(provider).get("_multi_processor"), "_processors", ())
        for processor in processors if isinstance(processors, tuple) else ():
            if _theirs(processor, _OPENLLMETRY_AGENTS):
                yield processor


def _llama_index_handlers(kind: str) -> Iterator[Any]:
    """OpenLLMetry's handlers on LlamaIndex's root dispatcher of ``kind`` (``span_handlers``,
    ``event_handlers``)."""
    get_dispatcher = getattr(sys.modules.get(_LLAMA_INDEX_DISPATCHER), "get_dispatcher", None)
    if not callable(get_dispatcher):
        return
    for handler in list(getattr(get_dispatcher(), kind, None) or ()):
        if _theirs(handler, _OPENLLMETRY_LLAMA_INDEX):
            yield handler


class Held(NamedTuple):
    """A peer's instrumentation of a framework, holding its tracer and instruments itself."""

    find: Callable[[], Iterator[Any]]
    """The objects holding them (found by function)."""
    tracers: tuple[str, ...]
    """The attributes a tracer is held in (one per version of the peer)."""
    every: bool
    """Whether every span of theirs stands down, told or not."""
    instruments: tuple[str, ...] = ()
    """The attributes holding instruments that measure what ours measure."""


HELD: dict[str, Held] = {
    "agno": Held(_agno_run_wrappers, ("_tracer",), False),
    "openai_agents": Held(
        _agents_processors,
        ("tracer", "_tracer"),
        True,
        ("_duration_histogram", "_token_usage_histogram"),
    ),
}
"""Per framework: the objects of a peer's instrumentation holding a tracer, where they hold it,
whether every span of theirs stands down, and the instruments of theirs that stand down.
OpenInference's Agno run wrapper is told apart (its run spans tell our run; its suppressed path
is broken, :mod:`._context`). OpenLLMetry's Agents SDK trace processor (``.tracer``), the
official ``opentelemetry-instrumentation-openai-agents-v2``'s (0.1.0, the same module path:
``._tracer``, and its ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``
histograms, our metrics' names, on the global meter) read no context key: every span they
start in their framework's run stands down, as their siblings' that read the general key do
(workflow, task and handoff spans included). OpenLLMetry's LlamaIndex handlers are quieted
whole instead (:func:`_install_llama_index`)."""


def _install_held(framework: str) -> bool:
    held = HELD[framework]
    gated = False
    for holder in held.find():
        for attribute in held.tracers:
            tracer = getattr(holder, attribute, None)
            if not isinstance(tracer, _GatedTracer) and tracer is not None:
                setattr(holder, attribute, _GatedTracer(framework, tracer, held.every))
        for attribute in held.instruments:
            instrument = getattr(holder, attribute, None)
            if not isinstance(instrument, _GatedInstrument) and instrument is not None:
                setattr(holder, attribute, _GatedInstrument(framework, instrument))
        gated = True
    return gated


def _quiet_enter(framework: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    """A span handler's ``span_enter`` that opens nothing in a run of ``framework``'s adapter."""

    def span_enter(self: Any, *args: Any, **kwargs: Any) -> Any:
        return None if stands_down(framework) else theirs(self, *args, **kwargs)

    return span_enter


def _opened(handler: Any, id_: object) -> bool:
    """Whether a LlamaIndex span handler holds the span ``id_`` (open, or waiting for its
    stream's end)."""
    for held in ("open_spans", "waiting_for_streaming_spans"):
        spans = getattr(handler, held, None)
        if isinstance(spans, dict) and id_ in spans:
            return True
    return False


def _quiet_exit(framework: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    """A span handler's ``span_exit`` or ``span_drop`` that leaves a span it never opened
    (one a run of ``framework``'s adapter entered) alone."""

    def span_exit(self: Any, *args: Any, **kwargs: Any) -> Any:
        id_ = kwargs.get("id_", args[0] if args else None)
        if not _opened(self, id_) and stands_down(framework):
            return None
        return theirs(self, *args, **kwargs)

    return span_exit


def _quiet_handle(framework: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    """An event handler's ``handle`` that reads no event of a span its span handler never
    opened (it prints each such event) in a run of ``framework``'s adapter."""

    def handle(self: Any, event: Any, *args: Any, **kwargs: Any) -> Any:
        spans = getattr(self, "_span_handler", None)
        if not _opened(spans, getattr(event, "span_id", None)) and stands_down(framework):
            return None
        return theirs(self, event, *args, **kwargs)

    return handle


_LLAMA_INDEX_QUIET: dict[str, Callable[[str, Callable[..., Any]], Callable[..., Any]]] = {
    "span_enter": _quiet_enter,
    "span_exit": _quiet_exit,
    "span_drop": _quiet_exit,
}
"""OpenLLMetry's LlamaIndex span handler's methods, quieted in a run of the adapter."""


def _llama_index_quiet() -> Iterator[tuple[type, str, Callable[..., Any]]]:
    """Each class of OpenLLMetry's LlamaIndex handlers (on the dispatcher now), each method
    of it quieted, and its quieting."""
    for handler_class in {type(handler) for handler in _llama_index_handlers("span_handlers")}:
        for name, quiet in _LLAMA_INDEX_QUIET.items():
            yield handler_class, name, quiet
    for handler_class in {type(handler) for handler in _llama_index_handlers("event_handlers")}:
        yield handler_class, "handle", _quiet_handle


def _install_llama_index() -> bool:
    """OpenLLMetry's handlers on LlamaIndex's dispatcher do nothing in a run of the adapter.

    They read no context key, and its ``uninstrument()`` leaves them on the dispatcher: its
    span handler makes a context current around each dispatcher span, built from its own
    record of parents (the context current when the outermost workflow started), so in a run
    nested in a tool's body it made the outer run's context current again and our spans of
    the inner runs landed there. Every span of theirs there told what ours tell (it stood
    down); now none is opened, no context of theirs is made current, and the events of spans
    they never opened are not read (their handler prints each)."""
    gated = False
    for handler_class, name, quiet in _llama_index_quiet():
        if not hasattr(getattr(handler_class, name, None), _MARK):
            theirs = vars(handler_class).get(name)
            method = quiet("llama_index", getattr(handler_class, name))
            setattr(method, _MARK, (theirs,))
            setattr(handler_class, name, method)
        gated = True
    return gated


def _restore_llama_index() -> None:
    for handler_class, name, _ in list(_llama_index_quiet()):
        marked = getattr(vars(handler_class).get(name), _MARK, None)
        if isinstance(marked, tuple):
            if marked[0] is None:
                delattr(handler_class, name)
            else:
                setattr(handler_class, name, marked[0])


def _restore_held() -> None:
    for held in HELD.values():
        for holder in held.find():
            for attribute in held.tracers + held.instruments:
                value = getattr(holder, attribute, None)
                if isinstance(value, (_GatedTracer, _GatedInstrument)):
                    setattr(holder, attribute, value.real)


_CREATE = ("create_trace", "create_span")
"""Logfire's wrapper of the Agents SDK's trace provider makes a Logfire span in each."""


def _gated_create(framework: str, wrapper: Any, name: str) -> Callable[..., Any]:
    theirs = getattr(wrapper, name)

    def create(*args: Any, **kwargs: Any) -> Any:
        if stands_down(framework):  # the SDK's own trace or span: its processors get it
            return getattr(wrapper.wrapped, name)(*args, **kwargs)
        return theirs(*args, **kwargs)

    return create


def _install_logfire_agents() -> bool:
    """Logfire's ``instrument_openai_agents()`` reads no context key: its wrapper of the SDK's
    trace provider hands the SDK's own trace and spans on in a run of the adapter's."""
    gated = False
    for provider in _agents_providers():
        if _theirs(provider, _LOGFIRE_AGENTS) and hasattr(provider, "wrapped"):
            if _MARK not in vars(provider):
                for name in _CREATE:
                    setattr(provider, name, _gated_create("openai_agents", provider, name))
                setattr(provider, _MARK, "openai_agents")
            gated = True
    return gated


def _restore_logfire_agents() -> None:
    for provider in list(_agents_providers()):
        if _theirs(provider, _LOGFIRE_AGENTS) and _MARK in vars(provider):
            for name in (*_CREATE, _MARK):
                vars(provider).pop(name, None)


def _install_openai_agents() -> bool:
    processors = _install_held("openai_agents")
    return _install_logfire_agents() or processors


_SPANS: dict[str, Callable[[], bool]] = {
    "agno": lambda: _install_held("agno"),
    "llama_index": _install_llama_index,
    "openai_agents": _install_openai_agents,
    "autogen": _install_autogen,
    "google_adk": _install_adk,
    "langgraph": _install_langgraph,
    "pydantic_ai": _install_pydantic_ai,
    "strands": _install_strands,
}
"""Each framework's span seam: gates it, and tells whether it is gated (now or before)."""


def install(framework: str) -> bool:
    """The gate of ``framework``'s seam, if its module is loaded and the seam is there;
    whether the seam is gated (now or before). Its metrics seam is gated on its own: a version
    where that one fails keeps the span gate."""
    metrics = _METRICS.get(framework)
    if metrics is not None:
        try:
            metrics()
        except Exception:
            report("native stand-down")
    spans = _SPANS.get(framework)
    return spans is not None and spans()


def restore() -> None:
    """Every seam as it was before :func:`install`."""
    module = sys.modules.get(_AUTOGEN)
    if isinstance(getattr(module, "trace", None), _AutoGenTrace):
        module.trace = trace  # type: ignore[union-attr]
    ungate(getattr(sys.modules.get(_ADK), "tracer", None))
    ungate(_strands_tracer())
    for tracer in _langgraph_tracers():
        ungate(tracer)
    restore_langsmith()
    _restore_held()
    _restore_llama_index()
    _restore_logfire_agents()
    for name in _PYDANTIC_AI_SPANS:
        module = sys.modules.get(name)
        original = getattr(getattr(module, _PYDANTIC_AI_SEAM, None), _MARK, None)
        if original is not None:
            setattr(module, _PYDANTIC_AI_SEAM, original)
    settings = _pydantic_ai_settings()
    for name in PYDANTIC_AI_TOLD if isinstance(settings, type) else ():
        if isinstance(vars(settings).get(name), _GatedAttribute):
            delattr(settings, name)
    module = sys.modules.get(_ADK_INSTRUMENTATION)
    theirs = getattr(module, _ADK_SEAM, None)
    if isinstance(theirs, _AdkMetrics):
        setattr(module, _ADK_SEAM, theirs.real)
    client = getattr(
        getattr(sys.modules.get(_STRANDS_METRICS), "MetricsClient", None), "_instance", None
    )
    for name, instrument in list(vars(client).items()) if client is not None else ():
        if isinstance(instrument, _GatedInstrument):
            setattr(client, name, instrument.real)


def install_running() -> None:
    """The seams of the framework whose adapter's run is current here (:data:`NATIVE`), gated
    again: a peer instrumenting that framework while the run is open (``instrument()`` called
    by a tool, a lazy setup) is found now, not at the next run's start, and its spans of the
    open run stand down from the first. Nothing outside such a run. Never raises (called
    inside the caller's ``instrument()``)."""
    framework = otel_context.get_value(NATIVE)
    if isinstance(framework, str):
        try:
            install(framework)
        except Exception:
            report("native stand-down")


def native_run(context: Context, module: object) -> Context:
    """``context``, where the framework of the adapter ``module`` stands its own spans down
    (its seam gated first); unchanged for any other adapter."""
    framework = ADAPTERS.get(module) if isinstance(module, str) else None
    if framework is None:
        return context
    try:
        install(framework)
    except Exception:
        report("native stand-down")
        return context
    return otel_context.set_value(NATIVE, framework, context)

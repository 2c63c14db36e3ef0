"""The frameworks' own spans stand down in a framework run of ours, where ours tell the same.

Google ADK, Strands Agents and AutoGen trace to the global tracer provider themselves, so with
``configure()``'s globals their agent, model-call and tool spans land in our run's trace,
under our spans: every model call and tool call told twice, tokens twice. Inside a run of
their adapter with the stand-down on (:data:`NATIVE` names the framework in the run's
context), a span of theirs that tells what ours tell (:data:`TOLD`, by the operation its name
starts with) is not started: the framework gets a non-recording span carrying the context of
the span it would have been a child of (ours, or another stood-down one), so whatever starts
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
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import NonRecordingSpan, Span, Tracer

from agent_otel._guard import report

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
    "agent_contract.sources.autogen_stream": "autogen",
    "agent_contract.sources.google_adk_stream": "google_adk",
    "agent_contract.sources.strands_stream": "strands",
}
"""The framework adapters whose framework traces to the global provider on its own."""

_MARK = "_agent_otel_native"


def told(name: object) -> bool:
    """Whether a span named ``name`` tells an operation our spans tell (:data:`TOLD`)."""
    return isinstance(name, str) and name.split(" ", 1)[0] in TOLD


def stand_in(framework: str, name: object, context: Context | None) -> Span | None:
    """The span to give ``framework`` instead of starting its span ``name`` under
    ``context`` (None: the current one), or None to start theirs: a non-recording span with
    the parent's context, so what starts under it is a child of that parent."""
    try:
        if otel_context.get_value(NATIVE, context) != framework or not told(name):
            return None
        parent = trace.get_current_span(context).get_span_context()
        if not parent.is_valid:
            return None  # a root of theirs (detached work): nothing of ours tells it
        return NonRecordingSpan(parent)
    except Exception:  # inside the framework's call: nothing may raise there
        report("native stand-down")
        return None


def _gated_start_span(framework: str, start_span: Callable[..., Span]) -> Callable[..., Span]:
    def start(name: str, context: Context | None = None, *args: Any, **kwargs: Any) -> Span:
        span = stand_in(framework, name, context)
        return span if span is not None else start_span(name, context, *args, **kwargs)

    return start


def _gated_current(framework: str, start_as_current: Callable[..., Any]) -> Callable[..., Any]:
    @contextmanager
    def start(
        name: str, context: Context | None = None, *args: Any, **kwargs: Any
    ) -> Iterator[Span]:
        span = stand_in(framework, name, context)
        if span is None:
            with start_as_current(name, context, *args, **kwargs) as theirs:
                yield theirs
            return
        with trace.use_span(span, end_on_exit=False):
            yield span

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


_AUTOGEN = "autogen_core._telemetry._genai"
_ADK = "google.adk.telemetry.tracing"
_STRANDS = "strands.telemetry.tracer"


def _strands_tracer() -> object:
    instance = getattr(sys.modules.get(_STRANDS), "_tracer_instance", None)
    return getattr(instance, "tracer", None)


def install(framework: str) -> bool:
    """The gate of ``framework``'s seam, if its module is loaded and the seam is there;
    whether the seam is gated (now or before)."""
    if framework == "autogen":
        module = sys.modules.get(_AUTOGEN)
        theirs = getattr(module, "trace", None)
        if isinstance(theirs, _AutoGenTrace):
            return True
        if theirs is not trace:
            return False  # a version without the seam: its spans stay
        module.trace = _AutoGenTrace(trace)  # type: ignore[union-attr]
        return True
    if framework == "google_adk":
        if _ADK not in sys.modules and "google.adk" in sys.modules:
            importlib.import_module(_ADK)  # ADK's runner imports it lazily, at its first run
        tracer = getattr(sys.modules.get(_ADK), "tracer", None)
    elif framework == "strands":
        tracer = _strands_tracer()
    else:
        return False
    gate(framework, tracer)
    return isinstance(tracer, Tracer)


def restore() -> None:
    """Every seam as it was before :func:`install`."""
    module = sys.modules.get(_AUTOGEN)
    if isinstance(getattr(module, "trace", None), _AutoGenTrace):
        module.trace = trace  # type: ignore[union-attr]
    ungate(getattr(sys.modules.get(_ADK), "tracer", None))
    ungate(_strands_tracer())


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

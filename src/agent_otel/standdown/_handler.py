"""util-genai's handler's agent, workflow and tool invocations read no context key: guarded.

Read in util-genai 1.3b0 (``handler.py``, ``_agent_invocation.py``, ``_tool_invocation.py``,
``_workflow_invocation.py``): ``TelemetryHandler.inference()`` stands down where our chat span
is (:mod:`._util_genai`), but ``invoke_local_agent()``, ``workflow()`` and ``tool()`` always
start their span, and at its end record ``gen_ai.invoke_agent.duration``,
``gen_ai.invoke_workflow.duration`` and ``gen_ai.execute_tool.duration``: two of them our
metrics' very names. The official packages for the frameworks our adapters read (``genai-
openai-agents``, ``genai-langchain``, ``genai-agno``, ``genai-llama-index``, ``genai-smolagents``,
...) make them from the framework's own run, so in a run of that adapter every agent run and
tool call was told twice, on spans and in a dashboard's sums.

So the three methods (:data:`TOLD`) are guarded on the class: in a framework run of ours
(:data:`~._context.COVERED` in the context they are given, else the current one) they run on a
stand-in of the handler whose tracer starts no span (a non-recording one carrying its parent's
context, so whatever starts under it, an HTTP span, is a child of ours, in our trace), whose
instruments record nothing and whose logger emits nothing; everywhere else, and with
``stand_down_providers=False`` (no run of ours is covered), they run as before. The invocation
they return is util-genai's own, so the package's calls on it work unchanged.
``invoke_remote_agent()`` stays: a remote agent's run is not one of ours. Loaded only once
something has imported util-genai's handler: agent-otel never imports util-genai.

``inference()`` stands down at util-genai's own key, which our chat span's context carries
(:mod:`._util_genai`) when util-genai was loaded as that context was made. One first imported
after (a package on the handler instrumented inside our chat span, or inside a framework run
of ours, whose context was made at its start) found no key, and its first call was told twice:
so ``inference()`` is guarded too, and where one of our chat spans covers the call
(:func:`~._context.covering_call`) and the key is missing, it is given the context with the key
set. Where none covers it and the key holds our ``InferenceData`` (a task our chat span or
framework run started, calling once that span or run ended: the key outlived it in the task's
copy of the context; a tool body's own call in a framework run), it is given the context
without it: the call is none of ours, and is traced as openai-v2's, OpenInference's and
OpenLLMetry's are there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import NoOpLogger
from opentelemetry.metrics import NoOpHistogram
from opentelemetry.trace import INVALID_SPAN_CONTEXT, NonRecordingSpan, Span

from agent_otel._guard import report

from ._context import COVERED, covering_call
from ._methods import MARK, guard_methods
from ._util_genai import covered, missing, released

MODULE = "opentelemetry.util.genai.handler"
_CLASS = "TelemetryHandler"
TOLD = ("invoke_local_agent", "workflow", "tool")
"""The handler's methods whose invocation tells what our run and tool spans tell."""
_INFERENCE = "inference"
_STAND_IN = "_agent_otel_stand_in"


class _StandInTracer(trace.Tracer):
    """Starts no span: a non-recording one with the context of the span it would be under."""

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> Span:
        parent = trace.get_current_span(context).get_span_context()
        return NonRecordingSpan(parent if parent.is_valid else INVALID_SPAN_CONTEXT)

    def start_as_current_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        return trace.use_span(self.start_span(name, context), end_on_exit=False)


class _NoInstruments:
    """util-genai's ``_Instruments`` that record nothing (each is a histogram)."""

    def __getattr__(self, name: str) -> NoOpHistogram:
        return NoOpHistogram(name)


def _silent() -> dict[str, object]:
    """What the handler's invocations are made with, by util-genai 1.3b0's attribute names."""
    return {
        "_tracer": _StandInTracer(),
        "_instruments": _NoInstruments(),
        "_logger": NoOpLogger("agent_otel.stand_down"),
    }


def _stand_in(handler: Any) -> Any:
    """``handler``'s stand-in (made once per handler): its state, without its telemetry. A
    handler not of that shape (util-genai 1.1b0's records through ``_metrics_recorder``) is
    its own: theirs stays, a second span rather than a half-silenced one."""
    quiet = vars(handler).get(_STAND_IN)
    if quiet is None:
        silent = _silent()
        if not silent.keys() <= vars(handler).keys():
            return handler
        quiet = copy.copy(handler)
        vars(quiet).update(silent)
        setattr(handler, _STAND_IN, quiet)
    return quiet


def _in_our_run(kwargs: dict[str, Any]) -> bool:
    try:  # inside the package's call: nothing may raise there
        context = kwargs.get("context")
        return bool(otel_context.get_value(COVERED, context))
    except Exception:
        report("stand-down")
        return False  # theirs is recorded: a second span, not a failed call


def _inference_context(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of an ``inference()`` call, given the context with util-genai's key set
    where our chat span covers the call and the key is missing, without our key where nothing
    of ours covers it any more; else as they were."""
    try:  # inside the package's call: nothing may raise there
        context = kwargs.get("context")
        if covering_call(context):
            if missing(context):
                here = context if context is not None else otel_context.get_current()
                return {**kwargs, "context": covered(here)}
            return kwargs
        # a task our chat span or framework run started, calling once it ended: not ours
        outside = released(context)
        if outside is not None:
            return {**kwargs, "context": outside}
    except Exception:
        report("stand-down")
    return kwargs  # theirs is recorded: a second span, not a failed call


def _guarded(name: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    if name == _INFERENCE:

        def inference(self: Any, *args: Any, **kwargs: Any) -> Any:
            return theirs(self, *args, **_inference_context(kwargs))

        setattr(inference, MARK, theirs)
        return inference

    def guard(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _in_our_run(kwargs):
            return theirs(self, *args, **kwargs)
        try:
            quiet = _stand_in(self)
        except Exception:
            report("stand-down")
            return theirs(self, *args, **kwargs)
        return theirs(quiet, *args, **kwargs)

    setattr(guard, MARK, theirs)
    return guard


def guard_handler() -> int:
    """Guard util-genai's handler's :data:`TOLD` methods and ``inference()`` if it is loaded
    and not yet guarded; how many were."""
    return guard_methods(MODULE, _CLASS, (*TOLD, _INFERENCE), _guarded)

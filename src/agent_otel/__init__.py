"""agent-otel: OpenTelemetry observability middleware for AI agents.

Wrap an agent's event stream (``otel_wrapper()``) and every run becomes an ``invoke_agent``
span with step, chat and tool spans below it, plus the GenAI metrics; the agent never notices.
``instrument()`` does the same for an existing agent of either contract, and
``agent_otel.instrumentor.AgentInstrumentor`` (needs ``agent-otel[instrumentor]``) for
``opentelemetry-instrument``; ``agent_otel.remote.a2a`` (needs ``agent-otel[a2a]``) carries a
run's trace across a2a-sdk's client and server.

Every name is imported on first use (PEP 562): ``import agent_otel`` alone loads nothing else,
so the pytest plugin (``agent_otel.testing.plugin``), which every pytest run of a project with
agent-otel installed imports, costs a bystander almost nothing. ``configure``, ``Telemetry``
and the tail sampler load the OTel SDK; the others the OTel API only.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__

if TYPE_CHECKING:
    from .cost import BUNDLED_PRICES, ModelPrice, PriceTable
    from .decorating._instrument import instrument, is_instrumented, uninstrument
    from .decorating._propagation import extract_context, inject_context
    from .evaluating import record_evaluation
    from .exporting._configure import configure
    from .exporting._telemetry import Telemetry
    from .identity import RunIdentity, run_identity
    from .identity._processor import RunIdentityProcessor
    from .recording._open import end_open_runs
    from .recording._wrapper import StreamWrapper, otel_wrapper, run_context
    from .recording.content._capture import ContentCapture, ContentKind, Redactor
    from .remote import (
        ContinueTraceMiddleware,
        ContinueTraceWSGIMiddleware,
        RemoteAgentCall,
        continue_trace,
        remote_agent,
        with_trace_headers,
    )
    from .sampling import SamplerStats, TailSampler, TailSamplingPolicy
    from .scrubbing import Scrubber

# Where each public name lives (imported on first access, then cached in this module).
_LAZY = {
    "BUNDLED_PRICES": ".cost",
    "ContentCapture": ".recording.content._capture",
    "ContentKind": ".recording.content._capture",
    "ContinueTraceMiddleware": ".remote",
    "ContinueTraceWSGIMiddleware": ".remote",
    "ModelPrice": ".cost",
    "PriceTable": ".cost",
    "Redactor": ".recording.content._capture",
    "RemoteAgentCall": ".remote",
    "RunIdentity": ".identity",
    "RunIdentityProcessor": ".identity._processor",
    "SamplerStats": ".sampling",
    "Scrubber": ".scrubbing",
    "StreamWrapper": ".recording._wrapper",
    "TailSampler": ".sampling",
    "TailSamplingPolicy": ".sampling",
    "Telemetry": ".exporting._telemetry",
    "configure": ".exporting._configure",
    "end_open_runs": ".recording._open",
    "continue_trace": ".remote",
    "extract_context": ".decorating._propagation",
    "inject_context": ".decorating._propagation",
    "instrument": ".decorating._instrument",
    "is_instrumented": ".decorating._instrument",
    "otel_wrapper": ".recording._wrapper",
    "record_evaluation": ".evaluating",
    "remote_agent": ".remote",
    "run_context": ".recording._wrapper",
    "run_identity": ".identity",
    "uninstrument": ".decorating._instrument",
    "with_trace_headers": ".remote",
}


__all__ = [
    "BUNDLED_PRICES",
    "ContentCapture",
    "ContentKind",
    "ContinueTraceMiddleware",
    "ContinueTraceWSGIMiddleware",
    "ModelPrice",
    "PriceTable",
    "Redactor",
    "RemoteAgentCall",
    "RunIdentity",
    "RunIdentityProcessor",
    "SamplerStats",
    "Scrubber",
    "StreamWrapper",
    "TailSampler",
    "TailSamplingPolicy",
    "Telemetry",
    "__version__",
    "configure",
    "continue_trace",
    "end_open_runs",
    "extract_context",
    "inject_context",
    "instrument",
    "is_instrumented",
    "otel_wrapper",
    "record_evaluation",
    "remote_agent",
    "run_context",
    "run_identity",
    "uninstrument",
    "with_trace_headers",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

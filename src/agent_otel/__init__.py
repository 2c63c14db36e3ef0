"""agent-otel: OpenTelemetry observability middleware for AI agents.

Wrap an agent's event stream (``otel_wrapper()``) and every run becomes an ``invoke_agent``
span with step, chat and tool spans below it, plus the GenAI metrics; the agent never notices.
``instrument()`` does the same for an existing agent of either contract, and
``agent_otel.instrumentor.AgentInstrumentor`` (needs ``agent-otel[instrumentor]``) for
``opentelemetry-instrument``.
"""

from ._configure import configure
from ._content import ContentCapture, ContentKind, Redactor
from ._instrument import instrument, is_instrumented, uninstrument
from ._propagation import extract_context, inject_context
from ._telemetry import Telemetry
from ._version import __version__
from ._wrapper import StreamWrapper, otel_wrapper

__all__ = [
    "ContentCapture",
    "ContentKind",
    "Redactor",
    "StreamWrapper",
    "Telemetry",
    "__version__",
    "configure",
    "extract_context",
    "inject_context",
    "instrument",
    "is_instrumented",
    "otel_wrapper",
    "uninstrument",
]

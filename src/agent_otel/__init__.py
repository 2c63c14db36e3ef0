"""agent-otel: OpenTelemetry observability middleware for AI agents.

Wrap an agent's event stream (``otel_wrapper()``) and every run becomes an ``invoke_agent``
span with step, chat and tool spans below it, plus the GenAI metrics; the agent never notices.
``instrument()`` does the same for an existing agent of either contract, and
``agent_otel.instrumentor.AgentInstrumentor`` (needs ``agent-otel[instrumentor]``) for
``opentelemetry-instrument``.
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .decorating._instrument import instrument, is_instrumented, uninstrument
from .decorating._propagation import extract_context, inject_context
from .recording._content import ContentCapture, ContentKind, Redactor
from .recording._wrapper import StreamWrapper, otel_wrapper

if TYPE_CHECKING:
    from .exporting._configure import configure
    from .exporting._telemetry import Telemetry


def __getattr__(name: str) -> Any:
    """``configure`` and ``Telemetry`` load the OTel SDK: only when an application asks."""
    if name == "configure":
        from .exporting._configure import configure

        return configure
    if name == "Telemetry":
        from .exporting._telemetry import Telemetry

        return Telemetry
    raise AttributeError(f"module 'agent_otel' has no attribute {name!r}")


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

"""agent-otel: OpenTelemetry observability middleware for AI agents.

Wrap an agent's event stream (``otel_wrapper()``) and every run becomes an ``invoke_agent``
span with step, chat and tool spans below it, plus the GenAI metrics; the agent never notices.
"""

from ._configure import configure
from ._content import ContentCapture, ContentKind, Redactor
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
    "otel_wrapper",
]

"""``AgentInstrumentor`` for ``opentelemetry-instrument`` (needs ``agent-otel[instrumentor]``).

The public import path; the implementation lives in :mod:`agent_otel.decorating`.
"""

from .decorating._instrumentor import AgentInstrumentor

__all__ = ["AgentInstrumentor"]

"""Decorating agents: ``instrument()`` drop-ins, the instrumentor entry point, propagation.

Everything here ends in :func:`agent_otel.recording._wrapper.traced`: this layer only decides
which calls of an agent become runs and what each run is told.
"""

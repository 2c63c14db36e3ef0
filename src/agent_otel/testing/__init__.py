"""Testing helpers, for our own tests and for users tracing their agents.

:class:`InMemoryTelemetry` bundles a tracer provider and a meter provider that keep everything in
memory, with deterministic trace/span ids; :class:`FakeClock` makes every timestamp of a run
deterministic; :func:`span_tree` turns finished spans into nested plain dicts for snapshot
tests. The pytest plugin (installed with the package) provides them as fixtures.
"""

from ._clock import FakeClock
from ._telemetry import InMemoryTelemetry, SequentialIdGenerator
from ._tree import span_tree

__all__ = ["FakeClock", "SequentialIdGenerator", "InMemoryTelemetry", "span_tree"]

"""Testing helpers, for our own tests and for users tracing their agents.

:class:`InMemoryTelemetry` bundles a tracer provider and a meter provider that keep everything in
memory, with deterministic trace/span ids; :class:`FakeClock` makes every timestamp of a run
deterministic; :func:`span_tree` turns finished spans into nested plain dicts for snapshot
tests (:func:`span_outline`: the same tree by names alone); :meth:`InMemoryTelemetry.wrapper`
is ``otel_wrapper()`` writing there, and :func:`run_script` streams a list of events through
it. The pytest plugin (installed with the
package) provides the telemetry, the clock and the internal errors agent-otel swallowed as
fixtures.

Names are imported on first use, so that importing the plugin (``agent_otel.testing.plugin``)
loads neither the OTel SDK nor the recording modules.
"""

from typing import TYPE_CHECKING

from agent_otel._lazy import lazy_exports

if TYPE_CHECKING:
    from ._clock import FakeClock
    from ._nesting import nesting_faults
    from ._script import run_script
    from ._telemetry import InMemoryTelemetry, SequentialIdGenerator
    from ._tree import span_outline, span_tree

_LAZY = {
    "FakeClock": "._clock",
    "InMemoryTelemetry": "._telemetry",
    "nesting_faults": "._nesting",
    "SequentialIdGenerator": "._telemetry",
    "run_script": "._script",
    "span_outline": "._tree",
    "span_tree": "._tree",
}


__all__ = [
    "FakeClock",
    "InMemoryTelemetry",
    "SequentialIdGenerator",
    "nesting_faults",
    "run_script",
    "span_outline",
    "span_tree",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

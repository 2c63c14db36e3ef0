"""Where each public callable whose misuse agent-otel tells is documented: one table, so a
message names the page a newcomer finds the callable's arguments on (a method's, its
class's), not one page for all (``docs/options.md`` lists only the run's and ``configure()``'s
options). A test holds every entry to a page that exists and mentions the callable."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

_OPTIONS = "docs/options.md"
_TESTING = "docs/testing.md"
_REMOTE = "docs/mcp-and-agents.md"
_SESSIONS = "docs/production.md#sessions-and-users"
_SAMPLING = "docs/production.md#tail-sampling-of-whole-runs"
_COST = "docs/production.md#cost-per-call-and-per-run"

PAGES: Mapping[str, str] = {
    "otel_wrapper": _OPTIONS,
    "instrument": _OPTIONS,
    "configure": _OPTIONS,
    "ContentCapture": _OPTIONS,
    "TailSamplingPolicy": _OPTIONS,
    "AgentInstrumentor": "docs/instrument.md",
    "uninstrument": "docs/instrument.md",
    "is_instrumented": "docs/instrument.md",
    "Telemetry": "docs/configure.md#the-handle",
    "end_open_runs": "docs/export.md",
    "Scrubber": "docs/scrubbing.md",
    "run_context": "docs/tracing.md#evaluations",
    "record_evaluation": "docs/tracing.md#evaluations",
    "run_identity": _SESSIONS,
    "RunIdentity": _SESSIONS,
    "RunIdentityProcessor": _SESSIONS,
    "SamplerStats": _SAMPLING,
    "TailSampler": _SAMPLING,
    "ModelPrice": _COST,
    "PriceTable": _COST,
    "inject_context": _REMOTE,
    "extract_context": _REMOTE,
    "continue_trace": _REMOTE,
    "ContinueTraceMiddleware": _REMOTE,
    "ContinueTraceWSGIMiddleware": _REMOTE,
    "with_trace_headers": _REMOTE,
    "remote_agent": _REMOTE,
    "RemoteAgentCall": _REMOTE,
    "InMemoryTelemetry": _TESTING,
    "telemetry.wrapper": _TESTING,
    "FakeClock": _TESTING,
    "span_tree": _TESTING,
    "nesting_faults": _TESTING,
    "span_outline": _TESTING,
}
"""By the name a message gives the callable (``InMemoryTelemetry.span``: its class's entry)."""


def page_of(name: str) -> str:
    """The page documenting ``name`` (a function, a class, or ``Class.method``), or ``""``."""
    return PAGES.get(name) or PAGES.get(name.partition(".")[0], "")


def see(name: str) -> str:
    """`` (the options: <page>)``, where ``name``'s arguments are documented, or nothing."""
    page = page_of(name)
    return f" (the options: {page})" if page else ""


@contextmanager
def documented(caller: str) -> Iterator[None]:
    """A value ``caller`` cannot take, told (``TypeError`` or ``ValueError``, naming
    ``caller(option=...)``) with the page documenting its options, as a misspelt option's name
    is: one place for every check of its values, so none is left without the page."""
    try:
        yield
    except (TypeError, ValueError) as error:
        told = error.args[0] if len(error.args) == 1 else None
        if type(told) is str and told.startswith(f"{caller}(") and "docs/" not in told:
            error.args = (f"{told}{see(caller)}",)
        raise

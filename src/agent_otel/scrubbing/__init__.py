"""Credentials never leave the process: every string agent-otel exports is scrubbed first.

On by default, with content capture off and on. See ``docs/scrubbing.md`` for the detectors,
the options and the known limits.
"""

from ._scrubber import (
    DETECTORS,
    MARGIN,
    Scrub,
    Scrubber,
    marker,
    resolve_scrubber,
    set_default_scrub,
)

__all__ = [
    "DETECTORS",
    "MARGIN",
    "Scrub",
    "Scrubber",
    "marker",
    "resolve_scrubber",
    "set_default_scrub",
]

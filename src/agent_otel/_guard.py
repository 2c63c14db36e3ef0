"""The one boundary where instrumentation errors stop.

Anything that goes wrong inside agent-otel (a bug of ours, a span processor or exporter that
raises, a value the SDK rejects) is caught here, logged once per call site at WARNING with its
traceback, then at DEBUG, and never reaches the agent or the consumer.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span

logger = logging.getLogger("agent_otel")

_reported: set[str] = set()
_told: set[tuple[str, str]] = set()
_told_lock = threading.Lock()


def warn_once(setting: str, value: str, message: str, *args: object) -> None:
    """Log a setting's problem once per (setting, value) for the process: told, not spammed."""
    with _told_lock:
        if (setting, value) in _told:
            return
        _told.add((setting, value))
    logger.warning(message, *args)


def report(site: str) -> None:
    """Log the exception being handled: once loudly per ``site``, then quietly."""
    if site in _reported:
        logger.debug("agent-otel internal error in %s (repeat)", site, exc_info=True)
        return
    _reported.add(site)
    logger.warning(
        "agent-otel internal error in %s; tracing continues, the agent is unaffected "
        "(please report it to agent-otel with this traceback)",
        site,
        exc_info=True,
    )


class guarded:
    """Run the block; an exception in it is reported (once per ``site``) and swallowed.

    A class, not ``@contextmanager``: it sits on every call's path, and a generator-based
    context manager costs several times more.
    """

    __slots__ = ("site",)

    def __init__(self, site: str) -> None:
        self.site = site

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: object, tb: object) -> bool:
        if kind is not None and issubclass(kind, Exception):
            report(self.site)
            return True
        return False


class ending:
    """Describe ``span`` in the block, then end it at ``end_time`` whatever the block raised.

    The one shape every span of a run ends through, so that a failure while writing one
    span's last attributes (an exception's text, a value, a hook) never costs its ending.
    """

    __slots__ = ("end_time", "site", "span")

    def __init__(self, span: Span, end_time: int | None, site: str) -> None:
        self.span, self.end_time, self.site = span, end_time, site

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: object, tb: object) -> bool:
        swallowed = False
        if kind is not None and issubclass(kind, Exception):
            report(self.site)
            swallowed = True
        try:  # a span processor raising in on_end stops nothing else
            self.span.end(end_time=self.end_time)
        except Exception:
            report("span end")
        return swallowed

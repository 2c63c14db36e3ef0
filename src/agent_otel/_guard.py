"""The one boundary where instrumentation errors stop.

Anything that goes wrong inside agent-otel (a bug of ours, a span processor or exporter that
raises, a value the SDK rejects) is caught here, logged once per call site at WARNING with its
traceback, then at DEBUG, and never reaches the agent or the consumer.

Every line agent-otel logs goes through :data:`logger`, whose filter scrubs it
(:class:`ScrubbedRecords`): a warning quoting an endpoint with ``user:token@``, or a
traceback whose exception text holds a key, reaches no handler with the credential in it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span


class ScrubbedRecords(logging.Filter):
    """Scrubs a log record before any handler sees it (console, file, an OTel log exporter):
    its message as formatted, and its traceback. Credentials are replaced as in spans (the
    default scrubber: :mod:`agent_otel.scrubbing`); a record with none is left as it was.

    A message that changes is stored formatted (``args`` emptied); a traceback that changes is
    stored as its scrubbed text (``exc_text``, which formatters print) and ``exc_info`` cleared,
    so no handler formats the exception again from the object. Never raises: a record that
    cannot be read is let through as it is (the handler reports a broken format itself).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            # imported on the first record: importing this module stays cheap
            from agent_otel.scrubbing._scrubber import DEFAULT as scrubber

            message = record.getMessage()
            clean = scrubber.text(message)
            if clean != message:
                record.msg, record.args = clean, ()
            if record.exc_info and record.exc_info[0] is not None:
                text = record.exc_text or logging.Formatter().formatException(record.exc_info)
                clean = scrubber.text(text)
                if clean != text:
                    record.exc_info, record.exc_text = None, clean
            elif record.exc_text:
                record.exc_text = scrubber.text(record.exc_text)
            if record.stack_info:
                record.stack_info = scrubber.text(record.stack_info)
        except Exception:  # a message that cannot be formatted: the handler says so
            pass
        return True


def scrub_logs(name: str) -> None:
    """Scrub every record of the logger ``name`` (idempotent): agent-otel's own, and the SDK
    exporters' that ``configure()`` builds (their failures quote endpoints and response
    bodies)."""
    target = logging.getLogger(name)
    if not any(isinstance(f, ScrubbedRecords) for f in target.filters):
        target.addFilter(ScrubbedRecords())


logger = logging.getLogger("agent_otel")
"""agent-otel's one logger; every module logs through it, scrubbed (:class:`ScrubbedRecords`)."""
scrub_logs("agent_otel")

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

"""The one boundary where instrumentation errors stop.

Anything that goes wrong inside agent-otel (a bug of ours, a span processor or exporter that
raises, a value the SDK rejects) is caught here, logged once per call site at WARNING with its
traceback, then at DEBUG, and never reaches the agent or the consumer.

Every line agent-otel logs goes through :data:`logger`, whose filter scrubs it
(:class:`ScrubbedRecords`): a warning quoting an endpoint with ``user:token@``, or a
traceback whose exception text holds a key, reaches no handler with the credential in it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from agent_otel._fork import ChildLock

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
UNREADABLE = "unreadable_event"
"""The anomaly an agent's value that raised when read is counted as."""
_told: set[tuple[str, str]] = set()
_told_lock = ChildLock()
_TOLD_AT_MOST = 512
"""How many different problems are told in a process: a value the agent drives (the name of a
class it makes per event) must not grow the memory of what was told without bound."""


def warn_once(setting: str, value: str, message: str, *args: object) -> None:
    """Log a setting's problem once per (setting, value) for the process: told, not spammed.
    Past :data:`_TOLD_AT_MOST` different problems, one more line says the rest go untold."""
    with _told_lock:
        if (setting, value) in _told or len(_told) >= _TOLD_AT_MOST:
            return
        _told.add((setting, value))
        last = len(_told) == _TOLD_AT_MOST
    logger.warning(message, *args)
    if last:
        logger.warning(
            "agent-otel: %d different problems were told in this process; further ones go untold",
            _TOLD_AT_MOST,
        )


def told_already(setting: str, value: str) -> None:
    """Count (``setting``, ``value``) told: another warning said what it would say."""
    with _told_lock:
        if len(_told) < _TOLD_AT_MOST:
            _told.add((setting, value))


# Where agent-otel reads the agent's values: a module's every function (None) or the named
# ones. Registered by the reading modules themselves (:func:`reads_values`).
_readers: dict[object, frozenset[str] | None] = {}
_OURS = ("agent_otel.", "opentelemetry")


def reads_values(module: str, functions: frozenset[str] | None = None) -> None:
    """Register ``module`` (or only its ``functions``) as reading the agent's values: the
    events' fields, and the content capture copies (messages, tool arguments and results,
    the inputs of an ``Agent``). An exception their reads provoke in the agent's own code is
    the agent's (:func:`agents_value`), not an internal error."""
    _readers[module] = functions


def _foreign(module: object) -> bool:
    """Whether a frame of ``module`` runs neither our code, OpenTelemetry's nor the standard
    library's: the agent's (its classes' properties, ``__getattr__``, ``__str__``, iterators,
    and the libraries they are made with, such as pydantic)."""
    if type(module) is not str:
        return True
    if module.startswith(_OURS):
        return False
    return module.partition(".")[0] not in sys.stdlib_module_names


def agents_value() -> bool:
    """Whether the exception being handled came from the agent's value, not from us.

    The one rule: one of our reads of an agent's value (a frame of a module registered with
    :func:`reads_values`) called out of our code and OpenTelemetry's, and a frame at or below
    that call runs the agent's code (:func:`_foreign`; the standard library between them, as
    ``Mapping.get`` calling a ``__getitem__``, does not decide). An exception raised by the
    standard library our reads call on their own (``json``) stays ours; so does one raised by a
    hook the user configured (a redaction hook, a span processor): no read calls them.
    """
    tb = sys.exc_info()[2]
    while tb is not None and tb.tb_next is not None:
        frame = tb.tb_frame
        functions = _readers.get(frame.f_globals.get("__name__"), _NONE)
        if functions is not _NONE and (functions is None or frame.f_code.co_name in functions):
            callee = tb.tb_next
            module = callee.tb_frame.f_globals.get("__name__")
            if not (type(module) is str and module.startswith(_OURS)):
                below: TracebackType | None = callee
                while below is not None:
                    if _foreign(below.tb_frame.f_globals.get("__name__")):
                        return True
                    below = below.tb_next
        tb = tb.tb_next
    return False


_NONE: frozenset[str] = frozenset({"\0"})  # (no entry: not a reader)


def report(site: str, count: Callable[[str], None] | None = None) -> None:
    """Log the exception being handled: once loudly per ``site``, then quietly.

    An exception the agent's own value raised when one of our reads ran its code
    (:func:`agents_value`) is no internal error: it is counted on the run through ``count``
    (``unreadable_event``) and logged at DEBUG only.
    """
    if agents_value():
        logger.debug("the agent's value raised when read in %s", site, exc_info=True)
        if count is not None:
            with contextlib.suppress(Exception):  # (the count is all this costs)
                count(UNREADABLE)
        return
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
    count: Callable[[str], None] | None = None  # (:class:`counted`'s: the agent's values)

    def __init__(self, site: str) -> None:
        self.site = site

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: object, tb: object) -> bool:
        if kind is not None and issubclass(kind, Exception):
            report(self.site, self.count)
            return True
        return False


class counted(guarded):
    """:class:`guarded` for a block that reads the agent's values: what their own code raises
    is counted on the run through ``count`` (:func:`report`)."""

    __slots__ = ("count",)

    def __init__(self, site: str, count: Callable[[str], None]) -> None:
        self.site = site
        self.count = count


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

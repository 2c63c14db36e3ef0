"""``Telemetry``: the handle ``configure()`` returns, with bounded flush and shutdown.

Flush and shutdown run in a helper thread joined with a timeout, because an exporter
talking to a dead collector can otherwise hold them (the SDK's batch processor ignores the
flush timeout). If the bound passes, the OTLP exporters are shut down, which aborts their
retry back-off, and the call returns. Nothing here ever raises into the application.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from agent_otel._fork import in_forked_child
from agent_otel._guard import logger as _log
from agent_otel._plain import a_kind, has_methods, int_of, shown
from agent_otel.exporting._console import ConsoleTreeExporter
from agent_otel.exporting._env import MOST_MILLIS
from agent_otel.exporting._exporters import (
    DEFAULT_SHUTDOWN_TIMEOUT_MILLIS,
    SHUTDOWN_THREAD,
    shut_down,
)
from agent_otel.exporting._failures import why_exports_fail
from agent_otel.exporting._loss import SpanLoss
from agent_otel.exporting._process import ProcessHooks, forget_parents_metrics, interrupts_held
from agent_otel.recording._hints import PROVIDERS, keyworded
from agent_otel.recording._open import end_runs, manage, told_elsewhere, unmanage


def _check(
    providers: dict[str, object], shutdown_timeout_millis: object
) -> int:  # the timeout, as the plain int it is
    """``Telemetry()``'s arguments, checked before anything is registered: what is not an SDK
    provider (``None``, a tracer, a class, the API's global placeholder, the providers
    swapped) failed only at flush, shutdown or the process's exit, as a traceback from a
    helper thread; a timeout that is no int, in ``atexit``."""
    for name, provider in providers.items():
        if provider is None and name == "logger_provider":
            continue  # optional: one that exports nowhere is made
        method = PROVIDERS[name]
        if not has_methods(provider, (method, "shutdown", "force_flush")):
            wanted = "".join(part.title() for part in name.split("_"))  # TracerProvider
            fix = (
                f"pass an instance, as {name}={wanted}()"
                if issubclass(type(provider), type)
                else f"pass the provider you built (what you call {method}() on)"
            )
            raise TypeError(
                f"Telemetry({name}=...) takes an SDK {wanted} (with {method}(), shutdown() and "
                f"force_flush()), not {a_kind(provider)}: {fix}, or let configure() build them"
            )
    millis = int_of(shutdown_timeout_millis)
    if millis is None or not 0 <= millis <= MOST_MILLIS:
        raise TypeError(
            "Telemetry(shutdown_timeout_millis=...) takes an int number of milliseconds from 0 "
            f"to {MOST_MILLIS:_}, not {shown(shutdown_timeout_millis)}"
        )
    return millis


@keyworded
class Telemetry:
    """The providers ``configure()`` built, and how to flush and stop them.

    Built from an application's own providers (``Telemetry(tracer_provider, meter_provider)``),
    it gives them what ``configure()``'s get: SIGTERM and SIGHUP flush before the process
    dies, workers flush at their exit, open runs are ended at shutdown, bounded by the same
    default ``shutdown_timeout_millis`` (1 s) as ``configure()``'s.

    Attributes: ``tracer_provider``, ``meter_provider`` and ``logger_provider`` (pass them
    explicitly when the globals belong to someone else), ``console`` (the terminal tree
    exporter, or None), ``prometheus_port`` (the bound scrape port, or None), ``spans_lost``
    (by cause), ``runs_ended_at_shutdown`` (runs still open when shutdown began, ended with
    ``agent_otel.end_reason=shutdown`` or by a tool body's exit), and whether the globals were set
    (``global_tracer_provider`` / ``_meter_`` / ``_logger_provider``). SIGTERM, fork and
    ``multiprocessing`` workers are handled as docs/export.md describes (``_process``).
    """

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        *,
        console: ConsoleTreeExporter | None = None,
        loss: SpanLoss | None = None,
        exporters: Sequence[Any] = (),
        prometheus_server: Any = None,
        shutdown_timeout_millis: int = DEFAULT_SHUTDOWN_TIMEOUT_MILLIS,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        shutdown_timeout_millis = _check(
            {
                "tracer_provider": tracer_provider,
                "meter_provider": meter_provider,
                "logger_provider": logger_provider,
            },
            shutdown_timeout_millis,
        )
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider or LoggerProvider(shutdown_on_exit=False)
        self.console = console
        self._loss = loss
        self.global_tracer_provider = False
        self.global_meter_provider = False
        self.global_logger_provider = False
        self._exporters = tuple(exporters)
        self._prometheus_server = prometheus_server
        self._shutdown_timeout_millis = shutdown_timeout_millis
        self._lock = threading.Lock()
        self._is_shutdown = False
        self._stopped = threading.Event()
        self.runs_ended_at_shutdown = 0
        atexit.register(self._at_exit)
        manage(self._ours, self._end_open_runs)  # its runs: ended by it, and counted
        in_forked_child(self._after_fork_in_child)
        self._hooks = ProcessHooks(self, shutdown_timeout_millis / 1000)  # signals, fork, workers
        if loss is not None:  # each span queued: a default action put back around us is retaken
            loss.on_queued = self._hooks.span_queued

    @property
    def prometheus_port(self) -> int | None:
        """The port the Prometheus endpoint listens on, or None without one."""
        server = self._prometheus_server
        return int(server.server_port) if server is not None else None

    @property
    def spans_lost(self) -> dict[str, int]:
        """Spans the OTLP pipeline lost so far by cause (queue_full, export_failed, shutdown);
        final once ``shutdown()`` returned. Empty without OTLP trace export."""
        return self._loss.lost() if self._loss is not None else {}

    @property
    def is_shutdown(self) -> bool:
        return self._is_shutdown

    def force_flush(self, timeout_millis: int = 10_000) -> bool:
        """Export everything pending; False if that did not finish within the timeout."""
        if self._is_shutdown:
            return False
        outcome: list[bool] = []

        def flush() -> None:
            traces = self.tracer_provider.force_flush(timeout_millis)
            logs = self.logger_provider.force_flush(timeout_millis)
            outcome.append(traces and logs and self.meter_provider.force_flush(timeout_millis))

        done = _bounded(flush, timeout_millis / 1000, "agent-otel-flush")
        return done and all(outcome)

    def shutdown(self, timeout_millis: int | None = None) -> bool:
        """Flush and stop exporters, the terminal view and the Prometheus endpoint.

        Idempotent; returns within about ``timeout_millis`` (default: the value given to
        ``configure``) even when a collector is unreachable. False if it had to give up on
        pending data.
        """
        budget = (
            timeout_millis if timeout_millis is not None else self._shutdown_timeout_millis
        ) / 1000
        with self._lock:
            first = not self._is_shutdown
            self._is_shutdown = True
        with interrupts_held():  # a Ctrl-C meanwhile is raised once this is done, not inside
            if not first:  # another thread (a SIGTERM, atexit) is shutting down: wait for it
                return self._stopped.wait(budget)
            try:
                return self._shutdown(budget)
            finally:
                self._stopped.set()
                self._hooks.uninstall()  # a signal meanwhile waited for all of the above
                # Only now: an interpreter exit meanwhile (a server re-raising SIGTERM, then
                # returning, while the signal's shutdown runs in another thread) waits for it
                # in the exit hook, instead of killing that thread mid-export.
                atexit.unregister(self._at_exit)

    def _shutdown(self, budget: float) -> bool:
        unmanage(self._ours)
        if self._loss is not None:  # a run ended after this is told there, counted
            told_elsewhere(self.tracer_provider)
        deadline = time.monotonic() + budget
        self._end_open_runs()

        def stop() -> None:
            self.tracer_provider.shutdown()
            self._settle()  # before the meter provider's last export, which then carries it
            self.logger_provider.shutdown()
            remaining = max(deadline - time.monotonic(), 0.0)
            self.meter_provider.shutdown(timeout_millis=remaining * 1000)

        done = _bounded(stop, budget, SHUTDOWN_THREAD)
        if not done:
            _log.warning(
                "agent-otel: the exporters did not finish within %.1f s (%s); pending data "
                "dropped. Pass configure(shutdown_timeout_millis=...) to wait longer",
                budget,
                why_exports_fail(),
            )
            for exporter in self._exporters:  # aborts retry back-off in the stuck thread
                if not shut_down(exporter):  # (its provider's shutdown may have done it)
                    _quietly(exporter.shutdown)
            self._settle()  # what is still queued or in flight now is lost
        self._tell_loss()
        if self._prometheus_server is not None:
            _quietly(self._prometheus_server.shutdown)
            _quietly(self._prometheus_server.server_close)
        return done

    def spans_unsent(self) -> int:
        """Spans handed to the OTLP pipeline that were neither exported nor counted lost yet
        (queued or in flight); 0 without OTLP trace export."""
        return self._loss.unsent() if self._loss is not None else 0

    def owns(self, span: object) -> bool:
        """Whether an agent span was started on our tracer provider."""
        return self._ours(span)

    def _ours(self, span: object) -> bool:
        """Whether an agent span was started on our tracer provider (its runs are ours)."""
        processor = getattr(self.tracer_provider, "_active_span_processor", None)
        return processor is not None and getattr(span, "_span_processor", None) is processor

    def _end_open_runs(self) -> None:
        """End the runs still open on our tracer provider (``agent_otel.end_reason=shutdown``),
        so their spans are exported rather than lost, told as every shutdown tells them."""
        self.runs_ended_at_shutdown += end_runs(self._ours, "at shutdown")

    def _after_fork_in_child(self) -> None:
        """In a forked child: fresh locks, and only the child's own spans and metrics counted.
        The Prometheus endpoint stays the parent's: no thread serves it here, and stopping it
        at the child's exit waited for that thread's loop, forever. The child's copy of its
        socket is closed (a child outliving the parent would hold the port)."""
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        server, self._prometheus_server = self._prometheus_server, None
        if server is not None:
            _quietly(server.socket.close)
        if self._loss is not None:
            self._loss.reset_in_child()
        forget_parents_metrics(self.meter_provider)

    def _settle(self) -> None:
        if self._loss is not None:
            self._loss.settle()

    def _tell_loss(self) -> None:
        """The shutdown summary's loss line, in the log and the terminal view."""
        line = self._loss.summary() if self._loss is not None else None
        if line is None:
            return
        _log.warning("%s", line)
        if self.console is not None:
            self.console.note(line)

    def _at_exit(self) -> None:
        # An application's signal handler, run once the shutdown was done (a signal that came
        # during it), may exit: the interpreter is exiting already, with its status.
        with contextlib.suppress(SystemExit, KeyboardInterrupt):
            self.shutdown()  # or wait for the one under way
        self._hooks.at_exit()


def _bounded(fn: Callable[[], None], timeout_s: float, name: str) -> bool:
    """Run ``fn`` in a daemon thread; True if it finished within ``timeout_s``.

    Falls back to running inline where no thread can start (interpreter exit on 3.12+).
    A failure within the bound is told in one line (its traceback at debug level); one after
    it (the step given up on, failing once its deadline passed) was told as the give-up.
    """
    finished = threading.Event()
    given_up = threading.Event()

    def run() -> None:
        try:
            fn()
        except Exception as exc:
            if given_up.is_set():
                _log.debug("agent-otel: %s failed after it was given up", name, exc_info=True)
            else:
                _log.warning("agent-otel: %s failed: %s", name, exc)
                _log.debug("agent-otel: %s failed", name, exc_info=True)
        finally:
            finished.set()

    try:
        threading.Thread(target=run, name=name, daemon=True).start()
    except RuntimeError:
        run()
        return True
    done = finished.wait(max(timeout_s, 0.0))
    if not done:
        given_up.set()
    return done


def _quietly(fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception:
        _log.debug("agent-otel: cleanup step failed", exc_info=True)

"""Process life for the telemetry ``configure()`` built: SIGTERM, SIGHUP, fork, ``multiprocessing``.

* **SIGTERM and SIGHUP** (a process manager's restart; a closed terminal or SSH session): their
  default action ends the process without running ``atexit``, which is where everything else
  flushes. Unless a signal is ignored or handled outside Python, a handler is installed that
  hands the work to a waiting thread (the handler itself takes no lock the interrupted code
  could hold: it releases one). Without a handler of the application's, the thread shuts
  telemetry down (bounded by ``shutdown_timeout_millis``) and the signal is delivered again
  with its default action, so the process ends as it would have: killed by that signal.
  With the application's handler installed before ``configure()``, the thread flushes first
  (the handler waits for it, bounded the same way), then the application's handler runs and
  decides what follows: an exit it makes (``sys.exit``, ``os._exit``, its own default action)
  loses nothing that had ended. A signal that arrives while telemetry is shutting down (a
  ``multiprocessing.Pool`` terminating a worker that is already leaving, a restart during the
  exit flush) waits for that shutdown, then takes its default action. Before a default action
  ends the process, every ``configure()`` telemetry still open in it is shut down, not only
  the one whose handler was called. ``Telemetry.shutdown()`` puts the previous handlers back
  once it is done.
* **fork**: the child starts with its own counts and fresh locks, so a lock held by the
  parent's export thread at the fork cannot hang the child (the SDK's processors already drop
  the parent's queue in the child, which the parent still exports). What the parent had
  gathered in memory stays the parent's: the meter provider's aggregations
  (:func:`forget_parents_metrics`), the tail sampler's held runs, the terminal view's pending
  trees and token totals; reported again by the child, they were counted twice.
* **multiprocessing**: a worker started by fork or by the fork server leaves through
  ``os._exit``, which skips ``atexit``; ``multiprocessing``'s own exit finalizers still run, so
  one shuts the worker's telemetry down: registered at the fork for a ``configure()`` made
  before it, at ``configure()`` for one made in the worker (its target, a ``Pool`` or
  ``ProcessPoolExecutor`` initializer). No global function is patched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_otel._fork import in_forked_child
from agent_otel._guard import logger as _log

if TYPE_CHECKING:
    from agent_otel.exporting._telemetry import Telemetry


FATAL_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals whose default action ends the process and skips every exit hook."""

_LIVE: weakref.WeakSet[Telemetry] = weakref.WeakSet()  # not shut down yet


class ProcessHooks:
    """The hooks one ``Telemetry`` installs; they hold it weakly."""

    def __init__(self, telemetry: Telemetry, timeout_s: float) -> None:
        self._telemetry = weakref.ref(telemetry)
        self._timeout_s = timeout_s
        self._previous: dict[int, Any] = {}  # signal -> the handler ours replaced
        self._signum = 0  # the signal that ends the process once telemetry is shut down
        self._flushed: threading.Lock | None = None  # released once a requested flush is done
        self._waiting = False
        self._wake = threading.Lock()
        self._start_waiter()
        self._install_handlers()
        _LIVE.add(telemetry)
        in_forked_child(self._after_fork_in_child)
        try:
            import multiprocessing
            from multiprocessing import util

            util.register_after_fork(self, ProcessHooks.in_worker)
            if multiprocessing.parent_process() is not None:
                self.in_worker()  # configure() inside a worker already started: no fork to come
        except Exception:  # no multiprocessing on this platform
            _log.debug("agent-otel: no multiprocessing hook", exc_info=True)

    # --- signals ---------------------------------------------------------------------------
    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            # Only the main thread may install handlers: say what that costs, once per call.
            _log.warning(
                "agent-otel: configure() ran outside the main thread, so SIGTERM and SIGHUP "
                "end the process without flushing telemetry. Call configure() from the main "
                "thread, or call shutdown() on what it returns before the process stops."
            )
            return
        for signum in FATAL_SIGNALS:
            try:
                previous = signal.getsignal(signum)
                if previous is signal.SIG_IGN or previous is None:
                    continue  # ignored, or handled outside Python: not ours to change
                signal.signal(signum, self._on_signal)
            except (ValueError, OSError):
                continue
            self._previous[signum] = previous

    def _on_signal(self, signum: int, frame: Any) -> None:
        """Runs in the main thread between two bytecodes: no lock taken, no thread started."""
        previous = self._previous.get(signum, signal.SIG_DFL)
        if not self._waiting:  # shut down already (still chained by a later handler)
            _deliver(previous, signum, frame)
            return
        if callable(previous):  # the application's handler decides: flush first, bounded
            flushed = threading.Lock()
            flushed.acquire()
            self._flushed = flushed
            self._wake_waiter()
            flushed.acquire(timeout=self._timeout_s)
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)  # a second one kills at once
        if not self._signum:
            self._signum = signum
        self._wake_waiter()

    def _wake_waiter(self) -> None:
        with contextlib.suppress(RuntimeError):  # already woken
            self._wake.release()  # never blocks

    def _start_waiter(self) -> None:
        self._waiting = True
        self._signum = 0
        self._flushed = None
        self._wake = threading.Lock()
        self._wake.acquire()
        waiter = threading.Thread(
            target=self._wait, args=(self._wake,), name="agent-otel-signal", daemon=True
        )
        waiter.start()

    def _wait(self, wake: threading.Lock) -> None:
        while True:
            wake.acquire()
            if wake is not self._wake:
                return  # a fork replaced this waiter
            flushed, self._flushed = self._flushed, None
            if flushed is not None:  # an application's handler runs once this is done
                try:
                    telemetry = self._telemetry()
                    if telemetry is not None:
                        telemetry.force_flush(int(self._timeout_s * 1000))
                finally:
                    with contextlib.suppress(RuntimeError):
                        flushed.release()
            if self._signum:
                break
            if not self._waiting:
                return  # released by uninstall
        try:
            telemetry = self._telemetry()
            if telemetry is not None:
                telemetry.shutdown()  # ends in uninstall(), which delivers the signal
        finally:
            _die(self._signum)  # if that did not (shut down elsewhere, or failed)

    def uninstall(self) -> None:
        """Telemetry is shut down: put the previous handlers back (where ours is still the one
        installed); a fatal signal that arrived meanwhile now takes its default action."""
        telemetry = self._telemetry()
        if telemetry is not None:
            _LIVE.discard(telemetry)
        if not self._signum:  # let the waiting thread end
            self._waiting = False
            self._wake_waiter()
        if threading.current_thread() is threading.main_thread():
            for signum, previous in list(self._previous.items()):
                try:
                    if signal.getsignal(signum) == self._on_signal:
                        signal.signal(signum, previous)
                        del self._previous[signum]
                except (ValueError, OSError):
                    pass
        if self._signum:
            _die(self._signum)

    # --- fork ------------------------------------------------------------------------------
    def _after_fork_in_child(self) -> None:
        telemetry = self._telemetry()
        if telemetry is None:
            return
        self._waiting = False  # the parent's waiter thread does not exist here
        if not telemetry.is_shutdown:
            self._start_waiter()

    def in_worker(self) -> None:
        """In a ``multiprocessing`` child started by fork: shut down at its exit."""
        from multiprocessing import util

        telemetry = self._telemetry()
        if telemetry is not None and not telemetry.is_shutdown:
            util.Finalize(None, _shutdown_ref(self._telemetry), exitpriority=-100)


def forget_parents_metrics(meter_provider: object) -> None:
    """In a forked child: empty aggregations, with locks nobody holds.

    The SDK's meter provider keeps what the parent measured (its token counts, its durations,
    its pipeline's counts) and its reader in the child reported it again as the child's own:
    every total summed over processes counted the parent's runs twice. Its internals are read
    defensively: on an SDK laid out otherwise, nothing is changed.
    """
    consumer = getattr(meter_provider, "_measurement_consumer", None)
    storages = getattr(consumer, "_reader_storages", None)
    if consumer is None or not isinstance(storages, Mapping):
        return
    for storage in storages.values():
        if isinstance(getattr(storage, "_instrument_view_instrument_matches", None), dict):
            storage.__dict__.update(_instrument_view_instrument_matches={}, _lock=threading.RLock())
    if hasattr(consumer, "_lock"):
        consumer.__dict__["_lock"] = threading.Lock()


def _die(signum: int) -> None:
    """Shut down every telemetry still open here, then take ``signum``'s default action."""
    for telemetry in list(_LIVE):
        try:
            telemetry.shutdown()
        except Exception:
            _log.debug("agent-otel: shutdown before the signal failed", exc_info=True)
    with contextlib.suppress(ValueError, OSError):  # outside the main thread: set already
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _deliver(previous: Any, signum: int, frame: Any) -> None:
    """What would have happened without our handler."""
    if callable(previous):
        previous(signum, frame)
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _shutdown_ref(ref: weakref.ref[Telemetry]) -> Any:
    def shutdown() -> None:
        telemetry = ref()
        if telemetry is not None:
            telemetry.shutdown()

    return shutdown

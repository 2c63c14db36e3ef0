"""Process life for the telemetry ``configure()`` built: SIGTERM, fork, ``multiprocessing``.

* **SIGTERM** (what process managers send on every restart): only ``atexit`` flushed, and
  SIGTERM's default action skips it. Unless the signal is ignored or handled outside Python,
  a handler is installed that hands the work to a waiting thread (the handler itself takes no
  lock the interrupted code could hold: it releases one). If the application had installed a
  handler, the thread flushes and the application's handler runs at once, deciding what
  happens next (its exit then shuts telemetry down through ``atexit``). Otherwise the thread
  shuts telemetry down (bounded by ``shutdown_timeout_millis``) and the signal is delivered
  again with its default action, so the process ends as it would have: killed by SIGTERM.
  ``Telemetry.shutdown()`` puts the previous handler back.
* **fork**: the child starts with its own counts (the SDK's processors already drop the
  parent's queue in the child, which the parent still exports) and fresh locks, so a lock held
  by the parent's export thread at the fork cannot hang the child.
* **multiprocessing**: a worker started by fork leaves through ``os._exit``, which skips
  ``atexit``; ``multiprocessing``'s own exit finalizers still run, so one shuts the worker's
  telemetry down. No global function is patched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_otel.exporting._telemetry import Telemetry

_log = logging.getLogger("agent_otel")


class ProcessHooks:
    """The hooks one ``Telemetry`` installs; they hold it weakly."""

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = weakref.ref(telemetry)
        self._previous: Any = None
        self._installed = False
        self._signum = 0
        self._waiting = False
        self._wake = threading.Lock()
        self._start_waiter()
        self._install_sigterm()
        hooks = weakref.ref(self)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=lambda: _call(hooks, "_after_fork_in_child"))
        try:
            from multiprocessing import util

            util.register_after_fork(self, ProcessHooks.in_worker)
        except Exception:  # no multiprocessing on this platform
            _log.debug("agent-otel: no multiprocessing hook", exc_info=True)

    # --- SIGTERM ---------------------------------------------------------------------------
    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may install handlers
        try:
            previous = signal.getsignal(signal.SIGTERM)
            if previous is signal.SIG_IGN or previous is None:
                return  # ignored, or handled outside Python: not ours to change
            signal.signal(signal.SIGTERM, self._on_signal)
        except (ValueError, OSError):
            return
        self._previous, self._installed = previous, True

    def _on_signal(self, signum: int, frame: Any) -> None:
        """Runs in the main thread between two bytecodes: no lock taken, no thread started."""
        previous = self._previous
        if not self._waiting:  # shut down already (still chained by a later handler)
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
            return
        if not callable(previous):  # default action: die of the signal once flushed
            signal.signal(signum, signal.SIG_DFL)  # a second SIGTERM kills at once
        self._signum = signum
        with contextlib.suppress(RuntimeError):  # already woken
            self._wake.release()  # never blocks
        if callable(previous):
            previous(signum, frame)

    def _start_waiter(self) -> None:
        self._waiting = True
        self._wake = threading.Lock()
        self._wake.acquire()
        waiter = threading.Thread(
            target=self._wait, args=(self._wake,), name="agent-otel-signal", daemon=True
        )
        waiter.start()

    def _wait(self, wake: threading.Lock) -> None:
        wake.acquire()
        while callable(self._previous) and self._waiting and wake is self._wake:
            telemetry = self._telemetry()  # the application decides what follows: flush only
            if telemetry is not None and self._signum:
                telemetry.force_flush()
            wake.acquire()  # the next SIGTERM
        if wake is not self._wake or not self._signum or not self._waiting:
            return  # released by uninstall (or a fork replaced this waiter)
        telemetry = self._telemetry()
        try:
            if telemetry is not None:
                telemetry.shutdown()
        finally:
            os.kill(os.getpid(), self._signum)  # the default action, now that data is out

    def uninstall(self) -> None:
        """Put the previous SIGTERM handler back, if ours is still the one installed."""
        if not self._signum:  # let the waiting thread end
            self._waiting = False
            with contextlib.suppress(RuntimeError):
                self._wake.release()
        if not self._installed or threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._on_signal:
                signal.signal(signal.SIGTERM, self._previous)
                self._installed = False
        except (ValueError, OSError):
            pass

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


def _shutdown_ref(ref: weakref.ref[Telemetry]) -> Any:
    def shutdown() -> None:
        telemetry = ref()
        if telemetry is not None:
            telemetry.shutdown()

    return shutdown


def _call(ref: weakref.ref[ProcessHooks], name: str) -> None:
    hooks = ref()
    if hooks is not None:
        try:
            getattr(hooks, name)()
        except Exception:
            _log.debug("agent-otel: %s failed", name, exc_info=True)

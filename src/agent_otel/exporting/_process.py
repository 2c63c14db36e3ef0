"""Process life for the telemetry ``configure()`` built: SIGTERM, SIGHUP, fork, ``multiprocessing``.

* **SIGTERM and SIGHUP** (a process manager's restart; a closed terminal or SSH session): their
  default action ends the process without running ``atexit``, which is where everything else
  flushes. Unless a signal is ignored or handled outside Python (on Linux, also by a handler
  installed there after Python started: :func:`_caught_outside`), a handler is installed that
  hands the work to a waiting thread (the handler itself takes no lock the interrupted code
  could hold: it releases one). Without a handler of the application's, the thread shuts
  telemetry down (bounded by ``shutdown_timeout_millis``) and the signal is delivered again
  with its default action, so the process ends as it would have: killed by that signal.
  The same signal again meanwhile (a control group's and its manager's) waits for that
  shutdown; an interpreter exit meanwhile waits for it in the exit hook, then dies of it.
  With the application's handler installed before ``configure()``, the thread flushes first
  (the handler waits for it, bounded the same way; what it could not export is told), then
  the application's handler runs and decides what follows: an exit it makes (``sys.exit``,
  ``os._exit``, its own default action) loses nothing that had ended. If a SIGTERM handler
  returns (a server draining its requests, which then raises the signal again into the
  default action), each run that ends from then on is exported as it ends. A signal that
  arrives while telemetry is shutting down (a ``multiprocessing.Pool`` terminating a worker
  that is already leaving, a restart during the exit flush) waits for that shutdown, then
  takes its default action, or goes to the application's handler (a second SIGTERM while the
  exit hook shuts down after the first one's ``sys.exit``): run then, not inside the
  shutdown, which an exception of the handler's broke off mid-export. Before a default
  action ends the process, every ``configure()`` telemetry still open in it is shut down,
  not only the one whose handler was called.
  ``Telemetry.shutdown()`` puts the previous handlers back once it is done.
  A container's first process (PID 1 of its namespace) is never killed by a signal's default
  action: it runs on until its manager's SIGKILL, so the signal is handled there as by an
  application's handler that returns (:func:`_init_ignores`).
* **The default action put back by whoever replaced ours** (asyncio's loop, whose ``close()``
  sets it for every signal ``loop.add_signal_handler`` handled, whatever it found: anyio's
  signal receiver, hypercorn, aiohttp's ``run_app``; a pre-forking server's worker resetting
  its master's handlers): a later SIGTERM or SIGHUP killed the process with its queue and its
  open runs lost, untold. While telemetry runs, ours stands in front of ``_signal.signal``,
  which ``signal.signal`` calls at each call (:func:`_setting_a_handler`), so every reference
  to ``signal.signal`` meets it, one taken before ``configure()`` too (``from signal import
  signal``, uvloop's loop, which binds it at import): the default action asked for SIGTERM or
  SIGHUP in the main thread installs ours, which ends in that default action (the first
  case above). Any other handler is set as asked; nothing polls; the function is put back
  once every telemetry is shut down. The default action put back past both (a reference to
  ``_signal.signal`` itself) is seen at the next span queued for export in the main thread,
  where ours goes back in front of it (:meth:`ProcessHooks.span_queued`). Out of reach: such
  a signal before a span is queued in the main thread, and a handler set from C
  (``PyOS_setsig``), which Python's table never shows.
* **Ctrl-C during a shutdown** (SIGINT): not handled otherwise, but held back while telemetry
  shuts down in the main thread and delivered once that is done (:func:`interrupts_held`),
  so a second Ctrl-C during the exit flush no longer breaks the export off.
* **fork**: a forked worker's first run puts our handlers back in front of the ones its
  server set since (:meth:`ProcessHooks._rearm`). The child starts with its own counts and
  fresh locks, so a lock held by the parent's export thread at the fork cannot hang the child
  (the SDK's processors already drop the parent's queue in the child, which the parent still
  exports). What the parent had
  gathered in memory stays the parent's: the meter provider's aggregations
  (:func:`forget_parents_metrics`), the tail sampler's held runs, the terminal view's pending
  trees and token totals; reported again by the child, they were counted twice.
* **multiprocessing**: a worker started by fork or by the fork server leaves through
  ``os._exit``, which skips ``atexit``; ``multiprocessing``'s own exit finalizers still run, so
  one shuts the worker's telemetry down: registered at the fork for a ``configure()`` made
  before it, at ``configure()`` for one made in the worker (its target, a ``Pool`` or
  ``ProcessPoolExecutor`` initializer). No global function is patched.
* **Celery's prefork pool** (billiard): its child processes leave through ``os._exit`` from
  inside the pool's worker loop, after Celery's ``worker_process_shutdown`` signal and before
  ``multiprocessing``'s finalizers could run: a warm shutdown (SIGTERM to the worker) lost
  every span its children had queued, untold. Telemetry shuts down on that signal, connected
  once Celery is loaded (at ``configure()``, or in each forked child: the master imports it
  before it forks), never importing it (:func:`_on_celery_child_exit`).
* **fork off the main thread**: the child's only thread is the one that forked, and the
  interpreter never exits there the normal way: when that thread ends (returns, or
  ``sys.exit``), the process ends as its last thread does, with status 0 and no exit hook.
  The export threads of the SDK and ours, started again in the child, outlived it: the child
  never ended (its parent waited for it forever) and what it recorded was never sent. Now,
  once only telemetry's threads are left there, telemetry is shut down (its open runs ended)
  and the child ends with status 0, as it would have (:func:`_exit_when_only_ours_are_left`).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.py's C core: no stubs
import contextlib
import faulthandler
import functools
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from agent_otel._fork import in_forked_child
from agent_otel._guard import logger as _log
from agent_otel._guard import warn_once
from agent_otel.exporting._failures import why_exports_fail
from agent_otel.recording._open import at_next_run_start, draining, undrain

if TYPE_CHECKING:
    from agent_otel.exporting._telemetry import Telemetry


FATAL_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals whose default action ends the process and skips every exit hook."""

_SIGTERM = getattr(signal, "SIGTERM", 0)
_SIGABRT = getattr(signal, "SIGABRT", 0)
"""A worker's timeout (gunicorn's master sends it, then SIGKILL within a second). At
``configure()``, chained only to the application's handler (gunicorn's sync worker exits at
once in it): its default action mostly comes from C (``abort()``, which no handler of
Python's ever sees). In a forked worker, ours also goes in front of the default action
(:meth:`ProcessHooks._rearm`)."""
_LIVE: weakref.WeakSet[Telemetry] = weakref.WeakSet()  # not shut down yet


class ProcessHooks:
    """The hooks one ``Telemetry`` installs; they hold it weakly."""

    def __init__(self, telemetry: Telemetry, timeout_s: float) -> None:
        self._telemetry = weakref.ref(telemetry)
        self._timeout_s = timeout_s
        self._handled: set[int] = set()  # the signals one of ours was installed for
        self._signum = 0  # the signal that ends the process once telemetry is shut down
        self._flushed: threading.Lock | None = None  # released once a requested flush is done
        self._drain_left = 0.0  # draining after the application's handler: flush time left
        self._deferred = 0  # a signal for the application's handler, come while shutting down
        self._waiting = False
        self._wake = threading.Lock()
        self._start_waiter()
        self._install_handlers()
        _LIVE.add(telemetry)
        in_forked_child(self._after_fork_in_child)
        _watch_forks_off_the_main_thread()
        _on_celery_child_exit()
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
            # Only the main thread may install handlers: say what that costs, once per process
            # (a thread pool's request handler or a script re-run's thread calling it again).
            # Exits through atexit, multiprocessing's finalizers and shutdown() still flush.
            warn_once(
                "configure()",
                "off the main thread",
                "agent-otel: configure() ran outside the main thread, so SIGTERM and SIGHUP "
                "end the process without flushing telemetry. Call configure() from the main "
                "thread, or call shutdown() on what it returns before the process stops.",
            )
            return
        for signum in (*FATAL_SIGNALS, _SIGABRT):
            try:
                previous = signal.getsignal(signum)
                if previous is signal.SIG_IGN or previous is None or _caught_outside(signum):
                    continue  # ignored, or handled outside Python: not ours to change
                if signum == _SIGABRT and not callable(previous):
                    continue
                signal.signal(signum, self._front(previous))
            except (ValueError, OSError):
                continue
            self._handled.add(signum)
        if not self._handled.isdisjoint(FATAL_SIGNALS):
            _keep_ours_in_front(self)

    @property
    def running(self) -> bool:
        """Not uninstalled yet: its telemetry has not finished its shutdown."""
        return self._waiting

    def keeps(self, signum: int) -> bool:
        """Whether the default action asked for ``signum`` now is to be ours in front of it:
        a fatal signal ``configure()`` handled, telemetry running, no such signal under way."""
        telemetry = self._telemetry()
        return (
            signum in FATAL_SIGNALS
            and signum in self._handled
            and self._waiting
            and not self._signum
            and telemetry is not None
            and not telemetry.is_shutdown
        )

    def span_queued(self) -> None:
        """A span was just queued for export, which a fatal signal's default action would lose:
        if one ``configure()`` handled is at its default action again, put there by a path
        that passed ``_signal.signal`` by (a reference to the C function itself taken before
        ``configure()``), ours goes in front of it, as
        :func:`_setting_a_handler` puts it. One C call per signal per span where nothing
        changed: ``_signal.getsignal``, the module's own, returns the default handler as its
        ``SIG_DFL`` object (about 0.1 µs for both signals, against 1.3 to 1.9 µs through
        ``signal.getsignal``, which wraps each answer in an enum: docs/benchmarks.md); only the
        main thread can set a handler."""
        for signum in FATAL_SIGNALS:
            if (
                _signal.getsignal(signum) is _signal.SIG_DFL
                and self.keeps(signum)
                and threading.current_thread() is threading.main_thread()
            ):
                if _caught_outside(signum):  # handled outside Python since: left as it is
                    self._handled.discard(signum)  # (and the kernel's view never read again)
                    continue
                with contextlib.suppress(ValueError, OSError):
                    self.keep(signum, signal.signal)

    def keep(self, signum: int, set_handler: Any) -> Any:
        """Install ours where the default action was asked (``set_handler`` is the
        ``signal.signal`` found); the handler it replaced is returned, as ``signal.signal``
        returns it."""
        return set_handler(signum, self._front(signal.SIG_DFL))

    def _front(self, previous: Any) -> functools.partial[None]:
        """Our handler in front of ``previous``: one of its own at each install, as a server
        that saved one of ours and restores it later (uvicorn) restores the one it replaced,
        with what that one was in front of, not the one put in front of the server's since."""
        return functools.partial(self._on_signal, previous=previous)

    def _is_mine(self, handler: Any) -> TypeGuard[functools.partial[None]]:
        return isinstance(handler, functools.partial) and handler.func == self._on_signal

    def _on_signal(self, signum: int, frame: Any, previous: Any = signal.SIG_DFL) -> None:
        """Runs in the main thread between two bytecodes: no lock taken, no thread started."""
        if _ENDING[0]:  # telemetry is shut down and the process ends: the default action now
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if not self._waiting:  # shut down already (still chained by a later handler)
            _deliver(previous, signum, frame)
            return
        if self._signum:  # again while shutting down for the first (a process group's signal
            return  # and its manager's): that shutdown is bounded, then the process ends
        if callable(previous) or _init_ignores(previous):
            # The application's handler decides (or, as a container's first process, nothing
            # ends the process): flush first, bounded
            telemetry = self._telemetry()
            if telemetry is not None and telemetry.is_shutdown:
                # Shutting down (the exit hook, after the handler's first exit): that shutdown
                # flushes; the handler runs once it is done (uninstall), not inside it.
                self._deferred = signum
                return
            flushed = threading.Lock()
            flushed.acquire()
            self._flushed = flushed
            self._wake_waiter()
            flushed.acquire(timeout=self._timeout_s + _TELL_S)  # a flush cut short is told
            if signum == _SIGABRT:
                # A worker's timeout: the handler exits at once, and SIGKILL follows within a
                # second (gunicorn), before any exit hook is done: the runs its exit cuts
                # short are exported as they end.
                self._drain_left = self._timeout_s
                draining(self._flush_ended)
            if callable(previous):
                previous(signum, frame)
            if signum == _SIGTERM:
                # It returned: the process drains (a server finishing its requests) and may
                # then end by a path that skips every exit hook (the default action put
                # back): each run that ends from now on is exported as it ends, the flushes
                # within the same bound. (A SIGHUP handler that returns reloads: no drain.)
                self._drain_left = self._timeout_s
                draining(self._flush_ended)
            return
        # Ours stays only in a form that waits: a later handler that chained to ours (or ours
        # again) is not run a second time when the default action is delivered.
        signal.signal(signum, _on_repeat)
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
                    self._flush("before the application's signal handler", self._timeout_s)
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

    def _flush(self, when: str, timeout_s: float) -> None:
        """Export what is queued; what did not leave in time is told, with how many spans: the
        process may end next by a path that runs nothing more of ours (``os._exit``)."""
        telemetry = self._telemetry()
        if telemetry is None or telemetry.force_flush(max(int(timeout_s * 1000), 1)):
            return
        _log.warning(
            "agent-otel: the flush %s did not finish within %.1f s (%s): %d span(s) not "
            "exported yet are lost if the process ends now",
            when,
            timeout_s,
            why_exports_fail(),
            telemetry.spans_unsent(),
        )

    def _flush_ended(self, span: object) -> None:
        """Draining after a fatal signal the application handles: a run just ended, export it."""
        telemetry = self._telemetry()
        if telemetry is None or telemetry.is_shutdown or not telemetry.owns(span):
            return
        if self._drain_left <= 0:  # the bound is spent (a collector down): the exit decides
            undrain(self._flush_ended)
            return
        started = time.monotonic()
        self._flush("of a run ended after the signal", self._drain_left)
        self._drain_left -= time.monotonic() - started

    def uninstall(self) -> None:
        """Telemetry is shut down: put the previous handlers back (where ours is still the one
        installed); a fatal signal that arrived meanwhile now takes its default action."""
        telemetry = self._telemetry()
        if telemetry is not None:
            _LIVE.discard(telemetry)
        if not self._signum:  # let the waiting thread end
            self._waiting = False
            self._wake_waiter()
        undrain(self._flush_ended)
        if threading.current_thread() is threading.main_thread():
            for signum in list(self._handled):
                try:
                    current = signal.getsignal(signum)
                    if self._is_mine(current):
                        signal.signal(signum, current.keywords["previous"])
                        self._handled.discard(signum)
                except (ValueError, OSError):
                    pass
        _no_longer_in_front()
        if self._signum:
            _die(self._signum)
        deferred, self._deferred = self._deferred, 0
        if deferred:  # the application's handler (put back above) runs now
            if threading.current_thread() is threading.main_thread():
                signal.raise_signal(deferred)  # runs it here, its exception raised from here
            else:
                os.kill(os.getpid(), deferred)

    def at_exit(self) -> None:
        """The interpreter exits while a fatal signal's shutdown ran in the waiting thread (a
        server that re-raised the signal, then returned): that shutdown is done (the exit hook
        waited for it); the process now ends as the signal would have ended it."""
        if self._signum:
            _die(self._signum)

    # --- fork ------------------------------------------------------------------------------
    def _after_fork_in_child(self) -> None:
        telemetry = self._telemetry()
        if telemetry is None:
            return
        self._waiting = False  # the parent's waiter thread does not exist here
        if not telemetry.is_shutdown:
            _on_celery_child_exit()
            self._start_waiter()
            ours = list(self._handled)  # the signals configure() handled (and still does)
            if ours:  # and a worker's timeout, if the worker handles it (gunicorn's do)
                ours = [*ours, _SIGABRT] if _SIGABRT and _SIGABRT not in ours else ours
                at_next_run_start(lambda: self._rearm(ours))

    def _rearm(self, signums: list[int]) -> bool:
        """In a forked worker, at its first run in the main thread: a pre-forking server
        replaces our handlers in its master and again in each worker (gunicorn; its uvicorn
        worker resets them to the default action, which uvicorn puts back and raises again
        once it drained), so SIGTERM killed the worker with its spans queued, untold. Ours
        goes back in front, chaining to what the worker has now, as to an application's
        handler installed before ``configure()``. SIGABRT too, a worker's timeout: gunicorn's
        sync worker exits at once in its handler, its uvicorn worker dies of the default
        action, and SIGKILL follows within a second; left alone where ``faulthandler`` is on
        (its own SIGABRT handler, outside Python, which ours would replace). Done (True)
        unless off the main thread."""
        telemetry = self._telemetry()
        if telemetry is None or telemetry.is_shutdown:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in signums:
            current = _handler(signum)
            if current is None or current is signal.SIG_IGN or _is_ours(current):
                continue
            if not callable(current) and _caught_outside(signum):
                continue
            if signum == _SIGABRT and not callable(current) and faulthandler.is_enabled():
                continue
            try:
                signal.signal(signum, self._front(current))
            except (ValueError, OSError):
                continue
            self._handled.add(signum)
        return True

    def in_worker(self) -> None:
        """In a ``multiprocessing`` child started by fork: shut down at its exit."""
        from multiprocessing import util

        telemetry = self._telemetry()
        if telemetry is not None and not telemetry.is_shutdown:
            util.Finalize(None, _shutdown_ref(self._telemetry), exitpriority=-100)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back while telemetry shuts down in the main thread; deliver it after.

    A shutdown is bounded (``shutdown_timeout_millis``), but a ``KeyboardInterrupt`` raised
    inside it broke it off mid-export: a second Ctrl-C during the exit flush (the first one
    ended the program), or one while an application's ``finally`` calls ``shutdown()``, lost
    every span still queued, the runs the first Ctrl-C cut short included, untold. Python's
    handler (or the application's) is put back once the shutdown is done, and a SIGINT that
    came meanwhile goes to it then: ``KeyboardInterrupt`` is raised at the end of the shutdown
    instead of inside it. Left as it is off the main thread (no signal runs there), and where
    SIGINT is ignored, takes its default action or is handled outside Python.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _handler(signal.SIGINT)
    came: list[Any] = []  # the frame of each SIGINT held

    def hold(signum: int, frame: Any) -> None:  # between two bytecodes: no lock, no I/O
        came.append(frame)

    try:
        if not callable(previous):
            raise ValueError("not Python's to hold")
        signal.signal(signal.SIGINT, hold)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGINT) is hold:
                signal.signal(signal.SIGINT, previous)
        if came:
            previous(signal.SIGINT, came[-1])


def forget_parents_metrics(meter_provider: object) -> None:
    """In a forked child: empty aggregations, with locks nobody holds.

    The SDK's meter provider keeps what the parent measured (its token counts, its durations,
    its pipeline's counts) and its reader in the child reported it again as the child's own:
    every total summed over processes counted the parent's runs twice. Each of its meters
    makes instruments under a lock of its own, which the SDK does not renew in a child (it
    renews the provider's): a parent thread making a wrapper (its instruments) as another
    forked left it held, and the child's first run hung there. Its internals are read
    defensively: on an SDK laid out otherwise, nothing is changed.
    """
    meters = getattr(meter_provider, "_meters", None)
    if isinstance(meters, Mapping):
        for meter in list(meters.values()):
            if hasattr(meter, "_instrument_registration_lock"):
                meter.__dict__["_instrument_registration_lock"] = threading.Lock()
    consumer = getattr(meter_provider, "_measurement_consumer", None)
    storages = getattr(consumer, "_reader_storages", None)
    if consumer is None or not isinstance(storages, Mapping):
        return
    for storage in storages.values():
        if isinstance(getattr(storage, "_instrument_view_instrument_matches", None), dict):
            storage.__dict__.update(_instrument_view_instrument_matches={}, _lock=threading.RLock())
    if hasattr(consumer, "_lock"):
        consumer.__dict__["_lock"] = threading.Lock()


_TELL_S = 1.0  # past a bounded flush: time for it to tell what it left behind
_ENDING = [0]  # the signal whose default action ends the process, once telemetry is shut down
_KILL_GRACE_S = 5.0  # how long the main thread has to run our handler once more (below)


def _die(signum: int) -> None:
    """Shut down every telemetry still open here, then take ``signum``'s default action.

    Outside the main thread the handler cannot be changed, so the signal goes to our handler,
    which the main thread runs between two bytecodes and which takes the default action. A
    main thread stuck in C code that never returns (which the default action would have ended
    too) gets :data:`_KILL_GRACE_S`, then SIGKILL ends the process.
    """
    for telemetry in list(_LIVE):
        try:
            telemetry.shutdown()
        except Exception:
            _log.debug("agent-otel: shutdown before the signal failed", exc_info=True)
    _ENDING[0] = signum
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    os.kill(os.getpid(), signum)
    time.sleep(_KILL_GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)


_SET_HANDLER: list[Any] = []  # the ``_signal.signal`` found when ours first stood in front of it
_KEEPERS: list[weakref.ref[ProcessHooks]] = []  # hooks that handled a fatal signal, oldest first


def _keep_ours_in_front(hooks: ProcessHooks) -> None:
    """Have the default action asked for a fatal signal ``hooks`` handles install ours (in the
    main thread, by ``configure()``: its globals). Ours stands in front of ``_signal.signal``,
    the C core that ``signal.signal`` (``signal.py``'s function) calls at each call: so every
    reference to ``signal.signal`` goes through it, one taken before ``configure()`` too
    (``from signal import signal``, uvloop's loop, which binds it at import)."""
    _KEEPERS[:] = [ref for ref in _KEEPERS if ref() is not None]
    _KEEPERS.append(weakref.ref(hooks))
    if not _SET_HANDLER:
        _SET_HANDLER.append(_signal.signal)
    if _signal.signal is _SET_HANDLER[0]:  # not stood in front of since ours was put back
        _signal.signal = _setting_a_handler


def _no_longer_in_front() -> None:
    """Once no telemetry keeps a default action, put ``_signal.signal`` back as it was found
    (unless something stood in front of ours since: ours then passes every call on). The
    function found stays known: a reference to ours taken meanwhile (``from _signal import
    signal``) still passes every call on."""
    if any(hooks is not None and hooks.running for hooks in (ref() for ref in _KEEPERS)):
        return
    _KEEPERS.clear()
    if _SET_HANDLER and _signal.signal is _setting_a_handler:
        _signal.signal = _SET_HANDLER[0]


def _setting_a_handler(signalnum: Any, handler: Any) -> Any:
    """``_signal.signal`` (what every ``signal.signal`` call runs) while a telemetry handles
    SIGTERM or SIGHUP (:class:`ProcessHooks`).

    The default action asked for one of them in the main thread, while telemetry runs and no
    such signal is under way, installs ours instead, which shuts telemetry down and then takes
    that default action: whoever replaced ours and takes theirs away by putting the default
    back (asyncio's loop at its ``close()``, whatever handler it found) no longer leaves the
    next signal to kill the process with its spans. Everything else goes to the function found.
    """
    set_handler = _SET_HANDLER[0]
    if (
        isinstance(handler, int)
        and handler == signal.SIG_DFL
        and not _ENDING[0]
        and threading.current_thread() is threading.main_thread()
    ):
        with contextlib.suppress(TypeError, ValueError):
            signum = int(signalnum)
            for ref in reversed(_KEEPERS):
                hooks = ref()
                if hooks is not None and hooks.keeps(signum):
                    return hooks.keep(signum, set_handler)
    return set_handler(signalnum, handler)


def _caught_outside(signum: int) -> bool:
    """Whether ``signum``, set to its default action in Python's own table, is caught by a
    handler installed outside Python since (``faulthandler.register()``, a C extension's):
    Python's table does not see it, ours would replace it (its stack dump on SIGTERM was lost
    without a word), and such a signal is left as it is. Read from the kernel's view of the
    process (Linux's ``/proc``); elsewhere, as Python's table says."""
    if signal.getsignal(signum) is not signal.SIG_DFL:
        return False
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            caught = next((line for line in status if line.startswith("SigCgt:")), "")
        return bool(int(caught.partition(":")[2].strip() or "0", 16) >> (signum - 1) & 1)
    except (OSError, ValueError):
        return False


def _init_ignores(handler: Any) -> bool:
    """Whether ``handler``, a fatal signal's, leaves the process running: the default action
    in a PID namespace's first process (a container's, ``CMD ["python", "app.py"]``), which
    the kernel never kills by a signal it has no handler for. It runs on until its manager's
    SIGKILL (``docker stop`` after 10 s, Kubernetes after its grace period): telemetry shut
    down at the signal dropped every run of that time. Read at the signal: a fork's child is
    not the first process."""
    return handler == signal.SIG_DFL and os.getpid() == 1


def _on_repeat(signum: int, frame: Any) -> None:
    """The handler once a fatal signal came: the same signal again waits for its shutdown;
    once telemetry is shut down (:func:`_die`), the default action."""
    if _ENDING[0]:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _handler(signum: int) -> Any:
    try:
        return signal.getsignal(signum)
    except (ValueError, OSError):
        return None


def _is_ours(handler: Any) -> bool:
    """A handler of a ``ProcessHooks`` (this telemetry's or another's, already chained)."""
    if handler is _on_repeat:
        return True
    func = handler.func if isinstance(handler, functools.partial) else None
    return type(getattr(func, "__self__", None)) is ProcessHooks


def _deliver(previous: Any, signum: int, frame: Any) -> None:
    """What would have happened without our handler."""
    if callable(previous):
        previous(signum, frame)
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_FORKS_WATCHED = [False]  # the fork hooks below are registered once per process
# Set by the forking thread just before its fork, read by the same thread in the child: its
# own, so two threads forking at once never read each other's (a thread's locals survive fork).
_FORKED_OFF_MAIN = threading.local()
_THREAD_NAMES = ("agent-otel", "Otel")  # the threads of ours and of the SDK's processors


def _watch_forks_off_the_main_thread() -> None:
    if _FORKS_WATCHED[0] or not hasattr(os, "register_at_fork"):
        return
    _FORKS_WATCHED[0] = True
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_off_main)


def _before_fork() -> None:
    _FORKED_OFF_MAIN.flag = threading.current_thread() is not threading.main_thread()


def _forked_off_main() -> bool:
    """Whether this thread's last fork was made off a thread other than the main one."""
    return bool(getattr(_FORKED_OFF_MAIN, "flag", False))


def _after_fork_off_main() -> None:
    if not _forked_off_main() or not _LIVE:
        return
    _FORKED_OFF_MAIN.flag = False
    try:
        threading.Thread(
            target=_exit_when_only_ours_are_left,
            args=(threading.current_thread(),),
            name="agent-otel-fork-exit",
            daemon=True,
        ).start()
    except Exception:
        _log.debug("agent-otel: no exit watch in a child forked off a thread", exc_info=True)


def _exit_when_only_ours_are_left(forker: threading.Thread) -> None:
    """In a child forked off a thread other than the main one: once the thread that forked has
    ended, and every thread the application started in the child has too, shut telemetry down
    and end the process with status 0, as its last thread ending would have."""
    me = threading.current_thread()
    waiting_for: threading.Thread | None = forker
    while waiting_for is not None:
        try:
            waiting_for.join()
        except Exception:  # a thread that cannot be joined (one started outside Python)
            time.sleep(0.05)
        waiting_for = next(
            (
                thread
                for thread in threading.enumerate()
                if thread is not me and not _is_telemetrys(thread)
            ),
            None,
        )
    for telemetry in list(_LIVE):
        try:
            telemetry.shutdown()
        except Exception:
            _log.debug("agent-otel: shutdown in a forked child failed", exc_info=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _is_telemetrys(thread: threading.Thread) -> bool:
    """A thread of agent-otel's or of the SDK's processors and readers (daemons all)."""
    return thread.daemon and thread.name.startswith(_THREAD_NAMES)


def _on_celery_child_exit() -> None:
    """Shut every telemetry still open down when a Celery prefork child leaves, if Celery is
    loaded.

    Celery sends ``worker_process_shutdown`` in a pool child only, right before billiard's
    ``os._exit``: connected in the master, it changes nothing there, and the child inherits
    the connection. One receiver per process (Celery keeps one per ``dispatch_uid``).
    """
    signals = sys.modules.get("celery.signals")
    shutdown_signal = getattr(signals, "worker_process_shutdown", None)
    if shutdown_signal is None:
        return
    try:
        shutdown_signal.connect(_shut_down_live, weak=False, dispatch_uid="agent-otel")
    except Exception:
        _log.debug("agent-otel: no hook on Celery's pool child exit", exc_info=True)


def _shut_down_live(*args: object, **kwargs: object) -> None:
    for telemetry in list(_LIVE):
        try:
            telemetry.shutdown()
        except Exception:
            _log.debug("agent-otel: shutdown in a Celery pool child failed", exc_info=True)


def _shutdown_ref(ref: weakref.ref[Telemetry]) -> Any:
    def shutdown() -> None:
        telemetry = ref()
        if telemetry is not None:
            telemetry.shutdown()

    return shutdown

"""Which child is watched for its forking thread's end: the flag each forking thread sets for
its own child (the forks themselves, in child processes: tests/test_process_exit.py)."""

from __future__ import annotations

import threading

from agent_otel.exporting import _process


def test_two_threads_forking_at_once_each_read_their_own_fork() -> None:
    """A worker thread and the main thread fork at about the same time: each child reads the
    fork its own thread made. One process-wide flag, set by whichever fork came last, gave the
    worker's child the main thread's answer (never watched: it hung when its thread ended) or
    the main thread's child the worker's (ended with status 0 under the application's feet)."""
    seen: dict[str, bool] = {}
    about_to_fork, main_forked = threading.Event(), threading.Event()

    def worker() -> None:
        _process._before_fork()  # the worker's fork starts...
        about_to_fork.set()
        main_forked.wait(5)
        seen["worker"] = _process._forked_off_main()  # ...and its child reads the flag

    thread = threading.Thread(target=worker)
    thread.start()
    assert about_to_fork.wait(5)
    _process._before_fork()  # the main thread forks in between
    seen["main"] = _process._forked_off_main()
    main_forked.set()
    thread.join(5)
    assert seen == {"worker": True, "main": False}

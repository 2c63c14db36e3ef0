"""Servers as child processes on loopback: free ports, waiting until ready, stopping.

One place for what the benchmarks and the heavy suite both do with the real programs they run
(Jaeger, our Collector, Phoenix, MLflow, Prometheus): start a process in its own session with
its output in a log, wait until it answers (failing with the log's tail if it exits or never
does), and stop it and everything it started when the block ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        return bool(response.status == 200)


def poll(check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.2) -> T:
    """Call ``check`` until it returns something truthy or the deadline passes (then fail).

    An ``OSError`` or ``ValueError`` (refused, reset, 404, JSON not yet complete) counts as
    "not yet"; the last one is named in the failure.
    """
    deadline = time.monotonic() + timeout
    error: Exception | None = None
    while True:
        try:
            last = check()
            error = None
        except (OSError, ValueError) as exc:
            last, error = None, exc
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; {error!r}")
        time.sleep(interval)


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's session, SIGKILL if it has not gone within 20 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@contextmanager
def serving(
    command: list[str],
    *,
    log: Path,
    ready: Callable[[], bool],
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` until the block ends, once ``ready()`` is true; output goes to ``log``."""
    name = Path(command[0]).name
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            env=None if env is None else dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd or log.parent,
            start_new_session=True,
        )
    try:

        def answering() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"{name} exited ({process.returncode}):\n{log_tail(log)}")
            return ready()

        try:
            poll(answering, timeout=timeout, what=f"{name} to become ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log_tail(log)}") from None
        yield process
    finally:
        stop(process)

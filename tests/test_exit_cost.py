"""A dead collector at exit: about a second by default (configurable), the reason told once.

Real child processes exporting to a refused port. The time is measured by the child around its
own shutdown (speed figures live in benchmarks/; here only the bound's order of magnitude is
checked: the default bound against the export timeout and its retries, which took 6-8 s)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy  # child processes and timings: run by the heavy suite

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(
    """
    import atexit, sys, time
    from agent_otel import configure
    start = [0.0]
    atexit.register(lambda: print(f"EXIT {time.monotonic() - start[0]:.2f}", file=sys.stderr))
    kwargs = eval(sys.argv[2])
    tel = configure("exit-test", endpoint=sys.argv[1], **kwargs)
    tracer = tel.tracer_provider.get_tracer("t")
    for i in range(20):
        tracer.start_span(f"s{i}").end()
    tel.meter_provider.get_meter("t").create_counter("c").add(1)
    atexit.register(lambda: start.__setitem__(0, time.monotonic()))
    """
)  # atexit runs hooks last-in first-out: the two hooks time configure()'s exit handler


def _refused() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _run(kwargs: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'contract'}"}
    for var in [v for v in env if v.startswith("OTEL_")]:
        del env[var]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, _refused(), kwargs],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    found = re.search(r"EXIT (\d+\.\d\d)", done.stderr)  # other threads may write beside it
    return float(found[1]) if found else -1.0, done.stderr


def test_a_dead_collector_costs_about_a_second_at_exit_and_is_told_once() -> None:
    seconds, stderr = _run("{}")
    assert 0 <= seconds < 3.0, stderr  # the default bound is 1 s; the export timeout is 5 s
    assert stderr.count("is the collector reachable?") == 1, stderr
    assert "shutdown_timeout_millis" in stderr  # what to do to wait longer
    assert stderr.count("Transient error") <= 1, stderr  # the SDK's retry told once
    assert "agent-otel: 20 spans lost" in stderr  # and what it cost


def test_the_exit_bound_is_configurable() -> None:
    seconds, stderr = _run("{'shutdown_timeout_millis': 3000, 'timeout': 30}")
    assert seconds >= 2.5, stderr

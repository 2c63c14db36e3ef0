"""Signals that end the process: what was ended is delivered, whoever's handler ends it.

Each test runs a real child process that calls ``configure()`` and exports over OTLP/HTTP to
the loopback receiver of ``tests/otlp_receiver.py``, with a batch delay of a minute: what the
child ended is still queued when the signal comes, so only the path under test can deliver
it. (``tests/integration/test_process_life.py``, heavy, covers the plain cases: SIGTERM with
no handler, a handler that exits, an ignored SIGTERM, fork, a ``multiprocessing`` worker.)
Timeouts are hang guards, not performance claims.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass

import pytest

from otlp_receiver import receiving

HANG_GUARD_S = 60

PRELUDE = """
import asyncio, os, signal, sys, threading, time
from agent_contract.protocol import LLMCallStart, LLMCallEnd, StepBoundary, TextDelta
from agent_otel import configure, otel_wrapper

async def agent():
    yield LLMCallStart(model="m", call_id="c")
    yield TextDelta(text="hi")
    yield LLMCallEnd(call_id="c")
    yield StepBoundary()

def runs(n, name="run", **options):
    async def main():
        for _ in range(n):
            [_ async for _ in otel_wrapper(agent_name=name, **options)(agent())]
    asyncio.run(main())

def held_open(name, **options):
    '''A run that never ends, in a daemon thread: open when the process ends.'''
    started = threading.Event()
    async def never():
        yield LLMCallStart(model="m", call_id="o")
        started.set()
        await asyncio.sleep(3600)
        yield TextDelta(text="never")
    async def consume():
        [_ async for _ in otel_wrapper(agent_name=name, **options)(never())]
    threading.Thread(target=lambda: asyncio.run(consume()), daemon=True).start()
    started.wait(10)

def ready():
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
"""


@dataclass
class Ended:
    code: int
    out: str
    err: str
    runs: Counter[str]  # invoke_agent spans received, by agent name
    end_reasons: Counter[str]


def run_child(script: str, *, send: signal.Signals | None = None, delay_s: float = 0.0) -> Ended:
    """Run ``script`` after the prelude; with ``send``, signal it once it printed "ready"."""
    with receiving(delay_s) as received:
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": received.endpoint,
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",  # nothing leaves before the signal
        }
        env.pop("OTEL_TRACES_EXPORTER", None)
        process = subprocess.Popen(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(script)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if send is not None:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line.strip() == "ready", (line, process.stderr and process.stderr.read())
                process.send_signal(send)
            out, err = process.communicate(timeout=HANG_GUARD_S)
        finally:
            process.kill()
        agents = received.named("invoke_agent")
    return Ended(
        process.returncode,
        out,
        err,
        Counter(str(a.get("gen_ai.agent.name")) for a in agents),
        Counter(str(a.get("agent_otel.end_reason")) for a in agents),
    )


def test_sighup_flushes_then_dies_of_sighup() -> None:
    """A closed terminal or SSH session sends SIGHUP, whose default action (like SIGTERM's)
    skips every exit hook: every queued span was lost, without a word."""
    ended = run_child(
        """
        configure("hup")
        runs(5)
        held_open("open")
        ready()
        """,
        send=signal.SIGHUP,
    )
    assert ended.code == -signal.SIGHUP, ended.err  # the default action, after the flush
    assert ended.runs == {"run": 5, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("signal.signal(signum, signal.SIG_DFL); os.kill(os.getpid(), signum)", -signal.SIGTERM),
        ("os._exit(7)", 7),
    ],
    ids=["default-action-again", "os._exit"],
)
def test_an_applications_handler_that_ends_the_process_itself_loses_nothing(
    ending: str, code: int
) -> None:
    """A handler installed before ``configure()`` that cleans up and then ends the process
    itself ran at once, while the queue was flushed in the background: the process died
    before a span left. It now runs once the flush is done."""
    ended = run_child(
        f"""
        def graceful(signum, frame):
            print("application cleanup", flush=True)
            {ending}
        signal.signal(signal.SIGTERM, graceful)
        configure("app-handler")
        runs(20)
        ready()
        """,
        send=signal.SIGTERM,
    )
    assert ended.code == code, ended.err
    assert "application cleanup" in ended.out
    assert ended.runs == {"run": 20}, ended.err


def test_a_signal_during_the_exit_shutdown_waits_for_it_then_dies() -> None:
    """A SIGTERM that arrives while telemetry is shutting down at exit (a restart during the
    exit flush; ``Pool.terminate()`` reaching a worker that is already leaving) took its
    default action at once, because shutdown put the default handler back first: what was
    still being exported was lost. It now waits for the shutdown, then takes that action."""
    ended = run_child(
        """
        os.environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = "3"  # one request per run
        configure("exiting", shutdown_timeout_millis=30_000)
        runs(4)
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
        timer.daemon = True  # the interpreter does not wait for it before its exit hooks
        timer.start()
        """,  # the script ends: atexit shuts down, each request answered after 0.3 s
        delay_s=0.3,
    )
    assert ended.runs == {"run": 4}, ended.err
    assert ended.code == -signal.SIGTERM, ended.err  # then the signal's default action


def test_pool_workers_terminated_by_the_pools_exit_deliver_their_runs() -> None:
    """``with Pool() as pool:`` terminates its workers on leaving the block: each was killed
    while its exit finalizer was still exporting."""
    ended = run_child(
        """
        import multiprocessing
        configure("pool")
        def work(i):
            runs(1, "worker")
            return i
        with multiprocessing.get_context("fork").Pool(2) as pool:
            print(pool.map(work, range(6)), flush=True)
        """
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"worker": 6}, ended.err


def test_every_telemetry_is_shut_down_before_a_signal_kills() -> None:
    """With two ``configure()`` telemetries, the later one's handler chains to the earlier
    one's, which shut only its own down before the default action: the later one's open run
    was never ended, so never exported."""
    ended = run_child(
        """
        first = configure("first")
        second = configure("second", set_global=False)
        runs(2, "first", tracer_provider=first.tracer_provider)
        runs(2, "second", tracer_provider=second.tracer_provider)
        held_open("open-first", tracer_provider=first.tracer_provider)
        held_open("open-second", tracer_provider=second.tracer_provider)
        ready()
        """,
        send=signal.SIGTERM,
    )
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"first": 2, "second": 2, "open-first": 1, "open-second": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 2

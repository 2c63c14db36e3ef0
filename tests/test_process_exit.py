"""A process's end and its forks: what was ended is delivered once, whoever ends the process.

Signals: whatever handler ends the process, what was ended is delivered. Fork: what the parent
gathered in memory (metrics, the tail sampler's held runs, the terminal view's pending trees
and totals) stays the parent's; a child reports only its own.

Each test runs a real child process that calls ``configure()`` and exports over OTLP/HTTP to
the loopback receiver of ``tests/otlp_receiver.py`` (or prints what its own reader holds),
with a batch delay of a minute: what the child ended is still queued when its life ends, so
only the path under test can deliver it. (``tests/integration/test_process_life.py``, heavy,
covers the plain cases: SIGTERM with no handler, a handler that exits, an ignored SIGTERM,
fork, a ``multiprocessing`` worker.)
Timeouts are hang guards, not performance claims.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from benchmarks._process import free_port

from otlp_receiver import receiving
from signalled_child import (
    SHOWS_ITS_THREADS,
    ended_within,
    first_line_within,
    started_plainly,
)

pytestmark = pytest.mark.heavy  # child processes and timings: run by the heavy suite
HANG_GUARD_S = 60

PRELUDE = """
import asyncio, os, signal, sys, threading, time
from agent_contract.protocol import LLMCallStart, LLMCallEnd, StepBoundary, TextDelta, Usage
from agent_otel import configure, otel_wrapper

async def agent():
    yield LLMCallStart(model="m", call_id="c")
    yield TextDelta(text="hi")
    yield Usage(input_tokens=10, output_tokens=2)
    yield LLMCallEnd(call_id="c")
    yield StepBoundary()

def forked_in_a_run(child, **options):
    '''A run whose first call has ended and whose second is open when the process forks;
    child() runs in the child, which then leaves normally (its exit hooks run).'''
    async def forking():
        yield LLMCallStart(model="m", call_id="first")
        yield Usage(input_tokens=10, output_tokens=2)
        yield LLMCallEnd(call_id="first")
        yield StepBoundary()
        yield LLMCallStart(model="m", call_id="second")
        pid = os.fork()
        if pid == 0:
            print("child starts", flush=True)
            child()
            sys.exit(0)
        os.waitpid(pid, 0)
        print("child done", flush=True)
        yield LLMCallEnd(call_id="second")
    async def main():
        [_ async for _ in otel_wrapper(agent_name="parent", **options)(forking())]
    asyncio.run(main())

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
    chats: int  # chat spans received
    services: Counter[str]  # "span name @ service.name" of each invoke_agent span received
    shared: int  # client connections that carried the spans of more than one process
    garbled: int  # requests received as no OTLP message


def run_child(
    script: str,
    *,
    send: signal.Signals | None = None,
    delay_s: float = 0.0,
    env: dict[str, str] | None = None,
    as_file: Path | None = None,
    again_after_s: float | None = None,
    keep_alive: bool = False,
    inside: Sequence[str] = (),
) -> Ended:
    """Run ``script`` after the prelude (with ``env`` added to the environment), in a child
    started with every signal's default action, whatever this process ignores, against a
    receiver that keeps connections open with ``keep_alive``; with
    ``send``, signal it once it printed "ready" (and, with ``again_after_s``, once more that
    much later). With ``as_file``, the script is written there and run as a file (the spawn
    and fork-server start methods import its functions again). ``inside`` is a command the
    interpreter runs under (``unshare --pid --fork``)."""
    with receiving(delay_s, keep_alive=keep_alive) as received:
        variables = {**received.child_environment(), **(env or {})}
        source = SHOWS_ITS_THREADS + PRELUDE + textwrap.dedent(script)
        if as_file is not None:
            as_file.write_text(source)
        process = subprocess.Popen(
            started_plainly(
                [
                    *inside,
                    sys.executable,
                    *(["-c", source] if as_file is None else [str(as_file)]),
                ]
            ),
            env=variables,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if send is not None:
                line = first_line_within(process, HANG_GUARD_S)
                assert line.strip() == "ready", (line, process.stderr and process.stderr.read())
                process.send_signal(send)
                if again_after_s is not None:
                    time.sleep(again_after_s)
                    process.send_signal(send)
            out, err = ended_within(process, HANG_GUARD_S)
        finally:
            process.kill()
        agents = received.named("invoke_agent")
    return Ended(
        process.returncode,
        out,
        err,
        Counter(str(a.get("gen_ai.agent.name")) for a in agents),
        Counter(str(a.get("agent_otel.end_reason")) for a in agents),
        len(received.named("chat ")),
        Counter(f"{n} @ {s}" for n, s in received.services if n.startswith("invoke_agent")),
        sum(n > 1 for n in Counter(port for port, _ in set(received.connections)).values()),
        received.garbled,
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


IGNORED_BY_RUNNERS = (signal.SIGHUP, signal.SIGINT)  # by nohup; by a script's background job


def test_a_signal_the_test_runner_ignores_still_reaches_the_child() -> None:
    """A suite run under ``nohup`` (SIGHUP ignored) or as a script's background job (SIGINT
    ignored) started every child ignoring those signals too: the child never took the SIGHUP
    or the Ctrl-C a test sent it (an ignored signal stays ignored, as documented), and each
    such test hung until its guard with an empty stderr. A child starts with each signal's
    default action, as from a terminal: it flushes, then dies of the signal."""
    ignored = {signum: signal.signal(signum, signal.SIG_IGN) for signum in IGNORED_BY_RUNNERS}
    try:
        ended = {
            signum: run_child('configure("plain")\nruns(2)\nready()', send=signum)
            for signum in IGNORED_BY_RUNNERS
        }
    finally:
        for signum, previous in ignored.items():
            signal.signal(signum, previous)
    for signum, each in ended.items():
        assert each.code == -signum, each.err
        assert each.runs == {"run": 2}, each.err


@pytest.mark.parametrize("wait", [first_line_within, ended_within])
def test_a_child_past_its_hang_guard_fails_the_test_with_its_threads(
    wait: Callable[[subprocess.Popen[str], float], object],
) -> None:
    """A child that hung failed its test with a bare ``TimeoutExpired`` and nothing to read
    (or, before its first line, held the test until the runner's own timeout): the failure now
    shows where each of its threads is, and the signals it ignores."""
    script = "import time\ndef stuck_here():\n    time.sleep(3600)\nstuck_here()\n"
    process = subprocess.Popen(
        started_plainly([sys.executable, "-c", SHOWS_ITS_THREADS + script]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with pytest.raises(pytest.fail.Exception) as failed:
            wait(process, 1.0)
    finally:
        process.kill()
        process.wait()
    told = str(failed.value)
    assert "line 5 in stuck_here" in told, told  # faulthandler's frame (after its two lines)
    assert "after 1.0 s" in told, told
    # Python's own at its start (and not the test runner's), then its Ctrl-C and the dump's
    assert "ignored SIGPIPE,SIGXFSZ; blocked none; caught SIGINT,SIGUSR1" in told, told


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


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_worker_that_configures_itself_delivers_at_its_exit(method: str, tmp_path: Path) -> None:
    """A worker that calls ``configure()`` itself (its target, a ``Pool`` or
    ``ProcessPoolExecutor`` initializer) and was started by fork or by the fork server leaves
    through ``os._exit``, which skips ``atexit``: every span it recorded was lost, without a
    word. Only a ``configure()`` made before a fork had the worker's exit finalizer."""
    ended = run_child(
        f"""
        import concurrent.futures, multiprocessing
        def process(name):
            configure(name)
            runs(1, name)
        def work(i):
            runs(1, "pooled")
            return i
        if __name__ == "__main__":
            context = multiprocessing.get_context("{method}")
            worker = context.Process(target=process, args=("process",))
            worker.start()
            worker.join()
            with context.Pool(2, initializer=configure, initargs=("pool",)) as pool:
                print(pool.map(work, range(3)), flush=True)
                pool.close()
                pool.join()
            with concurrent.futures.ProcessPoolExecutor(
                2, mp_context=context, initializer=configure, initargs=("executor",)
            ) as executor:
                print(list(executor.map(work, range(3))), flush=True)
        """,
        as_file=tmp_path / "workers.py",
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"process": 1, "pooled": 6}, ended.err


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_process_pool_executors_workers_deliver_every_task_that_ran(
    method: str, tmp_path: Path
) -> None:
    """``ProcessPoolExecutor`` as a production user runs it: workers inheriting the parent's
    ``configure()`` (fork) or configuring themselves in the initializer (spawn, each retired
    after one task: ``max_tasks_per_child``), and a pool shut down with ``cancel_futures``:
    every task that ran is delivered, and none that was cancelled."""
    ended = run_child(
        f"""
        import concurrent.futures, multiprocessing
        def work(i):
            runs(1, "pooled")
            return i
        def slow(i):
            time.sleep(0.3)
            runs(1, "slow")
            return i
        if __name__ == "__main__":
            configure("executor")
            context = multiprocessing.get_context("{method}")
            options = {{}}
            if "{method}" == "spawn":
                options = dict(initializer=configure, initargs=("worker",), max_tasks_per_child=1)
            with concurrent.futures.ProcessPoolExecutor(2, mp_context=context, **options) as pool:
                print(list(pool.map(work, range(4))), flush=True)
            pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=context, **options)
            futures = [pool.submit(slow, i) for i in range(6)]
            futures[0].result()
            pool.shutdown(wait=True, cancel_futures=True)
            print("ran", sum(not f.cancelled() for f in futures), flush=True)
        """,
        as_file=tmp_path / "executor.py",
    )
    assert ended.code == 0, ended.err
    ran = int(ended.out.rpartition("ran ")[2])
    assert ran >= 1, ended.out  # the first ran; what was queued behind it, mostly cancelled
    assert ended.runs == {"pooled": 4, "slow": ran}, ended.err


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


def _as_a_containers_first_process() -> list[str]:
    """The command that runs a program as PID 1 of a PID namespace of its own, as a container's
    first process runs (``CMD ["python", "app.py"]``); the test is skipped where none can be
    made (no ``unshare``, or no right to)."""
    for command in (
        ["unshare", "--pid", "--fork"],
        ["unshare", "--map-root-user", "--pid", "--fork"],
    ):
        try:
            made = subprocess.run(
                [*command, sys.executable, "-c", "import os; print(os.getpid())"],
                capture_output=True,
                text=True,
                timeout=HANG_GUARD_S,
            )
        except OSError:
            break
        if made.returncode == 0 and made.stdout.strip() == "1":
            return command
    pytest.skip("no PID namespace can be made here (unshare --pid)")


def test_sigterm_to_a_containers_first_process_keeps_its_telemetry_while_it_runs_on() -> None:
    """A PID namespace's first process (a container's, ``docker run image python app.py``) is
    never killed by a signal it has no handler for: SIGTERM's default action does nothing
    there, and the process runs on until its manager's SIGKILL (``docker stop`` after 10 s,
    Kubernetes after ``terminationGracePeriodSeconds``). Our handler shut telemetry down and
    delivered the default action, which did nothing: every run of the grace period (the
    requests still being served) was dropped. Now what had ended is flushed, and each run
    that ends from then on is exported as it ends, so the SIGKILL (``os._exit`` here: nothing
    more runs) loses none of them."""
    ended = run_child(
        """
        telemetry = configure("init")
        runs(1, "before")
        os.kill(os.getpid(), signal.SIGTERM)  # as docker stop sends it (we have a handler)
        time.sleep(0.5)
        runs(1, "after")
        print("pid", os.getpid(), "shut down", telemetry.is_shutdown, flush=True)
        os._exit(0)  # the grace period's SIGKILL: nothing more runs
        """,
        inside=_as_a_containers_first_process(),
    )
    assert ended.code == 0, ended.err
    assert "pid 1 shut down False" in ended.out, ended.out + ended.err
    assert ended.runs == {"before": 1, "after": 1}, ended.err


def test_a_second_sigterm_while_flushing_waits_for_the_flush() -> None:
    """A worker often gets SIGTERM twice within milliseconds (systemd signals the whole control
    group and the process manager forwards its own; a terminal's process group). The first
    handler put the default action back, so the second one killed the process mid-flush: the
    queued spans and the open run were lost, without a word. The second now waits for the
    same bounded shutdown, then the process dies of the signal."""
    ended = run_child(
        """
        os.environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = "3"  # one request per run
        configure("twice", shutdown_timeout_millis=30_000)
        runs(4)
        held_open("open")
        ready()
        """,
        send=signal.SIGTERM,
        again_after_s=0.05,
        delay_s=0.3,  # each request answered after 0.3 s: the second signal comes mid-flush
    )
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"run": 4, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1, ended.err


CUT_BY_CTRL_C = """
    os.environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = "4"  # about nine requests to flush
    telemetry = configure("interrupted", shutdown_timeout_millis=30_000)
    runs(10)
    async def cut():
        yield LLMCallStart(model="m", call_id="cut")
        print("ready", flush=True)
        await asyncio.sleep(3600)
        yield TextDelta(text="never")
    async def main():
        [_ async for _ in otel_wrapper(agent_name="cut")(cut())]
    def again():  # the second Ctrl-C, once the shutdown flushes (each request takes 0.3 s)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.daemon = True
        timer.start()
"""


@pytest.mark.parametrize("where", ["exit hook", "finally"])
def test_a_second_ctrl_c_while_shutting_down_waits_for_the_bounded_flush(where: str) -> None:
    """Ctrl-C cancels the run (``end_reason=cancelled``) and the program ends; a second Ctrl-C
    while the exit hook (or the application's ``finally: telemetry.shutdown()``) exported what
    was queued raised ``KeyboardInterrupt`` inside that shutdown and broke it off: the run cut
    short and every span still queued were lost, without a word. The interrupt now waits for
    the shutdown (bounded by ``shutdown_timeout_millis``) and is raised once it is done; the
    process still ends as an interrupted one does."""
    if where == "exit hook":
        ending = """
            import atexit
            atexit.register(again)  # after configure()'s: runs first, before its shutdown
            asyncio.run(main())
            """
    else:
        ending = """
            try:
                asyncio.run(main())
            finally:
                again()
                try:
                    telemetry.shutdown()
                except KeyboardInterrupt:
                    print("interrupted after the shutdown", telemetry.is_shutdown, flush=True)
                    raise
            """
    script = textwrap.dedent(CUT_BY_CTRL_C) + textwrap.dedent(ending)
    ended = run_child(script, send=signal.SIGINT, delay_s=0.3)
    assert ended.code == -signal.SIGINT, ended.err  # an interrupted program's exit, as it was
    assert ended.runs == {"run": 10, "cut": 1}, ended.err
    assert ended.end_reasons["cancelled"] == 1, ended.err
    if where == "finally":
        assert "interrupted after the shutdown True" in ended.out, ended.err


def test_ctrl_c_inside_asyncio_run_ends_the_run_of_every_task_cancelled_and_delivers() -> None:
    """Ctrl-C in ``asyncio.run()`` cancels its main task, and ``asyncio.run()`` then cancels
    every task left: each run open in a task ends ``cancelled`` and is exported at exit, as
    docs/export.md says; the process still ends as Python ends one an uncaught
    ``KeyboardInterrupt`` ended: killed by SIGINT."""
    ended = run_child(
        """
        configure("interrupted")
        async def slow():
            yield LLMCallStart(model="m", call_id="c")
            await asyncio.sleep(3600)
            yield LLMCallEnd(call_id="c")
        async def one(i):
            [_ async for _ in otel_wrapper(agent_name=f"task {i}")(slow())]
        async def main():
            tasks = [asyncio.create_task(one(i)) for i in range(3)]
            await asyncio.sleep(0.3)
            print("ready", flush=True)
            await asyncio.gather(*tasks)
        asyncio.run(main())
        """,
        send=signal.SIGINT,
    )
    assert ended.code == -signal.SIGINT, ended.err
    assert "KeyboardInterrupt" in ended.err, ended.err
    assert ended.runs == {"task 0": 1, "task 1": 1, "task 2": 1}, ended.err
    assert ended.end_reasons == {"cancelled": 3}, ended.err
    assert ended.chats == 3, ended.err


def test_a_second_sigterm_during_the_exit_shutdown_waits_then_runs_the_apps_handler() -> None:
    """An application's handler installed before ``configure()`` exits on SIGTERM; a second
    SIGTERM (a process group's and its manager's) arrived while the exit hook was shutting
    telemetry down: ours flushed again beside that shutdown, then ran the application's
    handler inside it, whose ``sys.exit`` broke the exit hook off mid-export ("Exception
    ignored in atexit callback", a traceback) and the spans still in flight were lost. Now
    the signal waits for the shutdown, then the application's handler runs; the exit code
    stays the application's."""
    ended = run_child(
        """
        calls = []
        def graceful(signum, frame):
            calls.append(signum)
            print("application handler", len(calls), flush=True)
            if len(calls) == 1:  # the manager's own SIGTERM, once the exit hook is under way
                again = threading.Timer(0.3, os.kill, (os.getpid(), signum))
                again.daemon = True  # not waited for before the exit hooks
                again.start()
            sys.exit(5)
        signal.signal(signal.SIGTERM, graceful)
        configure("twice", shutdown_timeout_millis=30_000)
        runs(2)
        held_open("open")  # ended by the exit hook's shutdown: exported as the signal comes
        ready()
        """,
        send=signal.SIGTERM,
        delay_s=1.0,  # each export answered after a second
    )
    assert ended.code == 5, ended.err
    assert ended.runs == {"run": 2, "open": 1}, ended.err
    assert "Traceback" not in ended.err, ended.err
    assert "application handler 2" in ended.out, ended.out + ended.err


def test_the_main_thread_exiting_during_a_signals_shutdown_waits_for_it() -> None:
    """A server that handles SIGTERM itself puts back the handler it found (ours) and raises
    the signal again as its last act (uvicorn does), then returns: the main thread reached the
    interpreter's exit while our thread was still shutting down, and the exit did not wait
    (that shutdown had unregistered its exit hook first), so the export was cut off with the
    interpreter: what was queued was lost, without a word. The exit now waits for that
    shutdown, then the process dies of the signal."""
    ended = run_child(
        """
        os.environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = "3"  # one request per run
        configure("raised", shutdown_timeout_millis=30_000)
        runs(4)
        held_open("open")
        signal.raise_signal(signal.SIGTERM)  # a server's last act, then the script ends
        time.sleep(0.1)  # (our thread is shutting down now)
        """,
        delay_s=0.3,  # each request answered after 0.3 s: the export outlasts the main thread
    )
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"run": 4, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1, ended.err


def test_a_handler_installed_after_configure_that_chains_to_ours_runs_once() -> None:
    """The application's handler installed after ``configure()`` that calls the one it
    replaced (ours) before returning: the queue is flushed and the process dies of the
    signal, with the application's handler run once, not again when the default action is
    delivered."""
    ended = run_child(
        """
        configure("chained")
        runs(3)
        held_open("open")
        ours = signal.getsignal(signal.SIGTERM)
        def mine(signum, frame):
            print("application handler", flush=True)
            ours(signum, frame)
        signal.signal(signal.SIGTERM, mine)
        ready()
        """,
        send=signal.SIGTERM,
    )
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.out.count("application handler") == 1, ended.out
    assert ended.runs == {"run": 3, "open": 1}, ended.err


def test_a_flush_cut_short_before_the_applications_handler_is_told() -> None:
    """With the application's handler installed before ``configure()``, the queue is flushed
    before it runs, within ``shutdown_timeout_millis``. A collector down or slow made that
    flush give up, and a handler that then ended the process (``os._exit``) lost the queued
    spans without a word. What was left is now told, with how many spans, before the
    handler runs."""
    ended = run_child(
        """
        def graceful(signum, frame):
            print("application cleanup", flush=True)
            os._exit(0)
        signal.signal(signal.SIGTERM, graceful)
        configure("down", shutdown_timeout_millis=1_000)
        runs(5)
        ready()
        """,
        send=signal.SIGTERM,
        env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{free_port()}/v1/traces"},
    )
    assert ended.code == 0, ended.err
    assert "application cleanup" in ended.out
    told = "did not finish within 1.0 s (is the collector reachable?): 15 span(s) not exported"
    assert told in ended.err, ended.err


def test_an_agent_still_streaming_when_its_run_is_ended_at_exit_adds_no_lost_spans() -> None:
    """A run in a daemon thread whose agent keeps streaming while the process exits: the
    shutdown ends the run (``end_reason=shutdown``), but its later events still started spans,
    orphans of the ended run that the provider, shut down, dropped: hundreds of spans counted
    and told as lost at shutdown, for a run that had been delivered whole. What the agent
    yields after its run was ended now passes through unrecorded."""
    ended = run_child(
        """
        configure("busy")
        started = threading.Event()
        async def busy():
            i = 0
            while True:
                yield LLMCallStart(model="m", call_id=f"c{i}")
                started.set()
                yield TextDelta(text="x")
                yield LLMCallEnd(call_id=f"c{i}")
                yield StepBoundary()
                i += 1
                await asyncio.sleep(0.001)  # steady, not a flood to drain at exit
        async def consume():
            [_ async for _ in otel_wrapper(agent_name="busy")(busy())]
        threading.Thread(target=lambda: asyncio.run(consume()), daemon=True).start()
        started.wait(10)
        time.sleep(0.2)
        """  # the script ends: the exit hook shuts down while the agent streams on
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"busy": 1}, ended.err
    assert ended.end_reasons == {"shutdown": 1}, ended.err
    assert "spans lost" not in ended.err, ended.err


def test_a_non_daemon_threads_run_streaming_at_exit_ends_as_it_would() -> None:
    """The main thread returns while another (not a daemon) still streams a run: the
    interpreter waits for that thread before its exit hooks, so the run ends as its agent ends
    it (``exhausted``, not ``shutdown``) and the exit hook delivers it."""
    ended = run_child(
        """
        configure("slow", console=False)
        started = threading.Event()
        async def slow():
            yield LLMCallStart(model="m", call_id="c")
            started.set()
            for _ in range(10):
                yield TextDelta(text="x")
                await asyncio.sleep(0.05)
            yield LLMCallEnd(call_id="c")
            yield StepBoundary()
        async def consume():
            [_ async for _ in otel_wrapper(agent_name="slow")(slow())]
        threading.Thread(target=lambda: asyncio.run(consume())).start()
        started.wait(10)
        """  # the script ends mid-stream
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"slow": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 1}, ended.err


# --- handlers installed after configure() and taken away again ------------------------------
LOOP_HANDLES_SIGTERM = {
    "loop.add_signal_handler": """
        async def handled(work):
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, lambda: print("loop handler", flush=True))
            await work()
        """,
    "anyio.open_signal_receiver": """
        import anyio
        async def handled(work):
            with anyio.open_signal_receiver(signal.SIGTERM):
                await work()
        """,
}
"""An event loop's own SIGTERM handling, installed after ``configure()`` and taken away when the
loop closes (``handled(work)`` awaits ``work()`` under it): asyncio's loop puts the default
action back, whatever it replaced."""


@pytest.mark.parametrize("installer", list(LOOP_HANDLES_SIGTERM))
def test_sigterm_after_an_event_loops_own_handling_ended_still_flushes(installer: str) -> None:
    """``loop.add_signal_handler`` (and what builds on it: anyio's signal receiver, hypercorn,
    aiohttp's ``run_app``) replaces our handler, and the loop's ``close()`` sets the default
    action, not the handler it found: a SIGTERM once ``asyncio.run()`` had returned killed the
    process with every queued span and the open run lost, untold. The default action put back
    while telemetry runs is now ours in front of it: flushed, then killed by the signal."""
    script = textwrap.dedent(LOOP_HANDLES_SIGTERM[installer]) + textwrap.dedent(
        """
        configure("after-loop")
        async def work():
            [_ async for _ in otel_wrapper(agent_name="in-loop")(agent())]
        asyncio.run(handled(work))
        runs(2)
        held_open("open")
        ready()
        """
    )
    ended = run_child(script, send=signal.SIGTERM)
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"in-loop": 1, "run": 2, "open": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 3, "shutdown": 1}, ended.err


def test_a_second_sigterm_during_the_exit_flush_after_the_loop_handled_the_first_waits() -> None:
    """A server on an event loop stops gracefully on SIGTERM (its loop's handler), returns, and
    the interpreter's exit flushes; a second SIGTERM meanwhile (a control group's and its
    manager's) met the default action the loop's ``close()`` had put back and killed the
    process mid-export: the runs still queued were lost. It now waits for that bounded
    shutdown, then takes the default action."""
    ended = run_child(
        """
        os.environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = "3"  # one request per run
        configure("graceful", shutdown_timeout_millis=30_000)
        async def serve():
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            for _ in range(4):
                [_ async for _ in otel_wrapper(agent_name="request")(agent())]
            print("ready", flush=True)
            await stop.wait()
            again = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
            again.daemon = True  # the manager's own SIGTERM, once the exit flush is under way
            again.start()
        asyncio.run(serve())
        """,  # the script ends: atexit shuts down, each request answered after 0.3 s
        send=signal.SIGTERM,
        delay_s=0.3,
    )
    assert ended.runs == {"request": 4}, ended.err
    assert ended.code == -signal.SIGTERM, ended.err  # the second signal's, once flushed


def test_a_sigterm_handler_installed_outside_python_before_configure_is_left_as_it_is() -> None:
    """``faulthandler.register(signal.SIGTERM)`` installs its handler outside Python, which
    Python's own table still shows as the default action: ``configure()`` replaced it with
    ours, and the stack dump the application asked for on SIGTERM never came. A signal
    handled outside Python is left as it is, as documented: the dump is written, then
    (``chain=True``) the default action ends the process."""
    ended = run_child(
        """
        import faulthandler
        faulthandler.register(signal.SIGTERM, chain=True)
        configure("dumps")
        ready()
        """,
        send=signal.SIGTERM,
    )
    assert ended.code == -signal.SIGTERM, ended.err
    assert "most recent call first" in ended.err, ended.err  # faulthandler's dump


DEFAULT_ACTION_PAST_SIGNAL_SIGNAL = {
    "from signal import signal": """
        from signal import signal as set_handler  # before configure(): the function itself
        def handled(work):
            set_handler(signal.SIGTERM, lambda signum, frame: None)
            work()
            set_handler(signal.SIGTERM, signal.SIG_DFL)
        """,
    "uvloop": """
        import uvloop  # before configure(): its loop keeps signal.signal as it found it
        def handled(work):
            async def main():
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, lambda: None)
                await asyncio.to_thread(work)
                loop.remove_signal_handler(signal.SIGTERM)  # the default action, by uvloop
            uvloop.run(main())
        """,
}
"""A handler installed after ``configure()``, then the default action put back, through a
reference to ``signal.signal`` taken before ``configure()`` stood in front of it."""


@pytest.mark.parametrize("setter", list(DEFAULT_ACTION_PAST_SIGNAL_SIGNAL))
def test_sigterm_after_a_default_action_set_past_signal_signal_still_flushes(setter: str) -> None:
    """Only calls through ``signal.signal`` itself were seen: code holding the function from
    before ``configure()`` (``from signal import signal``, uvloop's loop, which binds it at
    import) that put the default action back left the next SIGTERM to kill the process with
    every queued span and the open run lost, untold. Ours now goes back in front of a default
    action at the next span queued for export in the main thread."""
    script = textwrap.dedent(DEFAULT_ACTION_PAST_SIGNAL_SIGNAL[setter]) + textwrap.dedent(
        """
        configure("past-signal-signal")
        handled(lambda: runs(1, "handled"))
        runs(2)
        held_open("open")
        ready()
        """
    )
    ended = run_child(script, send=signal.SIGTERM)
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"handled": 1, "run": 2, "open": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 3, "shutdown": 1}, ended.err


@pytest.mark.parametrize("setter", list(DEFAULT_ACTION_PAST_SIGNAL_SIGNAL))
def test_sigterm_right_after_a_default_action_set_past_signal_signal_still_flushes(
    setter: str,
) -> None:
    """The default action put back past ``signal.signal`` (a reference to it from before
    ``configure()``) with no span queued in the main thread after it (the open run is in a
    thread of its own, the others had ended before): ours went back in front only at such a
    span, so the SIGTERM killed the process with the queued runs and the open one lost,
    untold. The default action asked for through any reference to ``signal.signal`` now
    installs ours at once: flushed, the open run ended, then killed by the signal."""
    script = textwrap.dedent(DEFAULT_ACTION_PAST_SIGNAL_SIGNAL[setter]) + textwrap.dedent(
        """
        configure("right-after")
        runs(2)
        handled(lambda: None)
        held_open("open")
        ready()
        """
    )
    ended = run_child(script, send=signal.SIGTERM)
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"run": 2, "open": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 2, "shutdown": 1}, ended.err


def test_a_reference_to_signal_signal_taken_while_telemetry_ran_still_works_after_it() -> None:
    """uvloop imported after ``configure()`` (uvicorn imports it as it starts) keeps the
    ``signal.signal`` it found, ours, for good, as does ``from signal import signal`` there:
    once telemetry was shut down (a lifespan's shutdown step), every call of it raised
    ``IndexError`` from agent-otel, the loop's ``remove_signal_handler`` at its close
    included. It now sets the handler as asked."""
    ended = run_child(
        """
        telemetry = configure("kept-reference")
        from signal import signal as set_handler
        import uvloop
        async def main():
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, lambda: None)
            [_ async for _ in otel_wrapper(agent_name="served")(agent())]
            telemetry.shutdown()
            print("removed", loop.remove_signal_handler(signal.SIGTERM), flush=True)
        uvloop.run(main())
        set_handler(signal.SIGHUP, signal.SIG_IGN)
        print("set", signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, flush=True)
        """
    )
    assert ended.code == 0, ended.err
    assert "removed True" in ended.out and "set True" in ended.out, ended.out + ended.err
    assert ended.runs == {"served": 1}, ended.err


# --- a real ASGI server ----------------------------------------------------------------------
SERVED = """
import socket, urllib.request
import uvicorn

telemetry = None
def start():
    global telemetry
    telemetry = configure("served", console=False)

async def streamed():
    yield LLMCallStart(model="m", call_id="s")
    for i in range(20):
        yield TextDelta(text=f"{i} ")
        if i == 2:
            print("ready", flush=True)  # mid-stream: the test sends the signal now
        await asyncio.sleep(0.05)
    yield Usage(input_tokens=10, output_tokens=2)
    yield LLMCallEnd(call_id="s")

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if CONFIGURE == "in-lifespan":
                    start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if CONFIGURE == "lifespan-shuts-down":
                    print("shut down", telemetry.shutdown(), telemetry.shutdown(), flush=True)
                await send({"type": "lifespan.shutdown.complete"})
                return
    for _ in range(2):  # two runs ended before the signal, queued
        [_ async for _ in otel_wrapper(agent_name="quick")(agent())]
    await send({"type": "http.response.start", "status": 200, "headers": []})
    async for event in otel_wrapper(agent_name="streamed")(streamed()):
        if isinstance(event, TextDelta):
            body = event.text.encode()
            await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b""})

if CONFIGURE != "in-lifespan":
    start()  # at import, before the server installs its own handlers
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]

def client():
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
                response.read()
            return
        except OSError:
            time.sleep(0.05)

def serve():
    threading.Thread(target=client, daemon=True).start()
    uvicorn.Server(uvicorn.Config(app, log_level="warning", loop=LOOP)).run(sockets=[sock])
"""


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
@pytest.mark.parametrize("configure", ["at-import", "in-lifespan", "lifespan-shuts-down"])
def test_sigterm_to_a_uvicorn_server_mid_stream_delivers_every_run(
    configure: str, loop: str
) -> None:
    """uvicorn handles SIGTERM itself: it lets the streaming response finish, runs the
    lifespan's shutdown, puts back the handler it found and raises the signal again.

    With ``configure()`` at import, that handler is ours: the signal's shutdown ran in our
    thread while the main thread went on to a normal exit, which did not wait for it (the
    shutdown had unregistered its exit hook), so the interpreter ended mid-export and often
    nothing at all arrived. With ``configure()`` in the lifespan's startup (inside uvicorn's
    handling), ours chained to uvicorn's: the queue was flushed, but the run that finished
    during the graceful drain was still queued when uvicorn's re-raised signal killed the
    process. Now the exit waits for the signal's shutdown, and a run that ends after a signal
    the application handles is exported as it ends. A lifespan that shuts telemetry down
    (twice) loses nothing either. Each way the process ends killed by the signal, on
    asyncio's loop as on uvloop's (uvicorn sets its handlers through ``signal.signal``)."""
    script = f"CONFIGURE = {configure!r}\nLOOP = {loop!r}\n" + SERVED + "serve()"
    ended = run_child(script, send=signal.SIGTERM, delay_s=0.05)
    assert ended.code == -signal.SIGTERM, ended.err
    assert ended.runs == {"quick": 2, "streamed": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 3}, ended.err  # the stream was finished
    if configure == "lifespan-shuts-down":
        assert "shut down True True" in ended.out, ended.out


def test_sigterm_to_a_pre_forking_servers_worker_mid_stream_delivers_every_run() -> None:
    """gunicorn with ``--preload`` and uvicorn's worker: the app (and ``configure()``) is
    imported in the master, which then installs its own handlers (replacing ours) and forks
    the workers; each worker resets them to the default action, then runs uvicorn, which puts
    that default back once it drained and raises the signal again. The master forwards its
    SIGTERM to the worker: neither our handler nor ``atexit`` ran there, and every span the
    worker recorded was lost, untold. Now a forked worker's first run puts our handler back in
    front of the one the worker has, as of an application's handler installed before
    ``configure()``: flushed, then drained run by run, then the worker dies of the signal.
    (The master and worker here do what gunicorn's do, without gunicorn.)"""
    ended = run_child(
        "CONFIGURE = 'at-import'\nLOOP = 'auto'\n"
        + SERVED
        + """
worker = 0
def forward(signum, frame):  # the master's handler, installed after the app's import
    os.kill(worker, signum)
signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGHUP, forward)
worker = os.fork()
if worker == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the worker resets the master's handlers
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    serve()
    sys.exit(0)
_, status = os.waitpid(worker, 0)
print("worker", os.waitstatus_to_exitcode(status), flush=True)
""",
        send=signal.SIGTERM,
        delay_s=0.05,
    )
    assert ended.code == 0, ended.err  # the master's own exit
    assert "worker -15" in ended.out, ended.out + ended.err
    assert ended.runs == {"quick": 2, "streamed": 1}, ended.err
    assert ended.end_reasons == {"exhausted": 3}, ended.err  # the stream was finished


# --- providers wired by hand ---------------------------------------------------------------
HAND_WIRED = """
import atexit
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter, MetricExportResult, PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

class Durations(MetricExporter):
    '''Prints the agent runs the meter provider's exports count, by agent name.'''
    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        for resource in metrics_data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == "gen_ai.invoke_agent.duration":
                        for point in metric.data.data_points:
                            name = point.attributes["gen_ai.agent.name"]
                            print("measured", name, point.count, flush=True)
        return MetricExportResult.SUCCESS
    def force_flush(self, timeout_millis=10_000):
        return True
    def shutdown(self, timeout_millis=30_000, **kwargs):
        pass

def hand_wired(**options):
    '''Providers the application builds itself: no configure(); the SDK flushes them at exit.'''
    tracer_provider = TracerProvider(**options)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    reader = PeriodicExportingMetricReader(Durations(), export_interval_millis=60_000)
    return tracer_provider, MeterProvider(metric_readers=[reader], **options)

def held_in_the_main_thread(name, **options):
    '''A run whose stream is never finished nor closed, on a loop never closed.'''
    async def main():
        stream = otel_wrapper(agent_name=name, **options)(agent())
        await stream.__anext__()
        return stream
    loop = asyncio.new_event_loop()
    return loop, loop.run_until_complete(main())
"""


@pytest.mark.parametrize("flush", ["at-build", "registered-by-hand"])
def test_runs_open_at_exit_on_providers_built_after_the_first_run_are_delivered(
    flush: str,
) -> None:
    """agent-otel's exit hook, which ends the runs still open on providers wired by hand, was
    registered once, at the first run. Providers built after that (the application's, after a
    run on another provider or on the global default) registered their exit flush later, so
    it ran first: the runs were ended into providers already shut down and lost, though the
    log said they were ended. Now a run start registers the hook again whenever an exit hook
    came after it, so it runs before the flush of every provider a run was started on."""
    build = (
        "tracer_provider, meter_provider = hand_wired()"
        if flush == "at-build"
        else "tracer_provider, meter_provider = hand_wired(shutdown_on_exit=False)\n"
        "atexit.register(meter_provider.shutdown)\n"
        "atexit.register(tracer_provider.shutdown)"
    )
    ended = run_child(
        HAND_WIRED
        + "\nruns(1, 'warm-up')\n"  # on the global default, a no-op: before the providers exist
        + build
        + """
wired = dict(tracer_provider=tracer_provider, meter_provider=meter_provider)
runs(2, "ended", **wired)
held_open("open-in-a-thread", **wired)
held = held_in_the_main_thread("open-in-main", **wired)
""",
    )
    assert ended.code == 0, ended.err
    expected = {"ended": 2, "open-in-a-thread": 1, "open-in-main": 1}
    assert ended.runs == expected, ended.err
    assert ended.end_reasons["shutdown"] == 2, ended.err
    assert "2 run(s) still open at interpreter exit were ended" in ended.err
    for name, count in expected.items():  # the runs ended at exit are measured too
        assert f"measured {name} {count}" in ended.out, ended.out + ended.err


@pytest.mark.parametrize(
    "flush",
    ["trace.get_tracer_provider().shutdown", "telemetry.tracer_provider.shutdown"],
    ids=["global", "configures"],
)
def test_runs_open_at_exit_survive_the_applications_own_exit_flush_after_configure(
    flush: str,
) -> None:
    """An application that registers its own exit flush after ``configure()`` (the SDK
    tutorials' ``atexit.register(provider.shutdown)``): ``atexit`` runs it before
    ``configure()``'s exit hook, whose shutdown then ended the runs still open into a
    provider already shut down: told ended, and lost. agent-otel's own exit hook, kept
    newer than the application's, now ends them first, counted as before."""
    ended = run_child(
        f"""
        import atexit
        from opentelemetry import trace
        telemetry = configure("own-flush")
        atexit.register({flush})
        runs(2)
        held_open("open")
        """
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"run": 2, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1, ended.err
    assert "1 run(s) still open at shutdown were ended" in ended.err, ended.err
    assert "spans were dropped" not in ended.err, ended.err


def test_a_sigterm_to_providers_wired_by_hand_loses_nothing_once_they_are_adopted() -> None:
    """Providers the application built itself get no SIGTERM handling (the middleware never
    sets process-wide state), and SIGTERM's default action skips every exit hook: the queued
    spans and the open runs are lost. ``Telemetry(tracer_provider, meter_provider)`` is the
    opt-in: ``configure()``'s handling of signals, exit and workers for those providers."""
    ended = run_child(
        HAND_WIRED
        + """
from agent_otel import Telemetry
tracer_provider, meter_provider = hand_wired()
telemetry = Telemetry(tracer_provider, meter_provider, shutdown_timeout_millis=30_000)
wired = dict(tracer_provider=tracer_provider, meter_provider=meter_provider)
runs(3, "ended", **wired)
held_open("open", **wired)
ready()
""",
        send=signal.SIGTERM,
    )
    assert ended.code == -signal.SIGTERM, ended.err  # killed by the signal, as it would have
    assert ended.runs == {"ended": 3, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1, ended.err
    assert "measured ended 3" in ended.out and "measured open 1" in ended.out, ended.out


# --- providers the application shuts down itself ---------------------------------------------

LIFESPAN = """
tracer_provider, meter_provider = hand_wired()
wired = dict(tracer_provider=tracer_provider, meter_provider=meter_provider)
runs(2, "ended", **wired)
held_open("open-in-a-thread", **wired)
held = held_in_the_main_thread("open-in-main", **wired)
"""
"""An application's runs on its own providers: two ended, two still open when it stops."""


@pytest.mark.parametrize("recipe", ["end_open_runs", "telemetry"])
def test_an_applications_own_shutdown_step_delivers_the_runs_still_open(recipe: str) -> None:
    """A server's lifespan shutdown step (or a test fixture's teardown) that shuts its own
    providers down while runs are open: ended after it, they went nowhere. Ending them first
    (``agent_otel.end_open_runs(tracer_provider)``, or shutting down through
    ``Telemetry(tracer_provider, meter_provider)``) exports them, ended ``shutdown``, and the
    exit hook finds nothing left to end."""
    step = (
        "from agent_otel import end_open_runs\n"
        "print('ended', end_open_runs(tracer_provider), flush=True)\n"
        "tracer_provider.shutdown()\nmeter_provider.shutdown()"
        if recipe == "end_open_runs"
        else "from agent_otel import Telemetry\n"
        "telemetry = Telemetry(tracer_provider, meter_provider)\n"
        "telemetry.shutdown()\nprint('ended', telemetry.runs_ended_at_shutdown, flush=True)"
    )
    ended = run_child(HAND_WIRED + LIFESPAN + step)
    assert ended.code == 0, ended.err
    expected = {"ended": 2, "open-in-a-thread": 1, "open-in-main": 1}
    assert ended.runs == expected, ended.err
    assert ended.end_reasons["shutdown"] == 2, ended.err
    assert "ended 2" in ended.out.splitlines(), ended.out
    for name, count in expected.items():  # measured before the meter provider stopped
        assert f"measured {name} {count}" in ended.out, ended.out + ended.err
    assert "interpreter exit" not in ended.err and "dropped" not in ended.err, ended.err


def test_configures_shutdown_step_delivers_the_runs_still_open() -> None:
    """``configure()``'s telemetry owns its providers: its ``shutdown()`` in a lifespan's
    shutdown step ends the runs still open first, counts them, and exports them."""
    ended = run_child(
        HAND_WIRED  # (its held_in_the_main_thread)
        + """
telemetry = configure("lifespan", console=False)
runs(2, "ended")
held_open("open-in-a-thread")
held = held_in_the_main_thread("open-in-main")
telemetry.shutdown()
print("ended", telemetry.runs_ended_at_shutdown, flush=True)
"""
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"ended": 2, "open-in-a-thread": 1, "open-in-main": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 2, ended.err
    assert "ended 2" in ended.out.splitlines(), ended.out
    assert "dropped" not in ended.err, ended.err


def test_runs_ended_into_a_provider_already_shut_down_are_told_not_silently_lost() -> None:
    """The same shutdown step without ending the runs first: a run that ends afterwards (its
    stream finishing, or the exit hook ending it) writes into a provider that drops every span.
    That used to be silent (the exit hook even said it ended them). Nothing can end them at the
    provider's own shutdown without patching it, so the loss is told as it is seen, once per
    provider, naming the remedy; the runs ended before the shutdown are delivered."""
    ended = run_child(
        HAND_WIRED
        + LIFESPAN
        + """
tracer_provider.shutdown()
async def finish():
    [_ async for _ in held[1]]  # the main thread's run goes on to its end
held[0].run_until_complete(finish())
from agent_otel.recording import _open
print("lost", _open.runs_lost_to_shutdown(), flush=True)
"""
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"ended": 2}, ended.err
    assert "lost 1" in ended.out.splitlines(), ended.out  # the exit hook's run: after this
    told = "a run ended after its tracer provider was shut down: its spans were dropped"
    assert ended.err.count(told) == 1, ended.err  # once per provider
    assert "agent_otel.end_open_runs(tracer_provider)" in ended.err


# --- fork ------------------------------------------------------------------------------------
def test_a_forked_worker_exports_under_an_instance_id_of_its_own() -> None:
    """A pre-forking server's workers inherit the master's providers; exported under the
    master's ``service.instance.id``, their cumulative metric streams would be one stream
    written by several processes. Each forked process has an id of its own, on every
    provider ``configure()`` built."""
    ended = run_child(
        """
        telemetry = configure("prefork")
        def ids():
            return {
                telemetry.tracer_provider.resource.attributes["service.instance.id"],
                telemetry.meter_provider._sdk_config.resource.attributes["service.instance.id"],
                telemetry.logger_provider.resource.attributes["service.instance.id"],
            }
        master = ids()
        forked_in_a_run(lambda: print("distinct", len(master | ids()) == 2 == 1 + len(ids())))
        """
    )
    assert ended.code == 0, ended.err
    assert "distinct True" in ended.out, ended.out + ended.err


def test_a_child_forked_off_a_thread_ends_and_delivers_when_its_thread_does() -> None:
    """A child forked off a thread other than the main one ends when that thread ends (its
    only thread: no exit hook runs there). The SDK's export threads and ours, started again
    in the child, outlived it: the child never ended, its parent waited for it forever, and
    its runs were never sent. Now it delivers them (the one still open ended) and ends with
    status 0, as it would have without telemetry."""
    ended = run_child(
        """
        configure("forked-off-a-thread")
        runs(1, "parent")
        held = []
        def fork_here():
            pid = os.fork()
            if pid == 0:
                runs(2, "child")
                held.append(otel_wrapper(agent_name="open")(agent()))  # open at the end
                asyncio.new_event_loop().run_until_complete(held[0].__anext__())
                sys.exit(3)  # in a thread: its status is not the process's
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    print("child", os.waitstatus_to_exitcode(status), flush=True)
                    return
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            print("child hung", flush=True)
        thread = threading.Thread(target=fork_here)
        thread.start()
        thread.join()
        """
    )
    assert ended.code == 0, ended.err
    assert "child 0" in ended.out, ended.out + ended.err
    assert ended.runs == {"parent": 1, "child": 2, "open": 1}, ended.err
    assert ended.end_reasons["shutdown"] == 1, ended.err


@pytest.mark.parametrize("together", [False, True], ids=["in_turn", "at_once"])
def test_a_forked_child_exports_on_a_connection_of_its_own(together: bool) -> None:
    """The OTLP/HTTP exporters keep a finished request's connection open for the next one,
    as a Collector lets them. A child forked after the parent exported got the same socket:
    its requests went on the parent's connection (in turn, each process's requests came
    from one client port), and when both exported at once their bytes mixed on it, a
    request the collector could not read. Each forked child now opens its own."""
    ended = run_child(
        f"""
        telemetry = configure("keep-alive")
        runs(1, "before")
        telemetry.force_flush()  # its connection is now kept open for the next request
        pid = os.fork()
        who = "child" if pid == 0 else "parent"
        if pid != 0 and not {together}:
            os.waitpid(pid, 0)
        for _ in range(10):
            runs(2, who)
            telemetry.force_flush()
        if pid == 0:
            sys.exit(0)
        if {together}:
            os.waitpid(pid, 0)
        """,
        keep_alive=True,
    )
    assert ended.code == 0, ended.err
    assert ended.runs == {"before": 1, "child": 20, "parent": 20}, ended.err
    assert ended.shared == 0 and ended.garbled == 0, (ended.shared, ended.garbled)


def test_a_forked_worker_configuring_itself_replaces_what_it_inherited() -> None:
    """A pre-forking server's worker that calls ``configure()`` again (gunicorn's
    ``post_fork``) was told "configure() was already called in this process", which was the
    master's call; the inherited providers stayed global and the worker's service name went
    unused. The worker's own now replace them: its runs are exported under its name, without
    a warning; what was bound to the inherited ones before the fork (the master's open run)
    still leaves once; nothing twice. A second call in the worker itself is still told."""
    ended = run_child(
        """
        from opentelemetry import trace, metrics, _logs
        configure("master")
        def child():
            worker = configure("worker")
            print("global", trace.get_tracer_provider() is worker.tracer_provider,
                  metrics.get_meter_provider() is worker.meter_provider,
                  _logs.get_logger_provider() is worker.logger_provider, flush=True)
            runs(1, "child")
            print("again", configure("again").global_tracer_provider, flush=True)
        forked_in_a_run(child)
        """
    )
    assert ended.code == 0, ended.err
    assert "global True True True" in ended.out, ended.out + ended.err
    assert "again False" in ended.out, ended.out
    assert ended.err.count("configure() was already called in this process") == 1, ended.err
    assert ended.services == {
        "invoke_agent parent @ master": 1,
        "invoke_agent child @ worker": 1,
    }, ended.err
    assert ended.chats == 3, ended.err


def test_a_forked_child_of_a_process_serving_prometheus_exits_and_delivers() -> None:
    """``configure(prometheus_port=...)`` serves the scrape endpoint from a thread of the
    process that called it. A forked child (a ``multiprocessing`` worker, a pre-forking
    server's worker, a raw ``os.fork()``) has no such thread, and its telemetry's shutdown at
    exit waited for that thread's serving loop to stop: forever. The child never ended, so its
    parent waited for it forever, and what the child recorded was never sent. The child now
    leaves the endpoint to the parent, which still serves it."""
    ended = run_child(
        """
        import multiprocessing, urllib.request
        telemetry = configure("scraped", prometheus_port=0)
        port = telemetry.prometheus_port
        def work():
            runs(1, "worker")
        worker = multiprocessing.get_context("fork").Process(target=work)
        worker.start()
        worker.join(20)
        print("worker exit", worker.exitcode, flush=True)
        if worker.exitcode is None:
            worker.kill()
            worker.join()
        pid = os.fork()
        if pid == 0:
            print("child's endpoint", telemetry.prometheus_port, flush=True)
            runs(1, "child")
            sys.exit(0)
        for _ in range(200):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        print("child exit", os.waitstatus_to_exitcode(status) if done else None, flush=True)
        if not done:
            os.kill(pid, signal.SIGKILL)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as scraped:
            print("parent scraped", scraped.status, flush=True)
        """
    )
    assert ended.code == 0, ended.err
    assert "worker exit 0" in ended.out, ended.out + ended.err
    assert "child exit 0" in ended.out, ended.out + ended.err
    assert "child's endpoint None" in ended.out, ended.out
    assert "parent scraped 200" in ended.out, ended.out + ended.err
    assert ended.runs == {"worker": 1, "child": 1}, ended.err


def test_a_forked_child_reports_only_its_own_metrics() -> None:
    """The meter provider's aggregations were copied into the child, whose reader reported the
    parent's runs (tokens, durations) again as its own: every total summed over the
    processes of a pre-forking server counted them twice."""
    ended = run_child(
        """
        import json
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        reader = InMemoryMetricReader()
        configure("fork-metrics", metric_readers=[reader])
        runs(2, "parent")
        def child():
            runs(1, "child")
            counts = {}
            for resource in reader.get_metrics_data().resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name == "gen_ai.invoke_agent.duration":
                            for point in metric.data.data_points:
                                name = point.attributes["gen_ai.agent.name"]
                                counts[name] = counts.get(name, 0) + point.count
            print("child counts", json.dumps(counts, sort_keys=True), flush=True)
        forked_in_a_run(child)
        """
    )
    assert ended.code == 0, ended.err
    assert 'child counts {"child": 1}' in ended.out, ended.out + ended.err


def test_a_child_forked_while_a_parent_thread_makes_instruments_runs_and_exits() -> None:
    """Each wrapper made asks the meter provider's meter for its instruments, under the SDK
    meter's registration lock; a parent thread making a wrapper as another forks (a server
    handling requests while it forks a worker) left that lock held in the child, forever:
    the child's first run hung. (The SDK renews its providers' own locks in a forked child,
    not each meter's.) Here the parent holds it across the fork, as such a thread would."""
    ended = run_child(
        """
        telemetry = configure("fork-locks")
        runs(1, "parent")  # the meters exist
        held = [meter._instrument_registration_lock for meter in
                telemetry.meter_provider._meters.values()]
        for lock in held:
            lock.acquire()  # a parent thread inside create_histogram() at the fork
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)  # a hang guard: the child dies of SIGALRM
            runs(1, "child")
            sys.exit(0)
        for lock in held:
            lock.release()
        _, status = os.waitpid(pid, 0)
        print("child status", status, flush=True)
        """
    )
    assert ended.code == 0, ended.err
    assert "child status 0" in ended.out, ended.out + ended.err
    assert ended.runs == {"parent": 1, "child": 1}, ended.err


def test_a_child_forked_while_a_parent_thread_holds_a_lock_of_ours_runs_and_exits() -> None:
    """agent-otel's own module locks (a setting told once, the SDK's internal-metrics switch
    while an exporter is made, LangSmith's held runs) were copied held into a child forked
    while a parent thread was inside them: the child, where that thread does not exist, hung
    at its first warning. Each is a ``ChildLock`` now, which a forked child gets afresh."""
    ended = run_child(
        """
        from agent_otel import _guard
        from agent_otel.exporting import _tally
        from agent_otel.standdown import _langsmith
        configure("fork-own-locks")
        held = [_guard._told_lock, _tally._env_lock, _langsmith._held_lock]
        for lock in held:
            lock.__enter__()  # a parent thread inside each at the fork
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)  # a hang guard: the child dies of SIGALRM
            _guard.warn_once("AGENT_OTEL_FORK_PROBE", "1", "agent-otel: told in the child")
            with _tally.internal_metrics_on():
                pass
            with _langsmith._held_lock:
                pass
            runs(1, "child")
            sys.exit(0)
        for lock in held:
            lock.__exit__(None, None, None)
        _, status = os.waitpid(pid, 0)
        print("child status", status, flush=True)
        """
    )
    assert ended.code == 0, ended.err
    assert "child status 0" in ended.out, ended.out + ended.err
    assert "told in the child" in ended.err
    assert ended.runs == {"child": 1}, ended.err


def test_a_forked_child_never_passes_on_the_runs_the_parents_tail_sampler_holds() -> None:
    """The tail sampler's held spans were copied into the child, whose shutdown passes on
    the runs still going: the parent's spans were exported twice, under the same ids."""
    ended = run_child(
        """
        from agent_otel import TailSamplingPolicy
        configure("fork-sampled", tail_sampling=TailSamplingPolicy(keep_ratio=1.0))
        forked_in_a_run(lambda: runs(1, "child"))
        """
    )
    assert ended.code == 0, ended.err
    assert "child done" in ended.out, ended.err
    assert ended.runs == {"parent": 1, "child": 1}, ended.err
    assert ended.chats == 3, ended.err  # the parent's two calls and the child's one, once each


def test_a_forked_childs_terminal_view_shows_only_its_own() -> None:
    """The terminal view's pending trees and token totals were copied into the child, which
    printed the parent's unfinished run and the parent's tokens again at its exit."""
    ended = run_child(
        """
        configure("fork-console", console=True, console_stream=sys.stdout)
        runs(1, "before")
        forked_in_a_run(lambda: None)
        """,
        env={"OTEL_TRACES_EXPORTER": "console"},
    )
    assert ended.code == 0, ended.err
    child = ended.out.split("child starts", 1)[1].split("child done", 1)[0]
    assert "trace " not in child and "token usage" not in child, child
    parent = ended.out.split("child done", 1)[1]
    assert "invoke_agent parent" in parent and "token usage" in parent, parent

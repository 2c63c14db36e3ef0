"""Real servers and worker pools: each run a worker ended is delivered once, whatever ends it.

The servers run as users run them (``python -m celery ... worker``, ``python -m gunicorn``), in
processes of their own, started with each signal's default action (``signalled_child``),
exporting over OTLP/HTTP to one loopback receiver shared by the module (each test's runs carry
an agent name of its own). The batch delay is a minute: what a worker
ended is still queued when its life ends, so only the path under test can deliver it.
Timeouts are hang guards, not performance claims.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks._process import free_port

from otlp_receiver import Received, receiving
from signalled_child import ended_within, started_plainly

pytestmark = pytest.mark.heavy  # real servers in child processes
HANG_GUARD_S = 60

AGENT = """
import asyncio, os
from agent_contract.protocol import LLMCallEnd, LLMCallStart, StepBoundary, TextDelta, Usage
from agent_otel import configure, otel_wrapper

async def agent(sleep_s):
    yield LLMCallStart(model="m", call_id="c")
    yield TextDelta(text="hi")
    await asyncio.sleep(sleep_s)
    yield Usage(input_tokens=10, output_tokens=2)
    yield LLMCallEnd(call_id="c")
    yield StepBoundary()

def one_run(name, sleep_s=0.0):
    async def main():
        [_ async for _ in otel_wrapper(agent_name=name)(agent(sleep_s))]
    asyncio.run(main())
"""


@pytest.fixture(scope="module")
def received() -> Iterator[Received]:
    with receiving() as received:
        yield received


def serving(command: list[str], tmp_path: Path, received: Received) -> subprocess.Popen[str]:
    """``command`` started in ``tmp_path``, exporting to ``received`` with this checkout's
    code, its output (both streams) read as text."""
    return subprocess.Popen(
        started_plainly(command),
        cwd=tmp_path,
        env={**received.child_environment(), "PYTHONPATH": os.pathsep.join(sys.path)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def runs_of(received: Received, name: str) -> Counter[str]:
    """The end reasons of the runs received under the agent name ``name``."""
    return Counter(
        str(attributes.get("agent_otel.end_reason"))
        for attributes in received.named("invoke_agent")
        if attributes.get("gen_ai.agent.name") == name
    )


def wait_for(path: Path, count: int, process: subprocess.Popen[str]) -> None:
    """Until ``path`` has ``count`` lines (a task's or request's end, written by the app)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not path.exists() or len(path.read_text().split()) < count:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)


def stop(process: subprocess.Popen[str], signum: signal.Signals) -> tuple[int, str]:
    process.send_signal(signum)
    try:
        out, _ = ended_within(process, HANG_GUARD_S)
    finally:
        process.kill()
    return process.returncode, out


# --- Celery's prefork pool (billiard) --------------------------------------------------------
CELERY_APP = """
from celery import Celery, signals
HERE = os.path.dirname(os.path.abspath(__file__))
app = Celery("tasks", broker="filesystem://")
queue = os.path.join(HERE, "queue")
app.conf.broker_transport_options = {
    "data_folder_in": queue, "data_folder_out": queue, "polling_interval": 0.05,
    "control_folder": os.path.join(HERE, "control"),
}
if CONFIGURE == "at-import":  # imported by the worker's master, before it forks its pool
    configure("tasks")
else:
    signals.worker_process_init.connect(lambda **kwargs: configure("tasks"), weak=False)

@app.task
def run(name):
    one_run(name)
    with open(os.path.join(HERE, "done"), "a") as done:
        done.write(f"{os.getpid()}\\n")
"""


CELERY_WORKER = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool", "prefork"]
CELERY_WORKER += ["--concurrency", "2", "--loglevel", "warning", "--without-heartbeat"]


@pytest.mark.parametrize("configure", ["at-import", "worker_process_init"])
def test_a_celery_prefork_workers_warm_shutdown_delivers_every_tasks_run(
    configure: str, received: Received, tmp_path: Path
) -> None:
    """Celery's prefork pool ends each child with ``os._exit`` from inside billiard's worker
    loop: neither ``atexit`` nor ``multiprocessing``'s finalizers run there. A warm shutdown
    (SIGTERM to the worker) lost every span the children had queued, untold. Now Celery's
    ``worker_process_shutdown`` signal, sent in the child just before, shuts telemetry down:
    each task's run arrives once, and the worker exits as it would have."""
    name = f"celery-{uuid.uuid4().hex[:8]}"
    (tmp_path / "queue").mkdir()
    (tmp_path / "tasks.py").write_text(
        f"CONFIGURE = {configure!r}\n" + AGENT + textwrap.dedent(CELERY_APP)
    )
    process = serving(CELERY_WORKER, tmp_path, received)
    from celery import Celery

    sender = Celery("sender", broker="filesystem://")
    queue = str(tmp_path / "queue")
    sender.conf.broker_transport_options = {
        "data_folder_in": queue,
        "data_folder_out": queue,
        "control_folder": str(tmp_path / "control"),
    }
    for _ in range(3):
        sender.send_task("tasks.run", args=[name])
    wait_for(tmp_path / "done", 3, process)
    code, out = stop(process, signal.SIGTERM)
    assert code == 0, out
    assert runs_of(received, name) == {"exhausted": 3}, out
    assert "agent-otel" not in out, out


# --- gunicorn --------------------------------------------------------------------------------
WSGI_APP = """
import time
HERE = os.path.dirname(os.path.abspath(__file__))
telemetry = configure("served")  # at import: the master's with --preload, else the worker's

def app(environ, start_response):
    name = environ["QUERY_STRING"]
    with open(os.path.join(HERE, "started"), "a") as started:
        started.write(f"{name}\\n")
    one_run(name, 3600 if environ["PATH_INFO"] == "/hang" else 0.0)
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"done"]

async def asgi(scope, receive, send):  # a hanging request blocks the event loop itself
    if scope["type"] != "http":
        return
    name, hang = scope["query_string"].decode(), scope["path"] == "/hang"
    with open(os.path.join(HERE, "started"), "a") as started:
        started.write(f"{name}\\n")
    async for event in otel_wrapper(agent_name=name)(agent(0.0)):
        if hang:
            time.sleep(3600)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"done"})
"""


def gunicorn(tmp_path: Path, received: Received, *options: str) -> subprocess.Popen[str]:
    (tmp_path / "served.py").write_text(AGENT + textwrap.dedent(WSGI_APP))
    server = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{free_port()}"]
    server += [
        "--workers",
        "1",
        "--graceful-timeout",
        "5",
        "--control-socket",
        str(tmp_path / "ctl"),
    ]
    return serving([*server, *options], tmp_path, received)


def port_of(process: subprocess.Popen[str]) -> int:
    arguments = list(process.args)  # type: ignore[arg-type]
    return int(str(arguments[arguments.index("--bind") + 1]).rsplit(":", 1)[1])


def request(process: subprocess.Popen[str], path: str) -> None:
    """GET ``path`` of the server ``process`` runs, in a thread (the answer is not awaited)."""
    port = port_of(process)

    def get() -> None:
        for _ in range(400):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30):
                    return
            except urllib.error.URLError as error:  # not listening yet: again
                if not isinstance(error.reason, ConnectionRefusedError):
                    return
                time.sleep(0.05)
            except OSError:  # the worker died with the request: not sent again
                return

    threading.Thread(target=get, daemon=True).start()


def hold(process: subprocess.Popen[str], path: str) -> socket.socket:
    """GET ``path`` on a connection left open, neither read nor closed."""
    client = socket.create_connection(("127.0.0.1", port_of(process)), timeout=HANG_GUARD_S)
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    return client


@pytest.mark.parametrize(
    ("worker", "preload", "cut_short"),
    [("sync", True, "cancelled"), ("sync", False, "cancelled"), ("uvicorn", True, "shutdown")],
)
def test_a_gunicorn_worker_killed_by_its_timeout_delivers_its_runs(
    worker: str, preload: bool, cut_short: str, received: Received, tmp_path: Path
) -> None:
    """A request past gunicorn's ``--timeout``: the master sends the worker SIGABRT, whose
    handler (the worker's) exits at once, and SIGKILL within a second, while the exit still
    waits on the client's socket. Every span the worker had queued was lost, untold, the runs it
    completed before included. Now ours is chained in front of the worker's handler: the queue
    is flushed first, and the run the exit cuts short is exported as it ends (cancelled).
    The uvicorn worker resets SIGABRT to its default action, so it died at once: in a forked
    worker ours goes in front of that too, and the run it hangs in is ended (shutdown)."""
    name = f"gunicorn-{uuid.uuid4().hex[:8]}"
    app = (
        ["served:app"]
        if worker == "sync"
        else ["-k", "uvicorn_worker.UvicornWorker", "served:asgi"]
    )
    options = ["--timeout", "1", *(["--preload"] if preload else []), *app]
    process = gunicorn(tmp_path, received, *options)
    request(process, f"/quick?{name}")
    wait_for(tmp_path / "started", 1, process)
    held = hold(process, f"/hang?{name}")  # a client that keeps its connection (a proxy's)
    deadline = time.monotonic() + 15
    while sum(runs_of(received, name).values()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the timeout's kill: a second or two
    code, out = stop(process, signal.SIGTERM)
    held.close()
    assert code == 0, out
    assert runs_of(received, name) == {"exhausted": 1, cut_short: 1}, out
    ours = [line for line in out.splitlines() if "agent-otel" in line]
    assert all("still open at shutdown were ended" in line for line in ours), out

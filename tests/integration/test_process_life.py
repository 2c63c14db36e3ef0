"""Nothing lost when the process ends, forks or meets a value too big to send (issue 26).

Real child processes export to a real OTLP receiver on loopback (OTLP/HTTP decoded with the
real protobuf messages; OTLP/gRPC through grpcio with its default 4 MiB message limit). Each
child sets a 60 s batch delay, so what it ended is still queued when its life ends: only the
path under test can deliver it. Timeouts are hang guards, not performance claims.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _otlp_grpc import otlp_grpc_receiver
from _support import REPO
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otlp_receiver import POLL
from signalled_child import (
    SHOWS_ITS_THREADS,
    ended_within,
    first_line_within,
    started_plainly,
)

pytestmark = pytest.mark.heavy

HANG_GUARD_S = 60
PYTHONPATH = os.pathsep.join([str(REPO / "src"), str(REPO / "contract")])


class Spans:
    """Spans received over OTLP/HTTP: name, attributes, parent, times, and the exporting pid."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[dict[str, Any]] = []

    def add(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for resource in request.resource_spans:
                pid = next(
                    (a.value.int_value for a in resource.resource.attributes
                     if a.key == "process.pid"), 0,
                )  # fmt: skip
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        self.items.append(
                            {
                                "name": span.name,
                                "attributes": {a.key: a.value for a in span.attributes},
                                "id": span.span_id,
                                "parent": span.parent_span_id,
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                                "pid": pid,
                            }
                        )

    def names(self) -> list[str]:
        with self.lock:
            return [s["name"] for s in self.items]


@pytest.fixture
def receiver() -> Iterator[tuple[str, Spans]]:
    spans = Spans()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/v1/traces":
                spans.add(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


PRELUDE = """
import asyncio, os, signal, sys, threading, time
from agent_contract.protocol import LLMCallStart, LLMCallEnd, StepBoundary, TextDelta, ToolCall
from agent_contract.protocol import FunctionCall
from agent_otel import configure, otel_wrapper

def idle():
    while True:
        time.sleep(0.05)

def runs(n, name="run"):
    async def agent():
        yield LLMCallStart(model="m", call_id="c")
        yield TextDelta(text="hi")
        yield LLMCallEnd(call_id="c")
        yield StepBoundary()
    async def main():
        for _ in range(n):
            [_ async for _ in otel_wrapper(agent_name=name)(agent())]
    asyncio.run(main())
"""


def child(script: str, endpoint: str, **popen: Any) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.environ.get("LIFE_PYTHONPATH")
        or os.pathsep.join([str(REPO / "src"), str(REPO / "contract")]),
        "OTEL_BSP_SCHEDULE_DELAY": "60000",  # nothing leaves before the life event
        "OTEL_METRIC_EXPORT_INTERVAL": "60000",
        "ENDPOINT": endpoint,
    }
    env.pop("OTEL_TRACES_EXPORTER", None)
    code = SHOWS_ITS_THREADS + PRELUDE + textwrap.dedent(script)
    return subprocess.Popen(
        started_plainly([sys.executable, "-c", code]),  # as from a terminal: no signal ignored
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def wait_ready(process: subprocess.Popen[str]) -> None:
    line = first_line_within(process, HANG_GUARD_S)
    assert line.strip() == "ready", (line, process.stderr.read() if process.stderr else "")


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """The child's exit code, stdout and stderr once it has ended."""
    out, err = ended_within(process, HANG_GUARD_S)
    return process.returncode, out, err


def terminated(script: str, endpoint: str) -> tuple[int, str, str]:
    """Run ``script`` in a child until it prints "ready", then SIGTERM it: how it ended."""
    process = child(script, endpoint)
    wait_ready(process)
    process.send_signal(signal.SIGTERM)
    return finish(process)


# --- SIGTERM ---------------------------------------------------------------------------------
def test_sigterm_flushes_queued_spans_then_dies_of_the_signal(
    receiver: tuple[str, Spans],
) -> None:
    endpoint, spans = receiver
    code, _, err = terminated(
        """
        configure("sigterm", endpoint=os.environ["ENDPOINT"])
        runs(20)
        print("ready", flush=True)
        idle()
        """,
        endpoint,
    )
    assert code == -signal.SIGTERM, err  # the default action, after the flush
    assert len(spans.names()) == 60, err  # agent, step and chat of each of 20 runs
    assert "lost" not in err


def test_sigterm_chains_the_applications_handler(receiver: tuple[str, Spans]) -> None:
    endpoint, spans = receiver
    code, out, err = terminated(
        """
        def graceful(signum, frame):
            print("app handler", signum, flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, graceful)
        configure("chained", endpoint=os.environ["ENDPOINT"])
        runs(20)
        print("ready", flush=True)
        idle()
        """,
        endpoint,
    )
    assert code == 3, err  # the application's own exit
    assert f"app handler {int(signal.SIGTERM)}" in out
    assert len(spans.names()) == 60, err


def test_an_ignored_sigterm_stays_ignored(receiver: tuple[str, Spans]) -> None:
    endpoint, spans = receiver
    code, out, err = terminated(
        """
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        configure("ignored", endpoint=os.environ["ENDPOINT"])
        runs(2)
        print("ready", flush=True)
        sys.stdin.read() if False else time.sleep(1.0)
        print(signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, flush=True)
        """,
        endpoint,
    )
    assert code == 0 and out.strip() == "True", err
    assert len(spans.names()) == 6  # flushed by the normal exit


def test_sigterm_while_the_interrupted_code_holds_the_loss_lock_does_not_deadlock(
    receiver: tuple[str, Spans],
) -> None:
    """The handler runs in the main thread between two bytecodes, possibly inside a lock the
    pipeline takes (here the lost-span counter's, held while a span ends): it takes none."""
    endpoint, spans = receiver
    process = child(
        """
        telemetry = configure("locked", endpoint=os.environ["ENDPOINT"])
        runs(4)
        with telemetry._loss._lock:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, inside the lock
            time.sleep(0.5)
        idle()
        """,
        endpoint,
    )
    code, _, err = finish(process)
    assert code == -signal.SIGTERM, err
    assert len(spans.names()) == 12, err


@pytest.mark.parametrize("chained_later", [False, True])
def test_sigterm_after_shutdown_keeps_its_default_action(
    chained_later: bool, receiver: tuple[str, Spans]
) -> None:
    """After ``shutdown()`` the previous handler is back; a handler the application installed
    later and that chains to ours still ends in the default action."""
    endpoint, _ = receiver
    code, _, err = terminated(
        f"""
        telemetry = configure("after", endpoint=os.environ["ENDPOINT"])
        if {chained_later}:
            ours = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, lambda n, f: ours(n, f))
        telemetry.shutdown()
        print("ready", flush=True)
        idle()
        """,
        endpoint,
    )
    assert code == -signal.SIGTERM, err


# --- fork ------------------------------------------------------------------------------------
def test_parent_and_forked_child_each_deliver_and_count_only_their_own(
    receiver: tuple[str, Spans],
) -> None:
    endpoint, spans = receiver
    process = child(
        """
        telemetry = configure("fork", endpoint=os.environ["ENDPOINT"])
        runs(5, "parent-before")
        telemetry._loss._lock.acquire()  # as if the export thread held it at the fork
        pid = os.fork()
        if pid == 0:
            runs(3, "child")  # would hang on the copied lock
            telemetry.shutdown()
            print("child lost", telemetry.spans_lost, flush=True)
            os._exit(0)
        telemetry._loss._lock.release()
        runs(1, "parent-after")
        _, status = os.waitpid(pid, 0)
        telemetry.shutdown()
        print("parent lost", telemetry.spans_lost, os.waitstatus_to_exitcode(status), flush=True)
        """,
        endpoint,
    )
    code, out, err = finish(process)
    assert code == 0, err
    names = spans.names()
    assert names.count("invoke_agent parent-before") == 5  # once: the child does not resend
    assert names.count("invoke_agent child") == 3
    assert names.count("invoke_agent parent-after") == 1
    assert len(names) == 27
    zero = str(dict.fromkeys(("queue_full", "export_failed", "shutdown"), 0))
    assert f"child lost {zero}" in out and f"parent lost {zero} 0" in out, out
    assert "spans lost" not in err


def test_a_multiprocessing_worker_delivers_at_its_exit(receiver: tuple[str, Spans]) -> None:
    endpoint, spans = receiver
    process = child(
        """
        import multiprocessing
        configure("mp", endpoint=os.environ["ENDPOINT"])
        def work():
            runs(3, "worker")
        if __name__ == "__main__":
            ctx = multiprocessing.get_context("fork")
            worker = ctx.Process(target=work)
            worker.start()
            worker.join(30)
            print("worker exit", worker.exitcode, flush=True)
            with ctx.Pool(2) as pool:
                pool.apply(work)
                pool.close()
                pool.join()
        """,
        endpoint,
    )
    code, out, err = finish(process)
    assert code == 0 and "worker exit 0" in out, err
    assert spans.names().count("invoke_agent worker") == 6, err  # 3 by Process, 3 by a Pool
    assert len(spans.names()) == 18


# --- runs still open at exit -----------------------------------------------------------------
def test_runs_open_at_exit_end_innermost_first_marked_and_counted(
    receiver: tuple[str, Spans],
) -> None:
    endpoint, spans = receiver
    process = child(
        """
        configure("open", endpoint=os.environ["ENDPOINT"])
        started = threading.Event()
        async def outer():
            yield LLMCallStart(model="m", call_id="c")
            yield LLMCallEnd(call_id="c")
            yield ToolCall(id="t", function=FunctionCall(name="delegate", arguments="{}"))
            async for event in otel_wrapper(agent_name="inner")(inner()):
                yield event
        async def inner():
            yield LLMCallStart(model="m", call_id="i")
            started.set()
            await asyncio.sleep(3600)  # never answers
            yield TextDelta(text="never")
        async def consume():
            [_ async for _ in otel_wrapper(agent_name="outer")(outer())]
        threading.Thread(target=lambda: asyncio.run(consume()), daemon=True).start()
        started.wait(10)
        runs(1, "done")
        """,
        endpoint,
    )
    code, _, err = finish(process)
    assert code == 0, err
    by_name = {s["name"]: s for s in spans.items}
    assert set(by_name) >= {
        "invoke_agent outer", "invoke_agent inner", "invoke_agent done", "execute_tool delegate",
        "chat m",
    }, by_name.keys()  # fmt: skip
    for name in ("invoke_agent outer", "invoke_agent inner"):
        reason = by_name[name]["attributes"]["agent_otel.end_reason"].string_value
        assert reason == "shutdown"
    assert by_name["invoke_agent done"]["attributes"]["agent_otel.end_reason"].string_value == (
        "exhausted"
    )
    ids = {s["id"]: s for s in spans.items}
    for span in spans.items:  # every span inside its parent, ended no later
        parent = ids.get(span["parent"])
        if parent is not None:
            assert parent["start"] <= span["start"] and span["end"] <= parent["end"], span["name"]
    tool = by_name["execute_tool delegate"]
    assert tool["attributes"]["agent_otel.incomplete"].bool_value
    assert "2 run(s) still open at shutdown were ended" in err
    assert "spans lost" not in err


# --- one value too big to send -----------------------------------------------------------------
def test_one_huge_exception_costs_no_other_run_at_a_grpc_collector() -> None:
    with otlp_grpc_receiver() as (port, received):
        process = subprocess.run(
            [
                sys.executable,
                "-c",
                PRELUDE
                + textwrap.dedent("""
                telemetry = configure("huge", endpoint=os.environ["ENDPOINT"], protocol="grpc")
                async def failing():
                    yield LLMCallStart(model="m", call_id="c")
                    raise RuntimeError("x" * 1_500_000)
                async def main():
                    try:
                        [_ async for _ in otel_wrapper(agent_name="bad")(failing())]
                    except RuntimeError:
                        pass
                asyncio.run(main())
                runs(10, "good")
                telemetry.shutdown()
                print(telemetry.spans_lost, flush=True)
            """),
            ],
            env={
                **os.environ,
                "PYTHONPATH": os.environ.get("LIFE_PYTHONPATH")
                or os.pathsep.join([str(REPO / "src"), str(REPO / "contract")]),
                "ENDPOINT": f"http://127.0.0.1:{port}",
                "OTEL_BSP_SCHEDULE_DELAY": "60000",
            },
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
            check=False,
        )
        assert process.returncode == 0, process.stderr
        names = [span.name for _, span in received.spans()]
    assert names.count("invoke_agent good") == 10, process.stderr
    assert names.count("invoke_agent bad") == 1
    assert "export_failed': 0" in process.stdout

"""An agent calling an MCP server or an A2A agent in another process, both exporting to one
Collector in front of Jaeger: what a person sees in Jaeger's UI (its ``/api/traces`` answer).

Each side is a process of its own (``remote_tier_app.py``), ``configure()``d with
``OTEL_EXPORTER_OTLP_ENDPOINT`` naming the Collector, which runs ``exporters/collector/config.yaml``
(the compose stack's file, only its addresses moved). The MCP server is traced by the MCP SDK
itself (docs/mcp-and-agents.md), over stdio (the agent's client starts it) and streamable HTTP;
the A2A agent by ``trace_a2a_executor`` and ``otel_wrapper``. Each run must be one trace: no
span without its parent, the server's span under the request our ``execute_tool`` span made,
both services named, a failing call's ``error.type`` on our tool span.

Then the Collector with its trace store gone: the agent is not slowed, and what the Collector
refuses once its queue is full is counted lost by the app, span for span.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import remote_tier_app as app
from _tier import (
    COLLECTOR_CONFIG,
    OTELCOL_BIN,
    Tier,
    binary,
    compose_tier,
    counter,
    get_json,
    own_metrics,
    running,
)
from benchmarks._process import free_port, poll, port_open, serving

from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.exporting._loss import EXPORT_FAILED

pytestmark = pytest.mark.heavy
APP = Path(app.__file__)


@dataclass(frozen=True)
class Span:
    """A span as Jaeger's UI shows it."""

    service: str
    name: str
    parent: str | None  # the parent's name; None for a root
    tags: dict[str, Any]


def ui_trace(tier: Tier, trace_id: str, names: set[str]) -> list[Span]:
    """The trace as Jaeger's UI reads it (``/api/traces/<id>``), once it holds every one of
    ``names`` (span names).

    A span whose parent is not in the trace (an orphan: Jaeger's UI shows it as a root with a
    warning) fails here, as does a trace id Jaeger splits in two."""

    def whole() -> dict[str, Any] | None:
        [found] = get_json(f"{tier.jaeger.api}/api/traces/{trace_id}")["data"]
        return found if names <= {s["operationName"] for s in found["spans"]} else None

    found: Any = poll(whole, timeout=60, what=f"{sorted(names)} in {trace_id}")
    services = {key: p["serviceName"] for key, p in found["processes"].items()}
    names = {s["spanID"]: s["operationName"] for s in found["spans"]}
    spans = []
    for span in found["spans"]:
        parents = [r["spanID"] for r in span["references"] if r["refType"] == "CHILD_OF"]
        assert all(p in names for p in parents), f"orphan: {span['operationName']}"
        tags = {t["key"]: t["value"] for t in span["tags"]}
        parent = names[parents[0]] if parents else None
        spans.append(Span(services[span["processID"]], span["operationName"], parent, tags))
    return spans


def _env(tier: Tier) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": tier.otlp_http}


def _agent(tier: Tier, *args: str) -> str:
    """Run the agent process to its end; the trace id of its run."""
    done = subprocess.run(
        [sys.executable, str(APP), *args],
        env=_env(tier),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    with compose_tier(tmp_path_factory.mktemp("tier")) as running_tier:
        yield running_tier


def _server(tier: Tier, workdir: Path, role: str) -> Iterator[int]:
    """A server process of ``remote_tier_app`` on a free port until the module ends."""
    port = free_port()
    command = [sys.executable, str(APP), role, *(["http"] if role == "server" else []), str(port)]
    log = workdir / f"{role}.log"
    with serving(command, log=log, ready=lambda: port_open(port), timeout=60, env=_env(tier)):
        yield port


@pytest.fixture(scope="module")
def mcp_http(tier: Tier, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    yield from _server(tier, tmp_path_factory.mktemp("mcp"), "server")


@pytest.fixture(scope="module")
def a2a(tier: Tier, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    yield from _server(tier, tmp_path_factory.mktemp("a2a"), "a2a-server")


def _one_root(spans: list[Span], name: str) -> None:
    assert [s.name for s in spans if s.parent is None] == [name]


@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_an_mcp_server_in_another_process_is_in_the_agents_trace_in_jaeger(
    tier: Tier, transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "stdio":
        trace_id = _agent(tier, "agent", "stdio")
    else:
        port = request.getfixturevalue("mcp_http")
        trace_id = _agent(tier, "agent", "http", f"http://127.0.0.1:{port}/mcp")
    tools = [name for _, name, _ in app.CALLS]
    server_side = {f"tools/call {t}" for t in tools}
    spans = ui_trace(tier, trace_id, server_side | {f"invoke_agent {app.AGENT}"})
    _one_root(spans, f"invoke_agent {app.AGENT}")
    assert {s.service for s in spans} == {app.AGENT_SERVICE, app.SERVER_SERVICE}
    by_name = {s.name: s for s in spans}
    expected_errors = {"add": None, "broken": "tool_error", "invalid": "-32602"}
    for tool in tools:
        ours = by_name[f"execute_tool {tool}"]
        send = by_name[f"MCP send tools/call {tool}"]
        served = by_name[f"tools/call {tool}"]
        assert (ours.service, ours.parent) == (app.AGENT_SERVICE, "step 0")
        assert (send.service, send.parent) == (app.AGENT_SERVICE, ours.name)
        assert (served.service, served.parent) == (app.SERVER_SERVICE, send.name)
        assert ours.tags.get("error.type") == expected_errors[tool], tool
        assert ours.tags["mcp.method.name"] == "tools/call"
        assert ours.tags["gen_ai.tool.type"] == "extension"
        assert ours.tags["jsonrpc.request.id"] == served.tags["jsonrpc.request.id"]
        if expected_errors[tool]:
            assert ours.tags["otel.status_code"] == "ERROR"


def test_an_a2a_agent_in_another_process_is_in_the_callers_trace_in_jaeger(
    tier: Tier, a2a: int
) -> None:
    trace_id = _agent(tier, "a2a-agent", f"http://127.0.0.1:{a2a}/")
    remote_run = f"invoke_agent {app.REMOTE}"
    spans = ui_trace(tier, trace_id, {f"invoke_agent {app.AGENT}", "chat remote-model"})
    spans = poll(
        lambda: (
            (s := ui_trace(tier, trace_id, set()))
            and sum(x.name == "chat remote-model" for x in s) == 2
            and s
        ),
        timeout=60,
        what="both remote runs' chat spans",
    )
    _one_root(spans, f"invoke_agent {app.AGENT}")
    assert {s.service for s in spans} == {app.AGENT_SERVICE, app.A2A_SERVICE}
    calls = [s for s in spans if s.name == remote_run and s.service == app.AGENT_SERVICE]
    runs = [s for s in spans if s.name == remote_run and s.service == app.A2A_SERVICE]
    assert len(calls) == len(runs) == 2
    assert all(
        c.parent == "execute_tool ask_weather" and c.tags["span.kind"] == "client" for c in calls
    )
    assert all(r.parent == remote_run for r in runs)  # each under a CLIENT span of the caller
    tools = [s for s in spans if s.name == "execute_tool ask_weather"]
    assert sorted(str(t.tags.get("error.type")) for t in tools) == ["None", "tool_error"]
    assert sorted(str(r.tags.get("error.type")) for r in runs) == ["None", "RuntimeError"]
    assert sum("error.type" in c.tags for c in calls) == 1  # the failed call's CLIENT span


# --- the trace store gone behind the Collector ----------------------------------------------


async def _runs(endpoint: str, runs: int) -> tuple[float, dict[str, int], int]:
    """``runs`` 4-span runs traced and exported to ``endpoint``: the agent's wall time for
    them (not the flush), the spans lost by cause, and the spans that ended."""
    from benchmarks._harness import run_scripts
    from benchmarks.fig4_memory import _run_script

    tel = configure("tier-down", endpoint=endpoint, timeout=2, console=False, set_global=False)
    wrap = otel_wrapper(agent_name="bench", tracer_provider=tel.tracer_provider)
    scripts = [_run_script(i) for i in range(runs)]
    began = time.perf_counter()
    await run_scripts(wrap, scripts)
    wall = time.perf_counter() - began
    tel.force_flush(60_000)
    tel.shutdown(60_000)
    return wall, dict(tel.spans_lost), 4 * runs


def test_with_jaeger_gone_the_agent_is_not_slowed_and_what_is_refused_is_counted(
    tier: Tier, tmp_path: Path
) -> None:
    """The shipped Collector with both trace stores dead, its Jaeger queue made small (1 MiB,
    so it fills in seconds as a long outage fills the default one): it takes spans into its
    queue, then refuses them (503). The agent's own loop runs as fast as with Jaeger up; every
    span the Collector did not take is counted lost by the app (``export_failed``), so the
    Collector's accepted count and the app's are the same number."""
    binary(OTELCOL_BIN)
    dead = free_port()
    grpc, http, metrics = free_port(), free_port(), free_port()
    overrides = {
        "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{grpc}",
        "receivers::otlp::protocols::http::endpoint": f"127.0.0.1:{http}",
        "exporters::otlp/jaeger::endpoint": f"127.0.0.1:{dead}",
        "exporters::otlp/tempo::endpoint": f"127.0.0.1:{dead}",
        "exporters::otlp/jaeger::sending_queue::sizer": "bytes",
        "exporters::otlp/jaeger::sending_queue::queue_size": 1 << 20,
        "exporters::prometheus::endpoint": f"127.0.0.1:{free_port()}",
        "extensions::health_check::endpoint": f"127.0.0.1:{free_port()}",
        **own_metrics(metrics),
    }
    runs = 2_000
    up, up_lost, _ = asyncio.run(_runs(tier.otlp_http, runs))
    assert not any(up_lost.values())
    with running(OTELCOL_BIN, COLLECTOR_CONFIG, overrides, tmp_path, http):
        down, lost, ended = asyncio.run(_runs(f"http://127.0.0.1:{http}", runs))
        accepted = counter(metrics, "otelcol_receiver_accepted_spans")
        refused = counter(metrics, "otelcol_receiver_refused_spans")
    assert refused > 0 and lost[EXPORT_FAILED] > 0
    assert accepted == ended - sum(lost.values())
    assert down < 2.5 * up + 0.5, (down, up)

"""The scale-out topology of ``exporters/scale/``, every hop a real process on loopback.

Two agent processes (``scale_agent.py``) -> the agent-tier Collector
(``collector-agent.yaml``: load balancing by trace id; its Kubernetes DNS resolver swapped
for a static list of the two gateways) -> two gateway Collectors (``collector-gateway.yaml``:
tail sampling; their Tempo exporter pointed at Jaeger) -> Jaeger. Everything else in the
shipped files runs as written.

What must hold: every trace Jaeger has arrived whole (all its spans, though its spans were
spread over two agent-tier batches and two gateways could each have seen a part); every run
with an error is kept; a ratio of the rest is dropped; and the set Jaeger holds is exactly the
set agent-otel's in-process ``TailSampler`` (``keep_ratio=0.1``, fed the same spans inside
each agent process) keeps, because the gateway's baseline rule is the sampler's rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import REPO, content_heavy_runs, free_port, poll
from _tier import (
    OTELCOL_BIN,
    SCALE_AGENT,
    SCALE_GATEWAY,
    Jaeger,
    binary,
    counter,
    find_traces,
    jaeger,
    own_metrics,
    running,
    trace_spans,
)

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    ToolCall,
    ToolResult,
)
from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.recording.content._capture import ENV_CAPTURE

pytestmark = pytest.mark.heavy
RUNS = 60  # per agent process; every fifth fails
AGENT = Path(__file__).with_name("scale_agent.py")
ACCEPTED = "otelcol_receiver_accepted_spans"


@dataclass(frozen=True)
class Scale:
    store: Jaeger  # where the gateways' otlp/tempo exporter sends what they keep
    agent_tier: str  # the agent-tier Collector's OTLP/HTTP base URL, what apps are pointed at
    gateway_metrics: list[int]  # each gateway's own metrics port


@contextmanager
def scale_tier(tmp_path: Path) -> Iterator[Scale]:
    """Jaeger <- two gateways (``collector-gateway.yaml``) <- the agent tier, all running."""
    collector = binary(OTELCOL_BIN)
    with ExitStack() as stack:
        store = stack.enter_context(jaeger(tmp_path / "jaeger"))
        gateways, gateway_metrics = [], []
        for i in range(2):
            port, metrics = free_port(), free_port()
            overrides = {
                "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{port}",
                "exporters::otlp/tempo::endpoint": store.otlp_grpc,
                # no remote-write store here: metrics go nowhere we read (the gateway logs it)
                "exporters::prometheusremotewrite::endpoint": f"http://127.0.0.1:{free_port()}",
                **own_metrics(metrics),
            }
            stack.enter_context(
                running(collector, SCALE_GATEWAY, overrides, tmp_path / f"gateway{i}", port)
            )
            gateways.append(f"127.0.0.1:{port}")
            gateway_metrics.append(metrics)
        grpc, http = free_port(), free_port()
        overrides = {
            "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{grpc}",
            "receivers::otlp::protocols::http::endpoint": f"127.0.0.1:{http}",
            "exporters::otlp/gateway::endpoint": gateways[0],
            **own_metrics(free_port()),
        }
        # The shipped file with only its Kubernetes DNS resolver swapped for a static list of
        # the two gateways: ``--set`` merges maps, and the exporter refuses two resolvers.
        config = yaml.safe_load(SCALE_AGENT.read_text())
        resolver = {"static": {"hostnames": gateways}}
        config["exporters"]["loadbalancing"]["resolver"] = resolver
        agent_config = tmp_path / SCALE_AGENT.name
        agent_config.write_text(yaml.safe_dump(config))
        stack.enter_context(
            running(collector, agent_config, overrides, tmp_path / "agent-tier", http)
        )
        yield Scale(store, f"http://127.0.0.1:{http}", gateway_metrics)


def test_two_agents_through_load_balancer_and_tail_sampling_gateways(tmp_path: Path) -> None:
    with scale_tier(tmp_path) as scale:
        store, http, gateway_metrics = scale.store, scale.agent_tier, scale.gateway_metrics
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO / "src"), str(REPO / "contract"), env.get("PYTHONPATH", "")]
        )
        agents = [
            subprocess.Popen(
                [sys.executable, str(AGENT), http, str(RUNS), tag],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for tag in ("a", "b")
        ]
        runs: dict[str, dict[str, Any]] = {}
        for agent in agents:
            out, err = agent.communicate(timeout=240)
            assert agent.returncode == 0, err
            runs.update(json.loads(out))
        assert len(runs) == 2 * RUNS

        errors = {t for t, r in runs.items() if r["error"]}
        in_process = {t for t, r in runs.items() if r["kept"]}
        assert len(errors) == 2 * RUNS // 5
        assert errors <= in_process  # the in-process sampler keeps every failed run

        spans_sent = sum(r["spans"] for r in runs.values())

        def all_decided() -> bool:  # both gateways saw spans, and together every span once
            counts = [counter(port, ACCEPTED) for port in gateway_metrics]
            return all(counts) and sum(counts) == spans_sent

        poll(all_decided, timeout=60, what=f"{spans_sent} spans across both gateways")

        def stored() -> dict[str, list[Any]] | None:
            found = {}
            for service in ("scale-agent-a", "scale-agent-b"):
                found.update(find_traces(store, service))
            have = {t for t, spans in found.items() if len(spans) >= runs[t]["spans"]}
            return found if in_process <= have else None

        # decision_wait_after_root_received is 5 s: decisions land soon after each run ends
        found = poll(stored, timeout=120, what="every kept run whole in Jaeger", interval=1)
        # a trace the gateways dropped never shows up later
        dropped = set(runs) - in_process
        assert all(trace_spans(store, t) == [] for t in sorted(dropped)[:5])

    assert set(found) == in_process  # the Collector kept exactly what the sampler keeps
    for trace_id, spans in found.items():
        assert len(spans) == runs[trace_id]["spans"], f"{trace_id} is not whole"
        assert len({s["spanId"] for s in spans}) == len(spans)
    assert errors <= set(found)
    ok_runs = set(runs) - errors
    kept_ok = set(found) & ok_runs
    assert 0 < len(kept_ok) < len(ok_runs) / 2, (len(kept_ok), len(ok_runs))  # ~10 %


def test_a_burst_of_failed_content_heavy_runs_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs that must be kept (each has an error), with content, megabytes within a second.

    Both hops re-batch: by span count, the agent tier sends a gateway, and a gateway sends the
    store, requests over the receiver's 4 MiB gRPC limit, refused whole and dropped (never
    retried): failed runs the gateway's policy keeps were lost, the app counting nothing lost.
    """
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_ONLY")
    # the app's queue drained at once, as at a flush or at exit: its requests back to back
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
    runs = 150  # about 13 MB of spans
    with scale_tier(tmp_path) as scale:
        tel = configure("scale-bulky", endpoint=scale.agent_tier, console=False, set_global=False)
        try:
            per_run = content_heavy_runs(tel.tracer_provider, tel.meter_provider, runs, fail=True)
            assert tel.force_flush(30_000)
        finally:
            assert tel.shutdown(30_000)
        assert not any(tel.spans_lost.values()), tel.spans_lost
        # every run failed, so the gateways keep them all (decided 5 s after each root)
        found = poll(
            lambda: (t := find_traces(scale.store, "scale-bulky")) and len(t) >= runs and t,
            timeout=60,
            what=f"the {runs} failed runs in the store",
            interval=1,
        )
    assert len(found) == runs
    assert all(len(spans) == per_run for spans in found.values())


SPEEDUP = 20  # the gateway's waits and thresholds divided by this: a minute in three seconds
LONG_RUN = 120  # seconds: a run of two minutes, common for an agent (docs: "runs can last minutes")


def seconds(duration: str) -> float:
    """A Collector duration of the gateway config (``60s``, ``10m``) in seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(duration[:-1]) * units[duration[-1]]


def test_a_run_longer_than_the_gateways_wait_is_decided_on_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run that fails late, or is slow, is kept: the verdict waits for its root.

    The shipped gateway with every wait and threshold of its tail sampling divided by the same
    factor (its minutes in seconds). A run's calls end, and are exported, long before its root;
    a gateway that decides ``decision_wait`` after the first of them judges a run longer than
    that on its first part alone: no error yet, short so far, dropped, and the decision cache
    drops the rest (the failed tool, the root) as it arrives.
    """
    collector = binary(OTELCOL_BIN)
    sampling = yaml.safe_load(SCALE_GATEWAY.read_text())["processors"]["tail_sampling"]
    wait = seconds(sampling["decision_wait"]) / SPEEDUP
    [slow] = [p for p in sampling["policies"] if p["type"] == "latency"]
    threshold = slow["latency"]["threshold_ms"] / SPEEDUP
    after_root = seconds(sampling["decision_wait_after_root_received"]) / SPEEDUP
    policies = [
        {**p, "latency": {"threshold_ms": int(threshold)}} if p is slow else p
        for p in sampling["policies"]
    ]
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # each span leaves as it ends
    with ExitStack() as stack:
        store = stack.enter_context(jaeger(tmp_path / "jaeger"))
        port = free_port()
        overrides = {
            "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{port}",
            "exporters::otlp/tempo::endpoint": store.otlp_grpc,
            "exporters::prometheusremotewrite::endpoint": f"http://127.0.0.1:{free_port()}",
            "processors::tail_sampling::decision_wait": f"{wait}s",
            "processors::tail_sampling::decision_wait_after_root_received": f"{after_root}s",
            "processors::tail_sampling::policies": policies,
            **own_metrics(free_port()),
        }
        stack.enter_context(running(collector, SCALE_GATEWAY, overrides, tmp_path / "gw", port))
        tel = configure(
            "scale-long",
            endpoint=f"http://127.0.0.1:{port}",
            protocol="grpc",
            console=False,
            set_global=False,
        )
        length = LONG_RUN / SPEEDUP
        assert length > threshold / 1000  # a slow run by the gateway's own rule

        async def long_run(fail: bool) -> None:
            async def agent() -> Any:
                yield LLMCallStart(model="gpt-4o", provider="openai", call_id="c")
                yield ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}"))
                yield LLMCallEnd(call_id="c", finish_reason="tool_calls")
                yield StepBoundary()  # the step and its chat call end (and are exported) now
                await asyncio.sleep(length)
                yield ToolResult(tool_call_id="t1", content="timed out", is_error=fail)

            wrap = otel_wrapper(
                agent_name="long", tracer_provider=tel.tracer_provider, meter_provider=None
            )
            async for _ in wrap(agent()):
                pass

        async def runs() -> None:  # two that fail late, two that are only slow
            await asyncio.gather(*(long_run(fail) for fail in (True, True, False, False)))

        try:
            asyncio.run(runs())
            assert tel.force_flush(30_000)
        finally:
            assert tel.shutdown(30_000)
        whole = {"invoke_agent long", "execute_tool lookup"}  # the root and the late tool

        def kept() -> dict[str, list[Any]] | None:
            found = find_traces(store, "scale-long")
            done = [t for t in found.values() if whole <= {s["name"] for s in t}]
            return found if len(done) == 4 else None

        found = poll(kept, timeout=30, what="the four long runs, each kept whole", interval=1)
    names = [sorted(s["name"] for s in spans) for spans in found.values()]
    assert len(names) == 4 and all(n == names[0] for n in names), names  # all of each run
    assert names[0][0] == "chat gpt-4o"  # the call that arrived first is kept too

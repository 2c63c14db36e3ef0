"""Figure 16: spans/s through the real tier (Collector -> Jaeger), and what it costs the agent.

The tier is ``tools/build.sh``'s binaries running the compose stack's configs
(``exporters/collector/config.yaml``, ``exporters/jaeger/config.yaml``) on loopback, traces to
Jaeger only (the Tempo exporter left out: one store, one path).

* Throughput: the spans of real 4-span agent runs (ended already) fed to the batch processor
  and OTLP/HTTP exporter exactly as ``configure()`` builds them, pointed at the Collector;
  spans/s is the count Jaeger's own receiver metric reached over the time it took, end to end
  (the Collector's memory_limiter, its exporter's batching by size, its OTLP/gRPC hop,
  Jaeger's in-memory store). The tier's lag is the part of that time after the exporter had
  sent its last span: the Collector's last batch, under its ``min_size``, waits for its
  ``flush_timeout`` (2 s in the shipped config), so a burst's last spans reach Jaeger that
  much later, whatever the burst's size.
* Cost to the agent process: CPU time of this process for runs through ``otel_wrapper`` and
  ``configure()`` until every span is exported, to the Collector against to the bare loopback
  receiver of figure 10 (``_receiver.py``, its own process), interleaved rounds. The agent
  process does the same work either way (encode, send); the tier's work is in other
  processes, so the ratio should be 1.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.exporting._pipeline import otlp_span_pipeline

from ._harness import Row, Stat, interleave, ratio, run_scripts
from ._process import poll
from ._receiver import Receiver
from ._tier import JAEGER_BIN, OTELCOL_BIN, compose_tier, counter
from .fig4_memory import _run_script
from .fig10_export_ceiling import _recorded

FIG = "16 tier"
ACCEPTED = "otelcol_receiver_accepted_spans_total"


def through(
    url: str,
    spans: list[ReadableSpan],
    n: int,
    received: Callable[[], float],
    lags: list[float] | None = None,
) -> float:
    """spans/s from the exporter's first span until ``received()`` has grown by ``n``; the
    seconds from the exporter's flush until then appended to ``lags``."""
    # The queue holds all n: fed at once, a default queue (16,384) would drop the rest and
    # the receiver would never reach n.
    _, processor = otlp_span_pipeline("http/protobuf", url, None, None, n, MeterProvider())
    start = received()
    began = time.perf_counter()
    for span in itertools.islice(itertools.cycle(spans), n):
        processor.on_end(span)
    processor.force_flush(120_000)
    flushed = time.perf_counter()
    poll(lambda: received() >= start + n, timeout=120, what=f"{n} spans", interval=0.05)
    elapsed = time.perf_counter() - began
    if lags is not None:
        lags.append(time.perf_counter() - flushed)
    processor.shutdown()
    return n / elapsed


async def agent_cpu(url: str, runs: int) -> float:
    """CPU seconds of this process per 1,000 runs, traced and exported to ``url``."""
    tel = configure("bench-tier", endpoint=url, console=False, set_global=False)
    wrap = otel_wrapper(agent_name="bench", tracer_provider=tel.tracer_provider)
    scripts = [_run_script(i) for i in range(runs)]
    began = time.process_time()
    await run_scripts(wrap, scripts)
    tel.force_flush(60_000)
    spent = time.process_time() - began
    tel.shutdown(60_000)
    if any(tel.spans_lost.values()):
        raise AssertionError(f"figure 16: spans lost {tel.spans_lost}")
    return 1000 * spent / runs


async def run(quick: bool) -> list[Row]:
    if not (JAEGER_BIN.exists() and OTELCOL_BIN.exists()):
        return [Row(FIG, "not run: the tier is not built (bash tools/build.sh)", None, "")]
    n, rounds, runs = (2_000, 1, 100) if quick else (20_000, 5, 2_000)
    spans = await _recorded(500)
    rows: list[Row] = []
    lags: list[float] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Receiver() as rx,
        compose_tier(Path(tmp), tempo=False) as tier,
    ):

        def jaeger_accepted() -> float:
            return counter(tier.jaeger.metrics_port, ACCEPTED)

        res = await interleave(
            {
                "tier": lambda: through(tier.otlp_http, spans, n, jaeger_accepted, lags),
                "receiver": lambda: through(rx.http_url, spans, n, rx.spans),
                "cpu tier": lambda: agent_cpu(tier.otlp_http, runs),
                "cpu receiver": lambda: agent_cpu(rx.http_url, runs),
            },
            rounds,
            warmup=0 if quick else 1,
        )
    rows.append(
        Row(
            FIG,
            "spans/s, agent exporter -> Collector -> Jaeger (in memory), end to end",
            Stat.of(res["tier"]),
            "spans/s",
            note=f"{n:,} spans of 4-span runs, OTLP/HTTP, agent-otel batch defaults",
        )
    )
    rows.append(
        Row(
            FIG,
            "spans/s, the same exporter -> a bare receiver (figure 10's), end to end",
            Stat.of(res["receiver"]),
            "spans/s",
            note="the agent side's own ceiling in the same rounds",
        )
    )
    rows.append(
        Row(
            FIG,
            "the tier's lag: from the exporter's flush until Jaeger holds every span",
            Stat.of(lags[-rounds:]),
            "s",
            note="the Collector's last batch waits its flush_timeout (2 s)",
        )
    )
    for key, where in (("cpu tier", "to the Collector"), ("cpu receiver", "to a bare receiver")):
        rows.append(
            Row(
                FIG,
                f"agent process CPU per 1,000 runs, exported {where}",
                Stat.of(res[key]),
                "s",
                note=f"{runs:,} runs of 4 spans, until flushed",
            )
        )
    rows.append(
        Row(
            FIG,
            "agent process CPU: to the Collector / to a bare receiver",
            ratio(res, "cpu tier", "cpu receiver"),
            "x",
            note="the tier costs the agent nothing beyond its exporter",
        )
    )
    return rows

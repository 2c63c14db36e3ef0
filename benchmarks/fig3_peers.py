"""Figure 3: agent-otel side by side with the peer OpenAI instrumentations on the same work.

The work: one streaming chat-completions request served by a mock transport to the OpenAI SDK,
N content chunks (1000 at full size) or one chunk, every chunk read by the consumer. In each
round, every configuration runs in turn in this process; a peer is instrumented just before its
own measurement and uninstrumented right after, each with its own in-memory SDK providers:

- ``sdk``: no instrumentation (the baseline);
- ``official``: opentelemetry-instrumentation-openai-v2 (its default, non-experimental path);
- ``openinference``: openinference-instrumentation-openai (its defaults);
- ``openllmetry``: OpenLLMetry's opentelemetry-instrumentation-openai (its defaults);
- ``logfire``: Logfire's ``instrument_openai()`` (its defaults), on a Logfire configured
  locally (``local=True``: no global provider set) that sends nothing anywhere
  (``send_to_logfire=False``, no console, no metrics) and exports to the in-memory exporter;
- ``adapter``: the Chat Completions source agent (``_openai_agent.chat_agent``), not traced;
- ``agent_otel``: the adapter agent traced by ``otel_wrapper()``.

Per round: added cost per request = (config - sdk) on the one-chunk request; added cost per chunk
= ((config - sdk) at N chunks - (config - sdk) at one chunk) / (N - 1). agent-otel's figures
include its adapter (what it takes to trace this call); the wrapper alone is agent_otel - adapter.
Each instrumentation must have produced exactly one span per request it saw (checked).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any

from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInferenceInstrumentor
from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetryInstrumentor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as OfficialInstrumentor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agent_otel import otel_wrapper

from ._harness import Row, Stat, interleave
from ._openai_agent import HISTORY, chat_agent, client, replayed_parsing, sdk_call
from ._setup import Sdk

try:  # extra bench-logfire, in its own environment (pyproject.toml says why)
    import logfire
except ImportError:
    logfire = None

PEERS = ("official", "openinference", "openllmetry", *(("logfire",) if logfire else ()))
"""The peer instrumentations: each patches the OpenAI SDK while it is measured."""
CONFIGS = ("sdk", *PEERS, "adapter", "agent_otel")
GOALS = {"official": 0.5, "openinference": 0.25, "openllmetry": 0.25, "logfire": 0.25}
"""The goal per peer: agent-otel's added CPU per chunk (adapter + wrapper) / the peer's, judged
on the pass with parsed chunks replayed (also read, through :func:`target`, by
``benchmarks.instructions``)."""


def target(peer: str) -> str:
    """The goal against ``peer`` as the table writes it (``<= 0.5``)."""
    return f"<= {GOALS[peer]:g}"


class Peers:
    def __init__(self) -> None:
        self.sdks = {name: Sdk() for name in (*PEERS, "agent_otel")}
        self.requests = dict.fromkeys(self.sdks, 0)
        self.exported = dict.fromkeys(self.sdks, 0)
        self.official = OfficialInstrumentor()
        self.openinference = OpenInferenceInstrumentor()
        self.openllmetry = OpenLLMetryInstrumentor()
        if logfire is not None:
            self.logfire = logfire.configure(
                local=True,
                send_to_logfire=False,
                console=False,
                metrics=False,
                additional_span_processors=[SimpleSpanProcessor(self.sdks["logfire"].exporter)],
            )
        self.logfire_patch = ExitStack()  # exits instrument_openai()'s reverting context
        sdk = self.sdks["agent_otel"]
        self.wrap = otel_wrapper(
            agent_name="openai-adapter",
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
        )

    def instrument(self, name: str) -> None:
        if name == "logfire":
            self.logfire_patch.enter_context(self.logfire.instrument_openai())
        elif name in PEERS:
            sdk = self.sdks[name]
            instrumentor: Any = getattr(self, name)
            instrumentor.instrument(
                tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
            )

    def uninstrument(self, name: str) -> None:
        if name == "logfire":
            self.logfire_patch.close()
        elif name in PEERS:
            instrumentor: Any = getattr(self, name)
            instrumentor.uninstrument()
            if name == "openllmetry":
                _restore_sdk("opentelemetry.instrumentation.openai.")

    def count(self, name: str, requests: int) -> None:
        """Note the requests made under ``name`` and the spans its SDK exported meanwhile."""
        if name in self.sdks:
            sdk = self.sdks[name]
            self.requests[name] += requests
            self.exported[name] += sdk.span_count()
            sdk.clear()

    def shutdown(self) -> None:
        for sdk in self.sdks.values():
            sdk.shutdown()


def _restore_sdk(wrapped_by: str) -> None:
    """Put back the OpenAI SDK's methods that modules under ``wrapped_by`` still wrap.

    OpenLLMetry's ``uninstrument()`` (0.62.4) restores nothing (it names the method
    ``"Completions.create"`` of module ``openai.resources.chat.completions``, which OTel's
    ``unwrap`` reads as an attribute of that name): its wrappers would go on tracing every
    configuration measured after it.
    """
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("openai.resources."):
            continue
        for cls in [c for c in vars(module).values() if isinstance(c, type)]:
            for attr, value in list(vars(cls).items()):
                wrapper = getattr(value, "_self_wrapper", None)
                if str(getattr(wrapper, "__module__", "")).startswith(wrapped_by):
                    setattr(cls, attr, value.__wrapped__)


def _work(name: str, peers: Peers, api: Any) -> Callable[[], Awaitable[int]]:
    if name == "sdk" or name in PEERS:
        return lambda: sdk_call(api)
    agent = chat_agent(api)

    async def adapter() -> int:
        n = 0
        async for _ in agent.stream(HISTORY):
            n += 1
        return n

    async def traced() -> int:
        n = 0
        async for _ in peers.wrap(agent.stream(HISTORY)):
            n += 1
        return n

    return adapter if name == "adapter" else traced


def _measure(name: str, peers: Peers, chunks: int, repeat: int) -> Callable[[], Awaitable[float]]:
    api = client(chunks)
    work = _work(name, peers, api)

    async def once() -> float:
        peers.instrument(name)
        try:
            start = time.process_time_ns()
            for _ in range(repeat):
                await work()
            elapsed = time.process_time_ns() - start
        finally:
            peers.uninstrument(name)
        peers.count(name, repeat)
        return elapsed / repeat / 1000  # us per request

    return once


async def run(quick: bool) -> list[Row]:
    peers = Peers()
    rows = await _pass(peers, quick, replay=False)
    with replayed_parsing():
        rows += await _pass(peers, quick, replay=True)
    for name, requests in peers.requests.items():
        if peers.exported[name] < requests:  # one span (at least) per request it saw
            raise AssertionError(
                f"figure 3: {name} exported {peers.exported[name]} spans for {requests} requests"
            )
    spans = ", ".join(
        f"{name} {peers.exported[name]} spans / {peers.requests[name]} requests"
        for name in peers.requests
    )
    rows[0].note = spans
    rows[0].extra = {"spans": dict(peers.exported), "requests": dict(peers.requests)}
    peers.shutdown()
    return rows


async def _pass(peers: Peers, quick: bool, *, replay: bool) -> list[Row]:
    if replay:
        chunks, rounds, big_repeat, small_repeat = (50, 2, 2, 5) if quick else (1000, 15, 10, 50)
    else:
        chunks, rounds, big_repeat, small_repeat = (50, 2, 1, 5) if quick else (1000, 11, 2, 40)
    configs: dict[str, Any] = {}
    for name in CONFIGS:
        configs[f"{name}@N"] = _measure(name, peers, chunks, big_repeat)
        configs[f"{name}@1"] = _measure(name, peers, 1, small_repeat)
    res = await interleave(configs, rounds)

    def per_request(name: str, base: str = "sdk") -> list[float]:
        return [a - b for a, b in zip(res[f"{name}@1"], res[f"{base}@1"], strict=True)]

    def per_chunk(name: str, base: str = "sdk") -> list[float]:
        big = [a - b for a, b in zip(res[f"{name}@N"], res[f"{base}@N"], strict=True)]
        small = per_request(name, base)
        return [(b - s) * 1000 / (chunks - 1) for b, s in zip(big, small, strict=True)]

    chunk = {name: per_chunk(name) for name in (*PEERS, "agent_otel")}

    def versus(peer: str) -> Stat:
        pairs = zip(chunk["agent_otel"], chunk[peer], strict=True)
        return Stat.of([a / o if o > 0 else float("inf") for a, o in pairs])

    ratio, ratio_oi, ratio_ol = versus("official"), versus("openinference"), versus("openllmetry")
    logfire_rows: list[Row] = []  # without extra bench-logfire: no Logfire rows
    if "logfire" in PEERS:
        ratio_lf = versus("logfire")
        logfire_rows = [
            Row(fig_name(replay), "logfire added per chunk", Stat.of(chunk["logfire"]), "ns"),
            Row(fig_name(replay), "per chunk: agent-otel (adapter + wrapper) / logfire", ratio_lf,
                "x", target("logfire"), ratio_lf.median <= GOALS["logfire"]),
        ] if replay else [
            Row(fig_name(replay), "logfire added per request", Stat.of(per_request("logfire")),
                "us"),
            Row(fig_name(replay), "logfire added per chunk", Stat.of(chunk["logfire"]), "ns"),
        ]  # fmt: skip
    if replay:
        fig = fig_name(replay)
        return [
            Row(fig, f"bare SDK stream ({chunks} replayed chunks), CPU per chunk",
                Stat.of([v * 1000 / chunks for v in res["sdk@N"]]), "ns"),
            Row(fig, "official (openai-v2) added per chunk", Stat.of(chunk["official"]), "ns"),
            Row(fig, "openinference added per chunk", Stat.of(chunk["openinference"]), "ns"),
            Row(fig, "openllmetry added per chunk", Stat.of(chunk["openllmetry"]), "ns"),
            Row(fig, "agent-otel (adapter + wrapper) added per chunk",
                Stat.of(chunk["agent_otel"]), "ns"),
            Row(fig, "agent-otel wrapper alone (vs untraced adapter) per chunk",
                Stat.of(per_chunk("agent_otel", "adapter")), "ns"),
            Row(fig, "per chunk: agent-otel (adapter + wrapper) / official", ratio, "x",
                target("official"),
                ratio.median <= GOALS["official"] if Stat.of(chunk["official"]).median > 0
                else None),
            Row(fig, "per chunk: agent-otel (adapter + wrapper) / openinference", ratio_oi, "x",
                target("openinference"), ratio_oi.median <= GOALS["openinference"]),
            Row(fig, "per chunk: agent-otel (adapter + wrapper) / openllmetry", ratio_ol, "x",
                target("openllmetry"), ratio_ol.median <= GOALS["openllmetry"]),
            *logfire_rows,
        ]  # fmt: skip
    fig = fig_name(replay)
    return [
        Row(fig, f"bare SDK stream, {chunks} chunks, CPU per request", Stat.of(res["sdk@N"]), "us"),
        Row(fig, "bare SDK stream, CPU per chunk (N-chunk request / N)",
            Stat.of([v * 1000 / chunks for v in res["sdk@N"]]), "ns"),
        Row(fig, "bare SDK stream, 1-chunk request", Stat.of(res["sdk@1"]), "us"),
        Row(fig, "official (openai-v2) added per request (1-chunk stream)",
            Stat.of(per_request("official")), "us"),
        Row(fig, "openinference added per request", Stat.of(per_request("openinference")), "us"),
        Row(fig, "openllmetry added per request", Stat.of(per_request("openllmetry")), "us"),
        Row(fig, "agent-otel (adapter + wrapper) added per request",
            Stat.of(per_request("agent_otel")), "us"),
        Row(fig, "agent-otel wrapper alone added per request",
            Stat.of(per_request("agent_otel", "adapter")), "us"),
        Row(fig, "official added per chunk (below this run's resolution)",
            Stat.of(chunk["official"]), "ns"),
        Row(fig, "openinference added per chunk", Stat.of(chunk["openinference"]), "ns"),
        Row(fig, "openllmetry added per chunk", Stat.of(chunk["openllmetry"]), "ns"),
        Row(fig, "agent-otel (adapter + wrapper) added per chunk", Stat.of(chunk["agent_otel"]),
            "ns"),
        Row(fig, "per chunk: agent-otel / official (end to end)", ratio, "x"),
        *logfire_rows,
    ]  # fmt: skip


def fig_name(replay: bool) -> str:
    """The figure's two passes, as the table names them."""
    return "3 peers, parsed chunks replayed" if replay else "3 peers (OpenAI stream)"

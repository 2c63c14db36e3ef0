"""Figure 15: CPU per event of seven frameworks, agent-otel against each one's own tracer.

    python -m benchmarks.run --only 15   # Agno, AutoGen, smolagents, LlamaIndex here;
                                         # ADK, Strands, CrewAI in their own venvs
    python -m benchmarks.fig15_frameworks --framework agno [--runs N] [--rounds R]

The scripted conversation of the conformance tests (``tests/sources/_fw_*.py``: two parallel
tool calls, one failing, then an answer) on each framework's own test model. Three
configurations per interleaved round, all exporting to in-memory exporters: the framework's
stream read through the adapter untraced (the baseline), the same traced by ``otel_wrapper()``
(agent-otel), and untraced by agent-otel but traced by the framework's own OpenTelemetry spans
(AutoGen, Google ADK, Strands) or OpenInference's instrumentation (Agno, smolagents, LlamaIndex
and CrewAI: the first has no tracer of its own; the others' own tracing is OpenInference's, or
goes to a vendor's service only). The adapter runs in all three, so the differences are the
tracers' alone. Per event: CPU time over the framework's own events (what the adapter's
``sink`` receives).

The frameworks that trace to the global provider get a switch installed once as the global
provider: off (a no-op tracer) in the baseline and agent-otel's runs, the in-memory provider in
their own. Google ADK, Strands and CrewAI cannot install beside ``dev`` (``.ci/separate-envs``):
run from ``.venv-google-adk`` / ``.venv-strands-agents`` / ``.venv-crewai`` when those exist,
else left out (noted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from opentelemetry import trace

from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

from ._compare import Run, left_open, per_event, shape, summed_input
from ._harness import Row, Stat, diff, interleave, ratio

ROOT = Path(__file__).resolve().parent.parent
# name: (conformance builder module, peer, separate environment or None)
FRAMEWORKS = {
    "agno": ("_fw_agno", "OpenInference", None),
    "autogen": ("_fw_autogen", "AutoGen's own", None),
    "google-adk": ("_fw_google_adk", "ADK's own", "google-adk"),
    "strands": ("_fw_strands", "Strands' own", "strands-agents"),
    "smolagents": ("_fw_smolagents", "OpenInference", None),
    "llama-index": ("_fw_llama_index", "OpenInference", None),
    "crewai": ("_fw_crewai", "OpenInference", "crewai"),
}
LABELS = {"agno": "Agno", "autogen": "AutoGen AgentChat", "google-adk": "Google ADK",
          "strands": "Strands Agents", "smolagents": "smolagents",
          "llama-index": "LlamaIndex", "crewai": "CrewAI"}  # fmt: skip


class _Switch(trace.TracerProvider):
    """A global provider whose tracers follow ``target`` (None: no-op) from call to call."""

    def __init__(self) -> None:
        self.target: trace.TracerProvider | None = None

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _SwitchTracer(self, args, kwargs)


class _SwitchTracer(trace.Tracer):
    def __init__(self, switch: _Switch, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._switch, self._args, self._kwargs = switch, args, kwargs
        self._cache: dict[int, trace.Tracer] = {}

    def _now(self) -> trace.Tracer:
        target = self._switch.target
        if target is None:
            return trace.NoOpTracer()
        if id(target) not in self._cache:
            self._cache[id(target)] = target.get_tracer(*self._args, **self._kwargs)
        return self._cache[id(target)]

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._now().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._now().start_as_current_span(*args, **kwargs)


SWITCH = _Switch()
Peer = Callable[[InMemoryTelemetry], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def _own(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """The framework's own spans (to the global provider) into ``telemetry``."""
    SWITCH.target = telemetry.tracer_provider
    try:
        yield
    finally:
        SWITCH.target = None


def openinference(module: str, name: str) -> Peer:
    """OpenInference's instrumentor ``module.name``, on ``telemetry`` for the run only."""

    @contextlib.contextmanager
    def traced(telemetry: InMemoryTelemetry) -> Iterator[None]:
        import importlib

        instrumentor = getattr(importlib.import_module(module), name)()
        instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()

    return traced


PEERS: dict[str, Peer] = {
    "agno": openinference("openinference.instrumentation.agno", "AgnoInstrumentor"),
    "autogen": _own,
    "google-adk": _own,
    "strands": _own,
    "smolagents": openinference(
        "openinference.instrumentation.smolagents", "SmolagentsInstrumentor"
    ),
    "llama-index": openinference(
        "openinference.instrumentation.llama_index", "LlamaIndexInstrumentor"
    ),
    "crewai": openinference("openinference.instrumentation.crewai", "CrewAIInstrumentor"),
}


def _runs(name: str) -> dict[str, Run]:
    """The three configurations as runs; each returns the framework's own event count."""
    import importlib

    from tests.sources import _script as s

    builder = importlib.import_module(f"tests.sources.{FRAMEWORKS[name][0]}")
    if PEERS[name] is _own and trace.get_tracer_provider() is not SWITCH:
        trace.set_tracer_provider(SWITCH)  # off (no-op) until a peer run switches it on

    async def play(hang: bool, telemetry: InMemoryTelemetry | None, ours: bool) -> int:
        run = s.Run(hang=hang)
        events = builder.events(run)
        if ours and telemetry is not None:
            events = otel_wrapper(
                agent_name="agent", tracer_provider=telemetry.tracer_provider,
                meter_provider=telemetry.meter_provider,
            )(events)  # fmt: skip
        async for _ in events:
            pass
        return len(run.kept)

    async def bare(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
        return await play(hang, None, False)

    async def ours(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
        return await play(hang, telemetry, True)

    async def theirs(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
        if telemetry is None:
            return await play(hang, None, False)
        with PEERS[name](telemetry):
            return await play(hang, None, False)

    return {"bare": bare, "ours": ours, "theirs": theirs}


async def measure(name: str, runs: int, rounds: int) -> dict[str, Any]:
    """Trees, tokens, spans left open, and per-round CPU per event of one framework."""
    configs = _runs(name)
    seen = {}
    for key in ("ours", "theirs"):  # the trees first: a tracer's run must not follow its rounds
        telemetry = InMemoryTelemetry()
        await configs[key](telemetry, False)
        found = {"tree": shape(telemetry), "tokens": summed_input(telemetry),
                 "spans": len(telemetry.spans())}  # fmt: skip
        seen[key] = {**found, "open": await left_open(configs[key])}
        telemetry.shutdown()
    events = await configs["bare"](None, False)
    telemetry = InMemoryTelemetry()
    cpu = await interleave(
        {
            "bare": per_event(configs["bare"], None, runs, events),
            "ours": per_event(configs["ours"], telemetry, runs, events),
            "theirs": per_event(configs["theirs"], telemetry, runs, events),
        },
        rounds,
    )
    return {"framework": name, "events": events, "seen": seen, "cpu": cpu}


def _separate(name: str, runs: int, rounds: int) -> dict[str, Any] | str:
    """``measure`` run by the framework's own environment, or why it could not be."""
    env_name = FRAMEWORKS[name][2]
    python = ROOT / f".venv-{env_name}" / "bin" / "python"
    if not python.exists():
        return f"not run: no .venv-{env_name} (.ci/separate-envs makes it)"
    path = os.pathsep.join(str(ROOT / p) for p in ("src", "contract", ""))
    done = subprocess.run(
        [str(python), "-m", "benchmarks.fig15_frameworks", "--framework", name, "--json",
         "--runs", str(runs), "--rounds", str(rounds)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return f"not run: .venv-{env_name} failed: {done.stderr.strip().splitlines()[-1:]}"
    # The last JSON line: a framework may print to stdout too (CrewAI's panels), even after it.
    line = next(x for x in reversed(done.stdout.splitlines()) if x.startswith('{"framework"'))
    result: dict[str, Any] = json.loads(line)
    return result


def rows(result: dict[str, Any]) -> list[Row]:
    name, cpu, seen = result["framework"], result["cpu"], result["seen"]
    figure, peer = f"15 {LABELS[name]}", FRAMEWORKS[name][1]
    out = []
    for key, tracer in (("ours", "agent-otel"), ("theirs", peer)):
        added, times = diff(cpu, key, "bare"), ratio(cpu, key, "bare")
        extra = {**seen[key], "events": result["events"], "added_us": added.__dict__}
        note = (f"added {added.median:.0f} µs/event [{added.lo:.0f}, {added.hi:.0f}]; "
                f"{seen[key]['spans']} spans; tree {seen[key]['tree']}; "
                f"open after cancel {seen[key]['open']}")  # fmt: skip
        out.append(Row(figure, f"{tracer}: traced / untraced CPU per event", times, "x",
                       note=note, extra=extra))  # fmt: skip
    base = Stat.of(cpu["bare"])
    out.append(Row(figure, "untraced CPU per framework event (load-dependent)", base, "µs",
                   note=f"{result['events']} framework events per run"))  # fmt: skip
    return out


async def run(quick: bool) -> list[Row]:
    runs, rounds = (2, 2) if quick else (10, 9)
    out: list[Row] = []
    for name, (_, _, env_name) in FRAMEWORKS.items():
        if env_name is None:
            result: dict[str, Any] | str = await measure(name, runs, rounds)
        else:
            result = await asyncio.to_thread(_separate, name, runs, rounds)
        if isinstance(result, str):
            out.append(Row(f"15 {LABELS[name]}", "CPU per event", None, "", note=result))
        else:
            out += rows(result)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=list(FRAMEWORKS), required=True)
    parser.add_argument("--runs", type=int, default=10, help="runs per measurement")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--json", action="store_true", help="one JSON line (for run())")
    args = parser.parse_args()
    measured = asyncio.run(measure(args.framework, args.runs, args.rounds))
    if args.json:
        print(json.dumps(measured))
    else:
        for row in rows(measured):
            print(f"{row.measure}: {row.stat}  {row.note}")

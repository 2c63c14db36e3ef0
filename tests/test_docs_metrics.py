"""docs/tracing.md's metric table is what a run records: each metric's name (v1.41.1's and the
head's), kind, unit and attributes, read from a real run through the test kit in both modes.

A metric recorded that the table lacks, a unit or kind that changed, an attribute a point
carries that the table does not name (or one it names that no point carries) fails here, so
the table cannot lag the instruments. ``error.type`` is named where an operation can fail; the
run fails one tool call, so only the tool's is seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import Sum

from agent_otel.testing import InMemoryTelemetry, run_script
from genai_scenario import AGENT, PROVIDER, agent_events

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tracing.md"
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # counted by agent_otel.scrubbed
MODES = {"v1.41": "v1.41.1", "head": "head"}  # the option's value: how the table says it
# error.type: on a failed operation's point (the run fails only a tool); server.*: on a call
# naming its server (the scenario's name none; tests/sources/test_server_address.py)
MAY_BE_UNSEEN = {"error.type", "server.address", "server.port"}


@dataclass(frozen=True)
class Recorded:
    kind: str
    unit: str
    attributes: frozenset[str]


def documented(text: str, mode: str) -> dict[str, Recorded]:
    """The table under ``## Metrics`` as ``mode`` records it: each name, kind, unit and the
    attributes not marked as the other mode's only."""
    section = text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    other = next(label for key, label in MODES.items() if key != mode)
    found: dict[str, Recorded] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        name, head, kind, unit, attributes = cells
        names = re.findall(r"`([^`]+)`", head) if mode == "head" and "`" in head else []
        keys = [
            key
            for key, after in re.findall(r"`([^`]+)`( \([^)]*)?", attributes)
            if not after.startswith(f" ({other} only")
        ]
        recorded = Recorded(kind, unit.strip("`"), frozenset(keys))
        for metric in names or re.findall(r"`([^`]+)`", name)[:1]:
            found[metric] = recorded
    return found


async def recorded(telemetry: InMemoryTelemetry, mode: str) -> dict[str, Recorded]:
    """What one run (two chat calls, two tools, one failing, a priced model, a credential in
    an attribute, every chunk timed) records under ``mode``'s names."""
    await run_script(
        telemetry,
        agent_events(),
        agent_name=AGENT,
        provider=PROVIDER,
        chunk_metric=True,
        semconv=mode,  # type: ignore[arg-type]
        attributes={"note": SECRET},
    )
    found: dict[str, Recorded] = {}
    data = telemetry.metric_reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                keys = {key for point in metric.data.data_points for key in point.attributes}
                kind = "counter" if isinstance(metric.data, Sum) else "histogram"
                found[metric.name] = Recorded(kind, metric.unit, frozenset(keys))
    return found


def differences(page: dict[str, Recorded], run: dict[str, Recorded]) -> list[str]:
    wrong = [f"{name}: recorded, not in the table" for name in sorted(run.keys() - page.keys())]
    wrong += [f"{name}: in the table, not recorded" for name in sorted(page.keys() - run.keys())]
    for name in sorted(page.keys() & run.keys()):
        said, done = page[name], run[name]
        if (said.kind, said.unit) != (done.kind, done.unit):
            wrong.append(f"{name}: table says {said.kind} {said.unit}, is {done.kind} {done.unit}")
        if unnamed := sorted(done.attributes - said.attributes):
            wrong.append(f"{name}: attributes not in the table: {unnamed}")
        if unseen := sorted(said.attributes - done.attributes - MAY_BE_UNSEEN):
            wrong.append(f"{name}: attributes in the table, on no point: {unseen}")
    return wrong


@pytest.mark.parametrize("mode", MODES)
async def test_the_metric_table_is_what_a_run_records(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    wrong = differences(documented(PAGE.read_text(), mode), await recorded(otel_telemetry, mode))
    assert not wrong, f"docs/tracing.md's metric table ({mode}): {wrong}"


def test_the_check_reads_modes_and_finds_each_kind_of_drift() -> None:
    page = (
        "x\n## Metrics\n\n| metric | head | kind | unit | attributes |\n|---|---|---|---|---|\n"
        "| `a.b` (opt-in) | `a.c`, `a.d` | histogram | `s` |"
        " `k` (v1.41.1 only), `h` (head only) |\n"
        "| `z` | the same | counter | `{x}` | `error.type` |\n## Next\n| `q` | | | | |\n"
    )
    old, head = documented(page, "v1.41"), documented(page, "head")
    assert old == {"a.b": Recorded("histogram", "s", frozenset({"k"})), "z": old["z"]}
    assert head.keys() == {"a.c", "a.d", "z"} and head["a.c"].attributes == {"h"}
    run = {"a.b": Recorded("counter", "s", frozenset({"k", "m"})), "y": old["z"]}
    assert differences(old, run) == [
        "y: recorded, not in the table",
        "z: in the table, not recorded",
        "a.b: table says histogram s, is counter s",
        "a.b: attributes not in the table: ['m']",
    ]
    assert differences(old, {**old, "z": Recorded("counter", "{x}", frozenset())}) == []

"""The differential oracle: agent-otel against the reference, ``opentelemetry-util-genai``.

The same run (``genai_scenario``) goes through both, for each content-capture mode, into
in-memory exporters. Each side is reduced to facts that must agree: span names, kinds,
status, parents, attribute keys with their value types, span events; metric names, units,
bucket boundaries and attribute key sets (per operation); log event names, attribute keys
and types, and the span each event belongs to. Values (ids, timings, texts) are not
compared: they differ by construction.

The symmetric difference must equal the intended differences listed in
``docs/conformance.md`` for the installed reference version (each row there gives its
reason): a new difference, or a listed one that went away, fails the test. The ``dev``
environment has util-genai 1.1b0, the ``genai-head`` one 1.3b0; ``.ci/run`` runs both.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel.recording.content._capture import ENV_CAPTURE
from agent_otel.testing import InMemoryTelemetry
from genai_scenario import run_agent_otel, run_reference

DOC = Path(__file__).resolve().parent.parent / "docs" / "conformance.md"
MODES = ("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT")
_VERSION = re.compile(r"^### Only against util-genai (\S+)$")
_ROW = re.compile(r"^\|\s*`([+-]) ([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|$")


def _type(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        inner = sorted({type(v).__name__ for v in value})
        return f"{'|'.join(inner) or 'empty'}[]"
    return type(value).__name__


def span_facts(spans: Iterable[ReadableSpan]) -> set[str]:
    """What a backend shows of each span: labelled by name (``#2`` for the second of a name)."""
    ordered = sorted(spans, key=lambda s: s.start_time or 0)
    seen: Counter[str] = Counter()
    labels: dict[int, str] = {}
    for span in ordered:
        seen[span.name] += 1
        assert span.context is not None
        labels[span.context.span_id] = span.name + (
            f"#{seen[span.name]}" if seen[span.name] > 1 else ""
        )
    facts: set[str] = set()
    for span in ordered:
        assert span.context is not None
        label = f"span {labels[span.context.span_id]}"
        parent = labels.get(span.parent.span_id, "?") if span.parent else "none"
        facts |= {
            f"{label}: kind {span.kind.name}",
            f"{label}: status {span.status.status_code.name}",
            f"{label}: parent {parent}",
        }
        facts |= {f"{label}: attribute {k} {_type(v)}" for k, v in (span.attributes or {}).items()}
        facts |= {f"{label}: event {event.name}" for event in span.events}
    return facts


def metric_facts(telemetry: InMemoryTelemetry) -> set[str]:
    data = telemetry.metric_reader.get_metrics_data()
    facts: set[str] = set()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                facts.add(f"metric {metric.name}: unit {metric.unit}")
                for point in metric.data.data_points:
                    attributes = dict(point.attributes or {})
                    label = f"metric {metric.name} [{attributes.get('gen_ai.operation.name')}]"
                    if isinstance(point, HistogramDataPoint):
                        facts.add(f"{label}: buckets {list(point.explicit_bounds)}")
                    else:
                        facts.add(f"{label}: {type(metric.data).__name__}")
                    facts.add(f"{label}: attributes {','.join(sorted(attributes))}")
    return facts


def log_facts(telemetry: InMemoryTelemetry) -> set[str]:
    spans = {s.context.span_id: s.name for s in telemetry.spans() if s.context is not None}
    facts: set[str] = set()
    for readable in telemetry.logs():
        record = readable.log_record
        attributes = dict(record.attributes or {})
        label = f"log {record.event_name} [{attributes.get('gen_ai.operation.name')}]"
        facts.add(f"{label}: in span {spans.get(record.span_id or 0, '?')}")
        facts |= {f"{label}: attribute {k} {_type(v)}" for k, v in attributes.items()}
    return facts


def facts(telemetry: InMemoryTelemetry) -> set[str]:
    return span_facts(telemetry.spans()) | metric_facts(telemetry) | log_facts(telemetry)


async def diff(mode: str, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """``+ fact`` only agent-otel emits, ``- fact`` only the reference emits, under ``mode``."""
    monkeypatch.setenv(ENV_CAPTURE, mode)
    ours, reference = InMemoryTelemetry(), InMemoryTelemetry()
    await run_agent_otel(ours.tracer_provider, ours.meter_provider, ours.logger_provider)
    await run_reference(
        reference.tracer_provider, reference.meter_provider, reference.logger_provider
    )
    mine, theirs = facts(ours), facts(reference)
    return {f"+ {f}" for f in mine - theirs} | {f"- {f}" for f in theirs - mine}


def reference_version() -> str:
    return metadata.version("opentelemetry-util-genai")


def documented(version: str | None = None) -> dict[str, set[str]]:
    """The intended differences of ``docs/conformance.md`` against ``version`` (default: the
    installed one), by capture mode: the common list, and that version's own."""
    version = version or reference_version()
    out: dict[str, set[str]] = {mode: set() for mode in MODES}
    applies = True
    for line in DOC.read_text(encoding="utf-8").splitlines():
        section = _VERSION.match(line.strip())
        if section is not None:
            applies = section.group(1) == version
            continue
        match = _ROW.match(line.strip())
        if match is None or not applies:
            continue
        sign, fact, modes, reason = match.groups()
        assert reason.strip(), f"no reason given for {fact}"
        for mode in MODES if modes.strip() == "all" else modes.replace(" ", "").split(","):
            out[mode].add(f"{sign} {fact}")
    return out


@pytest.mark.parametrize("mode", MODES)
async def test_differences_from_the_reference_are_the_documented_ones(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = await diff(mode, monkeypatch)
    expected = documented()[mode]
    assert sorted(found - expected) == [], "new differences: list them with a reason, or fix"
    assert sorted(expected - found) == [], "listed differences that are gone: remove them"


async def test_the_oracle_sees_a_difference_it_was_not_told_of(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The diff is not blind: an extra attribute on our chat spans shows up as a new fact."""
    monkeypatch.setenv(ENV_CAPTURE, "NO_CONTENT")
    ours = InMemoryTelemetry()
    await run_agent_otel(
        ours.tracer_provider, ours.meter_provider, attributes={"gen_ai.agent.id": "a-1"}
    )
    assert "span invoke_agent weather: attribute gen_ai.agent.id str" in facts(ours)


def test_every_version_has_its_own_list() -> None:
    """Each version's list is read only for that version; the common list for both."""
    old, head = documented("1.1b0"), documented("1.3b0")
    unit = "+ metric gen_ai.invoke_agent.duration: unit s"
    assert unit in old["NO_CONTENT"] and unit not in head["NO_CONTENT"]
    tool_type = "gen_ai.tool.name,gen_ai.tool.type"
    assert any(tool_type in f for f in head["NO_CONTENT"])
    assert not any(tool_type in f for f in old["NO_CONTENT"])
    assert old["NO_CONTENT"] & head["NO_CONTENT"]  # the common list

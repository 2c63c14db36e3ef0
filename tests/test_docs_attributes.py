"""docs/attributes.md names every attribute key the code has, each under the span or event
that carries it, and nothing the code no longer has.

Three checks: every key of ``_attributes.py`` (the one module that names them) is on the page;
every key the page lists is one of them; and a real run through the test kit, in both
conventions' modes, writes on each span type and span event only keys that type's section
lists (the run's identity and the pending mark, which every span may carry, are named in the
page's opening).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agent_contract.protocol import (
    Error,
    JourneyMarker,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    Usage,
)
from agent_otel import _attributes as A
from agent_otel.testing import InMemoryTelemetry, run_script
from genai_scenario import AGENT, CONVERSATION, PROVIDER, agent_events

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "attributes.md"
EVERY_SPAN = {A.SESSION_ID, A.USER_ID, A.CONVERSATION_ID, A.PENDING}
"""Keys any span of a run may carry: the page names them once, before the sections."""
SPAN_TYPES = {A.OP_INVOKE_AGENT, A.STEP_SPAN_NAME, A.OP_CHAT, A.OP_EXECUTE_TOOL}
EVENT_SECTIONS = ("Span events", "Log events")
KEY = re.compile(r"^[A-Za-z_]+(\.[A-Za-z_]+)+$")


def code_keys() -> dict[str, str]:
    """Every attribute key (and event name) ``_attributes.py`` names, by its constant: the
    dotted values, and our events' short keys; metric names are docs/tracing.md's."""
    found = {}
    for name, value in vars(A).items():
        if not name.isupper() or not isinstance(value, str) or name.startswith("METRIC_"):
            continue
        if KEY.match(value) or name.startswith("EVENT_") or name == "STRIPPED_REASON":
            found[name] = value
    return found


def _rows(section: str) -> Iterable[list[str]]:
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 2:
            yield cells


def sections(text: str) -> dict[str, set[str]]:
    """Each ``## `` section's keys: a span section's first column, keyed by its heading's
    words before the colon (the span type; ``invoke_agent CLIENT`` for a remote agent's); an
    event table's every column, keyed by the event's name."""
    found: dict[str, set[str]] = {}
    for heading, body in re.findall(r"^## (.+)\n((?:(?!^## ).*\n?)*)", text, re.MULTILINE):
        if heading in EVENT_SECTIONS:
            for cells in _rows(body):
                event = re.findall(r"`([^`]+)`", cells[0])[0]
                found[event] = set(re.findall(r"`([^`]+)`", " ".join(cells[1:])))
        else:
            kind = heading.split(":")[0].replace("`", "").strip()  # "invoke_agent CLIENT"
            found[kind] = {k for cells in _rows(body) for k in re.findall(r"`([^`]+)`", cells[0])}
    return found


def listed(text: str) -> set[str]:
    """Every key the page lists: the tables' first columns and the events' attributes."""
    keys = set().union(*sections(text).values())
    return {key for key in keys if KEY.match(key) or key in code_keys().values()}


def test_every_key_the_code_names_is_on_the_page() -> None:
    text = PAGE.read_text()
    missing = sorted(f"{n} ({v})" for n, v in code_keys().items() if f"`{v}`" not in text)
    assert not missing, f"docs/attributes.md does not name {missing}"


def test_every_key_the_page_lists_is_one_the_code_names() -> None:
    stale = sorted(listed(PAGE.read_text()) - set(code_keys().values()))
    assert not stale, f"docs/attributes.md lists keys no code names: {stale}"


def test_the_opening_names_the_keys_every_span_may_carry() -> None:
    opening = PAGE.read_text().split("\n## ", 1)[0]
    assert all(f"`{key}`" in opening for key in EVERY_SPAN)


def rich_events() -> list[Any]:
    """The shared scenario with a journey, a phase, reasoning, a step's error and a run-wide
    usage of every kind: what makes the less common keys appear."""
    events = agent_events()
    events = [JourneyMarker("trip", "j1"), PhaseMarker("plan"), *events[:1], ReasoningDelta("h")]
    events += agent_events()[1:-1]
    events += [Error("late", error_type="bad"), StepBoundary(index=1)]
    counts = dict.fromkeys(("cache_read", "cache_creation", "reasoning"), 1)
    return [
        *events,
        Usage(input_tokens=1, output_tokens=1, **{f"{k}_tokens": v for k, v in counts.items()}),
    ]


def written(telemetry: InMemoryTelemetry) -> dict[str, set[str]]:
    """The keys each span type and each span event carried, of the keys the code names."""
    known = set(code_keys().values())
    found: dict[str, set[str]] = {}
    for span in telemetry.spans():
        kind = span.name.split(" ")[0]
        found.setdefault(kind, set()).update(set(span.attributes or {}) & known - EVERY_SPAN)
        for event in span.events:
            found.setdefault(event.name, set()).update(set(event.attributes or {}) & known)
    return found


def unlisted(page: dict[str, set[str]], run: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{kind}: {key}" for kind, keys in run.items() for key in keys - page.get(kind, set())
    )


@pytest.mark.parametrize("mode", ["v1.41", "head"])
async def test_a_run_writes_each_key_on_the_span_type_the_page_says(
    otel_telemetry: InMemoryTelemetry, mode: str
) -> None:
    await run_script(
        otel_telemetry,
        rich_events(),
        agent_name=AGENT,
        provider=PROVIDER,
        capture_content=True,
        conversation_id=CONVERSATION,
        session_id="s",
        user_id="u",
        semconv=mode,  # type: ignore[arg-type]
    )
    run = written(otel_telemetry)
    assert run.keys() >= SPAN_TYPES
    wrong = unlisted(sections(PAGE.read_text()), run)
    assert not wrong, f"written on a span type whose section does not list it: {wrong}"


def test_the_checks_find_a_missing_a_stale_and_a_misplaced_key() -> None:
    page = (
        "intro `x.y`\n## `chat`: a call\n\n| attribute | when |\n|---|---|\n"
        "| `gen_ai.request.model`, `gen_ai.nope` | start (`unknown` else) |\n"
        "## `invoke_agent` CLIENT: remote\n| `server.port` | x |\n"
        "## Span events\n| event | on | attributes |\n|---|---|---|\n"
        "| `agent_otel.phase` | run | `name`: the phase |\n"
    )
    found = sections(page)
    assert found == {
        "chat": {"gen_ai.request.model", "gen_ai.nope"},
        "invoke_agent CLIENT": {"server.port"},
        "agent_otel.phase": {"name"},
    }
    assert listed(page) - set(code_keys().values()) == {"gen_ai.nope"}
    run = {"chat": {"gen_ai.request.model", "gen_ai.tool.name"}, "step": {"a.b"}}
    assert unlisted(found, run) == ["chat: gen_ai.tool.name", "step: a.b"]

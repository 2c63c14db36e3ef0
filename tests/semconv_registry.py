"""The GenAI semantic conventions as data, read from the vendored ``tests/semconv`` copy.

The YAML model files and message JSON schemas are upstream's, unedited (``tests/semconv/README.md``
names the repository, commit and licence). Tests import this module to look up attribute types,
span requirements, metric definitions and the message JSON schemas; nothing is hand-copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SEMCONV_DIR = Path(__file__).resolve().parent / "semconv"

INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
CONTENT_KEYS = (
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
)
# The attributes whose value is JSON in one of the spec's message schemas.
SCHEMA_FILES = {
    INPUT_MESSAGES: "gen-ai-input-messages.json",
    OUTPUT_MESSAGES: "gen-ai-output-messages.json",
    SYSTEM_INSTRUCTIONS: "gen-ai-system-instructions.json",
}


def semconv_dir() -> Path:
    """The vendored semconv directory, or a clear failure when a file of it is missing."""
    if not (SEMCONV_DIR / "registry.yaml").is_file():
        raise AssertionError(f"the vendored GenAI semantic conventions are missing: {SEMCONV_DIR}")
    return SEMCONV_DIR


@cache
def _yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((semconv_dir() / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data


def _groups(name: str) -> dict[str, dict[str, Any]]:
    return {group["id"]: group for group in _yaml(name)["groups"]}


@dataclass(frozen=True)
class AttributeDef:
    key: str
    type: str  # string, int, double, boolean, string[], any, ... or "enum"
    members: tuple[str, ...] = ()


@cache
def attributes() -> dict[str, AttributeDef]:
    """Every attribute of ``registry.yaml`` and ``error-registry.yaml`` by key."""
    out: dict[str, AttributeDef] = {}
    for name in ("registry.yaml", "error-registry.yaml"):
        for group in _yaml(name)["groups"]:
            for attr in group.get("attributes", ()):
                kind = attr["type"]
                if isinstance(kind, dict):
                    members = tuple(str(m["value"]) for m in kind["members"])
                    out[attr["id"]] = AttributeDef(attr["id"], "enum", members)
                else:
                    out[attr["id"]] = AttributeDef(attr["id"], str(kind))
    return out


def _resolved(groups: dict[str, dict[str, Any]], group_id: str) -> dict[str, Any]:
    """Attribute key -> requirement level along ``extends`` (the most derived group wins)."""
    group = groups[group_id]
    levels = _resolved(groups, group["extends"]) if group.get("extends") else {}
    for attr in group.get("attributes", ()):
        key = attr.get("ref") or attr["id"]
        level = attr.get("requirement_level")
        if level is not None or key not in levels:
            levels[key] = level
    return levels


@dataclass(frozen=True)
class SpanDef:
    id: str
    kind: str  # "client" / "internal"
    levels: dict[str, Any]  # every attribute the span type lists -> its requirement level
    name_template: str | None

    @property
    def required(self) -> set[str]:
        return {k for k, level in self.levels.items() if level == "required"}

    def conditionally_required(self, key: str) -> bool:
        level = self.levels.get(key)
        return isinstance(level, dict) and "conditionally_required" in level


_SPAN_NAME = re.compile(r"\*\*Span name\*\* SHOULD be `([^`]+)`")


def span(group_id: str) -> SpanDef:
    groups = _groups("spans.yaml")
    group = groups[group_id]
    assert group["type"] == "span", group_id
    match = _SPAN_NAME.search(group.get("note", ""))
    return SpanDef(
        group_id, group["span_kind"], _resolved(groups, group_id), match[1] if match else None
    )


def render_span_name(template: str, span_attributes: dict[str, Any]) -> str:
    """The span name ``template`` asks for; a placeholder whose attribute is absent is left out
    (the notes: "When gen_ai.agent.name is not available, it SHOULD be invoke_agent")."""

    def value(match: re.Match[str]) -> str:
        return str(span_attributes.get(match[1], ""))

    return re.sub(r"\{([^}]+)\}", value, template).strip()


@dataclass(frozen=True)
class MetricDef:
    name: str
    instrument: str
    unit: str
    levels: dict[str, Any]

    @property
    def required(self) -> set[str]:
        return {k for k, level in self.levels.items() if level == "required"}


@cache
def metrics() -> dict[str, MetricDef]:
    """Every metric of ``metrics.yaml`` by metric name."""
    groups = _groups("metrics.yaml")
    return {
        g["metric_name"]: MetricDef(
            g["metric_name"], g["instrument"], g["unit"], _resolved(groups, g["id"])
        )
        for g in groups.values()
        if g.get("type") == "metric"
    }


@dataclass(frozen=True)
class EventDef:
    name: str
    levels: dict[str, Any]  # every attribute the event lists (along ``extends``) -> its level

    @property
    def required(self) -> set[str]:
        return {k for k, level in self.levels.items() if level == "required"}


@cache
def events() -> dict[str, EventDef]:
    """Every event of ``events.yaml`` by event name; ``extends`` resolved against spans.yaml's
    attribute groups (the inference details event extends the inference span's attributes)."""
    groups = {**_groups("spans.yaml"), **_groups("events.yaml")}
    return {
        g["name"]: EventDef(g["name"], _resolved(groups, g["id"]))
        for g in _groups("events.yaml").values()
        if g.get("type") == "event"
    }


@cache
def _validator(key: str) -> jsonschema.protocols.Validator:
    schema = json.loads((semconv_dir() / SCHEMA_FILES[key]).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def validate_content(key: str, text: Any) -> Any:
    """Parse a captured content attribute and validate it against its schema, if it has one."""
    assert isinstance(text, str), f"{key} must be a JSON string, got {type(text).__name__}"
    value = json.loads(text)
    if key in SCHEMA_FILES:
        _validator(key).validate(value)
    return value


def type_error(key: str, value: Any) -> str | None:
    """Why ``value`` does not match the registry type of ``key`` (None when it does)."""
    attr = attributes().get(key)
    if attr is None:
        return f"{key} is not in the semantic-conventions registry"
    kind = attr.type
    ok: bool
    if kind in ("string", "enum"):
        ok = isinstance(value, str)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "double":
        ok = isinstance(value, float)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "string[]":
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    elif kind == "any":
        ok = isinstance(value, (str, bool, int, float, list, tuple))
        if ok and isinstance(value, str) and key in CONTENT_KEYS:
            try:
                json.loads(value)
            except ValueError:
                ok = False
    else:
        return f"{key}: registry type {kind!r} not handled by this test"
    return None if ok else f"{key}={value!r} is not of registry type {kind}"

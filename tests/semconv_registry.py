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
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
CONTENT_KEYS = (
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    TOOL_DEFINITIONS,
)
# The attributes whose value is JSON in one of the spec's message schemas.
SCHEMA_FILES = {
    INPUT_MESSAGES: "gen-ai-input-messages.json",
    OUTPUT_MESSAGES: "gen-ai-output-messages.json",
    SYSTEM_INSTRUCTIONS: "gen-ai-system-instructions.json",
    TOOL_DEFINITIONS: "gen-ai-tool-definitions.json",
}


HEAD_DIR = SEMCONV_DIR / "head"
V1_41 = "v1.41"
HEAD = "head"
# The span definition each gen_ai.operation.name we emit follows, in each registry.
SPAN_IDS = {
    V1_41: {
        "chat": "span.gen_ai.inference.client",
        "invoke_agent": "span.gen_ai.invoke_agent.internal",
        "execute_tool": "span.gen_ai.execute_tool.internal",
    },
    HEAD: {
        "chat": "gen_ai.client.inference",
        "invoke_agent": "gen_ai.invocation.internal",
        "execute_tool": "gen_ai.execute_tool.internal",
    },
}


def semconv_dir() -> Path:
    """The vendored semconv directory, or a clear failure when a file of it is missing."""
    if not (SEMCONV_DIR / "registry.yaml").is_file():
        raise AssertionError(f"the vendored GenAI semantic conventions are missing: {SEMCONV_DIR}")
    return SEMCONV_DIR


@cache
def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


@dataclass(frozen=True)
class AttributeDef:
    key: str
    type: str  # string, int, double, boolean, string[], any, ... or "enum"
    members: tuple[str, ...] = ()


def _attribute(key: str, kind: Any) -> AttributeDef:
    if isinstance(kind, dict):
        return AttributeDef(key, "enum", tuple(str(m["value"]) for m in kind["members"]))
    return AttributeDef(key, str(kind))


@dataclass(frozen=True)
class SpanDef:
    id: str
    kind: str  # "client" / "internal"
    levels: dict[str, Any]  # every attribute the span type lists -> its requirement level
    name_template: str | None
    name_templates: tuple[str, ...] = ()  # every form the name note gives, in its order

    @property
    def required(self) -> set[str]:
        return {k for k, level in self.levels.items() if level == "required"}

    def conditionally_required(self, key: str) -> bool:
        level = self.levels.get(key)
        return isinstance(level, dict) and "conditionally_required" in level

    def expected_name(self, span_attributes: dict[str, Any]) -> str:
        """The name the note asks for: its first form whose attributes are all set, else its
        last (a placeholder whose attribute is absent is left out)."""
        for template in self.name_templates:
            if all(key in span_attributes for key in re.findall(r"\{([^}]+)\}", template)):
                return render_span_name(template, span_attributes)
        assert self.name_templates, self.id
        return render_span_name(self.name_templates[-1], span_attributes)


_SPAN_NAME = re.compile(r"\*\*Span name\*\* SHOULD be `([^`]+)`")
_NAME_FORMS = re.compile(r"`(\{gen_ai[^`]*|[a-z_]+ \{[^`]+)`")


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


@dataclass(frozen=True)
class EventDef:
    name: str
    levels: dict[str, Any]  # every attribute the event lists (along ``extends``) -> its level

    @property
    def required(self) -> set[str]:
        return {k for k, level in self.levels.items() if level == "required"}


class Registry:
    """One vendored registry: v1.41.1's ``groups`` files, or the head's ``definition/2``
    files (``attributes``, ``attribute_groups`` with ``ref_group``, ``spans``, ``metrics``).
    The head copy has no events or message schemas of its own: those are v1.41.1's."""

    def __init__(self, name: str, directory: Path, metric_files: tuple[str, ...]) -> None:
        self.name = name
        self.directory = directory
        self.metric_files = metric_files
        self.v2 = _load(directory / "registry.yaml").get("file_format") == "definition/2"
        self.span_ids = SPAN_IDS[name]

    def _yaml(self, file: str) -> dict[str, Any]:
        return _load(self.directory / file)

    @cache  # noqa: B019 (two instances, alive for the session)
    def attributes(self) -> dict[str, AttributeDef]:
        """Every attribute of the registry by key (v1.41.1: with ``error-registry.yaml``)."""
        out: dict[str, AttributeDef] = {}
        if self.v2:
            for attr in self._yaml("registry.yaml")["attributes"]:
                out[attr["key"]] = _attribute(attr["key"], attr["type"])
            out.setdefault("error.type", AttributeDef("error.type", "string"))
            return out
        for file in ("registry.yaml", "error-registry.yaml"):
            for group in self._yaml(file)["groups"]:
                for attr in group.get("attributes", ()):
                    out[attr["id"]] = _attribute(attr["id"], attr["type"])
        return out

    # --- v1.41.1: groups along ``extends`` ----------------------------------------------------
    def _groups(self, file: str) -> dict[str, dict[str, Any]]:
        return {group["id"]: group for group in self._yaml(file)["groups"]}

    def _resolved(self, groups: dict[str, dict[str, Any]], group_id: str) -> dict[str, Any]:
        """Attribute key -> requirement level along ``extends`` (the most derived wins)."""
        group = groups[group_id]
        levels = self._resolved(groups, group["extends"]) if group.get("extends") else {}
        for attr in group.get("attributes", ()):
            key = attr.get("ref") or attr["id"]
            level = attr.get("requirement_level")
            if level is not None or key not in levels:
                levels[key] = level
        return levels

    # --- head: attribute groups along ``ref_group`` ------------------------------------------
    @cache  # noqa: B019
    def _attribute_groups(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for file in ("spans.yaml", *self.metric_files):
            for group in self._yaml(file).get("attribute_groups", ()):
                out[group["id"]] = group["attributes"]
        return out

    def _levels(self, attributes: list[dict[str, Any]]) -> dict[str, Any]:
        """Attribute key -> requirement level, ``ref_group``s expanded (later entries win)."""
        levels: dict[str, Any] = {}
        for attr in attributes:
            if "ref_group" in attr:
                for key, level in self._levels(self._attribute_groups()[attr["ref_group"]]).items():
                    if level is not None or key not in levels:
                        levels[key] = level
                continue
            level = attr.get("requirement_level")
            if level is not None or attr["ref"] not in levels:
                levels[attr["ref"]] = level
        return levels

    # --- what the tests ask ---------------------------------------------------------------------
    def span(self, span_id: str) -> SpanDef:
        if self.v2:
            (spec,) = [s for s in self._yaml("spans.yaml")["spans"] if s["type"] == span_id]
            note = spec.get("name", {}).get("note", "")
            forms = tuple(_NAME_FORMS.findall(note))
            return SpanDef(
                span_id, spec["kind"], self._levels(spec["attributes"]),
                forms[0] if forms else None, forms,
            )  # fmt: skip
        groups = self._groups("spans.yaml")
        group = groups[span_id]
        assert group["type"] == "span", span_id
        match = _SPAN_NAME.search(group.get("note", ""))
        template = match[1] if match else None
        return SpanDef(
            span_id, group["span_kind"], self._resolved(groups, span_id), template,
            (template,) if template else (),
        )  # fmt: skip

    def span_for(self, operation: str) -> SpanDef:
        """The span definition a span of ``gen_ai.operation.name`` = ``operation`` follows."""
        return self.span(self.span_ids[operation])

    @cache  # noqa: B019
    def metrics(self) -> dict[str, MetricDef]:
        """Every metric by name."""
        if self.v2:
            return {
                m["name"]: MetricDef(
                    m["name"], m["instrument"], m["unit"], self._levels(m.get("attributes", []))
                )
                for file in self.metric_files
                for m in self._yaml(file)["metrics"]
            }
        groups = self._groups("metrics.yaml")
        return {
            g["metric_name"]: MetricDef(
                g["metric_name"], g["instrument"], g["unit"], self._resolved(groups, g["id"])
            )
            for g in groups.values()
            if g.get("type") == "metric"
        }

    @cache  # noqa: B019
    def events(self) -> dict[str, EventDef]:
        """Every event of ``events.yaml`` by name; ``extends`` resolved against spans.yaml's
        groups (the inference details event extends the inference span's attributes)."""
        if self.v2:
            return REGISTRIES[V1_41].events()
        groups = {**self._groups("spans.yaml"), **self._groups("events.yaml")}
        return {
            g["name"]: EventDef(g["name"], self._resolved(groups, g["id"]))
            for g in self._groups("events.yaml").values()
            if g.get("type") == "event"
        }

    def type_error(self, key: str, value: Any) -> str | None:
        """Why ``value`` does not match this registry's type of ``key`` (None when it does)."""
        return _type_error(self.attributes(), key, value)


REGISTRIES = {
    V1_41: Registry(V1_41, SEMCONV_DIR, ("metrics.yaml",)),
    HEAD: Registry(HEAD, HEAD_DIR, ("metrics.yaml", "token-metrics.yaml")),
}


def attributes() -> dict[str, AttributeDef]:
    """Every attribute of v1.41.1's ``registry.yaml`` and ``error-registry.yaml`` by key."""
    semconv_dir()
    return REGISTRIES[V1_41].attributes()


def span(group_id: str) -> SpanDef:
    return REGISTRIES[V1_41].span(group_id)


MCP_DIR = SEMCONV_DIR / "mcp"


@cache
def mcp_attributes() -> dict[str, AttributeDef]:
    """Every attribute of the MCP and JSON-RPC registries (``tests/semconv/mcp``) by key: the
    keys an MCP tool's span adds (``mcp.method.name``'s members are the MCP methods)."""
    out: dict[str, AttributeDef] = {}
    for file in ("registry.yaml", "jsonrpc-registry.yaml"):
        for group in _load(MCP_DIR / file)["groups"]:
            for attr in group.get("attributes", ()):
                out[attr["id"]] = _attribute(attr["id"], attr["type"])
    return out


def metrics() -> dict[str, MetricDef]:
    """Every metric of v1.41.1's ``metrics.yaml`` by metric name."""
    return REGISTRIES[V1_41].metrics()


def events() -> dict[str, EventDef]:
    """Every event of v1.41.1's ``events.yaml`` by event name."""
    return REGISTRIES[V1_41].events()


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
    """Why ``value`` does not match v1.41.1's registry type of ``key`` (None when it does)."""
    return _type_error(attributes(), key, value)


def _type_error(registry: dict[str, AttributeDef], key: str, value: Any) -> str | None:
    attr = registry.get(key)
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

"""What an instrumented agent's run is recorded with: an allow-list of its call parameters.

Event contract: ``config["conversation_id"]``, ``["session_id"]``, ``["user_id"]`` and, when
content capture is on, the messages.
Agent contract: ``thread_id``, ``llm_provider``, ``llm_kwargs``' model and sampling parameters,
whether a ``response_format`` was given (JSON asked for, its content never read),
``strategy``, ``recursion_limit``, the NAMES of tools, presets, sub-agents and skills, whether
the run resumes an interrupt, and (capture on only) the system and user messages. Nothing
else from a call is ever read into telemetry: not tool objects, not other ``llm_kwargs`` (API
keys live there), not presets' ``fixed_kwargs``, not ``resume`` payloads, not extra kwargs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import reads_values, report
from agent_otel._plain import get, id_text, items_of, plain_value, text_of
from agent_otel.recording._settings import RunSettings

reads_values(__name__, frozenset({"event_settings"}))  # an instrumented call's input messages

_SAMPLING = (
    ("temperature", A.REQUEST_TEMPERATURE),
    ("top_p", A.REQUEST_TOP_P),
    ("max_tokens", A.REQUEST_MAX_TOKENS),
)


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What one ``instrument()`` call asked for: a name override and the base settings;
    ``asked``, the options as given (those not None), to tell a second call that differs."""

    name: str | None
    settings: RunSettings
    asked: Mapping[str, Any] = field(default_factory=dict, compare=False)


# What a caller or an agent hands us is read as the plain built-in it is (a ``str`` enum
# member, a ``dict`` subclass whose ``get`` raises...): its own methods never run here, and
# what the run records is a plain ``str``, ``int`` or ``float``.
def _text(value: Any) -> str | None:
    """A non-empty string as the plain ``str`` it is, else None."""
    if type(value) is not str:
        value = text_of(value)
    return value or None


def _id(value: Any) -> str | None:
    """An id as the options read it (:func:`~agent_otel._plain.id_text`): a non-empty
    string, an int or a UUID as its text (what databases hand out), else None."""
    text = id_text(value)
    return text if type(text) is str and text else None


def _number(value: Any) -> int | float | None:
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return plain_value(value)  # type: ignore[no-any-return]


def _name_of(item: Any) -> str | None:
    """A tool, preset, sub-agent or skill's name, read by shape: ``.name`` or ``["name"]``."""
    if isinstance(item, str):
        return _text(item)
    if isinstance(item, Mapping):
        function = get(item, "function")  # an OpenAI-style tool definition
        fallback = get(function, "name") if isinstance(function, Mapping) else None
        return _text(get(item, "name", fallback))
    return _text(getattr(item, "name", None))


def _names(*groups: Any) -> list[str]:
    out: dict[str, None] = {}
    for group in groups:
        if group is None:
            continue
        items: Iterable[Any]
        if isinstance(group, (str, Mapping)):
            items = (group,)
        elif isinstance(group, (list, tuple)):
            items = items_of(group)
        elif not isinstance(group, Iterable) or isinstance(group, Iterator):
            continue  # an iterator is the caller's to consume, not ours
        else:
            items = group
        for item in items:
            name = _name_of(item)
            if name is not None:
                out[name] = None
    return list(out)


def agent_name(agent: Any, options: AgentSetup) -> str:
    """``name=``, else the agent's ``tool_name``, else its ``name``, else its class name."""
    candidates = (options.name, getattr(agent, "tool_name", None), getattr(agent, "name", None))
    for candidate in candidates:
        if type(candidate) is not str:
            candidate = text_of(candidate)  # a str enum member: its value
        if candidate:
            return candidate
    return type(agent).__name__


def _describe(agent: Any, options: AgentSetup) -> dict[str, Any]:
    return {
        "agent_name": agent_name(agent, options),
        "agent_description": _text(getattr(agent, "tool_description", None)),
    }


def event_settings(options: AgentSetup, agent: Any, messages: Any, config: Any) -> RunSettings:
    """Settings of one event-contract run (``stream`` / ``invoke``)."""
    base = options.settings
    ids = config if isinstance(config, Mapping) else {}
    captured = None
    if base.capture is not None:
        if isinstance(messages, (list, tuple)):
            captured = items_of(messages)
        elif isinstance(messages, (str, bytes, Mapping)):
            pass  # no history (and a subclass's own iteration may raise)
        elif isinstance(messages, Iterable) and not isinstance(messages, Iterator):
            try:  # (an iterator is one-shot: the agent's to consume)
                captured = list(messages)
            except Exception:  # its own iteration raised: the agent's, the run's input unknown
                report("instrument input")
    return replace(
        base,
        **_describe(agent, options),
        conversation_id=_id(get(ids, "conversation_id")) or base.conversation_id,
        session_id=_id(get(ids, "session_id")) or base.session_id,
        user_id=_id(get(ids, "user_id")) or base.user_id,
        input_messages=captured,
    )


def run_attributes(kwargs: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The allow-listed attributes of an Agent-contract call (see the module docstring)."""
    out: dict[str, AttributeValue] = {}
    llm = kwargs.get("llm_kwargs")
    if isinstance(llm, Mapping):
        model = _text(get(llm, "model"))
        if model is not None:
            out[A.REQUEST_MODEL] = model
        for key, attribute in _SAMPLING:
            value = _number(get(llm, key))
            if value is not None:
                out[attribute] = value
    if kwargs.get("response_format") is not None:  # a schema or a class: JSON was asked for
        out[A.OUTPUT_TYPE] = A.OUTPUT_TYPE_JSON  # (what was requested, never the format)
    strategy = _text(kwargs.get("strategy"))
    if strategy is not None:
        out[A.STRATEGY] = strategy
    limit = kwargs.get("recursion_limit")
    if isinstance(limit, int) and not isinstance(limit, bool):
        out[A.RECURSION_LIMIT] = limit if type(limit) is int else int.__int__(limit)
    for key, groups in (
        (A.TOOL_NAMES, ("tools", "tool_names")),
        (A.PRESET_NAMES, ("presets",)),
        (A.SUBAGENT_NAMES, ("subagents",)),
        (A.SKILL_NAMES, ("skills", "inline_skills")),
    ):
        names = _names(*(kwargs.get(group) for group in groups))
        if names:
            out[key] = names
    if kwargs.get("resume") is not None:
        out[A.RESUMED] = True
    return out


def agent_settings(options: AgentSetup, agent: Any, kwargs: Mapping[str, Any]) -> RunSettings:
    """Settings of one Agent-contract run (``run`` / ``astream``)."""
    base = options.settings
    capture = base.capture is not None
    user = _text(kwargs.get("user_message")) if capture else None
    system = _text(kwargs.get("system_message")) if capture else None
    return replace(
        base,
        **_describe(agent, options),
        conversation_id=_id(kwargs.get("thread_id")) or base.conversation_id,
        provider=_text(kwargs.get("llm_provider")) or base.provider,
        agent_attributes={**base.agent_attributes, **run_attributes(kwargs)},
        input_messages=[{"role": "user", "content": user}] if user is not None else None,
        system_instructions=system,
    )

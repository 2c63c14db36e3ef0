"""``arguments_json``: a tool call's arguments as JSON text, by one rule for every adapter.

A framework hands its adapter a call's arguments as the model's text or as the values it
parsed or built (a dict; a node's, a plugin's or a model's own objects: a date, a set, a
``Decimal``, a pydantic model). ``ToolCall.function.arguments`` is JSON text, and a value JSON
has no form for must never cost the call its span nor reach the agent as our exception. The
rule, the one content capture applies to the same values (``agent_otel``'s content copy
imports ``printed`` and ``json_key`` from here):

* text is the call's arguments as they are; ``None`` is ``{}`` (no arguments);
* what ``json.dumps`` writes (strict: no ``NaN``) is written so, unchanged;
* else the value is repaired: dicts, lists and tuples are copied, a NaN or infinity becomes
  ``null`` (JSON has no word for them, and other parsers refuse Python's ``NaN``), a key as
  ``json.dumps`` writes it (``1`` as ``"1"``, ``True`` as ``"true"``) or else its ``str()``,
  any other value its ``str()`` (``"2026-01-01"``, ``"{1, 2}"``), ``<unprintable T>`` when
  ``str()`` raises, and nesting past ``MAX_DEPTH``, a container inside itself or an integer
  too long to write the truncation mark.

A repaired call is told: ``tool_call`` gives its ``ToolCall`` and then an ``Error``
(``unencodable_arguments``, not fatal), which the recorder counts as a repair
(``agent_otel.anomalies``), not as a failure of the call.

The SDK sources build their request from the agent's history by the same rule: a value they
send as JSON text (a tool result the Responses API takes as a string) is ``json_text``'s, and
a call's arguments an API takes as an object (Anthropic's ``tool_use.input``) are
``arguments_object``'s, so no value of the agent's history raises our exception into its run.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agent_contract.events import AgentEvent, Error, FunctionCall, ToolCall

__all__ = [
    "MAX_DEPTH",
    "TRUNCATION_MARK",
    "INVALID_JSON",
    "UNENCODABLE_ARGUMENTS",
    "arguments_json",
    "arguments_object",
    "arguments_text",
    "json_key",
    "json_text",
    "printed",
    "repaired_history",
    "tool_call",
]

MAX_DEPTH = 64
"""How deep content is read (a tool call's arguments here, captured content and the scrubber
in agent-otel): deeper, or a container inside itself, becomes :data:`TRUNCATION_MARK`."""
TRUNCATION_MARK = "...[truncated]"
"""What ends a value cut to its bound, or stands for what nests past one: the one mark of the
contract and of agent-otel (which imports it from here)."""
UNENCODABLE_ARGUMENTS = "unencodable_arguments"
"""The ``error_type`` of the ``Error`` told after a ``ToolCall`` whose arguments were repaired."""
INVALID_JSON = "INVALID_JSON"
"""The key ``arguments_object`` keeps arguments under when they are no JSON object: the one
Anthropic's tool-use docs name for a call whose input could not be read."""
_REPAIRED = "a tool call's arguments held values JSON has no form for: written by the repair rule"
_SENT_REPAIRED = (
    "a tool call's arguments in the request's history were no JSON object: sent as "
    '{"INVALID_JSON": their text}'
)
_STRICT = json.JSONEncoder(allow_nan=False)


def arguments_json(value: Any) -> tuple[str, bool]:
    """``value`` (a call's arguments) as JSON text by the module's rule, and whether it was
    repaired. Never raises."""
    if isinstance(value, str):
        return str.__str__(value), False  # a subclass as the str it is: none of its code runs
    if value is None:
        return "{}", False
    return json_text(value)


def json_text(value: Any) -> tuple[str, bool]:
    """Any ``value`` as strict JSON text by the module's rule (a str is a JSON string, None
    ``null``), and whether it was repaired. Never raises."""
    try:
        return _STRICT.encode(value), False
    except Exception:  # a value JSON has no form for, a NaN, a cycle, a depth, a raising dict
        pass
    return json.dumps(_plain(value, 0, set())), True


def arguments_object(value: Any) -> tuple[dict[str, Any], bool]:
    """A call's arguments as the JSON object an API takes for them, and whether they were
    repaired. Text that is no JSON object (cut short, Python's ``NaN``, a list, nesting past
    the parser) goes as ``{"INVALID_JSON": text}``: the call stays in the history and the model
    reads what it wrote. Never raises."""
    text = arguments_text(value)
    if not text.strip():
        return {}, False
    try:
        read = json.loads(text, parse_constant=_refused)
    except (ValueError, RecursionError):
        read = None
    if type(read) is dict:
        return read, False
    return {INVALID_JSON: text}, True


def _refused(name: str) -> Any:
    raise ValueError(f"{name} is no JSON")


def arguments_text(value: Any) -> str:
    """``arguments_json``'s text alone: for what tells no event (a call's scope, a request's
    history, the key a call is matched by), or whose call tells its repair."""
    return arguments_json(value)[0]


def tool_call(call_id: Any, name: Any, arguments: Any) -> tuple[AgentEvent, ...]:
    """The ``ToolCall`` of a framework's call, its ``arguments`` written by ``arguments_json``,
    then, when they were repaired, the ``Error`` that tells it."""
    text, repaired = arguments_json(arguments)
    call = ToolCall(id=call_id, function=FunctionCall(name, text))
    if repaired:
        return call, Error(message=_REPAIRED, error_type=UNENCODABLE_ARGUMENTS)
    return (call,)


def repaired_history() -> Error:
    """The ``Error`` an SDK source tells after its ``LLMCallStart`` when it sent a call of the
    request's history with its arguments repaired (``arguments_object``): counted as every
    adapter's repair of arguments is, not a failure."""
    return Error(message=_SENT_REPAIRED, error_type=UNENCODABLE_ARGUMENTS)


def _plain(value: Any, depth: int, path: set[int]) -> Any:
    """A copy of ``value`` that ``json.dumps`` writes strictly (the module's rule). ``path``
    holds the ids of the containers ``value`` is inside."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else None
    if isinstance(value, int):
        number = int.__int__(value)
        return number if _writable(number) else TRUNCATION_MARK
    if not isinstance(value, (dict, list, tuple)):
        return printed(value)
    if depth >= MAX_DEPTH or id(value) in path:
        return TRUNCATION_MARK
    path.add(id(value))
    try:  # a subclass as the container it is: none of its methods runs
        if isinstance(value, dict):
            return {json_key(k): _plain(v, depth + 1, path) for k, v in dict.items(value)}
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [_plain(item, depth + 1, path) for item in items]
    except Exception:  # changed while read (a key's __hash__ of the agent's): its text
        return printed(value)
    finally:
        path.discard(id(value))


def _writable(number: int) -> bool:
    """Whether ``int -> str`` writes ``number`` (past ~4300 digits it raises)."""
    try:
        int.__repr__(number)
    except ValueError:
        return False
    return True


def printed(value: Any) -> str:
    """``str(value)``, a ``str`` subclass it returns as the str it is; ``<unprintable T>``
    when that raises (``T`` the class's name, when even that can be read)."""
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)
    except Exception:
        pass
    try:
        name = type.__dict__["__name__"].__get__(type(value))
    except Exception:
        name = "object"
    return f"<unprintable {name}>"


def json_key(key: Any) -> str:
    """A dict key as ``json.dumps`` writes it (a number, ``true``, ``null``), ``printed`` for
    a key it refuses (a tuple, a date)."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is True or key is False or key is None:
        return "true" if key is True else "false" if key is False else "null"
    if isinstance(key, float):
        number = float.__float__(key)
        return float.__repr__(number) if math.isfinite(number) else json.dumps(number)
    if isinstance(key, int):
        number = int.__int__(key)
        return int.__repr__(number) if _writable(number) else TRUNCATION_MARK
    return printed(key)

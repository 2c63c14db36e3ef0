"""The output type a model request asks for (``gen_ai.output.type`` of its chat span).

The GenAI conventions set it on a request that includes an output format: ``json`` for a
structured answer with a schema or none. Read from the request's parameters as each API
names the format: OpenAI's ``response_format`` (``{"type": "json_schema"}``, ``"json_object"``,
or a class given to ``.parse()``), the Responses API's ``text.format`` and ``text_format``,
Anthropic's ``output_config.format`` (``{"type": "json_schema"}``), and ``output_type`` where
an adapter tells the type itself (a framework that asks for JSON in a shape of its own).
"""

from __future__ import annotations

from typing import Any

from agent_otel import _attributes as A

__all__ = ["FORMAT_KEYS", "output_type"]

FORMAT_KEYS = frozenset({"output_config", "output_type", "response_format", "text", "text_format"})
"""The request parameters that may name an output format."""

# A format's ``type`` (OpenAI's names, a type the conventions name) -> gen_ai.output.type.
_TYPES = {
    "json_schema": A.OUTPUT_TYPE_JSON,
    "json_object": A.OUTPUT_TYPE_JSON,
    "json": A.OUTPUT_TYPE_JSON,
    "text": A.OUTPUT_TYPE_TEXT,
}


def output_type(key: str, value: Any) -> str | None:
    """The output type ``value``, the request's ``key`` parameter, asks for; ``None`` for
    none, or a format it does not name."""
    if key in ("text", "output_config"):  # the Responses API's, Anthropic's: {"format": {...}}
        value = dict.get(value, "format") if isinstance(value, dict) else None
    elif isinstance(value, type):  # a class to parse the answer as: a JSON schema's
        return A.OUTPUT_TYPE_JSON if key in ("response_format", "text_format") else None
    if isinstance(value, dict):  # read as the dict it is: a subclass's own get not run
        value = dict.get(value, "type")
    return _TYPES.get(value) if type(value) is str else None

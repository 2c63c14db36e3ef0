"""The tools a model request offers, as the conventions' tool definitions.

``gen_ai.tool.definitions`` (``gen-ai-tool-definitions.json``): a list of
``{"type": "function", "name", "description", "parameters"}`` for functions and
``{"type", "name"}`` for anything else. Read by shape from the provider request formats an
``LLMCallStart`` carries (OpenAI Chat Completions, the Responses API, Anthropic Messages) or
from plain callables; an entry with no name is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_otel._guard import reads_values

reads_values(__name__)  # its reads run the agent's code: what that raises is the agent's

__all__ = ["tool_definitions"]

MAX_TOOLS = 128  # more than any provider accepts in one request


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """The definitions of ``tools`` (empty when there are none, or none is readable)."""
    if not isinstance(tools, (list, tuple)):
        return []
    out = []
    for tool in tools[:MAX_TOOLS]:
        definition = _definition(tool)
        if definition is not None:
            out.append(definition)
    return out


def _definition(tool: Any) -> dict[str, Any] | None:
    if isinstance(tool, Mapping):
        kind = tool.get("type")
        function = tool.get("function")
        if isinstance(function, Mapping):  # Chat Completions: {"type": "function", "function"}
            return _function(function.get("name"), function.get("description"),
                             function.get("parameters"))  # fmt: skip
        if kind in (None, "function", "custom") or "input_schema" in tool:
            # the Responses API's flat function, Anthropic's {"name", "input_schema"}
            schema = tool.get("parameters", tool.get("input_schema"))
            return _function(tool.get("name"), tool.get("description"), schema)
        name = tool.get("name")  # a provider's own tool: web search, code interpreter, MCP
        if not isinstance(kind, str) or not kind:
            return None
        return {"type": kind, "name": name if isinstance(name, str) and name else kind}
    if callable(tool):  # a plain function handed to a framework
        return _function(getattr(tool, "__name__", None), getattr(tool, "__doc__", None), None)
    return None


def _function(name: Any, description: Any, parameters: Any) -> dict[str, Any] | None:
    if not isinstance(name, str) or not name:
        return None
    definition: dict[str, Any] = {"type": "function", "name": name}
    if isinstance(description, str) and description:
        definition["description"] = description
    if isinstance(parameters, Mapping):
        definition["parameters"] = parameters
    return definition

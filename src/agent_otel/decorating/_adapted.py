"""The frameworks whose agents the contract's adapters trace (docs/adapters.md), by the module
their agent classes are defined in: one table, so an agent of theirs handed to ``instrument()``
(which traces agents of the contract) is told the adapter that traces its runs whole, with
their model and tool calls, wherever agent-otel meets it."""

from __future__ import annotations

from collections.abc import Mapping

from agent_otel._guard import warn_once
from agent_otel._plain import a_kind

__all__ = ["ADAPTED", "PAGE", "adapter_of", "tell_adapted"]

PAGE = "docs/adapters.md"

ADAPTED: Mapping[str, str] = {
    "langgraph.pregel": "langgraph_events(graph, input, config) of "
    "agent_contract.sources.langgraph_stream",
    "pydantic_ai.agent": "pydantic_ai_events(agent, prompt) of "
    "agent_contract.sources.pydantic_ai_stream",
    "agents.agent": "openai_agents_events(agent, input) of agent_contract.sources.openai_agents",
    "agno": "agno_events(agent, input) of agent_contract.sources.agno_stream",
    "autogen_agentchat": "autogen_events(agent_or_team, task) of "
    "agent_contract.sources.autogen_stream",
    "google.adk": "google_adk_events(runner_or_agent, message) of "
    "agent_contract.sources.google_adk_stream",
    "strands.agent": "strands_events(agent, prompt) of agent_contract.sources.strands_stream",
    "smolagents": "smolagents_events(agent, task, sink=...) of "
    "agent_contract.sources.smolagents_stream",
    "llama_index.core.agent": "llama_index_events(agent, user_msg) of "
    "agent_contract.sources.llama_index_stream",
    "crewai": "crewai_events(crew_or_agent, ...) of agent_contract.sources.crewai_stream",
}
"""By the module (or package) an agent class of the framework is defined in: its adapter."""


def adapter_of(kind: type) -> str:
    """The adapter call for an agent of class ``kind`` (or one of its bases), or ``""``. Read
    off each class's own ``__module__`` (never an attribute the class or agent defines)."""
    try:
        classes = type.__dict__["__mro__"].__get__(kind)
    except Exception:  # no class (a hostile metaclass): none of theirs
        return ""
    for each in classes:
        try:
            module = type.__dict__["__module__"].__get__(each)
        except Exception:
            continue
        if type(module) is not str:
            continue
        for prefix, adapter in ADAPTED.items():
            if module == prefix or module.startswith(prefix + "."):
                return adapter
    return ""


def tell_adapted(agent_or_class: object, adapter: str) -> None:
    """Once per class: ``instrument()`` took an agent of a framework with an adapter. Its
    entry points are traced as a contract agent's, so each run is an ``invoke_agent`` span
    alone (none of the framework's model and tool calls): say what traces it whole."""
    given = a_kind(agent_or_class)
    warn_once(
        "instrument() of a framework's agent",
        given,
        "agent-otel: instrument() took %s, a framework's agent: its runs are recorded as "
        "invoke_agent spans alone, without their model and tool calls. Trace it through its "
        "adapter, otel_wrapper(...)(%s) (%s)",
        given,
        adapter,
        PAGE,
    )

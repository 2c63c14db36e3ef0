"""Adapters: real LLM SDK streams and agent frameworks' event streams, as contract events.

They live beside the contract, not in the middleware, because they need no OpenTelemetry:
an adapter only translates one vocabulary into ``agent_contract.protocol``'s, and
``otel_wrapper()`` (or any other consumer of the contract) does the rest. Each module imports
its SDK or framework lazily, inside the functions that need it, so importing a module here
costs nothing and the contract stays importable with pydantic and the standard library only.
Install a source's package with its extra (``pip install agent-otel[openai]`` ...).

LLM SDK streams (one LLM call each: ``LLMCallStart``, deltas, ``ToolCall``, ``Usage``,
``LLMCallEnd``):

* ``agent_contract.sources.openai_chat`` — OpenAI Chat Completions (extra ``openai``).
* ``agent_contract.sources.openai_responses`` — the OpenAI Responses API (extra ``openai``).
* ``agent_contract.sources.anthropic_messages`` — Anthropic Messages (extra ``anthropic``).
* ``agent_contract.sources.litellm_chat`` — LiteLLM's ``acompletion`` (extra ``litellm``).

Agent frameworks (a whole run: steps, LLM calls, tool calls and results, handoffs):

* ``agent_contract.sources.openai_agents`` — the OpenAI Agents SDK (extra ``openai-agents``).
* ``agent_contract.sources.langgraph_stream`` — LangGraph (extra ``langgraph``).
* ``agent_contract.sources.pydantic_ai_stream`` — pydantic-ai (extra ``pydantic-ai``).
* ``agent_contract.sources.agno_stream`` — Agno (extra ``agno``).
* ``agent_contract.sources.autogen_stream`` — AutoGen AgentChat (extra ``autogen-agentchat``).
* ``agent_contract.sources.google_adk_stream`` — Google ADK (extra ``google-adk``).
* ``agent_contract.sources.strands_stream`` — Strands Agents (extra ``strands-agents``).
* ``agent_contract.sources.smolagents_stream`` — smolagents (extra ``smolagents``).
* ``agent_contract.sources.llama_index_stream`` — LlamaIndex agent workflows (extra
  ``llama-index``).
* ``agent_contract.sources.crewai_stream`` — CrewAI crews and agents (extra ``crewai``).
"""

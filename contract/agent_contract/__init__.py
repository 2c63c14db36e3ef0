"""The agent contract: both seed contracts, pydantic and the standard library only.

* ``agent_contract.protocol`` — the event-stream contract (``AgentProtocol``, ``Message``,
  the ``AgentEvent`` family, ``Step`` / ``InvokeResult``, ``collect``, ``StreamingAgent``).
* ``agent_contract.agent`` — the ``Agent`` ABC contract and its ``StreamEvent`` vocabulary.
* ``agent_contract.examples`` — scripted example agents for tests.

Nothing is imported eagerly here: import the submodule you need. No module of this package
imports OpenTelemetry or any vendor (LangChain, LiteLLM) package.
"""

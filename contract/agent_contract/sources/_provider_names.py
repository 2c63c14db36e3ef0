"""``gen_ai.provider.name`` as the GenAI conventions list it, for the SDK sources.

The conventions name Azure OpenAI ``azure.ai.openai``, not ``openai``; an OpenAI SDK source
given the SDK's Azure client (``AzureOpenAI``, ``AsyncAzureOpenAI``) names that, though it
calls the same methods. LiteLLM's routing names (``litellm.get_llm_provider``) differ from the
conventions' for the providers both know (``bedrock``, ``vertex_ai``, ``xai``...); a name the
conventions do not list stays LiteLLM's (a custom, friendly name, as they ask).
"""

from __future__ import annotations

from typing import Any

OPENAI = "openai"
AZURE_OPENAI = "azure.ai.openai"
_AZURE_CLIENTS = frozenset({"AzureOpenAI", "AsyncAzureOpenAI"})
LITELLM_NAMES = {
    "azure": AZURE_OPENAI,
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
    "cohere_chat": "cohere",
    "text-completion-openai": OPENAI,
    "ollama_chat": "ollama",
}
"""LiteLLM's routing name -> the conventions' provider name, where they differ."""


def openai_client_provider(client: Any) -> str:
    """The provider an OpenAI SDK ``client`` calls: Azure OpenAI for the SDK's Azure clients
    (or a subclass of one), else OpenAI."""
    try:
        mro = type(client).__mro__
    except Exception:  # an object whose type answers nothing: the default
        return OPENAI
    return AZURE_OPENAI if any(c.__name__ in _AZURE_CLIENTS for c in mro) else OPENAI


def litellm_provider(routing: str) -> str:
    """The conventions' name for LiteLLM's ``routing`` name (itself when they list none)."""
    return LITELLM_NAMES.get(routing, routing)

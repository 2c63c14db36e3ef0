"""``gen_ai.provider.name`` per the GenAI conventions' list, whatever client or routing name a
source is given: an Azure OpenAI client's calls are ``azure.ai.openai``, LiteLLM's routing
names (``azure``, ``bedrock``, ``vertex_ai``, ...) the conventions' own."""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import HISTORY
from ._http import sse, transport
from ._trace import first_start

openai = pytest.importorskip("openai")


def _azure(body: bytes) -> Any:
    """An ``AsyncAzureOpenAI`` client (the SDK's own Azure class) over a mock transport."""
    return openai.AsyncAzureOpenAI(
        api_key="test", azure_endpoint="http://mock.invalid", api_version="2024-10-21",
        azure_deployment="gpt-4o-mini", http_client=transport(body),
    )  # fmt: skip


async def test_an_azure_openai_clients_calls_name_azure_as_their_provider(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Chat Completions and Responses through an ``AsyncAzureOpenAI`` client: each chat span
    and the run say ``azure.ai.openai`` (the conventions' value for Azure OpenAI), not
    ``openai``; the answer and tokens still read."""
    from agent_contract.sources.openai_chat import stream_chat
    from agent_contract.sources.openai_responses import stream_responses

    chat = stream_chat(_azure(sse(_recorded.chat(tools=False), done=True)), HISTORY, "gpt-4o-mini")
    await run_script(otel_telemetry, chat, agent_name="chat")
    responses = _azure(sse(_recorded.responses(tools=False), named=True))
    await run_script(otel_telemetry, stream_responses(responses, HISTORY, "gpt-5-mini"),
                     agent_name="responses")  # fmt: skip

    chats = [sp for sp in otel_telemetry.spans() if sp.name.startswith("chat ")]
    runs = [sp for sp in otel_telemetry.spans() if sp.name.startswith("invoke_agent ")]
    assert len(chats) == 2 and len(runs) == 2
    for span in [*chats, *runs]:
        assert (span.attributes or {}).get("gen_ai.provider.name") == "azure.ai.openai", span.name
    assert all((sp.attributes or {}).get("gen_ai.usage.input_tokens") for sp in chats)


async def test_a_provider_given_to_stream_chat_still_names_the_call() -> None:
    """``provider=`` given to ``stream_chat`` stands, for an Azure client too."""
    from agent_contract.sources.openai_chat import stream_chat

    source = stream_chat(_azure(b""), HISTORY, "gpt-4o-mini", provider="my-gateway")
    assert (await first_start(source)).provider == "my-gateway"


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("azure/gpt-4o", "azure.ai.openai"),
        ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", "aws.bedrock"),
        ("vertex_ai/gemini-2.5-pro", "gcp.vertex_ai"),
        ("gemini/gemini-2.5-flash", "gcp.gemini"),
        ("mistral/mistral-large-latest", "mistral_ai"),
        ("xai/grok-3", "x_ai"),
        ("openai/gpt-4o-mini", "openai"),
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("groq/llama-3.1-8b-instant", "groq"),
        ("ollama/llama3", "ollama"),  # listed nowhere: LiteLLM's own name stays
    ],
)
async def test_litellm_calls_name_their_provider_as_the_conventions_do(
    model: str, provider: str
) -> None:
    """``stream_litellm``'s call names the conventions' provider for LiteLLM's routing of
    ``model`` (``bedrock/...`` is ``aws.bedrock``), not LiteLLM's own routing name."""
    pytest.importorskip("litellm")
    from agent_contract.sources.litellm_chat import stream_litellm

    assert (await first_start(stream_litellm(None, HISTORY, model))).provider == provider


async def test_an_agents_sdk_model_on_an_azure_client_names_azure(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The Agents SDK on an ``AsyncAzureOpenAI`` client, given to the model itself or set as
    the SDK's default client for a model named by a string: the chat span and the run say
    ``azure.ai.openai``."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        set_default_openai_client,
        set_tracing_disabled,
    )
    from agents.models import _openai_shared

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)
    body = sse(_recorded.chat(tools=False), done=True)
    own = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=_azure(body))
    await run_script(otel_telemetry, openai_agents_events(Agent(name="own", model=own), "hi"),
                     agent_name="own")  # fmt: skip
    was = _openai_shared.get_default_openai_client()
    set_default_openai_client(_azure(sse(_recorded.responses(tools=False), named=True)), False)
    try:
        named = Agent(name="named", model="gpt-5-mini")
        await run_script(otel_telemetry, openai_agents_events(named, "hi"), agent_name="named")
    finally:
        _openai_shared.set_default_openai_client(was)  # type: ignore[arg-type]
    spans = [sp for sp in otel_telemetry.spans() if sp.name.split()[0] in ("chat", "invoke_agent")]
    assert len(spans) == 4, [sp.name for sp in spans]
    for span in spans:
        assert (span.attributes or {}).get("gen_ai.provider.name") == "azure.ai.openai", span.name

"""LiteLLM: a streamed ``litellm.acompletion`` as contract events.

LiteLLM normalises every provider to OpenAI's Chat Completions chunk shape (with
``reasoning_content`` for reasoning), so its chunks go through the Chat Completions reader.
The provider on ``LLMCallStart`` is the GenAI conventions' name for LiteLLM's routing name of
the model (``litellm.get_llm_provider``: ``bedrock`` is ``aws.bedrock``, ``azure``
``azure.ai.openai``), LiteLLM's own where the conventions list none, or ``litellm`` when it
cannot tell.

Needs the ``litellm`` package (extra ``litellm``), imported on the first call: importing
LiteLLM takes seconds and, unless ``LITELLM_LOCAL_MODEL_COST_MAP=True``, fetches its cost map.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_contract.events import AgentEvent, Message
from agent_contract.sources._endpoint import address_of, at_endpoint, base_url_of
from agent_contract.sources._provider_names import litellm_provider
from agent_contract.sources._require import expect_messages, require
from agent_contract.sources._stream import OneCallAgent, Sink, read_stream, request, start_event
from agent_contract.sources.openai_chat import ChatCompletionsReader

__all__ = ["LiteLLMAgent", "stream_litellm"]


def _provider(litellm: Any, model: str, params: dict[str, Any]) -> str:
    try:
        routing = litellm.get_llm_provider(model, params.get("custom_llm_provider"))[1]
    except Exception:  # an unknown model: LiteLLM will say so itself when called
        return "litellm"
    return litellm_provider(str(routing))


def _endpoint(client: Any, params: dict[str, Any]) -> tuple[str, int | None] | None:
    """The server of the call: its ``api_base`` (or ``base_url``) when given, else the
    client's; None when LiteLLM picks its provider's default (not known before the call)."""
    base = params.get("api_base") or params.get("base_url")
    if base is not None:
        return address_of(base)
    return base_url_of(client) if client is not None else None


def stream_litellm(
    client: Any, messages: list[Message], model: str, *, sink: Sink | None = None, **params: Any
) -> AsyncIterator[AgentEvent]:
    """One streamed ``litellm.acompletion`` call, as events.

    ``client`` is passed to LiteLLM as its ``client`` (an ``AsyncOpenAI`` for OpenAI-routed
    models) unless it is None; ``params`` go to ``acompletion`` as they are.
    """
    litellm = require("litellm")

    expect_messages(messages, "stream_litellm")
    start = at_endpoint(
        start_event(model, _provider(litellm, model, params), messages, params),
        _endpoint(client, params),
    )
    if client is not None:
        params = {"client": client, **params}
    return read_stream(
        start,
        lambda: litellm.acompletion(
            model=model,
            messages=[m.to_dict() for m in messages],
            **request(params, stream=True, stream_options={"include_usage": True}),
        ),
        ChatCompletionsReader(),
        sink,
    )


class LiteLLMAgent(OneCallAgent):
    """A contract agent making one streamed LiteLLM call per run (``client`` may be None)."""

    source = staticmethod(stream_litellm)

"""A request that asks for an output format (OpenAI's ``response_format``, the Responses API's
``text.format``, Anthropic's ``output_config.format``): its chat span carries
``gen_ai.output.type`` as the GenAI conventions ask of a request that includes one (``json``
for a JSON schema or a JSON object, ``text`` for text), and a request that asks for none
carries none. The real OpenAI and Anthropic SDKs over their mock transports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import HISTORY
from ._http import anthropic_client, openai_client, sse
from ._trace import attributes

pytest.importorskip("openai")

_SCHEMA = {"type": "json_schema", "json_schema": {"name": "city", "schema": {"type": "object"}}}
_FORMAT = {"format": {"type": "json_schema", "name": "city", "schema": {"type": "object"}}}
_CLAUDE = {"format": {"type": "json_schema", "schema": {"type": "object"}}, "effort": "low"}
_IDS = (
    "chat-schema chat-object chat-text chat-none responses-schema responses-text "
    "responses-none messages-schema messages-effort"
)


@pytest.mark.parametrize(
    ("api", "asked", "expected"),
    [
        ("chat", {"response_format": _SCHEMA}, "json"),
        ("chat", {"response_format": {"type": "json_object"}}, "json"),
        ("chat", {"response_format": {"type": "text"}}, "text"),
        ("chat", {}, None),
        ("responses", {"text": _FORMAT}, "json"),
        ("responses", {"text": {"format": {"type": "text"}}}, "text"),
        ("responses", {"text": {"verbosity": "low"}}, None),
        ("messages", {"output_config": _CLAUDE, "max_tokens": 64}, "json"),
        ("messages", {"output_config": {"effort": "low"}, "max_tokens": 64}, None),
    ],
    ids=_IDS.split(),
)
async def test_a_request_s_output_format_is_its_chat_span_s_output_type(
    api: str, asked: dict[str, Any], expected: str | None, otel_telemetry: InMemoryTelemetry
) -> None:
    from agent_contract.sources.anthropic_messages import stream_messages
    from agent_contract.sources.openai_chat import stream_chat
    from agent_contract.sources.openai_responses import stream_responses

    sent: list[Any] = []
    if api == "chat":
        client = openai_client(sse(_recorded.chat(tools=False), done=True), seen=sent)
        source = stream_chat(client, HISTORY, "gpt-4o-mini", **asked)
    elif api == "messages":
        client = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=sent)
        source = stream_messages(client, HISTORY, "claude-sonnet-4-5", **asked)
    else:
        client = openai_client(sse(_recorded.responses(tools=False), named=True), seen=sent)
        source = stream_responses(client, HISTORY, "gpt-5-mini", **asked)
    await run_script(otel_telemetry, source, agent_name="agent")

    [request] = [json.loads(r.content) for r in sent]
    assert {k: request[k] for k in asked} == asked  # sent as given
    assert attributes(otel_telemetry, "chat ").get("gen_ai.output.type") == expected
    assert otel_telemetry.open_spans() == []

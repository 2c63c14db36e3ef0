"""pydantic-ai's ``FallbackModel`` moving on from a model whose request failed.

The failed request was made (and often billed): it is a chat span of its own, failed with the
class pydantic-ai names its error by (``error.type``) and no tokens, beside the chat span of
the model that answered, which has the tokens; both in the same step, as they answer one turn.
The run succeeds, as the agent did.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import openai_client
from ._sdk_row import refused
from ._trace import tokens

pytest.importorskip("pydantic_ai")


def _model(name: str, *bodies: Any) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=openai_client(*bodies)))


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((x for x in telemetry.spans() if x.name.startswith("chat")),
                  key=lambda x: x.start_time or 0)  # fmt: skip


@pytest.mark.parametrize("failures", [1, 2])
async def test_a_fallback_model_leaves_a_failed_chat_span_for_each_model_it_moved_on_from(
    otel_telemetry: InMemoryTelemetry, failures: int
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.fallback import FallbackModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    down = [_model(f"down-{i}", refused) for i in range(failures)]
    model = FallbackModel(*down, _model("up", chat.turn_two()))
    kept: list[Any] = []
    source = pydantic_ai_events(Agent(model), s.QUESTION, on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="fb")

    assert kept[0].output == "".join(s.ANSWER)  # the agent's answer, untouched
    chats = _chats(otel_telemetry)
    assert len(chats) == failures + 1
    assert otel_telemetry.outline() == [["invoke_agent fb", [["step 0", [x.name for x in chats]]]]]
    *failed, answered = chats
    for i, span in enumerate(failed):
        attributes = span.attributes or {}
        assert span.status.status_code is StatusCode.ERROR
        assert attributes.get("error.type") == "ModelRateLimitError"  # pydantic-ai's for a 429
        assert attributes.get("gen_ai.response.model") == f"down-{i}"
        assert "gen_ai.usage.input_tokens" not in attributes
    assert answered.status.status_code is not StatusCode.ERROR
    assert (answered.attributes or {}).get("gen_ai.usage.input_tokens") == s.TURNS[1].input
    assert tokens(otel_telemetry) == s.TURNS[1].input
    assert otel_telemetry.span("invoke_agent fb").status.status_code is not StatusCode.ERROR
    assert otel_telemetry.open_spans() == []

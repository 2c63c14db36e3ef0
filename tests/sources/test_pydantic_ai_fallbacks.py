"""pydantic-ai trying the next model when one fails: a ``FallbackModel``, or the
``ModelFallback`` capability pydantic-ai recommends inside an agent.

pydantic-ai documents each model it moved on from as a ``ModelRequestAttempt`` on the response
that answered (``failed_attempts``), or on the ``FallbackExceptionGroup`` when every model
failed. Each attempt is a chat span of its own in the request's step: the one that raised
fails with its exception's class (``error.type``), and the answering model's call succeeds
with the tokens; before, one chat span named after the whole chain (or after the first model)
stood for all of them, with no failure anywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens

pytest.importorskip("pydantic_ai")


def _model(name: str, *, status: int | None = None) -> Any:
    """pydantic-ai's ``FunctionModel`` named ``name``: it answers "fine", streamed or not, or
    raises pydantic-ai's ``ModelHTTPError`` with ``status`` before any answer."""
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if status is not None:
            raise ModelHTTPError(status, name, body="unavailable")
        return ModelResponse(parts=[TextPart("fine")])

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
        answer(messages, info)
        yield "fine"

    return FunctionModel(answer, stream_function=stream, model_name=name)


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("chat ")),
                  key=lambda s: s.start_time or 0)  # fmt: skip


def _failed_twice_then_answered(telemetry: InMemoryTelemetry) -> None:
    assert telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat primary", "chat second", "chat backup"]]]]
    ]
    primary, second, backup = _chats(telemetry)
    for failed in (primary, second):
        assert failed.status.status_code is StatusCode.ERROR
        assert (failed.attributes or {})["error.type"] == "ModelHTTPError"
        assert "gen_ai.usage.input_tokens" not in (failed.attributes or {})
    assert backup.status.status_code is StatusCode.UNSET
    assert (backup.attributes or {})["gen_ai.response.model"] == "backup"
    assert tokens(telemetry) == (backup.attributes or {})["gen_ai.usage.input_tokens"] > 0
    [run] = [s for s in telemetry.spans() if s.name == "invoke_agent a"]
    assert run.status.status_code is StatusCode.UNSET


async def test_a_fallback_models_failed_models_each_fail_their_own_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.fallback import FallbackModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    chain = FallbackModel(
        _model("primary", status=503), _model("second", status=429), _model("backup")
    )
    kept: list[Any] = []
    source = pydantic_ai_events(Agent(chain), "hi", on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="a")

    assert kept[0].output == "fine"
    _failed_twice_then_answered(otel_telemetry)


async def test_the_model_fallback_capabilitys_failed_models_each_fail_their_own_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ModelFallback

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    fallback = ModelFallback(_model("second", status=429), _model("backup"))
    agent = Agent(_model("primary", status=503), capabilities=[fallback])
    await run_script(otel_telemetry, pydantic_ai_events(agent, "hi"), agent_name="a")

    _failed_twice_then_answered(otel_telemetry)


async def test_when_every_model_fails_each_fails_its_chat_span_and_the_run_the_group(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import FallbackExceptionGroup
    from pydantic_ai.models.fallback import FallbackModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    chain = FallbackModel(_model("primary", status=503), _model("second", status=429))
    with pytest.raises(FallbackExceptionGroup) as raised:
        await run_script(otel_telemetry, pydantic_ai_events(Agent(chain), "hi"), agent_name="a")

    assert len(raised.value.attempts) == 2  # pydantic-ai's own record of the two
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat primary", "chat second"]]]]
    ]
    for failed in _chats(otel_telemetry):
        assert failed.status.status_code is StatusCode.ERROR
        assert (failed.attributes or {})["error.type"] == "ModelHTTPError"
    [run] = [s for s in otel_telemetry.spans() if s.name == "invoke_agent a"]
    assert (run.attributes or {})["error.type"] == "FallbackExceptionGroup"


async def test_a_delegated_runs_fallback_fails_the_failed_models_call_under_the_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A sub-agent a tool body runs itself (``await agent.run(...)``, unstreamed) is recorded
    through pydantic-ai's hooks: its fallback reads the same."""
    from pydantic_ai import Agent
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name="ask", json_args='{"q": "Paris?"}', tool_call_id="d")}
        else:
            yield "sunny"

    expert = Agent(FallbackModel(_model("primary", status=503), _model("backup")), name="e")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead"), name="a")

    @boss.tool_plain
    async def ask(q: str) -> str:
        return (await expert.run(q)).output

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="a")

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", ["chat lead", ["execute_tool ask", [
                ["invoke_agent e", [["step 0", ["chat primary", "chat backup"]]]],
            ]]]],
            ["step 1", ["chat lead"]],
        ]],
    ]  # fmt: skip
    [primary] = [s for s in otel_telemetry.spans() if s.name == "chat primary"]
    [backup] = [s for s in otel_telemetry.spans() if s.name == "chat backup"]
    assert (primary.attributes or {})["error.type"] == "ModelHTTPError"
    assert "gen_ai.usage.input_tokens" not in (primary.attributes or {})
    assert backup.status.status_code is StatusCode.UNSET
    assert (backup.attributes or {})["gen_ai.usage.input_tokens"] > 0


async def test_a_response_a_fallback_handler_refused_fails_its_call_with_its_billed_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``fallback_on`` response handler judges unstreamed responses (a delegated run's): the
    refused response was billed, so its tokens go on its own failed call, counted once."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name="ask", json_args='{"q": "Paris?"}', tool_call_id="d")}
        else:
            yield "sunny"

    def refuse(response: ModelResponse) -> bool:
        return response.model_name == "primary"

    # pydantic-ai tells a response handler by its annotation, resolved at run time (this
    # module's are strings)
    refuse.__annotations__ = {"response": ModelResponse, "return": bool}

    chain = FallbackModel(_model("primary"), _model("backup"), fallback_on=refuse)
    expert = Agent(chain, name="e")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead"), name="a")

    @boss.tool_plain
    async def ask(q: str) -> str:
        return (await expert.run(q)).output

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="a")

    [primary] = [s for s in otel_telemetry.spans() if s.name == "chat primary"]
    [backup] = [s for s in otel_telemetry.spans() if s.name == "chat backup"]
    assert primary.status.status_code is StatusCode.ERROR
    assert (primary.attributes or {})["error.type"] == "ResponseRejected"
    billed = (primary.attributes or {})["gen_ai.usage.input_tokens"]
    answered = (backup.attributes or {})["gen_ai.usage.input_tokens"]
    assert billed > 0 and answered > 0
    [run] = [s for s in otel_telemetry.spans() if s.name == "invoke_agent e"]
    assert (run.attributes or {})["agent_otel.usage.input_tokens"] == billed + answered

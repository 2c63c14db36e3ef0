"""A sub-agent run inside a framework's tool nests under that tool's span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script


async def test_a_pydantic_ai_agent_delegating_to_another_nests_its_run_under_the_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {
                0: DeltaToolCall(name="ask_expert", json_args='{"q": "Paris?"}', tool_call_id="d")
            }
        else:
            yield "The expert says: sunny."

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield "sunny"

    expert = Agent(FunctionModel(stream_function=answer, model_name="expert-model"), name="expert")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead")

    @boss.tool_plain
    async def ask_expert(q: str) -> str:
        results: list[Any] = []
        inner = pydantic_ai_events(expert, q, on_result=results.append)
        await run_script(otel_telemetry, inner, agent_name="expert")
        return str(results[0].output)

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat lead-model",
                        ["execute_tool ask_expert", [
                            ["invoke_agent expert", [["step 0", ["chat expert-model"]]]],
                        ]]]],
            ["step 1", ["chat lead-model"]],
        ]],
    ]  # fmt: skip


async def test_pydantic_ai_delegations_run_in_parallel_each_nest_under_their_own_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two delegations asked for at once run interleaved: each sub-agent run (its chat, its
    tokens, its answer) lands under the tool span of the call that ran it, not the step's."""
    pytest.importorskip("pydantic_ai")
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.protocol import TextDelta
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {i: DeltaToolCall(name="ask_expert", json_args=f'{{"q": "{city}"}}',
                                    tool_call_id=f"d-{city}")
                   for i, city in enumerate(("Paris", "Rome"))}  # fmt: skip
        else:
            yield "Both sunny."

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        question = messages[0].parts[-1].content
        for word in ("sunny", " in ", question):
            await asyncio.sleep(0)  # the two runs interleave
            yield word

    expert = Agent(FunctionModel(stream_function=answer, model_name="expert-model"), name="expert")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead")
    answers: dict[str, str] = {}

    @boss.tool_plain
    async def ask_expert(q: str) -> str:
        events = await run_script(
            otel_telemetry, pydantic_ai_events(expert, q), agent_name="expert", capture_content=True
        )
        answers[q] = "".join(e.text for e in events if isinstance(e, TextDelta))
        return answers[q]

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    expert_run = ["invoke_agent expert", [["step 0", ["chat expert-model"]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat lead-model", ["execute_tool ask_expert", [expert_run]],
                        ["execute_tool ask_expert", [expert_run]]]],
            ["step 1", ["chat lead-model"]],
        ]],
    ]  # fmt: skip
    assert answers == {"Paris": "sunny in Paris", "Rome": "sunny in Rome"}
    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    for run in otel_telemetry.by_name()["invoke_agent expert"]:
        assert run.parent is not None
        tool = dict(by_id[run.parent.span_id].attributes or {})
        [chat] = [s for s in spans if s.name == "chat expert-model" and s.parent
                  and by_id[s.parent.span_id].parent.span_id == run.context.span_id]  # fmt: skip
        asked = tool["gen_ai.tool.call.id"].removeprefix("d-")
        assert f"in {asked}" in str(dict(chat.attributes or {})["gen_ai.output.messages"])
        assert dict(chat.attributes or {})["gen_ai.usage.output_tokens"] >= 1
    assert otel_telemetry.open_spans() == []

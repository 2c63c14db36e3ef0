"""OpenAI Agents SDK guardrails tripping: the run (and the step it stopped) fail with the
SDK's tripwire exception, and no model call does: the response a guardrail cut short ends
cut short, not failed; an agent run as a tool whose guardrail trips fails that run and its
tool call only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("agents")


def _usage(tokens_in: int) -> Any:
    from agents import Usage

    return Usage(requests=1, input_tokens=tokens_in, output_tokens=1, total_tokens=tokens_in + 1)


def _failed(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return {s.name: (s.attributes or {}).get("error.type") for s in telemetry.spans()
            if s.status.status_code is StatusCode.ERROR}  # fmt: skip


def _hanging(begun: asyncio.Event) -> Any:
    """A model step whose response begins, then waits a while (the guardrail trips then)
    before it goes on."""
    from agents.testing import ModelStep, assistant_message
    from agents.testing.model import _stream_events_for_step

    async def stream(call: Any) -> Any:
        events = _stream_events_for_step(ModelStep(output=[assistant_message("x")]),
                                         preserve_raw_usage=False)  # fmt: skip
        events = iter(events)
        yield next(events)  # response.created
        begun.set()
        await asyncio.sleep(0.3)
        for event in events:
            yield event

    return ModelStep(stream_events=stream)


@pytest.mark.parametrize("when", ["mid-response", "at once", "before the request", "output"])
async def test_a_tripped_guardrail_fails_the_run_and_no_model_call(
    otel_telemetry: InMemoryTelemetry, when: str
) -> None:
    """Before, a guardrail tripping while the response streamed (``run_in_parallel``, the
    default) failed that chat span with ``InputGuardrailTripwireTriggered``, as if the model
    had failed."""
    from agents import (
        Agent,
        GuardrailFunctionOutput,
        InputGuardrailTripwireTriggered,
        OutputGuardrailTripwireTriggered,
        input_guardrail,
        output_guardrail,
        set_tracing_disabled,
    )
    from agents.testing import ModelStep, ScriptedModel, assistant_message

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)
    begun = asyncio.Event()

    async def check(ctx: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
        if when == "mid-response":
            await begun.wait()
            await asyncio.sleep(0.01)  # the consumer reads the response's start
        return GuardrailFunctionOutput(output_info="no", tripwire_triggered=True)

    answer = ModelStep(output=[assistant_message("x")], usage=_usage(10))
    if when == "output":
        guarded: dict[str, Any] = {"output_guardrails": [output_guardrail(check)]}
        raised: type[Exception] = OutputGuardrailTripwireTriggered
    else:
        parallel = when != "before the request"  # "at once": as the request starts
        guarded = {"input_guardrails": [input_guardrail(run_in_parallel=parallel)(check)]}
        raised = InputGuardrailTripwireTriggered
        answer = _hanging(begun) if parallel else answer
    lead = Agent(name="lead", model=ScriptedModel([answer]), **guarded)
    with pytest.raises(raised):
        await run_script(otel_telemetry, openai_agents_events(lead, "hi"), agent_name="lead")

    name = raised.__name__
    chats = [s for s in otel_telemetry.spans() if s.name.startswith("chat")]
    if when != "at once":  # (a request not answered yet when it trips shows no call)
        assert len(chats) == (0 if when == "before the request" else 1)
    steps = {"step 0": name} if chats else {}
    assert _failed(otel_telemetry) == {**steps, "invoke_agent lead": name}
    assert otel_telemetry.open_spans() == []


async def test_a_guardrail_of_an_agent_run_as_a_tool_fails_that_run_and_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents import (
        Agent,
        GuardrailFunctionOutput,
        input_guardrail,
        set_tracing_disabled,
    )
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)
    begun = asyncio.Event()

    @input_guardrail
    async def check(ctx: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
        await begun.wait()
        await asyncio.sleep(0.01)
        return GuardrailFunctionOutput(output_info="no", tripwire_triggered=True)

    expert = Agent(name="expert", input_guardrails=[check], model=ScriptedModel([_hanging(begun)]))
    lead = Agent(name="lead", tools=[expert.as_tool("ask", "Ask.")], model=ScriptedModel([
        ModelStep(output=[function_call("ask", {"input": "q"}, call_id="a1")], usage=_usage(100)),
        ModelStep(output=[assistant_message("done")], usage=_usage(120)),
    ]))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(lead, "hi"), agent_name="lead")

    name = "InputGuardrailTripwireTriggered"
    assert _failed(otel_telemetry) == {
        "step 0": name, "invoke_agent expert": name, "execute_tool ask": name,
    }  # fmt: skip
    expert_step = [s for s in otel_telemetry.spans() if s.name == "step 0" and not s.status.is_ok]
    run = otel_telemetry.span("invoke_agent expert")
    assert expert_step[0].parent.span_id == run.context.span_id
    assert otel_telemetry.open_spans() == []

"""OpenAI Agents SDK runs stopped by ``max_turns``: the SDK raises ``MaxTurnsExceeded`` as the
turn past the limit starts, before it asks the model anything. The turns it ran are whole
(the model call and the tools it asked for, each answered), so only the run fails, with the
SDK's exception; no step or call does, and no chat span stands for the request never made,
as a pydantic-ai run its ``usage_limits`` stop shows it."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw

pytest.importorskip("agents")


async def test_a_run_past_its_max_turns_fails_alone_its_turns_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents.exceptions import MaxTurnsExceeded

    from agent_contract.sources.openai_agents import openai_agents_events

    source = openai_agents_events(fw.agents_agent(), "Weather in Paris and Rome?", max_turns=1)
    with pytest.raises(MaxTurnsExceeded):
        await run_script(otel_telemetry, source, agent_name="capped")

    tools = ["execute_tool weather", "execute_tool weather"]
    assert otel_telemetry.outline() == [
        ["invoke_agent capped", [["step 0", ["chat gpt-5-mini", *tools]]]],
    ]
    run = otel_telemetry.span("invoke_agent capped")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})["error.type"] == "MaxTurnsExceeded"
    assert [s.name for s in otel_telemetry.spans()
            if s is not run and s.status.status_code is StatusCode.ERROR] == []  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_a_max_turns_handler_s_answer_is_the_run_s_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``error_handlers={"max_turns": ...}``: the SDK ends the run with the handler's final
    output instead of raising, a message no model wrote (no request, no response event). The
    run succeeds and that message is its answer, not the text of the last model call."""
    from agent_contract.sources.openai_agents import openai_agents_events

    handlers = {"max_turns": lambda _: "Sorry, too many turns."}
    source = openai_agents_events(
        fw.agents_agent(), "Weather in Paris and Rome?", max_turns=1, error_handlers=handlers
    )
    await run_script(otel_telemetry, source, agent_name="capped", capture_content=True)

    tools = ["execute_tool weather", "execute_tool weather"]
    assert otel_telemetry.outline() == [
        ["invoke_agent capped", [["step 0", ["chat gpt-5-mini", *tools]]]],
    ]
    run = otel_telemetry.span("invoke_agent capped")
    assert run.status.status_code is not StatusCode.ERROR
    answer = json.loads(str((run.attributes or {})["gen_ai.output.messages"]))
    assert answer[0]["parts"] == [{"type": "text", "content": "Sorry, too many turns."}]
    assert (run.attributes or {})["gen_ai.output.type"] == "text"

"""Google ADK's ``output_schema``: an ``LlmAgent`` given one answers with JSON text that ADK
validates as that model (and keeps in the session's state under ``output_key``). The run's
answer is that value, as JSON (``gen_ai.output.type=json``; its content with capture on), as a
structured answer is in the other adapters; the call keeps the model's text. Before, the run's
answer was the text, typed as none. Runs in ADK's own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("google.adk")


@pytest.mark.parametrize("valid", [True, False], ids=["valid", "refused"])
async def test_an_output_schema_answer_is_the_runs_structured_output(
    otel_telemetry: InMemoryTelemetry, valid: bool
) -> None:
    """Text the schema refuses is no structured answer: ADK's own validation raises then,
    and the run fails with it, its answer untyped."""
    from google.adk.agents import LlmAgent
    from google.genai import types
    from pydantic import BaseModel, ValidationError

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model

    class City(BaseModel):
        name: str
        population: int | None = None

    said = '{"name": "Paris"}' if valid else '{"town": "Paris"}'
    root = LlmAgent(name="root", model=_model([[types.Part(text=said)]]), output_schema=City,
                    output_key="city")  # fmt: skip
    run_it = run_script(otel_telemetry, google_adk_events(root, "Which city?"),
                        agent_name="root", capture_content=True)  # fmt: skip
    if valid:
        await run_it
    else:
        with pytest.raises(ValidationError):  # ADK's own validation of the refused text
            await run_it

    run = dict(otel_telemetry.span("invoke_agent root").attributes or {})
    chat = dict(otel_telemetry.span("chat scripted-gemini").attributes or {})
    [answer] = json.loads(str(chat["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": said}]  # the model's text kept
    assert chat["gen_ai.output.type"] == "json"  # ADK's request asked for JSON of the schema
    if valid:
        assert run["gen_ai.output.type"] == "json"
        [message] = json.loads(str(run["gen_ai.output.messages"]))
        assert [p.get("content") for p in message["parts"]] == [{"name": "Paris"}]
    else:
        assert run.get("gen_ai.output.type") != "json"
        assert run["error.type"] == "ValidationError"
    assert otel_telemetry.open_spans() == []

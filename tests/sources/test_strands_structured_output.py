"""Strands structured output (``structured_output_model``): the model answers by calling
Strands' structured output tool, a real tool of the run (its ``execute_tool`` span, failed
``ValidationError`` when the model's arguments fail validation, so the model is asked
again). The run's answer is the output Strands validated (the ``AgentResult``'s
``structured_output``), as JSON (``gen_ai.output.type=json``; its content with capture on),
not the tool call that carried it. Runs in Strands' own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("strands")


class City(BaseModel):
    name: str
    population: int


def _asks(call_id: str, args: dict[str, Any]) -> list[Any]:
    """A turn calling the ``City`` output tool with ``args``."""
    from . import _script as s
    from ._fw_strands import _usage, _uses

    return [{"messageStart": {"role": "assistant"}}, *_uses(s.Call(call_id, "City", args)),
            {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip


async def test_a_structured_output_is_the_run_s_answer_as_json(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The first call's arguments fail ``City``'s validation (Strands answers the tool call
    with an error result and the model asks again), the second's pass: the run's answer is
    the validated ``City``; before, it was the last call's tool call message and no
    ``gen_ai.output.type``. The refused call is a ``ValidationError``, as a ``@tool``'s
    arguments failing validation are (it was the nameless ``tool_error``)."""
    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, agent

    model = _model([_asks("so1", {"name": "Paris"}),
                    _asks("so2", {"name": "Paris", "population": 2})])  # fmt: skip
    kept: list[Any] = []
    source = strands_events(agent(model, [], name="geo"), "Paris?",
                            structured_output_model=City, sink=kept.append)  # fmt: skip
    await run_script(otel_telemetry, source, agent_name="geo", capture_content=True)

    assert kept[-1]["result"].structured_output == City(name="Paris", population=2)
    chat, tool = "chat scripted-converse", "execute_tool City"
    assert otel_telemetry.outline() == [
        ["invoke_agent geo", [["step 0", [chat, tool]], ["step 1", [chat, tool]]]],
    ]  # fmt: skip
    failed = [(s.attributes or {}).get("error.type") for s in otel_telemetry.spans()
              if s.name == tool]  # fmt: skip
    assert sorted(failed, key=str) == [None, "ValidationError"]
    run = dict(otel_telemetry.span("invoke_agent geo").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"name": "Paris", "population": 2}}]
    assert otel_telemetry.open_spans() == []

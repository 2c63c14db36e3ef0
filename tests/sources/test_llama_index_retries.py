"""LlamaIndex sends an answer back: a ``ReActAgent`` output its parser cannot read (or an
empty one) comes back to the model as ``AgentOutput.retry_messages``, and the agent asks
again. Before, both model calls sat in one step and nothing said the first answer was refused;
now the step that gave it fails (``ValueError``, the class LlamaIndex's parser raised and its
agent caught; ``output_rejected`` for any other answer sent back) and the retried request is
the next step, as pydantic-ai's refused answers are."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import spans_saying

pytest.importorskip("llama_index.core")

CHAT = "chat gpt-4o-mini"
UNREADABLE = 'Thought: I need a tool.\nAction: lookup\nAction Input: {"q": '


def lookup(q: str) -> str:
    """Look it up."""
    return "found"


def _steps(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("step ")),
                  key=lambda s: s.name)  # fmt: skip


@pytest.mark.parametrize(
    ("first", "error_type", "told"),
    [(UNREADABLE, "ValueError", "Error while parsing the output: "),
     ("", "output_rejected", "FAILURE: Your previous response was empty.")],
    ids=["unreadable", "empty"],
)  # fmt: skip
@pytest.mark.parametrize("capture", [True, False], ids=["capture_on", "capture_off"])
async def test_a_react_answer_sent_back_fails_the_step_that_gave_it(
    otel_telemetry: InMemoryTelemetry, first: str, error_type: str, told: str, capture: bool
) -> None:
    """The retry's text is what LlamaIndex sends the model (quoting the answer): content, so
    it describes the step only with capture on."""
    from llama_index.core.agent.workflow import ReActAgent

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    llm = replies(first, "Thought: I can answer.\nAnswer: Paris")
    kept: list[Any] = []
    source = llama_index_events(ReActAgent(name="geo", tools=[lookup], llm=llm), "Paris?",
                                on_handler=kept.append)  # fmt: skip
    await run_script(otel_telemetry, source, agent_name="geo", capture_content=capture)

    assert str(await kept[0]) == "Paris"
    assert otel_telemetry.outline() == [
        ["invoke_agent geo", [["step 0", [CHAT]], ["step 1", [CHAT]]]],
    ]  # fmt: skip
    refused, answered = _steps(otel_telemetry)
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == error_type
    if capture:
        assert (refused.status.description or "").startswith(told)
    else:  # nowhere on any span: status, attributes or events
        assert spans_saying(otel_telemetry, told) == []
    assert answered.status.status_code is StatusCode.UNSET
    assert otel_telemetry.span("invoke_agent geo").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []

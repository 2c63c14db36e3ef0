"""The few keys agent-otel writes for trace backends (docs/backends.md), and where they go.

Each serves one view the conventions leave empty, and none may replace a conventions' view:
MLflow reads a span's ``input.value`` / ``output.value`` before its ``gen_ai.*`` messages, so
plain text there on a chat span would replace MLflow's chat view with that text (the trap).
The previews therefore go on the run's root span only, and the trace name only on a run that
is its trace's root.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import Message
from agent_otel import _attributes as A
from agent_otel import instrument
from agent_otel.testing import InMemoryTelemetry, run_script
from genai_scenario import AGENT, QUESTION, agent_events

BACKEND_KEYS = {A.OI_SPAN_KIND, A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE, A.MLFLOW_TRACE_NAME}
CONVENTIONS_PREFIXES = ("gen_ai.", "agent_otel.", "error.", "session.", "user.")


def _keys(telemetry: InMemoryTelemetry) -> dict[str, set[str]]:
    return {s.name: set(s.attributes or {}) for s in telemetry.spans()}


async def test_backend_keys_are_the_documented_few_each_on_its_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, agent_events(), agent_name=AGENT, capture_content=True)

    keys = _keys(otel_telemetry)
    outside = {k for span in keys.values() for k in span if not k.startswith(CONVENTIONS_PREFIXES)}
    assert outside == BACKEND_KEYS
    root = f"invoke_agent {AGENT}"
    assert {A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE, A.MLFLOW_TRACE_NAME} <= keys[root]
    for name, span_keys in keys.items():
        if name != root:  # the trap: never plain text where a chat view is read
            assert not span_keys & {A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE, A.MLFLOW_TRACE_NAME}
        if name.startswith("chat "):
            assert A.INPUT_MESSAGES in span_keys and A.OUTPUT_MESSAGES in span_keys
            assert A.OI_SPAN_KIND not in span_keys  # its kind comes from gen_ai.operation.name
    [root_span] = [s for s in otel_telemetry.spans() if s.name == root]
    assert root_span.attributes is not None
    assert root_span.attributes[A.MLFLOW_TRACE_NAME] == root  # the name Phoenix shows too
    assert root_span.attributes[A.OI_INPUT_VALUE] == QUESTION


async def test_the_trace_name_goes_on_the_traces_root_only(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /ask"):  # the run is not the trace's root
        await run_script(otel_telemetry, agent_events(), agent_name=AGENT)
    inner = ScriptedAgent(agent_events(), name="helper")
    traced: Any = instrument(
        inner,
        **otel_telemetry.providers(),
    )
    await traced.invoke([Message(role="user", content=QUESTION)])  # a root run of its own

    names = {s.name: (s.attributes or {}).get(A.MLFLOW_TRACE_NAME) for s in otel_telemetry.spans()}
    assert names[f"invoke_agent {AGENT}"] is None
    assert names["invoke_agent helper"] == "invoke_agent helper"
    assert not trace.get_current_span().get_span_context().is_valid


async def test_with_capture_off_the_root_has_a_name_and_no_content(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, agent_events(), agent_name=AGENT)

    [root] = [s for s in otel_telemetry.spans() if s.name == f"invoke_agent {AGENT}"]
    attributes = dict(root.attributes or {})
    assert attributes[A.MLFLOW_TRACE_NAME] == f"invoke_agent {AGENT}"
    for key in (A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE, A.INPUT_MESSAGES, A.OUTPUT_MESSAGES):
        assert key not in attributes

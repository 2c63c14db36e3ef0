"""Three agents deep, on every framework: ``lead``'s tool runs ``expert``, whose tool runs
``clerk``, whose tool ``lookup`` opens a span of another library's tracer.

Each framework nests agents its own way where it has one (an agent used as a tool, a team's
delegation, a managed agent, a tool running ``kickoff``), else the user's way: a tool streaming
the agent through the adapter and its own ``otel_wrapper``. Whatever the way, the trace is the
same: each agent a run under the ``execute_tool`` span of the call that ran it, its calls in
its own steps, each tool of each run under that run's step and current while its body runs
(the client span is its child), and each level's tokens counted once, on its own run.

A row joins by its builder, ``_fw_<name>.three_levels(telemetry, tracer)``: it runs the lead
(the outer run traced as ``lead``) and returns the names of the two tools that run the
inner agents.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry

from ._conformance import ROWS, Row

FRAMEWORKS = [row for row in ROWS if row.runs_tools and not row.name.endswith("_openai")]
"""The framework rows, one per framework (not the same framework on another model)."""

Builder = Callable[[InMemoryTelemetry, Any], Awaitable[tuple[str, str]]]


def _outline(spans: list[Any]) -> list[Any]:
    """The tree by names, every chat span named ``chat`` (the model names differ by row)."""

    def name(span: Any) -> str:
        return "chat" if span.name.startswith("chat") else str(span.name)

    children: dict[Any, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    def node(span: Any) -> Any:
        below = [node(c) for c in children.get(span.context.span_id, [])]
        return [name(span), below] if below else name(span)

    return [node(s) for s in children.get(None, [])]


def _run_of(span: Any, by_id: dict[Any, Any]) -> Any:
    """The nearest ``invoke_agent`` span above ``span``."""
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        if span.name.startswith("invoke_agent"):
            return span
    return None


@pytest.mark.parametrize("row", [row.param() for row in FRAMEWORKS])
async def test_three_agents_deep_each_nest_under_the_call_that_ran_them(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    await _check_three_levels(row, otel_telemetry)


@pytest.mark.parametrize("left_on", [False, True], ids=["instrumented", "left_on"])
@pytest.mark.parametrize("row", [row.param() for row in FRAMEWORKS if row.name == "llama_index"])
async def test_three_agents_deep_beside_openllmetrys_llama_index_handler(
    row: Row, left_on: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """OpenLLMetry's span handler on LlamaIndex's dispatcher makes a context current around
    each dispatcher span, built from its own record of parents: the context current when the
    outer workflow started, the outer run's. Instrumented, or left on the dispatcher by its
    ``uninstrument()`` (which does nothing), it made the second level's tool calls and the
    third level's run land in the outer run; it must not move a span of ours."""
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.llamaindex")
    if left_on:
        with otel_telemetry.instrumented(instrumentation.LlamaIndexInstrumentor()):
            pass
        await _check_three_levels(row, otel_telemetry)
        return
    with otel_telemetry.instrumented(instrumentation.LlamaIndexInstrumentor()):
        await _check_three_levels(row, otel_telemetry)


async def _check_three_levels(row: Row, otel_telemetry: InMemoryTelemetry) -> None:
    """The three levels run under ``row``'s builder, each nested under the call that ran it,
    each level's tokens on its own run."""
    three_levels: Builder | None = getattr(row.builder, "three_levels", None)
    assert three_levels is not None, f"_fw_{row.name} has no three_levels builder"
    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    ask_expert, ask_clerk = await three_levels(otel_telemetry, tracer)

    def agent(name: str, inner: Any) -> list[Any]:
        return [f"invoke_agent {name}", [["step 0", ["chat", inner]], ["step 1", ["chat"]]]]

    clerk = agent("clerk", ["execute_tool lookup", ["client lookup"]])
    expert = agent("expert", [f"execute_tool {ask_clerk}", [clerk]])
    assert _outline(otel_telemetry.spans()) == [agent("lead", [f"execute_tool {ask_expert}",
                                                               [expert]])]  # fmt: skip

    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    for run in [s for s in spans if s.name.startswith("invoke_agent")]:
        own = [s for s in spans if s.name.startswith("chat") and _run_of(s, by_id) is run]
        used = [int((s.attributes or {}).get("gen_ai.usage.input_tokens", 0)) for s in own]  # type: ignore[arg-type]
        assert len(own) == 2 and all(used), (run.name, used)  # each call's tokens, on its span
        total = (run.attributes or {}).get("agent_otel.usage.input_tokens")
        assert total == sum(used), (run.name, total, used)  # once: not an inner run's
    assert not any((s.attributes or {}).get("agent_otel.incomplete") for s in spans)
    assert otel_telemetry.open_spans() == []

"""AgentInstrumentor: every agent class traced, in-process and via opentelemetry-instrument."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from agent_contract.agent import Agent, MessageFinal, SubAgentSpec, ToolCallStep, ToolResultStep
from agent_contract.examples import NonStreamingAgent, ScriptedAgent, ScriptedStreamingAgent
from agent_contract.invoke import StreamingAgent
from agent_contract.protocol import TextDelta
from agent_otel.decorating._instrument import instrument, is_instrumented
from agent_otel.instrumentor import AgentInstrumentor
from agent_otel.testing import InMemoryTelemetry
from hostile_types import LyingList, LyingStr
from test_instrument_support import USER, agent_spans


@pytest.fixture
def instrumentor(otel_telemetry: InMemoryTelemetry) -> Iterator[AgentInstrumentor]:
    originals = {
        cls: {k: v for k, v in vars(cls).items() if k in ("stream", "invoke", "astream", "run")}
        for cls in (Agent, StreamingAgent, ScriptedAgent, ScriptedStreamingAgent)
    }
    inst = AgentInstrumentor()
    inst.instrument(**otel_telemetry.providers())
    try:
        yield inst
    finally:
        inst.uninstrument()
    for cls, methods in originals.items():  # restored exactly
        assert {k: v for k, v in vars(cls).items() if k in methods} == methods


def test_entry_point_registered() -> None:
    [point] = [
        e for e in entry_points(group="opentelemetry_instrumentor") if e.name == "agent_otel"
    ]
    assert point.load() is AgentInstrumentor


async def test_existing_and_future_classes(
    otel_telemetry: InMemoryTelemetry, instrumentor: AgentInstrumentor
) -> None:
    class Later(Agent):  # defined after instrument(): traced too
        tool_name = "later"
        tool_description = "Defined after the instrumentor ran (test agent)."

        async def run(self, **kwargs: Any) -> Any:
            return "later"

    class LaterStream(StreamingAgent):
        async def stream(self, messages: Any, config: Any = None) -> Any:
            yield TextDelta("x")

    await ScriptedAgent([TextDelta("a")]).invoke(USER)
    assert await ScriptedStreamingAgent([MessageFinal(text="b")]).run() == "b"
    assert await NonStreamingAgent("c").run() == "c"
    assert await Later().run() == "later"
    [e async for e in LaterStream().stream(USER)]
    names = [s.name for s in agent_spans(otel_telemetry)]
    assert names == [
        "invoke_agent scripted",
        "invoke_agent scripted_streaming",
        "invoke_agent non_streaming",
        "invoke_agent later",
        "invoke_agent LaterStream",
    ]
    assert is_instrumented(Later)


async def test_explicit_instrument_does_not_double(
    otel_telemetry: InMemoryTelemetry, instrumentor: AgentInstrumentor
) -> None:
    agent = instrument(
        ScriptedAgent([TextDelta("a")]), name="explicit", **otel_telemetry.providers()
    )
    await agent.invoke(USER)
    [e async for e in agent.stream(USER)]
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent explicit"] * 2


async def test_uninstrument_restores(otel_telemetry: InMemoryTelemetry) -> None:
    inst = AgentInstrumentor()
    inst.instrument(**otel_telemetry.providers())
    inst.uninstrument()

    class After(Agent):
        tool_name = "after"
        tool_description = "Defined after uninstrument (test agent)."

        async def run(self, **kwargs: Any) -> Any:
            return 1

    await After().run()
    await ScriptedAgent([TextDelta("a")]).invoke(USER)
    assert agent_spans(otel_telemetry) == []
    assert not is_instrumented(ScriptedAgent)


def test_abstract_contract_kept(instrumentor: AgentInstrumentor) -> None:
    class Incomplete(Agent):
        tool_name = "incomplete"
        tool_description = "No run (test agent)."

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]


APP = textwrap.dedent(
    """
    # The agents below carry no tracing code at all; the distro (the `instrumentor` extra)
    # configures exporting, here to the console (the test's OTEL_TRACES_EXPORTER).
    import asyncio
    from agent_contract.agent import Agent, MessageFinal, SubAgentSpec, ToolCallStep, ToolResultStep
    from agent_contract.protocol import Message, StreamingAgent, TextDelta

    class Researcher(Agent):
        tool_name = "researcher"
        tool_description = "Looks things up."

        async def astream(self, **kwargs):
            yield MessageFinal(text="found")

        async def run(self, **kwargs):
            return await self._drain(self.astream(**kwargs))

    class Chat(StreamingAgent):
        async def stream(self, messages, config=None):
            yield TextDelta("hi")

    async def main():
        assert await Researcher().run(user_message="q", thread_id="t-1") == "found"
        assert (await Chat().invoke([Message(role="user", content="hello")])).text == "hi"

    asyncio.run(main())
    """
)


def _console_spans(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    spans, index = [], 0
    while (start := text.find("{", index)) != -1:
        obj, index = decoder.raw_decode(text, start)
        spans.append(obj)
    return spans


def _run_app(tmp_path: Path, *, disable_ours: bool) -> list[dict[str, Any]]:
    """Run APP under ``opentelemetry-instrument``; only our instrumentor may be enabled."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    command = Path(sys.executable).parent / "opentelemetry-instrument"
    if not command.exists():
        pytest.skip("opentelemetry-instrument is not installed")
    disabled = [
        e.name
        for e in entry_points(group="opentelemetry_instrumentor")
        if disable_ours or e.name != "agent_otel"
    ]
    env = {
        **os.environ,
        "OTEL_SERVICE_NAME": "app",
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        # other instrumentors installed in the environment are not under test
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": ",".join(disabled),
    }
    done = subprocess.run(
        [str(command), sys.executable, str(app)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return _console_spans(done.stdout)


def test_opentelemetry_instrument_traces_unchanged_app(tmp_path: Path) -> None:
    spans = _run_app(tmp_path, disable_ours=False)
    agents = {s["name"]: s for s in spans if s["attributes"].get("gen_ai.operation.name")}
    assert set(agents) >= {"invoke_agent researcher", "invoke_agent Chat"}
    researcher = agents["invoke_agent researcher"]["attributes"]
    assert researcher["gen_ai.conversation.id"] == "t-1"
    assert researcher["gen_ai.output.type"] == "text"
    assert len([s for s in spans if s["name"].startswith("invoke_agent")]) == 2


def test_disabled_instrumentations_variable_turns_ours_off(tmp_path: Path) -> None:
    """The README's claim: OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=agent_otel switches it off."""
    spans = _run_app(tmp_path, disable_ours=True)
    assert [s["name"] for s in spans if s["name"].startswith("invoke_agent")] == []


OTHER_PACKAGE = """
class Agent:
    tool_name = "other"

    async def astream(self, **kwargs):
        from agent_contract.agent import MessageFinal, StructuredFinal

        value = await self.run(**kwargs)
        yield MessageFinal(text=value) if isinstance(value, str) else StructuredFinal(data=value)

    async def run(self, **kwargs):
        raise NotImplementedError
"""


async def test_base_classes_adds_another_packages_agent_base(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    # The original package's base, as its module defines it (top level, named Agent): a
    # default astream that awaits run, like ours. Not a subclass of agent_contract's Agent.
    other_package = types.ModuleType("other_contract")
    exec(OTHER_PACKAGE, other_package.__dict__)
    OtherAgent = other_package.Agent

    class Theirs(OtherAgent):  # type: ignore[misc, valid-type]
        tool_name = "theirs"

        async def run(self, **kwargs: Any) -> Any:
            return "ok"

    inst = AgentInstrumentor()
    inst.instrument(**otel_telemetry.providers(), base_classes=[OtherAgent])
    try:
        assert await Theirs().run(user_message="q") == "ok"
    finally:
        inst.uninstrument()
    assert await Theirs().run(user_message="q") == "ok"  # untraced again

    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent theirs"]


class SpecRunner(Agent):
    """Builds its sub-agents from SubAgentSpec and runs each inside a tool call."""

    tool_name = "spec_runner"
    tool_description = "Runs sub-agents described by SubAgentSpec (test agent)."

    async def astream(self, **kwargs: Any) -> Any:
        for i, spec in enumerate(kwargs.get("subagents", ())):
            yield ToolCallStep(tool=spec.name, args={}, call_id=f"c{i}")
            sub = ScriptedStreamingAgent([MessageFinal(text=spec.system_prompt)])
            result = await sub.run(user_message="sub", tools=spec.tools)
            yield ToolResultStep(tool=spec.name, call_id=f"c{i}", result=result)
        yield MessageFinal(text="done")

    async def run(self, **kwargs: Any) -> Any:
        return await self._drain(self.astream(**kwargs))


async def test_sub_agents_from_specs_nest_under_their_tool(
    otel_telemetry: InMemoryTelemetry, instrumentor: AgentInstrumentor
) -> None:
    specs = [SubAgentSpec(name="helper", system_prompt="a"), SubAgentSpec(name="other")]
    assert await SpecRunner().run(subagents=specs) == "done"
    *subs, outer = agent_spans(otel_telemetry)
    assert dict(outer.attributes or {})["agent_otel.subagent_names"] == ("helper", "other")
    tools = {s.context.span_id: s.name for s in otel_telemetry.spans() if s.context}
    assert [tools[s.parent.span_id] for s in subs if s.parent] == [
        "execute_tool helper",
        "execute_tool other",
    ]


async def test_options_of_builtin_subclasses(otel_telemetry: InMemoryTelemetry) -> None:
    """``base_classes`` as a ``list`` subclass and ``agent_name`` as a ``str`` subclass whose own
    methods raise: they are read as the list and the str they are (``instrument()`` raised the
    first; the second cost every run its span, an internal error)."""

    class Base:
        async def run(self, **kwargs: Any) -> Any:
            return "ok"

    class Mine(Base):
        pass

    inst = AgentInstrumentor()
    inst.instrument(
        **otel_telemetry.providers(), base_classes=LyingList([Base]), agent_name=LyingStr("n")
    )
    try:
        assert await Mine().run() == "ok"
    finally:
        inst.uninstrument()
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent n"]

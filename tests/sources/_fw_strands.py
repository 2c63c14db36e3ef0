"""Strands Agents' conformance builder: an ``Agent`` on a scripted ``Model`` (Strands' own
extension point for providers), streaming the Converse events its Bedrock model streams.

Converse usage carries input, output and cache counts; it has no reasoning-token count.
``refuse`` throttles every attempt at turn 2 (Strands' ``ModelThrottledException``, a 429):
Strands retries it once, then raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.strands_stream import strands_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s


def _usage(turn: s.Turn) -> dict[str, Any]:
    usage = {"inputTokens": turn.input, "outputTokens": turn.output, "totalTokens": turn.total,
             "cacheReadInputTokens": turn.cache_read}  # fmt: skip
    return {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


def _text(*words: str) -> list[dict[str, Any]]:
    return [*({"contentBlockDelta": {"delta": {"text": w}}} for w in words),
            {"contentBlockStop": {}}]  # fmt: skip


def _uses(*calls: s.Call) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in calls:
        out += [{"contentBlockStart": {"start": {"toolUse": {"toolUseId": c.id, "name": c.name}}}},
                {"contentBlockDelta": {"delta": {"toolUse": {"input": c.json}}}},
                {"contentBlockStop": {}}]  # fmt: skip
    return out


def _turns() -> list[list[dict[str, Any]]]:
    first = [{"messageStart": {"role": "assistant"}},
             {"contentBlockDelta": {"delta": {"reasoningContent": {"text": s.REASONING}}}},
             {"contentBlockStop": {}}, *_text(*s.WORDS), *_uses(*s.CALLS),
             {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    second = [{"messageStart": {"role": "assistant"}}, *_text(*s.ANSWER),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    return [first, second]


def _model(
    turns: list[list[dict[str, Any]]], *, fail: bool = False, refuse: bool = False,
    barrier: Any = None, overflow: bool = False, name: str = "scripted-converse",
) -> Any:  # fmt: skip
    """The scripted model (``barrier``: an ``asyncio.Barrier`` each turn waits at after its
    first two events, so models sharing it stream interleaved; ``overflow``: its first
    request raises Strands' ``ContextWindowOverflowException``, the turns served after it)."""
    from strands.models.model import Model
    from strands.types.exceptions import ContextWindowOverflowException

    class Scripted(Model):
        def __init__(self) -> None:
            self.config: dict[str, Any] = {"model_id": name}
            self.calls = 0
            self.overflowed = not overflow

        def update_config(self, **config: Any) -> None:
            self.config.update(config)

        def get_config(self) -> Any:
            return self.config

        async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError
            yield

        async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            if not self.overflowed:
                self.overflowed = True
                raise ContextWindowOverflowException("input is too long for the model")
            if refuse and self.calls == 1:  # every attempt at turn 2
                from strands.types.exceptions import ModelThrottledException

                raise ModelThrottledException("429 Too Many Requests")
            turn = turns[min(self.calls, len(turns) - 1)]
            self.calls += 1
            for i, event in enumerate(turn):
                if fail and i == 3:  # after the reasoning and the first words
                    raise s.Overloaded("overloaded")
                if barrier is not None and i == 2:
                    await barrier.wait()
                yield event

    return Scripted()


def agent(model: Any, tools: list[Any], name: str = "weatherbot") -> Any:
    """The agent; Strands' own retry of a throttled request, twice without delay."""
    from strands import Agent, ModelRetryStrategy, tool

    retry = ModelRetryStrategy(max_attempts=2, initial_delay=0)
    return Agent(model=model, tools=[tool(t) for t in tools], name=name, callback_handler=None,
                 retry_strategy=retry)  # fmt: skip


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    model = _model(_turns(), fail=run.fail, refuse=run.refuse)
    built = agent(model, [s.weather_tool(hang=run.hang), s.forecast_tool()])
    return strands_events(built, s.QUESTION, sink=run.kept.append)


async def subagent(telemetry: InMemoryTelemetry) -> None:
    reply = [{"messageStart": {"role": "assistant"}}, *_text("sunny"),
             {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    expert = agent(_model([reply]), [], name="expert")

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        inner = strands_events(expert, q, sink=kept.append)
        await run_script(telemetry, inner, agent_name="expert")
        return str(kept[-1]["result"])

    ask = s.Call("call_e", "ask_expert", {"q": "Paris?"})
    lead = agent(_model([
        [{"messageStart": {"role": "assistant"}}, *_uses(ask),
         {"messageStop": {"stopReason": "tool_use"}}],
        [{"messageStart": {"role": "assistant"}}, *_text("It is sunny."),
         {"messageStop": {"stopReason": "end_turn"}}],
    ]), [ask_expert], name="lead")  # fmt: skip
    await run_script(telemetry, strands_events(lead, s.QUESTION), agent_name="lead")


async def agent_tool(telemetry: InMemoryTelemetry) -> None:
    """``agent.as_tool()``: a lead asking an expert agent, which calls its own tool
    ``lookup`` (a client span inside it) and answers "sunny"; every call with usage."""
    from strands import Agent

    expert = _expert(telemetry, description="Knows.")
    ask = s.Call("call_e", "expert", {"input": "Paris?"})
    lead = Agent(model=_model([
        [{"messageStart": {"role": "assistant"}}, *_uses(ask),
         {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])],
        [{"messageStart": {"role": "assistant"}}, *_text("It is sunny."),
         {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])],
    ]), tools=[expert.as_tool()], name="lead", callback_handler=None)  # fmt: skip
    await run_script(telemetry, strands_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``); ``mul`` sync."""
    first = [{"messageStart": {"role": "assistant"}},
             *_uses(*(s.Call(cid, name, {"x": arg}) for cid, name, arg in p.CALLS)),
             {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
    second = [{"messageStart": {"role": "assistant"}}, *_text("done"),
              {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    built = agent(_model([first, second]), p.tools(tracer), name=p.AGENT)
    return strands_events(built, "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each agent an ``as_tool()`` of the one above."""
    from . import _deep as d

    def level(name: str, tool: str, args: dict[str, Any], tools: list[Any]) -> Any:
        ask = s.Call(d.CALL_IDS[name], tool, args)
        model = _model([
            [{"messageStart": {"role": "assistant"}}, *_uses(ask),
             {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])],
            [{"messageStart": {"role": "assistant"}}, *_text(d.ANSWERS[name]),
             {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])],
        ])  # fmt: skip
        from strands import Agent

        return Agent(model=model, tools=tools, name=name, description=f"The {name}.",
                     callback_handler=None)  # fmt: skip

    from strands import tool

    clerk = level("clerk", "lookup", {"term": "Paris"}, [tool(d.lookup(tracer))])
    expert = level("expert", "clerk", {"input": "Paris?"}, [clerk.as_tool()])
    lead = level("lead", "expert", {"input": "Paris?"}, [expert.as_tool()])
    await run_script(telemetry, strands_events(lead, d.QUESTION), agent_name="lead")
    return "expert", "clerk"


async def agent_in_tool(telemetry: InMemoryTelemetry, *, sync: bool) -> None:
    """A ``@tool`` whose body asks another agent itself (``expert(q)`` in a sync tool,
    ``await expert.invoke_async(q)`` in an async one), not through ``as_tool()``: the expert
    calls its own tool ``lookup`` (a client span inside it) and answers "sunny"."""
    from strands import Agent, tool

    expert = _expert(telemetry)

    def ask_sync(question: str) -> str:
        """Ask the expert."""
        return str(expert(question))

    async def ask_async(question: str) -> str:
        """Ask the expert."""
        return str(await expert.invoke_async(question))

    ask = s.Call("call_e", "ask", {"question": "Paris?"})
    body = ask_sync if sync else ask_async
    body.__name__ = "ask"
    lead = Agent(model=_model([
        [{"messageStart": {"role": "assistant"}}, *_uses(ask),
         {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])],
        [{"messageStart": {"role": "assistant"}}, *_text("It is sunny."),
         {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])],
    ]), tools=[tool(body)], name="lead", callback_handler=None)  # fmt: skip
    await run_script(telemetry, strands_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip


def _expert(telemetry: InMemoryTelemetry, **settings: Any) -> Any:
    """An expert agent that calls its own tool ``lookup`` (a client span inside it) and
    answers "sunny", each call with usage; ``settings`` go to its ``Agent``."""
    from strands import Agent, tool

    tracer = telemetry.tracer_provider.get_tracer("some.client")

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        with tracer.start_as_current_span("client lookup"):
            return "sunny"

    look = s.Call("k1", "lookup", {"city": "Paris"})
    return Agent(model=_model([
        [{"messageStart": {"role": "assistant"}}, *_uses(look),
         {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])],
        [{"messageStart": {"role": "assistant"}}, *_text("sunny"),
         {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])],
    ]), tools=[lookup], name="expert", callback_handler=None, **settings)  # fmt: skip

"""Google ADK's conformance builder: an ``LlmAgent`` on a scripted ``BaseLlm`` (ADK's own
extension point for models), run by ``InMemoryRunner`` with SSE streaming.

The model streams partial responses and then the aggregated one, as ADK's ``Gemini`` does,
with Gemini's usage metadata (``thoughts_token_count`` counted apart from
``candidates_token_count``, ``cached_content_token_count`` inside the prompt count). ADK ends
a run on a tool's exception unless an ``on_tool_error_callback`` answers for it; the agent
has one that returns ``{"error": ...}``, the error shape ADK itself uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.google_adk_stream import google_adk_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s

MODEL = "scripted-gemini"


def _usage(turn: s.Turn) -> Any:
    from google.genai import types

    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=turn.input, candidates_token_count=turn.output - turn.reasoning,
        thoughts_token_count=turn.reasoning or None, cached_content_token_count=turn.cache_read,
        total_token_count=turn.total,
    )  # fmt: skip


class Refused(RuntimeError):
    """What the model raises for a request it refuses before any output (``refuse``)."""


def _model(
    turns: list[list[Any]],
    *,
    fail: bool = False,
    refuse: bool = False,
    barrier: Any = None,
    stall: bool = False,
    grounding: Any = None,
) -> Any:
    """A model answering call ``i`` with ``turns[i]``: parts, streamed then aggregated
    (``refuse``: call 2 raises before any, past ``barrier`` when given; ``barrier``: an
    ``asyncio.Barrier`` each call waits at after its first part, so models sharing it stream
    interleaved; ``stall``: then waits until cancelled, a call still streaming when a
    sibling's failure ends the run; ``grounding``: the ``grounding_metadata`` of each final
    response, a search Gemini grounded it in)."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class Scripted(BaseLlm):
        calls: int = 0

        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            n = self.calls
            self.calls += 1
            if refuse and n == 1:
                if barrier is not None:  # once the models sharing it are under way
                    await barrier.wait()
                raise Refused("429 RESOURCE_EXHAUSTED")
            parts = turns[min(n, len(turns) - 1)]
            for part in parts:
                if part.text is not None and stream:
                    content = types.Content(role="model", parts=[part])
                    yield LlmResponse(content=content, partial=True)
                    if barrier is not None and part is parts[0]:
                        await barrier.wait()
                        if stall:
                            await asyncio.Event().wait()
                    if fail:
                        raise s.Overloaded("overloaded")
            usage = _usage(s.TURNS[min(n, len(s.TURNS) - 1)])
            finish = types.FinishReason.STOP
            yield LlmResponse(content=types.Content(role="model", parts=parts),
                              usage_metadata=usage, finish_reason=finish, model_version=MODEL,
                              grounding_metadata=grounding, turn_complete=True)  # fmt: skip

    return Scripted(model=MODEL)


def _turns() -> list[list[Any]]:
    from google.genai import types

    calls = [types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.arguments))
             for c in s.CALLS]  # fmt: skip
    first = [types.Part(text=s.REASONING, thought=True),
             *(types.Part(text=w) for w in s.WORDS), *calls]  # fmt: skip
    return [first, [types.Part(text=w) for w in s.ANSWER]]


def _tool_error(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, Any]:
    return {"error": str(error)}


def agent(model: Any, tools: list[Any], name: str = "weatherbot") -> Any:
    from google.adk.agents import LlmAgent

    return LlmAgent(name=name, model=model, tools=tools, instruction="Be brief.",
                    on_tool_error_callback=_tool_error)  # fmt: skip


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    model = _model(_turns(), fail=run.fail, refuse=run.refuse)
    built = agent(model, [s.weather_tool(hang=run.hang), s.forecast_tool()])
    return google_adk_events(built, s.QUESTION, sink=run.kept.append)


async def subagent(telemetry: InMemoryTelemetry) -> None:
    from google.genai import types

    expert = agent(_model([[types.Part(text="sunny")]]), [], name="expert")

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        inner = google_adk_events(expert, q, sink=kept.append)
        await run_script(telemetry, inner, agent_name="expert")
        return "".join(p.text or "" for e in kept if not e.partial and e.content
                       for p in e.content.parts or ())  # fmt: skip

    ask = types.Part(function_call=types.FunctionCall(id="call_e", name="ask_expert",
                                                      args={"q": "Paris?"}))  # fmt: skip
    lead = agent(_model([[ask], [types.Part(text="It is sunny.")]]), [ask_expert], name="lead")
    await run_script(telemetry, google_adk_events(lead, s.QUESTION), agent_name="lead")


async def agent_tools(telemetry: InMemoryTelemetry) -> None:
    """``AgentTool``: a lead calling an expert agent twice in parallel (ADK runs the agent on
    a runner of its own inside each call), the expert answering "sunny", then "rainy"."""
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    expert = agent(_model([[types.Part(text="sunny")], [types.Part(text="rainy")]]), [],
                   name="expert")  # fmt: skip
    asks = [types.Part(function_call=types.FunctionCall(id=cid, name="expert",
                                                        args={"request": city}))
            for cid, city in (("e1", "Paris?"), ("e2", "Rome?"))]  # fmt: skip
    lead = agent(_model([asks, [types.Part(text="Sunny, rainy.")]]), [AgentTool(expert)],
                 name="lead")  # fmt: skip
    await run_script(telemetry, google_adk_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``); ``mul`` sync."""
    from google.genai import types

    calls = [
        types.Part(function_call=types.FunctionCall(id=cid, name=name, args={"x": arg}))
        for cid, name, arg in p.CALLS
    ]
    model = _model([calls, [types.Part(text="done")]])
    return google_adk_events(agent(model, p.tools(tracer), name=p.AGENT), "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each agent an ``AgentTool`` of the one above."""
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    from . import _deep as d

    def level(name: str, tool: str, args: dict[str, Any], tools: list[Any]) -> Any:
        ask = types.Part(function_call=types.FunctionCall(id=d.CALL_IDS[name], name=tool,
                                                          args=args))  # fmt: skip
        return agent(_model([[ask], [types.Part(text=d.ANSWERS[name])]]), tools, name=name)

    clerk = level("clerk", "lookup", {"term": "Paris"}, [d.lookup(tracer)])
    expert = level("expert", "clerk", {"request": "Paris?"}, [AgentTool(clerk)])
    lead = level("lead", "expert", {"request": "Paris?"}, [AgentTool(expert)])
    await run_script(telemetry, google_adk_events(lead, d.QUESTION), agent_name="lead")
    return "expert", "clerk"


async def runner_in_tool(telemetry: InMemoryTelemetry) -> None:
    """A function tool whose body runs another agent on a runner it makes itself
    (``InMemoryRunner(agent=expert).run_async``), not an ``AgentTool``: the expert answers
    "sunny"."""
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    expert = agent(_model([[types.Part(text="sunny")]]), [], name="expert")

    async def ask(question: str) -> str:
        """Ask the expert."""
        runner = InMemoryRunner(agent=expert, app_name="expert")
        session = await runner.session_service.create_session(app_name="expert", user_id="u")
        said = ""
        message = types.Content(role="user", parts=[types.Part(text=question)])
        async for event in runner.run_async(user_id="u", session_id=session.id,
                                            new_message=message):  # fmt: skip
            if event.is_final_response() and event.content and event.content.parts:
                said = "".join(p.text or "" for p in event.content.parts)
        return said

    call = types.Part(function_call=types.FunctionCall(id="e1", name="ask",
                                                       args={"question": "Paris?"}))  # fmt: skip
    lead = agent(_model([[call], [types.Part(text="Sunny.")]]), [ask], name="lead")
    await run_script(telemetry, google_adk_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip

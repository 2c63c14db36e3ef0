"""CrewAI's conformance builder: the script on CrewAI's own OpenAI LLM, over a mock transport.

CrewAI has no scripted test model; its native ``LLM("gpt-4o-mini")`` (``OpenAICompletion``)
calls the OpenAI SDK, here given a client over the SDK's mock HTTP transport answering Chat
Completions bodies (usage with cache and reasoning tokens; the text beside tool calls, as
OpenAI sends it). A standalone ``Agent.kickoff`` runs the native tool calls of a turn in
parallel, on threads; ``forecast`` raises and CrewAI hands its error back to the model. Chat
Completions carries no reasoning text. CrewAI also asks the Responses API to count the
prompt's tokens before the first call; the transport answers that too.
``fail`` makes the transport raise on turn 1 (CrewAI raises its own ``ConnectionError`` for the
SDK's connection error); ``refuse`` answers turn 2 with a 429 the SDK does not retry;
``hang`` blocks ``weather`` until the test ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.crewai_stream import crewai_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from ._script_chat import completion as _completion

MODEL = "gpt-4o-mini"
RELEASE = threading.Event()  # never set: a hung tool waits (a minute at most, on its thread)
Respond = Callable[[int], "bytes | Exception | Refused"]
completion = partial(_completion, model=MODEL)  # CrewAI's answers name the model as asked


class Refused:
    """A 429 the SDK does not retry (its own ``x-should-retry`` header), before any output."""


def llm(respond: Respond, by_prompt: Callable[[str], bytes | Exception] | None = None) -> Any:
    """CrewAI's OpenAI LLM whose SDK client answers ``respond(turn)`` for each chat call
    (``by_prompt``: the call's request body instead, for runs at once on one LLM)."""
    import httpx
    import openai
    from crewai import LLM

    turns: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/input_tokens"):  # CrewAI counting the prompt first
            return httpx.Response(200, json={"object": "response.input_tokens", "input_tokens": 9})
        turns.append(len(turns))
        body = respond(len(turns) - 1) if by_prompt is None else by_prompt(request.read().decode())
        if isinstance(body, Exception):
            raise body
        if isinstance(body, Refused):
            error = {"error": {"message": "rate limited", "type": "rate_limit_error"}}
            return httpx.Response(429, headers={"x-should-retry": "false"}, json=error)
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    transport = httpx.MockTransport(handle)
    client = openai.OpenAI(api_key="offline", max_retries=0,
                           http_client=httpx.Client(transport=transport))  # fmt: skip
    model = LLM(model=MODEL, api_key="offline", temperature=0.2)
    model._client = client  # the SDK client CrewAI builds, over the mock transport
    return model


def tools(run: s.Run) -> list[Any]:
    from crewai.tools import tool

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        if run.hang:
            RELEASE.wait(60)
        return s.weather_sync(city)

    @tool("forecast")
    def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        return s.forecast_sync(city)

    return [weather, forecast]


def agent(model: Any, tools: list[Any], role: str = "weatherbot") -> Any:
    from crewai import Agent

    return Agent(role=role, goal="Answer about the weather.", backstory="A forecaster.",
                 llm=model, tools=tools, verbose=False)  # fmt: skip


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    def respond(turn: int) -> bytes | Exception | Refused:
        if turn == 0:
            if run.fail:
                return s.Overloaded("overloaded")
            return completion(0, "".join(s.WORDS), [(c.id, c.name, c.json) for c in s.CALLS])
        if run.refuse:
            return Refused()
        return completion(1, "".join(s.ANSWER), [])

    built = agent(llm(respond), tools(run))
    return crewai_events(built, s.QUESTION, sink=run.kept.append)


async def subagent(telemetry: InMemoryTelemetry) -> None:
    import asyncio

    from crewai.tools import tool

    expert = agent(llm(lambda turn: completion(1, "sunny", [])), [], role="expert")

    @tool("ask_expert")
    def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []

        async def ask() -> None:  # CrewAI runs this tool on its thread: a loop of its own
            inner = crewai_events(expert, q, sink=kept.append)
            await run_script(telemetry, inner, agent_name="expert")

        asyncio.run(ask())
        return str(kept[-1].raw)

    def lead(turn: int) -> bytes:
        if turn == 0:
            return completion(0, None, [("call_e", "ask_expert", '{"q": "Paris?"}')])
        return completion(1, "The expert says: sunny.", [])

    boss = agent(llm(lead), [ask_expert], role="lead")
    await run_script(telemetry, crewai_events(boss, s.QUESTION), agent_name="lead")


async def delegations(telemetry: InMemoryTelemetry) -> None:
    """A hierarchical crew whose manager delegates twice in one turn (``Delegate work to
    coworker``, to "writer" and "checker"), then answers; CrewAI runs each coworker inside
    that tool, on the tool's thread."""
    from crewai import Agent, Crew, Process, Task

    def coworker(role: str, answer: str) -> Any:
        return Agent(role=role, goal="Help.", backstory="A colleague.", verbose=False,
                     llm=llm(lambda turn: completion(1, answer, [])))  # fmt: skip

    def delegate(call_id: str, who: str) -> tuple[str, str, str]:
        args = {"task": f"Help with Paris, {who}.", "context": "weather", "coworker": who}
        return call_id, "delegate_work_to_coworker", json.dumps(args)

    def manage(turn: int) -> bytes:
        if turn == 0:
            return completion(0, None, [delegate("d1", "writer"), delegate("d2", "checker")])
        return completion(1, "Paris is sunny, checked.", [])

    manager = Agent(role="manager", goal="Manage.", backstory="A boss.", llm=llm(manage),
                    allow_delegation=True, verbose=False)  # fmt: skip
    task = Task(description="Say something about Paris.", expected_output="a line")
    crew = Crew(agents=[coworker("writer", "A sunny line."), coworker("checker", "Checked.")],
                tasks=[task], manager_agent=manager, process=Process.hierarchical,
                verbose=False)  # fmt: skip
    await run_script(telemetry, crewai_events(crew), agent_name="crew",
                     capture_content=True)  # fmt: skip


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``): CrewAI runs a turn's native calls in parallel,
    on threads (its tools are sync)."""
    from crewai.tools import tool

    def respond(turn: int) -> bytes:
        if turn == 0:
            return completion(0, None, [(c, n, json.dumps({"x": a})) for c, n, a in p.CALLS])
        return completion(1, "done", [])

    tools = [tool(body.__name__)(body) for body in p.tools(tracer, sync=("add", "mul"))]
    return crewai_events(agent(llm(respond), tools, role=p.AGENT), "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each tool runs the agent below with its own
    ``kickoff`` (unstreamed, on CrewAI's thread for the call), as a user's tool would."""
    from crewai.tools import tool

    from . import _deep as d

    def level(name: str, tool_name: str, args: dict[str, Any], tools: list[Any]) -> Any:
        def respond(turn: int) -> bytes:
            if turn == 0:
                return completion(0, None, [(d.CALL_IDS[name], tool_name, json.dumps(args))])
            return completion(1, d.ANSWERS[name], [])

        return agent(llm(respond), tools, role=name)

    clerk = level("clerk", "lookup", {"term": "Paris"}, [tool("lookup")(d.lookup(tracer))])

    @tool("ask_clerk")
    def ask_clerk(q: str) -> str:
        """Ask the clerk."""
        return str(clerk.kickoff(q).raw)

    expert = level("expert", "ask_clerk", {"q": "Paris?"}, [ask_clerk])

    @tool("ask_expert")
    def ask_expert(q: str) -> str:
        """Ask the expert."""
        return str(expert.kickoff(q).raw)

    lead = level("lead", "ask_expert", {"q": "Paris?"}, [ask_expert])
    await run_script(telemetry, crewai_events(lead, d.QUESTION), agent_name="lead")
    return "ask_expert", "ask_clerk"

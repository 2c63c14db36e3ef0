"""smolagents' conformance builder: the script on its real ``OpenAIModel``, over a mock transport.

smolagents has no scripted test model; its ``OpenAIModel`` calls the OpenAI SDK, here over the
SDK's own mock HTTP transport answering Chat Completions bodies (usage with cache and reasoning
tokens). A ``ToolCallingAgent`` answers through its ``final_answer`` tool, so turn 2 is that
call. smolagents runs tools synchronously; a tool that raises fails the step and drops the
results of the calls still running, so ``forecast`` fails after ``weather`` returned.
``fail`` answers turn 1 with an error; ``refuse`` answers turn 2 with a 429 the SDK does not
retry; ``hang`` blocks ``weather`` until the test ends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2 as httpx
from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.smolagents_stream import smolagents_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from ._script_chat import completion

MODEL = "gpt-4o-mini"
RELEASE = threading.Event()  # never set: a hung tool waits (a minute at most, on its thread)


def answer(text: str) -> list[tuple[str, str, str]]:
    return [("call_a", "final_answer", json.dumps({"answer": text}))]


REFUSED = object()
"""What ``respond`` returns for a request refused before any output (a 429)."""


def client(respond: Callable[[list[dict[str, Any]]], Any]) -> dict[str, Any]:
    """``client_kwargs`` for ``OpenAIModel``: the SDK over a mock transport, no retries."""

    def handle(request: httpx.Request) -> httpx.Response:
        body = respond(json.loads(request.content)["messages"])
        if isinstance(body, Exception):
            raise body
        if body is REFUSED:
            error = {"error": {"message": "rate limited", "type": "rate_limit_error"}}
            return httpx.Response(429, headers={"x-should-retry": "false"}, json=error)
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    transport = httpx.MockTransport(handle)
    return {"http_client": httpx.Client(transport=transport), "max_retries": 0}


def tools(run: s.Run) -> list[Any]:
    from smolagents import tool

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        if run.hang:
            RELEASE.wait(60)
        return s.weather_sync(city)

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's forecast for a city.

        Args:
            city: the city.
        """
        time.sleep(0.05)  # weather returns first: its result is not dropped with this one's
        return s.forecast_sync(city)

    return [weather, forecast]


def agent(run: s.Run, **options: Any) -> Any:
    from smolagents import OpenAIModel, ToolCallingAgent

    turns: list[int] = []  # the failed tool's error reaches the model as a user message

    def respond(messages: list[dict[str, Any]]) -> Any:
        turns.append(len(turns))
        if len(turns) == 1:
            if run.fail:
                return s.Overloaded("overloaded")
            calls = [(c.id, c.name, c.json) for c in s.CALLS]
            return completion(0, "".join(s.WORDS), calls)
        if run.refuse:
            return REFUSED
        return completion(1, None, answer("".join(s.ANSWER)))

    # retry=False: smolagents would wait a minute before retrying the refused request (a 429)
    model = OpenAIModel(MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client(respond), temperature=0.2, retry=False)  # fmt: skip
    return ToolCallingAgent(tools=tools(run), model=model, verbosity_level=0, **options)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return smolagents_events(agent(run), s.QUESTION, sink=run.kept.append)


async def subagent(telemetry: InMemoryTelemetry) -> None:
    import asyncio

    from smolagents import OpenAIModel, ToolCallingAgent, tool

    def model(respond: Callable[[list[dict[str, Any]]], bytes]) -> Any:
        return OpenAIModel(MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                           client_kwargs=client(respond))  # fmt: skip

    asked: list[int] = []

    def lead(messages: list[dict[str, Any]]) -> bytes:
        asked.append(1)
        if len(asked) == 1:
            return completion(0, None, [("call_e", "ask_expert", '{"q": "Paris?"}')])
        return completion(1, None, answer("The expert says: sunny."))

    expert = ToolCallingAgent(
        tools=[], model=model(lambda messages: completion(1, None, answer("sunny"))),
        verbosity_level=0,
    )  # fmt: skip

    @tool
    def ask_expert(q: str) -> str:
        """Ask the expert.

        Args:
            q: the question.
        """
        kept: list[Any] = []

        async def ask() -> None:  # smolagents runs this tool on its thread: a loop of its own
            inner = smolagents_events(expert, q, sink=kept.append)
            await run_script(telemetry, inner, agent_name="expert")

        asyncio.run(ask())
        return str(kept[-1].output)

    boss = ToolCallingAgent(tools=[ask_expert], model=model(lead), verbosity_level=0)
    await run_script(telemetry, smolagents_events(boss, s.QUESTION), agent_name="lead")


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``): smolagents runs parallel calls on a thread pool
    (its tools are sync)."""
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    turns: list[int] = []

    def respond(messages: list[dict[str, Any]]) -> bytes:
        turns.append(1)
        if len(turns) == 1:
            return completion(0, None, [(c, n, json.dumps({"x": a})) for c, n, a in p.CALLS])
        return completion(1, None, answer("done"))

    model = OpenAIModel(MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client(respond))  # fmt: skip
    tools = [tool(body) for body in p.tools(tracer, sync=("add", "mul"))]
    built = ToolCallingAgent(tools=tools, model=model, verbosity_level=0)
    return smolagents_events(built, "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each agent a managed agent of the one above."""
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from . import _deep as d

    def level(name: str, tool_name: str, args: dict[str, Any], **options: Any) -> Any:
        turns: list[int] = []

        def respond(messages: list[dict[str, Any]]) -> bytes:
            turns.append(1)
            if len(turns) == 1:
                return completion(0, None, [(d.CALL_IDS[name], tool_name, json.dumps(args))])
            return completion(1, None, answer(d.ANSWERS[name]))

        model = OpenAIModel(MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                            client_kwargs=client(respond))  # fmt: skip
        return ToolCallingAgent(model=model, verbosity_level=0, name=name,
                                description=f"The {name}.", **options)  # fmt: skip

    clerk = level("clerk", "lookup", {"term": "Paris"}, tools=[tool(d.lookup(tracer))])
    expert = level("expert", "clerk", {"task": "Paris?"}, tools=[], managed_agents=[clerk])
    lead = level("lead", "expert", {"task": "Paris?"}, tools=[], managed_agents=[expert])
    await run_script(telemetry, smolagents_events(lead, d.QUESTION), agent_name="lead")
    return "expert", "clerk"

"""AutoGen AgentChat's conformance builder: ``AssistantAgent`` on AutoGen's own test model.

``ReplayChatCompletionClient`` replays scripted responses: turn 1 a ``CreateResult`` with the
two function calls and the script's words as its thought (where AutoGen's clients put the text
beside tool calls), turn 2 the answer as text (streamed in chunks with
``model_client_stream=True``), the reasoning before it between ``<think>`` tags, as an R1
model writes it. It counts prompt tokens itself, so the trace must show its count
once (``usage``). A subclass fails after the first chunk, as a provider's stream would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.autogen_stream import autogen_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from ._conformance import Totals

INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
        "structured_output": False}  # fmt: skip


def _client(responses: list[Any], *, fail: bool = False) -> Any:
    from autogen_ext.models.replay import ReplayChatCompletionClient

    class Failing(ReplayChatCompletionClient):
        async def create_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
            yield s.WORDS[0]
            raise s.Overloaded("overloaded")

    kind = Failing if fail else ReplayChatCompletionClient
    return kind(responses, model_info=INFO)  # type: ignore[arg-type]


def _calls(*calls: s.Call, thought: str | None = None) -> Any:
    return asking(*((c.id, c.name, c.json) for c in calls), thought=thought)


def asking(*calls: tuple[str, str, str], thought: str | None = None) -> Any:
    """A response asking for ``calls`` (id, name, arguments as the model wrote them: text
    that need not parse)."""
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage

    content = [FunctionCall(id=cid, name=name, arguments=text) for cid, name, text in calls]
    usage = RequestUsage(prompt_tokens=s.TURNS[0].input, completion_tokens=s.TURNS[0].output)
    return CreateResult(finish_reason="function_calls", content=content, usage=usage,
                        cached=False, thought=thought)  # fmt: skip


def agent(responses: list[Any], tools: list[Any], name: str = "weatherbot", **kw: Any) -> Any:
    from autogen_agentchat.agents import AssistantAgent

    return AssistantAgent(name, model_client=_client(responses, **kw), tools=tools,
                          model_client_stream=True, reflect_on_tool_use=True)  # fmt: skip


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    answer = f"<think>{s.REASONING}</think>{''.join(s.ANSWER)}"  # reasoning as R1 writes it
    responses = [_calls(*s.CALLS, thought="".join(s.WORDS)), answer]
    built = agent(responses, [s.weather_tool(hang=run.hang), s.forecast_tool()], fail=run.fail)
    return autogen_events(built, s.QUESTION, sink=run.kept.append)


def usage(run: s.Run) -> Totals:
    used = [m.models_usage for m in run.kept if getattr(m, "models_usage", None) is not None]
    used = [u for u in used if type(u).__name__ == "RequestUsage"]
    return {"input": sum(u.prompt_tokens for u in used),
            "output": sum(u.completion_tokens for u in used)}  # fmt: skip


async def subagent(telemetry: InMemoryTelemetry) -> None:
    expert = agent(["sunny"], [], name="expert")

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        inner = autogen_events(expert, q, sink=kept.append)
        await run_script(telemetry, inner, agent_name="expert")
        return str(kept[-1].messages[-1].content)

    lead = agent([_calls(s.Call("call_e", "ask_expert", {"q": "Paris?"})), "It is sunny."],
                 [ask_expert], name="lead")  # fmt: skip
    await run_script(telemetry, autogen_events(lead, s.QUESTION), agent_name="lead")


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``), both tools sync: AutoGen runs them on the
    loop's executor, whose threads it gives no context (``add`` twice at once, each under its
    own call)."""
    first = _calls(*(s.Call(cid, name, {"x": arg}) for cid, name, arg in p.CALLS))
    built = agent([first, "done"], p.tools(tracer, sync=("add", "mul")), name=p.AGENT)
    return autogen_events(built, "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each agent an ``AgentTool`` of the one above."""
    from autogen_agentchat.tools import AgentTool
    from autogen_core.models import CreateResult, RequestUsage

    from . import _deep as d

    def answer(name: str) -> Any:
        usage = RequestUsage(prompt_tokens=s.TURNS[1].input, completion_tokens=s.TURNS[1].output)
        return CreateResult(finish_reason="stop", content=d.ANSWERS[name], usage=usage,
                            cached=False)  # fmt: skip

    def level(name: str, tool: str, args: dict[str, Any], tools: list[Any]) -> Any:
        ask = _calls(s.Call(d.CALL_IDS[name], tool, args))
        return agent([ask, answer(name)], tools, name=name)

    async def lookup(term: str) -> str:
        """Look a term up in the files."""
        return d.lookup(tracer)(term)  # type: ignore[no-any-return]

    clerk = level("clerk", "lookup", {"term": "Paris"}, [lookup])
    expert = level("expert", "clerk", {"task": "Paris?"},
                   [AgentTool(clerk, return_value_as_last_message=True)])  # fmt: skip
    lead = level("lead", "expert", {"task": "Paris?"},
                 [AgentTool(expert, return_value_as_last_message=True)])  # fmt: skip
    await run_script(telemetry, autogen_events(lead, d.QUESTION), agent_name="lead")
    return "expert", "clerk"

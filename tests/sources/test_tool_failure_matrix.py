"""Every way a tool can fail in each framework, one cell each: the call's span says so.

A cell is one framework and one way its tool fails: the tool raising (sync or async), raising
the framework's own error, running out of its time limit, being called by a name the agent
does not have, being given arguments that fail the framework's validation, or failing under a
failure handler of the caller's own. The model asks for that one call (id ``c1``), then
answers. Each cell holds the same things: the call's ``execute_tool`` span is ERROR with
``error.type`` the failure's class (or the framework's own outcome, ``tool_error`` only where
the framework keeps nothing but text) and one ``exception`` event of that type (raised, or
reported for a failure the framework caught), ``agent_otel.tool.is_error`` where the framework
hands the failure back as the call's result, the tool duration metric's point carries the same
``error.type``, and the run and its steps fail only when the framework let the failure end the
run (``raises``). ``test_tool_failures`` has the shapes with a sibling that succeeds.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import AgentEvent, ToolResult
from agent_otel.testing import InMemoryTelemetry, run_script

ARGS = {"city": "Rome"}


class ToolFailure(RuntimeError):
    """What a failing tool raises."""


async def weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


async def raising(city: str) -> str:
    """Weather of a city."""
    raise ToolFailure(f"no weather for {city}")


def raising_sync(city: str) -> str:
    """Weather of a city."""
    raise ToolFailure(f"no weather for {city}")


async def raising_value(city: str) -> str:
    """Weather of a city (failing with a ``ValueError``, which Strands' ``@tool`` reports
    without its class)."""
    raise ValueError(f"no weather for {city}")


async def returning(city: str) -> Any:
    """Weather of a city (its failure returned, not raised)."""
    return ToolFailure(f"no weather for {city}")


def returning_sync(city: str) -> Any:
    """Weather of a city (its failure returned, not raised)."""
    return ToolFailure(f"no weather for {city}")


async def slow(city: str) -> str:
    """Weather of a city."""
    await asyncio.sleep(5)
    return f"sunny in {city}"


async def cancelled(city: str) -> str:
    """Weather of a city (what it awaited was cancelled under it)."""
    raise asyncio.CancelledError


@dataclass(frozen=True)
class Cell:
    """One framework, one way its tool fails."""

    id: str
    package: str
    source: Callable[[], AsyncIterator[AgentEvent]]
    error_type: str
    raises: type[BaseException] | None = None
    """The framework lets the failure end the run (raised as this class)."""
    text: str | None = None
    """The text the framework hands the model as the failed call's output, unchanged."""
    cancels: bool = False
    """The framework's own cancel failed the call, and stops the run: it ends ``cancelled``
    (ERROR on the run and the step it stopped in), its calls aside."""

    def param(self) -> Any:
        return pytest.param(self, id=self.id)


# --- OpenAI Agents SDK, on its own scripted test model ------------------------------------


def _agents(tool: Any, name: str | None = None, args: Any = ARGS) -> AsyncIterator[AgentEvent]:
    from agents import Agent
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    model = scripted([function_call(name or tool.name, args, call_id="c1")],
                     [assistant_message("done")])  # fmt: skip
    return openai_agents_events(Agent(name="bot", tools=[tool], model=model), "Weather?")


def _custom_text(context: Any, error: Exception) -> str:
    return f"weather is down: {type(error).__name__}"


def _agents_tool(body: Callable[..., Any], **options: Any) -> Callable[[], Any]:
    def source() -> AsyncIterator[AgentEvent]:
        from agents import function_tool

        return _agents(function_tool(body, **options))

    return source


def _agents_guarded(kind: str, behavior: str) -> Callable[[], Any]:
    """``weather`` under a tool guardrail (``kind``: input or output) that refuses the call,
    its ``behavior`` the SDK's: ``reject_content`` (the model is told) or ``raise_exception``."""

    def source() -> AsyncIterator[AgentEvent]:
        import agents

        def refuse(data: Any) -> Any:
            made = agents.ToolGuardrailFunctionOutput
            return made.reject_content("weather is off limits") if behavior == "reject_content" \
                else made.raise_exception()  # fmt: skip

        guardrail = getattr(agents, f"tool_{kind}_guardrail")(refuse)
        return _agents(agents.function_tool(weather, **{f"tool_{kind}_guardrails": [guardrail]}))

    return source


def _agents_unknown() -> AsyncIterator[AgentEvent]:
    from agents import function_tool

    return _agents(function_tool(weather), name="nowhere")


def _agents_invalid(**options: Any) -> Callable[[], Any]:
    def source() -> AsyncIterator[AgentEvent]:
        from agents import function_tool

        return _agents(function_tool(weather, **options), args={"town": 5})

    return source


AGENTS = [
    Cell("openai_agents-async", "agents", _agents_tool(raising), "ToolFailure"),
    Cell("openai_agents-sync", "agents", _agents_tool(raising_sync), "ToolFailure"),
    Cell("openai_agents-custom_handler", "agents",
         _agents_tool(raising, failure_error_function=_custom_text), "ToolFailure",
         text="weather is down: ToolFailure"),
    Cell("openai_agents-invalid_arguments", "agents", _agents_invalid(), "ModelBehaviorError"),
    Cell("openai_agents-invalid_arguments_custom_handler", "agents",
         _agents_invalid(failure_error_function=_custom_text), "ModelBehaviorError",
         text="weather is down: ModelBehaviorError"),
    Cell("openai_agents-timeout", "agents", _agents_tool(slow, timeout=0.05), "ToolTimeoutError",
         text="Tool 'slow' timed out after 0.05 seconds."),
    Cell("openai_agents-timeout_custom_handler", "agents",
         _agents_tool(slow, timeout=0.05, timeout_error_function=_custom_text),
         "ToolTimeoutError", text="weather is down: ToolTimeoutError"),
    Cell("openai_agents-timeout_raising", "agents",
         _agents_tool(slow, timeout=0.05, timeout_behavior="raise_exception"),
         "ToolTimeoutError", raises=Exception),
    Cell("openai_agents-unknown_tool", "agents", _agents_unknown, "ModelBehaviorError",
         raises=Exception),
    Cell("openai_agents-input_guardrail_rejected", "agents",
         _agents_guarded("input", "reject_content"), "guardrail_rejected",
         text="weather is off limits"),
    Cell("openai_agents-output_guardrail_rejected", "agents",
         _agents_guarded("output", "reject_content"), "guardrail_rejected",
         text="weather is off limits"),
    Cell("openai_agents-input_guardrail_raising", "agents",
         _agents_guarded("input", "raise_exception"), "ToolInputGuardrailTripwireTriggered",
         raises=Exception),
    Cell("openai_agents-output_guardrail_raising", "agents",
         _agents_guarded("output", "raise_exception"), "ToolOutputGuardrailTripwireTriggered",
         raises=Exception),
    Cell("openai_agents-cancelled", "agents", _agents_tool(cancelled), "CancelledError",
         text="An error occurred while running the tool. Please try again."),
    Cell("openai_agents-cancelled_custom_handler", "agents",
         _agents_tool(cancelled, failure_error_function=_custom_text), "CancelledError",
         text="weather is down: _FunctionToolCancelledError"),  # the SDK's wrapper, told
]  # fmt: skip


# --- pydantic-ai, on its FunctionModel ------------------------------------------------------


def _pydantic(tool: Any, name: str | None = None, args: str = '{"city": "Rome"}') -> Any:
    def source() -> AsyncIterator[AgentEvent]:
        from pydantic_ai import Agent, Tool
        from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

        from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

        made = tool() if tool is _timed else tool
        called = name or getattr(made, "name", None) or made.__name__

        async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
            if len(messages) == 1:
                yield {0: DeltaToolCall(called, args, tool_call_id="c1")}
            else:
                yield "done"

        agent = Agent(FunctionModel(stream_function=stream, model_name="scripted-model"))
        agent.toolsets[0].add_tool(made if isinstance(made, Tool) else Tool(made))  # type: ignore[attr-defined]
        return pydantic_ai_events(agent, "Weather?")

    return source


async def _retrying(city: str) -> str:
    """Weather of a city."""
    from pydantic_ai import ModelRetry

    raise ModelRetry(f"try again for {city}")


def _timed() -> Any:
    from pydantic_ai import Tool

    return Tool(slow, timeout=0.05)


PYDANTIC = [
    Cell("pydantic_ai-async", "pydantic_ai", _pydantic(raising), "ToolFailure",
         raises=ToolFailure),
    Cell("pydantic_ai-sync", "pydantic_ai", _pydantic(raising_sync), "ToolFailure",
         raises=ToolFailure),
    Cell("pydantic_ai-model_retry", "pydantic_ai", _pydantic(_retrying), "ModelRetry"),
    Cell("pydantic_ai-timeout", "pydantic_ai", _pydantic(_timed), "ModelRetry"),
    Cell("pydantic_ai-invalid_arguments", "pydantic_ai",
         _pydantic(weather, args='{"city": 5}'), "ValidationError"),
    Cell("pydantic_ai-unknown_tool", "pydantic_ai", _pydantic(weather, name="nowhere"),
         "ModelRetry"),
    Cell("pydantic_ai-cancelled", "pydantic_ai", _pydantic(cancelled), "CancelledError",
         raises=asyncio.CancelledError),
]  # fmt: skip


# --- LangGraph: create_react_agent on a fake chat model (the script's two calls) ------------


class _Refused(Exception):
    """A LangChain ``ToolException`` subclass, raised by the tool (made below)."""


def _langgraph(handle_tool_error: Any, node_handles: Any, *, sync: bool = False,
               exception: Any = ToolFailure, only: str | None = None, name: str = "weather",
               town: bool = False) -> Any:  # fmt: skip
    """The script asks for ``weather`` with a ``city``: a tool of another ``name`` is a name
    the model made up; ``town``: the tool wants a ``town`` (its arguments fail validation)."""

    def source() -> AsyncIterator[AgentEvent]:
        from langchain_core.tools import StructuredTool
        from langgraph.prebuilt import ToolNode

        from agent_contract.sources.langgraph_stream import langgraph_events

        from . import _frameworks as fw

        def body(city: str) -> str:
            """Weather of a city (failing for ``only``, when given)."""
            if only not in (None, city):
                return f"sunny in {city}"
            raise exception(f"no weather for {city}")

        async def abody(city: str) -> str:
            """Weather of a city."""
            return body(city)

        async def by_town(town: str) -> str:
            """Weather of a town."""
            return body(town)

        tool = StructuredTool.from_function(
            func=body if sync else None, coroutine=by_town if town else None if sync else abody,
            name=name, description="Weather of a city.", handle_tool_error=handle_tool_error,
        )  # fmt: skip
        graph = fw.langgraph_graph(tools=ToolNode([tool], handle_tool_errors=node_handles))
        return langgraph_events(graph, {"messages": [("user", "Weather?")]})

    return source


def _tool_exception(message: str) -> Exception:
    from langchain_core.tools import ToolException

    return ToolException(message)


LANGGRAPH = [
    Cell("langgraph-node_handles", "langgraph", _langgraph(False, True), "ToolFailure"),
    Cell("langgraph-node_handles_sync", "langgraph", _langgraph(False, True, sync=True),
         "ToolFailure"),
    Cell("langgraph-node_handles_text", "langgraph", _langgraph(False, "down"), "ToolFailure"),
    Cell("langgraph-node_raises", "langgraph", _langgraph(False, False, only="Rome"), "ToolFailure",
         raises=ToolFailure),
    Cell("langgraph-tool_exception_handled", "langgraph",
         _langgraph(True, False, exception=_tool_exception), "tool_error"),
    Cell("langgraph-tool_exception_handler", "langgraph",
         _langgraph(lambda e: f"down: {e}", False, exception=_tool_exception), "tool_error"),
    Cell("langgraph-node_handler", "langgraph", _langgraph(False, lambda e: f"down: {e}"),
         "ToolFailure", text="down: no weather for Paris"),
    Cell("langgraph-unknown_tool", "langgraph", _langgraph(False, True, name="forecast"),
         "tool_not_found", text="Error: weather is not a valid tool, try one of [forecast]."),
    Cell("langgraph-invalid_arguments", "langgraph", _langgraph(False, True, town=True),
         "ValidationError"),
]  # fmt: skip


# --- Agno: OpenAIChat over the OpenAI SDK's mock transport ----------------------------------


def _agno(tool: Any, args: Any = ARGS, name: str | None = None) -> Any:
    def source() -> AsyncIterator[AgentEvent]:
        from agent_contract.sources.agno_stream import agno_events

        from . import _script_chat as chat
        from ._fw_agno import agent

        asked = chat.call(name or tool.__name__, args, "c1")
        built = agent(asked, chat.answer("done"), tools=[tool])
        return agno_events(built, "Weather?")

    return source


AGNO = [
    Cell("agno-async", "agno", _agno(raising), "ToolFailure"),
    Cell("agno-sync", "agno", _agno(raising_sync), "ToolFailure"),
    Cell("agno-returned_exception", "agno", _agno(returning), "ToolFailure",
         text="no weather for Rome"),
    Cell("agno-returned_exception_sync", "agno", _agno(returning_sync), "ToolFailure",
         text="no weather for Rome"),
    Cell("agno-invalid_arguments", "agno", _agno(weather, {"town": 5}), "ValidationError"),
    # Agno refuses these without running anything or emitting a tool event: only the message
    # it adds for the model tells them (its outcome the error.type)
    Cell("agno-unknown_tool", "agno", _agno(weather, name="nowhere"), "tool_not_found",
         text="Error: The requested tool does not exist or is not available."),
    Cell("agno-unparsable_arguments", "agno", _agno(weather, "{city"), "invalid_arguments"),
    Cell("agno-arguments_not_an_object", "agno", _agno(weather, '"Rome"'), "invalid_arguments"),
    Cell("agno-cancelled", "agno", _agno(cancelled), "CancelledError",
         raises=asyncio.CancelledError),
]  # fmt: skip


# --- AutoGen AgentChat: AssistantAgent on its replay test client ----------------------------


def _autogen(tool: Any, name: str | None = None, args: Any = ARGS) -> Any:
    def source() -> AsyncIterator[AgentEvent]:
        from agent_contract.sources.autogen_stream import autogen_events

        from . import _fw_autogen as fa

        text = args if isinstance(args, str) else json.dumps(args)
        asked = fa.asking(("c1", name or tool.__name__, text))
        return autogen_events(fa.agent([asked, "done"], [tool], name="bot"), "Weather?")

    return source


AUTOGEN = [  # the workbench turns every failure into text: the model's text is AutoGen's
    Cell("autogen-async", "autogen_agentchat", _autogen(raising), "ToolFailure",
         text="no weather for Rome"),
    Cell("autogen-sync", "autogen_agentchat", _autogen(raising_sync), "ToolFailure",
         text="no weather for Rome"),
    Cell("autogen-invalid_arguments", "autogen_agentchat", _autogen(weather, args={"town": 5}),
         "ValidationError"),
    Cell("autogen-unparsable_arguments", "autogen_agentchat", _autogen(weather, args="{city"),
         "JSONDecodeError"),
    Cell("autogen-unknown_tool", "autogen_agentchat", _autogen(weather, name="nowhere"),
         "tool_not_found", text="Error: tool 'nowhere' not found in any workbench"),
]  # fmt: skip


# --- smolagents: ToolCallingAgent on OpenAIModel over the OpenAI SDK's mock transport -------


def _smolagents(
    name: str = "weather", args: str = '{"city": "Rome"}', exception: Any = ToolFailure,
    returns: bool = False,
) -> Any:  # fmt: skip
    """``returns``: the tool returns the exception (declared ``-> Any``, which smolagents
    hands back as it is) instead of raising it."""

    def source() -> AsyncIterator[AgentEvent]:
        from smolagents import OpenAIModel, ToolCallingAgent, tool

        from agent_contract.sources.smolagents_stream import smolagents_events

        from . import _fw_smolagents as fs

        @tool
        def weather(city: str) -> Any:
            """Weather of a city.

            Args:
                city: the city.
            """
            if returns:
                return exception(f"no weather for {city}")
            raise exception(f"no weather for {city}")

        turns: list[int] = []

        def respond(messages: list[dict[str, Any]]) -> Any:
            turns.append(len(turns))
            if len(turns) == 1:
                return fs.completion(0, None, [("c1", name, args)])
            return fs.completion(1, None, fs.answer("done"))

        model = OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                            client_kwargs=fs.client(respond), retry=False)  # fmt: skip
        built = ToolCallingAgent(tools=[weather], model=model, verbosity_level=0)
        return smolagents_events(built, "Weather?")

    return source


SMOLAGENTS = [  # smolagents' own exception classes for what it refuses
    Cell("smolagents-raising", "smolagents", _smolagents(), "ToolFailure"),
    Cell("smolagents-returned_exception", "smolagents", _smolagents(returns=True),
         "ToolFailure", text="no weather for Rome"),
    Cell("smolagents-unknown_tool", "smolagents", _smolagents(name="nowhere"),
         "AgentToolExecutionError"),
    Cell("smolagents-invalid_arguments", "smolagents", _smolagents(args='{"town": 5}'),
         "ValueError"),
]  # fmt: skip


def _smolagents_code(body: Callable[[str], str], **executor: Any) -> AsyncIterator[AgentEvent]:
    """A CodeAgent whose code calls ``weather`` (its ``body``), then answers; ``executor``:
    its executor's options (``timeout_seconds``, smolagents' own time limit for a code run)."""
    from smolagents import CodeAgent, OpenAIModel, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as fs

    @tool
    def weather(city: str) -> str:
        """Weather of a city.

        Args:
            city: the city.
        """
        return body(city)

    code = iter(["print(weather('Rome'))", "final_answer('done')"])

    def respond(messages: list[dict[str, Any]]) -> Any:
        return fs.completion(0, f"Thought: go.\n<code>\n{next(code)}\n</code>", [])

    model = OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=fs.client(respond), retry=False)  # fmt: skip
    built = CodeAgent(tools=[weather], model=model, verbosity_level=0, executor_kwargs=executor)
    return smolagents_events(built, "Weather?")


def _sleeps(city: str) -> str:
    import time

    time.sleep(0.2)  # past the limit (smolagents waits for its thread all the same)
    return f"sunny in {city}"


def _raises(city: str) -> str:
    raise ToolFailure(f"no weather for {city}")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("body", "executor", "error_type"),
    [(_raises, {}, "ToolFailure"),
     (_sleeps, {"timeout_seconds": 0.05}, "ExecutionTimeoutError")],
    ids=["raising", "timeout"],
)  # fmt: skip
async def test_a_smolagents_code_run_that_failed_is_named_by_what_failed_in_it(
    body: Callable[[str], str],
    executor: dict[str, Any],
    error_type: str,
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A CodeAgent's code run is its one call; smolagents wraps whatever stopped the code in
    its ``AgentExecutionError`` (not ``from`` it): the call is named by what stopped it, the
    executor's time limit or the exception the code (its tool) raised."""
    pytest.importorskip("smolagents")
    events = await run_script(otel_telemetry, _smolagents_code(body, **executor),
                              agent_name="agent")  # fmt: skip

    failed, answered = sorted(otel_telemetry.by_name()["execute_tool python_interpreter"],
                              key=lambda s: s.start_time or 0)  # fmt: skip
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == error_type
    assert (failed.attributes or {})["agent_otel.tool.is_error"] is True
    assert len([e for e in failed.events if e.name == "exception"]) == 1
    assert answered.status.status_code is StatusCode.UNSET
    assert [r.is_error for r in events if isinstance(r, ToolResult)] == [True, False]
    assert otel_telemetry.span("invoke_agent agent").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


# --- LlamaIndex: FunctionAgent on its mock function-calling LLM -----------------------------


def _llama_index(name: str = "weather", args: Any = ARGS, *, reported: bool = False) -> Any:
    """``reported``: the tool is ``weather``, its callback reporting it failed (``is_error``)."""

    def source() -> AsyncIterator[AgentEvent]:
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.core.base.llms.types import ToolCallBlock
        from llama_index.core.tools import FunctionTool, ToolOutput

        from agent_contract.sources.llama_index_stream import llama_index_events

        from . import _fw_llama_index as fl

        def failed(output: Any) -> Any:
            return ToolOutput(content="no weather for Rome", tool_name="weather", raw_input={},
                              raw_output=output, is_error=True)  # fmt: skip

        tool = FunctionTool.from_defaults(weather, callback=failed) if reported else raising
        call = ToolCallBlock(tool_call_id="c1", tool_name=name, tool_kwargs=args)
        built = FunctionAgent(name="bot", tools=[tool], llm=fl.replies(call, "done"),
                              streaming=True)  # fmt: skip
        return llama_index_events(built, "Weather?")

    return source


LLAMA_INDEX = [
    Cell("llama_index-raising", "llama_index.core", _llama_index("raising"), "ToolFailure",
         text="no weather for Rome"),
    Cell("llama_index-unknown_tool", "llama_index.core", _llama_index("nowhere"),
         "tool_not_found", text="Tool nowhere not found. Please select a tool that is available."),
    Cell("llama_index-error_result", "llama_index.core", _llama_index(reported=True),
         "tool_error", text="no weather for Rome"),
    Cell("llama_index-invalid_arguments", "llama_index.core",
         _llama_index("raising", {"town": 5}), "TypeError"),
]  # fmt: skip


# --- Strands Agents (its own environment): an Agent on a scripted model ---------------------


def _strands(tool: Any, name: str | None = None, args: str = '{"city": "Rome"}',
             before: Callable[[Any], None] | None = None,
             batch: Callable[[Any], None] | None = None, calls: int = 1,
             sequential: bool = False) -> Any:  # fmt: skip
    """``before``: a ``BeforeToolCallEvent`` hook of the caller's; ``batch``: a
    ``BeforeToolsEvent`` hook; ``calls``: the model asks for that many (``c1``, ``c2``, ...),
    run one after the other when ``sequential``."""

    def source() -> AsyncIterator[AgentEvent]:
        from agent_contract.sources.strands_stream import strands_events

        from . import _fw_strands as fs

        first: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        for i in range(1, calls + 1):
            use = {"toolUse": {"toolUseId": f"c{i}", "name": name or tool.__name__}}
            first += [{"contentBlockStart": {"start": use}},
                      {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}},
                      {"contentBlockStop": {}}]  # fmt: skip
        first.append({"messageStop": {"stopReason": "tool_use"}})
        second = [{"messageStart": {"role": "assistant"}}, *fs._text("done"),
                  {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
        built = fs.agent(fs._model([first, second]), [tool], name="bot")
        if sequential:
            from strands.tools.executors import SequentialToolExecutor

            built.tool_executor = SequentialToolExecutor()
        from strands.hooks import BeforeToolCallEvent, BeforeToolsEvent

        for event, hook in ((BeforeToolCallEvent, before), (BeforeToolsEvent, batch)):
            if hook is not None:
                built.hooks.add_callback(event, hook)
        return strands_events(built, "Weather?")

    return source


async def reports_error(city: str) -> dict[str, Any]:
    """Weather of a city (reported failed the way Strands' tool results do)."""
    return {"status": "error", "content": [{"text": f"no weather for {city}"}]}


def _cancel(message: str | bool) -> Callable[[Any], None]:
    """A hook cancelling every call (Strands' ``cancel_tool``: its text, or ``True``)."""

    def cancel(event: Any) -> None:
        event.cancel_tool = message

    return cancel


def _cancel_batch(message: str | bool) -> Callable[[Any], None]:
    """A hook cancelling a whole batch (Strands' ``BeforeToolsEvent.cancel``)."""

    def cancel(event: Any) -> None:
        event.cancel = message

    return cancel


def _cancel_agent(event: Any) -> None:
    """A hook stopping the agent as its tools are about to run (``agent.cancel()``)."""
    event.agent.cancel()


STRANDS = [
    Cell("strands-error_result", "strands", _strands(reports_error), "tool_error",
         text="no weather for Rome"),
    Cell("strands-cancel_tool", "strands", _strands(weather, before=_cancel("not allowed")),
         "guardrail_rejected", text="not allowed"),
    Cell("strands-cancel_tool_true", "strands", _strands(weather, before=_cancel(True)),
         "guardrail_rejected"),
    Cell("strands-cancel_batch", "strands",
         _strands(weather, batch=_cancel_batch("no tools now"), calls=2), "guardrail_rejected",
         text="no tools now"),
    Cell("strands-cancel_batch_true", "strands",
         _strands(weather, batch=_cancel_batch(True), calls=2), "guardrail_rejected"),
    Cell("strands-agent_cancel", "strands", _strands(weather, batch=_cancel_agent, calls=2),
         "CancelledError", text="Tool execution cancelled", cancels=True),
    Cell("strands-async", "strands", _strands(raising), "ToolFailure"),
    Cell("strands-sync", "strands", _strands(raising_sync), "ToolFailure"),
    Cell("strands-value_error", "strands", _strands(raising_value), "ValueError",
         text="Error: no weather for Rome"),
    Cell("strands-unknown_tool", "strands", _strands(weather, name="nowhere"),
         "tool_not_found", text="Unknown tool: nowhere"),
    Cell("strands-invalid_arguments", "strands", _strands(weather, args='{"town": 5}'),
         "ValidationError"),
]  # fmt: skip


# --- Google ADK (its own environment): an LlmAgent on a scripted BaseLlm ---------------------


def _adk(tool: Any, name: str | None = None, args: Any = ARGS, on_error: Any = None,
         **callbacks: Any) -> Any:  # fmt: skip
    """``callbacks``: the agent's ``before_tool_callback`` / ``after_tool_callback``."""

    def source() -> AsyncIterator[AgentEvent]:
        from google.adk.agents import LlmAgent
        from google.genai import types

        from agent_contract.sources.google_adk_stream import google_adk_events

        from . import _fw_google_adk as fg

        call = types.FunctionCall(id="c1", name=name or tool.__name__, args=args)
        model = fg._model([[types.Part(function_call=call)], [types.Part(text="done")]])
        built = LlmAgent(name="bot", model=model, tools=[tool], instruction="Be brief.",
                         on_tool_error_callback=on_error, **callbacks)  # fmt: skip
        return google_adk_events(built, "Weather?")

    return source


async def _reports_error(city: str) -> dict[str, Any]:
    """Weather of a city (reported failed the way ADK's own tools do)."""
    return {"error": f"no weather for {city}"}


async def _reports_status(city: str) -> dict[str, Any]:
    """Weather of a city (reported failed the way ADK's documentation shows)."""
    return {"status": "error", "error_message": f"no weather for {city}"}


def _error_dict(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, Any]:
    return {"error": f"weather is down: {type(error).__name__}"}


def _error_result(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, Any]:
    return {"result": f"weather is down: {type(error).__name__}"}


def _refuses(tool: Any, args: Any, tool_context: Any) -> dict[str, Any]:
    """A ``before_tool_callback`` refusing every call, in ADK's error shape."""
    return {"error": "weather is off limits"}


def _caches(tool: Any, args: Any, tool_context: Any) -> dict[str, Any]:
    """A ``before_tool_callback`` answering every call itself (the tool skipped)."""
    return {"result": "sunny (cached)"}


def _redacts(tool: Any, args: Any, tool_context: Any, tool_response: Any) -> dict[str, Any]:
    """An ``after_tool_callback`` replacing every result with ADK's error shape."""
    return {"error": "redacted"}


def _replaces(tool: Any, args: Any, tool_context: Any, tool_response: Any) -> dict[str, Any]:
    """An ``after_tool_callback`` replacing every result."""
    return {"result": "sunny (checked)"}


def _validating(source: Callable[[], AsyncIterator[AgentEvent]]) -> Any:
    """``source`` with ADK's argument validation on (its feature flag, off by default)."""

    async def validating() -> AsyncIterator[AgentEvent]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ADK_ENABLE_FUNCTION_TOOL_ARG_VALIDATION", "1")
            async for event in source():
                yield event

    return validating


def _mcp_like() -> Any:
    """A tool whose result says it failed the way an MCP server's does (``isError``), read by
    its own ADK error hook, as ADK's ``McpTool`` reads it."""
    from google.adk.tools.function_tool import FunctionTool

    class McpLike(FunctionTool):  # type: ignore[misc]
        def _detect_error_in_response(self, response: Any) -> str | None:
            is_error = isinstance(response, dict) and response.get("isError")
            return "MCP_TOOL_ERROR" if is_error else None

    async def lookup(city: str) -> dict[str, Any]:
        """Weather of a city."""
        return {"content": [{"type": "text", "text": f"no weather for {city}"}], "isError": True}

    return McpLike(lookup)


def _adk_made(make: Callable[[], Any], name: str) -> Any:
    """``_adk`` with a tool made when the source runs (ADK imported only then)."""

    def source() -> AsyncIterator[AgentEvent]:
        return _adk(make(), name=name)()

    return source


GOOGLE_ADK = [  # ADK ends the run on a raising tool unless an on_tool_error_callback answers
    Cell("google_adk-async", "google.adk", _adk(raising), "ToolFailure", raises=ToolFailure),
    Cell("google_adk-sync", "google.adk", _adk(raising_sync), "ToolFailure", raises=ToolFailure),
    Cell("google_adk-on_tool_error_callback", "google.adk", _adk(raising, on_error=_error_dict),
         "ToolFailure"),
    Cell("google_adk-on_tool_error_callback_sync", "google.adk",
         _adk(raising_sync, on_error=_error_dict), "ToolFailure"),
    Cell("google_adk-on_tool_error_callback_result", "google.adk",
         _adk(raising, on_error=_error_result), "ToolFailure"),
    Cell("google_adk-error_dict", "google.adk", _adk(_reports_error), "tool_error"),
    Cell("google_adk-status_error", "google.adk", _adk(_reports_status), "tool_error"),
    Cell("google_adk-tools_own_error_hook", "google.adk", _adk_made(_mcp_like, "lookup"),
         "MCP_TOOL_ERROR"),
    Cell("google_adk-before_tool_callback_refuses", "google.adk",
         _adk(weather, before_tool_callback=_refuses), "guardrail_rejected"),
    Cell("google_adk-after_tool_callback_error", "google.adk",
         _adk(weather, after_tool_callback=_redacts), "tool_error"),
    Cell("google_adk-unknown_tool", "google.adk", _adk(weather, name="nowhere"),
         "tool_not_found"),
    Cell("google_adk-unknown_tool_callback", "google.adk",
         _adk(weather, name="nowhere", on_error=_error_dict), "tool_not_found"),
    Cell("google_adk-missing_arguments", "google.adk", _adk(weather, args={"town": 5}),
         "ValidationError"),
    Cell("google_adk-invalid_arguments", "google.adk",
         _validating(_adk(weather, args={"city": [1]})), "ValidationError"),
]  # fmt: skip


# --- CrewAI (its own environment): an Agent on its OpenAI LLM over the SDK's mock transport --


def _crewai(body: Callable[..., Any], name: str | None = None, args: str = '{"city": "Rome"}',
            **agent: Any) -> Any:  # fmt: skip
    def source() -> AsyncIterator[AgentEvent]:
        from crewai import Agent
        from crewai.tools import tool

        from agent_contract.sources.crewai_stream import crewai_events

        from . import _fw_crewai as fc

        def respond(turn: int) -> bytes:
            if turn == 0:
                return fc.completion(0, None, [("c1", name or body.__name__, args)])
            return fc.completion(1, "done", [])

        built = Agent(role="bot", goal="Answer about the weather.", backstory="A forecaster.",
                      llm=fc.llm(respond), tools=[tool(body.__name__)(body)], verbose=False,
                      **agent)  # fmt: skip
        return crewai_events(built, "Weather?")

    return source


def reports_failure(city: str) -> Any:
    """Weather of a city (reported failed the way CrewAI's tools do, with the system's code)."""
    from crewai.tools.tool_failure import ToolFailure as Reported

    return Reported(message=f"no weather for {city}", code="weather_down")


def reports_failure_uncoded(city: str) -> Any:
    """Weather of a city (reported failed, with no code)."""
    from crewai.tools.tool_failure import ToolFailure as Reported

    return Reported(message=f"no weather for {city}")


def weather_sync(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


CREWAI = [  # CrewAI hands every failure back to the model unless its policy is "raise"
    Cell("crewai-sync", "crewai", _crewai(raising_sync), "ToolFailure"),
    Cell("crewai-async", "crewai", _crewai(raising), "ToolFailure"),
    Cell("crewai-tool_failure", "crewai", _crewai(reports_failure), "weather_down"),
    Cell("crewai-tool_failure_uncoded", "crewai", _crewai(reports_failure_uncoded),
         "tool_reported"),
    Cell("crewai-sanitized_name", "crewai", _crewai(raising_sync, name="RaisingSync"),
         "ToolFailure"),
    Cell("crewai-unknown_tool", "crewai", _crewai(weather_sync, name="nowhere"),
         "tool_not_found"),
    Cell("crewai-invalid_arguments", "crewai", _crewai(weather_sync, args='{"town": 5}'),
         "ValidationError"),
    Cell("crewai-policy_raise", "crewai", _crewai(raising_sync, tool_failure_policy="raise"),
         "ToolFailure", raises=Exception),
    Cell("crewai-cancelled", "crewai", _crewai(cancelled), "CancelledError",
         raises=asyncio.CancelledError),
]  # fmt: skip


CELLS = [*AGENTS, *PYDANTIC, *LANGGRAPH, *AGNO, *AUTOGEN, *SMOLAGENTS, *LLAMA_INDEX, *STRANDS,
         *GOOGLE_ADK, *CREWAI]  # fmt: skip


def _failed_calls(telemetry: InMemoryTelemetry) -> list[Any]:
    """The cell's tool spans: one call (two in LangGraph's script, both failing)."""
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]
    assert tools
    return tools


# --- Parallel calls that all raise, with no failure handler ----------------------------------
# Only one exception leaves the run; each call that raised is still marked with its own class
# (the tool bodies' scopes saw them), and a sibling merely cut short would be incomplete only.


class OtherFailure(ValueError):
    """What the second failing call raises: a class of its own."""


PER_CITY = {"Paris": "ToolFailure", "Rome": "OtherFailure"}


async def each_fails(city: str) -> str:
    """Weather of a city (Paris and Rome each fail their own way, at the same turn)."""
    await asyncio.sleep(0)
    raise (ToolFailure if city == "Paris" else OtherFailure)(f"no weather for {city}")


def _two_calls(make: Callable[[str, str], Any]) -> list[Any]:
    return [make("c1", "Paris"), make("c2", "Rome")]


def _agents_parallel() -> AsyncIterator[AgentEvent]:
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    model = scripted(_two_calls(lambda cid, city: function_call("each_fails", {"city": city},
                                                                call_id=cid)),
                     [assistant_message("done")])  # fmt: skip
    tool = function_tool(each_fails, failure_error_function=None)
    return openai_agents_events(Agent(name="bot", tools=[tool], model=model), "Weather?")


def _pydantic_parallel() -> AsyncIterator[AgentEvent]:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        def call(call_id: str, city: str) -> Any:
            return DeltaToolCall("each_fails", json.dumps({"city": city}), tool_call_id=call_id)

        for index, delta in enumerate(_two_calls(call)):
            yield {index: delta}

    agent = Agent(FunctionModel(stream_function=stream, model_name="scripted-model"))
    agent.toolsets[0].add_tool(Tool(each_fails))  # type: ignore[attr-defined]
    return pydantic_ai_events(agent, "Weather?")


def _langgraph_parallel(node_handles: Any) -> Callable[[], AsyncIterator[AgentEvent]]:
    def source() -> AsyncIterator[AgentEvent]:
        from langchain_core.tools import StructuredTool
        from langgraph.prebuilt import ToolNode

        from agent_contract.sources.langgraph_stream import langgraph_events

        from . import _frameworks as fw

        tool = StructuredTool.from_function(coroutine=each_fails, name="weather",
                                            description="Weather of a city.")  # fmt: skip
        tools = [tool] if node_handles is None else ToolNode([tool], handle_tool_errors=False)
        graph = fw.langgraph_graph(tools=tools)  # its script asks for Paris and Rome at once
        return langgraph_events(graph, {"messages": [("user", "Weather?")]})

    return source


async def _hand_written() -> AsyncIterator[AgentEvent]:
    """An agent of the contract running its two calls side by side, each under its scope."""
    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall
    from agent_contract.scope import tool_scope

    async def run(call_id: str, city: str) -> str:
        with tool_scope(call_id, "each_fails"):
            return await each_fails(city)

    yield LLMCallStart(model="scripted-model")
    for call_id, city in _two_calls(lambda cid, city: (cid, city)):
        arguments = json.dumps({"city": city})
        yield ToolCall(id=call_id, function=FunctionCall(name="each_fails", arguments=arguments))
    yield LLMCallEnd(model="scripted-model", finish_reason="tool_calls")
    await asyncio.gather(run("c1", "Paris"), run("c2", "Rome"))


def _adk_parallel() -> AsyncIterator[AgentEvent]:
    from google.adk.agents import LlmAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fg

    calls = _two_calls(lambda cid, city: types.Part(function_call=types.FunctionCall(
        id=cid, name="each_fails", args={"city": city})))  # fmt: skip
    model = fg._model([calls, [types.Part(text="done")]])
    built = LlmAgent(name="bot", model=model, tools=[each_fails], instruction="Be brief.")
    return google_adk_events(built, "Weather?")


PARALLEL = [  # error_type: what the run ends with (the first failure out, or the SDK's own)
    Cell("openai_agents-no_handler", "agents", _agents_parallel, "UserError", raises=Exception),
    Cell("pydantic_ai", "pydantic_ai", _pydantic_parallel, "ToolFailure", raises=ToolFailure),
    Cell("langgraph-node_raises", "langgraph", _langgraph_parallel(False), "Exception",
         raises=Exception),
    Cell("langgraph-default_node", "langgraph", _langgraph_parallel(None), "Exception",
         raises=Exception),
    Cell("hand_written", "agent_contract", _hand_written, "ToolFailure", raises=ToolFailure),
    Cell("google_adk", "google.adk", _adk_parallel, "Exception", raises=Exception),
]  # fmt: skip
"""``Exception``: either call's failure may come out first (LangGraph's tool node gathers
both calls; which raises first is the event loop's order, which a loaded machine changes)."""


@pytest.mark.parametrize("cell", [cell.param() for cell in PARALLEL])
async def test_parallel_calls_that_all_raise_each_fail_with_their_own_class(
    cell: Cell, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip(cell.package)
    assert cell.raises is not None
    with pytest.raises(cell.raises):
        await run_script(otel_telemetry, cell.source(), agent_name="agent")

    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool ")]
    assert len(tools) == 2
    kinds = sorted(str((s.attributes or {}).get("error.type")) for s in tools)
    assert kinds == sorted(PER_CITY.values())  # each its own class, neither the run's
    for span in tools:
        assert span.status.status_code is StatusCode.ERROR
    points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert sorted(str((p.attributes or {}).get("error.type")) for p in points) == kinds
    run = otel_telemetry.span("invoke_agent agent")
    assert run.status.status_code is StatusCode.ERROR
    ended = (run.attributes or {})["error.type"]
    assert ended == cell.error_type or (cell.error_type == "Exception" and ended in kinds)
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("cell", [cell.param() for cell in CELLS])
async def test_a_failed_tool_is_marked_and_nothing_else_is(
    cell: Cell, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip(cell.package)
    events: list[AgentEvent] = []
    if cell.raises is None:
        events = await run_script(otel_telemetry, cell.source(), agent_name="agent")
    else:
        with pytest.raises(cell.raises):
            await run_script(otel_telemetry, cell.source(), agent_name="agent")

    spans = _failed_calls(otel_telemetry)
    if cell.raises is not None:  # a sibling that finished, or was still running: not failed
        unknown = [s for s in spans if s.status.status_code is not StatusCode.ERROR]
        assert all("error.type" not in (s.attributes or {}) for s in unknown)
        spans = [s for s in spans if s not in unknown]
        assert spans
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == cell.error_type
        thrown = [e for e in span.events if e.name == "exception"]  # raised or reported: one
        assert len(thrown) == 1, span.events  # (a raised one's type is module-qualified)
        assert str((thrown[0].attributes or {})["exception.type"]).split(".")[-1] == cell.error_type
    points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    kinds = [(p.attributes or {}).get("error.type") for p in points]
    assert cell.error_type in kinds and sum(p.count for p in points) >= len(spans)
    run = otel_telemetry.span("invoke_agent agent")
    if cell.raises is None:
        for span in spans:
            assert (span.attributes or {})["agent_otel.tool.is_error"] is True
        stopped = ("invoke_agent agent", "step 0") if cell.cancels else ()
        for other in otel_telemetry.spans():
            if other not in spans and other.name not in stopped:
                assert other.status.status_code is not StatusCode.ERROR, other.name
        ended = "cancelled" if cell.cancels else "exhausted"
        assert (run.attributes or {})["agent_otel.end_reason"] == ended
        results = [e for e in events if isinstance(e, ToolResult)]
        assert [r.is_error for r in results] == [True] * len(spans)
        if cell.text is not None:  # what the model is told is the framework's, unchanged
            assert results[0].content == cell.text
    else:
        assert run.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


# --- A tool raising CancelledError where the framework then waits forever --------------------
# LlamaIndex's workflow and AutoGen's run_stream never end when a tool body raises
# CancelledError (the framework alone, untraced, hangs the same way). The caller's own time
# limit is the only way out: it must still end every span, the call's marked, and leave none
# of the framework's tasks behind.


def _llama_index_cancelled() -> AsyncIterator[AgentEvent]:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    call = ToolCallBlock(tool_call_id="c1", tool_name="cancelled", tool_kwargs=ARGS)
    built = FunctionAgent(name="bot", tools=[cancelled], llm=fl.replies(call, "done"),
                          streaming=True)  # fmt: skip
    return llama_index_events(built, "Weather?")


HANGING = [
    pytest.param("llama_index.core", _llama_index_cancelled, id="llama_index"),
    pytest.param("autogen_agentchat", _autogen(cancelled), id="autogen"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("package", "source"), HANGING)
async def test_a_caller_time_limit_ends_a_run_its_framework_hangs_on_a_cancelled_tool(
    package: str,
    source: Callable[[], AsyncIterator[AgentEvent]],
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip(package)
    called = asyncio.Event()

    async def noting() -> AsyncIterator[AgentEvent]:
        async for event in source():
            if type(event).__name__ == "ToolCall":
                called.set()
            yield event

    run = asyncio.ensure_future(run_script(otel_telemetry, noting(), agent_name="agent"))
    await asyncio.wait_for(called.wait(), 20)
    await asyncio.sleep(0.3)  # the body raised; the framework now waits forever
    assert not run.done()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert otel_telemetry.open_spans() == []
    assert otel_telemetry.span("invoke_agent agent").status.status_code is StatusCode.ERROR
    (call,) = _failed_calls(otel_telemetry)
    assert (call.attributes or {})["gen_ai.tool.call.id"] == "c1"
    assert call.status.status_code is StatusCode.ERROR
    await asyncio.sleep(0.3)  # the framework's run, cancelled in the background, ends
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert left == []


@pytest.mark.timeout(30)
@pytest.mark.skipif(sys.version_info < (3, 11), reason="a task tells its cancel from 3.11 on")
async def test_tool_bodies_raising_cancelled_error_fail_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Both LangGraph calls' bodies raise CancelledError themselves (what they awaited was
    cancelled under them; their tasks were not): each call failed, not merely cut short."""
    pytest.importorskip("langgraph")
    source = _langgraph(False, True, exception=asyncio.CancelledError)
    with pytest.raises(Exception) as raised:  # LangGraph's NodeCancelledError
        await run_script(otel_telemetry, source(), agent_name="agent")

    calls = _failed_calls(otel_telemetry)
    assert len(calls) == 2
    kinds = {"CancelledError", type(raised.value).__name__}  # the run's: the one it names
    for call in calls:
        assert call.status.status_code is StatusCode.ERROR
        assert (call.attributes or {})["error.type"] in kinds
    assert "CancelledError" in {(c.attributes or {})["error.type"] for c in calls}
    assert otel_telemetry.open_spans() == []


@pytest.mark.timeout(30)
async def test_a_smolagents_tool_raising_past_the_framework_is_no_success(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A sync tool raising CancelledError (a BaseException smolagents does not catch): the run
    raises it, the same object, and its call fails with it; no result is made up for it."""
    pytest.importorskip("smolagents")
    events: list[AgentEvent] = []

    async def kept() -> AsyncIterator[AgentEvent]:
        async for event in _smolagents(exception=asyncio.CancelledError)():
            events.append(event)
            yield event

    with pytest.raises(asyncio.CancelledError, match="no weather for Rome"):
        await run_script(otel_telemetry, kept(), agent_name="agent")

    assert not [e for e in events if isinstance(e, ToolResult)]
    (call,) = _failed_calls(otel_telemetry)
    assert call.status.status_code is StatusCode.ERROR
    assert (call.attributes or {})["error.type"] == "CancelledError"
    assert otel_telemetry.open_spans() == []


# --- Google ADK pausing a run: a tool asking for confirmation, a long-running tool ----------
# ADK answers a call that needs confirmation with its gate's own text and a call of its own
# (``adk_request_confirmation``), and leaves a long-running call unanswered: the run pauses.
# Neither is a failure nor a model call: the run ends interrupted, the call cut short; a
# resumption the user rejected fails the call ``approval_rejected``.


async def _adk_paused(telemetry: InMemoryTelemetry, tool: Any, **call: Any) -> Any:
    """Run a one-call script on ``tool`` (ADK's ``FunctionTool`` or a subclass) on a runner
    of its own; the runner, the session id and the events yielded."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fg

    asked = types.FunctionCall(id="c1", name=tool.name, args=call or ARGS)
    model = fg._model([[types.Part(function_call=asked)], [types.Part(text="done")]])
    agent = LlmAgent(name="bot", model=model, tools=[tool], instruction="Be brief.")
    runner = InMemoryRunner(agent=agent, app_name="bot")
    session = await runner.session_service.create_session(app_name="bot", user_id="user")
    source = google_adk_events(runner, "Weather?", session_id=session.id)
    return runner, session.id, await run_script(telemetry, source, agent_name="agent")


def _paused_run(telemetry: InMemoryTelemetry, tool: str) -> None:
    """The run ended interrupted (not in error), no span for ADK's own call, ``tool`` cut
    short, not failed; nothing left open."""
    names = sorted(s.name for s in telemetry.spans())
    assert names == ["chat scripted-gemini", f"execute_tool {tool}", "invoke_agent agent",
                     "step 0"]  # fmt: skip
    run = telemetry.span("invoke_agent agent")
    assert (run.attributes or {})["agent_otel.end_reason"] == "interrupted"
    assert run.status.status_code is StatusCode.UNSET
    call = telemetry.span(f"execute_tool {tool}")
    assert call.status.status_code is StatusCode.UNSET
    assert "error.type" not in (call.attributes or {})
    assert (call.attributes or {})["agent_otel.incomplete"] is True
    assert telemetry.open_spans() == []


@pytest.mark.timeout(30)
async def test_google_adk_a_call_awaiting_confirmation_pauses_the_run_and_fails_nothing(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("google.adk")
    from google.adk.tools import FunctionTool

    from agent_contract.agent.events import InterruptFinal

    tool = FunctionTool(weather, require_confirmation=True)
    _, _, events = await _adk_paused(otel_telemetry, tool)

    _paused_run(otel_telemetry, "weather")
    assert not [e for e in events if isinstance(e, ToolResult)]
    (pause,) = [e for e in events if isinstance(e, InterruptFinal)]
    assert pause.reason == "tool_confirmation"
    assert pause.payload["originalFunctionCall"]["id"] == "c1"


@pytest.mark.timeout(30)
async def test_google_adk_a_long_running_call_left_unanswered_pauses_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("google.adk")
    from google.adk.tools import LongRunningFunctionTool

    from agent_contract.agent.events import InterruptFinal

    def ticket(city: str) -> None:
        """Weather of a city, answered later."""

    _, _, events = await _adk_paused(otel_telemetry, LongRunningFunctionTool(ticket))

    _paused_run(otel_telemetry, "ticket")
    (pause,) = [e for e in events if isinstance(e, InterruptFinal)]
    assert (pause.interrupt_id, pause.reason) == ("c1", "long_running_tool")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("confirmed", [False, True], ids=["rejected", "approved"])
async def test_google_adk_a_resumed_confirmation_rejected_fails_its_call_approval_rejected(
    confirmed: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip("google.adk")
    from google.adk.tools import FunctionTool
    from google.genai import types

    from agent_contract.agent.events import InterruptFinal
    from agent_contract.sources.google_adk_stream import google_adk_events

    tool = FunctionTool(weather, require_confirmation=True)
    runner, session, events = await _adk_paused(otel_telemetry, tool)
    otel_telemetry.clear()  # the paused run's spans; the resumed run's alone below
    (pause,) = [e for e in events if isinstance(e, InterruptFinal)]
    answer = types.FunctionResponse(id=pause.interrupt_id, name="adk_request_confirmation",
                                    response={"confirmed": confirmed})  # fmt: skip
    message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    source = google_adk_events(runner, message, session_id=session)
    events = await run_script(otel_telemetry, source, agent_name="agent")
    resumed = otel_telemetry

    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.tool_call_id, result.is_error) == ("c1", not confirmed), result.content
    call = resumed.span("execute_tool weather")
    if confirmed:
        assert call.status.status_code is StatusCode.UNSET
    else:
        assert call.status.status_code is StatusCode.ERROR
        assert (call.attributes or {})["error.type"] == "approval_rejected"
    run = resumed.span("invoke_agent agent")
    assert run.status.status_code is StatusCode.UNSET
    assert resumed.open_spans() == []


# --- Strands pausing a run: an interrupt raised by a hook or by a tool body ------------------


def _asks_first(event: Any) -> None:
    """A ``BeforeToolCallEvent`` hook asking a human before the call runs."""
    event.interrupt("approve", reason={"tool": event.tool_use["name"]})


def _asking_tool() -> Any:
    from strands import tool

    @tool(context=True)  # (its context found by name: this module's annotations are strings)
    def asking(city: str, tool_context: Any) -> str:
        """Weather of a city, once a human said yes."""
        tool_context.interrupt("approve", reason={"city": city})
        return f"sunny in {city}"

    return asking


@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", ["hook", "tool"])
async def test_strands_an_interrupt_ends_the_run_interrupted_and_fails_nothing(
    where: str, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip("strands")
    from agent_contract.agent.events import InterruptFinal
    from agent_contract.sources.strands_stream import strands_events

    from . import _fw_strands as fs

    if where == "hook":
        source = _strands(weather, before=_asks_first)()
        tool, payload = "weather", {"tool": "weather"}
    else:
        use = {"toolUse": {"toolUseId": "c1", "name": "asking"}}
        first = [{"messageStart": {"role": "assistant"}}, {"contentBlockStart": {"start": use}},
                 {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city": "Rome"}'}}}},
                 {"contentBlockStop": {}}, {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
        from strands import Agent

        built = Agent(model=fs._model([first]), tools=[_asking_tool()], name="bot",
                      callback_handler=None)  # fmt: skip
        source = strands_events(built, "Weather?")
        tool, payload = "asking", {"city": "Rome"}
    events = await run_script(otel_telemetry, source, agent_name="agent")

    (pause,) = [e for e in events if isinstance(e, InterruptFinal)]
    assert (pause.reason, pause.payload) == ("approve", payload)
    assert pause.interrupt_id
    run = otel_telemetry.span("invoke_agent agent")
    assert (run.attributes or {})["agent_otel.end_reason"] == "interrupted"
    assert run.status.status_code is StatusCode.UNSET
    call = otel_telemetry.span(f"execute_tool {tool}")
    assert call.status.status_code is StatusCode.UNSET
    assert (call.attributes or {})["agent_otel.incomplete"] is True
    assert otel_telemetry.open_spans() == []


def _stopping_tool() -> Any:
    from strands import tool

    @tool(context=True)
    def stopping(city: str, tool_context: Any) -> str:
        """Weather of a city (stopping the agent as it answers)."""
        tool_context.agent.cancel()
        return f"sunny in {city}"

    return stopping


@pytest.mark.timeout(30)
async def test_strands_agent_cancel_in_a_tool_cancels_the_calls_after_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("strands")
    events = await run_script(otel_telemetry, _strands(_stopping_tool(), calls=2,
                              sequential=True)(), agent_name="agent")  # fmt: skip

    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("c1", False), ("c2", True)]
    first, second = sorted(otel_telemetry.by_name()["execute_tool stopping"],
                           key=lambda s: s.start_time or 0)  # fmt: skip
    assert first.status.status_code is StatusCode.UNSET  # it ran and answered
    assert second.status.status_code is StatusCode.ERROR
    assert (second.attributes or {})["error.type"] == "CancelledError"
    assert otel_telemetry.open_spans() == []


# --- A run paused for approval in the Agents SDK, pydantic-ai and Agno ----------------------
# Each ends the stream on the calls waiting for a human (the Agents SDK's ``interruptions``,
# pydantic-ai's ``DeferredToolRequests`` output, Agno's ``RunPaused``) without raising: the run
# ends interrupted, not exhausted, one interrupt per call, and the call is cut short, not failed.


def _agents_approval() -> AsyncIterator[AgentEvent]:
    from agents import function_tool

    return _agents(function_tool(weather, needs_approval=True))


def _pydantic_deferred(how: str) -> Callable[[], AsyncIterator[AgentEvent]]:
    def source() -> AsyncIterator[AgentEvent]:
        from pydantic_ai import Agent, ApprovalRequired, CallDeferred, DeferredToolRequests, Tool
        from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

        from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

        async def deferring(city: str) -> str:
            """Weather of a city, answered elsewhere."""
            raise CallDeferred() if how == "external" else ApprovalRequired()

        async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
            yield {0: DeltaToolCall("weather", '{"city": "Rome"}', tool_call_id="c1")}

        tool = Tool(weather, requires_approval=True) if how == "approval" else Tool(
            deferring, name="weather")  # fmt: skip
        model = FunctionModel(stream_function=stream, model_name="scripted-model")
        agent = Agent(model, tools=[tool], output_type=[str, DeferredToolRequests])
        return pydantic_ai_events(agent, "Weather?")

    return source


def _agno_paused(**flags: Any) -> Callable[[], AsyncIterator[AgentEvent]]:
    def source() -> AsyncIterator[AgentEvent]:
        from agno.tools import tool

        return _agno(tool(name="weather", **flags)(weather), name="weather")()

    return source


PAUSED = [
    pytest.param("agents", _agents_approval, "approval", id="agents-needs_approval"),
    pytest.param("pydantic_ai", _pydantic_deferred("approval"), "approval",
                 id="pydantic_ai-requires_approval"),
    pytest.param("pydantic_ai", _pydantic_deferred("raised"), "approval",
                 id="pydantic_ai-ApprovalRequired"),
    pytest.param("pydantic_ai", _pydantic_deferred("external"), "external",
                 id="pydantic_ai-CallDeferred"),
    pytest.param("agno", _agno_paused(requires_confirmation=True), "confirmation",
                 id="agno-requires_confirmation"),
    pytest.param("agno", _agno_paused(external_execution=True), "external_execution",
                 id="agno-external_execution"),
]  # fmt: skip


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("package", "source", "reason"), PAUSED)
async def test_a_run_paused_for_approval_ends_interrupted_its_call_cut_short(
    package: str,
    source: Callable[[], AsyncIterator[AgentEvent]],
    reason: str,
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip(package)
    from agent_contract.agent.events import InterruptFinal

    events = await run_script(otel_telemetry, source(), agent_name="agent")

    (pause,) = [e for e in events if isinstance(e, InterruptFinal)]
    assert (pause.interrupt_id, pause.reason) == ("c1", reason)
    assert pause.payload["tool"] == "weather"
    run = otel_telemetry.span("invoke_agent agent")
    assert (run.attributes or {})["agent_otel.end_reason"] == "interrupted"
    assert run.status.status_code is StatusCode.UNSET
    told = [e for e in run.events if e.name != "agent_otel.phase"]  # (the Agents SDK's agent)
    assert [(e.name, dict(e.attributes or {})) for e in told] == [
        ("agent_otel.interrupt", {"agent_otel.interrupt.id": "c1",
                                  "agent_otel.interrupt.reason": reason}),
    ]  # fmt: skip
    call = otel_telemetry.span("execute_tool weather")  # told once, in the step that asked
    assert call.status.status_code is StatusCode.UNSET
    assert "error.type" not in (call.attributes or {})
    assert (call.attributes or {})["agent_otel.incomplete"] is True
    assert sorted(s.name for s in otel_telemetry.spans() if not s.name.startswith("chat")) == [
        "execute_tool weather", "invoke_agent agent", "step 0"]  # fmt: skip
    assert otel_telemetry.open_spans() == []


# --- A run its framework's own cancel stopped ------------------------------------------------
# The framework ends its stream without raising; the run ends cancelled, as a cancelled task
# does (ERROR, error.type CancelledError), and the same in every adapter that can tell it.


def agno_stopping(city: str, run_context: Any) -> str:
    """Weather of a city (stopping its run as it answers: ``Agent.cancel_run``)."""
    from agno.agent import Agent

    Agent.cancel_run(run_context.run_id)
    return f"sunny in {city}"


def _smolagents_interrupted() -> AsyncIterator[AgentEvent]:
    """A ToolCallingAgent whose tool calls ``agent.interrupt()`` as it answers."""
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as fs

    @tool
    def weather(city: str) -> str:
        """Weather of a city (stopping the agent as it answers).

        Args:
            city: the city.
        """
        built.interrupt()
        return f"sunny in {city}"

    def respond(messages: list[dict[str, Any]]) -> Any:
        return fs.completion(0, None, [("c1", "weather", '{"city": "Rome"}')])

    model = OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=fs.client(respond), retry=False)  # fmt: skip
    built = ToolCallingAgent(tools=[weather], model=model, verbosity_level=0)
    return smolagents_events(built, "Weather?")


def _llama_index_cancelled() -> AsyncIterator[AgentEvent]:
    """A FunctionAgent whose tool has the run cancelled (the handler's ``cancel_run()``, from
    a task of the application's, as a stop button's handler would) while it runs."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    handlers: list[Any] = []
    stopping: list[asyncio.Future[Any]] = []

    async def weather(city: str) -> str:
        """Weather of a city (its run cancelled meanwhile)."""
        stopping.append(asyncio.ensure_future(handlers[0].cancel_run()))
        await asyncio.sleep(5)  # cancelled with the run
        return f"sunny in {city}"

    call = ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Rome"})
    built = FunctionAgent(name="bot", tools=[weather], llm=fl.replies(call, "done"))
    return llama_index_events(built, "Weather?", on_handler=handlers.append)


def _agents_cancelled(mode: str) -> Callable[[], AsyncIterator[AgentEvent]]:
    """An Agents SDK run whose tool has the application cancel it (``result.cancel(mode)``,
    the result ``on_result`` handed it) while it runs."""

    def source() -> AsyncIterator[AgentEvent]:
        from agents import Agent, function_tool
        from agents.testing import assistant_message, function_call

        from agent_contract.sources.openai_agents import openai_agents_events

        from ._fw_openai_agents import scripted

        results: list[Any] = []

        async def weather(city: str) -> str:
            """Weather of a city (its run cancelled meanwhile)."""
            results[0].cancel(mode=mode)
            await asyncio.sleep(0.05)
            return f"sunny in {city}"

        model = scripted([function_call("weather", ARGS, call_id="c1")],
                         [assistant_message("done")])  # fmt: skip
        built = Agent(name="bot", tools=[function_tool(weather)], model=model)
        return openai_agents_events(built, "Weather?", on_result=results.append)

    return source


FRAMEWORK_CANCELS = [
    pytest.param("strands", lambda: _strands(_stopping_tool(), calls=2, sequential=True)(),
                 None, id="strands-agent_cancel_in_tool"),
    pytest.param("strands", _strands(weather, batch=_cancel_agent, calls=2), None,
                 id="strands-agent_cancel_in_hook"),
    pytest.param("agno", _agno(agno_stopping), None, id="agno-cancel_run_in_tool"),
    pytest.param("smolagents", _smolagents_interrupted, "AgentError",
                 id="smolagents-interrupt_in_tool"),
    pytest.param("llama_index.core", _llama_index_cancelled, "WorkflowCancelledByUser",
                 id="llama_index-cancel_run"),
    pytest.param("agents", _agents_cancelled("immediate"), None,
                 id="openai_agents-cancel_immediate"),
    pytest.param("agents", _agents_cancelled("after_turn"), None,
                 id="openai_agents-cancel_after_turn"),
]  # fmt: skip


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("package", "source", "raised"), FRAMEWORK_CANCELS)
async def test_a_run_its_framework_cancelled_ends_cancelled(
    package: str,
    source: Callable[[], AsyncIterator[AgentEvent]],
    raised: str | None,
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The framework ends its stream (or raises its own exception for the cancel, the same
    object out): the run ends ``cancelled``, ERROR, ``error.type`` ``CancelledError`` (or the
    class the framework raised)."""
    pytest.importorskip(package)
    from agent_contract.events import Error

    kept: list[Any] = []
    agent_events = source()

    async def kept_events() -> AsyncIterator[AgentEvent]:
        async for event in agent_events:
            kept.append(event)
            yield event

    if raised is None:
        await run_script(otel_telemetry, kept_events(), agent_name="agent")
    else:
        with pytest.raises(Exception) as caught:  # a class of the framework's
            await run_script(otel_telemetry, kept_events(), agent_name="agent")
        assert type(caught.value).__name__ == raised

    (told,) = [e for e in kept if isinstance(e, Error)]
    assert (told.error_type, told.fatal) == ("CancelledError", True)
    run = otel_telemetry.span("invoke_agent agent")
    attributes = run.attributes or {}
    assert attributes["agent_otel.end_reason"] == "cancelled"
    assert attributes["error.type"] == (raised or "CancelledError")
    assert run.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


# --- A tool body raising CancelledError where the framework drops the call and goes on -------
# Strands' tool task ends with no result and no AfterToolCallEvent; ADK tells its error
# callbacks and answers nothing. The run goes on (the model is asked again) or ends as if the
# call were unanswered: the call itself still failed with what its body raised.

DROPPING = [
    pytest.param("strands", _strands(cancelled), id="strands"),
    pytest.param("google.adk", _adk(cancelled), id="google_adk"),
    pytest.param("google.adk", _adk(cancelled, on_error=_error_dict), id="google_adk-callback"),
]


@pytest.mark.timeout(30)
@pytest.mark.skipif(sys.version_info < (3, 11), reason="a task tells its cancel from 3.11 on")
@pytest.mark.parametrize(("package", "source"), DROPPING)
async def test_a_call_the_framework_drops_after_its_body_raised_cancelled_error_fails(
    package: str,
    source: Callable[[], AsyncIterator[AgentEvent]],
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip(package)
    events = await run_script(otel_telemetry, source(), agent_name="agent")

    assert not [e for e in events if isinstance(e, ToolResult)]  # the framework told none
    (call,) = _failed_calls(otel_telemetry)
    assert call.status.status_code is StatusCode.ERROR
    assert (call.attributes or {})["error.type"] == "CancelledError"
    thrown = [e for e in call.events if e.name == "exception"]
    assert len(thrown) == 1
    run = otel_telemetry.span("invoke_agent agent")
    assert run.status.status_code is not StatusCode.ERROR  # the framework went on
    assert otel_telemetry.open_spans() == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("callbacks", "content"),
    [({"before_tool_callback": _caches}, {"result": "sunny (cached)"}),
     ({"after_tool_callback": _replaces}, {"result": "sunny (checked)"})],
    ids=["google_adk-before_tool_callback_answers", "google_adk-after_tool_callback_replaces"],
)  # fmt: skip
async def test_a_result_an_adk_callback_gives_is_the_calls_result_and_no_failure(
    callbacks: dict[str, Any], content: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip("google.adk")
    events = await run_script(otel_telemetry, _adk(weather, **callbacks)(), agent_name="agent")

    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.content, result.is_error) == (content, False)
    for span in otel_telemetry.spans():
        assert span.status.status_code is not StatusCode.ERROR, span.name
        assert "agent_otel.incomplete" not in (span.attributes or {}), span.name
    assert otel_telemetry.open_spans() == []

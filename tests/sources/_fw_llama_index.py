"""LlamaIndex's conformance builder: a ``FunctionAgent`` on LlamaIndex's own mock LLM.

LlamaIndex reports usage only in the provider's payload (``raw``). Its provider packages pin
SDK majors that cannot install beside ``dev`` (``llama-index-llms-openai`` needs openai < 3;
``llama-index-llms-anthropic`` 0.12 fails on anthropic 2.x's ``MessageParam``), so the row
runs ``MockFunctionCallingLLM`` streaming the script, each chunk carrying as ``raw`` a real
OpenAI SDK ``ChatCompletionChunk`` (the payload ``llama-index-llms-openai`` passes on), the
last one with usage (cache and reasoning tokens). ``fail`` raises ``Overloaded`` after turn
1's first words; ``hang`` makes ``weather`` never return.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.llama_index_stream import llama_index_events
from agent_otel.testing import run_script

from . import _parallel as p
from . import _script as s

MODEL = "gpt-4o-mini"


def chunk(turn: int, **delta: Any) -> Any:
    """An OpenAI ``ChatCompletionChunk``: a delta, or (no ``delta``) the usage chunk."""
    from openai.types.chat import ChatCompletionChunk

    head = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": 0,
            "model": f"{MODEL}-2024-07-18"}  # fmt: skip
    if not delta:
        used = s.TURNS[turn]
        usage = {"prompt_tokens": used.input, "completion_tokens": used.output,
                 "total_tokens": used.total,
                 "prompt_tokens_details": {"cached_tokens": used.cache_read},
                 "completion_tokens_details": {"reasoning_tokens": used.reasoning}}  # fmt: skip
        return ChatCompletionChunk.model_validate({**head, "choices": [], "usage": usage})
    finish = delta.pop("finish_reason", None)
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return ChatCompletionChunk.model_validate({**head, "choices": [choice]})


def _mock_llm(model: str, answer: Callable[[int], AsyncIterator[Any]]) -> Any:
    """LlamaIndex's mock function-calling LLM, its metadata naming ``model``: each call
    streams ``answer(turn)``, the calls counted from 0; a whole call (``achat``) answers with
    the stream's last response."""
    from llama_index.core.base.llms.types import LLMMetadata
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    class Scripted(MockFunctionCallingLLM):
        turns: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_function_calling_model=True, model_name=model)

        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            self.turns += 1
            return answer(self.turns - 1)

        async def achat(self, messages: Any, **kwargs: Any) -> Any:
            said = [said async for said in await self.astream_chat(messages, **kwargs)]
            return said[-1]

    return Scripted()


def llm(run: s.Run) -> Any:
    """The script streamed with raw payloads (OpenAI chunks)."""
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ToolCallBlock

    async def stream(called: int) -> AsyncIterator[Any]:
        turn = min(called, len(s.TURNS) - 1)
        if run.refuse and turn == 1:
            raise s.Overloaded("rate limited")  # before the first chunk
        text, blocks = "", []
        if turn == 0:
            thinking = {"thinking_delta": s.REASONING}
            yield ChatResponse(message=ChatMessage(role="assistant", content=""),
                               delta="", raw=chunk(0, role="assistant"),
                               additional_kwargs=thinking)  # fmt: skip
        for i, word in enumerate(s.WORDS if turn == 0 else s.ANSWER):
            if run.fail and turn == 0 and i == 1:
                raise s.Overloaded("overloaded")
            text += word
            yield ChatResponse(message=ChatMessage(role="assistant", content=text),
                               delta=word, raw=chunk(turn, content=word))  # fmt: skip
        if turn == 0:
            blocks = [ToolCallBlock(tool_call_id=c.id, tool_name=c.name,
                                    tool_kwargs=c.arguments) for c in s.CALLS]  # fmt: skip
        message = ChatMessage(role="assistant", content=text)
        message.blocks.extend(blocks)
        reason = "tool_calls" if blocks else "stop"
        yield ChatResponse(message=message, delta="", raw=chunk(turn, finish_reason=reason))
        yield ChatResponse(message=message, delta="", raw=chunk(turn))  # usage

    return _mock_llm(MODEL, stream)


def agent(run: s.Run, name: str = "weatherbot") -> Any:
    from llama_index.core.agent.workflow import FunctionAgent

    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        return s.forecast_sync(city)

    tools = [s.weather_tool(hang=run.hang), forecast]
    return FunctionAgent(name=name, tools=tools, llm=llm(run), streaming=True)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return llama_index_events(agent(run), s.QUESTION, sink=run.kept.append)


def replies(*answers: Any, model: str = MODEL) -> Any:
    """LlamaIndex's mock function-calling LLM answering ``answers`` in turn (the last again),
    one message each: a text, a tool-call block, or a list of blocks (parallel calls); its
    metadata names ``model``. Streamed (``astream_chat``), or whole (``achat``: an agent made
    with ``streaming=False``)."""
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse

    async def stream(called: int) -> AsyncIterator[Any]:
        reply = answers[min(called, len(answers) - 1)]
        text = reply if isinstance(reply, str) else ""
        message = ChatMessage(role="assistant", content=text)
        if not isinstance(reply, str):
            message.blocks.extend(reply if isinstance(reply, list) else [reply])
        yield ChatResponse(message=message, delta=text)

    return _mock_llm(model, stream)


async def subagent(telemetry: Any) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    expert = FunctionAgent(name="expert", tools=[], llm=replies("sunny"))
    ask = ToolCallBlock(tool_call_id="call_e", tool_name="ask_expert", tool_kwargs={"q": "Paris?"})

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        inner = llama_index_events(expert, q, on_handler=kept.append)
        await run_script(telemetry, inner, agent_name="expert")
        return str(await kept[0])

    lead = FunctionAgent(name="lead", tools=[ask_expert],
                         llm=replies(ask, "The expert says: sunny."))  # fmt: skip
    await run_script(telemetry, llama_index_events(lead, s.QUESTION), agent_name="lead")


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``) on LlamaIndex's mock function-calling LLM;
    ``mul`` sync."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    calls = [ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs={"x": arg})
             for cid, name, arg in p.CALLS]  # fmt: skip
    llm = replies(calls, "done")
    built = FunctionAgent(name=p.AGENT, tools=p.tools(tracer), llm=llm, streaming=True)
    return llama_index_events(built, "go")


async def three_levels(telemetry: Any, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): LlamaIndex runs no agent as a tool of its own;
    each tool streams the agent through the adapter and its own ``otel_wrapper``. The mock
    LLM streams raw OpenAI chunks with ``s.TURNS`` usage."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ToolCallBlock

    from . import _deep as d

    def level(name: str, tool: str, args: dict[str, Any], tools: list[Any]) -> Any:
        ask = ToolCallBlock(tool_call_id=d.CALL_IDS[name], tool_name=tool, tool_kwargs=args)

        async def stream(called: int) -> AsyncIterator[Any]:
            turn = min(called, 1)
            text = d.ANSWERS[name] if turn else ""
            message = ChatMessage(role="assistant", content=text)
            if not turn:
                message.blocks.append(ask)
            yield ChatResponse(message=message, delta=text,
                               raw=chunk(turn, content=text))  # fmt: skip
            yield ChatResponse(message=message, delta="", raw=chunk(turn))  # usage

        return FunctionAgent(name=name, tools=tools, llm=_mock_llm(MODEL, stream), streaming=True)

    async def delegate(agent: Any, q: str) -> str:
        kept: list[Any] = []
        events = llama_index_events(agent, q, on_handler=kept.append)
        await run_script(telemetry, events, agent_name=agent.name)
        return str(await kept[0])

    clerk = level("clerk", "lookup", {"term": "Paris"}, [d.lookup(tracer)])

    async def ask_clerk(q: str) -> str:
        """Ask the clerk."""
        return await delegate(clerk, q)

    expert = level("expert", "ask_clerk", {"q": "Paris?"}, [ask_clerk])

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        return await delegate(expert, q)

    lead = level("lead", "ask_expert", {"q": "Paris?"}, [ask_expert])
    await run_script(telemetry, llama_index_events(lead, d.QUESTION), agent_name="lead")
    return "ask_expert", "ask_clerk"

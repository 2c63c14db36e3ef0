"""A LlamaIndex ``Workflow`` of one's own whose steps call their LLM themselves.

Such a step (``llm.achat``, ``astream_chat``, ``apredict``) writes nothing into the run's event
stream, and inside the run the provider instrumentations stand down, so each call was in no
span and its tokens in no count: the run was an ``invoke_agent`` span alone. LlamaIndex's
instrumentation dispatcher tells each call; each is now a chat span in a step of the run (a
workflow step's calls one step), its tokens from the provider's payload on it and the run,
once also beside a provider instrumentation; a call that raised fails its span with its class.
The LLM is ``llama-index-llms-openai``'s, its OpenAI SDK client over the SDK's mock transport
(the ``llama-index`` environment, ``.ci/separate-envs``), or LlamaIndex's mock LLMs.
"""

from __future__ import annotations

import asyncio
import itertools
from contextlib import nullcontext
from typing import Any

import pytest

from agent_otel.testing import FakeClock, InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._conformance import OPENAI_SDK, Provider
from ._http import httpx, transport
from ._trace import OURS, input_tokens_counted

pytest.importorskip("llama_index.core")

CHAT = "chat gpt-4o-mini"


def _flow(*bodies: Any) -> Any:
    """A workflow of two steps on an OpenAI LLM answering ``bodies`` in turn: ``ask`` calls
    ``achat``, ``reflect`` streams ``astream_chat`` and then asks ``apredict``."""
    from llama_index.core.llms import ChatMessage
    from llama_index.core.prompts import PromptTemplate
    from llama_index.core.workflow import Event, StartEvent, StopEvent, Workflow, step

    OpenAI = pytest.importorskip("llama_index.llms.openai").OpenAI
    llm = OpenAI(model="gpt-4o-mini", api_key="test", api_base="http://mock.invalid/v1",
                 max_retries=0, async_http_client=transport(*bodies))  # fmt: skip

    class Asked(Event):
        answer: str

    class Flow(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> Asked:
            said = await llm.achat([ChatMessage(role="user", content=ev.user_msg)])
            return Asked(answer=str(said.message.content))

        @step
        async def reflect(self, ev: Asked) -> StopEvent:
            streamed = await llm.astream_chat([ChatMessage(role="user", content=ev.answer)])
            last = [chunk async for chunk in streamed][-1]
            more = await llm.apredict(PromptTemplate("Again: {text}"), text=last.message.content)
            return StopEvent(result=more)

    return Flow(timeout=10)


@pytest.mark.parametrize("provider", [None, *OPENAI_SDK], ids=lambda p: getattr(p, "name", "none"))
async def test_a_workflows_own_model_calls_are_chat_spans_in_its_steps(
    provider: Provider | None, otel_telemetry: InMemoryTelemetry
) -> None:
    """Three calls in two workflow steps: ``step 0`` holds ``ask``'s, ``step 1``
    ``reflect``'s two; each has its turn's tokens, the run their sum, counted once beside a
    provider instrumentation (which makes no span of them)."""
    from llama_index.core.workflow import Workflow

    from agent_contract.sources.llama_index_stream import llama_index_events

    first, second = s.TURNS
    bodies = (chat.completion(0, "cloudy", []), chat.answer("still cloudy"),
              chat.completion(1, "cloudy again", []))  # fmt: skip
    flow = _flow(*bodies)
    assert isinstance(flow, Workflow)
    handlers: list[Any] = []
    with provider.instrumented(otel_telemetry) if provider else nullcontext():
        await run_script(otel_telemetry, llama_index_events(flow, "sky?",
                         on_handler=handlers.append), agent_name="flow")  # fmt: skip

    assert await handlers[0] == "cloudy again"
    assert otel_telemetry.outline() == [["invoke_agent flow", [
        ["step 0", [CHAT]], ["step 1", [CHAT, CHAT]],
    ]]]  # fmt: skip
    calls = sorted(otel_telemetry.by_name()[CHAT], key=lambda sp: sp.start_time or 0)
    told = [(sp.attributes or {}) for sp in calls]
    assert [a.get("gen_ai.usage.input_tokens") for a in told] == [first.input] * 2 + [second.input]
    assert [a.get("gen_ai.request.stream") for a in told] == [False, True, False]
    # each names the server of the LLM's api_base
    assert {(a.get("server.address"), a.get("server.port")) for a in told} == {("mock.invalid", 80)}
    assert all(sp.instrumentation_scope and sp.instrumentation_scope.name == OURS
               for sp in otel_telemetry.spans())  # fmt: skip
    run = otel_telemetry.span("invoke_agent flow").attributes or {}
    assert run["agent_otel.usage.input_tokens"] == 2 * first.input + second.input
    assert input_tokens_counted(otel_telemetry) == 2 * first.input + second.input
    assert "gen_ai.input.messages" not in told[0]  # content is off
    assert otel_telemetry.open_spans() == []


async def test_a_workflow_steps_failed_model_call_fails_its_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``ask``'s request is refused (a 500): its chat span fails with the SDK's class, and
    the run raises that very exception; no span is left open."""
    from agent_contract.sources.llama_index_stream import llama_index_events

    def refused(request: Any) -> Any:
        return httpx.Response(500, json={"error": {"message": "down"}}, request=request)

    flow = _flow(refused)
    import openai

    with pytest.raises(openai.InternalServerError) as raised:
        await run_script(otel_telemetry, llama_index_events(flow, "sky?"), agent_name="flow")

    assert otel_telemetry.outline() == [["invoke_agent flow", [["step 0", [CHAT]]]]]
    for name in (CHAT, "invoke_agent flow"):
        attributes = otel_telemetry.span(name).attributes or {}
        assert attributes.get("error.type") == "InternalServerError", name
    assert otel_telemetry.span(CHAT).status.status_code.name == "ERROR"
    assert isinstance(raised.value, openai.InternalServerError)
    assert otel_telemetry.open_spans() == []


async def test_agents_a_workflows_steps_run_tell_their_calls_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``relay`` runs ``scout`` and forwards its events into the run's stream (the run's
    reader tells its calls and tool); ``quiet`` then awaits ``writer``, whose events reach no
    stream of ours: its call is the run's too, from the dispatcher. Each call is one chat
    span, ``writer``'s a step of its own."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step

    OpenAI = pytest.importorskip("llama_index.llms.openai").OpenAI

    from agent_contract.sources.llama_index_stream import llama_index_events

    def llm(*bodies: Any) -> Any:
        return OpenAI(model="gpt-4o-mini", api_key="test", api_base="http://mock.invalid/v1",
                      max_retries=0, async_http_client=transport(*bodies))  # fmt: skip

    def lookup(q: str) -> str:
        """Look it up."""
        return "sunny"

    asks = chat.calls([("c1", "lookup", {"q": "Paris"})])
    scout = FunctionAgent(name="scout", tools=[lookup], llm=llm(asks, chat.answer("Sunny.")))
    writer = FunctionAgent(name="writer", tools=[], llm=llm(chat.answer("A sunny day.")))

    class Scouted(Event):
        found: str

    class Flow(Workflow):
        @step
        async def relay(self, ctx: Context, ev: StartEvent) -> Scouted:
            handler = scout.run(user_msg=ev.user_msg)
            async for event in handler.stream_events():
                if not isinstance(event, StopEvent):
                    ctx.write_event_to_stream(event)
            return Scouted(found=str(await handler))

        @step
        async def quiet(self, ev: Scouted) -> StopEvent:
            return StopEvent(result=str(await writer.run(user_msg=ev.found)))

    await run_script(otel_telemetry, llama_index_events(Flow(timeout=10), "Paris?"),
                     agent_name="flow")  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent flow", [
        ["step 0", [CHAT, "execute_tool lookup"]], ["step 1", [CHAT]], ["step 2", [CHAT]],
    ]]]  # fmt: skip
    run = otel_telemetry.span("invoke_agent flow").attributes or {}
    assert run["agent_otel.usage.input_tokens"] == 3 * s.TURNS[0].input
    assert otel_telemetry.open_spans() == []


async def test_an_agents_memory_summary_is_a_side_call_of_its_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``ChatSummaryMemoryBuffer`` over its token limit asks its own LLM (a ``MockLLM``) for
    a summary as the agent reads its memory, which no agent event tells: a chat span of the
    run's first step beside the agent's own call, a side call that leaves the run named after
    the agent's model and answered by its call."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import TextBlock
    from llama_index.core.llms import ChatMessage, MockLLM
    from llama_index.core.memory import ChatSummaryMemoryBuffer

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import MODEL, replies

    history = [ChatMessage(role="user" if i % 2 == 0 else "assistant", content="words " * 40)
               for i in range(6)]  # fmt: skip
    memory = ChatSummaryMemoryBuffer.from_defaults(
        chat_history=history, llm=MockLLM(max_tokens=5), token_limit=100
    )
    bot = FunctionAgent(name="bot", tools=[], llm=replies([TextBlock(text="Sunny.")]))
    await run_script(otel_telemetry, llama_index_events(bot, "Paris?", memory=memory),
                     agent_name="bot", capture_content=True)  # fmt: skip

    own = f"chat {MODEL}"
    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat", own]]]]]
    run = otel_telemetry.span("invoke_agent bot").attributes or {}
    assert run["gen_ai.request.model"] == MODEL
    assert "Sunny." in str(run["gen_ai.output.messages"])
    assert otel_telemetry.open_spans() == []


async def test_a_workflow_steps_model_calls_are_told_live_each_its_own_span(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    """Three steps start together on the run's ``StartEvent``: two ``await llm.achat``, one
    a plain ``def`` calling ``llm.chat`` (LlamaIndex runs it on a worker thread). Each request
    waits at the mock transport, which reads the run's clock as its answer goes out: each
    chat span was open then (started before, ended at or after it: it lasts its request, not
    told after it), one chat span per request, open at once in the one step they share, each
    with its own response's tokens."""
    import time

    from llama_index.core.llms import ChatMessage
    from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step

    OpenAI = pytest.importorskip("llama_index.llms.openai").OpenAI

    from agent_contract.sources.llama_index_stream import llama_index_events

    answered: list[int] = []  # the clock's reading as each answer went out

    def body(request: httpx.Request) -> httpx.Response:
        answered.append(otel_clock())
        turn = len(answered) - 1
        content = chat.completion(turn, f"answer {turn}", [])
        return httpx.Response(200, content=content, request=request)

    async def later(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.1)
        return body(request)

    def blocking(request: httpx.Request) -> httpx.Response:
        time.sleep(0.1)
        return body(request)

    llm = OpenAI(model="gpt-4o-mini", api_key="test", api_base="http://mock.invalid/v1",
                 max_retries=0, async_http_client=httpx.AsyncClient(
                     transport=httpx.MockTransport(later)),
                 http_client=httpx.Client(transport=httpx.MockTransport(blocking)))  # fmt: skip

    class Said(Event):
        text: str

    class Flow(Workflow):
        @step
        async def one(self, ev: StartEvent) -> Said:
            said = await llm.achat([ChatMessage(role="user", content="one")])
            return Said(text=str(said.message.content))

        @step
        async def two(self, ev: StartEvent) -> Said:
            said = await llm.achat([ChatMessage(role="user", content="two")])
            return Said(text=str(said.message.content))

        @step
        def three(self, ev: StartEvent) -> Said:
            return Said(text=str(llm.chat([ChatMessage(role="user", content="three")])))

        @step
        async def join(self, ctx: Context, ev: Said) -> StopEvent | None:
            got = ctx.collect_events(ev, [Said] * 3)
            return None if got is None else StopEvent(result=len(got))

    await run_script(otel_telemetry, llama_index_events(Flow(timeout=10), "go"),
                     agent_name="flow")  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent flow", [["step 0", [CHAT] * 3]]]]
    spans = otel_telemetry.by_name()[CHAT]
    assert len(answered) == 3
    # each answer went out while a span of its own was open (started before it, ended at or
    # after it), and the two awaited calls' spans were open together
    times = [(sp.start_time or 0, sp.end_time or 0) for sp in spans]
    assert any(all(start < moment <= end for (start, end), moment in zip(order, answered))
               for order in itertools.permutations(times))  # fmt: skip
    assert sorted(start for start, _ in times)[1] < min(answered)
    told = sorted((sp.attributes or {}).get("gen_ai.usage.input_tokens") for sp in spans)
    first, second = s.TURNS
    assert told == sorted([first.input, second.input, second.input])
    run = otel_telemetry.span("invoke_agent flow").attributes or {}
    assert run["agent_otel.usage.input_tokens"] == first.input + 2 * second.input
    assert otel_telemetry.open_spans() == []

"""Framework-level GenAI instrumentations and the SDKs' own tracing beside our runs stand down.

Beside the provider instrumentations (``test_conformance``'s ``providers``), a production
user runs a framework's own tracing or a peer's framework instrumentation: OpenLLMetry's
LangChain and Agno instrumentations, OpenInference's AutoGen AgentChat one, pydantic-ai's
built-in instrumentation (``Agent.instrument_all()``, what Logfire's
``instrument_pydantic_ai()`` turns on), LiteLLM's
own OpenTelemetry callback (``litellm.callbacks``), and the trace processors of the OpenAI
Agents SDK's own tracing left on (OpenInference's, OpenLLMetry's), OpenLLMetry's LlamaIndex
span handler, and the official ones on util-genai's handler (``genai-agno``,
``genai-smolagents``, ``genai-llama-index``, ``genai-openai-agents``: the ``genai-head``
environment runs them, ``-k genai``). Each tells the model calls, tool calls and
agent runs our spans tell, and records ``gen_ai.client.token.usage`` under our metric's name.
Each plays the conformance script here with the instrumentation on: no metric of ours recorded
by another scope, tokens counted once on spans and in the metric, no span of theirs but the
few nothing of ours tells (``kept``); opted out
(``stand_down_providers=False``) their spans and tokens are back (it was active).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _litellm_callback as _litellm
from . import _script as s
from ._conformance import ROWS, Provider, Row
from ._trace import input_tokens_counted, ours_recorded_twice, theirs, tokens

ROW = {row.name: row for row in ROWS}


@contextmanager
def _pydantic_ai(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """pydantic-ai's own instrumentation on for every agent, into ``telemetry``'s providers."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    Agent.instrument_all(
        InstrumentationSettings(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
    )
    try:
        yield
    finally:
        Agent.instrument_all(False)


def _distribution(
    name: str, instrumented: Callable[[InMemoryTelemetry], AbstractContextManager[None]]
) -> Callable[[InMemoryTelemetry], AbstractContextManager[None]]:
    """``instrumented`` where the distribution ``name`` is the one installed: OpenLLMetry's
    ``opentelemetry-instrumentation-openai-agents`` and the official ``-openai-agents-v2``
    install the same module path (the official one in the genai environment only)."""

    @contextmanager
    def installed(telemetry: InMemoryTelemetry) -> Iterator[None]:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            distribution(name)
        except PackageNotFoundError:
            pytest.skip(f"{name} is not the one installed here")
        with instrumented(telemetry):
            yield

    return installed


@contextmanager
def _official_agents_processor(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """The official Agents SDK trace processor, its histograms (made on the global meter, as
    ``configure()``'s in an application) on ``telemetry``'s meter provider."""
    with _sdk_tracing(
        _provider("opentelemetry.instrumentation.openai_agents", "OpenAIAgentsInstrumentor")
    )(telemetry):
        agents = pytest.importorskip("agents")
        meter = telemetry.meter_provider.get_meter("opentelemetry.instrumentation.openai_agents")
        for processor in agents.tracing.get_trace_provider()._multi_processor._processors:
            if type(processor).__module__.startswith("opentelemetry.instrumentation."):
                for attribute, name in (
                    ("_duration_histogram", "gen_ai.client.operation.duration"),
                    ("_token_usage_histogram", "gen_ai.client.token.usage"),
                ):
                    setattr(processor, attribute, meter.create_histogram(name))  # fmt: skip
        yield


async def _nothing() -> None:
    return None


@contextmanager
def _langsmith_otel(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """LangSmith's tracing on in its OpenTelemetry mode (``LANGSMITH_TRACING``, the client's
    ``tracing_mode="otel"``, what ``LANGSMITH_OTEL_ENABLED``/``LANGSMITH_OTEL_ONLY`` choose),
    into ``telemetry``'s provider; its API on a closed loopback port (it sends nothing there)."""
    pytest.importorskip("langsmith")
    from langsmith import Client, run_trees
    from langsmith import utils as ls_utils

    client = Client(api_url="http://127.0.0.1:9", api_key="test", tracing_mode="otel",
                    otel_tracer_provider=telemetry.tracer_provider)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LANGSMITH_TRACING", "true")
        patch.setattr(run_trees, "_CLIENT", client)
        ls_utils.get_env_var.cache_clear()
        try:
            yield
        finally:
            client.flush()
    ls_utils.get_env_var.cache_clear()


@contextmanager
def _langsmith_agents(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """LangSmith's trace processor for the OpenAI Agents SDK's tracing, on its client in the
    OpenTelemetry mode (:func:`_langsmith_otel`)."""
    from agents import add_trace_processor

    with _langsmith_otel(telemetry):
        from langsmith import run_trees
        from langsmith.integrations.openai_agents_sdk import OpenAIAgentsTracingProcessor

        add_trace_processor(OpenAIAgentsTracingProcessor(client=run_trees._CLIENT))
        yield


@contextmanager
def _langsmith_wrap_openai(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """LangSmith's ``wrap_openai()`` on the row's OpenAI client, its client in the
    OpenTelemetry mode (:func:`_langsmith_otel`): a provider wrapper of LangSmith's."""
    from langsmith.wrappers import wrap_openai

    from . import _fw_openai_chat
    from ._http import openai_client

    with _langsmith_otel(telemetry), pytest.MonkeyPatch.context() as patch:
        wrapped = lambda *bodies: wrap_openai(openai_client(*bodies))  # noqa: E731
        patch.setattr(_fw_openai_chat, "openai_client", wrapped)
        yield


async def _langsmith_exported() -> None:
    """LangSmith makes its spans on its client's background thread: wait for them."""
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()  # the callbacks, then the client's queue


@dataclass(frozen=True)
class Case:
    row: str
    """The conformance row played."""
    name: str
    instrumented: Callable[[InMemoryTelemetry], AbstractContextManager[None]]
    kept: tuple[str, ...] = ()
    """Their spans nothing of ours tells (made outside the run: an agent's construction)."""
    settled: Callable[[], Awaitable[None]] = _nothing
    """Awaited after a run: what the instrumentation records after the call has ended."""

    def param(self) -> Any:
        return pytest.param(self, id=f"{self.row}-{self.name}", marks=ROW[self.row].param().marks)


def _provider(module: str, instrumentor: str) -> Callable[..., AbstractContextManager[None]]:
    return Provider(module, module, instrumentor, meters=True).instrumented


def _sdk_tracing(
    instrumented: Callable[[InMemoryTelemetry], AbstractContextManager[None]],
) -> Callable[[InMemoryTelemetry], AbstractContextManager[None]]:
    """``instrumented`` with the Agents SDK's own tracing left on, its default (the builders
    turn it off; no API key here, so its exporter sends nothing), off again afterwards with
    the SDK's processors as they were (an ``uninstrument()`` leaves its processor there)."""

    @contextmanager
    def on(telemetry: InMemoryTelemetry) -> Iterator[None]:
        agents = pytest.importorskip("agents")
        provider = agents.tracing.get_trace_provider()
        processors = list(provider._multi_processor._processors)
        with pytest.MonkeyPatch.context() as patch, instrumented(telemetry):
            patch.delenv("OPENAI_API_KEY", raising=False)
            patch.setattr(agents, "set_tracing_disabled", lambda disabled: None)
            provider.set_disabled(False)
            try:
                yield
            finally:
                provider.set_disabled(True)
                provider.set_processors(processors)

    return on


CASES = [
    Case("langgraph", "openllmetry-langchain",
         _provider("opentelemetry.instrumentation.langchain", "LangchainInstrumentor"),
         kept=("create_agent weatherbot",)),
    # LangSmith's own tracing in its OpenTelemetry mode reads no key, on its own thread
    Case("langgraph", "langsmith-otel", _langsmith_otel, settled=_langsmith_exported),
    Case("openai_agents", "langsmith-otel", _sdk_tracing(_langsmith_agents),
         settled=_langsmith_exported),
    Case("openai_chat", "langsmith-wrap-openai", _langsmith_wrap_openai,
         settled=_langsmith_exported),
    Case("agno", "openllmetry-agno",
         _provider("opentelemetry.instrumentation.agno", "AgnoInstrumentor")),
    Case("agno", "openinference-agno",
         _provider("openinference.instrumentation.agno", "AgnoInstrumentor")),
    Case("pydantic_ai", "own", _pydantic_ai),
    Case("pydantic_ai_openai", "own", _pydantic_ai),
    Case("litellm_chat", "own-otel-callback", _litellm.callback, settled=_litellm.logged),
    # callbacks built on it with handlers of their own (a root span in Phoenix's trace; a
    # span under the current one, Weave's)
    Case("litellm_chat", "arize-phoenix-callback", partial(
        _litellm.callback, kind="arize.arize_phoenix:ArizePhoenixLogger"), settled=_litellm.logged),
    Case("litellm_chat", "weave-otel-callback", partial(
        _litellm.callback, kind="weave.weave_otel:WeaveOtelLogger"), settled=_litellm.logged),
    # trace processors of the Agents SDK's own tracing (left on): OpenInference's reads the key,
    # OpenLLMetry's reads none
    Case("openai_agents", "openinference-openai-agents", _sdk_tracing(
        _provider("openinference.instrumentation.openai_agents", "OpenAIAgentsInstrumentor"))),
    Case("openai_agents", "openllmetry-openai-agents", _distribution(
        "opentelemetry-instrumentation-openai-agents", _sdk_tracing(
            _provider("opentelemetry.instrumentation.openai_agents", "OpenAIAgentsInstrumentor")))),
    Case("openai_agents", "genai-openai-agents-v2", _distribution(
        "opentelemetry-instrumentation-openai-agents-v2", _official_agents_processor)),
    # its span handler on LlamaIndex's dispatcher reads no key (importable where an LLM package
    # of LlamaIndex's is: the llama-index environment)
    Case("llama_index", "openllmetry-llamaindex",
         _provider("opentelemetry.instrumentation.llamaindex", "LlamaIndexInstrumentor")),
    Case("llama_index_openai", "openllmetry-llamaindex",
         _provider("opentelemetry.instrumentation.llamaindex", "LlamaIndexInstrumentor")),
    # the official packages (util-genai 1.3b0's handler: its agent and tool invocations read
    # no key; the genai environment)
    Case("agno", "genai-agno",
         _provider("opentelemetry.instrumentation.genai.agno", "AgnoInstrumentor")),
    Case("smolagents", "genai-smolagents",
         _provider("opentelemetry.instrumentation.genai.smolagents", "SmolagentsInstrumentor")),
    Case("llama_index", "genai-llama-index",
         _provider("opentelemetry.instrumentation.genai.llama_index", "LlamaIndexInstrumentor")),
    Case("openai_agents", "genai-openai-agents", _sdk_tracing(_provider(
        "opentelemetry.instrumentation.genai.openai_agents", "OpenAIAgentsInstrumentor"))),
    # OpenInference's LangChain, smolagents and LiteLLM instrumentations and OpenLLMetry's
    # LiteLLM one read the general key before each span
    Case("langgraph", "openinference-langchain",
         _provider("openinference.instrumentation.langchain", "LangChainInstrumentor")),
    Case("smolagents", "openinference-smolagents",
         _provider("openinference.instrumentation.smolagents", "SmolagentsInstrumentor")),
    Case("litellm_chat", "openinference-litellm",
         _provider("openinference.instrumentation.litellm", "LiteLLMInstrumentor")),
    Case("litellm_chat", "openllmetry-litellm",
         _provider("opentelemetry.instrumentation.litellm", "LiteLLMInstrumentor")),
    # OpenInference's LlamaIndex, CrewAI and Google ADK instrumentations read the general key
    # before each span too (CrewAI's in the crewai environment, ADK's in google-adk's)
    Case("llama_index", "openinference-llama-index",
         _provider("openinference.instrumentation.llama_index", "LlamaIndexInstrumentor")),
    Case("crewai", "openinference-crewai",
         _provider("openinference.instrumentation.crewai", "CrewAIInstrumentor")),
    Case("google_adk", "openinference-google-adk",
         _provider("openinference.instrumentation.google_adk", "GoogleADKInstrumentor")),
    Case("google_adk_openai", "openinference-google-adk",
         _provider("openinference.instrumentation.google_adk", "GoogleADKInstrumentor")),
    # OpenInference's AutoGen AgentChat instrumentation: agent, team and tool spans
    Case("autogen", "openinference-autogen-agentchat", _provider(
        "openinference.instrumentation.autogen_agentchat", "AutogenAgentChatInstrumentor")),
    Case("autogen_openai", "openinference-autogen-agentchat", _provider(
        "openinference.instrumentation.autogen_agentchat", "AutogenAgentChatInstrumentor")),
]  # fmt: skip


@pytest.mark.parametrize("case", [case.param() for case in CASES])
async def test_framework_instrumentations_stand_down(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    row: Row = ROW[case.row]
    with case.instrumented(otel_telemetry):
        plain = s.Run()
        await run_script(otel_telemetry, row.events(plain), agent_name="agent")
        await case.settled()
        input_tokens = row.totals(plain)["input"]

        assert ours_recorded_twice(otel_telemetry) == set()
        assert input_tokens_counted(otel_telemetry) == input_tokens
        assert tokens(otel_telemetry) == input_tokens
        assert theirs(otel_telemetry) == sorted(case.kept)
        assert otel_telemetry.open_spans() == []

        otel_telemetry.clear()
        opted_out = otel_telemetry.wrapper(agent_name="agent", stand_down_providers=False)
        [_ async for _ in opted_out(row.events(s.Run()))]
        await case.settled()
        assert set(theirs(otel_telemetry)) - set(case.kept)  # theirs are back: it was active


@pytest.mark.parametrize(
    ("call_type", "inside", "told"),
    [("acompletion", True, True), ("completion", True, True), ("aembedding", True, False),
     ("image_generation", True, False), (None, True, False), ("acompletion", False, False)],
)  # fmt: skip
def test_litellm_callback_stands_down_for_the_chat_calls_our_chat_span_told(
    call_type: str | None, inside: bool, told: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """An embeddings or image request, a call of unknown type, and any call outside our chat
    spans keep LiteLLM's own account of it; a chat call our chat span told does not."""
    from opentelemetry import context as otel_context

    from agent_otel.standdown import stand_down
    from agent_otel.standdown._litellm import _told

    span = otel_telemetry.tracer_provider.get_tracer("test").start_span("chat m")
    context = stand_down(otel_context.get_current(), span) if inside else None
    token = otel_context.attach(context) if context is not None else None
    try:
        assert _told({"call_type": call_type}) is told
    finally:
        if token is not None:
            otel_context.detach(token)
        span.end()
    assert _told("not a dict") is False


async def test_langsmith_otel_spans_outside_our_runs_stay_and_held_runs_leave_no_notes(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A graph LangSmith traces outside any run of ours keeps its spans, with a framework run of
    ours before it (the seams are in place); every run noted in ours was answered."""
    pytest.importorskip("langgraph")
    from agent_otel.standdown import _langsmith

    from . import _fw_langgraph as fw

    with _langsmith_otel(otel_telemetry):
        await run_script(otel_telemetry, ROW["langgraph"].events(s.Run()), agent_name="agent")
        await _langsmith_exported()
        assert theirs(otel_telemetry) == []
        assert not _langsmith._held_runs
        otel_telemetry.clear()
        question = {"messages": [("user", s.QUESTION)]}
        [_ async for _ in fw.graph(s.Run()).astream(question, stream_mode="messages")]
        await _langsmith_exported()
    names = theirs(otel_telemetry)
    assert "SdkChat" in names and "weather" in names


MID_RUN = [(row, provider) for row in ("langgraph", "openai_agents", "autogen_openai")
           for provider in ROW[row].providers if provider.name == "openai-v2"]  # fmt: skip
"""Framework rows whose model calls a provider reading no context key (openai-v2) traces."""


async def _instrumented_mid_run(
    events: AsyncIterator[Any], instrumented: AbstractContextManager[None]
) -> AsyncIterator[Any]:
    """``events`` with ``instrumented`` entered at the first tool call, while the run is open
    and before the framework's next model call, and left (uninstrumented) at the stream's end."""
    with ExitStack() as stack:
        entered = False
        async for event in events:
            if type(event).__name__ == "ToolCall" and not entered:
                stack.enter_context(instrumented)
                entered = True
            yield event


@pytest.mark.parametrize(
    ("row", "provider"),
    [pytest.param(ROW[r], p, id=f"{r}-{p.name}", marks=ROW[r].param().marks) for r, p in MID_RUN],
)
async def test_providers_instrumented_while_a_framework_run_is_open_stand_down(
    row: Row, provider: Provider, otel_telemetry: InMemoryTelemetry
) -> None:
    """A provider instrumentation instrumented mid-run (its package imported before, as at the
    top of a module) and uninstrumented before the run ends stands down for the framework's
    next model call, made before its chat span of ours opens: one chat span per call, tokens
    counted once; opted out, its spans are there."""
    pytest.importorskip(provider.module)
    plain = s.Run()
    events = _instrumented_mid_run(row.events(plain), provider.instrumented(otel_telemetry))
    await run_script(otel_telemetry, events, agent_name="agent")
    assert theirs(otel_telemetry) == []
    assert ours_recorded_twice(otel_telemetry) == set()
    assert input_tokens_counted(otel_telemetry) == row.totals(plain)["input"]

    otel_telemetry.clear()
    opted_out = otel_telemetry.wrapper(agent_name="agent", stand_down_providers=False)
    events = _instrumented_mid_run(row.events(s.Run()), provider.instrumented(otel_telemetry))
    [_ async for _ in opted_out(events)]
    assert theirs(otel_telemetry)  # theirs are back: it was active


HELD_PEERS = [case for case in CASES if case.name in {"openllmetry-llamaindex",
              "openllmetry-openai-agents"}]  # fmt: skip
"""Peers of a framework's own tracing that read no context key, whose tracer is gated."""


@pytest.mark.parametrize("case", [case.param() for case in HELD_PEERS])
async def test_framework_peers_instrumented_while_its_run_is_open_stand_down(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    """A peer of the framework's own tracing instrumented mid-run (OpenLLMetry's LlamaIndex
    span handler added to the dispatcher once the run started) stands down in that run from its
    first span, not from the next run's start: no span of theirs, tokens counted once."""
    row = ROW[case.row]
    plain = s.Run()
    events = _instrumented_mid_run(row.events(plain), case.instrumented(otel_telemetry))
    await run_script(otel_telemetry, events, agent_name="agent")
    await case.settled()
    assert theirs(otel_telemetry) == sorted(case.kept)
    assert ours_recorded_twice(otel_telemetry) == set()
    assert input_tokens_counted(otel_telemetry) == row.totals(plain)["input"]


LITELLM_PROVIDERS = [("openinference-litellm", "openinference.instrumentation.litellm"),
                     ("openllmetry-litellm", "opentelemetry.instrumentation.litellm")]  # fmt: skip
EMBEDDINGS = {"object": "list", "model": "text-embedding-3-small",
              "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
              "usage": {"prompt_tokens": 5, "total_tokens": 5}}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "module"), LITELLM_PROVIDERS, ids=[n for n, _ in LITELLM_PROVIDERS]
)
async def test_litellm_embeddings_inside_our_chat_span_keep_their_span(
    name: str, module: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """``litellm.aembedding()`` is no call our chat span tells: the instrumentation wrapping
    LiteLLM's module functions traces it inside our chat span as it does outside our runs."""
    import json

    litellm = pytest.importorskip("litellm")
    from agent_contract.protocol import LLMCallEnd, LLMCallStart

    from ._http import openai_client

    async def embed() -> None:
        client = openai_client(json.dumps(EMBEDDINGS).encode())
        await litellm.aembedding(model="openai/text-embedding-3-small", input=["hi"],
                                 client=client, api_key="test")  # fmt: skip

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="c1")
        await embed()
        yield LLMCallEnd(call_id="c1", model="gpt-4o-mini", finish_reason="stop")

    with _provider(module, "LiteLLMInstrumentor")(otel_telemetry):
        await embed()
        outside = theirs(otel_telemetry)
        otel_telemetry.clear()
        [_ async for _ in otel_telemetry.wrapper()(agent())]
        assert outside and theirs(otel_telemetry) == outside


COMPLETION = {"id": "r1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
              "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "ok"}}]}  # fmt: skip
REFUSED = {"error": {"message": "bad request", "type": "invalid_request_error", "code": None}}


@pytest.mark.parametrize(
    ("where", "request_made", "failed"),
    [("chat", "embedding", False), ("execute_tool", "completion", True),
     ("execute_tool", "refused", False)],
    ids=["embeddings-in-our-chat-span", "a-tools-own-chat-call-the-tool-fails",
         "a-tools-own-call-refused-the-tool-recovers"],
)  # fmt: skip
async def test_litellm_callback_logs_the_calls_ours_do_not_tell_in_a_span_of_its_own(
    where: str, request_made: str, failed: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """LiteLLM's callback logs a call made with a span current onto that span, not a span of
    its own. An embeddings request inside our chat span, or a tool's own model call, is no
    call our spans tell: LiteLLM keeps its account of it, in its own span under ours; ours
    keep their operation, model and status (a failed tool fails, one whose model request was
    refused and that recovered does not) and no content past the opt-in."""
    import json

    from opentelemetry.trace import StatusCode

    litellm = pytest.importorskip("litellm")
    from agent_contract.protocol import (
        FunctionCall,
        LLMCallEnd,
        LLMCallStart,
        ToolCall,
        ToolResult,
        Usage,
    )
    from agent_contract.scope import tool_scope

    from ._http import openai_client

    async def request() -> None:
        if request_made == "embedding":
            client = openai_client(json.dumps(EMBEDDINGS).encode())
            await litellm.aembedding(model="openai/text-embedding-3-small", input=["hi"],
                                     client=client, api_key="test")  # fmt: skip
        else:
            import httpx2

            answer = (lambda _: httpx2.Response(400, json=REFUSED)) if request_made == "refused" \
                else json.dumps(COMPLETION).encode()  # fmt: skip
            messages = [{"role": "user", "content": "hi"}]
            try:
                await litellm.acompletion(model="openai/gpt-4o-mini", messages=messages,
                                          client=openai_client(answer), api_key="test")  # fmt: skip
            except litellm.BadRequestError:
                assert request_made == "refused"  # the tool recovers from it
        await _litellm.logged_into(otel_telemetry)  # logged while our span is open

    async def agent() -> AsyncIterator[Any]:
        if where == "chat":
            yield LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="c1")
            await request()
            yield Usage(input_tokens=12, output_tokens=3)
            yield LLMCallEnd(call_id="c1", model="gpt-4o-mini", finish_reason="stop")
        else:
            yield ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}"))
            async with tool_scope("t1"):
                await request()
            yield ToolResult(tool_call_id="t1", content="done", is_error=failed)

    with _litellm.callback(otel_telemetry):
        await run_script(otel_telemetry, agent(), agent_name="agent")
    (ours,) = [sp for sp in otel_telemetry.spans() if sp.name.startswith(where)]
    attributes = dict(ours.attributes or {})
    assert attributes["gen_ai.operation.name"] == where
    assert not [key for key in attributes if key.startswith(("litellm.", "metadata."))]
    assert "gen_ai.input.messages" not in attributes  # content is off
    assert ours.status.status_code is (StatusCode.ERROR if failed else StatusCode.UNSET)
    if where == "chat":
        assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert attributes["gen_ai.usage.input_tokens"] == 12
    (logged,) = _litellm.spans(otel_telemetry)  # the call traced once, by LiteLLM, under ours
    assert logged.parent is not None and ours.context is not None
    assert logged.parent.span_id == ours.context.span_id
    assert (logged.status.status_code is StatusCode.ERROR) is (request_made == "refused")


@pytest.mark.parametrize("stand_down", [True, False], ids=["standing-down", "opted-out"])
async def test_litellm_callback_stands_down_for_a_synchronous_completion_too(
    stand_down: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """``litellm.completion()`` (synchronous, not streamed) logs the call on LiteLLM's thread
    pool, in a copy of the call's context: inside our chat span its callback stands down
    (tokens counted once); opted out, it logs the call in our trace, in its own span under our
    chat span."""
    import threading

    litellm = pytest.importorskip("litellm")
    httpx2 = pytest.importorskip("httpx2")
    import openai
    from litellm.integrations.custom_logger import CustomLogger

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage

    class Heard(CustomLogger):  # type: ignore[misc]
        """Told after the OpenTelemetry callback, before it: the call's logging has run."""

        logged = threading.Event()

        def log_success_event(self, *args: Any, **kwargs: Any) -> None:
            self.logged.set()

    answer = lambda _: httpx2.Response(200, json=COMPLETION)  # noqa: E731
    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = openai.OpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=http)
    heard = Heard()

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="c1")
        litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                           client=client, api_key="test")  # fmt: skip
        assert heard.logged.wait(10)
        yield Usage(input_tokens=7, output_tokens=2)
        yield LLMCallEnd(call_id="c1", model="gpt-4o-mini", finish_reason="stop")

    with _litellm.callback(otel_telemetry):
        litellm.callbacks.append(heard)
        await run_script(otel_telemetry, agent(), stand_down_providers=stand_down)
    (chat,) = [sp for sp in otel_telemetry.spans() if sp.name.startswith("chat")]
    assert input_tokens_counted(otel_telemetry) == (7 if stand_down else 14)
    theirs = _litellm.spans(otel_telemetry)
    assert chat.context is not None
    assert [sp.parent.span_id if sp.parent else None for sp in theirs] == (
        [] if stand_down else [chat.context.span_id]
    )

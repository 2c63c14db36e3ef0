"""One chat span per model call beside the official GenAI instrumentations (util-genai 1.3b0).

``opentelemetry-instrumentation-genai-openai``, ``-anthropic``, ``-openai-agents`` and
``-langchain`` 1.3b0, ``-bedrock`` 1.3b0 (boto3's clients answering from botocore's
``Stubber``), and ``opentelemetry-instrumentation-google-genai`` 1.3b0 (the Google
Gen AI SDK's, which Google ADK's Gemini model calls), are instrumented into the test's
providers; the real SDKs run over their mock transports (``_http``, httpx's for Google's),
the frameworks on their test models (``_frameworks``).
Inside our chat spans util-genai's handler sees an inference span and its packages make no
chat span and record no token metric; with ``stand_down_providers=False`` they do (what the
stand-down prevents). Outside our chat spans they trace as before.

Runs where util-genai 1.3b0 and those packages are installed (``.ci/run``'s .venv-genai, the
``genai-head`` extra); skipped in the default environment, whose openai-v2 needs 1.1b0.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("opentelemetry.util.genai._inference_invocation")
genai_openai = pytest.importorskip("opentelemetry.instrumentation.genai.openai")
genai_anthropic = pytest.importorskip("opentelemetry.instrumentation.genai.anthropic")

from opentelemetry.sdk.metrics.export import HistogramDataPoint  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402

from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage  # noqa: E402
from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from leaving_a_task import own_adapter_leaving_a_task, run_then_end  # noqa: E402

from . import _frameworks as fw  # noqa: E402
from ._cases import CASES, HISTORY, Case, weather  # noqa: E402
from ._trace import ToolLoop  # noqa: E402

OURS = "agent_otel"
SDK_CASES = [case for case in CASES if case.name != "litellm_chat"]  # LiteLLM: no official one


@pytest.fixture
def telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory providers with the official openai and anthropic packages instrumented in."""
    telemetry = InMemoryTelemetry()
    instrumentors = (genai_openai.OpenAIInstrumentor(), genai_anthropic.AnthropicInstrumentor())
    with telemetry.instrumented(*instrumentors):
        yield telemetry
    telemetry.shutdown()


def wrap(telemetry: InMemoryTelemetry, **options: Any) -> Callable[[AsyncIterator[Any]], Any]:
    return telemetry.wrapper(agent_name="agent", **options)


MODEL_CALLS = {"chat", "text_completion", "generate_content"}  # (generate_content: Google's)


def chat_spans(telemetry: InMemoryTelemetry) -> list[ReadableSpan]:
    """Every span describing a model call, whoever made it."""
    return [
        s for s in telemetry.spans()
        if (s.attributes or {}).get("gen_ai.operation.name") in MODEL_CALLS
    ]  # fmt: skip


def scopes(spans: list[ReadableSpan]) -> list[str]:
    return sorted(s.instrumentation_scope.name for s in spans if s.instrumentation_scope)


def input_tokens_counted(telemetry: InMemoryTelemetry) -> int:
    """Input tokens in every instrumentation's token metric (ours and util-genai's names)."""
    total = 0
    for name, points in telemetry.histograms().items():
        if "token" not in name:
            continue
        for point in points:
            assert isinstance(point, HistogramDataPoint)
            if dict(point.attributes or {}).get("gen_ai.token.type") == "input":
                total += int(point.sum)
    return total


async def run_tool_loop(telemetry: InMemoryTelemetry, case: Case, **options: Any) -> None:
    client = case.client(case.body(True), case.body(False))
    agent = ToolLoop(case.source(client), {"weather": weather})
    result = await agent.invoke(HISTORY, stream_wrapper=wrap(telemetry, **options))
    assert result.text == "Sunny in both."


@pytest.mark.parametrize("case", SDK_CASES, ids=[c.name for c in SDK_CASES])
async def test_one_chat_span_per_call_and_tokens_once(
    telemetry: InMemoryTelemetry, case: Case
) -> None:
    await run_tool_loop(telemetry, case)
    chats = chat_spans(telemetry)
    assert scopes(chats) == [OURS, OURS]  # two model calls, one span each
    assert input_tokens_counted(telemetry) == 2 * case.input_tokens
    assert not telemetry.logs()  # nor their inference event


@pytest.mark.parametrize("case", SDK_CASES, ids=[c.name for c in SDK_CASES])
async def test_opt_out_keeps_the_official_chat_spans(
    telemetry: InMemoryTelemetry, case: Case
) -> None:
    """What the stand-down prevents: two chat spans per call, tokens counted twice."""
    await run_tool_loop(telemetry, case, stand_down_providers=False)
    theirs = [s for s in chat_spans(telemetry) if s.instrumentation_scope.name != OURS]  # type: ignore[union-attr]
    assert len(theirs) == 2 and len(chat_spans(telemetry)) == 4
    assert input_tokens_counted(telemetry) == 4 * case.input_tokens


async def test_calls_outside_our_chat_spans_are_traced_by_the_official_package(
    telemetry: InMemoryTelemetry,
) -> None:
    case = SDK_CASES[0]
    await run_tool_loop(telemetry, case)
    telemetry.clear()
    client = case.client(case.body(False))
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], stream=True
    )
    async for _ in stream:
        pass
    (theirs,) = chat_spans(telemetry)
    assert theirs.instrumentation_scope is not None
    assert theirs.instrumentation_scope.name != OURS


async def _a_call(client: Any, ended: asyncio.Event) -> None:
    """A model call once ``ended`` is set, streamed to its end."""
    await ended.wait()
    ask = [{"role": "user", "content": "later"}]
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=ask, stream=True)
    async for _ in stream:
        pass


async def _chat_span_leaving_a_task(
    client: Any, ended: asyncio.Event, left: list[asyncio.Task[None]]
) -> AsyncIterator[Any]:
    """A contract agent starting a task inside its chat span (a copy of that span's context)."""
    yield LLMCallStart(model="m")
    left.append(asyncio.create_task(_a_call(client, ended)))
    yield LLMCallEnd(model="m", finish_reason="stop")


def _framework_run_leaving_a_task(
    client: Any, ended: asyncio.Event, left: list[asyncio.Task[None]]
) -> AsyncIterator[Any]:
    return own_adapter_leaving_a_task(__name__, _a_call(client, ended), left)


LEAVING_A_TASK = {"chat-span": _chat_span_leaving_a_task,
                  "framework-run": _framework_run_leaving_a_task}  # fmt: skip


@pytest.mark.parametrize("ended", sorted(LEAVING_A_TASK))
async def test_a_call_once_ours_ended_is_traced_by_the_official_package(
    telemetry: InMemoryTelemetry, ended: str
) -> None:
    """A task started in our chat span or framework run (which copies its context) and calling
    the model once that span or run has ended calls outside ours: openai-v2, OpenInference
    and OpenLLMetry trace it, but the official packages stood down, util-genai's key still in
    the task's context, and the call went untraced. Now they trace it too."""
    case = SDK_CASES[0]
    done, left = asyncio.Event(), []
    stream = LEAVING_A_TASK[ended](case.client(case.body(False)), done, left)
    await run_then_end(telemetry, wrap(telemetry), stream, done, left)
    theirs = [s for s in scopes(chat_spans(telemetry)) if s != OURS]
    assert theirs == ["opentelemetry.instrumentation.genai.openai"]


# --- frameworks with an official package: their model calls start before our chat span ------


@pytest.fixture
def agents_instrumented(telemetry: InMemoryTelemetry) -> Iterator[InMemoryTelemetry]:
    module = pytest.importorskip("opentelemetry.instrumentation.genai.openai_agents")
    with telemetry.instrumented(module.OpenAIAgentsInstrumentor()):
        yield telemetry


@pytest.fixture
def langchain_instrumented(telemetry: InMemoryTelemetry) -> Iterator[InMemoryTelemetry]:
    module = pytest.importorskip("opentelemetry.instrumentation.genai.langchain")
    # It names the langchain package; LangGraph needs only langchain-core.
    with telemetry.instrumented(module.LangChainInstrumentor(), skip_dep_check=True):
        yield telemetry


STAND_DOWN = pytest.mark.parametrize("stand_down", [True, False], ids=["stand-down", "opt-out"])


def framework_chats(telemetry: InMemoryTelemetry, stand_down: bool) -> None:
    """Two model calls: our two chat spans, and theirs too only when we do not stand down."""
    theirs = [s for s in scopes(chat_spans(telemetry)) if s != OURS]
    assert scopes(chat_spans(telemetry)).count(OURS) == 2
    assert len(theirs) == (0 if stand_down else 2)


RUNS_AND_TOOLS = {"invoke_agent", "invoke_workflow", "execute_tool"}
TOLD_METRICS = ("gen_ai.invoke_agent.duration", "gen_ai.execute_tool.duration")


def measured(telemetry: InMemoryTelemetry, name: str) -> int:
    """How many operations the histogram ``name`` measured, whoever recorded them."""
    return sum(int(getattr(p, "count", 0)) for p in telemetry.histograms().get(name, []))


def framework_runs_and_tools(telemetry: InMemoryTelemetry, stand_down: bool) -> None:
    """One agent run and two tool calls, ours: the package's own agent, workflow and tool
    spans and their durations (our metrics' names) are there only when we do not stand down."""
    spans = telemetry.spans()
    ours = [s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == OURS]
    theirs = [
        s for s in spans
        if s not in ours and s.name.split(" ", 1)[0] in RUNS_AND_TOOLS
    ]  # fmt: skip
    assert [s.name.split(" ", 1)[0] for s in ours].count("execute_tool") == 2
    assert bool(theirs) is not stand_down
    runs, tools = (measured(telemetry, name) for name in TOLD_METRICS)
    assert (runs, tools) == ((1, 2) if stand_down else (2, 4))
    for span in spans:  # whatever starts under a stood-down span of theirs is in our trace
        assert span.parent is None or span.parent.trace_id == spans[-1].context.trace_id


@STAND_DOWN
async def test_openai_agents_one_chat_span_per_model_call(
    agents_instrumented: InMemoryTelemetry, stand_down: bool
) -> None:
    from agent_contract.sources.openai_agents import openai_agents_events

    telemetry = agents_instrumented
    events = openai_agents_events(fw.agents_agent(tracing=True), "Weather?")
    async for _ in wrap(telemetry, stand_down_providers=stand_down)(events):
        pass
    framework_chats(telemetry, stand_down)
    framework_runs_and_tools(telemetry, stand_down)


@STAND_DOWN
async def test_langchain_one_chat_span_per_model_call(
    langchain_instrumented: InMemoryTelemetry, stand_down: bool
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    telemetry = langchain_instrumented
    graph = fw.langgraph_graph(model_name="gpt-4o-mini")  # util-genai skips unnamed models
    events = langgraph_events(graph, {"messages": [("user", "W?")]})
    async for _ in wrap(telemetry, stand_down_providers=stand_down)(events):
        pass
    framework_chats(telemetry, stand_down)
    framework_runs_and_tools(telemetry, stand_down)


# --- the Google Gen AI SDK (what Google ADK's Gemini model calls) ------------------------------


def gemini_client(answer: str) -> Any:
    """A real ``google.genai.Client`` answering every request over httpx's mock transport."""
    import httpx
    from google import genai
    from google.genai import types

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1,
                              "totalTokenCount": 8},
            "modelVersion": "gemini-2.0-flash",
        })  # fmt: skip

    transport = types.HttpOptions(async_client_args={"transport": httpx.MockTransport(respond)})
    return genai.Client(api_key="offline", http_options=transport)


@STAND_DOWN
async def test_google_genai_one_chat_span_per_model_call(
    stand_down: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent telling its Gemini calls (as the ADK adapter does) inside which the SDK's
    official package would make a second chat span and count the tokens again; a call
    outside our run is still the package's to trace."""
    module = pytest.importorskip("opentelemetry.instrumentation.google_genai")
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage

    # Its instrument() sets OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true in the process's
    # environment, for every util-genai package after it: restored when the test ends.
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", "false")
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(module.GoogleGenAiSdkInstrumentor()):
        client = gemini_client("sunny")

        async def agent() -> AsyncIterator[Any]:
            for n in range(2):
                yield LLMCallStart(model="gemini-2.0-flash", provider="gcp.gemini", call_id=n)
                reply = await client.aio.models.generate_content(
                    model="gemini-2.0-flash", contents="Weather?"
                )
                yield TextDelta(text=reply.text or "")
                yield Usage(input_tokens=7, output_tokens=1)
                yield LLMCallEnd(model="gemini-2.0-flash", call_id=n, finish_reason="stop")

        async for _ in wrap(telemetry, stand_down_providers=stand_down)(agent()):
            pass
        framework_chats(telemetry, stand_down)
        assert input_tokens_counted(telemetry) == (2 if stand_down else 4) * 7
        telemetry.clear()
        await client.aio.models.generate_content(model="gemini-2.0-flash", contents="Again?")
        assert [s for s in scopes(chat_spans(telemetry)) if s != OURS] == [
            "opentelemetry.instrumentation.google_genai"
        ]
    telemetry.shutdown()


# --- the seam itself --------------------------------------------------------------------------


@pytest.mark.internal_errors
def test_a_util_genai_whose_inference_data_cannot_be_made_leaves_the_context_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import opentelemetry.util.genai._inference_invocation as inference
    from opentelemetry import context as otel_context

    from agent_otel.standdown._util_genai import covered

    class Refuses:
        def __init__(self) -> None:
            raise TypeError("a later util-genai's InferenceData wants arguments")

    monkeypatch.setattr(inference, "InferenceData", Refuses)
    context = otel_context.get_current()
    assert covered(context) is context  # theirs stays: two spans, never a broken call
    assert "standdown.util_genai" in caplog.text


def test_without_util_genai_loaded_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from opentelemetry import context as otel_context

    from agent_otel.standdown._util_genai import MODULE, covered

    monkeypatch.delitem(sys.modules, MODULE)
    context = otel_context.get_current()
    assert covered(context) is context


def handler_of(telemetry: InMemoryTelemetry) -> Any:
    """util-genai's own handler, into the test's providers, with its methods guarded."""
    from opentelemetry.util.genai.handler import TelemetryHandler

    from agent_otel.standdown._guards import guard_providers

    handler = TelemetryHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    guard_providers()
    return handler


def test_the_handlers_agent_and_tool_runs_outside_our_runs_are_recorded_as_before() -> None:
    telemetry = InMemoryTelemetry()
    handler = handler_of(telemetry)
    with handler.invoke_local_agent(agent_name="theirs"), handler.tool("lookup"):
        pass
    with handler.workflow("flow"):
        pass
    assert sorted(s.name for s in telemetry.spans()) == [
        "execute_tool lookup", "invoke_agent theirs", "invoke_workflow flow"
    ]  # fmt: skip
    assert [measured(telemetry, name) for name in TOLD_METRICS] == [1, 1]
    telemetry.shutdown()


@contextlib.contextmanager
def _in_a_run_of_ours(covered: bool = True) -> Iterator[None]:
    """The current context as a framework run of ours makes it (``covered``: the packages
    stand down in it), or as it is."""
    from opentelemetry import context as otel_context

    from agent_otel.standdown._context import cover

    context = otel_context.get_current()
    token = otel_context.attach(cover(context, lambda: True) if covered else context)
    try:
        yield
    finally:
        otel_context.detach(token)


@pytest.mark.internal_errors
def test_a_handler_that_cannot_stand_in_records_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A later handler that cannot be copied: the stand-down is reported, theirs recorded."""
    telemetry = InMemoryTelemetry()
    handler = handler_of(telemetry)

    class Uncopyable(type(handler)):  # type: ignore[misc]
        def __copy__(self) -> Any:
            raise TypeError("a handler that cannot be copied")

    handler.__class__ = Uncopyable
    with _in_a_run_of_ours(), handler.tool("lookup"):
        pass
    assert [s.name for s in telemetry.spans()] == ["execute_tool lookup"]
    assert "stand-down" in caplog.text
    telemetry.shutdown()


def test_a_handler_of_another_shape_records_as_before() -> None:
    """A handler without util-genai 1.3b0's instruments (1.1b0 records through another
    attribute) is not half silenced: its span and metric stay."""
    telemetry = InMemoryTelemetry()
    handler = handler_of(telemetry)

    class Older(type(handler)):  # type: ignore[misc]
        """Its instruments where the stand-in does not look for them."""

    Older._instruments = vars(handler).pop("_instruments")
    handler.__class__ = Older
    with _in_a_run_of_ours(), handler.workflow("flow"):
        pass
    assert [s.name for s in telemetry.spans()] == ["invoke_workflow flow"]
    telemetry.shutdown()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(max_size=40), covered=st.booleans())
def test_any_tool_or_agent_name_stands_down_in_our_runs_only(name: str, covered: bool) -> None:
    """Whatever the package names its tool or agent, in a framework run of ours it records
    nothing and raises nothing; elsewhere its spans are its own."""
    telemetry = InMemoryTelemetry()
    handler = handler_of(telemetry)
    with (
        _in_a_run_of_ours(covered),
        handler.invoke_local_agent(agent_name=name),
        handler.tool(name),
    ):
        pass
    assert len(telemetry.spans()) == (0 if covered else 2)
    assert [measured(telemetry, metric) for metric in TOLD_METRICS] == [int(not covered)] * 2
    telemetry.shutdown()


BEDROCK_MODEL = "amazon.nova-micro-v1:0"
BEDROCK_ASK = {
    "modelId": BEDROCK_MODEL,
    "messages": [{"role": "user", "content": [{"text": "hi"}]}],
}
BEDROCK_ANSWER = {"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
                  "stopReason": "end_turn", "metrics": {"latencyMs": 1},
                  "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}}  # fmt: skip


@pytest.fixture
def bedrock_telemetry() -> Iterator[InMemoryTelemetry]:
    """The official Bedrock package (``opentelemetry-instrumentation-genai-bedrock``, on
    util-genai's handler, wrapping botocore's ``BaseClient._make_api_call``) instrumented in."""
    bedrock = pytest.importorskip("opentelemetry.instrumentation.genai.bedrock")
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(bedrock.BedrockInstrumentor()):
        yield telemetry
    telemetry.shutdown()


def _bedrock_embeddings_answer() -> dict[str, Any]:
    import io
    import json

    from botocore.response import StreamingBody

    body = json.dumps({"embedding": [0.1, 0.2], "inputTextTokenCount": 5}).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


async def test_official_bedrock_converse_stands_down_in_our_chat_span_only(
    bedrock_telemetry: InMemoryTelemetry,
) -> None:
    """A ``Converse`` inside our chat span is that span alone, its tokens counted once; an
    embedding model's ``InvokeModel`` there keeps the package's embeddings span (no call our
    chat span tells); a ``Converse`` outside our runs is the package's chat span, as before."""
    boto3 = pytest.importorskip("boto3")
    from botocore.stub import Stubber

    bedrock = boto3.client("bedrock-runtime", region_name="us-east-1",
                           aws_access_key_id="k", aws_secret_access_key="s")  # fmt: skip
    embed = {"modelId": "amazon.titan-embed-text-v2:0", "body": '{"inputText": "hi"}',
             "contentType": "application/json", "accept": "application/json"}  # fmt: skip

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=BEDROCK_MODEL, provider="aws.bedrock", call_id="c1")
        bedrock.converse(**BEDROCK_ASK)
        bedrock.invoke_model(**embed)["body"].read()
        yield Usage(input_tokens=12, output_tokens=3)
        yield LLMCallEnd(call_id="c1", model=BEDROCK_MODEL, finish_reason="stop")

    with Stubber(bedrock) as stub:
        stub.add_response("converse", BEDROCK_ANSWER)
        stub.add_response("invoke_model", _bedrock_embeddings_answer())
        stub.add_response("converse", BEDROCK_ANSWER)
        [_ async for _ in wrap(bedrock_telemetry)(agent())]
        assert scopes(chat_spans(bedrock_telemetry)) == [OURS]
        operations = [(s, (s.attributes or {}).get("gen_ai.operation.name"))
                      for s in bedrock_telemetry.spans()]  # fmt: skip
        [embeddings] = [s for s, operation in operations if operation == "embeddings"]
        assert embeddings.instrumentation_scope is not None
        assert embeddings.instrumentation_scope.name != OURS
        assert input_tokens_counted(bedrock_telemetry) == 12 + 5  # ours once, the embeddings'
        bedrock_telemetry.clear()
        bedrock.converse(**BEDROCK_ASK)
    [theirs] = chat_spans(bedrock_telemetry)
    assert theirs.instrumentation_scope is not None
    assert theirs.instrumentation_scope.name != OURS

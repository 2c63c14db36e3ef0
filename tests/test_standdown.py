"""One chat span per model call with the real openai-v2 and OpenInference instrumentations on.

A contract agent calls the real OpenAI SDK over a mock transport (wrapped by the real httpx
instrumentation, so the HTTP client span is real too). While our chat span covers the call,
both provider instrumentations stand down: one chat span, tokens counted once on spans and
in ``gen_ai.client.token.usage``, and the HTTP span a child of our chat span. Outside our
chat spans, and with ``stand_down_providers=False``, they trace as before.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
openai_v2 = pytest.importorskip("opentelemetry.instrumentation.openai_v2")
oi_openai = pytest.importorskip("openinference.instrumentation.openai")
otel_httpx = pytest.importorskip("opentelemetry.instrumentation.httpx")

from opentelemetry import context as otel_context  # noqa: E402
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY  # noqa: E402
from opentelemetry.instrumentation.utils import (  # noqa: E402
    is_http_instrumentation_enabled,
    is_instrumentation_enabled,
)
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from agent_contract.protocol import (  # noqa: E402
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_contract.scope import framework_started, tool_scope  # noqa: E402
from agent_otel import configure  # noqa: E402
from agent_otel.standdown import inference_span  # noqa: E402
from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from leaving_a_task import own_adapter_leaving_a_task, run_then_end  # noqa: E402
from sources._conformance import GUARD, unpatch  # noqa: E402
from sources._trace import input_tokens_counted  # noqa: E402

MODEL = "gpt-4o-mini"
USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
# openai-v2 2.4b0 starts its spans through opentelemetry-util-genai's handler (that scope).
PROVIDER_SCOPES = {"opentelemetry.util.genai.handler", "openinference.instrumentation.openai"}
HTTP_SCOPE = "opentelemetry.instrumentation.httpx"


def _chunk(choices: list[Any], **extra: Any) -> str:
    body = {"id": "r1", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    return "data: " + json.dumps({**body, "choices": choices, **extra}) + "\n\n"


EMBEDDINGS = {
    "object": "list", "model": "text-embedding-3-small",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
    "usage": {"prompt_tokens": 5, "total_tokens": 5},
}  # fmt: skip


OTHER_ANSWERS = {
    "/moderations": {"id": "m1", "model": "omni-moderation-latest", "results": []},
    "/images/generations": {"created": 0, "data": [{"url": "http://mock.invalid/1.png"}]},
    "/input_tokens": {"object": "response.input_tokens", "input_tokens": 3},
}
"""The OpenAI API's answers (its reference's shapes) to requests that are no chat call."""


def _handler(request: Any) -> Any:
    if request.url.path.endswith("/embeddings"):
        return httpx2.Response(200, json=EMBEDDINGS)
    for path, answer in OTHER_ANSWERS.items():
        if request.url.path.endswith(path):
            return httpx2.Response(200, json=answer)
    payload = json.loads(request.content)
    if payload.get("stream"):
        text = "".join(
            [
                _chunk([{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]),
                _chunk([{"index": 0, "delta": {"content": " there"}, "finish_reason": None}]),
                _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
                _chunk([], usage=USAGE),
                "data: [DONE]\n\n",
            ]
        )
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=text)
    completion = {
        "id": "r1", "object": "chat.completion", "created": 0, "model": MODEL, "usage": USAGE,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "hi there"}}],
    }  # fmt: skip
    return httpx2.Response(200, json=completion)


class OpenAIAgent:
    """A contract agent over one OpenAI chat call (streaming or not)."""

    def __init__(self, api: Any, stream: bool) -> None:
        self.api, self.stream_call = api, stream

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        self.inside = inference_span()  # the agent's code before the call: not in a chat span
        yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
        kwargs: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
        if self.stream_call:
            chunks = await self.api.chat.completions.create(
                **kwargs, stream=True, stream_options={"include_usage": True}
            )
            usage = None
            async for chunk in chunks:
                usage = chunk.usage or usage
                if chunk.choices and chunk.choices[0].delta.content:
                    yield TextDelta(chunk.choices[0].delta.content)
        else:
            response = await self.api.chat.completions.create(**kwargs)
            usage = response.usage
            yield TextDelta(response.choices[0].message.content)
        yield Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")


@pytest.fixture(autouse=True)
def leaves_the_sdk_as_it_was() -> Iterator[None]:
    """Every wrapper the instrumentations here leave on the OpenAI SDK after their
    ``uninstrument()`` (OpenLLMetry's around openai-v2's guard, a guard around a wrapper a test
    put there), undone after each test: every later test's OpenAI client went through them,
    a synchronous client's stream read as an async one by openai-v2's wrapper."""
    yield
    unpatch("opentelemetry.instrumentation.openai", "opentelemetry.instrumentation.openai_v2",
            "openinference.instrumentation.openai", GUARD)  # fmt: skip


@pytest.fixture
def telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory providers with openai-v2 and OpenInference instrumented into them."""
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(openai_v2.OpenAIInstrumentor(), oi_openai.OpenAIInstrumentor()):
        yield telemetry
    telemetry.shutdown()


def api(telemetry: InMemoryTelemetry) -> Any:
    transport = otel_httpx.AsyncOpenTelemetryTransportHttpx2(
        httpx2.MockTransport(_handler), tracer_provider=telemetry.tracer_provider
    )
    http = httpx2.AsyncClient(transport=transport)
    return openai.AsyncOpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=http)


async def run(
    telemetry: InMemoryTelemetry,
    stream: bool,
    kind: type[OpenAIAgent] = OpenAIAgent,
    **options: Any,
) -> OpenAIAgent:
    agent = kind(api(telemetry), stream)
    wrap = telemetry.wrapper(**options)
    async for _ in wrap(agent.stream([])):
        pass
    return agent


def chat_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """Every span describing the model call: ours, openai-v2's and OpenInference's."""
    return [
        s for s in spans
        if s.instrumentation_scope is not None
        and (s.instrumentation_scope.name in PROVIDER_SCOPES
             or (s.attributes or {}).get("gen_ai.operation.name") == "chat")
    ]  # fmt: skip


def http_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [
        s for s in spans
        if s.instrumentation_scope is not None and s.instrumentation_scope.name == HTTP_SCOPE
    ]  # fmt: skip


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_one_chat_span_tokens_once_http_span_below_it(
    telemetry: InMemoryTelemetry, stream: bool
) -> None:
    agent = await run(telemetry, stream)
    spans = telemetry.spans()
    (chat,) = chat_spans(spans)
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == "agent_otel"
    assert dict(chat.attributes or {})["gen_ai.usage.input_tokens"] == 12
    (http,) = http_spans(spans)
    assert http.kind is SpanKind.CLIENT
    assert http.parent is not None and chat.context is not None
    assert http.parent.span_id == chat.context.span_id  # the HTTP span nests under our chat span
    assert input_tokens_counted(telemetry) == 12  # once, not once per instrumentation
    assert agent.inside is None


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_opt_out_keeps_every_instrumentations_span(
    telemetry: InMemoryTelemetry, stream: bool
) -> None:
    """What the stand-down prevents: with it off, three chat spans and tokens counted twice."""
    await run(telemetry, stream, stand_down_providers=False)
    spans = telemetry.spans()
    scopes = sorted(
        s.instrumentation_scope.name for s in chat_spans(spans) if s.instrumentation_scope
    )
    assert scopes == sorted(["agent_otel", *PROVIDER_SCOPES])
    assert input_tokens_counted(telemetry) == 24
    assert len(http_spans(spans)) == 1


async def test_calls_outside_our_chat_spans_are_traced_by_the_providers(
    telemetry: InMemoryTelemetry,
) -> None:
    await run(telemetry, True)  # the guard is in place now
    telemetry.clear()
    client = api(telemetry)
    await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    spans = telemetry.spans()
    scopes = {s.instrumentation_scope.name for s in chat_spans(spans) if s.instrumentation_scope}
    assert scopes == PROVIDER_SCOPES
    assert len(http_spans(spans)) == 1


async def test_openai_v2_uninstrument_still_restores_the_sdk(telemetry: InMemoryTelemetry) -> None:
    from openai.resources.chat.completions import AsyncCompletions, Completions

    original = Completions.create.__wrapped__
    await run(telemetry, False)
    assert Completions.create.__wrapped__ is original  # guarded: the same SDK method below
    openai_v2.OpenAIInstrumentor().uninstrument()
    assert Completions.create is original
    assert not hasattr(AsyncCompletions.create, "_self_wrapper")
    openai_v2.OpenAIInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    telemetry.clear()
    await run(telemetry, False)  # re-instrumented: guarded again at the next chat span
    assert len(chat_spans(telemetry.spans())) == 1


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_openai_v2_under_another_instrumentation_still_stands_down(stream: bool) -> None:
    """OpenLLMetry instrumented after openai-v2 wraps openai-v2's wrapper: the guard finds it
    inside, the call keeps one chat span and its tokens once; outside our spans openai-v2
    still traces."""
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(openai_v2.OpenAIInstrumentor(), _openllmetry()):
        await run(telemetry, stream)
        (chat,) = chat_spans(telemetry.spans())
        assert chat.instrumentation_scope is not None
        assert chat.instrumentation_scope.name == "agent_otel"
        assert input_tokens_counted(telemetry) == 12
        telemetry.clear()
        await api(telemetry).chat.completions.create(model=MODEL, messages=[])
        scopes = {
            s.instrumentation_scope.name
            for s in chat_spans(telemetry.spans())
            if s.instrumentation_scope
        }
        assert "opentelemetry.util.genai.handler" in scopes  # outside our spans: traced as before
    telemetry.shutdown()


class RawResponseAgent(OpenAIAgent):
    """Calls through ``with_raw_response`` (as LiteLLM does): the OpenAI SDK binds ``create``
    there once per client, at its first use."""

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
        raw = await self.api.chat.completions.with_raw_response.create(model=MODEL, messages=[])
        usage = raw.parse().usage
        yield Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")


@pytest.mark.parametrize("order", ["instrumented-first", "wrapper-first", "configure-first"])
async def test_openai_v2_stands_down_for_a_raw_response_client_used_before_our_first_run(
    order: str,
) -> None:
    """A client's ``with_raw_response`` used outside our runs before the first of them (a
    warm-up call, LiteLLM's client cache) kept openai-v2's unguarded wrapper, bound there
    for the client's life: the guard came at our first chat span, too late, and each call of
    our runs through it had a second chat span, its tokens counted twice. Now the guard is in
    place as ``configure()`` returns or the wrapper is made, or as openai-v2 instruments
    after them."""
    telemetry = InMemoryTelemetry()
    v2 = openai_v2.OpenAIInstrumentor()
    if order == "wrapper-first":
        wrap = telemetry.wrapper()
    with telemetry.instrumented(v2):
        if order == "instrumented-first":
            wrap = telemetry.wrapper()
        if order == "configure-first":  # an application's one call, at its start
            configure("app", console=False, set_global=False).shutdown()
        agent = RawResponseAgent(api(telemetry), False)
        await agent.api.chat.completions.with_raw_response.create(model=MODEL, messages=[])
        if order == "configure-first":
            wrap = telemetry.wrapper()
        assert input_tokens_counted(telemetry) == 12  # outside our runs: openai-v2 traces it
        telemetry.clear()
        async for _ in wrap(agent.stream([])):
            pass
        (chat,) = chat_spans(telemetry.spans())
        assert chat.instrumentation_scope is not None
        assert chat.instrumentation_scope.name == "agent_otel"
        assert input_tokens_counted(telemetry) == 24  # ours once, beside the call outside
    telemetry.shutdown()


async def test_openai_v2_instrumented_inside_our_chat_span_stands_down() -> None:
    """openai-v2 instrumented after our chat span started (no framework run, whose start
    hooks ``instrument()``) traced the call beside ours: its guard came at the next chat
    span. Now ``instrument()`` puts it in place as it instruments."""
    telemetry = InMemoryTelemetry()
    wrap = telemetry.wrapper()
    v2 = openai_v2.OpenAIInstrumentor()

    async def stream() -> AsyncIterator[Any]:
        client = api(telemetry)
        yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
        v2.instrument(tracer_provider=telemetry.tracer_provider,
                      meter_provider=telemetry.meter_provider)  # fmt: skip
        response = await client.chat.completions.create(model=MODEL, messages=[])
        yield Usage(input_tokens=response.usage.prompt_tokens, output_tokens=3)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

    try:
        async for _ in wrap(stream()):
            pass
    finally:
        v2.uninstrument()
    (chat,) = chat_spans(telemetry.spans())
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == "agent_otel"
    assert input_tokens_counted(telemetry) == 12
    telemetry.shutdown()


class EmbeddingAgent(OpenAIAgent):
    """Embeds the question inside its chat span, before the model call."""

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        async for event in super().stream(messages, config):
            yield event
            if type(event).__name__ == "LLMCallStart":  # now inside our chat span
                await self.api.embeddings.create(model="text-embedding-3-small", input="hi")


class SpawningAgent(OpenAIAgent):
    """Starts a task during its call that makes a model call of its own once the call ended
    (the task's context is a copy of the chat span's)."""

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        ended = asyncio.Event()

        async def later() -> None:
            await ended.wait()
            await self.api.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "later"}]
            )

        tasks = []
        async for event in super().stream(messages, config):
            yield event
            if type(event).__name__ == "LLMCallStart":
                tasks.append(asyncio.create_task(later()))
        ended.set()
        await tasks[0]


def _openllmetry() -> Any:
    module = pytest.importorskip("opentelemetry.instrumentation.openai")
    return module.OpenAIInstrumentor()


ONE_PROVIDER: dict[str, Callable[[], Any]] = {
    "openai-v2": lambda: openai_v2.OpenAIInstrumentor(),
    "openinference": lambda: oi_openai.OpenAIInstrumentor(),
    "openllmetry": _openllmetry,
}


@pytest.fixture(params=sorted(ONE_PROVIDER))
def one_provider(request: pytest.FixtureRequest) -> Iterator[InMemoryTelemetry]:
    """In-memory providers with one provider instrumentation instrumented into them."""
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(ONE_PROVIDER[request.param]()):
        yield telemetry
    telemetry.shutdown()


async def test_an_embeddings_call_inside_our_chat_span_is_traced_by_the_provider(
    one_provider: InMemoryTelemetry,
) -> None:
    """Our chat span describes the model call, not an embeddings request made meanwhile: the
    provider instrumentation still traces that one (its span, its tokens)."""
    await run(one_provider, False, EmbeddingAgent)
    spans = one_provider.spans()
    (chat,) = chat_spans([s for s in spans if "mbedding" not in s.name])
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == "agent_otel"
    theirs = [
        s.name for s in spans
        if s.instrumentation_scope is not None
        and s.instrumentation_scope.name not in {"agent_otel", HTTP_SCOPE}
    ]  # fmt: skip
    assert len(theirs) == 1 and "mbedding" in theirs[0], theirs  # the embeddings request only


async def test_a_task_the_call_spawned_is_traced_by_the_providers_once_the_call_ended(
    telemetry: InMemoryTelemetry,
) -> None:
    """The stand-down lasts as long as our chat span, not as long as a copy of its context."""
    await run(telemetry, False, SpawningAgent)
    scopes = sorted(
        s.instrumentation_scope.name
        for s in chat_spans(telemetry.spans())
        if s.instrumentation_scope is not None
    )
    assert scopes == sorted(["agent_otel", *PROVIDER_SCOPES])  # ours, and theirs of the task's


async def test_in_an_unsampled_run_too_a_task_the_call_spawned_is_counted_once_it_ended() -> None:
    """An unsampled chat span (the SDK's non-recording span) had no end the stand-down could
    see: it outlived the call, and the model call a task made after it ended stood down,
    its tokens never counted in ``gen_ai.client.token.usage``, while a sampled run counted
    them (its provider's metric): the metrics differed with the sampling. Now both count it."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    telemetry = InMemoryTelemetry(sampler=ALWAYS_OFF)
    with telemetry.instrumented(openai_v2.OpenAIInstrumentor()):
        await run(telemetry, False, SpawningAgent)
        assert telemetry.spans() == []  # unsampled: no span, ours or theirs
        assert input_tokens_counted(telemetry) == 24  # ours of the call, openai-v2's of the task's
    telemetry.shutdown()


def test_the_suppression_value_is_true_for_provider_instrumentations_only() -> None:
    from opentelemetry.trace import INVALID_SPAN

    from agent_otel.standdown import stand_down

    context = stand_down(otel_context.get_current(), INVALID_SPAN)
    token = otel_context.attach(context)
    try:
        asks = "result = bool(get_value(KEY))"
        for module, expected in (
            ("openinference.instrumentation.openai._request", True),
            ("opentelemetry.instrumentation.anthropic.wrapper", True),
            ("opentelemetry.instrumentation.httpx", False),
            ("myapp.tools", False),
        ):
            scope: dict[str, Any] = {"__name__": module, "get_value": otel_context.get_value,
                                     "KEY": _SUPPRESS_INSTRUMENTATION_KEY}  # fmt: skip
            exec(asks, scope)
            assert scope["result"] is expected, module
        # Logfire's helper (its _internal.utils, as in its source) asks for whoever calls it:
        # its LLM provider integration stands down, the rest of Logfire does not.
        keys = ["suppress_instrumentation", _SUPPRESS_INSTRUMENTATION_KEY]
        helper: dict[str, Any] = {
            "__name__": "logfire._internal.utils",
            "context": otel_context,
            "KEYS": keys,
        }
        exec(
            "def is_instrumentation_suppressed():\n"
            "    return any(context.get_value(key) for key in KEYS)",
            helper,
        )
        for module, expected in (
            ("logfire._internal.integrations.llm_providers.llm_provider", True),
            ("logfire._internal.main", False),
        ):
            scope = {"__name__": module, "asks": helper["is_instrumentation_suppressed"]}
            exec("result = asks()", scope)
            assert scope["result"] is expected, module
        # OTel's helpers ask on behalf of their caller: here, this test module (not a provider).
        assert is_instrumentation_enabled() and is_http_instrumentation_enabled()
        assert bool(otel_context.get_value("suppress_language_model_instrumentation")) is True
    finally:
        otel_context.detach(token)


@pytest.mark.parametrize("framework", [True, False], ids=["framework-run", "contract-agent"])
def test_an_ended_chat_span_releases_the_providers_unless_the_run_is_covered(
    telemetry: InMemoryTelemetry, framework: bool
) -> None:
    """A context made while our chat span was open, read after it ended (a task the call
    started): a provider traces its call, except in a framework run, where every model call
    is one of our chat spans (its next call may run in a task made in the last one's context)."""
    from agent_otel.standdown._context import chat_context, cover, covering, suppressed

    span = telemetry.tracer_provider.get_tracer("test").start_span("chat")
    span.end()
    base = otel_context.get_current()
    context = chat_context(suppressed(cover(base, lambda: True) if framework else base), span)
    token = otel_context.attach(context)
    try:
        scope: dict[str, Any] = {"__name__": "openinference.instrumentation.openai._request",
                                 "get_value": otel_context.get_value,
                                 "KEY": _SUPPRESS_INSTRUMENTATION_KEY}  # fmt: skip
        exec("result = bool(get_value(KEY))", scope)
        assert scope["result"] is framework
        assert covering() is framework  # the openai-v2 guard's question
        assert bool(otel_context.get_value("suppress_language_model_instrumentation")) is framework
    finally:
        otel_context.detach(token)


@pytest.mark.internal_errors
def test_a_frame_the_stand_down_cannot_read_never_fails_the_providers_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stand-down values are read inside another library's call (botocore's, before an
    AWS request): a frame of an unexpected shape (an unhashable operation name, a mapping
    whose ``get`` raises) makes them false, so that library records its span as it would
    anyway, and is reported once; nothing raises into the request."""
    from types import SimpleNamespace

    from opentelemetry.trace import INVALID_SPAN

    from agent_otel.standdown import stand_down

    class Raising(dict[str, Any]):
        def get(self, *args: Any) -> Any:
            raise RuntimeError("a mapping that cannot be read")

    bedrock = SimpleNamespace(meta=SimpleNamespace(service_model=SimpleNamespace(
        service_name="bedrock-runtime")))  # fmt: skip
    scope: dict[str, Any] = {"__name__": "opentelemetry.instrumentation.botocore",
                             "get_value": otel_context.get_value,
                             "KEY": _SUPPRESS_INSTRUMENTATION_KEY}  # fmt: skip
    exec(  # botocore instrumentation's own signature, as in its source
        "def _patched_api_call(self, original_func, instance, args, kwargs):\n"
        "    return bool(get_value(KEY))",
        scope,
    )
    token = otel_context.attach(stand_down(otel_context.get_current(), INVALID_SPAN))
    try:
        for args in ((["Converse"], {}), ("Converse", Raising(modelId="m"))):
            assert scope["_patched_api_call"](None, None, bedrock, args, {}) is False
        assert scope["_patched_api_call"](None, None, bedrock, ("Converse", {}), {}) is True
    finally:
        otel_context.detach(token)
    assert caplog.text.count("agent-otel internal error in stand-down") == 1


async def _own_framework_events(client: Any) -> AsyncIterator[Any]:
    """A framework adapter of the caller's own, doing what ``agent_contract.scope`` asks of
    one: it says it starts, then its framework makes the request in a task of its own, before
    the adapter hears of it and reports the call."""
    framework_started(__name__)
    request = asyncio.ensure_future(
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    )
    response = await request
    yield LLMCallStart(model=MODEL, provider="openai")
    yield TextDelta(response.choices[0].message.content)
    yield Usage(input_tokens=12, output_tokens=3)
    yield LLMCallEnd(model=MODEL, finish_reason="stop")


async def _passed_on(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for event in stream:
        yield event


async def _as_a_tools_work(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The caller's own router: its model call asks for a tool, whose work is the adapter's
    run, pulled inside that tool's scope, its events the run's."""
    yield LLMCallStart(model="router")
    yield ToolCall(id="t1", function=FunctionCall(name="research", arguments="{}"))
    yield LLMCallEnd(model="router", finish_reason="tool_calls")
    with tool_scope("t1", "research"):
        async for event in stream:
            yield event
    yield ToolResult(tool_call_id="t1", content="done")


SHAPES = {"wrapped": lambda s: s, "inside the caller's generator": _passed_on,
          "as a tool's work in the caller's generator": _as_a_tools_work}  # fmt: skip


async def _late_call(client: Any, run_ended: asyncio.Event) -> None:
    """A model call of a task the framework's run left running (a tool's fire-and-forget
    summary, a worker started at first use), made once the run has ended."""
    await run_ended.wait()
    later = [{"role": "user", "content": "later"}]
    await client.chat.completions.create(model=MODEL, messages=later)


def _own_adapter_leaving_a_task(
    client: Any, run_ended: asyncio.Event, left: list[asyncio.Task[None]]
) -> AsyncIterator[Any]:
    return own_adapter_leaving_a_task(__name__, _late_call(client, run_ended), left)


def _pydantic_ai_leaving_a_task(
    client: Any, run_ended: asyncio.Event, left: list[asyncio.Task[None]]
) -> AsyncIterator[Any]:
    """pydantic-ai's adapter (a shipped one: covered from the run's start) over its test model,
    whose tool starts a task that outlives the run."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.test import TestModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def remember(fact: str) -> str:
        """Remember a fact (summarised later, in the background)."""
        left.append(asyncio.create_task(_late_call(client, run_ended)))
        return "noted"

    agent = pydantic_ai.Agent(TestModel(), tools=[remember])
    return pydantic_ai_events(agent, "remember that it rains")


LEAVING_A_TASK = {"own-adapter": _own_adapter_leaving_a_task,
                  "pydantic-ai": _pydantic_ai_leaving_a_task}  # fmt: skip


@pytest.mark.parametrize("adapter", sorted(LEAVING_A_TASK))
async def test_a_model_call_after_a_framework_run_ended_is_traced_by_the_providers(
    telemetry: InMemoryTelemetry, adapter: str
) -> None:
    """A framework run's stand-down lasts as long as the run, not as long as a copy of its
    context: a task the framework started in the run (which copies the run's context) and
    that calls the model once the run has ended calls outside any run of ours. The providers
    stood down for it all the same, and no span of ours told it: the call went untraced and
    its tokens uncounted. Now openai-v2 and OpenInference trace it, as any call outside our
    runs."""
    run_ended, left = asyncio.Event(), []
    stream = LEAVING_A_TASK[adapter](api(telemetry), run_ended, left)
    await run_then_end(
        telemetry, telemetry.wrapper(agent_name="framework"), stream, run_ended, left
    )
    theirs = sorted(
        s.instrumentation_scope.name for s in telemetry.spans()
        if s.instrumentation_scope is not None and s.instrumentation_scope.name in PROVIDER_SCOPES
    )  # fmt: skip
    assert theirs == sorted([*PROVIDER_SCOPES] * len(left))  # each late call: both traced it
    points = telemetry.histograms().get("gen_ai.client.token.usage", [])
    counted_by_them = sum(
        int(getattr(p, "sum", 0)) for p in points
        if dict(p.attributes or {}).get("gen_ai.token.type") == "input"
        and dict(p.attributes or {}).get("gen_ai.request.model") == MODEL
    )  # fmt: skip
    assert counted_by_them == 12 * len(left)  # openai-v2's count of each late call


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_an_adapter_of_the_callers_own_that_says_it_starts_is_covered(
    telemetry: InMemoryTelemetry, shape: str
) -> None:
    """``agent_contract.scope.framework_started(__name__)`` is the documented hook for a
    framework adapter, but only the adapters shipped here were heard: one of the caller's own
    saying the same was ignored, so each request its framework made in a task of its own was
    traced by openai-v2 and OpenInference beside our chat span, its tokens counted three
    times. Now any adapter that says so covers the run it feeds, also pulled inside a tool's
    scope of the caller's stream (read as a tool body's before, not covered)."""
    stream = SHAPES[shape](_own_framework_events(api(telemetry)))
    async for _ in telemetry.wrapper(agent_name="own")(stream):
        pass
    scopes = {s.instrumentation_scope.name for s in chat_spans(telemetry.spans())
              if s.instrumentation_scope}  # fmt: skip
    assert scopes == {"agent_otel"}
    assert input_tokens_counted(telemetry) == 12
    assert len(http_spans(telemetry.spans())) == 1  # the HTTP span stays
    assert telemetry.open_spans() == []


class _ChangedWrapper:
    """openai-v2's wrapper of ``create`` as a later version might shape it: its own wrapper
    function where wrapt keeps it (``_self_wrapper``), but no ``__wrapped__``."""

    def __init__(self, theirs: Any) -> None:
        self._self_wrapper = theirs


@pytest.mark.internal_errors
@pytest.mark.parametrize("framework", [False, True], ids=["contract-agent", "framework-run"])
async def test_a_guard_that_cannot_read_its_instrumentation_loses_none_of_our_spans(
    telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    framework: bool,
) -> None:
    """A guard runs as each chat span (and each framework run) of ours starts: one that
    raised there, on an instrumentation of a shape it did not expect, lost every chat span
    of the run (a framework adapter's whole run). Now it is reported once, and the run is
    recorded whole."""
    from openai.resources.chat.completions import Completions

    from agent_otel import _guard

    monkeypatch.setattr(_guard, "_reported", set())
    from opentelemetry.instrumentation.openai_v2.patch import chat_completions_create_v_old

    unused: Any = None  # (never called)
    theirs = chat_completions_create_v_old(unused, unused, unused, False)  # openai-v2's own
    monkeypatch.setattr(Completions, "create", _ChangedWrapper(theirs))

    async def stream() -> AsyncIterator[Any]:
        if framework:
            framework_started(__name__)
        for call in ("c1", "c2"):
            yield LLMCallStart(model=MODEL, provider="openai", call_id=call)
            yield Usage(input_tokens=12, output_tokens=3)
            yield LLMCallEnd(call_id=call, model=MODEL, finish_reason="stop")

    async for _ in telemetry.wrapper()(stream()):
        pass
    names = sorted(s.name for s in telemetry.spans())
    assert names == ["chat gpt-4o-mini", "chat gpt-4o-mini", "invoke_agent", "step 0"]
    assert input_tokens_counted(telemetry) == 24  # ours of both calls
    assert caplog.text.count("agent-otel internal error in stand-down") == 1


REQUESTS: dict[str, Callable[[Any], Any]] = {
    "moderation": lambda api: api.moderations.create(input="hi"),
    "image": lambda api: api.images.generate(model="dall-e-3", prompt="a cat"),
    "token count": lambda api: api.responses.input_tokens.count(model=MODEL, input="hi"),
}
KEPT = {"moderation", "image"}
"""The requests that are no chat call, nor the bookkeeping of one: their spans stay."""


async def _their_spans_outside_and_in(
    request_kind: str, framework: bool
) -> tuple[list[str], list[str]]:
    """OpenInference's OpenAI spans of one ``request_kind`` request made outside our runs, and
    of the same request made in our chat span (or a framework run) beside the chat call."""
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(oi_openai.OpenAIInstrumentor()):
        client = api(telemetry)
        await REQUESTS[request_kind](client)
        outside = [s.name for s in telemetry.spans() if s.name != "POST"]
        telemetry.clear()

        async def stream() -> AsyncIterator[Any]:
            if framework:
                framework_started(__name__)
            yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
            await REQUESTS[request_kind](client)
            await client.chat.completions.create(model=MODEL, messages=[])
            yield Usage(input_tokens=12, output_tokens=3)
            yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

        async for _ in telemetry.wrapper()(stream()):
            pass
        inside = [
            s.name for s in telemetry.spans()
            if s.instrumentation_scope is not None
            and s.instrumentation_scope.name == "openinference.instrumentation.openai"
        ]  # fmt: skip
        assert input_tokens_counted(telemetry) == 12  # ours of the chat call, once
    telemetry.shutdown()
    return outside, inside


@pytest.mark.parametrize("request_kind", sorted(KEPT))
@pytest.mark.parametrize("framework", [False, True], ids=["contract-agent", "framework-run"])
async def test_requests_that_are_no_chat_call_keep_their_span_inside_ours(
    request_kind: str, framework: bool
) -> None:
    """OpenInference's OpenAI instrumentation traces every request the client sends: a
    moderation (a guardrail's) or an image made while our chat span was open, or anywhere in
    a framework adapter's run, stood down as if our chat span told it, and went untraced. Our
    chat span tells the chat call only: those keep their span, as outside."""
    outside, inside = await _their_spans_outside_and_in(request_kind, framework)
    assert len(outside) == 1  # OpenInference's span of it, outside our runs
    assert inside == outside  # that request's span; none of the chat call ours tells


@pytest.mark.parametrize("framework", [False, True], ids=["contract-agent", "framework-run"])
async def test_a_token_count_stands_down_with_the_call_it_counts_for(framework: bool) -> None:
    """A token count (``responses.input_tokens.count``; CrewAI counts before each call) is the
    bookkeeping of the call our chat span tells, not a request to show beside every step of a
    framework's run: it stands down inside our runs, and keeps its span outside them."""
    outside, inside = await _their_spans_outside_and_in("token count", framework)
    assert len(outside) == 1 and inside == []


THREADED = ("to_thread", "copied_context", "bare_executor")


@pytest.mark.parametrize("how", THREADED)
async def test_a_call_in_a_thread_stands_down_where_the_context_is_copied_into_it(
    telemetry: InMemoryTelemetry, how: str
) -> None:
    """A synchronous client called in a thread from inside our chat span: ``asyncio.to_thread``
    and a pool running ``contextvars.copy_context().run`` carry the chat span's context there,
    and both instrumentations stand down (one chat span, tokens once); a bare executor carries
    none, so they trace the call in a trace of their own and its tokens are counted again
    (docs/production.md says so)."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    http = httpx2.Client(transport=httpx2.MockTransport(_handler))
    client = openai.OpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=http)

    def call() -> Any:
        messages = [{"role": "user", "content": "hi"}]
        return client.chat.completions.create(model=MODEL, messages=messages)

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
        if how == "to_thread":
            response = await asyncio.to_thread(call)
        elif how == "copied_context":
            with ThreadPoolExecutor(1) as pool:
                response = pool.submit(contextvars.copy_context().run, call).result()
        else:
            response = await asyncio.get_running_loop().run_in_executor(None, call)
        usage = response.usage
        yield Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

    [_ async for _ in telemetry.wrapper()(agent())]
    spans = chat_spans(telemetry.spans())
    (ours,) = [
        s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == "agent_otel"
    ]
    theirs = [s for s in spans if s is not ours]
    if how != "bare_executor":
        assert theirs == []
        assert input_tokens_counted(telemetry) == 12
        return
    scopes = sorted(s.instrumentation_scope.name for s in theirs if s.instrumentation_scope)
    assert scopes == sorted(PROVIDER_SCOPES)
    assert ours.context is not None
    assert all(s.context and s.context.trace_id != ours.context.trace_id for s in theirs)
    assert input_tokens_counted(telemetry) == 24

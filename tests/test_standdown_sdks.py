"""Provider SDKs through OpenInference's and OpenLLMetry's instrumentations: one chat span per call.

Each SDK's real client answers from a mock transport (Google Gen AI's ``google-genai``,
Cohere's v2 client, Groq's, Mistral's, Anthropic's). Inside our chat span each instrumentation
stands down for a chat call (no span of theirs, tokens counted once in
``gen_ai.client.token.usage``, no metric of ours recorded by their scope), and with
``stand_down_providers=False`` theirs is back. A request our chat span does not tell (an
embeddings request, Cohere's ``rerank``) keeps whatever span the
instrumentation makes of it outside our runs, made inside our chat span too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")

from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage  # noqa: E402
from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from sources._trace import input_tokens_counted, ours_recorded_twice, theirs  # noqa: E402

INPUT, OUTPUT = 12, 3
Call = Callable[[Any], Awaitable[Any]]


async def _drain(answer: Any) -> None:
    async for _ in answer:
        pass


# Google Gen AI (google-genai): generateContent, streamGenerateContent, batchEmbedContents
GEMINI = "gemini-2.0-flash"
GEMINI_ANSWER = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": INPUT, "candidatesTokenCount": OUTPUT,
                                   "totalTokenCount": INPUT + OUTPUT},
                 "modelVersion": GEMINI}  # fmt: skip


def _gemini_answer(request: Any) -> Any:
    path = request.url.path
    if path.endswith((":batchEmbedContents", ":embedContent")):
        return httpx.Response(200, json={"embeddings": [{"values": [0.1, 0.2]}]})
    if path.endswith(":streamGenerateContent"):
        body = f"data: {json.dumps(GEMINI_ANSWER)}\n\n".encode()
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    return httpx.Response(200, json=GEMINI_ANSWER)


def _gemini_client() -> Any:
    genai = pytest.importorskip("google.genai")
    transport = httpx.MockTransport(_gemini_answer)
    options = genai.types.HttpOptions(
        httpx_async_client=httpx.AsyncClient(transport=transport),
        httpx_client=httpx.Client(transport=transport),
    )
    return genai.Client(api_key="test", http_options=options)


async def _gemini_chat(client: Any) -> None:
    await client.aio.models.generate_content(model=GEMINI, contents="hi")


async def _gemini_stream(client: Any) -> None:
    await _drain(await client.aio.models.generate_content_stream(model=GEMINI, contents="hi"))


async def _gemini_embed(client: Any) -> None:
    await client.aio.models.embed_content(model="text-embedding-004", contents="hi")


# Cohere's v2 client: chat, chat_stream, embed, rerank
COHERE = "command-r-plus"
COHERE_USAGE = {"billed_units": {"input_tokens": INPUT, "output_tokens": OUTPUT},
                "tokens": {"input_tokens": INPUT, "output_tokens": OUTPUT}}  # fmt: skip
COHERE_TEXT = [{"type": "text", "text": "hi"}]
COHERE_ANSWER = {"id": "r1", "finish_reason": "COMPLETE", "usage": COHERE_USAGE,
                 "message": {"role": "assistant", "content": COHERE_TEXT}}  # fmt: skip
COHERE_STREAM = [
    {"type": "message-start", "id": "r1", "delta": {"message": {"role": "assistant"}}},
    {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "hi"}}}},
    {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": COHERE_USAGE}},
]


def _cohere_answer(request: Any) -> Any:
    path = request.url.path
    if path.endswith("/embed"):
        embedded = {"id": "e1", "texts": ["hi"], "response_type": "embeddings_by_type",
                    "embeddings": {"float": [[0.1]]}}  # fmt: skip
        return httpx.Response(200, json=embedded)
    if path.endswith("/rerank"):
        return httpx.Response(200, json={"id": "k1", "results": [
            {"index": 0, "relevance_score": 0.9}]})  # fmt: skip
    if json.loads(request.content).get("stream"):
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in COHERE_STREAM)
        return httpx.Response(200, content=body.encode(),
                              headers={"content-type": "text/event-stream"})  # fmt: skip
    return httpx.Response(200, json=COHERE_ANSWER)


def _cohere_client() -> Any:
    cohere = pytest.importorskip("cohere")
    transport = httpx.MockTransport(_cohere_answer)
    return cohere.AsyncClientV2(api_key="test", base_url="http://mock.invalid",
                                httpx_client=httpx.AsyncClient(transport=transport))  # fmt: skip


async def _cohere_chat(client: Any) -> None:
    await client.chat(model=COHERE, messages=[{"role": "user", "content": "hi"}])


async def _cohere_stream(client: Any) -> None:
    await _drain(client.chat_stream(model=COHERE, messages=[{"role": "user", "content": "hi"}]))


async def _cohere_embed(client: Any) -> None:
    await client.embed(model="embed-english-v3.0", texts=["hi"], input_type="search_query",
                       embedding_types=["float"])  # fmt: skip


async def _cohere_rerank(client: Any) -> None:
    await client.rerank(model="rerank-english-v3.0", query="hi", documents=["a"])


# Groq's client (OpenAI's wire format): chat, streamed chat
GROQ = "llama-3.3-70b-versatile"
GROQ_USAGE = {"prompt_tokens": INPUT, "completion_tokens": OUTPUT,
              "total_tokens": INPUT + OUTPUT}  # fmt: skip
GROQ_ANSWER = {"id": "g1", "object": "chat.completion", "created": 0, "model": GROQ,
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "hi"}}],
               "usage": GROQ_USAGE}  # fmt: skip
GROQ_CHUNK = {"id": "g1", "object": "chat.completion.chunk", "created": 0, "model": GROQ,
              "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"},
                           "finish_reason": "stop"}],
              "x_groq": {"usage": GROQ_USAGE}, "usage": GROQ_USAGE}  # fmt: skip


def _openai_format_answer(answer: dict[str, Any], chunk: dict[str, Any]) -> Callable[[Any], Any]:
    def answered(request: Any) -> Any:
        if json.loads(request.content).get("stream"):
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=answer)

    return answered


def _groq_client() -> Any:
    groq = pytest.importorskip("groq")
    transport = httpx.MockTransport(_openai_format_answer(GROQ_ANSWER, GROQ_CHUNK))
    return groq.AsyncGroq(api_key="test", http_client=httpx.AsyncClient(transport=transport))


async def _groq_chat(client: Any) -> None:
    await client.chat.completions.create(model=GROQ, messages=[{"role": "user", "content": "hi"}])


async def _groq_stream(client: Any) -> None:
    await _drain(await client.chat.completions.create(
        model=GROQ, messages=[{"role": "user", "content": "hi"}], stream=True))  # fmt: skip


# Mistral's client (3.x, at mistralai.client): chat, streamed chat
MISTRAL = "mistral-small-latest"
MISTRAL_ANSWER = {**GROQ_ANSWER, "model": MISTRAL}
MISTRAL_CHUNK = {**GROQ_CHUNK, "model": MISTRAL}


def _mistral_client() -> Any:
    client = pytest.importorskip("mistralai.client")
    transport = httpx.MockTransport(_openai_format_answer(MISTRAL_ANSWER, MISTRAL_CHUNK))
    return client.Mistral(api_key="test", server_url="http://mock.invalid",
                          async_client=httpx.AsyncClient(transport=transport))  # fmt: skip


async def _mistral_chat(client: Any) -> None:
    await client.chat.complete_async(model=MISTRAL, messages=[{"role": "user", "content": "hi"}])


async def _mistral_stream(client: Any) -> None:
    await _drain(await client.chat.stream_async(
        model=MISTRAL, messages=[{"role": "user", "content": "hi"}]))  # fmt: skip


# Anthropic's client (on httpx2): messages.create, messages.stream()
CLAUDE = "claude-sonnet-4-5"
CLAUDE_ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": CLAUDE,
                 "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                 "stop_sequence": None,
                 "usage": {"input_tokens": INPUT, "output_tokens": OUTPUT}}  # fmt: skip
CLAUDE_STREAM = [
    ("message_start", {"type": "message_start", "message": {
        **CLAUDE_ANSWER, "content": [], "stop_reason": None,
        "usage": {"input_tokens": INPUT, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "hi"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "usage": {"output_tokens": OUTPUT},
                       "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
    ("message_stop", {"type": "message_stop"}),
]  # fmt: skip


def _claude_client() -> Any:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")

    def answer(request: Any) -> Any:
        if json.loads(request.content).get("stream"):
            body = "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in CLAUDE_STREAM)
            return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=CLAUDE_ANSWER)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return anthropic.AsyncAnthropic(api_key="t", base_url="http://mock.invalid", http_client=http)


CLAUDE_ASK = {"model": CLAUDE, "messages": [{"role": "user", "content": "hi"}]}


async def _claude_chat(client: Any) -> None:
    await client.messages.create(max_tokens=16, **CLAUDE_ASK)


async def _claude_stream(client: Any) -> None:
    async with client.messages.stream(max_tokens=16, **CLAUDE_ASK) as stream:
        await _drain(stream)


@dataclass(frozen=True)
class Sdk:
    name: str
    provider: str
    model: str
    client: Callable[[], Any]
    chats: dict[str, Call]
    """The model calls our chat span tells."""
    others: dict[str, Call] = field(default_factory=dict)
    """Requests it does not tell: embeddings, reranking."""
    instrumentations: tuple[tuple[str, str, str], ...] = ()
    """(name, module, instrumentor class)."""
    untraced: tuple[tuple[str, str], ...] = ()
    """(instrumentation, request) of ``others`` the instrumentation does not trace at all."""
    classes: tuple[tuple[str, str], ...] = ()
    """(module, class) the instrumentations wrap: an uninstrument can leave an attribute of its
    own there (OpenLLMetry's Cohere one sets the base class's method on ``AsyncClientV2``,
    hiding OpenInference's wrapper on the base class), removed after each test."""


SDKS = [
    Sdk("google-genai", "gcp.gemini", GEMINI, _gemini_client,
        {"chat": _gemini_chat, "stream": _gemini_stream}, {"embed": _gemini_embed},
        (("openinference", "openinference.instrumentation.google_genai", "GoogleGenAIInstrumentor"),
         ("openllmetry", "opentelemetry.instrumentation.google_generativeai",
          "GoogleGenerativeAiInstrumentor")),
        untraced=(("openllmetry", "embed"),)),
    Sdk("cohere", "cohere", COHERE, _cohere_client,
        {"chat": _cohere_chat, "stream": _cohere_stream},
        {"embed": _cohere_embed, "rerank": _cohere_rerank},
        (("openinference", "openinference.instrumentation.cohere", "CohereInstrumentor"),
         ("openllmetry", "opentelemetry.instrumentation.cohere", "CohereInstrumentor")),
        classes=(("cohere.client_v2", "AsyncClientV2"), ("cohere.client_v2", "ClientV2"))),
    Sdk("groq", "groq", GROQ, _groq_client, {"chat": _groq_chat, "stream": _groq_stream},
        instrumentations=(
            ("openinference", "openinference.instrumentation.groq", "GroqInstrumentor"),
            ("openllmetry", "opentelemetry.instrumentation.groq", "GroqInstrumentor"))),
    Sdk("anthropic", "anthropic", CLAUDE, _claude_client,
        {"chat": _claude_chat, "stream": _claude_stream},
        (("openinference", "openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
         ("openllmetry", "opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"))),
    # OpenLLMetry's Mistral instrumentation (0.62.4) wraps mistralai.chat, which mistralai 3.x
    # moved to mistralai.client.chat: it instruments nothing there
    Sdk("mistralai", "mistral_ai", MISTRAL, _mistral_client,
        {"chat": _mistral_chat, "stream": _mistral_stream},
        instrumentations=(("openinference", "openinference.instrumentation.mistralai",
                           "MistralAIInstrumentor"),)),
]  # fmt: skip
PAIRS = [(sdk, inst) for sdk in SDKS for inst in sdk.instrumentations]
CHATS = [pytest.param(sdk, inst, name, id=f"{sdk.name}-{inst[0]}-{name}")
         for sdk, inst in PAIRS for name in sdk.chats]  # fmt: skip
OTHERS = [pytest.param(sdk, inst, name, id=f"{sdk.name}-{inst[0]}-{name}")
          for sdk, inst in PAIRS for name in sdk.others
          if (inst[0], name) not in sdk.untraced]  # fmt: skip


@pytest.fixture
def telemetry(request: pytest.FixtureRequest) -> Iterator[InMemoryTelemetry]:
    import importlib

    sdk: Sdk = request.getfixturevalue("sdk")
    kept = {}
    for module, name in sdk.classes:
        cls = getattr(importlib.import_module(module), name)
        kept[cls] = set(vars(cls))
    telemetry = InMemoryTelemetry()
    yield telemetry
    telemetry.shutdown()
    for cls, names in kept.items():
        for name in set(vars(cls)) - names:
            delattr(cls, name)


def _instrumentor(instrumentation: tuple[str, str, str]) -> Any:
    _, module, name = instrumentation
    return getattr(pytest.importorskip(module), name)()


async def _run(telemetry: InMemoryTelemetry, sdk: Sdk, call: Call, **options: Any) -> None:
    client = sdk.client()

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=sdk.model, provider=sdk.provider, call_id="c1")
        await call(client)
        yield Usage(input_tokens=INPUT, output_tokens=OUTPUT)
        yield LLMCallEnd(call_id="c1", model=sdk.model, finish_reason="stop")

    async for _ in telemetry.wrapper(**options)(agent()):
        pass


@pytest.mark.parametrize(("sdk", "instrumentation", "call"), CHATS)
async def test_provider_chat_calls_stand_down_in_our_chat_span(
    telemetry: InMemoryTelemetry, sdk: Sdk, instrumentation: tuple[str, str, str], call: str
) -> None:
    with telemetry.instrumented(_instrumentor(instrumentation)):
        await _run(telemetry, sdk, sdk.chats[call])
        assert theirs(telemetry) == []
        assert input_tokens_counted(telemetry) == INPUT
        assert ours_recorded_twice(telemetry) == set()
        assert [sp.name for sp in telemetry.spans() if sp.name.startswith("chat")] == [
            f"chat {sdk.model}"
        ]
        telemetry.clear()
        await _run(telemetry, sdk, sdk.chats[call], stand_down_providers=False)
        assert len(theirs(telemetry)) == 1  # theirs is back: it was active


@pytest.mark.parametrize(("sdk", "instrumentation", "call"), OTHERS)
async def test_provider_requests_our_chat_span_does_not_tell_keep_their_span(
    telemetry: InMemoryTelemetry, sdk: Sdk, instrumentation: tuple[str, str, str], call: str
) -> None:
    """Where the instrumentation traces the request at all (outside our runs), it does so
    inside our chat span too."""
    with telemetry.instrumented(_instrumentor(instrumentation)):
        await sdk.others[call](sdk.client())
        outside = theirs(telemetry)
        assert outside  # it traces the request outside our runs
        telemetry.clear()
        await _run(telemetry, sdk, sdk.others[call])
        assert theirs(telemetry) == outside


class _Embeddings:
    def create(self) -> None: ...


class _Chat:
    def complete(self) -> None: ...


class _Client:
    def rerank(self) -> None: ...


@pytest.mark.parametrize(
    ("wrapper", "told"),
    [  # OpenLLMetry's wrappers get the entry they wrap as ``to_wrap`` (Mistral's, Cohere's)
     ({"to_wrap": {"method": "create", "module": "embeddings"}}, False),
     ({"to_wrap": {"method": "create", "object": "AsyncEmbeddings"}}, False),
     ({"to_wrap": {"method": "complete", "module": "chat"}}, True),
     ({"to_wrap": {"method": "rerank", "object": "ClientV2"}}, False),
     # OpenInference's get the method itself as wrapt's ``wrapped``
     ({"wrapped": _Embeddings.create}, False), ({"wrapped": _Chat.complete}, True),
     ({"wrapped": _Client.rerank}, False), ({"wrapped": object()}, True)],
)  # fmt: skip
def test_the_wrapped_methods_name_or_owner_says_whether_our_chat_span_tells_the_request(
    wrapper: dict[str, Any], told: bool
) -> None:
    """Where nothing on the asking stack names the request (the instrumentation wraps the SDK
    method itself, which has not run yet), the method it wraps, or its class or module, does:
    an embeddings or reranking request keeps their span inside our chat span."""
    from opentelemetry import context as otel_context
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
    from opentelemetry.trace import INVALID_SPAN

    from agent_otel.standdown import stand_down

    scope: dict[str, Any] = {"__name__": "opentelemetry.instrumentation.mistralai",
                             "get_value": otel_context.get_value,
                             "KEY": _SUPPRESS_INSTRUMENTATION_KEY}  # fmt: skip
    exec("def _wrap(to_wrap=None, wrapped=None):\n    return bool(get_value(KEY))", scope)
    token = otel_context.attach(stand_down(otel_context.get_current(), INVALID_SPAN))
    try:
        assert scope["_wrap"](**wrapper) is told
    finally:
        otel_context.detach(token)

"""The context a chat span of ours is current in: provider instrumentations stand down there.

Read in their sources (the versions in the ``bench`` extra):

- OpenInference (``openinference-instrumentation-openai`` 0.1.66 and its base package) reads
  only OTel's general ``_SUPPRESS_INSTRUMENTATION_KEY``, before each request and in its tracer.
- OpenLLMetry's instrumentations also read a key of their own for model calls,
  ``"suppress_language_model_instrumentation"``.
- Logfire's ``instrument_openai()`` / ``instrument_anthropic()`` (its ``llm_providers``) read
  the general key before each request, through ``is_instrumentation_suppressed()`` in its
  ``_internal.utils`` (which the rest of Logfire asks too: only its provider module stands
  down, a user's ``logfire.info()`` inside the call is still recorded).
- ``opentelemetry-instrumentation-openai-v2`` 2.4b0 reads no context key at all (see
  :mod:`._openai_v2`).
- Every package on ``opentelemetry-util-genai`` 1.3b0's handler (the official
  ``opentelemetry-instrumentation-genai-*``) reads the handler's inference key (see
  :mod:`._util_genai`).

- ``opentelemetry-instrumentation-botocore`` 0.66b2 reads the general key before every AWS call
  (``is_instrumentation_enabled()``); its Bedrock Runtime extension makes a chat span with
  token metrics of ``Converse``, ``ConverseStream``, ``InvokeModel`` and
  ``InvokeModelWithResponseStream``, and every other call (S3, DynamoDB, ...) is an RPC span.

The general key also stops HTTP instrumentations (``is_http_instrumentation_enabled()``), which
must go on tracing the request under our chat span. So its value here is
:data:`PROVIDERS_ONLY`, which is true only when a GenAI provider instrumentation asks about a
model call our chat span describes; the model-call key's is :data:`MODEL_CALLS`, true for
whoever asks about such a call. Not such a call (:func:`_covers`): an embeddings request
(something on the asking stack is an embeddings module: the SDK's, the instrumentation's
embeddings wrapper, a framework's embedding model; or a function named as an embeddings
API, or the method an instrumentation wraps named as one: wrapt's ``wrapped``, as
OpenInference's Google Gen AI and Cohere wrappers get it), a reranking request (Cohere's
``rerank``), a request through a part of the
OpenAI or Anthropic SDK that makes no chat call (a moderation, an image, a file:
:data:`_OTHER_APIS`), an AWS call other than those four Bedrock Runtime operations, a Bedrock
request to an embedding model (its ``modelId``), a client being made (a boto session on the
asking stack: OpenInference's and OpenLLMetry's Bedrock instrumentations instrument each
client as it is made, asking the key), and any request once our chat span has ended (a task
the call spawned, still running after it).
:data:`INFERENCE_SPAN` holds our chat span itself, the context key the GenAI conventions are
discussing for this (semantic-conventions-genai #475).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from time import time_ns
from types import FrameType

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.context.context import Context
from opentelemetry.trace import NonRecordingSpan, Span

from agent_otel._guard import report

from ._cover import RunCover
from ._util_genai import covered

INFERENCE_SPAN = otel_context.create_key("agent_otel.inference_span")
COVERED = otel_context.create_key("agent_otel.model_calls_covered")
"""In a framework run's context, a :class:`~._cover.RunCover`, true while that run is open:
every model call the framework makes is one of our chat spans, though the framework starts it
in a task of its own before its chat span opens. A task of the run still calling once the run
has ended calls outside our runs."""
TOOL_BODY = otel_context.create_key("agent_otel.tool_body")
"""In a framework run's tool body, what tells whether a run of ours started there is open
(:func:`tool_body`)."""
LANGUAGE_MODEL_KEY = "suppress_language_model_instrumentation"
_PLAIN_KEY = "suppress_instrumentation"  # the general key's older spelling, still set and read
MODEL_CALL_MODULES = (
    "openinference.instrumentation.openai",
    "openinference.instrumentation.anthropic",
    "openinference.instrumentation.google_genai",
    "openinference.instrumentation.vertexai",
    "openinference.instrumentation.mistralai",
    "openinference.instrumentation.groq",
    "openinference.instrumentation.bedrock",
    "openinference.instrumentation.litellm",
    "opentelemetry.instrumentation.openai",
    "opentelemetry.instrumentation.openai_v2",
    "opentelemetry.instrumentation.anthropic",
    "opentelemetry.instrumentation.google_genai",
    "opentelemetry.instrumentation.vertexai",
    "opentelemetry.instrumentation.mistralai",
    "opentelemetry.instrumentation.groq",
    "opentelemetry.instrumentation.cohere",
    "opentelemetry.instrumentation.bedrock",
    "opentelemetry.instrumentation.ollama",
    "opentelemetry.instrumentation.botocore",
    "opentelemetry.instrumentation.litellm",
    "opentelemetry.instrumentation.together",
    "opentelemetry.instrumentation.replicate",
    "opentelemetry.instrumentation.sagemaker",
    "opentelemetry.instrumentation.watsonx",
    "opentelemetry.instrumentation.transformers",
    "opentelemetry.instrumentation.google_generativeai",
    "opentelemetry.instrumentation.alephalpha",
    "opentelemetry.instrumentation.writer",
    "logfire._internal.integrations.llm_providers",
)
"""The instrumentations of a provider's SDK (each module, or a module inside it), on the
asking stack: the request is a model call through that SDK, which a tool body may make itself
(:func:`own_call`). A framework's instrumentation (OpenInference's LangChain one, a tool span
of theirs) is none of them: our spans tell what it records, in a tool body too."""
FRAMEWORK_MODULES = (
    "opentelemetry.instrumentation.langchain",
    "opentelemetry.instrumentation.llamaindex",
    "opentelemetry.instrumentation.agno",
    "opentelemetry.instrumentation.crewai",
    "opentelemetry.instrumentation.haystack",
    "opentelemetry.instrumentation.openai_agents",
)
"""OpenLLMetry's framework instrumentations (0.62.4): each reads the general key before every
span it starts (LangChain's callback handler, Agno's, CrewAI's, ...), and each tells the model
calls, agent runs and tool calls our spans tell."""
PROVIDER_MODULES = (
    "openinference.instrumentation",  # every OpenInference one, its framework ones too
    *(m for m in MODEL_CALL_MODULES if not m.startswith("openinference.")),
    *FRAMEWORK_MODULES,
)
"""Modules whose check of the general suppression key sees True inside our chat span (for a
model call it describes, :func:`_covers`): the GenAI instrumentations that read it. In a
framework run (:func:`cover`) a framework instrumentation among them records nothing, its
chain and task spans included, as it reads the one key for every span it starts."""
_HELPERS = (
    "opentelemetry.instrumentation.utils",
    "opentelemetry.context",
    "logfire._internal.utils",
)
BROKEN_WHEN_SUPPRESSED = ("openinference.instrumentation.agno._runs_wrapper",)
"""Askers among :data:`PROVIDER_MODULES` whose suppressed path breaks the call it wraps:
answered False, their spans stand down at their tracer instead (:mod:`._native`)."""
_EMBEDDINGS = ".embedding"
"""In the name of a module on the asking stack: the request is an embeddings one
(``openai.resources.embeddings``, OpenLLMetry's ``shared.embeddings_wrappers``, LangChain's
and LlamaIndex's ``embeddings`` packages)."""
_EMBEDDING_CALLS = frozenset({"embed", "aembed", "embedding", "aembedding", "embeddings",
                              "aembeddings", "embed_content"})  # fmt: skip
_EMBEDDING_CALL_PARTS = (("embed_", "aembed_", "_embed", "_aembed"), ("_embedding", "_embeddings"))
"""On the asking stack, a function named as an embeddings API (its name, or its name's start or
end): an SDK whose instrumentation wraps its generic request method, as OpenLLMetry's Ollama
instrumentation wraps ``Client._request`` under ``Client.embeddings``, with no embeddings
module in between (Ollama's ``embed``/``embeddings``, Cohere's ``embed``, Google Gen AI's
``embed_content``, LiteLLM's ``embedding``, LangChain's ``embed_query``, LlamaIndex's
``get_text_embedding``)."""
_EMBED = "embed"
"""In the name of the class or module whose method an instrumentation wraps: an embeddings
API's (``Embeddings.create``, whose method's name says nothing)."""
_OTHER_REQUESTS = frozenset({"rerank", "arerank"})
"""The method an instrumentation wraps, named as a request that is no model call our chat span
tells, though no embeddings API: reranking (Cohere's ``rerank``, LiteLLM's ``arerank``). Read
only as the wrapped method's name, never as a frame's on the asking stack: a reranker of the
agent's own that makes a chat call is a chat call. Counting a prompt's tokens (Anthropic's
``messages.count_tokens``, OpenAI's ``responses.input_tokens.count``) is not here: it is the
bookkeeping of the call our span tells (CrewAI counts before each call), and its span beside
every step changed the tree of each such run."""
_OTHER_APIS = (
    "openai.resources.moderations",
    "openai.resources.images",
    "openai.resources.audio",
    "openai.resources.files",
    "openai.resources.models",
    "openai.resources.batches",
    "openai.resources.uploads",
    "openai.resources.vector_stores",
    "openai.resources.fine_tuning",
    "openai.resources.videos",
    "openai.resources.containers",
    "openai.resources.evals",
    "openai.resources.conversations",
    "openai.resources.responses.input_items",
    "anthropic.resources.models",
    "anthropic.resources.files",
    "anthropic.resources.messages.batches",
    "anthropic.resources.beta.models",
    "anthropic.resources.beta.files",
    "anthropic.resources.beta.messages.batches",
)
"""On the asking stack: a module of the OpenAI or Anthropic SDK's API for a request that is no
model call our chat span tells (a moderation, an image, speech, a file, the model list, a
batch; not a paginated listing, which the client's pager fetches, outside the
API's module). OpenInference's OpenAI instrumentation traces every request the client
sends (it wraps the client's generic ``request``): answered True there, a moderation a
guardrail made during our chat span, or anywhere in a framework run, went untraced."""
_CONSTRUCTING = ("boto3.session", "botocore.session", "aiobotocore.session", "aioboto3.session")
"""On the asking stack: a client is being made, not a model call. OpenInference's and
OpenLLMetry's Bedrock instrumentations instrument each Bedrock Runtime client as it is made
(``create_client``), asking the general key first: answered True there, a client a framework
made inside our run (lazily, at its first model call) was never instrumented, and every call
through it outside our runs went untraced."""
_MODEL_ID = "modelId"
"""Bedrock's request parameter naming the model: an embedding model's id holds ``embed``."""
_CALLERS_READ = 16
"""How far above the asking frame an embeddings module is looked for: the SDK method is a few
frames up where the instrumentation wraps the client's generic request method."""
_BOTOCORE = "opentelemetry.instrumentation.botocore"
_BEDROCK_MODEL_CALLS = frozenset(
    {"Converse", "ConverseStream", "InvokeModel", "InvokeModelWithResponseStream"}
)


def _ended(span: object) -> bool:
    """Whether our chat span has ended: an SDK span's ``end_time``, an unsampled one's
    (:class:`UnsampledChat`)."""
    return getattr(span, "end_time", None) is not None


class UnsampledChat(NonRecordingSpan):
    """An unsampled chat span of ours, which knows when it ended, as an SDK span does.

    The SDK's non-recording span (and the API's invalid one, shared by every span a failing
    or absent tracer starts) has no end: the stand-down would outlive the call in an
    unsampled run, and a model call a task made after it ended stood down there, its tokens
    never counted in ``gen_ai.client.token.usage``, while a sampled run's were: the metrics
    differed with the sampling. One per unsampled chat span, so only that call is ended."""

    __slots__ = ("end_time",)

    def __init__(self, span: Span) -> None:
        super().__init__(span.get_span_context())
        self.end_time: int | None = None

    def end(self, end_time: int | None = None) -> None:
        self.end_time = end_time if end_time is not None else time_ns()


def unsampled_chat(span: Span) -> Span:
    """``span``, a chat span of ours that does not record, as an :class:`UnsampledChat` when it
    is the API's plain non-recording span (nothing to end); any other span, one whose
    ``is_recording()`` failed included, is kept: it is ended as it is."""
    return UnsampledChat(span) if type(span) is NonRecordingSpan else span


def covering(context: Context | None = None) -> bool:
    """Whether a model call made in ``context`` (default: the current one) is covered by one of
    our chat spans: one still open there, or a framework run's still open (:data:`COVERED`: a
    framework's task made in a chat span's context runs its next call after that span
    ended)."""
    span = otel_context.get_value(INFERENCE_SPAN, context)
    if span is not None and not _ended(span):
        return True
    return bool(otel_context.get_value(COVERED, context))


def told_call(made_at: int | None = None) -> bool:
    """Whether a model call logged now, after it ended, from the context it was made in (a
    callback's), at ``made_at`` (ns), is one our chat span told: that span is in the context,
    ended or not, or a framework run's :data:`COVERED` is, unless the call is a tool body's own
    (:func:`own_call`: no chat span of ours tells it)."""
    if otel_context.get_value(INFERENCE_SPAN) is not None:
        return True
    if otel_context.get_value(COVERED) is None:
        return False
    # made in the run (logged after its end too), at ``made_at`` (unknown: no later than now)
    return not own_call(made_at=made_at if made_at is not None else time_ns())


def _asker(frame: FrameType | None) -> FrameType | None:
    """The first frame from ``frame`` up that is not one of OTel's or Logfire's helpers."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not isinstance(name, str) or not name.startswith(_HELPERS):
            return frame
        frame = frame.f_back
    return None


def _covers(asker: FrameType) -> bool:
    """Whether the request ``asker`` (the instrumentation's frame reading the key) is about is
    a model call our chat span describes, so the instrumentation should stand down."""
    if not covering():
        return False  # our chat span has ended: a task it spawned calls on its own
    if asker.f_globals.get("__name__") == _BOTOCORE:
        return _bedrock_model_call(asker) and not own_call()
    sdk = False  # a provider SDK's instrumentation is on the asking stack
    frame: FrameType | None = asker
    for _ in range(_CALLERS_READ):
        if frame is None:
            break
        name = frame.f_globals.get("__name__", "")
        if not isinstance(name, str):
            name = ""
        if _EMBEDDINGS in name or name.startswith(_CONSTRUCTING) or name.startswith(_OTHER_APIS):
            return False
        if _embedding_call(frame.f_code.co_name):
            return False
        if name.startswith(PROVIDER_MODULES) and _embedding_request(frame.f_locals):
            return False
        sdk = sdk or _model_call_module(name)
        frame = frame.f_back
    return not (sdk and own_call())


def _model_call_module(name: str) -> bool:
    """Whether module ``name`` is one of :data:`MODEL_CALL_MODULES` or inside one."""
    return any(name == m or name.startswith(f"{m}.") for m in MODEL_CALL_MODULES)


def _embedding_request(local: dict[str, object]) -> bool:
    """Whether an instrumentation's wrapper (its locals) is about a request our chat span does
    not tell: the method it wraps is named as an embeddings API or is one of
    :data:`_OTHER_REQUESTS` (OpenLLMetry's ``to_wrap["method"]``: LiteLLM's ``aembedding``,
    Ollama's, Cohere's ``embed`` and ``rerank``; else wrapt's ``wrapped`` itself, as
    OpenInference's wrappers get it: Google Gen AI's ``embed_content``, Cohere's ``embed`` and
    ``rerank``), or the class or module it belongs to is an embeddings API's
    (``to_wrap``'s ``object`` or ``module``, ``wrapped``'s qualified name: Mistral's
    ``Embeddings.create``), or its Bedrock ``kwargs`` name an embedding model."""
    to_wrap = local.get("to_wrap")
    owners: tuple[object, ...]
    if isinstance(to_wrap, dict):
        method, owners = to_wrap.get("method"), (to_wrap.get("object"), to_wrap.get("module"))
    else:
        owner, _, method = str(getattr(local.get("wrapped"), "__qualname__", "")).rpartition(".")
        owners = (owner,)
    if isinstance(method, str) and (_embedding_call(method) or method in _OTHER_REQUESTS):
        return True
    if any(isinstance(name, str) and _EMBED in name.lower() for name in owners):
        return True  # Mistral's Embeddings.create, as OpenLLMetry's to_wrap names it
    return _embedding_model(local.get("kwargs"))


def _embedding_call(name: str) -> bool:
    starts, ends = _EMBEDDING_CALL_PARTS
    return name in _EMBEDDING_CALLS or name.startswith(starts) or name.endswith(ends)


def _embedding_model(kwargs: object) -> bool:
    """Whether a wrapper's ``kwargs`` are a Bedrock request to an embedding model (OpenInference's
    and OpenLLMetry's Bedrock instrumentations wrap ``invoke_model`` itself: no embeddings module
    is on their stack)."""
    model = kwargs.get(_MODEL_ID) if isinstance(kwargs, dict) else None
    return isinstance(model, str) and _EMBED in model.lower()


def _bedrock_model_call(asker: FrameType) -> bool:
    """Whether botocore's ``_patched_api_call(self, original_func, instance, args, kwargs)``
    is calling one of Bedrock Runtime's model operations (not an embedding model's): every
    other AWS call stays its RPC span, as HTTP spans stay. A shape not recognised: theirs stays."""
    local = asker.f_locals
    instance, args = local.get("instance"), local.get("args")
    meta = getattr(getattr(instance, "meta", None), "service_model", None)
    if getattr(meta, "service_name", None) != "bedrock-runtime":
        return False
    if not isinstance(args, tuple) or len(args) < 2 or args[0] not in _BEDROCK_MODEL_CALLS:
        return False
    return not _embedding_model(args[1])


class _ProvidersOnly:
    """Truthy for the GenAI provider instrumentations that ask about a model call our chat span
    describes (:func:`_covers`), falsy for everyone else.

    The asker is the first caller outside OTel's own helpers (``is_instrumentation_enabled``,
    ``get_value``), found by walking up the stack: only when something reads the key, once per
    request or span, never per event.
    """

    __slots__ = ()

    def __bool__(self) -> bool:
        try:  # asked inside another library's call: nothing may raise there
            asker = _asker(sys._getframe(1))
            if asker is None:
                return False
            name = asker.f_globals.get("__name__", "")
            if not isinstance(name, str) or not name.startswith(PROVIDER_MODULES):
                return False
            return name not in BROKEN_WHEN_SUPPRESSED and _covers(asker)
        except Exception:
            report("stand-down")
            return False  # theirs is recorded: a second span, not a failed request

    def __repr__(self) -> str:
        return "<agent-otel: providers stand down>"


class _ModelCalls:
    """The model-call key's value: truthy for whoever asks about a model call our chat span
    describes (:func:`_covers`). Only GenAI instrumentations read that key."""

    __slots__ = ()

    def __bool__(self) -> bool:
        try:  # asked inside another library's call: nothing may raise there
            asker = _asker(sys._getframe(1))
            return asker is not None and _covers(asker)
        except Exception:
            report("stand-down")
            return False

    def __repr__(self) -> str:
        return "<agent-otel: model calls stand down>"


PROVIDERS_ONLY = _ProvidersOnly()
MODEL_CALLS = _ModelCalls()


def suppressed_here(context: Context) -> bool:
    """Whether the caller turned instrumentation off in ``context`` (OTel's
    ``suppress_instrumentation()``, as an exporter or an evaluator that runs an agent does):
    a run there is not recorded, as no OTel instrumentation records there. Our own chat
    span's value (:data:`PROVIDERS_ONLY`, for provider instrumentations) is not the caller's."""
    value = otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY, context)
    if value is not None and value is not PROVIDERS_ONLY and bool(value):
        return True
    return bool(otel_context.get_value(_PLAIN_KEY, context))  # OTel reads it too


def stand_down(context: Context, span: Span) -> Context:
    """``context`` where ``span`` (our chat span) covers the model call."""
    return otel_context.set_value(INFERENCE_SPAN, span, _providers_stand_down(context))


def suppressed(context: Context) -> Context:
    """``context`` with the two suppression keys set, for :func:`chat_context`: a run builds
    it once, not once per call (figure 2: two context copies per call)."""
    context = otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, PROVIDERS_ONLY, context)
    return otel_context.set_value(LANGUAGE_MODEL_KEY, MODEL_CALLS, context)


def chat_context(suppressing: Context, span: Span) -> Context:
    """``span`` (our chat span) current over ``suppressing`` (:func:`suppressed`), covering the
    model call: what :func:`stand_down` over ``span``'s context gives (util-genai's key is
    made per call, as its handler expects a fresh one)."""
    context = covered(trace.set_span_in_context(span, suppressing))
    return otel_context.set_value(INFERENCE_SPAN, span, context)


def cover(context: Context, still_open: Callable[[], bool]) -> Context:
    """``context`` where the model calls a framework starts are covered by our chat spans,
    though none is current yet, as long as ``still_open()`` says the run is: providers stand
    down (:data:`COVERED`)."""
    return otel_context.set_value(COVERED, RunCover(still_open), _providers_stand_down(context))


def uncovered(context: Context) -> Context:
    """``context`` where no model call is ours to tell: neither a chat span of ours nor a
    framework run covers it, so the providers trace what is called there (a callback an MCP
    server's request runs in a tool body's context: its model call is no framework's, and no
    chat span of ours tells it)."""
    return otel_context.set_value(
        INFERENCE_SPAN, None, otel_context.set_value(COVERED, None, context)
    )


def tool_body(context: Context, nested: Callable[[int | None, Context | None], bool]) -> Context:
    """``context`` (a framework run's, made current for one of its tool bodies) where a model
    call the body makes itself through a provider's SDK is no longer covered, except while
    ``nested(None, made_in)`` says a run of ours started in that body is open that tells a
    call made in the context ``made_in`` (``nested(at, made_in)``: was open at that time, in
    ns; an agent the tool runs: its calls are that run's chat spans).
    The run's cover stood the providers down for every call made in the run, a tool's own
    among them, which no chat span of ours tells: it went untraced. The framework's own spans
    and its instrumentations' (a tool span of theirs) still stand down there: our spans tell
    those. A context no framework run covers is returned as it is."""
    if otel_context.get_value(COVERED, context) is None:
        return context
    return otel_context.set_value(TOOL_BODY, nested, context)


def own_call(context: Context | None = None, made_at: int | None = None) -> bool:
    """Whether a model call through a provider's SDK made in ``context`` (default: current)
    is a tool body's own (:func:`tool_body`): no chat span of ours is open there and no run
    of ours started in the body is open that tells it (one whose work runs in its own
    contexts tells only the calls made there, not the body's beside it). ``made_at``: asked
    once the call has ended, the time it was made (ns): no run of ours started in the body
    was open then (an agent the body ran may have made it and ended since; the body's own
    call before or after it is the body's)."""
    nested = otel_context.get_value(TOOL_BODY, context)
    if nested is None:
        return False
    span = otel_context.get_value(INFERENCE_SPAN, context)
    if span is not None and not _ended(span):
        return False
    try:  # asked inside another library's call: nothing may raise there
        return not nested(made_at, context)  # type: ignore[operator]
    except Exception:
        report("stand-down")
        return False  # stood down, as before the tool body's own calls were traced


def covering_call(context: Context | None = None) -> bool:
    """:func:`covering`, for a model call through a provider's SDK: not a tool body's own
    (:func:`own_call`)."""
    return covering(context) and not own_call(context)


def _providers_stand_down(context: Context) -> Context:
    return covered(suppressed(context))


def inference_span(context: Context | None = None) -> Span | None:
    """Our chat span covering the model call in ``context`` (default: current), if any."""
    value = otel_context.get_value(INFERENCE_SPAN, context)
    return value if isinstance(value, Span) else None

"""Every attribute key, span name, metric name and bucket list the middleware emits.

One module, so a key is never a loose string elsewhere. ``gen_ai.*`` keys follow the GenAI
semantic conventions v1.41.1 (the registry vendored as ``tests/semconv/registry.yaml``); the
agent and tool duration metrics follow the development names the official
``opentelemetry-util-genai`` emits. Our own keys use the ``agent_otel.`` prefix, never
``gen_ai.``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SCOPE_NAME: Final = "agent_otel"
"""The instrumentation scope of our tracer, meter and logger (``configure()``'s Views match it)."""

# --- gen_ai.* (semconv registry) -------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
OUTPUT_TYPE: Final = "gen_ai.output.type"

AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
AGENT_VERSION: Final = "gen_ai.agent.version"

REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_TOP_K: Final = "gen_ai.request.top_k"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"
REQUEST_SEED: Final = "gen_ai.request.seed"
REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
REQUEST_STREAM: Final = "gen_ai.request.stream"
# Head only (semantic-conventions-genai; tests/semconv/head): additions, written in both modes.
REQUEST_REASONING_LEVEL: Final = "gen_ai.request.reasoning.level"

RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"

USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"  # head's name
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE: Final = "gen_ai.token.type"

TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
INVOCATION_IS_NESTED: Final = "gen_ai.invocation.is_nested"  # head only

INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"

ERROR_TYPE: Final = "error.type"
ERROR_TYPE_OTHER: Final = "_OTHER"  # the registry's value for an error with no better name
# The general registry's; read off the SDK exporter's own duration metric (exporting/_tally.py).
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"

# --- MCP (the MCP semantic conventions, model/mcp and model/jsonrpc; not in the vendored GenAI
# registry): on the execute_tool span of a tool that runs on an MCP server ---------------------
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_METHOD_TOOLS_CALL: Final = "tools/call"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"

# --- a remote agent's or a model call's server: the general registry's server.*, which the
# invoke_agent CLIENT and inference spans list (spans.yaml) and the gen_ai.client.* metrics -----
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# --- run identity (general semconv registry: session.*, user.*) ---------------------------------
SESSION_ID: Final = "session.id"
USER_ID: Final = "user.id"

# --- cost (open GenAI proposal semantic-conventions-genai PR #443: gen_ai.usage.cost.*) -------
COST_AMOUNT: Final = "gen_ai.usage.cost.amount"
COST_CURRENCY: Final = "gen_ai.usage.cost.currency"
COST_SOURCE: Final = "gen_ai.usage.cost.source"

EVALUATION_NAME: Final = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
# Who judged (open proposal semantic-conventions-genai PR #359; not merged in the head).
EVALUATOR_ID: Final = "gen_ai.evaluation.evaluator.id"
EVALUATOR_VERSION: Final = "gen_ai.evaluation.evaluator.version"
EVALUATOR_TYPE: Final = "gen_ai.evaluation.evaluator.type"
EVALUATOR_TYPES: Final = ("llm_judge", "deterministic", "human")

# --- GenAI events (events.yaml), emitted as log records ------------------------------------------
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"
EVENT_OPERATION_EXCEPTION: Final = "gen_ai.client.operation.exception"
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"

# --- gen_ai.operation.name values and span names ----------------------------------------------
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
STEP_SPAN_NAME: Final = "step"
# gen_ai.tool.type: the registry's values (a string with these examples, no enum yet);
# recording/_tool.py's tool_type() is the one mapping onto them.
TOOL_TYPE_FUNCTION: Final = "function"
TOOL_TYPE_EXTENSION: Final = "extension"
TOOL_TYPE_DATASTORE: Final = "datastore"
OUTPUT_TYPE_TEXT: Final = "text"
OUTPUT_TYPE_JSON: Final = "json"
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"
# gen_ai.provider.name is required on chat and invoke_agent spans; when neither the event nor
# the caller names a provider we say so with this value instead of dropping the attribute.
PROVIDER_UNKNOWN: Final = "unknown"

# --- agent_otel.* (ours) -----------------------------------------------------------------------
STEP_INDEX: Final = "agent_otel.step.index"
USAGE_INPUT_TOTAL: Final = "agent_otel.usage.input_tokens"
USAGE_OUTPUT_TOTAL: Final = "agent_otel.usage.output_tokens"
USAGE_TOTAL_TOTAL: Final = "agent_otel.usage.total_tokens"
USAGE_CACHE_READ_TOTAL: Final = "agent_otel.usage.cache_read_tokens"
USAGE_CACHE_CREATION_TOTAL: Final = "agent_otel.usage.cache_creation_tokens"
USAGE_REASONING_TOTAL: Final = "agent_otel.usage.reasoning_tokens"
# Cost totals on step and agent spans: ours, so no backend sums a run's cost twice (the proposal
# puts gen_ai.usage.cost.* on inference spans only).
COST_TOTAL: Final = "agent_otel.usage.cost.amount"
COST_TOTAL_CURRENCY: Final = "agent_otel.usage.cost.currency"
LLM_CALL_ID: Final = "agent_otel.llm.call_id"
CHUNK_COUNT: Final = "agent_otel.response.chunk_count"
CHUNK_INTERVAL_MEAN: Final = "agent_otel.response.chunk_interval_mean"
TIME_TO_FIRST_TEXT: Final = "agent_otel.response.time_to_first_text"
ANOMALIES: Final = "agent_otel.anomalies"
ANOMALY_KINDS: Final = "agent_otel.anomaly.kinds"
END_REASON: Final = "agent_otel.end_reason"
INCOMPLETE: Final = "agent_otel.incomplete"
ERROR_FATAL: Final = "agent_otel.error.fatal"
JOURNEY_NAME: Final = "agent_otel.journey.name"
JOURNEY_ID: Final = "agent_otel.journey.id"
PHASE: Final = "agent_otel.phase"
TOOL_IS_ERROR: Final = "agent_otel.tool.is_error"
MCP_SERVER_NAME: Final = "agent_otel.mcp.server.name"
"""The MCP server's name: the MCP conventions have no key for it."""
RESUMED: Final = "agent_otel.resumed"
STRATEGY: Final = "agent_otel.strategy"
RECURSION_LIMIT: Final = "agent_otel.recursion_limit"
TOOL_NAMES: Final = "agent_otel.tool_names"
PRESET_NAMES: Final = "agent_otel.preset_names"
SUBAGENT_NAMES: Final = "agent_otel.subagent_names"
SKILL_NAMES: Final = "agent_otel.skill_names"
INTERRUPT_ID: Final = "agent_otel.interrupt.id"
INTERRUPT_REASON: Final = "agent_otel.interrupt.reason"
SCRUB_DETECTOR: Final = "agent_otel.scrub.detector"
# Option pending_spans: a zero-duration snapshot of a span still open (recording/_pending.py).
PENDING: Final = "agent_otel.pending"
# ContentCapture(history="new"): how many leading messages of a chat call's input are the
# previous call's whole input, recorded there and left out here (docs/tracing.md).
INPUT_MESSAGES_OMITTED: Final = "agent_otel.input.messages.omitted"

# --- what trace backends read to show a span (see docs/backends.md) -----------------------------
# OpenInference's span kind: Phoenix shows it, MLflow maps it to its span type. Only step spans
# carry it: our gen_ai spans get their kind from gen_ai.operation.name in both.
OI_SPAN_KIND: Final = "openinference.span.kind"
OI_KIND_CHAIN: Final = "CHAIN"
# The root's previews in Phoenix's trace list (MLflow reads gen_ai.input/output.messages).
OI_INPUT_VALUE: Final = "input.value"
OI_OUTPUT_VALUE: Final = "output.value"
# MLflow's trace list names a trace by this tag, read from its root span's attributes (a trace
# without it is "-"); set on a run that is the root of its trace, to the run span's name.
MLFLOW_TRACE_NAME: Final = "mlflow.traceTag.mlflow.traceName"

# --- captured content's markers ----------------------------------------------------------------
# A field of a content part (or tool payload) whose content was not captured, and why: open
# GenAI proposal semantic-conventions-genai PR #144 (`stripped_reason` on message parts; its
# example values include size_exceeded).
STRIPPED_REASON: Final = "stripped_reason"
STRIPPED_SIZE_EXCEEDED: Final = "size_exceeded"

# --- span events ------------------------------------------------------------------------------
EVENT_PHASE: Final = "agent_otel.phase"
EVENT_ERROR: Final = "agent_otel.error"
EVENT_INTERRUPT: Final = "agent_otel.interrupt"
EVENT_ANOMALY: Final = "agent_otel.anomaly"
# A remote agent's call that returned with its task still at work, its span held open.
EVENT_HELD: Final = "agent_otel.held"
# The attributes of our own span events: short keys, scoped by the event's name.
EVENT_PHASE_NAME: Final = "name"  # on agent_otel.phase: the phase
EVENT_ANOMALY_KIND: Final = "kind"  # on agent_otel.anomaly: the repair
EVENT_HELD_STATE: Final = "state"  # on agent_otel.held: the remote task's state
# The SDK's exception event (semconv exception.*), written by us so a hostile exception cannot
# stop it (see recording/_span.py).
EVENT_EXCEPTION: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"

# --- end reasons (agent_otel.end_reason) --------------------------------------------------------
END_EXHAUSTED: Final = "exhausted"
END_ERROR: Final = "error"
END_CLOSED_EARLY: Final = "closed_early"
END_CANCELLED: Final = "cancelled"
END_INTERRUPTED: Final = "interrupted"
END_SHUTDOWN: Final = "shutdown"  # still open when telemetry shut down (process exit, SIGTERM)

# --- metrics --------------------------------------------------------------------------------------
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
METRIC_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.operation.time_per_output_chunk"
METRIC_AGENT_DURATION: Final = "gen_ai.invoke_agent.duration"
METRIC_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"
# Calls per run (head's metrics.yaml; additions, recorded in both modes).
METRIC_AGENT_INFERENCE_CALLS: Final = "gen_ai.invoke_agent.inference_calls"
METRIC_AGENT_TOOL_CALLS: Final = "gen_ai.invoke_agent.tool_calls"
# The head's names for the renamed metrics (semconv="head").
METRIC_INFERENCE_DURATION: Final = "gen_ai.client.inference.duration"
METRIC_INFERENCE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.inference.time_to_first_chunk"
METRIC_INFERENCE_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.inference.time_per_output_chunk"
METRIC_INFERENCE_INPUT_TOKENS: Final = "gen_ai.client.inference.operation.input_tokens"
METRIC_INFERENCE_OUTPUT_TOKENS: Final = "gen_ai.client.inference.operation.output_tokens"
METRIC_INVOCATION_DURATION: Final = "gen_ai.invocation.duration"
# A counter of our own: the proposal's gen_ai.client.operation.cost is a histogram, not merged.
METRIC_COST: Final = "agent_otel.client.cost"
# Credentials scrubbed from what agent-otel exports, by detector (agent_otel.scrub.detector).
METRIC_SCRUBBED: Final = "agent_otel.scrubbed"

# ExplicitBucketBoundaries from the GenAI metrics spec.
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
TIME_TO_FIRST_CHUNK_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
)  # fmt: skip
# Calls per run: small counts (the conventions give no boundaries; these are ours).
CALL_COUNT_BUCKETS: Final = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100)
TIME_PER_OUTPUT_CHUNK_BUCKETS: Final = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
)  # fmt: skip


# --- the two sets of names (the ``semconv`` option; docs/conformance.md) -----------------------
SEMCONV_V1_41: Final = "v1.41"
SEMCONV_HEAD: Final = "head"


@dataclass(frozen=True, slots=True)
class Conventions:
    """The names one run writes where the conventions' head renamed what v1.41.1 named.

    Resolved once per wrapper (``recording/_options.py``); the span owners read these fields
    instead of branching per event. Additions of the head (reasoning level, tool definitions,
    calls per run) are the same in both and are not here.
    """

    name: str
    cache_write: str  # the cache-write token count on chat spans
    run_usage_cache: bool  # cache token counts on the agent span (the head removed them)
    top_k_int: bool  # gen_ai.request.top_k is an int (head) or a double (v1.41.1)
    operation_duration: str
    time_to_first_chunk: str
    time_per_output_chunk: str
    input_tokens: str  # the token histograms: one with gen_ai.token.type (v1.41.1) ...
    output_tokens: str  # ... or one per direction (head)
    token_type: bool
    agent_duration: str
    is_nested: bool  # gen_ai.invocation.is_nested on the agent duration metric
    agent_provider: bool  # gen_ai.provider.name on the agent span and its duration metric
    tool_operation: bool  # gen_ai.operation.name on the tool duration metric


V1_41: Final = Conventions(
    name=SEMCONV_V1_41,
    cache_write=USAGE_CACHE_CREATION_INPUT_TOKENS,
    run_usage_cache=True,
    top_k_int=False,
    operation_duration=METRIC_OPERATION_DURATION,
    time_to_first_chunk=METRIC_TIME_TO_FIRST_CHUNK,
    time_per_output_chunk=METRIC_TIME_PER_OUTPUT_CHUNK,
    input_tokens=METRIC_TOKEN_USAGE,
    output_tokens=METRIC_TOKEN_USAGE,
    token_type=True,
    agent_duration=METRIC_AGENT_DURATION,
    is_nested=False,
    agent_provider=True,
    tool_operation=True,
)
HEAD: Final = Conventions(
    name=SEMCONV_HEAD,
    cache_write=USAGE_CACHE_WRITE_INPUT_TOKENS,
    run_usage_cache=False,
    top_k_int=True,
    operation_duration=METRIC_INFERENCE_DURATION,
    time_to_first_chunk=METRIC_INFERENCE_TIME_TO_FIRST_CHUNK,
    time_per_output_chunk=METRIC_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    input_tokens=METRIC_INFERENCE_INPUT_TOKENS,
    output_tokens=METRIC_INFERENCE_OUTPUT_TOKENS,
    token_type=False,
    agent_duration=METRIC_INVOCATION_DURATION,
    is_nested=True,
    agent_provider=False,
    tool_operation=False,
)
CONVENTIONS: Final = {SEMCONV_V1_41: V1_41, SEMCONV_HEAD: HEAD}

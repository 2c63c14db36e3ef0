"""Bedrock through ``opentelemetry-instrumentation-botocore``: one chat span per model call.

botocore's instrumentation traces every AWS call (``opentelemetry-bootstrap`` installs it
wherever boto3 is), and its Bedrock Runtime extension makes a chat span with token metrics of
each ``Converse`` / ``InvokeModel``. Inside our chat span it stands down for those, while
every other AWS call it makes (here S3's) stays its RPC span, as HTTP spans stay; outside our
chat spans it traces the model call as before. The real boto3 clients answer from botocore's
own ``Stubber``. OpenInference's and OpenLLMetry's Bedrock instrumentations, which instrument
each client as it is made, stand down the same way: a client made inside our run is
instrumented, and an embedding model's ``InvokeModel`` keeps their span.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
botocore_otel = pytest.importorskip("opentelemetry.instrumentation.botocore")

from botocore.stub import Stubber  # noqa: E402

from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage  # noqa: E402
from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from sources._trace import input_tokens_counted, theirs  # noqa: E402

MODEL = "amazon.nova-micro-v1:0"
CONVERSE = {
    "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
    "metrics": {"latencyMs": 1},
}
ASK = {"modelId": MODEL, "messages": [{"role": "user", "content": [{"text": "hi"}]}]}


def client(service: str) -> Any:
    return boto3.client(
        service, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )


@pytest.fixture
def telemetry() -> Iterator[InMemoryTelemetry]:
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(botocore_otel.BotocoreInstrumentor()):
        yield telemetry
    telemetry.shutdown()


class BedrockAgent:
    """A contract agent over one Bedrock ``Converse`` call, listing S3 buckets meanwhile."""

    def __init__(self, bedrock: Any, s3: Any) -> None:
        self.bedrock, self.s3 = bedrock, s3

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="aws.bedrock", call_id="c1")
        answer = self.bedrock.converse(**ASK)
        self.s3.list_buckets()  # an AWS call that is not a model call
        yield TextDelta(answer["output"]["message"]["content"][0]["text"])
        usage = answer["usage"]
        yield Usage(input_tokens=usage["inputTokens"], output_tokens=usage["outputTokens"])
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")


async def test_bedrock_stands_down_inside_our_chat_span_other_aws_calls_stay(
    telemetry: InMemoryTelemetry,
) -> None:
    bedrock, s3 = client("bedrock-runtime"), client("s3")
    with Stubber(bedrock) as bedrock_stub, Stubber(s3) as s3_stub:
        bedrock_stub.add_response("converse", CONVERSE)
        bedrock_stub.add_response("converse", CONVERSE)
        s3_stub.add_response("list_buckets", {"Buckets": []})
        async for _ in telemetry.wrapper()(BedrockAgent(bedrock, s3).stream([])):
            pass
        assert telemetry.outline() == [
            ["invoke_agent", [["step 0", [[f"chat {MODEL}", ["S3.ListBuckets"]]]]]]
        ]
        (chat,) = telemetry.by_name()[f"chat {MODEL}"]
        assert chat.instrumentation_scope is not None
        assert chat.instrumentation_scope.name == "agent_otel"
        assert input_tokens_counted(telemetry) == 12  # once

        telemetry.clear()
        bedrock.converse(**ASK)  # outside our chat spans: botocore's chat span, as before
    (theirs,) = telemetry.spans()
    assert theirs.name == f"chat {MODEL}"
    assert theirs.instrumentation_scope is not None
    assert theirs.instrumentation_scope.name.startswith("opentelemetry.instrumentation.botocore")


BEDROCK = [
    ("botocore", "opentelemetry.instrumentation.botocore", "BotocoreInstrumentor"),
    ("openinference-bedrock", "openinference.instrumentation.bedrock", "BedrockInstrumentor"),
    ("openllmetry-bedrock", "opentelemetry.instrumentation.bedrock", "BedrockInstrumentor"),
]
"""The Bedrock instrumentations a user installs: botocore's, OpenInference's and OpenLLMetry's
(the two last instrument each Bedrock Runtime client as it is made)."""
EMBED = "amazon.titan-embed-text-v2:0"


@pytest.fixture(params=BEDROCK, ids=[name for name, _, _ in BEDROCK])
def bedrock_telemetry(request: pytest.FixtureRequest) -> Iterator[InMemoryTelemetry]:
    _, module, instrumentor = request.param
    telemetry = InMemoryTelemetry()
    with telemetry.instrumented(getattr(pytest.importorskip(module), instrumentor)()):
        yield telemetry
    telemetry.shutdown()


async def _in_our_chat_span(telemetry: InMemoryTelemetry, body: Any) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="aws.bedrock", call_id="c1")
        body()
        yield Usage(input_tokens=12, output_tokens=3)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

    async for _ in telemetry.wrapper()(agent()):
        pass


async def test_a_bedrock_client_made_in_our_chat_span_is_traced_outside_it(
    bedrock_telemetry: InMemoryTelemetry,
) -> None:
    """A client made inside a run of ours (a framework makes its client at its first model
    call) is a client like any other: its model calls outside our runs are traced."""
    made: list[Any] = []
    await _in_our_chat_span(bedrock_telemetry, lambda: made.append(client("bedrock-runtime")))
    bedrock_telemetry.clear()
    with Stubber(made[0]) as stub:
        stub.add_response("converse", CONVERSE)
        made[0].converse(**ASK)
    assert len(theirs(bedrock_telemetry)) == 1


async def test_bedrock_embeddings_in_our_chat_span_keep_their_span(
    bedrock_telemetry: InMemoryTelemetry,
) -> None:
    """An embedding model's ``InvokeModel`` is no model call our chat span tells: it stays
    theirs, as it is outside our runs; a ``Converse`` stands down."""
    import io
    import json

    from botocore.response import StreamingBody

    bedrock = client("bedrock-runtime")
    body = json.dumps({"embedding": [0.1, 0.2], "inputTextTokenCount": 5}).encode()
    answer = {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}
    ask = {"modelId": EMBED, "body": json.dumps({"inputText": "hi"}),
           "contentType": "application/json", "accept": "application/json"}  # fmt: skip
    with Stubber(bedrock) as stub:
        stub.add_response("invoke_model", answer)
        stub.add_response("converse", CONVERSE)
        await _in_our_chat_span(
            bedrock_telemetry, lambda: bedrock.invoke_model(**ask)["body"].read()
        )
        assert len(theirs(bedrock_telemetry)) == 1
        bedrock_telemetry.clear()
        before = input_tokens_counted(bedrock_telemetry)
        await _in_our_chat_span(bedrock_telemetry, lambda: bedrock.converse(**ASK))
    assert theirs(bedrock_telemetry) == []
    assert input_tokens_counted(bedrock_telemetry) - before == 12  # ours, once

"""A fresh process whose agent first imports a provider instrumentation inside our chat span.

Run by ``tests/test_standdown_late_imports.py`` as ``python late_import_child.py PROVIDER``:
wrappers are made (so the guards are in place on what is loaded then), and only inside the chat
span of the first run does the agent import the provider's instrumentation (its package, and
OpenTelemetry's instrumentation package, for the first time in the process), turn it on and
make its one chat call over the SDK's mock transport; a second run, opted out
(``stand_down_providers=False``), makes the same call. Prints one JSON line: per run the input
tokens ``gen_ai.client.token.usage`` counted and each span's instrumentation scope, and
agent-otel's own warnings (an internal error it swallowed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import

import httpx2
import openai

from agent_contract.protocol import LLMCallEnd, LLMCallStart, Usage
from agent_otel.testing import InMemoryTelemetry

MODEL = "gpt-4o-mini"
COMPLETION = {"id": "r1", "object": "chat.completion", "created": 0, "model": MODEL,
              "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "ok"}}]}  # fmt: skip
MESSAGES = [{"role": "user", "content": "hi"}]


def _client() -> openai.AsyncOpenAI:
    answer = httpx2.MockTransport(lambda _: httpx2.Response(200, json=COMPLETION))
    http = httpx2.AsyncClient(transport=answer)
    return openai.AsyncOpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=http)


async def _litellm(telemetry: InMemoryTelemetry) -> None:
    import litellm
    from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    litellm.callbacks = [
        OpenTelemetry(
            config=OpenTelemetryConfig(exporter="console", enable_metrics=True),
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
        )
    ]
    await litellm.acompletion(model=f"openai/{MODEL}", messages=MESSAGES, client=_client(),
                              api_key="test")  # fmt: skip
    for _ in range(100):  # its logging runs on its worker, some loop turns after the call
        await GLOBAL_LOGGING_WORKER.flush()
        await asyncio.sleep(0.01)


async def _openai(telemetry: InMemoryTelemetry, module: str) -> None:
    from importlib import import_module

    instrumentor: Any = import_module(module).OpenAIInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    await _client().chat.completions.create(model=MODEL, messages=MESSAGES)


PROVIDERS = {
    "litellm": _litellm,
    "openai-v2": lambda t: _openai(t, "opentelemetry.instrumentation.openai_v2"),
    "genai-openai": lambda t: _openai(t, "opentelemetry.instrumentation.genai.openai"),
}


def _counted(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    points = telemetry.histograms().get("gen_ai.client.token.usage", [])
    tokens = sum(
        int(p.sum) for p in points if dict(p.attributes or {}).get("gen_ai.token.type") == "input"
    )
    scopes = [
        s.instrumentation_scope.name if s.instrumentation_scope else "" for s in telemetry.spans()
    ]
    return {"tokens": tokens, "scopes": scopes}


def main(provider: str) -> None:
    """The run that imports the provider late, then (it now loaded) one opted out."""
    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("agent_otel").addHandler(handler)
    telemetry = InMemoryTelemetry()
    wrappers = [telemetry.wrapper(), telemetry.wrapper(stand_down_providers=False)]
    loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry.instrumentation"))

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model=MODEL, provider="openai", call_id="c1")
        await PROVIDERS[provider](telemetry)
        yield Usage(input_tokens=7, output_tokens=2)
        yield LLMCallEnd(call_id="c1", model=MODEL, finish_reason="stop")

    runs: list[dict[str, Any]] = []
    for wrapper in wrappers:

        async def run() -> None:
            async for _ in wrapper(agent()):  # noqa: B023 (run now, in this turn)
                pass

        asyncio.run(run())
        counted = _counted(telemetry)  # the metric is cumulative: this run's tokens are new
        counted["tokens"] -= sum(earlier["tokens"] for earlier in runs)
        runs.append(counted)
        telemetry.clear()
    print(json.dumps({"loaded_before": loaded, "standing_down": runs[0], "opted_out": runs[1],
                      "warnings": warnings}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])

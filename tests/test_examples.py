"""Every example runs, as a user would run it, and shows what its docstring promises."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_contract.protocol import Message
from agent_otel.testing import InMemoryTelemetry
from otlp_receiver import POLL, receiving

pytestmark = pytest.mark.heavy  # every example in a process of its own, 7 s: run by the heavy suite

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
        check=False,
    )


def test_quickstart_prints_the_trace_tree_and_token_summary() -> None:
    done = run_example("quickstart.py")

    assert done.returncode == 0, done.stderr
    assert "answer: agent-otel turns agent events into spans." in done.stdout
    lines = done.stderr.splitlines()
    names = [
        "invoke_agent researcher",
        "step 0",
        "chat gpt-4o-mini  in=412 out=38",
        "execute_tool web_search",
        "execute_tool read_docs",
        "step 1",
        "chat gpt-4o-mini  in=655 out=21",
    ]
    found = [next((i for i, line in enumerate(lines) if name in line), -1) for name in names]
    assert -1 not in found, done.stderr
    assert found == sorted(found)  # the tree's order: parents before children, by start
    assert "\x1b[" not in done.stderr  # not a TTY: no colour codes
    summary = next(i for i, line in enumerate(lines) if line.startswith("token usage"))
    assert "1,067" in lines[summary + 1]  # 412 + 655 input tokens
    row = lines[summary + 1].split()
    assert row[3] == "59"  # 38 + 21 output tokens
    assert row[-1] == "USD"  # priced by the bundled table


def test_instrumented_agent_example_nests_the_sub_agent_and_hides_the_key() -> None:
    done = run_example("instrumented_agent.py")

    assert done.returncode == 0, done.stderr
    assert "answer: OTel GenAI spans nest" in done.stdout
    tree = [line for line in done.stderr.splitlines() if "  " in line and "ms" in line]
    depth = {}
    for line in tree:
        name = line.lstrip("│├└─ ").split("  ")[0]
        depth[name] = len(line) - len(line.lstrip("│├└─ "))
    assert depth["invoke_agent researcher"] == 0
    assert depth["step 0"] > depth["invoke_agent researcher"]
    assert depth["execute_tool web_search"] == depth["execute_tool summarise"] > depth["step 0"]
    assert depth["invoke_agent summariser"] > depth["execute_tool summarise"]
    assert "sk-do-not-record" not in done.stdout + done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_send_to_collector_says_plainly_when_nothing_listens() -> None:
    endpoint = f"http://127.0.0.1:{_free_port()}"
    done = run_example("send_to_collector.py", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)

    assert done.returncode == 1
    assert done.stdout == (
        f"nothing listens at {endpoint}: nothing was sent. Start a Collector (docker compose "
        "-f docker-compose.otel.yml up -d) or set OTEL_EXPORTER_OTLP_ENDPOINT.\n"
    )


class _NotOtlp(http.server.BaseHTTPRequestHandler):
    """Something that listens but is no OTLP receiver: every POST is a 404."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_send_to_collector_reports_no_delivery_when_the_export_fails() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotOtlp)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        done = run_example("send_to_collector.py", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    finally:
        server.shutdown()
        server.server_close()

    assert done.returncode == 1
    assert "delivered trace" not in done.stdout
    assert done.stdout.startswith(f"not delivered to {endpoint}: ")
    assert "export failures (see the log above)" in done.stdout
    assert "404" in done.stderr  # the exporters' own log says why


@pytest.mark.parametrize("capture", ["SPAN_ONLY", None])
def test_the_quickstarts_run_shows_its_input_and_output_with_capture_on(
    capture: str | None,
) -> None:
    """Sent to a backend, the run has a name, and (capture on only) the question it was
    invoked with and its answer, the previews of Phoenix's and MLflow's trace lists."""
    env = {"OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}
    if capture is not None:
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = capture
    with receiving() as received:
        done = run_example("quickstart.py", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=received.endpoint,
                           **env)  # fmt: skip

    assert done.returncode == 0, done.stderr
    [root] = received.named("invoke_agent researcher")
    assert root["mlflow.traceTag.mlflow.traceName"] == "invoke_agent researcher"
    if capture is None:
        assert "input.value" not in root and "output.value" not in root
    else:
        assert root["input.value"] == "What does agent-otel do?"
        assert root["output.value"] == "agent-otel turns agent events into spans."


def test_openai_example_without_a_key_says_so() -> None:
    done = run_example("openai_agent.py", OPENAI_API_KEY="")

    assert done.returncode == 0, done.stderr
    assert "OPENAI_API_KEY is not set" in done.stdout


@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
def test_openai_example_against_the_real_api() -> None:
    done = run_example("openai_agent.py", OPENAI_API_KEY=os.environ["OPENAI_API_KEY"])

    assert done.returncode == 0, done.stderr
    assert "answer: " in done.stdout
    assert "chat " in done.stderr  # the trace tree printed a chat span


def _sse(*chunks: dict[str, Any]) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m-1"}
    lines = [f"data: {json.dumps({**base, **chunk})}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


async def test_openai_example_agent_offline(otel_telemetry: InMemoryTelemetry) -> None:
    """The example's adapter, driven by the real OpenAI SDK over a mock HTTP transport."""
    # Not importorskip: the README's test install (`.[dev]`) brings the OpenAI SDK, so this
    # test runs there rather than skipping quietly.
    openai = importlib.import_module("openai")
    httpx = importlib.import_module("httpx2")  # the OpenAI SDK's HTTP client
    spec = importlib.util.spec_from_file_location("openai_agent", EXAMPLES / "openai_agent.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "call_1", "function": {"name": "search", "arguments": '{"q":'}}
    more = {"index": 0, "function": {"arguments": ' "otel"}'}}
    body = _sse(
        choice({"role": "assistant", "content": "Let me "}),
        choice({"content": "search."}),
        choice({"tool_calls": [call]}),
        choice({"tool_calls": [more]}),
        choice({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}},
    )

    def respond(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.AsyncOpenAI(
        api_key="test",
        base_url="http://mock.invalid/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(respond)),
    )
    agent = example.OpenAIChatAgent(client, "gpt-4o-mini", temperature=0.5)
    wrapper = otel_telemetry.wrapper(agent_name="openai-example")
    result = await agent.invoke([Message(role="user", content="hi")], stream_wrapper=wrapper)

    assert result.text == "Let me search."
    [step] = result.steps
    assert step.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in step.tool_calls] == [
        ("call_1", "search", '{"q": "otel"}')
    ]
    [chat] = [s for s in otel_telemetry.spans() if s.name == "chat gpt-4o-mini"]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.response.model"] == "m-1"
    assert chat.attributes["gen_ai.response.id"] == "chatcmpl-1"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chat.attributes["gen_ai.usage.input_tokens"] == 9
    assert chat.attributes["gen_ai.usage.output_tokens"] == 7
    assert chat.attributes["gen_ai.request.temperature"] == 0.5
    assert chat.attributes["agent_otel.response.chunk_count"] == 2

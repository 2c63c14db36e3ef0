"""Zero-code as the README writes it: its install line, its variables, its command.

``zero_code.py`` installed the README's ``pip install`` line into a fresh venv (``.ci/run``
does it before this suite, which has no network). Here the README's other lines run exactly
as written, with no ``OTEL_*`` variable but the README's, against a real OTLP/gRPC receiver
on the distro's default address, ``localhost:4317``: the app is traced, both signals arrive,
and stderr stays empty (no "Requested component 'otlp_proto_grpc' not found", no export
error).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import zero_code
from _otlp_grpc import otlp_grpc_receiver
from _support import only_loopback

from conftest import _missing

pytestmark = pytest.mark.heavy

# A user's app: one agent of each contract, no tracing code, no agent-otel import.
APP = textwrap.dedent(
    """
    import asyncio
    from typing import Any

    from agent_contract.agent import Agent, MessageFinal, RunUsage
    from agent_contract.invoke import StreamingAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta, Usage


    class Researcher(Agent):
        tool_name = "researcher"

        async def astream(self, **kwargs: Any):
            yield RunUsage(input_tokens=10, output_tokens=3, model="gpt-4o-mini")
            yield MessageFinal(text="found")

        async def run(self, **kwargs: Any) -> Any:
            return await self._drain(self.astream(**kwargs))


    class Chat(StreamingAgent):
        async def stream(self, messages, config=None):
            yield LLMCallStart(model="gpt-4o-mini", provider="openai")
            yield TextDelta(text="hi")
            yield Usage(input_tokens=5, output_tokens=1)
            yield LLMCallEnd(model="gpt-4o-mini", finish_reason="stop")


    async def main() -> None:
        print(await Researcher().run(user_message="q"))
        print((await Chat().invoke([Message(role="user", content="hello")])).text)


    asyncio.run(main())
    """
)


def readme_env() -> dict[str, str]:
    """This environment without a single ``OTEL_*`` variable, the venv activated."""
    return zero_code.activated({k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})


def test_readme_zero_code_commands_trace_the_app_with_the_distro_defaults(tmp_path: Path) -> None:
    if not zero_code.STAMP.exists():
        _missing(f"{zero_code.VENV.name} (python tests/integration/zero_code.py)")
    installed = zero_code.STAMP.read_text()
    assert installed == "\n".join(zero_code.install_lines()), (
        "the README's install line changed: run python tests/integration/zero_code.py"
    )
    isolated, interfaces = only_loopback()
    if not isolated:  # the distro's default port must be ours alone
        pytest.skip(f"needs a private network namespace with only lo (found {interfaces})")
    (tmp_path / "app.py").write_text(APP)
    lines = zero_code.run_lines()
    assert lines[-1].startswith("opentelemetry-instrument python app.py")

    with otlp_grpc_receiver("localhost:4317") as (_, received):
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + "\n".join(lines)],
            cwd=tmp_path,
            env=readme_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == ["found", "hi"]
    spans = received.spans()
    names = sorted(span.name for _, span in spans)
    assert names == ["chat gpt-4o-mini", "invoke_agent Chat", "invoke_agent researcher", "step 0"]
    assert {service for service, _ in spans} == {"my-app"}  # the README's OTEL_SERVICE_NAME
    by_name = {span.name: span for _, span in spans}
    assert by_name["chat gpt-4o-mini"].parent_span_id == by_name["step 0"].span_id
    assert by_name["step 0"].parent_span_id == by_name["invoke_agent Chat"].span_id
    assert {"gen_ai.client.token.usage", "gen_ai.invoke_agent.duration"} <= (
        received.metric_names()
    )

"""AutoGen agents whose answer no tool-calling model call tells: a ``CodeExecutorAgent`` (its
model writes code, its executor runs it, its model reflects on the output) and an agent of
the application's own (``BaseChatAgent``).

A ``CodeExecutorAgent`` tells its code's request only by a ``CodeGenerationEvent`` (no usage)
and the run by a ``CodeExecutionEvent``: the request was a chat span lost (its tokens
uncounted, its messages given to the reflection's span), the code's run no span. Now the
request is a chat span with the tokens its client reported, the code's run an
``execute_tool code_execution`` span of it (as Google ADK's), the reflection the next step.
An agent's own answer that no model said (an executor's output, a custom agent's reply) is
the run's answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._fw_autogen import _client

pytest.importorskip("autogen_agentchat")
# AutoGen's own advice to a CodeExecutorAgent with no approval function: not the point here
pytestmark = pytest.mark.filterwarnings("ignore:No approval function:UserWarning")


def _executor(exit_code: int, output: str) -> Any:
    """An application's code executor (AutoGen's ``CodeExecutor`` interface): answers each
    run with ``output`` and ``exit_code``, noting the code it was given."""
    from autogen_core.code_executor import CodeExecutor, CodeResult

    class Scripted(CodeExecutor):
        def __init__(self) -> None:
            self.ran: list[str] = []

        async def execute_code_blocks(self, code_blocks: Any, cancellation_token: Any) -> Any:
            self.ran.extend(block.code for block in code_blocks)
            return CodeResult(exit_code=exit_code, output=output)

        async def start(self) -> None: ...
        async def stop(self) -> None: ...
        async def restart(self) -> None: ...

    return Scripted()


@pytest.mark.parametrize("exit_code", [0, 1], ids=["ran", "failed"])
async def test_a_code_executor_agents_request_code_run_and_reflection(
    exit_code: int, otel_telemetry: InMemoryTelemetry
) -> None:
    from autogen_agentchat.agents import CodeExecutorAgent

    from agent_contract.sources.autogen_stream import autogen_events

    code = "```python\nprint(2 + 2)\n```"
    client = _client([code, "The answer is 4."])
    executor = _executor(exit_code, "4\n")
    coder = CodeExecutorAgent("coder", code_executor=executor, model_client=client,
                              max_retries_on_error=0)  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, autogen_events(coder, "What is 2 + 2?", sink=kept.append),
                     agent_name="coder", capture_content=True)  # fmt: skip

    assert [code.strip() for code in executor.ran] == ["print(2 + 2)"]
    assert otel_telemetry.outline() == [["invoke_agent coder", [
        ["step 0", ["chat", "execute_tool code_execution"]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    asked, reflected = sorted(otel_telemetry.by_name()["chat"], key=lambda sp: sp.start_time or 0)
    used = client.total_usage()
    counted = [int((sp.attributes or {})["gen_ai.usage.input_tokens"]) for sp in (asked, reflected)]
    assert sum(counted) == used.prompt_tokens and all(counted)  # each request, once
    said = json.loads(str((asked.attributes or {})["gen_ai.output.messages"]))
    assert said[0]["parts"][0] == {"type": "text", "content": code}
    heard = json.loads(str((reflected.attributes or {})["gen_ai.input.messages"]))
    contents = [str(part.get("content")) for message in heard for part in message["parts"]]
    assert any("4\n" in text for text in contents)  # its own request: the code's output in it
    tool = otel_telemetry.span("execute_tool code_execution")
    attributes = tool.attributes or {}
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {"code": executor.ran[0]}
    assert (tool.status.status_code == StatusCode.ERROR) is bool(exit_code)
    run = dict(otel_telemetry.span("invoke_agent coder").attributes or {})
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "The answer is 4."}]
    assert otel_telemetry.open_spans() == []


async def test_an_answer_no_model_said_is_the_runs_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A custom agent's reply and a model-less ``CodeExecutorAgent``'s output (it runs the
    code in the task) are their runs' answers, with no chat span."""
    from autogen_agentchat.agents import BaseChatAgent, CodeExecutorAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage

    from agent_contract.sources.autogen_stream import autogen_events

    class Echo(BaseChatAgent):
        @property
        def produced_message_types(self) -> Any:
            return (TextMessage,)

        async def on_messages(self, messages: Any, cancellation_token: Any) -> Any:
            return Response(chat_message=TextMessage(content="echo: hi", source=self.name))

        async def on_reset(self, cancellation_token: Any) -> None: ...

    runner = CodeExecutorAgent("runner", code_executor=_executor(0, "4\n"))
    for agent, task, said in ((Echo("echo", "Echoes."), "hi", "echo: hi"),
                              (runner, "```python\nprint(2 + 2)\n```", "4\n")):  # fmt: skip
        otel_telemetry.clear()
        await run_script(otel_telemetry, autogen_events(agent, task), agent_name=agent.name,
                         capture_content=True)  # fmt: skip
        run = dict(otel_telemetry.span(f"invoke_agent {agent.name}").attributes or {})
        [answer] = json.loads(str(run["gen_ai.output.messages"]))
        assert answer["parts"] == [{"type": "text", "content": said}]
        assert not [sp for sp in otel_telemetry.spans() if sp.name.startswith("chat")]
        assert otel_telemetry.open_spans() == []


async def test_a_model_less_member_speaks_in_a_step_of_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """In a ``RoundRobinGroupChat``, a model-less ``CodeExecutorAgent`` runs the code its
    teammate wrote: its turn is a step of its own, named after it, and the next speaker's
    call starts the next step, not inside the executor's."""
    from autogen_agentchat.agents import AssistantAgent, CodeExecutorAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    from agent_contract.sources.autogen_stream import autogen_events

    from ._trace import phases

    writer = AssistantAgent("writer", model_client=_client(["```python\nprint(4)\n```",
                                                            "It is 4. TERMINATE"]))  # fmt: skip
    runner = CodeExecutorAgent("runner", code_executor=_executor(0, "4\n"))
    done = TextMentionTermination("TERMINATE")
    team = RoundRobinGroupChat([writer, runner], termination_condition=done)
    await run_script(otel_telemetry, autogen_events(team, "2 + 2?"), agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", ["chat"]], "step 1", ["step 2", ["chat"]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["writer", "runner", "writer"]
    assert otel_telemetry.open_spans() == []

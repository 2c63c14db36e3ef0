"""The example agents other suites build on: scripts replay exactly, failures and closes show."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_contract.agent import MessageDelta, MessageFinal, StreamEvent
from agent_contract.examples import ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import Message, StepBoundary, TextDelta

HISTORY = [Message(role="user", content="hi")]


async def _all(agent: ScriptedAgent, config: dict[str, Any] | None = None) -> list[object]:
    return [e async for e in agent.stream(HISTORY, config)]


async def test_yields_the_very_same_objects_even_unknown_ones() -> None:
    unknown = object()
    script: list[object] = [TextDelta("a"), unknown, StepBoundary()]
    agent = ScriptedAgent(script)
    got = await _all(agent)
    assert [id(e) for e in got] == [id(e) for e in script]
    assert (agent.runs, agent.completed_runs, agent.closed) == (1, 1, False)


async def test_records_the_call_and_reset_forgets_it() -> None:
    agent = ScriptedAgent([TextDelta("a")], name="mine")
    stream = agent.stream(HISTORY, {"conversation_id": "c1"})
    assert agent.last_messages is HISTORY, "recorded when stream() is called"
    assert agent.last_config == {"conversation_id": "c1"}
    assert agent.runs == 1
    assert [e async for e in stream] == [TextDelta("a")]
    agent.reset()
    assert agent.resets == 1
    assert agent.last_messages is None
    assert agent.last_config is None
    assert agent.name == "mine"


async def test_dynamic_script_receives_messages_and_config() -> None:
    def script(messages: list[Message], config: dict[str, Any] | None) -> list[object]:
        return [TextDelta(f"{len(messages)}:{(config or {}).get('k')}")]

    agent = ScriptedAgent(script)
    assert await _all(agent, {"k": "v"}) == [TextDelta("1:v")]


@pytest.mark.parametrize(("fail_at", "yielded"), [(0, 0), (2, 2), (3, 3), (9, 3)])
async def test_fail_at_raises_before_that_index(fail_at: int, yielded: int) -> None:
    script = [TextDelta("a"), TextDelta("b"), TextDelta("c")]
    agent = ScriptedAgent(script, fail_at=fail_at)
    got: list[object] = []
    with pytest.raises(RuntimeError, match="scripted failure"):
        async for event in agent.stream(HISTORY):
            got.append(event)
    assert got == script[:yielded]
    assert agent.completed_runs == 0
    assert agent.closed is False, "a failure is not an early close"


async def test_custom_error_is_raised_as_is_and_invoke_propagates_it() -> None:
    error = KeyError("custom")
    agent = ScriptedAgent([TextDelta("a")], fail_at=1, error=error)
    with pytest.raises(KeyError) as caught:
        await agent.invoke(HISTORY)
    assert caught.value is error


async def test_delay_sleeps_between_events() -> None:
    loop = asyncio.get_running_loop()
    agent = ScriptedAgent([TextDelta("a"), TextDelta("b"), TextDelta("c")], delay=0.05)
    start = loop.time()
    await _all(agent)
    assert loop.time() - start >= 0.09  # two gaps, none before the first event


async def test_early_close_sets_closed() -> None:
    agent = ScriptedAgent([TextDelta("a"), TextDelta("b")])
    stream = agent.stream(HISTORY)
    assert await stream.__anext__() == TextDelta("a")
    await stream.aclose()  # type: ignore[attr-defined]
    assert agent.closed is True
    assert agent.completed_runs == 0
    await _all(agent)
    assert agent.closed is False, "a new run starts open"


async def test_cancellation_sets_closed() -> None:
    agent = ScriptedAgent([TextDelta("a"), TextDelta("b")], delay=10)

    async def consume() -> None:
        async for _ in agent.stream(HISTORY):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.closed is True


async def test_scripted_streaming_agent_replays_fails_and_closes() -> None:
    script: list[StreamEvent] = [MessageDelta(text="x"), MessageFinal(text="x")]
    agent = ScriptedStreamingAgent(script)
    assert [e async for e in agent.astream(user_message="q")] == script
    assert agent.last_kwargs == {"user_message": "q"}

    failing = ScriptedStreamingAgent(script, fail_at=1, error=ValueError("nope"))
    with pytest.raises(ValueError, match="nope"):
        await failing.run()

    closing = ScriptedStreamingAgent(script)
    stream = closing.astream()
    await stream.__anext__()
    await stream.aclose()  # type: ignore[attr-defined]
    assert closing.closed is True
    assert closing.runs == 1


def test_example_tool_input_and_declarations() -> None:
    assert ScriptedStreamingAgent.tool_name == "scripted_streaming"
    assert ScriptedStreamingAgent.preset_bakeable_fields <= set(
        ScriptedStreamingAgent.ToolInput.model_fields
    )

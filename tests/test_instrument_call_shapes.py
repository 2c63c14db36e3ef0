"""An instrumented agent's ``run`` and ``astream`` take the arguments the agent's own do.

The Agent contract's entry points take keywords (``run(**kwargs)``), but ``instrument()``
traces any agent class with a ``run`` or ``astream``, and many take the prompt positionally
(``await agent.run("look it up")``). Uninstrumented such a call works; instrumented it must
work the same, the run traced, the agent's value (or exception) handed back as it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.agent import MessageFinal
from agent_otel import instrument
from agent_otel.testing import InMemoryTelemetry


class Boom(Exception):
    """The agent's own failure."""


class PromptAgent:
    """An agent whose ``run`` takes its prompt positionally."""

    async def run(self, prompt: str, *, shout: bool = False) -> str:
        if prompt == "fail":
            self.raised = Boom(prompt)
            raise self.raised
        return prompt.upper() if shout else prompt


class PromptStreamer:
    """An agent whose ``astream`` takes its prompt positionally."""

    async def astream(self, prompt: str, suffix: str = "!") -> AsyncIterator[Any]:
        yield MessageFinal(text=prompt + suffix)


async def test_a_positional_run_is_called_as_the_agent_takes_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(PromptAgent(), **otel_telemetry.providers())

    assert await agent.run("look it up", shout=True) == "LOOK IT UP"
    with pytest.raises(Boom) as caught:
        await agent.run("fail")
    assert caught.value is agent.raised  # the agent's own exception, the same object
    assert [s.name for s in otel_telemetry.spans()] == ["invoke_agent PromptAgent"] * 2


async def test_a_positional_astream_is_called_as_the_agent_takes_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(PromptStreamer(), **otel_telemetry.providers())

    events = [e async for e in agent.astream("hi", "?")]

    assert [e.text for e in events] == ["hi?"]
    assert [s.name for s in otel_telemetry.spans()] == ["invoke_agent PromptStreamer"]


class _FailsToIterate:
    """A stream whose ``__aiter__`` raises: plain, ``async for`` raises it, not the call."""

    def __init__(self) -> None:
        self.error = Boom("no iterator")

    def __aiter__(self) -> Any:
        raise self.error


class Failing:
    """An agent whose ``stream`` and ``astream`` return a stream that cannot be iterated."""

    def __init__(self) -> None:
        self.made = _FailsToIterate()

    def stream(self, messages: Any, config: Any = None) -> Any:
        return self.made

    def astream(self, **kwargs: Any) -> Any:
        return self.made


@pytest.mark.parametrize("entry", ["stream", "astream"])
async def test_a_stream_whose_aiter_raises_raises_where_it_is_iterated(
    otel_telemetry: InMemoryTelemetry, entry: str
) -> None:
    agent = instrument(Failing(), **otel_telemetry.providers())

    stream = agent.stream([]) if entry == "stream" else agent.astream(prompt="hi")
    with pytest.raises(Boom) as caught:
        async for _ in stream:
            pass

    assert caught.value is agent.made.error
    [run] = otel_telemetry.spans()
    assert run.name == "invoke_agent Failing"
    assert run.attributes is not None and run.attributes["error.type"] == "Boom"


class Invoking(Failing):
    """An agent whose ``invoke`` wraps its stream first, then iterates it inside its ``try``."""

    async def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        stream = self.stream(messages) if stream_wrapper is None else stream_wrapper(self.made)
        try:
            async for _ in stream:
                pass
        except Boom as error:
            return error
        return None


async def test_a_wrapped_stream_whose_aiter_raises_raises_inside_the_agents_loop(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(Invoking(), **otel_telemetry.providers())

    assert await agent.invoke([]) is agent.made.error  # caught by the agent, as plain
    assert [s.name for s in otel_telemetry.spans()] == ["invoke_agent Invoking"]

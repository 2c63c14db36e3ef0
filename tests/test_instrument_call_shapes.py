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

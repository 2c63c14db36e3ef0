"""Example agents for tests (ours and the middleware's): scripted, deterministic, inspectable.

* ``ScriptedAgent`` — a ``StreamingAgent`` (event-stream contract) replaying a script of
  events. Objects are yielded as-is, even non-``AgentEvent`` ones, so tests can inject
  unknown objects.
* ``ScriptedStreamingAgent`` — an ``Agent`` (ABC contract) replaying ``StreamEvent`` items;
  its ``run`` drains its own ``astream``.
* ``NonStreamingAgent`` — an ``Agent`` whose ``run`` returns a value or raises; it uses the
  default ``astream``.

A script may be a sequence or a callable building one per run. ``fail_at=i`` raises the
configured error (default ``RuntimeError("scripted failure")``) before yielding event ``i``;
``fail_at >= len(script)`` raises after the last event. ``closed`` turns True when a run is
stopped early by its consumer (``aclose()`` or cancellation) and is reset when a run starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from agent_contract.agent.base import Agent
from agent_contract.agent.events import StreamEvent
from agent_contract.events import Message
from agent_contract.invoke import StreamingAgent

__all__ = [
    "ExampleToolInput",
    "NonStreamingAgent",
    "ScriptedAgent",
    "ScriptedStreamingAgent",
]

SCRIPTED_FAILURE = "scripted failure"

Script = Callable[[list[Message], dict[str, Any] | None], Sequence[object]]
"""A dynamic script: builds the events of one run from ``(messages, config)``."""


async def _play(
    script: Sequence[Any],
    *,
    delay: float,
    fail_at: int | None,
    error: BaseException | None,
    on_early_close: Callable[[], None],
) -> AsyncGenerator[Any, None]:
    """Yield ``script`` in order, sleeping ``delay`` between items and failing at ``fail_at``."""

    def failure() -> BaseException:
        return error if error is not None else RuntimeError(SCRIPTED_FAILURE)

    try:
        for i, item in enumerate(script):
            if i > 0 and delay > 0:
                await asyncio.sleep(delay)
            if i == fail_at:
                raise failure()
            yield item
        if fail_at is not None and fail_at >= len(script):
            raise failure()
    except (GeneratorExit, asyncio.CancelledError):
        on_early_close()
        raise


class ScriptedAgent(StreamingAgent):
    """A ``StreamingAgent`` that replays a script of events (see the module docstring).

    ``runs`` counts streams started, ``completed_runs`` streams that yielded their whole
    script; ``last_messages`` / ``last_config`` are what the latest ``stream`` call received.
    """

    def __init__(
        self,
        events: Sequence[object] | Script,
        *,
        delay: float = 0.0,
        fail_at: int | None = None,
        error: BaseException | None = None,
        name: str = "scripted",
    ) -> None:
        self.events = events
        self.delay = delay
        self.fail_at = fail_at
        self.error = error
        self.name = name
        self.last_messages: list[Message] | None = None
        self.last_config: dict[str, Any] | None = None
        self.runs = 0
        self.completed_runs = 0
        self.resets = 0
        self.closed = False

    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        """Record the call, then return an async generator replaying the script."""
        self.runs += 1
        self.last_messages = messages
        self.last_config = config
        self.closed = False
        script = self.events(messages, config) if callable(self.events) else self.events
        return self._replay(list(script))

    async def _replay(self, script: list[object]) -> AsyncIterator[Any]:
        play = _play(
            script,
            delay=self.delay,
            fail_at=self.fail_at,
            error=self.error,
            on_early_close=self._mark_closed,
        )
        async with aclosing(play):  # closing this stream closes the replay at once
            async for item in play:
                yield item
        self.completed_runs += 1

    def _mark_closed(self) -> None:
        self.closed = True

    def reset(self) -> None:
        """Forget the last call (the optional ``reset`` of the protocol)."""
        self.last_messages = None
        self.last_config = None
        self.closed = False
        self.resets += 1


class ExampleToolInput(BaseModel):
    """Tool params of the example ``Agent`` implementations."""

    model_config = ConfigDict(hide_input_in_errors=True)

    user_message: str
    thread_id: str | None = None


class ScriptedStreamingAgent(Agent):
    """An ``Agent`` whose ``astream`` replays ``StreamEvent`` items and ``run`` drains it.

    ``events`` may be a callable receiving the run kwargs. ``last_kwargs`` holds the latest
    call's kwargs, ``runs`` counts ``astream`` calls.
    """

    tool_name = "scripted_streaming"
    tool_description = "Replays a scripted stream of agent events (test agent)."
    ToolInput: ClassVar[type[BaseModel]] = ExampleToolInput
    preset_bakeable_fields: ClassVar[frozenset[str]] = frozenset({"thread_id"})

    def __init__(
        self,
        events: Sequence[StreamEvent] | Callable[[dict[str, Any]], Sequence[StreamEvent]],
        *,
        delay: float = 0.0,
        fail_at: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        self.events = events
        self.delay = delay
        self.fail_at = fail_at
        self.error = error
        self.last_kwargs: dict[str, Any] | None = None
        self.runs = 0
        self.closed = False

    async def astream(self, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Replay the script for these kwargs."""
        self.runs += 1
        self.last_kwargs = kwargs
        self.closed = False
        script = self.events(kwargs) if callable(self.events) else self.events
        play = _play(
            list(script),
            delay=self.delay,
            fail_at=self.fail_at,
            error=self.error,
            on_early_close=self._mark_closed,
        )
        async with aclosing(play):
            async for event in play:
                yield event

    def _mark_closed(self) -> None:
        self.closed = True

    async def run(self, **kwargs: Any) -> Any:
        """Drain this agent's own stream (the streaming-agent pattern of the contract)."""
        return await self._drain(self.astream(**kwargs))


class NonStreamingAgent(Agent):
    """An ``Agent`` whose ``run`` returns ``result`` (or raises ``error``); default ``astream``."""

    tool_name = "non_streaming"
    tool_description = "Returns a configured value (test agent)."
    ToolInput: ClassVar[type[BaseModel]] = ExampleToolInput

    def __init__(self, result: Any = "done", *, error: BaseException | None = None) -> None:
        self.result = result
        self.error = error
        self.last_kwargs: dict[str, Any] | None = None
        self.runs = 0

    async def run(self, **kwargs: Any) -> Any:
        """Record the kwargs, then return the configured result or raise the configured error."""
        self.runs += 1
        self.last_kwargs = kwargs
        if self.error is not None:
            raise self.error
        return self.result

"""The conformance conversation every framework row plays, on the framework's own test model.

Turn 1: the model thinks ("Two cities."), says "Checking both." and asks for two tools in
parallel: ``weather`` for Paris (id ``call_w``) and ``forecast`` for Rome (id ``call_f``);
``forecast`` raises. Turn 2: the model answers "Sunny in Paris.". Each turn reports its usage
(``TURNS``) with cache reads and reasoning tokens, where the framework can carry them.

Variants: ``fail`` makes the model raise :class:`Overloaded` after its first words of turn 1;
``hang`` makes ``weather`` never return (a run cancelled mid-tool); ``refuse`` makes turn 2's
request fail before its first chunk (a 429 where the model is an SDK over HTTP).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

QUESTION = "Weather in Paris and Rome?"
REASONING = "Two cities."
WORDS = ("Checking ", "both.")
ANSWER = ("Sunny ", "in Paris.")
FAILED_TOOL = "forecast"


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]

    @property
    def json(self) -> str:
        return json.dumps(self.arguments)


CALLS = (
    Call("call_w", "weather", {"city": "Paris"}),
    Call("call_f", FAILED_TOOL, {"city": "Rome"}),
)


@dataclass(frozen=True)
class Turn:
    """One model call's scripted usage (input includes the cache reads, as OpenAI counts)."""

    input: int
    output: int
    cache_read: int
    reasoning: int

    @property
    def total(self) -> int:
        return self.input + self.output


TURNS = (Turn(input=120, output=30, cache_read=64, reasoning=12),
         Turn(input=200, output=12, cache_read=100, reasoning=0))  # fmt: skip


class Overloaded(RuntimeError):
    """The scripted model's error mid-stream (turn 1, after its first words)."""


class ToolFailure(RuntimeError):
    """What ``forecast`` raises."""


BODY_WORK: list[Callable[[], object]] = []
"""What ``weather``'s body does besides answering, in every row (a test's own work in a tool
body: a model call the tool makes itself); empty but inside :func:`body_work`."""


@contextmanager
def body_work(work: Callable[[], object]) -> Iterator[None]:
    """``weather``'s body also runs ``work`` inside this block."""
    BODY_WORK.append(work)
    try:
        yield
    finally:
        BODY_WORK.remove(work)


def weather_sync(city: str) -> str:
    """Current weather of a city."""
    for work in BODY_WORK:
        work()
    return f"sunny in {city}"


def forecast_sync(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise ToolFailure(f"no forecast for {city}")


def weather_tool(*, hang: bool = False) -> Callable[..., Any]:
    """``weather`` as a coroutine function; with ``hang`` it never returns."""

    async def weather(city: str) -> str:
        """Current weather of a city."""
        if hang:
            await asyncio.Event().wait()
        return weather_sync(city)

    return weather


def forecast_tool() -> Callable[..., Any]:
    """``forecast`` as a coroutine function: it always raises :class:`ToolFailure`."""

    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        return forecast_sync(city)

    return forecast


@dataclass
class Run:
    """One play of the script: which variant, and what the framework returned (``kept``)."""

    fail: bool = False
    hang: bool = False
    refuse: bool = False
    kept: list[Any] = field(default_factory=list)

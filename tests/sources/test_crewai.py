"""CrewAI beyond the conformance matrix: concurrent runs kept apart, the result last in ``sink``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_contract.protocol import TextDelta, ToolCall, ToolResult

pytest.importorskip("crewai")

from . import _fw_crewai as fw
from . import _script as s


async def test_concurrent_runs_keep_their_own_events() -> None:
    def tools_then_answer(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_w", "weather", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny in Paris.", [])

    async def play(model: Any, tools: list[Any]) -> tuple[list[Any], list[Any]]:
        kept: list[Any] = []
        events = fw.crewai_events(fw.agent(model, tools), s.QUESTION, sink=kept.append)
        return [e async for e in events], kept

    (tooled, kept_a), (plain, kept_b) = await asyncio.gather(
        play(fw.llm(tools_then_answer), fw.tools(s.Run())),
        play(fw.llm(lambda turn: fw.completion(0, "Only words.", [])), []),
    )

    assert [e.id for e in tooled if isinstance(e, ToolCall)] == ["call_w"]
    assert [e.tool_call_id for e in tooled if isinstance(e, ToolResult)] == ["call_w"]
    assert "".join(e.text for e in tooled if isinstance(e, TextDelta)) == "Sunny in Paris."
    assert not [e for e in plain if isinstance(e, (ToolCall, ToolResult))]
    assert "".join(e.text for e in plain if isinstance(e, TextDelta)) == "Only words."
    assert kept_a[-1].raw == "Sunny in Paris." and kept_b[-1].raw == "Only words."
    mine = {type(e).__name__ for e in kept_b}
    assert "ToolUsageStartedEvent" not in mine  # none of the other run's CrewAI events


async def test_the_agents_exception_comes_out_as_the_same_object() -> None:
    boom = s.Overloaded("overloaded")

    class Broken:
        def kickoff(self, *args: Any, **kwargs: Any) -> Any:
            raise boom

    with pytest.raises(s.Overloaded) as caught:
        [_ async for _ in fw.crewai_events(Broken(), s.QUESTION)]
    assert caught.value is boom

"""The conformance script on an SDK source: a small tool loop over the real SDK.

An SDK source makes one model call; the agent around it is the caller's. This one is the
loop every SDK user writes: call the model, run the tools it asked for (a tool's exception
becomes an error result the model sees, as frameworks do), call again, stop at an answer.
The SDK runs over its mock transport answering the script's bodies (``_script_chat``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent, Message, ToolCall

from . import _script as s
from ._http import Answer, httpx
from ._trace import Source, model_and_tools


def tool_loop(source: Source, run: s.Run) -> AsyncIterator[AgentEvent]:
    """The script's agent on ``source``: ``weather`` and ``forecast`` as tools."""
    tools = {"weather": s.weather_tool(hang=run.hang), "forecast": s.forecast_tool()}

    async def call_tool(call: ToolCall) -> tuple[str, bool]:
        try:
            output: str = await tools[call.function.name or ""](
                **json.loads(call.function.arguments)
            )
        except Exception as error:  # the model sees the failure, as a framework would do
            return f"{type(error).__name__}: {error}", True
        return output, False

    return model_and_tools(source, [Message(role="user", content=s.QUESTION)], call_tool, 4)


def chat_bodies(run: s.Run) -> tuple[Answer, ...]:
    """The script's Chat Completions answers for ``run`` (turn one fails with ``fail``; turn
    two is refused with a 429 before any chunk with ``refuse``)."""
    from . import _script_chat as chat

    if run.fail:
        return (chat.turn_one(fail=True),)
    return (chat.turn_one(), refused if run.refuse else chat.turn_two())


def refused(request: httpx.Request) -> httpx.Response:
    """A 429 the SDK does not retry (its own ``x-should-retry`` header)."""
    error = {"error": {"message": "rate limited", "type": "rate_limit_error"}}
    return httpx.Response(429, headers={"x-should-retry": "false"}, json=error, request=request)

"""Contract errors never interpolate input values (inputs can carry credentials).

Each case feeds a secret into an input that provokes one contract error and checks that the
secret appears in neither ``str`` nor ``repr`` of the error. The one deliberate exception,
class-creation ``TypeError`` for ``preset_bakeable_fields``, names field names: those are the
agent author's code, not input (tested in test_contract_agent.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import ValidationError

from agent_contract.agent import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    PresetSpec,
    SubAgentSpec,
    ToolResultStep,
)
from agent_contract.examples import ExampleToolInput, NonStreamingAgent
from agent_contract.protocol import FunctionCall, Message, ToolCall

SECRET = "sk-SECRET-4f9a1c"


async def _aiter(*items: Any) -> AsyncIterator[Any]:
    for item in items:
        yield item


SYNC_CASES: dict[str, Callable[[], object]] = {
    "toolcall without function": lambda: ToolCall(id=SECRET),
    "toolcall dict without function": lambda: ToolCall.from_dict({"id": SECRET}),
    "toolcall dict bad function": lambda: ToolCall.from_dict({"id": "x", "function": SECRET}),
    "toolcall dict bad type": lambda: ToolCall.from_dict(
        {"type": SECRET, "function": {"name": "f", "arguments": ""}}
    ),
    "toolcall dict bad id": lambda: ToolCall.from_dict(
        {"id": [SECRET], "function": {"name": "f", "arguments": ""}}
    ),
    "function dict bad name": lambda: FunctionCall.from_dict({"name": [SECRET]}),
    "message bad role": lambda: Message.from_dict({"role": SECRET, "content": SECRET}),
    "message bad content": lambda: Message.from_dict({"role": "user", "content": {"k": SECRET}}),
    "message image part": lambda: Message.from_dict(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": [SECRET]}}]}
    ),
    "message bad text part": lambda: Message.from_dict(
        {"role": "user", "content": [{"type": "text", "text": [SECRET]}]}
    ),
    # Pydantic validation of contract models (validated from dicts, as callers do).
    "preset validation": lambda: PresetSpec.model_validate(
        {"name": "p", "base_tool": [SECRET], "fixed_kwargs": {"api_key": SECRET}}
    ),
    "subagent validation": lambda: SubAgentSpec.model_validate({"name": "s", "tool_names": SECRET}),
    "event validation": lambda: MessageFinal.model_validate({"text": {"token": SECRET}}),
    "interrupt validation": lambda: InterruptFinal.model_validate(
        {"interrupt_id": [SECRET], "payload": SECRET}
    ),
    "tool result validation": lambda: ToolResultStep.model_validate(
        {"tool": "t", "call_id": [SECRET], "result": SECRET}
    ),
    "tool input validation": lambda: ExampleToolInput.model_validate({"user_message": [SECRET]}),
}


def _assert_clean(exc: BaseException) -> None:
    """The message (what routes surface verbatim) is clean.

    Structured data stays available to code that asks for it: pydantic's ``errors()`` keeps
    the input unless called with ``include_input=False``, as ``interrupts`` keeps payloads.
    """
    assert SECRET not in str(exc)
    assert SECRET not in repr(exc)
    if isinstance(exc, ValidationError):
        assert SECRET not in str(exc.errors(include_input=False))


@pytest.mark.parametrize("case", list(SYNC_CASES), ids=list(SYNC_CASES))
def test_sync_contract_errors_hide_inputs(case: str) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        SYNC_CASES[case]()
    _assert_clean(caught.value)


async def test_interrupt_error_message_hides_interrupt_values() -> None:
    interrupt = InterruptFinal(interrupt_id=SECRET, payload={"password": SECRET}, reason=SECRET)
    with pytest.raises(Exception) as caught:
        await NonStreamingAgent()._drain(_aiter(interrupt))
    _assert_clean(caught.value)
    assert caught.value.interrupts == [interrupt]  # type: ignore[attr-defined]


async def test_no_terminal_error_hides_stream_values() -> None:
    with pytest.raises(RuntimeError) as caught:
        await NonStreamingAgent()._drain(_aiter(MessageDelta(text=SECRET)))
    _assert_clean(caught.value)

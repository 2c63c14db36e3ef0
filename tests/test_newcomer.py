"""A newcomer's common mistakes are told, each with what to do next."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message
from agent_otel import otel_wrapper

ROOT = Path(__file__).resolve().parents[1]


async def test_an_uncalled_otel_wrapper_says_to_call_it() -> None:
    agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
    with pytest.raises(TypeError, match=r"stream_wrapper=otel_wrapper\(\) \(called"):
        await agent.invoke(
            [Message(role="user", content="hi")],
            stream_wrapper=otel_wrapper,  # type: ignore[arg-type]
        )


def test_the_wrappers_signature_stays_its_own() -> None:
    import inspect

    params = inspect.signature(otel_wrapper).parameters.values()
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    assert params and all(p.kind in keyword for p in params)  # the check adds no parameter


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from agent_contract.examples import ScriptedAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message
    from agent_otel import otel_wrapper

    async def main():
        for _ in range(3):
            agent = ScriptedAgent([LLMCallStart(model="m"), LLMCallEnd()])
            await agent.invoke([Message(role="user", content="hi")], stream_wrapper=otel_wrapper())
    if sys.argv[1] == "configured":
        from agent_otel import configure
        configure("t", console_stream=open("/dev/null", "w"))
    asyncio.run(main())
    """
)


def _child(mode: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'contract'}"}
    for var in [v for v in env if v.startswith("OTEL_")]:
        del env[var]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, check=True
    )
    return done.stderr


def test_forgetting_configure_is_told_once_with_what_to_do() -> None:
    stderr = _child("unconfigured")
    assert stderr.count("agent runs are not recorded") == 1, stderr
    assert "agent_otel.configure()" in stderr


def test_nothing_is_told_when_configured() -> None:
    assert "not recorded" not in _child("configured")


@pytest.mark.parametrize(
    ("call", "hint"),
    [
        (lambda: otel_wrapper()([1, 2]), "otel_wrapper()(agent.stream(messages))"),
        (lambda: __import__("agent_otel").instrument(42), "instrument(MyAgent())"),
        (lambda: __import__("agent_otel").TailSamplingPolicy(keep_ratio=2), "keep_ratio"),
    ],
)
async def test_a_misuse_says_what_to_do(call: object, hint: str) -> None:
    with pytest.raises((TypeError, ValueError)) as raised:
        result = call()  # type: ignore[operator]
        if hasattr(result, "__anext__"):
            await result.__anext__()
    assert hint in str(raised.value)

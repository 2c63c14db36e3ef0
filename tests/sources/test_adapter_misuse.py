"""An adapter given the wrong thing, or missing its framework, says what to do.

Every adapter checks, once per run where it first touches them, the object it was given and
the framework it imports (``agent_contract.sources._require``): the wrong object is a
``TypeError`` naming its type, what the adapter takes and how to make one; a missing framework
an ``ImportError`` naming the extra to install; a framework without the API the adapter needs
names the installed and the tested versions. A framework adapter (an async generator) raises
at the first pull, as its other argument errors do; an SDK source (a plain function) when
called. Google ADK, Strands Agents and CrewAI do not install beside ``dev``: their
wrong-object rows are skipped here, their missing-framework rows still run.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import Message
from agent_contract.sources._require import FRAMEWORKS

ROOT = Path(__file__).resolve().parents[2]
HI = [Message(role="user", content="Hi")]


@dataclass(frozen=True)
class Adapter:
    module: str  # agent_contract.sources.<module>
    function: str
    framework: str  # the module it imports, set to None in sys.modules to simulate its absence
    extra: str
    plain: bool = False  # an SDK source: raises when called, not at the first pull
    hint: str = ""  # a word the wrong object's message has beside the adapter's name

    @property
    def id(self) -> str:
        return self.function

    def call(self, given: object) -> Any:
        adapter = getattr(importlib.import_module(f"agent_contract.sources.{self.module}"),
                          self.function)  # fmt: skip
        if self.plain:
            return adapter(given, HI, "gpt-4o-mini")
        return adapter(given, "Hi")


ADAPTERS = [
    Adapter("pydantic_ai_stream", "pydantic_ai_events", "pydantic_ai", "pydantic-ai",
            hint="pydantic_ai.Agent"),
    Adapter("langgraph_stream", "langgraph_events", "langgraph", "langgraph", hint="compile"),
    Adapter("openai_agents", "openai_agents_events", "agents", "openai-agents",
            hint="agents.Agent"),
    Adapter("smolagents_stream", "smolagents_events", "smolagents", "smolagents",
            hint="smolagents"),
    Adapter("autogen_stream", "autogen_events", "autogen_agentchat", "autogen-agentchat",
            hint="AutoGen"),
    Adapter("agno_stream", "agno_events", "agno", "agno", hint="agno"),
    Adapter("llama_index_stream", "llama_index_events", "llama_index", "llama-index",
            hint="LlamaIndex"),
    Adapter("google_adk_stream", "google_adk_events", "google.adk", "google-adk",
            hint="google.adk"),
    Adapter("strands_stream", "strands_events", "strands", "strands-agents", hint="strands"),
    Adapter("crewai_stream", "crewai_events", "crewai", "crewai", hint="crewai"),
    Adapter("litellm_chat", "stream_litellm", "litellm", "litellm", plain=True),
]  # fmt: skip
SDK_SOURCES = [
    Adapter("openai_chat", "stream_chat", "openai", "openai", plain=True, hint="AsyncOpenAI"),
    Adapter("openai_responses", "stream_responses", "openai", "openai", plain=True,
            hint="AsyncOpenAI"),
    Adapter("anthropic_messages", "stream_messages", "anthropic", "anthropic", plain=True,
            hint="AsyncAnthropic"),
]  # fmt: skip
FRAMEWORK_ADAPTERS = [a for a in ADAPTERS if not a.plain]
CHECKED = FRAMEWORK_ADAPTERS + SDK_SOURCES


async def _raised(adapter: Adapter, given: object) -> BaseException:
    """What ``adapter`` raises for ``given``: when called (an SDK source) or at the first pull."""
    if adapter.plain:
        with pytest.raises(Exception) as called:
            adapter.call(given)
        return called.value
    events: AsyncIterator[Any] = adapter.call(given)  # nothing runs yet: an async generator
    with pytest.raises(Exception) as pulled:
        await anext(events)
    return pulled.value


def _installed(adapter: Adapter) -> None:
    pytest.importorskip(adapter.framework)


class _Hostile:
    """An object whose ``repr``, ``__class__`` and every attribute raise."""

    def __repr__(self) -> str:
        raise AssertionError("repr read")

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise AssertionError("__class__ read")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} read")


class _LookAlike:
    """Every attribute an adapter checks for, so only the missing framework stops it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the adapter ran without its framework")


async def _make() -> object:
    return object()


def _wrong_objects() -> list[tuple[str, Callable[[], object], str]]:
    """(id, the wrong object, the words its message must have)."""
    return [
        ("none", lambda: None, "got None"),
        ("contract-agent", lambda: ScriptedAgent([]), "agent_contract.examples.ScriptedAgent"),
        ("a-class", lambda: ScriptedAgent, "the class agent_contract.examples.ScriptedAgent"),
        ("coroutine", _make, "Await"),
        ("hostile", _Hostile, "_Hostile"),
    ]


@pytest.mark.parametrize("adapter", CHECKED, ids=lambda a: a.id)
@pytest.mark.parametrize(("kind", "wrong", "words"), _wrong_objects(), ids=lambda v: str(v)[:14])
async def test_the_wrong_object_is_told_what_it_is_and_what_the_adapter_takes(
    adapter: Adapter, kind: str, wrong: Callable[[], object], words: str
) -> None:
    _installed(adapter)
    error = await _raised(adapter, wrong())
    assert type(error) is TypeError, error
    message = str(error)
    assert message.startswith(f"{adapter.function}() takes "), message
    assert words in message and adapter.hint in message, message


@pytest.mark.parametrize("adapter", [a for a in CHECKED if a.function != "langgraph_events"],
                         ids=lambda a: a.id)  # fmt: skip
async def test_another_frameworks_agent_is_told_apart(adapter: Adapter) -> None:
    """A pydantic-ai agent given to every other adapter, an Agno agent to pydantic-ai's."""
    _installed(adapter)
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.test import TestModel

    if adapter.function == "pydantic_ai_events":
        from agno.agent import Agent as AgnoAgent

        wrong: object = AgnoAgent()
        name = "agno.agent.agent.Agent"
    else:
        wrong, name = pydantic_ai.Agent(TestModel()), "pydantic_ai.agent.Agent"
    message = str(await _raised(adapter, wrong))
    assert f"got an object of type {name}, which has no ." in message, message


async def test_an_uncompiled_state_graph_is_told_to_compile() -> None:
    from typing import TypedDict

    from langgraph.graph import StateGraph

    class State(TypedDict):
        x: int

    [adapter] = [a for a in ADAPTERS if a.function == "langgraph_events"]
    message = str(await _raised(adapter, StateGraph(State)))
    assert "langgraph.graph.state.StateGraph, which has no .astream" in message, message
    assert "builder.compile()" in message, message


@given(st.one_of(st.integers(), st.text(), st.binary(), st.floats(allow_nan=True),
                 st.lists(st.integers()), st.dictionaries(st.text(), st.integers())))  # fmt: skip
async def test_any_plain_value_is_a_type_error_naming_its_type(value: object) -> None:
    for adapter in SDK_SOURCES + [a for a in FRAMEWORK_ADAPTERS if a.framework == "agno"]:
        message = str(await _raised(adapter, value))
        assert f"got an object of type {type(value).__qualname__}," in message, message


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.id)
async def test_a_missing_framework_names_the_extra_to_install(
    adapter: Adapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, adapter.framework, None)  # as if never installed
    error = await _raised(adapter, _LookAlike())
    assert type(error) is ImportError, error
    message = str(error)
    assert f"pip install '.[{adapter.extra}]'" in message, message
    assert f"agent_contract.sources.{adapter.module} needs " in message, message
    assert "not installed" in message, message


async def test_a_framework_without_the_api_the_adapter_needs_names_both_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pydantic-ai without ``pydantic_ai.capabilities`` (older than the adapter's), and the
    OpenAI Agents SDK without ``RunHooks``: the installed and the tested versions are named."""
    pytest.importorskip("pydantic_ai")
    [pydantic] = [a for a in ADAPTERS if a.framework == "pydantic_ai"]
    monkeypatch.setitem(sys.modules, "pydantic_ai.capabilities", None)
    message = str(await _raised(pydantic, ScriptedAgent([])))
    assert "needs pydantic_ai.capabilities, which the installed pydantic-ai-slim " in message
    assert "written for pydantic-ai-slim 2.68.0" in message
    assert "pip install '.[pydantic-ai]'" in message

    agents = pytest.importorskip("agents")
    [openai_agents] = [a for a in ADAPTERS if a.framework == "agents"]
    monkeypatch.delattr(agents, "RunHooks")
    message = str(await _raised(openai_agents, ScriptedAgent([])))
    assert "needs agents.RunHooks, which the installed openai-agents " in message, message
    assert "written for openai-agents 0.24.0" in message, message


def test_each_framework_module_names_an_extra_and_its_tested_version() -> None:
    """The table the messages read stays pyproject.toml's extras and the tested pins."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pins = dict(
        line.split("==")
        for line in (ROOT / "tests" / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    for extra_pins in extras.values():
        for requirement in extra_pins:
            match = re.fullmatch(r"([\w-]+)(?:\[[\w,-]+\])?==([\w.]+)", requirement)
            if match:
                pins.setdefault(match[1], match[2])
    for module, (distribution, tested, extra) in FRAMEWORKS.items():
        assert extra in extras, (module, extra)
        if distribution in pins:
            assert pins[distribution] == tested, (module, pins[distribution], tested)
    assert {a.framework for a in ADAPTERS} - {"llama_index"} <= set(FRAMEWORKS)


async def test_a_framework_that_fails_to_import_is_told_apart_from_a_missing_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Agno installed but a module it imports missing: not "not installed", but why it fails."""
    pytest.importorskip("agno")
    [agno] = [a for a in ADAPTERS if a.framework == "agno"]
    real_import = importlib.import_module

    def import_module(name: str, package: str | None = None) -> Any:
        if name == "agno":
            raise ModuleNotFoundError("No module named 'agno_dependency'", name="agno_dependency")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    message = str(await _raised(agno, _LookAlike()))
    assert "is installed but does not import (No module named 'agno_dependency')" in message
    assert "pip install '.[agno]'" in message


async def test_a_synchronous_sdk_client_is_told_to_use_the_async_one() -> None:
    """``openai.OpenAI`` has ``chat.completions.create`` too, but its stream is synchronous: the
    source says so (and closes that stream) instead of "can't be used in 'await' expression".
    (The SDK's own client is told at the call, below; a look-alike around its ``create`` is
    told here, by what it returned.)"""
    openai = pytest.importorskip("openai")
    from ._http import httpx, sse

    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunk = {**head, "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    responses: list[Any] = []

    def respond(request: Any) -> Any:
        responses.append(httpx.Response(200, headers={"content-type": "text/event-stream"},
                                        content=sse([chunk], done=True)))  # fmt: skip
        return responses[-1]

    http = httpx.Client(transport=httpx.MockTransport(respond))
    sdk = openai.OpenAI(api_key="offline", base_url="http://mock.invalid/v1", http_client=http)
    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(
        create=sdk.chat.completions.create)))  # fmt: skip
    [adapter] = [a for a in SDK_SOURCES if a.function == "stream_chat"]
    events = adapter.call(client)
    await anext(events)  # LLMCallStart, before the request
    with pytest.raises(TypeError, match=r"returned Stream, not an async stream.*AsyncOpenAI"):
        await anext(events)
    assert [r.is_closed for r in responses] == [True]


PLAIN_SOURCES = [a for a in ADAPTERS if a.plain] + SDK_SOURCES


@pytest.mark.parametrize("adapter", PLAIN_SOURCES, ids=lambda a: a.id)
@pytest.mark.parametrize(
    ("messages", "told"),
    [
        ("Hi", "got a str"),
        ([{"role": "user", "content": "Hi"}], "got a list whose item 0 is a dict"),
        ([*HI, "Hi"], "got a list whose item 1 is a str"),
        (None, "got None"),
    ],
    ids=["prompt", "sdk-dicts", "mixed", "none"],
)
def test_messages_in_the_sdks_shape_are_told_at_the_call(
    adapter: Adapter, messages: object, told: str
) -> None:
    """The SDKs take a prompt string or plain dicts, so a newcomer passes those to the SDK
    sources: each failed only at the first pull, with ``'dict' object has no attribute
    'to_dict'``. Now the call raises, naming what it got and how to make a message."""
    _installed(adapter)
    create = SimpleNamespace(create=lambda **_: None)  # a client by shape: never called
    client = SimpleNamespace(chat=SimpleNamespace(completions=create), responses=create,
                             messages=create)  # fmt: skip
    source = getattr(importlib.import_module(f"agent_contract.sources.{adapter.module}"),
                     adapter.function)  # fmt: skip
    with pytest.raises(TypeError) as raised:
        source(client, messages, "gpt-4o-mini")
    message = str(raised.value)
    assert message.startswith(f"{adapter.function}() takes messages as a list of ")
    assert told in message and "Message.from_dict(d)" in message


def _sync_clients() -> list[tuple[Adapter, Callable[[Any], Any]]]:
    """(an SDK source, its SDK's synchronous client over a mock transport)."""
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    [chat, responses, messages] = SDK_SOURCES
    return [
        (chat, lambda http: openai.OpenAI(api_key="k", base_url="http://mock.invalid/v1",
                                          http_client=http, max_retries=0)),
        (responses, lambda http: openai.OpenAI(api_key="k", base_url="http://mock.invalid/v1",
                                               http_client=http, max_retries=0)),
        (messages, lambda http: anthropic.Anthropic(api_key="k", base_url="http://mock.invalid",
                                                    http_client=http, max_retries=0)),
    ]  # fmt: skip


async def test_a_synchronous_sdk_client_is_told_before_any_request_is_sent() -> None:
    """With the synchronous client the request went out (blocking the event loop) at the first
    pull, and any answer but a stream (a 500, a 401, no network) came out as the SDK's error,
    never naming the async client. Now the call says so, and nothing is sent."""
    from ._http import httpx

    for adapter, make in _sync_clients():
        sent: list[Any] = []

        def respond(request: Any, sent: list[Any] = sent) -> Any:
            sent.append(request)
            return httpx.Response(500, json={"error": {"message": "down"}})

        client = make(httpx.Client(transport=httpx.MockTransport(respond)))
        error = await _raised(adapter, client)
        assert type(error) is TypeError, error
        message = str(error)
        assert message.startswith(f"{adapter.function}() takes "), message
        assert "a synchronous client" in message and adapter.hint in message, message
        assert sent == []


@pytest.mark.parametrize("adapter", CHECKED, ids=lambda a: a.id)
async def test_a_module_is_told_to_be_made_into_what_the_adapter_takes(adapter: Adapter) -> None:
    """``stream_chat(openai, ...)``: the module has a ``chat.completions.create`` (its
    module-level client's, synchronous), so it passed the check and failed on the SDK's own
    missing-key error, or sent a blocking request. Any module is told as the module it is."""
    import json

    _installed(adapter)
    error = await _raised(adapter, json)
    assert type(error) is TypeError, error
    message = str(error)
    assert message.startswith(f"{adapter.function}() takes "), message
    assert "got the module json, not an object made with it" in message, message
    if adapter in SDK_SOURCES:
        sdk = pytest.importorskip(adapter.framework)
        assert "got the module" in str(await _raised(adapter, sdk))


class _Watched:
    """A run's keyword object (a session, a memory) that notes each attribute read of it."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.read.append(name)
        raise AttributeError(name)


@pytest.mark.parametrize(
    ("function", "keyword"),
    [("openai_agents_events", "session"), ("llama_index_events", "memory")],
    ids=lambda v: v,
)
async def test_a_wrong_object_is_told_before_the_runs_keywords_are_read(
    function: str, keyword: str
) -> None:
    """The object a run keeps its conversation in (its session, its memory) is the
    framework's only once the agent is: with the wrong agent it is not read at all."""
    adapter = next(a for a in FRAMEWORK_ADAPTERS if a.function == function)
    _installed(adapter)
    module = importlib.import_module(f"agent_contract.sources.{adapter.module}")
    watched = _Watched()
    events: AsyncIterator[Any] = getattr(module, function)(object(), "Hi", **{keyword: watched})
    with pytest.raises(TypeError, match=rf"^{function}\(\) takes "):
        await anext(events)
    assert watched.read == []

"""``server.address`` and ``server.port`` of a model call, as the GenAI conventions recommend
them on the inference span (sampling-relevant: known as it starts) and on the
``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` metrics, and as the
official instrumentations take them: the host and port of the SDK client's base URL (the
scheme's port when it names none). Only on the chat span: the run, its steps and tools call no
server. A base URL's user, password and query are no host: they never leave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.events import LLMCallEnd, LLMCallStart, Usage
from agent_contract.protocol import AgentEvent
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import HISTORY
from ._http import sse, transport
from ._trace import first_start

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SECRET = "hunter2-sk-0123456789"


def _chats(telemetry: InMemoryTelemetry) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in telemetry.spans() if s.name.startswith("chat")]


def _server(attributes: Any) -> tuple[Any, Any]:
    attributes = attributes or {}
    return attributes.get("server.address"), attributes.get("server.port")


async def test_each_sdk_sources_chat_span_and_metrics_name_its_clients_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Chat Completions on the SDK's default base URL, Responses on an Azure deployment (in a
    kept conversation: both stand), Anthropic on a local gateway whose URL carries a password
    and a key: each chat span names its client's host and port, no other span does, and the
    call's duration and token metrics carry them too; the password and key are nowhere."""
    from agent_contract.sources.anthropic_messages import stream_messages
    from agent_contract.sources.openai_chat import stream_chat
    from agent_contract.sources.openai_responses import stream_responses

    chat = openai.AsyncOpenAI(
        api_key="test", http_client=transport(sse(_recorded.chat(tools=False), done=True))
    )
    azure = openai.AsyncAzureOpenAI(
        api_key="test", azure_endpoint="https://my-resource.openai.azure.com",
        api_version="2024-10-21", azure_deployment="gpt-5-mini",
        http_client=transport(sse(_recorded.responses(tools=False), named=True)),
    )  # fmt: skip
    claude = anthropic.AsyncAnthropic(
        api_key="test", base_url=f"http://user:{SECRET}@LocalHost:8080/proxy?key={SECRET}",
        http_client=transport(sse(_recorded.messages(tools=False), named=True)),
    )  # fmt: skip
    await run_script(otel_telemetry, stream_chat(chat, HISTORY, "gpt-4o-mini"), agent_name="a")
    await run_script(otel_telemetry, stream_responses(azure, HISTORY, "gpt-5-mini",
                     conversation="conv_1"), agent_name="b")  # fmt: skip
    await run_script(otel_telemetry, stream_messages(claude, HISTORY, "claude-sonnet-4-5",
                     max_tokens=64), agent_name="c")  # fmt: skip

    servers = {
        "api.openai.com": 443, "my-resource.openai.azure.com": 443, "localhost": 8080,
    }  # fmt: skip
    chats = _chats(otel_telemetry)
    assert sorted(_server(a) for a in chats) == sorted(servers.items())
    responses = [a for a in chats if a.get("server.address") == "my-resource.openai.azure.com"]
    assert responses[0].get("gen_ai.conversation.id") == "conv_1"
    others = [s for s in otel_telemetry.spans() if not s.name.startswith("chat")]
    assert others and all(_server(s.attributes) == (None, None) for s in others)
    for name in ("gen_ai.client.operation.duration", "gen_ai.client.token.usage"):
        points = otel_telemetry.histograms()[name]
        assert {_server(p.attributes) for p in points} == set(servers.items()), name
    every = [v for s in otel_telemetry.spans() for v in (s.attributes or {}).values()]
    assert not any(SECRET in str(v) for v in every)


async def test_a_call_naming_its_server_leaves_the_plain_calls_of_the_same_model_without(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two servers and calls naming none, of one model, in one run and again in the wrapper's
    next run (which remembers each call's start): each chat span names its own server or
    none, the calls' metrics likewise."""
    from agent_contract.sources._endpoint import at_endpoint

    order = [("a.example", 443), None, ("b.example", 8443), ("a.example", 443), None]

    async def run() -> AsyncIterator[AgentEvent]:
        for server in order:
            yield at_endpoint(LLMCallStart(model="m", provider="openai"), server)
            yield LLMCallEnd()
            yield Usage(input_tokens=1, output_tokens=1)

    wrapper = otel_telemetry.wrapper(agent_name="agent")
    for _ in range(2):
        assert len([e async for e in wrapper(run())]) == 3 * len(order)

    expected = [server or (None, None) for server in order] * 2
    assert [_server(a) for a in _chats(otel_telemetry)] == expected
    points = otel_telemetry.histograms()["gen_ai.client.operation.duration"]
    assert {_server(p.attributes): p.count for p in points} == {
        ("a.example", 443): 4, (None, None): 4, ("b.example", 8443): 2,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("given", "server"),
    [
        ({"api_base": f"https://me:{SECRET}@proxy.example:4000/v1?key={SECRET}"},
         ("proxy.example", 4000)),
        ({"base_url": "http://[::1]/v1"}, ("::1", 80)),
    ],
    ids=["api_base", "base_url"],
)  # fmt: skip
async def test_a_litellm_call_names_the_api_base_it_was_given(
    given: dict[str, str], server: tuple[str, int]
) -> None:
    """``api_base`` (or ``base_url``) given to LiteLLM names the call's server, its host and
    port alone; the URL itself is not among the request's parameters."""
    pytest.importorskip("litellm")
    from agent_contract.sources.litellm_chat import stream_litellm

    start = await first_start(stream_litellm(None, HISTORY, "openai/gpt-4o-mini", **given))
    address = getattr(start, "server_address", None), getattr(start, "server_port", None)
    assert address == server
    assert not set(given) & set(start.params)


async def test_framework_models_on_an_sdk_client_name_its_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The Agents SDK's model on its own OpenAI client and pydantic-ai's ``OpenAIChatModel``
    (its ``base_url``, as pydantic-ai's own spans read it): their chat spans name the
    client's server."""
    pytest.importorskip("agents")
    pytest.importorskip("pydantic_ai")
    from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from agent_contract.sources.openai_agents import openai_agents_events
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    def client(base_url: str) -> Any:
        body = sse(_recorded.chat(tools=False), done=True)
        return openai.AsyncOpenAI(api_key="test", base_url=base_url, http_client=transport(body))

    set_tracing_disabled(True)
    own = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client(
        f"https://agents:{SECRET}@gateway.example:9443/v1"))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(Agent(name="a", model=own), "hi"),
                     agent_name="a")  # fmt: skip
    provider = OpenAIProvider(openai_client=client("http://127.0.0.1:11434/v1"))
    agent = PydanticAgent(OpenAIChatModel("gpt-4o-mini", provider=provider))
    await run_script(otel_telemetry, pydantic_ai_events(agent, "hi"), agent_name="p")

    assert sorted(_server(a) for a in _chats(otel_telemetry)) == [
        ("127.0.0.1", 11434), ("gateway.example", 9443),
    ]  # fmt: skip


async def test_a_smolagents_model_names_its_clients_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """smolagents' ``OpenAIModel`` (its ``api_base``, on the OpenAI client it makes): each of
    the run's chat spans names that server."""
    pytest.importorskip("smolagents")
    from . import _fw_smolagents, _script

    await run_script(otel_telemetry, _fw_smolagents.events(_script.Run()), agent_name="s")

    servers = {_server(a) for a in _chats(otel_telemetry)}
    assert servers == {("mock.invalid", 80)}


def test_a_bedrock_clients_server_is_its_regions_endpoint() -> None:
    """A botocore client (Bedrock's, as smolagents' ``AmazonBedrockModel`` and others hold
    it) names the endpoint its region resolves to, or the ``endpoint_url`` it was given."""
    boto3 = pytest.importorskip("boto3")
    from agent_contract.sources._endpoint import client_endpoint

    regional = boto3.client("bedrock-runtime", region_name="eu-west-1",
                            aws_access_key_id="x", aws_secret_access_key="y")  # fmt: skip
    given = boto3.client("bedrock-runtime", region_name="us-east-1",
                         endpoint_url="http://localhost:4566", aws_access_key_id="x",
                         aws_secret_access_key="y")  # fmt: skip
    assert client_endpoint(regional) == ("bedrock-runtime.eu-west-1.amazonaws.com", 443)
    assert client_endpoint(given) == ("localhost", 4566)


async def test_each_autogen_speaker_names_its_own_model_clients_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A round-robin team of two ``AssistantAgent`` s, one on autogen-ext's
    ``OpenAIChatCompletionClient`` (a gateway whose URL carries a password), one on its
    ``AzureOpenAIChatCompletionClient``: each chat span names the server of the SDK client its
    speaker's model client made (the Azure resource's endpoint), its host and port alone."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import (
        AzureOpenAIChatCompletionClient,
        OpenAIChatCompletionClient,
    )

    from agent_contract.sources.autogen_stream import autogen_events

    gpt = OpenAIChatCompletionClient(
        model="gpt-4o-mini", api_key="test", base_url=f"https://u:{SECRET}@gw.example:8443/v1",
        http_client=transport(sse(_recorded.chat(tools=False), done=True)),
    )  # fmt: skip
    azure = AzureOpenAIChatCompletionClient(
        model="gpt-4o-mini", api_key="test", azure_endpoint="https://My-Resource.openai.azure.com",
        azure_deployment="mini", api_version="2024-10-21",
        http_client=transport(sse(_recorded.chat(tools=False), done=True)),
    )  # fmt: skip
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=gpt, model_client_stream=True),
         AssistantAgent("b", model_client=azure, model_client_stream=True)],
        termination_condition=MaxMessageTermination(3),
    )  # fmt: skip
    await run_script(otel_telemetry, autogen_events(team, "hi"), agent_name="team")

    assert [_server(a) for a in _chats(otel_telemetry)] == [
        ("gw.example", 8443), ("my-resource.openai.azure.com", 443),
    ]  # fmt: skip
    others = [s for s in otel_telemetry.spans() if not s.name.startswith("chat")]
    assert others and all(_server(s.attributes) == (None, None) for s in others)
    every = [v for s in otel_telemetry.spans() for v in (s.attributes or {}).values()]
    assert not any(SECRET in str(v) for v in every)


async def test_an_agno_call_names_its_models_server_and_a_fallbacks_its_own(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Agno agent's ``OpenAIChat`` given no ``base_url`` (its SDK client made only as the
    request is sent: the SDK's default server), refused, then its fallback model on a gateway
    whose URL carries a password: the failed call names OpenAI's API, the fallback's call
    its gateway, the host and port alone."""
    pytest.importorskip("agno")
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    from . import _script_chat as chat
    from ._sdk_row import refused

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    primary = OpenAIChat(id="gpt-4o", api_key="test", max_retries=0,
                         client_params={"http_client": transport(refused)})  # fmt: skip
    answered = {"http_client": transport(chat.answer("Sunny."))}
    backup = OpenAIChat(id="gpt-4o-mini", api_key="test", client_params=answered,
                        base_url=f"https://u:{SECRET}@Gateway.example:8443/v1")  # fmt: skip
    agent = Agent(model=primary, fallback_models=[backup], name="a", telemetry=False)
    await run_script(otel_telemetry, agno_events(agent, "Weather?"), agent_name="a")

    servers = {s.name: _server(s.attributes) for s in otel_telemetry.spans()}
    assert servers == {
        "invoke_agent a": (None, None), "step 0": (None, None),
        "chat gpt-4o": ("api.openai.com", 443), "chat gpt-4o-mini": ("gateway.example", 8443),
    }  # fmt: skip
    every = [v for s in otel_telemetry.spans() for v in (s.attributes or {}).values()]
    assert not any(SECRET in str(v) for v in every)


async def test_each_agno_team_member_names_its_own_models_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An Agno team's leader on one server delegates to a member agent on another: the
    leader's chat spans name the leader's model's server, the member's (in its nested run)
    its own."""
    pytest.importorskip("agno")
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from agent_contract.sources.agno_stream import agno_events

    from . import _script_chat as chat

    def model(url: str, *bodies: bytes) -> Any:
        return OpenAIChat(id="gpt-4o-mini", api_key="test", base_url=url,
                          client_params={"http_client": transport(*bodies)})  # fmt: skip

    ask = chat.call("delegate_task_to_member", {"member_id": "clerk", "task": "Paris?"}, "c1")
    clerk = Agent(model=model("http://member.example:8000/v1", chat.answer("Paris.")),
                  name="clerk", telemetry=False)  # fmt: skip
    leader = model("https://lead.example/v1", ask, chat.answer("It is Paris."))
    lead = Team(members=[clerk], model=leader, name="lead", telemetry=False)
    await run_script(otel_telemetry, agno_events(lead, "Where?"), agent_name="lead")

    def span(name: str, *children: Any) -> dict[str, Any]:
        return {"name": name, "kind": "INTERNAL", "attributes": {}, "children": list(children)}

    def chat_at(host: str, port: int) -> dict[str, Any]:
        server = {"server.address": host, "server.port": port}
        return {"name": "chat gpt-4o-mini", "kind": "CLIENT", "attributes": server,
                "children": []}  # fmt: skip

    lead_server, member = chat_at("lead.example", 443), chat_at("member.example", 8000)
    assert otel_telemetry.tree(attributes=("server.address", "server.port"), events=False) == [
        span("invoke_agent lead",
             span("step 0", lead_server, span("execute_tool delegate_task_to_member",
                  span("invoke_agent clerk", span("step 0", member)))),
             span("step 1", lead_server))
    ]  # fmt: skip


def test_a_model_object_whose_properties_raise_names_no_server() -> None:
    """A framework's model object whose client, URL and config properties raise (a proxy, a
    half-built object): each adapter's reading of its server gives none, and raises
    nothing; a client of none of the SDKs' shapes names none either."""
    from agent_contract.sources import agno_stream, crewai_stream, strands_stream
    from agent_contract.sources._endpoint import client_endpoint, held_endpoint

    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"no {name}")

        @property
        def client_params(self) -> Any:
            raise RuntimeError("no params")

    names = ("client", "_client", "async_client", "base_url", "api_base", "endpoint")
    assert held_endpoint(Hostile(), names, names) is None
    assert client_endpoint(Hostile()) is None
    assert client_endpoint(object()) is None
    for read in (agno_stream._server, crewai_stream._server, strands_stream._server):
        assert read(Hostile()) is None

"""smolagents specifics the conformance script does not reach: streamed outputs, the sink."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.protocol import AgentEvent, LLMCallStart, TextDelta, ToolCall, ToolResult
from agent_otel.testing import InMemoryTelemetry

from . import _recorded
from ._http import sse
from ._trace import spans_saying, tokens


def _final(answer: str) -> list[dict[str, Any]]:
    """A streamed turn calling smolagents' ``final_answer`` tool, usage last."""
    head = {"id": "chatcmpl-B", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-4o-mini-2024-07-18"}  # fmt: skip
    call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "final_answer", "arguments": json.dumps({"answer": answer})},
    }
    usage = {"prompt_tokens": 200, "completion_tokens": 12, "total_tokens": 212}
    return [
        {**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**head, "choices": [], "usage": usage},
    ]  # fmt: skip


def _agent() -> Any:
    import httpx2 as httpx

    bodies = iter([sse(_recorded.chat(tools=True), done=True), sse(_final("Sunny."), done=True)])

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=next(bodies))  # fmt: skip

    return _over_mock(respond, "ToolCallingAgent", stream=True)


def _over_mock(respond: Any, kind: str, *, stream: bool) -> Any:
    """A smolagents ``kind`` agent with the ``weather`` tool, its ``OpenAIModel`` answered by
    ``respond`` over the OpenAI SDK's mock transport."""
    pytest.importorskip("smolagents")
    import httpx2 as httpx
    import smolagents
    from smolagents import OpenAIModel, tool

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    client = {"http_client": httpx.Client(transport=httpx.MockTransport(respond)),
              "max_retries": 0}  # fmt: skip
    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client)  # fmt: skip
    build = getattr(smolagents, kind)
    return build(tools=[weather], model=model, verbosity_level=0, stream_outputs=stream)


async def test_streamed_outputs_are_text_deltas_and_usage_comes_once_per_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.smolagents_stream import smolagents_events

    kept: list[Any] = []
    events: list[AgentEvent] = [
        e
        async for e in otel_telemetry.wrapper(agent_name="agent")(
            smolagents_events(_agent(), "?", sink=kept.append)
        )
    ]

    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Checking both.Sunny."  # streamed words, then the final answer
    starts = [e for e in events if isinstance(e, LLMCallStart)]
    assert [s.params["stream"] for s in starts] == [True, True]
    assert [e.id for e in events if isinstance(e, ToolCall)] == ["call_p", "call_r"]
    assert sorted(str(e.content) for e in events if isinstance(e, ToolResult)) == [
        "sunny in Paris", "sunny in Rome"]  # fmt: skip
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool weather", "execute_tool weather"]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 120 + 200  # smolagents' own counts, once per call
    assert type(kept[-1]).__name__ == "FinalAnswerStep" and kept[-1].output == "Sunny."
    assert otel_telemetry.open_spans() == []


# --- each model call's output is on its own chat span ------------------------------------------
ANSWER = "Sunny in Paris."
_TOOLING = [  # ToolCallingAgent: words beside a tool call, then the final_answer tool
    ("Checking Paris.", [("call_w", "weather", {"city": "Paris"})]),
    (None, [("call_a", "final_answer", {"answer": ANSWER})]),
]
_CODE = [  # CodeAgent: its model writes code; the last calls final_answer
    ("Thought: look it up.\n<code>\nprint(weather('Paris'))\n</code>", []),
    (f"Thought: done.\n<code>\nfinal_answer('{ANSWER}')\n</code>", []),
]


def _reply(turn: int, text: str | None, calls: list[Any], stream: bool) -> Any:
    """Turn ``turn`` as Chat Completions sends it: one body, or SSE chunks when streamed."""
    import httpx2 as httpx

    usage = {"prompt_tokens": 50 + turn, "completion_tokens": 9, "total_tokens": 59 + turn}
    tool_calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                  for i, n, a in calls]  # fmt: skip
    finish = "tool_calls" if calls else "stop"
    head = {"id": f"chatcmpl-{turn}", "created": 0, "model": "gpt-4o-mini-2024-07-18"}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = tool_calls
        body = {**head, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
        return httpx.Response(200, json=body)
    head["object"] = "chat.completion.chunk"
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    half = len(text or "") // 2  # the text in two chunks, the calls' arguments in two
    deltas += [{"content": part} for part in ((text or "")[:half], (text or "")[half:]) if part]
    for index, call in enumerate(tool_calls):
        arguments = call["function"]["arguments"]
        first = {**call, "function": {"name": call["function"]["name"], "arguments": arguments[:5]}}
        deltas.append({"tool_calls": [{"index": index, **first}]})
        deltas.append({"tool_calls": [{"index": index, "function": {"arguments": arguments[5:]}}]})
    chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]  # fmt: skip
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**head, "choices": [], "usage": usage})
    return httpx.Response(200, headers={"content-type": "text/event-stream"},
                          content=sse(chunks, done=True))  # fmt: skip


def _scripted(kind: str, stream: bool) -> Any:
    """A ``kind`` agent whose ``OpenAIModel`` plays ``_TOOLING`` or ``_CODE`` (SSE when
    ``stream``), over the OpenAI SDK's mock transport."""
    pytest.importorskip("smolagents")
    import httpx2 as httpx

    script = iter(enumerate(_TOOLING if kind == "ToolCallingAgent" else _CODE))

    def respond(request: httpx.Request) -> httpx.Response:
        turn, (text, calls) = next(script)
        return _reply(turn, text, calls, json.loads(request.content).get("stream", False))  # type: ignore[no-any-return]

    return _over_mock(respond, kind, stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("kind", ["ToolCallingAgent", "CodeAgent"])
async def test_each_chat_span_shows_what_its_model_produced_and_the_run_its_answer_once(
    kind: str, stream: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """With capture on, each chat span's output is what its model call produced, the answer
    included: the words beside a tool call, the ``final_answer`` call's answer (a
    ToolCallingAgent), the code that calls ``final_answer`` (a CodeAgent); each span ends when
    its response did, before the tools it asked for ran. The run's output is the final
    answer, once, as the ``FinalAnswerStep`` has it."""
    from agent_contract.sources.smolagents_stream import smolagents_events

    kept: list[Any] = []
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    events = [e async for e in traced(smolagents_events(_scripted(kind, stream), "?",
                                                        sink=kept.append))]  # fmt: skip

    assert type(kept[-1]).__name__ == "FinalAnswerStep" and kept[-1].output == ANSWER
    spans = sorted(otel_telemetry.spans(), key=lambda sp: sp.start_time or 0)
    chats = [sp for sp in spans if sp.name == "chat gpt-4o-mini"]
    outputs = [json.loads((sp.attributes or {})["gen_ai.output.messages"]) for sp in chats]
    texts = ["".join(p["content"] for m in out for p in m["parts"] if p["type"] == "text")
             for out in outputs]  # fmt: skip
    script = _TOOLING if kind == "ToolCallingAgent" else _CODE
    if kind == "ToolCallingAgent":
        assert texts == [script[0][0], ANSWER]
    else:
        assert texts == [text for text, _ in script]
    [root] = [sp for sp in spans if sp.name == "invoke_agent agent"]
    assert (root.attributes or {})["output.value"] == ANSWER
    told = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert told.count(ANSWER) == 1 + (kind == "CodeAgent")  # the code's answer, after the code
    tools = [sp for sp in spans if sp.name.startswith("execute_tool")]
    assert tools and (chats[0].end_time or 0) <= (tools[0].start_time or 0)
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("capture", [True, False], ids=["capture_on", "capture_off"])
async def test_a_step_error_smolagents_feeds_back_to_the_model_is_content(
    capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """A CodeAgent answer with no code: smolagents' parsing error, which quotes the whole
    answer and is what the model is told at its next step, fails its step with its class;
    its text describes the step only where content goes on spans."""
    pytest.importorskip("smolagents")
    from opentelemetry.trace import StatusCode
    from smolagents import CodeAgent, OpenAIModel

    from agent_contract.sources.smolagents_stream import smolagents_events
    from agent_otel.testing import run_script

    from . import _fw_smolagents as fs

    answers = iter(["I think the answer is private words, no code here",
                    "Thought: done.\n<code>\nfinal_answer('done')\n</code>"])  # fmt: skip
    model = OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=fs.client(lambda _: fs.completion(0, next(answers), [])),
                        retry=False)  # fmt: skip
    built = CodeAgent(tools=[], model=model, verbosity_level=0)
    source = smolagents_events(built, "Weather?")
    await run_script(otel_telemetry, source, agent_name="a", capture_content=capture)

    step = otel_telemetry.span("step 0")
    assert step.status.status_code is StatusCode.ERROR
    assert (step.attributes or {})["error.type"] == "AgentParsingError"
    if capture:
        assert "private words" in (step.status.description or "")
    else:  # nowhere on any span: status, attributes or events
        assert spans_saying(otel_telemetry, "private words") == []
    assert otel_telemetry.span("invoke_agent a").status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


_LOOPING = {  # each step asks for weather again, until max_steps; then the final answer's text
    "ToolCallingAgent": (None, [("call_w", "weather", {"city": "Paris"})]),
    "CodeAgent": ("Thought: look it up.\n<code>\nprint(weather('Paris'))\n</code>", []),
}


@pytest.mark.parametrize("kind", ["ToolCallingAgent", "CodeAgent"])
async def test_a_run_reaching_max_steps_counts_its_final_call_once_and_fails_its_step(
    kind: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """At ``max_steps`` smolagents asks the model for a final answer and yields the step before
    it again: the final call has its own tokens (not that step's again), its step fails with
    ``AgentMaxStepsError``, and its text is the run's answer, told once: no step after it."""
    import httpx2 as httpx

    from agent_contract.sources.smolagents_stream import smolagents_events

    turns = iter(range(3))

    def respond(request: httpx.Request) -> httpx.Response:
        turn = next(turns)
        text, calls = _LOOPING[kind] if turn < 2 else (ANSWER, [])
        return _reply(turn, text, calls, stream=False)  # type: ignore[no-any-return]

    agent = _over_mock(respond, kind, stream=False)
    agent.max_steps = 2
    kept: list[Any] = []
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    events = [e async for e in traced(smolagents_events(agent, "?", sink=kept.append))]

    assert kept[-1].output == ANSWER
    chats = sorted((s for s in otel_telemetry.spans() if s.name == "chat gpt-4o-mini"),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    assert [(s.attributes or {})["gen_ai.usage.input_tokens"] for s in chats] == [50, 51, 52]
    assert tokens(otel_telemetry) == 50 + 51 + 52
    steps = {s.name: s for s in otel_telemetry.spans() if s.name.startswith("step ")}
    assert sorted(steps) == ["step 0", "step 1", "step 2"]
    assert (steps["step 2"].attributes or {})["error.type"] == "AgentMaxStepsError"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).count(ANSWER) == 1
    root = otel_telemetry.span("invoke_agent agent")
    assert (root.attributes or {})["output.value"] == ANSWER
    assert (root.attributes or {})["agent_otel.end_reason"] == "exhausted"
    assert otel_telemetry.open_spans() == []


class CallbackFailed(RuntimeError):
    """A step callback of the application's failing."""


@pytest.mark.parametrize("at", ["first step", "max_steps step"])
@pytest.mark.parametrize("kind", ["ToolCallingAgent", "CodeAgent"])
async def test_a_step_callback_that_raises_leaves_each_call_its_tokens(
    kind: str, at: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """A ``step_callbacks`` callback raising ends the run with its exception, the same object;
    smolagents never yields the step it was handed, so its answered call lost its tokens (the
    step's usage). Each call keeps them, once, and the run fails with the callback's class."""
    import httpx2 as httpx
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.smolagents_stream import smolagents_events

    turns = iter(range(3))

    def respond(request: httpx.Request) -> httpx.Response:
        turn = next(turns)
        text, calls = _LOOPING[kind] if turn < 2 else (ANSWER, [])
        return _reply(turn, text, calls, stream=False)  # type: ignore[no-any-return]

    raised = CallbackFailed("the application's callback")

    def callback(step: Any, agent: Any) -> None:
        last = type(getattr(step, "error", None)).__name__ == "AgentMaxStepsError"
        if at == "first step" or last:
            raise raised

    agent = _over_mock(respond, kind, stream=False)
    agent.max_steps = 2
    agent.step_callbacks.register(_action_step(), callback)
    traced = otel_telemetry.wrapper(agent_name="agent")
    with pytest.raises(CallbackFailed) as caught:
        [_ async for _ in traced(smolagents_events(agent, "?"))]

    assert caught.value is raised
    made = [50] if at == "first step" else [50, 51, 52]
    chats = sorted((s for s in otel_telemetry.spans() if s.name == "chat gpt-4o-mini"),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    assert [(s.attributes or {}).get("gen_ai.usage.input_tokens") for s in chats] == made
    assert tokens(otel_telemetry) == sum(made)
    root = otel_telemetry.span("invoke_agent agent")
    assert root.status.status_code is StatusCode.ERROR
    assert (root.attributes or {})["error.type"] == "CallbackFailed"
    assert otel_telemetry.open_spans() == []


def _action_step() -> Any:
    from smolagents.memory import ActionStep

    return ActionStep


async def test_the_tools_a_code_agents_code_calls_are_spans_under_its_code_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A CodeAgent's code calling tools runs them all inside its one ``python_interpreter``
    call: each is an ``execute_tool`` span under that call's, with its arguments and result,
    none a call of the model's (the chat span's output is the code alone)."""
    import httpx2 as httpx

    from agent_contract.sources.smolagents_stream import smolagents_events

    code = "Thought: both.\n<code>\nprint(weather('Paris'))\nprint(weather(city='Rome'))\n</code>"
    turns = iter([(code, []), (f"Thought: done.\n<code>\nfinal_answer('{ANSWER}')\n</code>", [])])

    def respond(request: httpx.Request) -> httpx.Response:
        text, calls = next(turns)
        return _reply(0, text, calls, stream=False)  # type: ignore[no-any-return]

    agent = _over_mock(respond, "CodeAgent", stream=False)
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    [_ async for _ in traced(smolagents_events(agent, "?"))]

    outline = otel_telemetry.outline()
    assert outline[0][1][0] == [
        "step 0", ["chat gpt-4o-mini", ["execute_tool python_interpreter", [
            "execute_tool weather", "execute_tool weather"]]],
    ]  # fmt: skip
    weathers = sorted((s for s in otel_telemetry.spans() if s.name == "execute_tool weather"),
                      key=lambda s: s.start_time or 0)  # fmt: skip
    told = [(json.loads(str((s.attributes or {})["gen_ai.tool.call.arguments"])),
             str((s.attributes or {})["gen_ai.tool.call.result"])) for s in weathers]  # fmt: skip
    assert [arguments for arguments, _ in told] == [{"city": "Paris"}, {"city": "Rome"}]
    assert ["sunny in" in result for _, result in told] == [True, True]
    chat = min((s for s in otel_telemetry.spans() if s.name == "chat gpt-4o-mini"),
               key=lambda s: s.start_time or 0)  # fmt: skip
    assert "execute_tool" not in str((chat.attributes or {}).get("gen_ai.output.messages"))
    assert otel_telemetry.open_spans() == []

"""A sub-agent run inside a framework's tool nests under that tool's span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script


async def test_a_pydantic_ai_agent_delegating_to_another_nests_its_run_under_the_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from . import _fw_pydantic_ai

    await _fw_pydantic_ai.subagent(otel_telemetry, "lead-model", "expert-model")

    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat lead-model",
                        ["execute_tool ask_expert", [
                            ["invoke_agent expert", [["step 0", ["chat expert-model"]]]],
                        ]]]],
            ["step 1", ["chat lead-model"]],
        ]],
    ]  # fmt: skip


async def test_pydantic_ai_delegations_run_in_parallel_each_nest_under_their_own_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two delegations asked for at once run interleaved: each sub-agent run (its chat, its
    tokens, its answer) lands under the tool span of the call that ran it, not the step's."""
    pytest.importorskip("pydantic_ai")
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.protocol import TextDelta
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {i: DeltaToolCall(name="ask_expert", json_args=f'{{"q": "{city}"}}',
                                    tool_call_id=f"d-{city}")
                   for i, city in enumerate(("Paris", "Rome"))}  # fmt: skip
        else:
            yield "Both sunny."

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        question = messages[0].parts[-1].content
        for word in ("sunny", " in ", question):
            await asyncio.sleep(0)  # the two runs interleave
            yield word

    expert = Agent(FunctionModel(stream_function=answer, model_name="expert-model"), name="expert")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead")
    answers: dict[str, str] = {}

    @boss.tool_plain
    async def ask_expert(q: str) -> str:
        events = await run_script(
            otel_telemetry, pydantic_ai_events(expert, q), agent_name="expert", capture_content=True
        )
        answers[q] = "".join(e.text for e in events if isinstance(e, TextDelta))
        return answers[q]

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    expert_run = ["invoke_agent expert", [["step 0", ["chat expert-model"]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat lead-model", ["execute_tool ask_expert", [expert_run]],
                        ["execute_tool ask_expert", [expert_run]]]],
            ["step 1", ["chat lead-model"]],
        ]],
    ]  # fmt: skip
    assert answers == {"Paris": "sunny in Paris", "Rome": "sunny in Rome"}
    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    for run in otel_telemetry.by_name()["invoke_agent expert"]:
        assert run.parent is not None
        tool = dict(by_id[run.parent.span_id].attributes or {})
        [chat] = [s for s in spans if s.name == "chat expert-model" and s.parent
                  and by_id[s.parent.span_id].parent.span_id == run.context.span_id]  # fmt: skip
        asked = tool["gen_ai.tool.call.id"].removeprefix("d-")
        assert f"in {asked}" in str(dict(chat.attributes or {})["gen_ai.output.messages"])
        assert dict(chat.attributes or {})["gen_ai.usage.output_tokens"] >= 1
    assert otel_telemetry.open_spans() == []


class Overloaded(RuntimeError):
    """The expert's model failing."""


def _delegation(
    expert_answer: Any, *, parallel: bool = False, **expert_options: Any
) -> tuple[Any, Any]:
    """A lead asking ``ask_expert`` (twice at once with ``parallel``), then answering; the
    expert a plain agent on ``FunctionModel(expert_answer)`` (not streamed: ``run()`` makes
    unstreamed requests), with a ``lookup`` tool of its own (``expert_options``: its other
    ``Agent`` options)."""
    from pydantic_ai import Agent, RunContext, Tool
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            cities = ("Paris", "Rome") if parallel else ("Paris",)
            yield {i: DeltaToolCall(name="ask_expert", json_args=f'{{"q": "{city}"}}',
                                    tool_call_id=f"d-{city}")
                   for i, city in enumerate(cities)}  # fmt: skip
        else:
            yield "The expert says: sunny."

    expert = Agent(FunctionModel(expert_answer, model_name="expert-model"), name="expert",
                   **expert_options)  # fmt: skip

    @expert.tool_plain
    def lookup(city: str) -> str:
        return f"sunny in {city}"

    async def ask_expert(ctx: Any, q: str) -> str:  # pydantic-ai's delegation, as documented
        return str((await expert.run(q, usage=ctx.usage)).output)

    ask_expert.__annotations__["ctx"] = RunContext[None]  # not a string: resolved here
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead",
                 tools=[Tool(ask_expert, takes_ctx=True)])  # fmt: skip
    return boss, expert


def _looks_up(messages: list[Any], info: Any) -> Any:
    """The expert: look the city up, then answer with what it found."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

    last = messages[-1].parts[-1]
    if last.part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("lookup", {"city": last.content},
                                                 tool_call_id=f"l-{last.content}")])  # fmt: skip
    return ModelResponse(parts=[TextPart(str(last.content))])


@pytest.mark.parametrize("parallel", [False, True], ids=["one", "two at once"])
async def test_a_plain_pydantic_ai_delegation_is_a_run_nested_under_its_tool(
    otel_telemetry: InMemoryTelemetry, parallel: bool
) -> None:
    """pydantic-ai's own delegation pattern, ``await expert.run(q, usage=ctx.usage)`` in a
    tool: the expert's calls, tool and tokens were in no span (the trace's tokens fell short
    of the run's ``usage``); now it is a run nested under the tool that ran it, tokens once."""
    pytest.importorskip("pydantic_ai")
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    from ._trace import tokens

    boss, _ = _delegation(_looks_up, parallel=parallel)

    results: list[Any] = []
    source = pydantic_ai_events(boss, "Weather?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="lead", capture_content=True)

    expert_run = ["invoke_agent expert", [
        ["step 0", ["chat expert-model", "execute_tool lookup"]], ["step 1", ["chat expert-model"]],
    ]]  # fmt: skip
    asks = [["execute_tool ask_expert", [expert_run]]] * (2 if parallel else 1)
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat lead-model", *asks]], ["step 1", ["chat lead-model"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == results[0].usage.input_tokens  # every call, once
    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    for run in otel_telemetry.by_name()["invoke_agent expert"]:
        asked = str(dict(by_id[run.parent.span_id].attributes or {})["gen_ai.tool.call.id"])
        assert f"sunny in {asked.removeprefix('d-')}" in str(
            dict(run.attributes or {})["gen_ai.output.messages"]
        )
    assert otel_telemetry.open_spans() == []


async def test_a_delegate_that_fails_marks_its_own_call_run_and_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The expert's model raises: its chat span, its run, the tool that ran it and the lead's
    run fail with that exception's class; the lead's own calls do not."""
    pytest.importorskip("pydantic_ai")
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    def broken(messages: list[Any], info: Any) -> Any:
        raise Overloaded("down")

    boss, _ = _delegation(broken)

    with pytest.raises(Overloaded):
        await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    failed = {s.name: dict(s.attributes or {}).get("error.type") for s in otel_telemetry.spans()
              if s.status.status_code is StatusCode.ERROR}  # fmt: skip
    assert failed == dict.fromkeys(
        [
            "chat expert-model",
            "invoke_agent expert",
            "execute_tool ask_expert",
            "invoke_agent lead",
        ],
        "Overloaded",
    )
    assert otel_telemetry.open_spans() == []


async def test_an_agent_run_outside_a_traced_tool_is_pydantic_ais_own() -> None:
    """No traced run around it (or not in a tool body): ``run()`` is untouched, also after an
    adapter's run made ``Agent.iter`` record delegations."""
    pytest.importorskip("pydantic_ai")
    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    _, expert = _delegation(_looks_up)
    boss, _ = _delegation(_looks_up)

    results: list[Any] = []
    [_ async for _ in pydantic_ai_events(boss, "Weather?", on_result=results.append)]
    assert results[0].output == "The expert says: sunny."
    assert (await expert.run("Oslo")).output == "sunny in Oslo"


def _retried(kind: str) -> tuple[Any, Any]:
    """A delegation whose expert's first answer pydantic-ai sends back: ``arguments``, a
    ``lookup`` call whose arguments fail its schema; ``unknown_tool``, a call of a tool the
    expert does not have; ``validator``, text an output validator
    refuses with ``ModelRetry``; ``output_function``, a call of the output function, which
    raises ``ModelRetry``. Each then answers well."""
    from pydantic_ai import ModelRetry
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

    def answer(messages: list[Any], info: Any) -> Any:
        first = len(messages) == 1
        if kind in ("arguments", "unknown_tool"):
            if first:
                name, args = ("lookup", {"town": 5}) if kind == "arguments" else ("nowhere", {})
                return ModelResponse(parts=[ToolCallPart(name, args, "l-bad")])
            return ModelResponse(parts=[TextPart("sunny")])
        if kind == "validator":
            return ModelResponse(parts=[TextPart("dunno" if first else "sunny")])
        sky = "dunno" if first else "sunny"
        return ModelResponse(parts=[ToolCallPart("final_result", {"sky": sky}, f"o-{sky}")])

    def report(sky: str) -> str:
        """Report the sky."""
        if sky == "dunno":
            raise ModelRetry("look at the sky")
        return sky

    options = {"output_type": report} if kind == "output_function" else {}
    boss, expert = _delegation(answer, **options)
    if kind == "validator":

        @expert.output_validator
        def sure(output: str) -> str:
            if output == "dunno":
                raise ModelRetry("say what the sky is")
            return output

    return boss, expert


@pytest.mark.parametrize("kind", ["arguments", "unknown_tool", "validator", "output_function"])
async def test_a_delegates_retried_answer_fails_its_call_or_step_as_a_run_of_its_own_does(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """What pydantic-ai sends back to a delegate's model (arguments failing a tool's schema, an
    output validator's or output function's ``ModelRetry``) never reaches a tool body: as in a
    run streamed through the adapter, a call whose arguments failed is a failed call
    (``ValidationError``) in its step, a call of a tool the agent lacks too (``ModelRetry``,
    pydantic-ai's retry for it), and an answer sent back fails its step (``ModelRetry``),
    the retried request a step of its own. Before, the failed call had no span and the retried
    request shared the step of the answer it replaced, nothing marked."""
    pytest.importorskip("pydantic_ai")
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    boss, _ = _retried(kind)
    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    chat = "chat expert-model"
    called = {"arguments": "execute_tool lookup", "unknown_tool": "execute_tool nowhere"}
    first = [chat, called[kind]] if kind in called else [chat]
    steps = [["step 0", first], ["step 1", [chat]]]  # the retried request answers
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat lead-model", ["execute_tool ask_expert", [
            ["invoke_agent expert", steps]]]]],
        ["step 1", ["chat lead-model"]],
    ]]]  # fmt: skip
    failed = {(s.name, dict(s.attributes or {}).get("error.type")) for s in otel_telemetry.spans()
              if s.status.status_code is StatusCode.ERROR}  # fmt: skip
    if kind in called:
        reason = "ValidationError" if kind == "arguments" else "ModelRetry"
        assert failed == {(called[kind], reason)}
        [bad] = [s for s in otel_telemetry.spans()
                 if dict(s.attributes or {}).get("gen_ai.tool.call.id") == "l-bad"]  # fmt: skip
        assert bad.status.status_code is StatusCode.ERROR
    else:
        assert failed == {("step 0", "ModelRetry")}
        [refused] = [s for s in otel_telemetry.spans() if s.status.status_code is StatusCode.ERROR]
        assert otel_telemetry.by_name()["invoke_agent expert"][0].context.span_id == (
            refused.parent.span_id if refused.parent else None
        )
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("seam", ["history processor", "before_model_request"])
async def test_an_agent_run_preparing_a_pydantic_ai_request_nests_in_that_requests_step(
    otel_telemetry: InMemoryTelemetry, seam: str
) -> None:
    """An agent run while pydantic-ai prepares a request (a ``ProcessHistory`` function
    summarising the history with another agent, or any capability's ``before_model_request``)
    was in no span: its model call and tokens were lost. It is a run of its own in the step
    of the request it prepared, beside that request's call, its tokens counted once."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    from ._trace import tokens

    summaries: list[Any] = []
    summarizer = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("short")]),
                      model_name="summary-model"),
        name="summarizer",
    )  # fmt: skip

    async def summarise(messages: list[Any]) -> list[Any]:
        summaries.append((await summarizer.run("Summarise the conversation.")).usage)
        return messages

    class Summarising(AbstractCapability[Any]):
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            await summarise([])
            return request_context

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name="lookup", json_args='{"city": "Paris"}',
                                    tool_call_id="l-1")}  # fmt: skip
        else:
            yield "Sunny."

    capability = ProcessHistory(summarise) if seam == "history processor" else Summarising()
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead",
                 capabilities=[capability])  # fmt: skip

    @boss.tool_plain
    def lookup(city: str) -> str:
        return f"sunny in {city}"

    results: list[Any] = []
    source = pydantic_ai_events(boss, "Weather?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="lead")

    summary = ["invoke_agent summarizer", [["step 0", ["chat summary-model"]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat lead-model", summary, "execute_tool lookup"]],
        ["step 1", ["chat lead-model", summary]],
    ]]]  # fmt: skip
    assert len(summaries) == 2
    runs = {name: spans for name, spans in otel_telemetry.by_name().items()
            if name.startswith("invoke_agent")}  # fmt: skip
    models = {name: {dict(s.attributes or {}).get("gen_ai.request.model") for s in spans}
              for name, spans in runs.items()}  # fmt: skip
    # the nested runs name only their own model, never the run they prepare a request of
    assert models == {"invoke_agent lead": {"lead-model"},
                      "invoke_agent summarizer": {"summary-model"}}  # fmt: skip
    expected = results[0].usage.input_tokens + sum(u.input_tokens for u in summaries)
    assert tokens(otel_telemetry) == expected  # every call, once
    assert otel_telemetry.open_spans() == []


async def test_an_agent_run_checking_a_pydantic_ai_answer_nests_in_that_answers_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An output validator asking a judge agent about the answer: the judge's run was in no
    span. It is a run of its own in the answer's step, its tokens counted once."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    from ._trace import tokens

    verdicts: list[Any] = []
    judge = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("fine")]),
                                model_name="judge-model"), name="judge")  # fmt: skip

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield "Sunny."

    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead")

    @boss.output_validator
    async def judged(output: str) -> str:
        verdicts.append((await judge.run(f"Is {output!r} right?")).usage)
        return output

    results: list[Any] = []
    source = pydantic_ai_events(boss, "Weather?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="lead")

    assert results[0].output == "Sunny."
    judged_run = ["invoke_agent judge", [["step 0", ["chat judge-model"]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat lead-model", *[judged_run] * len(verdicts)]],
    ]]]  # fmt: skip
    assert verdicts
    expected = results[0].usage.input_tokens + sum(u.input_tokens for u in verdicts)
    assert tokens(otel_telemetry) == expected
    assert otel_telemetry.open_spans() == []

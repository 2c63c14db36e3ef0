"""Every name, field, default and signature the seeds and CONTRACT.md pin, checked by walking them.

The tables below were written from reading the seed documents and CONTRACT.md (not from the
implementation's output): a drift on either side fails here.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys
import typing
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel

import agent_contract.agent as agent_pkg
import agent_contract.agent.base as base_mod
import agent_contract.agent.events as agent_events_mod
import agent_contract.events as events_mod
import agent_contract.invoke as invoke_mod
import agent_contract.protocol as protocol_mod

REQUIRED = object()  # marker: the field has no default
EMPTY_DICT: dict[str, Any] = {}
EMPTY_LIST: list[Any] = []

M = events_mod
OptStr = str | None
OptInt = int | None

# (class name, [(field, type, default)]) for agent_contract.events: CONTRACT.md section 1.
EVENT_TABLE: list[tuple[str, list[tuple[str, Any, Any]]]] = [
    (
        "Message",
        [
            ("role", Literal["system", "user", "assistant", "tool"], REQUIRED),
            ("content", str | list[dict[str, Any]] | None, None),
            ("tool_calls", list[M.ToolCall] | None, None),
            ("tool_call_id", OptStr, None),
            ("name", OptStr, None),
        ],
    ),
    # Defaults as lenient as LiteLLM's Function (the seed is silent).
    ("FunctionCall", [("name", OptStr, None), ("arguments", str, "")]),
    (
        "ToolCall",
        [
            ("id", OptStr, REQUIRED),
            ("type", Literal["function"], "function"),
            ("function", M.FunctionCall, REQUIRED),
        ],
    ),
    (
        "ToolResult",
        [
            ("tool_call_id", str, REQUIRED),
            ("content", Any, None),
            ("name", OptStr, None),
            ("is_error", bool, False),
        ],
    ),
    ("TextDelta", [("text", str, REQUIRED)]),
    ("ReasoningDelta", [("text", str, REQUIRED)]),
    (
        "LLMCallStart",
        [
            ("model", OptStr, None),
            ("provider", OptStr, None),
            ("call_id", OptStr, None),
            ("params", dict[str, Any], EMPTY_DICT),
            ("messages", list[M.Message] | None, None),
        ],
    ),
    (
        "LLMCallEnd",
        [
            ("model", OptStr, None),
            ("call_id", OptStr, None),
            ("finish_reason", OptStr, None),
            ("response_id", OptStr, None),
        ],
    ),
    (
        "Usage",
        [
            ("input_tokens", OptInt, None),
            ("output_tokens", OptInt, None),
            ("total_tokens", OptInt, None),
            ("cache_read_tokens", OptInt, None),
            ("cache_creation_tokens", OptInt, None),
            ("reasoning_tokens", OptInt, None),
            ("model", OptStr, None),
        ],
    ),
    ("StepBoundary", [("index", OptInt, None)]),
    (
        "Error",
        [("message", str, REQUIRED), ("error_type", OptStr, None), ("fatal", bool, False)],
    ),
    ("JourneyMarker", [("name", str, REQUIRED), ("journey_id", OptStr, None)]),
    ("PhaseMarker", [("name", str, REQUIRED)]),
]

# The seed's eleven AgentEvent subclasses.
ELEVEN = [
    "TextDelta",
    "ReasoningDelta",
    "LLMCallStart",
    "LLMCallEnd",
    "ToolCall",
    "ToolResult",
    "StepBoundary",
    "Usage",
    "Error",
    "JourneyMarker",
    "PhaseMarker",
]

INVOKE_TABLE: list[tuple[str, list[tuple[str, Any, Any]]]] = [
    (
        "Step",
        [
            ("index", int, REQUIRED),
            ("text", str, ""),
            ("reasoning", str, ""),
            ("tool_calls", list[M.ToolCall] | None, None),
            ("tool_messages", list[M.Message], EMPTY_LIST),
            ("usage", M.Usage | None, None),
            ("errors", list[M.Error], EMPTY_LIST),
        ],
    ),
    (
        "InvokeResult",
        [
            ("text", str, REQUIRED),
            ("steps", list[invoke_mod.Step], REQUIRED),
            ("usage", M.Usage | None, REQUIRED),
        ],
    ),
]


def _dataclass_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return REQUIRED


@pytest.mark.parametrize(
    ("module", "name", "fields"),
    [(events_mod, n, f) for n, f in EVENT_TABLE] + [(invoke_mod, n, f) for n, f in INVOKE_TABLE],
    ids=[n for n, _ in EVENT_TABLE + INVOKE_TABLE],
)
def test_dataclass_fields_in_order(module: Any, name: str, fields: list[Any]) -> None:
    cls = getattr(module, name)
    assert dataclasses.is_dataclass(cls)
    assert "__slots__" in cls.__dict__, "declared with slots=True"
    actual = dataclasses.fields(cls)
    assert [f.name for f in actual] == [f[0] for f in fields]
    hints = typing.get_type_hints(cls)
    for f, (fname, ftype, default) in zip(actual, fields):
        assert hints[fname] == ftype, fname
        if cls is events_mod.ToolCall and fname == "function":
            continue  # required in practice, checked by behaviour below
        got = _dataclass_default(f)
        if default is REQUIRED:
            assert got is REQUIRED, fname
        else:
            assert got == default and type(got) is type(default), fname


def test_toolcall_function_is_required_but_type_may_be_omitted() -> None:
    fn = events_mod.FunctionCall(name="f", arguments="{}")
    with pytest.raises(TypeError):
        events_mod.ToolCall(id="a")
    assert events_mod.ToolCall(id="a", function=fn).type == "function"
    positional = events_mod.ToolCall("a", "function", fn)
    assert positional.function is fn


def test_eleven_event_kinds_share_a_fieldless_base() -> None:
    assert dataclasses.fields(events_mod.AgentEvent) == ()
    for name in ELEVEN:
        assert issubclass(getattr(events_mod, name), events_mod.AgentEvent), name
    kinds = {c.__name__ for c in events_mod.AgentEvent.__subclasses__()}
    assert kinds == set(ELEVEN)
    assert not issubclass(events_mod.Message, events_mod.AgentEvent)
    assert not issubclass(events_mod.FunctionCall, events_mod.AgentEvent)


def test_stream_wrapper_alias_and_collect_signature() -> None:
    event_iter = AsyncIterator[events_mod.AgentEvent]
    assert Callable[[event_iter], event_iter] == invoke_mod.StreamWrapper
    assert inspect.iscoroutinefunction(invoke_mod.collect)
    params = inspect.signature(invoke_mod.collect).parameters
    assert list(params) == ["events", "stream_wrapper", "messages"]
    assert params["stream_wrapper"].default is None
    # an addition (docs/contract.md): keyword-only, so the original's calls are unchanged
    assert params["messages"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["messages"].default is None


@pytest.mark.parametrize("cls", [protocol_mod.AgentProtocol, invoke_mod.StreamingAgent])
def test_stream_and_invoke_signatures(cls: type) -> None:
    stream = inspect.signature(cls.stream)  # type: ignore[attr-defined]
    assert [(p.name, p.default) for p in stream.parameters.values()] == [
        ("self", inspect.Parameter.empty),
        ("messages", inspect.Parameter.empty),
        ("config", None),
    ]
    invoke = cls.invoke  # type: ignore[attr-defined]
    assert inspect.iscoroutinefunction(invoke)
    assert [(p.name, p.default) for p in inspect.signature(invoke).parameters.values()] == [
        ("self", inspect.Parameter.empty),
        ("messages", inspect.Parameter.empty),
        ("stream_wrapper", None),
        ("config", None),
    ]
    assert not hasattr(cls, "reset"), "reset is optional and not part of the contract type"


def test_agent_protocol_is_a_runtime_checkable_protocol() -> None:
    proto = protocol_mod.AgentProtocol
    assert getattr(proto, "_is_protocol", False)
    assert getattr(proto, "_is_runtime_protocol", False)


# ---- seed 001 --------------------------------------------------------------------------

# (class, [(own field in declaration order, type, default)]): the seed's attribute tables.
STREAM_EVENT_TABLE: list[tuple[str, list[tuple[str, Any, Any]]]] = [
    ("StreamEvent", [("type", str, REQUIRED), ("final", bool, False)]),
    (
        "MessageDelta",
        [("type", Literal["message_delta"], "message_delta"), ("text", str, REQUIRED)],
    ),
    (
        "MessageFinal",
        [
            ("type", Literal["message_final"], "message_final"),
            ("text", str, REQUIRED),
            ("final", bool, True),
        ],
    ),
    (
        "ReasoningStep",
        [("type", Literal["reasoning_step"], "reasoning_step"), ("text", str, REQUIRED)],
    ),
    (
        "ToolCallStep",
        [
            ("type", Literal["tool_call_step"], "tool_call_step"),
            ("tool", str, REQUIRED),
            ("args", dict[str, Any], REQUIRED),
            ("call_id", str, REQUIRED),
        ],
    ),
    (
        "ToolResultStep",
        [
            ("type", Literal["tool_result_step"], "tool_result_step"),
            ("tool", str, REQUIRED),
            ("call_id", str, REQUIRED),
            ("result", Any, REQUIRED),
            ("is_error", bool, False),
        ],
    ),
    (
        "RunUsage",
        [
            ("type", Literal["run_usage"], "run_usage"),
            ("input_tokens", OptInt, None),
            ("output_tokens", OptInt, None),
            ("total_tokens", OptInt, None),
            ("model", OptStr, None),
        ],
    ),
    (
        "StructuredFinal",
        [
            ("type", Literal["structured_final"], "structured_final"),
            ("data", Any, REQUIRED),
            ("final", bool, True),
        ],
    ),
    (
        "InterruptFinal",
        [
            ("type", Literal["interrupt_final"], "interrupt_final"),
            ("interrupt_id", str, REQUIRED),
            ("payload", Any, REQUIRED),
            ("reason", OptStr, None),
            ("final", bool, True),
        ],
    ),
]

SPEC_TABLE: list[tuple[str, list[tuple[str, Any, Any]]]] = [
    (
        "PresetSpec",
        [
            ("name", str, REQUIRED),
            ("description", str, ""),
            ("base_tool", str, REQUIRED),
            ("fixed_kwargs", dict[str, Any], EMPTY_DICT),
        ],
    ),
    (
        "SubAgentSpec",
        [
            ("name", str, REQUIRED),
            ("description", str, ""),
            ("system_prompt", str, ""),
            ("tool_names", list[str], EMPTY_LIST),
            ("tools", list[Any], EMPTY_LIST),
            ("presets", list[base_mod.PresetSpec], EMPTY_LIST),
            ("skills", list[str], EMPTY_LIST),
            ("inline_skills", list[dict[str, Any]], EMPTY_LIST),
            ("response_format", type[BaseModel] | dict[str, Any] | None, None),
            ("strategy", OptStr, None),
            ("subagents", list[base_mod.SubAgentSpec], EMPTY_LIST),
        ],
    ),
]


def _model_default(model: type[BaseModel], name: str) -> Any:
    info = model.model_fields[name]
    if info.is_required():
        return REQUIRED
    return info.get_default(call_default_factory=True)


@pytest.mark.parametrize(
    ("module", "name", "fields"),
    [(agent_events_mod, n, f) for n, f in STREAM_EVENT_TABLE]
    + [(base_mod, n, f) for n, f in SPEC_TABLE],
    ids=[n for n, _ in STREAM_EVENT_TABLE + SPEC_TABLE],
)
def test_pydantic_models_match_seed_tables(module: Any, name: str, fields: list[Any]) -> None:
    model = getattr(module, name)
    assert issubclass(model, BaseModel)
    # The seed's tables list each class's own annotations, in declaration order.
    assert list(model.__annotations__) == [f[0] for f in fields]
    for fname, ftype, default in fields:
        assert model.model_fields[fname].annotation == ftype, fname
        got = _model_default(model, fname)
        if default is REQUIRED:
            assert got is REQUIRED, fname
        else:
            assert got == default and type(got) is type(default), fname
    if name != "StreamEvent" and module is agent_events_mod:
        assert issubclass(model, agent_events_mod.StreamEvent)


def test_stream_event_base_has_type_and_final_and_a_model_config() -> None:
    se = agent_events_mod.StreamEvent
    assert list(se.model_fields) == ["type", "final"]
    assert "model_config" in se.__dict__
    assert "model_config" in base_mod.SubAgentSpec.__dict__


def test_terminal_flags() -> None:
    ae = agent_events_mod
    terminal = {"MessageFinal", "StructuredFinal", "InterruptFinal"}
    for name in [n for n, _ in STREAM_EVENT_TABLE if n != "StreamEvent"]:
        default = _model_default(getattr(ae, name), "final")
        assert default is (name in terminal), name


# The seed's run() table, StructuredTool replaced by Any (the contract imports no vendor).
RUN_SIGNATURE: list[tuple[str, Any, Any]] = [
    ("tools", Sequence[Any], ()),
    ("tool_names", Sequence[str], ()),
    ("presets", Sequence[base_mod.PresetSpec], ()),
    ("subagents", Sequence[base_mod.SubAgentSpec], ()),
    ("system_message", str, ""),
    ("user_message", str, ""),
    ("response_format", Any, None),
    ("strategy", OptStr, None),
    ("interrupt_on", dict[str, Any] | None, None),
    ("skills", Sequence[str], ()),
    ("inline_skills", Sequence[dict[str, Any]], ()),
    ("recursion_limit", OptInt, None),
    ("thread_id", OptStr, None),
    ("resume", Any, None),
    ("resume_checkpoint_id", OptStr, None),
    ("llm_provider", OptStr, None),
    ("checkpoint_provider", OptStr, None),
    ("store_provider", OptStr, None),
    ("llm_kwargs", dict[str, Any] | None, None),
]


def test_agent_run_full_keyword_signature() -> None:
    run = base_mod.Agent.run
    assert getattr(run, "__isabstractmethod__", False)
    assert inspect.iscoroutinefunction(run)
    sig = inspect.signature(run, eval_str=True)
    params = list(sig.parameters.values())
    assert params[0].name == "self"
    keyword = params[1:-1]
    assert [p.name for p in keyword] == [r[0] for r in RUN_SIGNATURE]
    for p, (name, annotation, default) in zip(keyword, RUN_SIGNATURE):
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert p.annotation == annotation, name
        assert p.default == default and type(p.default) is type(default), name
    assert params[-1].name == "kwargs"
    assert params[-1].kind is inspect.Parameter.VAR_KEYWORD
    assert sig.return_annotation is Any


def test_agent_class_attributes_and_methods() -> None:
    agent = base_mod.Agent
    hints = typing.get_type_hints(agent)
    assert hints["tool_name"] == ClassVar[str]
    assert hints["tool_description"] == ClassVar[str]
    assert hints["ToolInput"] == ClassVar[type[BaseModel]]
    assert hints["spec_runnable"] == ClassVar[bool]
    assert hints["preset_bakeable_fields"] == ClassVar[frozenset[str]]
    assert agent.spec_runnable is False
    assert agent.preset_bakeable_fields == frozenset()
    assert isinstance(agent.preset_bakeable_fields, frozenset)

    assert isinstance(inspect.getattr_static(agent, "from_tool_input"), classmethod)
    assert list(inspect.signature(agent.from_tool_input).parameters) == ["validated"]
    assert inspect.isasyncgenfunction(agent.astream)
    astream = list(inspect.signature(agent.astream).parameters.values())
    assert [(p.name, p.kind) for p in astream] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("kwargs", inspect.Parameter.VAR_KEYWORD),
    ]
    assert list(inspect.signature(agent._drain).parameters) == ["self", "stream"]
    assert agent.__abstractmethods__ == frozenset({"run"})
    assert issubclass(base_mod.AgentInterruptedError, Exception)
    assert base_mod.AgentInterruptedError(interrupts=[]).interrupts == []


SEED_000_NAMES = {
    "AgentEvent",
    "AgentProtocol",
    "InvokeResult",
    "Message",
    "Step",
    "StreamWrapper",
    "StreamingAgent",
    "collect",
    "FunctionCall",
    *ELEVEN,
}
SEED_001_NAMES = {
    "Agent",
    "AgentInterruptedError",
    "PresetSpec",
    "SubAgentSpec",
    *(n for n, _ in STREAM_EVENT_TABLE),
}


def test_protocol_reexports_everything_from_events_and_invoke() -> None:
    exported = set(protocol_mod.__all__)
    assert exported >= SEED_000_NAMES
    for module in (events_mod, invoke_mod):
        for name in module.__all__:
            assert name in exported, name
            assert getattr(protocol_mod, name) is getattr(module, name), name
    assert exported == set(events_mod.__all__) | set(invoke_mod.__all__) | {"AgentProtocol"}


def test_agent_package_reexports_base_and_events() -> None:
    exported = set(agent_pkg.__all__)
    assert exported == SEED_001_NAMES
    for module in (base_mod, agent_events_mod):
        for name in module.__all__:
            assert getattr(agent_pkg, name) is getattr(module, name), name


@pytest.mark.parametrize(
    "module_name",
    [
        "agent_contract.events",
        "agent_contract.invoke",
        "agent_contract.protocol",
        "agent_contract.agent",
        "agent_contract.agent.base",
        "agent_contract.agent.events",
        "agent_contract.examples",
    ],
)
def test_public_modules_have_sorted_all_and_a_docstring(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == sorted(module.__all__)
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name
    assert module.__doc__


def test_importing_the_contract_pulls_in_no_opentelemetry_or_vendor() -> None:
    code = (
        "import sys\n"
        "import agent_contract.protocol, agent_contract.agent, agent_contract.examples\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'opentelemetry', 'langchain', 'langchain_core', 'litellm', 'agent_otel'})\n"
        "print(','.join(bad))\n"
        "assert 'agent_contract.protocol' in sys.modules\n"
    )
    # (Pydantic loads every installed pydantic plugin with the first model: no test
    # environment but Logfire's own, extra ``bench-logfire``, has one that imports OTel.)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""

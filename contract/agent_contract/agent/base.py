"""The ``Agent`` ABC plugin authors subclass (seed 001), with its inputs and error.

The contract imports no vendor package: live tools (LangChain ``StructuredTool`` in the
original) are typed ``Any``. Error messages raised here are constant text and never
interpolate input values (baked inputs can carry credentials). Two exceptions name code, not
input: the class-creation ``TypeError`` for ``preset_bakeable_fields`` names the offending
fields and the class, and ``_drain``'s ``TypeError`` for a final event of an unknown kind
names its ``type`` discriminator (cut to 64 characters).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agent_contract.agent.events import MessageFinal, StreamEvent, StructuredFinal

__all__ = ["Agent", "AgentInterruptedError", "PresetSpec", "SubAgentSpec"]

_INTERRUPTED = "agent run paused on an interrupt; stream the run (astream) to answer it"
_UNKNOWN_FINAL = "agent stream emitted a final event of an unknown type: "
_TERMINAL_FIELDS = {"message_final": "text", "structured_final": "data"}
_NO_TERMINAL = (
    "agent stream ended without a terminal event (MessageFinal, StructuredFinal or InterruptFinal)"
)


class AgentInterruptedError(Exception):
    """A non-streaming caller drained a run that paused on an interrupt.

    ``interrupts`` lists every ``InterruptFinal`` the run emitted, in order. ``message`` is
    optional, like any exception's; without one the message is a constant text (``_drain``
    never puts interrupt payloads, which may carry data the caller must not see, in it).
    """

    def __init__(self, message: str | None = None, interrupts: Sequence[Any] = ()) -> None:
        super().__init__(_INTERRUPTED if message is None else message)
        self.message: str | None = message
        self.interrupts: list[Any] = list(interrupts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.interrupts))


def _repr(value: object) -> str:
    """``repr(value)`` cut to 64 characters; a value whose ``repr`` raises: its class name."""
    try:
        return repr(value)[:64]
    except Exception:
        return f"<{type(value).__name__}>"[:64]


def _names(value: object, owner: str) -> frozenset[str]:
    """``preset_bakeable_fields`` as a frozenset: any iterable of str names, a str excepted."""
    if isinstance(value, frozenset) and all(isinstance(n, str) for n in value):
        return value
    message = f"{owner}.preset_bakeable_fields must be an iterable of field names"
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(message)
    names = frozenset(value)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(message)
    return names


class PresetSpec(BaseModel):
    """A base tool bound to fixed kwargs, resolved into a live tool at run time.

    A sub-flow is ``base_tool="flow"`` with ``fixed_kwargs={"flow_graph": ...}``. ``name`` and
    ``base_tool`` are required (a preset without them cannot be resolved). Validation errors
    hide input values: ``fixed_kwargs`` is exactly where baked credentials live.
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    name: str
    description: str = ""
    base_tool: str
    fixed_kwargs: dict[str, Any] = Field(default_factory=dict)


class SubAgentSpec(BaseModel):
    """Neutral sub-agent descriptor: the in-process, live-tools shape.

    ``tools`` holds live tool objects (``list[Any]``: a vendor type cannot be a field here).
    ``inline_skills`` items are plain dicts (``{"name", "content"}``). ``response_format`` is a
    pydantic class or a JSON-Schema dict. Only ``name`` is required. Validation errors hide
    input values.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, hide_input_in_errors=True)

    name: str
    description: str = ""
    system_prompt: str = ""
    tool_names: list[str] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    presets: list[PresetSpec] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    inline_skills: list[dict[str, Any]] = Field(default_factory=list)
    response_format: type[BaseModel] | dict[str, Any] | None = None
    strategy: str | None = None
    subagents: list[SubAgentSpec] = Field(default_factory=list)


class Agent(ABC):
    """The uniform agent contract. Implement ``run``; override ``astream`` for real streaming.

    Class attributes driving auto-tool generation: ``tool_name``, ``tool_description`` and
    ``ToolInput`` (a JSON-able pydantic model of the tool params: a non-JSON field fails at
    ``model_json_schema()``). ``spec_runnable = True`` declares that every ``ToolInput`` field
    is honoured (so all are preset-bakeable); ``preset_bakeable_fields`` names the fields whose
    baked value is honoured otherwise. Every name listed there must be a ``ToolInput`` field:
    class creation raises ``TypeError`` otherwise (checked whenever the class has a
    ``ToolInput``, its own or inherited). Any iterable of names is accepted (code written
    against the original may use a ``set`` literal) and stored as a ``frozenset``. Authors
    should give ``ToolInput`` the config ``hide_input_in_errors=True`` so validation errors
    never echo (baked) input values.
    """

    tool_name: ClassVar[str]
    tool_description: ClassVar[str]
    ToolInput: ClassVar[type[BaseModel]]
    spec_runnable: ClassVar[bool] = False
    preset_bakeable_fields: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        bakeable = _names(cls.preset_bakeable_fields, cls.__name__)
        cls.preset_bakeable_fields = bakeable
        tool_input = getattr(cls, "ToolInput", None)
        if tool_input is None:
            return
        if not (isinstance(tool_input, type) and issubclass(tool_input, BaseModel)):
            raise TypeError(f"{cls.__name__}.ToolInput must be a pydantic BaseModel subclass")
        unknown = sorted(bakeable - set(tool_input.model_fields))
        if unknown:
            raise TypeError(
                f"{cls.__name__}.preset_bakeable_fields names fields that "
                f"{cls.__name__}.ToolInput lacks: {', '.join(unknown)}"
            )

    @classmethod
    def from_tool_input(cls, validated: BaseModel) -> dict[str, Any]:
        """Map a validated ``ToolInput`` instance to ``run`` kwargs.

        Every explicitly set field (``model_fields_set``, declaration order, then any set
        extras) is passed through; nested models stay model instances (``model_dump`` would
        flatten them). Overrides must raise constant messages that never interpolate input.
        """
        set_fields = validated.model_fields_set
        names = [n for n in type(validated).model_fields if n in set_fields]
        names += [n for n in (validated.model_extra or {}) if n in set_fields]
        return {name: getattr(validated, name) for name in names}

    @abstractmethod
    async def run(
        self,
        *,
        tools: Sequence[Any] = (),
        tool_names: Sequence[str] = (),
        presets: Sequence[PresetSpec] = (),
        subagents: Sequence[SubAgentSpec] = (),
        system_message: str = "",
        user_message: str = "",
        response_format: Any = None,
        strategy: str | None = None,
        interrupt_on: dict[str, Any] | None = None,
        skills: Sequence[str] = (),
        inline_skills: Sequence[dict[str, Any]] = (),
        recursion_limit: int | None = None,
        thread_id: str | None = None,
        resume: Any = None,
        resume_checkpoint_id: str | None = None,
        llm_provider: str | None = None,
        checkpoint_provider: str | None = None,
        store_provider: str | None = None,
        llm_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the agent once and return its final value.

        ``tools`` are live tool objects. Role-specific agents read their own params off
        ``**kwargs``. ``response_format`` is ``Any``: a JSON-Schema dict or a pydantic class.
        ``resume`` answers an interrupt; ``resume_checkpoint_id`` forks past an aborted turn.
        """

    async def astream(self, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Free default for non-streaming agents: run once, emit one terminal event.

        A ``str`` result becomes ``MessageFinal(text=...)``, anything else
        ``StructuredFinal(data=...)``.
        """
        result = await self.run(**kwargs)
        if isinstance(result, str):
            yield MessageFinal(text=result)
        else:
            yield StructuredFinal(data=result)

    async def _drain(self, stream: AsyncIterator[Any]) -> Any:
        """The terminal rule: consume ``stream`` fully and return the run's final value.

        Terminal events are those whose ``final`` flag is True; their kind is then read from
        the ``type`` discriminator, so look-alike event classes from other packages drain the
        same. A ``final=True`` event of another type raises ``TypeError`` naming the type
        (never a silent "no final event"). Any ``interrupt_final`` raises
        ``AgentInterruptedError`` carrying all of them in order; otherwise the value of
        whichever came last of the last ``message_final`` (its ``text``) and the last
        ``structured_final`` (its ``data``); no terminal at all raises ``RuntimeError``.
        """
        interrupts: list[Any] = []
        found = False
        value: Any = None
        async for event in stream:
            if getattr(event, "final", False) is not True:
                continue
            kind = getattr(event, "type", None)
            if type(kind) is not str:
                if not isinstance(kind, str):
                    raise TypeError(_UNKNOWN_FINAL + _repr(kind))
                kind = str.__str__(kind)  # a str subclass's own __eq__ and __hash__ never run
            if kind == "interrupt_final":
                interrupts.append(event)
            elif kind in _TERMINAL_FIELDS:
                found, value = True, getattr(event, _TERMINAL_FIELDS[kind])
            else:
                raise TypeError(_UNKNOWN_FINAL + repr(kind)[:64])
        if interrupts:
            raise AgentInterruptedError(interrupts=interrupts)
        if not found:
            raise RuntimeError(_NO_TERMINAL)
        return value

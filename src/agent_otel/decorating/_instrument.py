"""``instrument()`` / ``uninstrument()``: trace an existing agent of either contract.

On a class (also as ``@instrument``), see :mod:`._classes`. On an instance, the
drop-in is a new object of a subclass of the agent's own class, made once per class, that
SHARES the original's ``__dict__``: ``isinstance`` holds against the contract and the agent's
class, every attribute reads and writes through (both objects see the same state, so
``reset()`` works), and the agent's own ``self.stream(...)``/``self.astream(...)`` calls go
through the traced entry points. The original object is left untouched; ``uninstrument()``
returns it and turns the drop-in's tracing off. A proxy was rejected: inside the agent's
methods ``self`` would be the unwrapped object, so ``run`` draining ``self.astream`` and
``invoke`` consuming ``self.stream`` would bypass tracing. Limits: ``type(x) is Cls`` is
False for the drop-in; an object without ``__dict__`` (slots only) cannot share state, so
it is refused (instrument its class instead); pickling or copying the drop-in yields the
plain agent.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from agent_otel._plain import text_of
from agent_otel.recording._hints import (
    a_kind,
    hint_dropped,
    hint_reinstrumented,
    hint_uninstrumented_root,
    keyworded,
    positional,
    unexpected,
)
from agent_otel.recording._options import OPTION_NAMES, Options, settings_from

from ._adapted import PAGE, adapter_of, tell_adapted
from ._base import DELEGATES, INSTANCE, Bound
from ._classes import (
    instrument_class,
    is_function,
    is_instrumented_class,
    mark,
    self_first,
    uninstrument_class,
)
from ._kickoffs import KICKOFFS, kickoff_entry, kicks_off
from ._params import AgentSetup
from ._runs import ENTRY_POINTS, entry

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["instrument", "uninstrument"]

_T = TypeVar("_T")
BINDING = "_agent_otel_binding"


@dataclass(slots=True)
class _Binding:
    target: Any
    options: AgentSetup
    enabled: bool = True
    used: bool = False  # an entry point called, or asked of: the drop-in was kept


# class -> its drop-in class, held weakly both ways: the drop-in class (a subclass, so it
# references the class) lives as long as some drop-in does, and never keeps the class alive.
_subclasses: weakref.WeakKeyDictionary[type, dict[frozenset[str], weakref.ref[type]]] = (
    weakref.WeakKeyDictionary()
)

_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_ABSENT = object()


def _bound(cls: type, name: str, agent: Any) -> Any:
    """``agent.name`` as the agent's own class ``cls`` resolves it: whatever ``cls`` holds
    (a function, a ``staticmethod`` or ``classmethod``, a callable object, a ``partial``) bound
    as Python binds it, so the drop-in calls what the agent would; a name ``cls`` does not hold,
    from ``cls``'s ``__getattr__`` (a proxy's)."""
    held = _held(cls, name)
    if held is _ABSENT:
        return cls.__getattr__(agent, name)  # type: ignore[attr-defined]
    get = getattr(type(held), "__get__", None)
    return held if get is None else get(held, agent, cls)


def _held(cls: type, name: str) -> Any:
    """What ``cls`` holds under ``name`` (in its own or an ancestor's namespace), unbound."""
    for klass in _TYPE_MRO.__get__(cls):
        held = _TYPE_DICT.__get__(klass).get(name, _ABSENT)
        if held is not _ABSENT:
            return held
    return _ABSENT


def _instance_wrapper(cls: type, name: str, method: Any) -> Any:
    """The drop-in's ``name``: a method that calls the agent's own ``method`` (as bound)."""

    def lookup(self: Any) -> tuple[Bound, AgentSetup | None]:
        binding: _Binding = object.__getattribute__(self, BINDING)
        binding.used = True
        return _bound(cls, name, self), binding.options if binding.enabled else None

    like = _held(cls, name)
    if name in KICKOFFS and kicks_off(cls):  # CrewAI's: each through the adapter
        return mark(kickoff_entry(name, lookup), like, **{DELEGATES: True})
    if is_function(like):  # a method of the class: the wrapper looks like it
        return mark(entry(name, lookup, like), like, **{DELEGATES: True})
    # Anything else (a static or class method, a callable object, a proxy's): the wrapper is
    # a method, so it answers ``inspect.signature`` with ``self`` before the agent's own; read
    # on the class, what the class holds binds as its own.
    held = None if like is _ABSENT else like
    wrapper = mark(entry(name, lookup, method), method, held, **{DELEGATES: True})
    self_first(wrapper, method)
    return wrapper


def _plain(agent: _T) -> _T:
    return agent


def _target(drop_in: Any) -> Any:
    return object.__getattribute__(drop_in, BINDING).target


def _reduce_ex(self: Any, protocol: Any) -> Any:
    """Pickle the plain agent: the drop-in's class is made at run time."""
    return (_plain, (_target(self),))


def _copy(self: Any) -> Any:
    return copy.copy(_target(self))


def _deepcopy(self: Any, memo: dict[int, Any]) -> Any:
    return copy.deepcopy(_target(self), memo)


def is_drop_in_class(cls: type) -> bool:
    """Read by ``type``'s own ``__dict__``: a metaclass's ``__getattribute__`` never runs."""
    return _TYPE_DICT.__get__(cls).get(INSTANCE, False) is True


def _subclass_for(cls: type, entries: dict[str, Any]) -> type:
    """The drop-in class of ``cls`` wrapping ``entries`` (name: the agent's method), the entry
    points the agent has: its class's, or a proxy's, which its ``__getattr__`` finds."""
    made = _subclasses.setdefault(cls, {})
    ref = made.get(frozenset(entries))
    sub = ref() if ref is not None else None
    if sub is None:
        namespace: dict[str, Any] = {
            "__slots__": (BINDING,),
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "__reduce_ex__": _reduce_ex,
            "__copy__": _copy,
            "__deepcopy__": _deepcopy,
        }
        sub = type(cls)(cls.__name__, (cls,), namespace)
        # Set after creation: a metaclass (pydantic's) may claim underscored class attributes,
        # and refuses a callable object (our entry points) it takes for an unannotated field.
        type.__setattr__(sub, INSTANCE, True)
        for name, like in entries.items():
            type.__setattr__(sub, name, _instance_wrapper(cls, name, like))
        made[frozenset(entries)] = weakref.ref(sub)
    return sub


def _entries(cls: type, agent: Any) -> dict[str, Any]:
    """The entry points ``agent`` has, each as its class resolves it (for the wrapper's name,
    signature and kind): those its class holds, and a proxy's, found by its ``__getattr__``.
    One in the agent's own ``__dict__`` is left out: the instance's value wins over any class
    attribute that is not a data descriptor, so no drop-in class could trace it."""
    entries: dict[str, Any] = {}
    for name in (*ENTRY_POINTS, *KICKOFFS) if kicks_off(cls) else ENTRY_POINTS:
        with suppress(Exception):  # a proxy's __getattr__ that raises: no such entry point
            method = _bound(cls, name, agent)
            if callable(method):
                entries[name] = method
    return entries


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            names.append(slot)
    return names


def _instrument_instance(agent: _T, options: AgentSetup) -> _T:
    cls = type(agent)
    if is_drop_in_class(cls):  # already a drop-in: it keeps the options it has
        hint_reinstrumented(cls, object.__getattribute__(agent, BINDING).options, options)
        return agent
    state = getattr(agent, "__dict__", None)
    if not isinstance(state, dict):
        raise TypeError(
            "instrument() needs an agent with a __dict__ to share its state; "
            "instrument its class instead (docs/instrument.md)"
        )
    sub = _subclass_for(cls, _entries(cls, agent))
    drop_in: Any = object.__new__(sub)
    object.__setattr__(drop_in, "__dict__", state)
    for slot in _slot_names(cls):  # slot values are shared by reference
        if hasattr(agent, slot):
            object.__setattr__(drop_in, slot, getattr(agent, slot))
    binding = _Binding(agent, options)
    object.__setattr__(drop_in, BINDING, binding)
    with suppress(TypeError):  # a class without weak references: nothing told
        weakref.finalize(drop_in, _dropped, binding, cls).atexit = False
    return drop_in  # type: ignore[no-any-return]


def instrument_copy(drop_in: Any, options: AgentSetup | None, args: Any, kwargs: Any) -> Any:
    """The ``copy()`` of a CrewAI drop-in (a crew's: ``kickoff_for_each`` runs each input on
    one; an agent's, which a crew's copy calls), made by its plain agent: CrewAI's
    ``type(self)(...)`` made from the drop-in a drop-in with no options, whose entry points
    raised. Instrumented with ``options`` (``None``: disabled, the plain copy)."""
    target = _target(drop_in)
    made = _bound(type(target), "copy", target)(*args, **kwargs)
    return made if options is None else _instrument_instance(made, options)


def _dropped(binding: _Binding, cls: type) -> None:
    """A drop-in is gone: if it never ran nor was asked back, ``instrument(agent)`` was
    written as a statement and ``agent`` runs untraced; tell it (never raises: run by the
    collector)."""
    if binding.enabled and not binding.used:
        hint_dropped(cls)


@overload
def instrument(
    agent_or_class: _T, *, name: str | None = None, **options: Unpack[Options]
) -> _T: ...


@overload
def instrument(
    agent_or_class: None = None, *, name: str | None = None, **options: Unpack[Options]
) -> Any: ...


@positional  # instrument(agent, 'name'): told name=
def instrument(
    agent_or_class: Any = None, *, name: str | None = None, **options: Unpack[Options]
) -> Any:
    """Trace an agent (event contract: ``stream``/``invoke``; Agent contract: ``run``/``astream``).

    On an instance: returns a traced drop-in (see the module docstring). On a class, or as a
    decorator (``@instrument`` or ``@instrument(name=...)``): every instance of it and of its
    subclasses is traced; returns the class. Each run is one ``invoke_agent`` span named
    ``name`` (default: ``agent_name``, else the agent's ``tool_name``, else its ``name``,
    else its class name). ``options`` are those of ``otel_wrapper()``
    (:class:`~agent_otel.recording._options.Options`); a call's own ids (``config`` or
    ``thread_id``) win over the options'.
    Instrumenting what is already instrumented changes nothing (uninstrument first to change
    options): a second call asking for other options is told so, once per class.
    """
    _check_names(options)  # here, also for the decorator form: not once it is applied
    if agent_or_class is None:

        def decorator(target: Any) -> Any:
            return instrument(target, name=name, **options)

        return decorator
    if issubclass(type(agent_or_class), ModuleType):  # its functions are no agent's methods
        raise TypeError(
            f"instrument() takes an agent (an object or class with stream/invoke or run/astream), "
            f"not the module {text_of(vars(agent_or_class).get('__name__')) or '(unnamed)'}: "
            "pass the agent it defines or makes, as in instrument(MyAgent()) (docs/instrument.md)"
        )
    is_class = issubclass(type(agent_or_class), type)
    kind = agent_or_class if is_class else type(agent_or_class)
    adapter = adapter_of(kind)
    if not is_class and kicks_off(kind):  # CrewAI's kickoffs: traced whole (._kickoffs)
        adapter = ""
    elif not any(callable(getattr(agent_or_class, n, None)) for n in ENTRY_POINTS):
        fix = (
            f"a framework's agent is traced through its adapter, otel_wrapper(...)({adapter}) "
            f"({PAGE})"
            if adapter
            else "pass the agent, as in instrument(MyAgent()) (docs/instrument.md)"
        )
        raise TypeError(
            f"instrument() takes an agent (an object or class with stream/invoke or run/astream), "
            f"not {a_kind(agent_or_class)}: {fix}"
        )
    if adapter:
        tell_adapted(agent_or_class, adapter)
    # Read as the str each is (a str enum member: its value); a subclass's methods never run.
    # A name of another type (the decorator's argument is often computed) names nothing: the
    # run is named as without it, and the agent is traced all the same (never a raise).
    chosen_name = text_of(name) or text_of(options.get("agent_name"))
    asked = {key: value for key, value in {"name": name, **options}.items() if value is not None}
    chosen = AgentSetup(chosen_name, settings_from(options, "instrument"), asked)
    if isinstance(agent_or_class, type):
        return instrument_class(agent_or_class, chosen)
    return _instrument_instance(agent_or_class, chosen)


def _check_names(options: Mapping[str, object]) -> None:
    """A keyword that is no option raises at the call, with the nearest option; one given an
    agent (``instrument(agent=my_agent)``, which made a decorator and traced nothing) says the
    agent goes first."""
    unknown = sorted(options.keys() - OPTION_NAMES)
    if not unknown:
        return
    if _an_agent(options[unknown[0]]):
        where = "the agent (or its class) is no option: pass it first, by position, as in "
        raise TypeError(unexpected("instrument", unknown[0], (), where + "instrument(agent)"))
    raise TypeError(unexpected("instrument", unknown[0], OPTION_NAMES | {"agent_or_class", "name"}))


def _an_agent(value: object) -> bool:
    """Whether ``value`` has an agent's entry points (what its own lookup raises: no)."""
    with suppress(Exception):
        if not issubclass(type(value), ModuleType):
            return any(callable(getattr(value, n, None)) for n in ENTRY_POINTS)
    return False


@keyworded
def uninstrument(agent_or_class: _T) -> _T:
    """Undo :func:`instrument`: returns the original agent (or the class, restored); anything
    else, returned as it is. Read by its type alone: none of its own methods (its
    ``__class__``, hash or equality) runs."""
    if issubclass(type(agent_or_class), type):
        cls = cast("type", agent_or_class)
        if is_instrumented_class(cls):
            uninstrument_class(cls)
        else:
            _traced_by_root(cls, cls)
        return agent_or_class
    if is_drop_in_class(type(agent_or_class)):
        binding: _Binding = object.__getattribute__(agent_or_class, BINDING)
        binding.enabled = False
        return binding.target  # type: ignore[no-any-return]
    _traced_by_root(type(agent_or_class), agent_or_class)
    return agent_or_class


_TYPE_QUALNAME = type.__dict__["__qualname__"]


def _traced_by_root(cls: type, given: object) -> None:
    """Tell once that ``uninstrument(given)`` left it traced: an instrumented class ``cls``
    derives from (or is the class of) traces it, and only ``uninstrument()`` of that class
    undoes it. Read by the type alone, as :func:`is_instrumented` reads it."""
    for klass in _TYPE_MRO.__get__(cls):
        if is_instrumented_class(klass):
            hint_uninstrumented_root(a_kind(given), str(_TYPE_QUALNAME.__get__(klass)))
            return


@keyworded
def is_instrumented(agent_or_class: Any) -> bool:
    """Whether calls on ``agent_or_class`` are traced by :func:`instrument` (False for
    anything else; none of its own methods runs)."""
    a_class = issubclass(type(agent_or_class), type)
    cls = agent_or_class if a_class else type(agent_or_class)
    if is_drop_in_class(cls):
        binding: _Binding = object.__getattribute__(agent_or_class, BINDING)
        binding.used = True
        return binding.enabled
    return any(is_instrumented_class(klass) for klass in _TYPE_MRO.__get__(cls))

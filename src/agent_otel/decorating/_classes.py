"""Patching agent classes: each class's OWN entry points, its subclasses, future subclasses.

``instrument(cls)`` makes ``cls`` a *root*: every class in its hierarchy (existing and future,
through an ``__init_subclass__`` hook on the root) has the entry points it defines itself
replaced by wrappers that call the original. A wrapper traces only when it is the method
``type(self)`` resolves to, so ``super().stream(...)`` chains through patched classes never
double a span. The options in force are the nearest root's in ``type(self).__mro__``, so an
explicit ``instrument(MyAgent, name=...)`` wins over the instrumentor's root ``Agent``.
Patching is idempotent; a class is restored once no root above it remains.

An entry point held as a static or class method, a callable object or a ``partial`` is wrapped
too: called on an instance it is traced, read on the class it binds as the class's own (a
class-level call has no agent to trace). Every wrapper is an :class:`~._base.EntryPoint`, which
answers ``inspect`` as what it wraps does.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from agent_otel.recording._hints import hint_reinstrumented

from ._base import DELEGATES, INSTANCE, MARK, ORIGINAL, Bound, EntryPoint, read
from ._params import AgentSetup
from ._runs import ENTRY_POINTS, entry

_roots: weakref.WeakKeyDictionary[type, AgentSetup] = weakref.WeakKeyDictionary()
_patched: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()
_hooks: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()
_MISSING = object()


def is_instrumented_class(cls: type) -> bool:
    """Whether ``cls`` is an instrumented root, found by identity: a metaclass's own hash or
    equality never runs (one that raises made ``is_instrumented()`` raise)."""
    return any(root is cls for root in list(_roots.keys()))


def options_for(cls: type) -> AgentSetup | None:
    """The options of the nearest instrumented root of ``cls``."""
    for klass in cls.__mro__:
        options = _roots.get(klass)
        if options is not None:
            return options
    return None


def mark(wrapper: Any, like: Any, held: Any = None, **attributes: Any) -> EntryPoint:
    """``wrapper`` as the entry point a class holds, answering ``inspect`` as ``like``."""
    point = EntryPoint(wrapper, like, held)
    setattr(point, MARK, True)
    for key, value in attributes.items():
        setattr(point, key, value)
    return point


def self_first(point: EntryPoint, bound: Any) -> None:
    """Give ``point`` (a method wrapping ``bound``, what is no plain function) the signature
    of ``bound`` with ``self`` first, so bound to an agent it reads as ``bound`` does."""
    with suppress(Exception):  # no signature to read: the wrapper's own
        own = inspect.signature(bound)
        self_ = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        point.__signature__ = own.replace(parameters=[self_, *own.parameters.values()])  # type: ignore[attr-defined]


def is_function(held: Any) -> bool:
    """Whether a class's ``held`` binds as a plain method (a function, or our wrapper of one)."""
    if type(held) is EntryPoint:  # ours (which reads as a function): one of a function's?
        return held.held is None
    return inspect.isfunction(held)


def _inherited(klass: type, name: str) -> Any:
    """What ``klass``'s bases hold under ``name``, unbound (found as ``getattr`` finds it)."""
    for base in klass.__mro__[1:]:
        if name in base.__dict__:
            return base.__dict__[name]
    return getattr(klass, name)


def _resolved(cls: type, name: str) -> Any:
    """What ``cls`` holds under ``name`` (its own or an ancestor's), unbound."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _bind(held: Any, instance: Any, owner: type) -> Any:
    """``held`` (what a class holds) bound as Python binds it on ``instance`` (or the class)."""
    get = getattr(type(held), "__get__", None)
    return held if get is None else get(held, instance, owner)


def _class_wrapper(klass: type, name: str, original: Any) -> Any:
    """A wrapper for ``klass.name``; ``original`` None: the one ``klass`` inherits."""

    def lookup(self: Any) -> tuple[Bound, AgentSetup | None]:
        if original is None:
            bound: Bound = getattr(super(klass, self), name)
        else:
            bound = _bind(original, self, type(self))
        if wrapper.held is None:
            found = getattr(type(self), name, None)
        else:  # read on a class, a wrapper of what is no function gives that: look at ours
            found = _resolved(type(self), name)
        if found is not wrapper and isinstance(found, EntryPoint):
            return bound, None  # an outer wrapper of ours (subclass or instance) traces
        return bound, options_for(type(self))

    held = _inherited(klass, name) if original is None else original
    like = _bind(held, None, klass)  # as the class reads it: a static method's function
    call = entry(name, lookup, like if original is None else original)
    marks = {DELEGATES: True} if original is None else {ORIGINAL: original}
    if is_function(held):
        wrapper = mark(call, like, **marks)
    else:  # a static or class method, a callable object, a partial: as the class binds it
        wrapper = mark(call, like, held, **marks)
        self_first(wrapper, like)
    return wrapper


def _patch(klass: type, *, inherited: bool = False) -> None:
    """Wrap the entry points ``klass`` defines (and, for a root, those it inherits)."""
    if klass.__dict__.get(INSTANCE, False):
        return
    originals = _patched.setdefault(klass, {})
    for name in ENTRY_POINTS:
        if name in originals:
            continue
        fn = klass.__dict__.get(name, _MISSING)
        if fn is _MISSING:
            if not inherited or not callable(getattr(klass, name, None)):
                continue
            if read(getattr(klass, name), "__isabstractmethod__", False):
                continue
            originals[name] = _MISSING
            setattr(klass, name, _class_wrapper(klass, name, None))
            continue
        if not _patchable(fn) or isinstance(fn, EntryPoint):  # ours: patched
            continue
        if read(fn, "__isabstractmethod__", False):
            continue  # nothing to run; a subclass's own method gets patched
        originals[name] = fn
        setattr(klass, name, _class_wrapper(klass, name, fn))


def _patchable(held: Any) -> bool:
    """Whether a class's ``held`` is an entry point to wrap: a function, a static or class
    method, a callable object or ``partial``, or a descriptor that gives one (a
    ``partialmethod``); never a class, a plain value, nor a data descriptor (a property keeps
    its setter)."""
    if isinstance(held, (staticmethod, classmethod)):
        return True
    if isinstance(held, type):
        return False
    kind = type(held)
    if hasattr(kind, "__get__") and not callable(held):  # a descriptor: not a data one
        return not (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))
    return callable(held)


def _restore(klass: type) -> None:
    for name, fn in _patched.pop(klass, {}).items():
        if not isinstance(klass.__dict__.get(name), EntryPoint):
            continue  # replaced by someone else since
        if fn is _MISSING:
            delattr(klass, name)
        else:
            setattr(klass, name, fn)


def _hierarchy(cls: type) -> Iterator[type]:
    seen: set[type] = set()
    todo = [cls]
    while todo:
        klass = todo.pop()
        if klass in seen:
            continue
        seen.add(klass)
        yield klass
        todo.extend(type.__subclasses__(klass))


def _install_hook(root: type) -> None:
    previous = root.__dict__.get("__init_subclass__", _MISSING)

    def __init_subclass__(cls: Any, /, **kwargs: Any) -> None:
        if previous is _MISSING:
            super(root, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]
        else:
            previous.__get__(None, cls)(**kwargs)
        if root in _roots:
            _patch(cls)

    setattr(__init_subclass__, MARK, True)
    _hooks[root] = previous
    hook: Any = classmethod(__init_subclass__)
    type.__setattr__(root, "__init_subclass__", hook)


def _remove_hook(root: type) -> None:
    previous = _hooks.pop(root, _MISSING)
    current = root.__dict__.get("__init_subclass__")
    if not getattr(getattr(current, "__func__", None), MARK, False):
        return  # replaced by someone else since: our hook stays, inert
    if previous is _MISSING:
        delattr(root, "__init_subclass__")
    else:
        type.__setattr__(root, "__init_subclass__", previous)


def instrument_class(cls: type, options: AgentSetup) -> type:
    """Trace every instance of ``cls`` and of its subclasses (a no-op when already done)."""
    previous = _roots.get(cls)
    if previous is not None:  # it keeps the options it has
        hint_reinstrumented(cls, previous, options)
        return cls
    _roots[cls] = options
    _install_hook(cls)
    for klass in _hierarchy(cls):
        _patch(klass, inherited=klass is cls)
    return cls


def uninstrument_class(cls: type) -> type:
    """Undo :func:`instrument_class` for ``cls``; classes under another root stay patched."""
    if cls not in _roots:
        return cls
    del _roots[cls]
    _remove_hook(cls)
    for klass in list(_patched):
        if options_for(klass) is None:
            _restore(klass)
    return cls

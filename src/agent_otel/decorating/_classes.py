"""Patching agent classes: each class's OWN entry points, its subclasses, future subclasses.

``instrument(cls)`` makes ``cls`` a *root*: every class in its hierarchy (existing and future,
through an ``__init_subclass__`` hook on the root) has the entry points it defines itself
replaced by wrappers that call the original. A wrapper traces only when it is the method
``type(self)`` resolves to, so ``super().stream(...)`` chains through patched classes never
double a span. The options in force are the nearest root's in ``type(self).__mro__``, so an
explicit ``instrument(MyAgent, name=...)`` wins over the instrumentor's root ``Agent``.
Patching is idempotent; a class is restored once no root above it remains.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Iterator
from typing import Any

from agent_otel.recording._hints import hint_reinstrumented

from ._base import DELEGATES, INSTANCE, MARK, ORIGINAL, Bound
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


def mark(wrapper: Any, like: Any, **attributes: Any) -> Any:
    functools.update_wrapper(wrapper, like, updated=())
    setattr(wrapper, MARK, True)
    for key, value in attributes.items():
        setattr(wrapper, key, value)
    return wrapper


def _class_wrapper(klass: type, name: str, original: Any) -> Any:
    """A wrapper for ``klass.name``; ``original`` None: the one ``klass`` inherits."""

    def lookup(self: Any) -> tuple[Bound, AgentSetup | None]:
        if original is None:
            bound: Bound = getattr(super(klass, self), name)
        else:
            bound = original.__get__(self, type(self))
        found = getattr(type(self), name, None)
        if found is not wrapper and getattr(found, MARK, False):
            return bound, None  # an outer wrapper of ours (subclass or instance) traces
        return bound, options_for(type(self))

    wrapper = entry(name, lookup, getattr(klass, name) if original is None else original)
    if original is None:
        return mark(wrapper, getattr(klass, name), **{DELEGATES: True})
    return mark(wrapper, original, **{ORIGINAL: original})


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
            if getattr(getattr(klass, name), "__isabstractmethod__", False):
                continue
            originals[name] = _MISSING
            setattr(klass, name, _class_wrapper(klass, name, None))
            continue
        if not inspect.isfunction(fn) or getattr(fn, MARK, False):
            continue
        if getattr(fn, "__isabstractmethod__", False):
            continue  # nothing to run; a subclass's own method gets patched
        originals[name] = fn
        setattr(klass, name, _class_wrapper(klass, name, fn))


def _restore(klass: type) -> None:
    for name, fn in _patched.pop(klass, {}).items():
        if not getattr(klass.__dict__.get(name), MARK, False):
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

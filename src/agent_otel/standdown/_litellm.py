"""LiteLLM's own OpenTelemetry callback reads no context key, so it is guarded instead.

``litellm.callbacks = ["otel"]`` (and the callbacks built on the same class: ``"arize"``,
``"arize_phoenix"``, ``"langtrace"``, ``"logfire"``, ...) logs each call once it has ended, in
the context the call was made in (LiteLLM 1.110.2, ``integrations/opentelemetry.py``). When a
span is current there, as our chat span is around a call of ``litellm_chat``, it makes no
``litellm_request`` span but writes its own attributes and status onto that span (ours: a span
already ended, so OpenTelemetry warns once per attribute, or one still open, whose prompt and
answer it would write past our content opt-in and scrubbing), adds a ``raw_gen_ai_request``
span under it with the request's messages, and records ``gen_ai.client.token.usage`` and
``gen_ai.client.operation.duration`` under our metrics' names: every call's tokens counted
twice.

So the four methods LiteLLM's logging calls on it (``log_success_event``,
``log_failure_event`` and their ``async_`` twins) are guarded on the class, where every
callback built on it inherits them: some of those replace its handlers (``_handle_success``,
``_handle_failure``) with their own (Arize Phoenix's, Weave's), which a guard of the handlers
never saw. For a chat call our chat span told (:func:`~._context.told_call`: our chat span is
in the context the call is logged from, ended or not, or a framework run's, but for a tool
body's own call, which no chat span of ours tells), the method does
nothing (on success it still closes LiteLLM's proxy span, as its own skip path does); for
every other call (an embeddings request, an image, any call outside our chat spans) it runs
as before.

Such a call made with a span of ours current (an embeddings request inside our chat span, a
tool's own model call under its tool span, the agent's code between events under its step) is
no call ours tell, yet LiteLLM logged it onto that span: its operation name, model, tokens, the
request's messages (past our content opt-in) and its status (an ``OK`` is final: a tool that
then failed stayed ``OK``; a refused request the tool recovered from failed the tool). So where
the parent it finds (``_get_span_context``) is a span of ours, it is told there is none, and it
makes its own ``litellm_request`` span under ours, as it does with
``USE_OTEL_LITELLM_REQUEST_SPAN`` set. So too under the stand-in of a framework's own span in
a framework run of ours (AutoGen's tool span around its tool body), which records nothing
written on it. A parent of anyone else's is left to LiteLLM.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.trace import NonRecordingSpan

from agent_otel._attributes import SCOPE_NAME
from agent_otel._guard import report

from ._context import COVERED, told_call
from ._methods import MARK, guard_methods

MODULE = "litellm.integrations.opentelemetry"
_CLASS = "OpenTelemetry"
_LOGGED = ("log_success_event", "log_failure_event")
_ASYNC_LOGGED = ("async_log_success_event", "async_log_failure_event")
_PARENT = "_get_span_context"
CHAT_CALLS = frozenset(
    {"completion", "acompletion", "text_completion", "atext_completion", "responses",
     "aresponses", "anthropic_messages"}
)  # fmt: skip
"""LiteLLM's ``call_type`` of a model call a chat span of ours describes."""


def _told(kwargs: object, args: tuple[Any, ...] = (), more: Any = None) -> bool:
    """Whether the call a logging method was given (``kwargs, response_obj, start_time,
    end_time``) is one our chat span told, asked as of its ``start_time``."""
    try:  # inside LiteLLM's logging: nothing may raise there
        call_type = kwargs.get("call_type") if isinstance(kwargs, dict) else None
        if not isinstance(call_type, str) or call_type not in CHAT_CALLS:
            return False
        start = args[1] if len(args) >= 2 else (more or {}).get("start_time")
        made_at = int(start.timestamp() * 1e9) if isinstance(start, datetime) else None
        return told_call(made_at)
    except Exception:
        report("stand-down")
        return False  # theirs is recorded: a second account, not a lost one


def _ours(context: object, span: object) -> bool:
    """Whether ``span``, current in ``context``, is one of agent-otel's (our tracer's scope) or
    the stand-in of a framework's own span in a framework run of ours (a non-recording span,
    :func:`~._native.stand_in`: AutoGen's tool span in its tool body), which records nothing
    LiteLLM writes on it."""
    if getattr(getattr(span, "instrumentation_scope", None), "name", None) == SCOPE_NAME:
        return True
    return (
        type(span) is NonRecordingSpan
        and isinstance(context, Context)
        and otel_context.get_value(COVERED, context) is not None
    )


def _own_span(theirs: Callable[..., Any]) -> Callable[..., Any]:
    def parent(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = theirs(self, *args, **kwargs)
        try:  # inside LiteLLM's logging: nothing may raise there
            if isinstance(found, tuple) and len(found) == 2 and _ours(*found):
                return found[0], None  # its own span, in that context: under ours
        except Exception:
            report("stand-down")
        return found

    setattr(parent, MARK, theirs)
    return parent


def _skipped(self: Any, name: str, kwargs: Any, args: tuple[Any, ...]) -> None:
    """A told call's logging skipped: on success LiteLLM's own skip path closes the proxy's
    span (``end_time`` is the last of ``response_obj, start_time, end_time``)."""
    if "success" in name:
        end = getattr(self, "_end_proxy_span_from_kwargs", None)
        if callable(end) and len(args) >= 3:
            end(kwargs, args[2])


def _guarded(name: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    if name == _PARENT:
        return _own_span(theirs)
    if name in _ASYNC_LOGGED:

        async def logged(self: Any, kwargs: Any, *args: Any, **more: Any) -> Any:
            if not _told(kwargs, args, more):
                return await theirs(self, kwargs, *args, **more)
            return _skipped(self, name, kwargs, args)

        setattr(logged, MARK, theirs)
        return logged

    def guard(self: Any, kwargs: Any, *args: Any, **more: Any) -> Any:
        if not _told(kwargs, args, more):
            return theirs(self, kwargs, *args, **more)
        return _skipped(self, name, kwargs, args)

    setattr(guard, MARK, theirs)
    return guard


def guard_litellm() -> int:
    """Guard LiteLLM's OpenTelemetry callback's logging methods and its finding of a parent
    span if it is loaded and not yet guarded; how many were."""
    return guard_methods(MODULE, _CLASS, (*_LOGGED, *_ASYNC_LOGGED, _PARENT), _guarded)

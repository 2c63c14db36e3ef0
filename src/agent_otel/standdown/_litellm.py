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

So its two handlers (``_handle_success``, ``_handle_failure``) are guarded on the class: for a
chat call our chat span told (:func:`~._context.told_call`: our chat span is in the context
the call is logged from, ended or not, or a framework run's), the handler does nothing (on
success it still closes LiteLLM's proxy span, as its own skip path does); for every other
call (an embeddings request, an image, any call outside our chat spans) it runs as before.

Such a call made with a span of ours current (an embeddings request inside our chat span, a
tool's own model call under its tool span, the agent's code between events under its step) is
no call ours tell, yet LiteLLM logged it onto that span: its operation name, model, tokens, the
request's messages (past our content opt-in) and its status (an ``OK`` is final: a tool that
then failed stayed ``OK``; a refused request the tool recovered from failed the tool). So where
the parent it finds (``_get_span_context``) is a span of ours, it is told there is none, and it
makes its own ``litellm_request`` span under ours, as it does with
``USE_OTEL_LITELLM_REQUEST_SPAN`` set; a parent of anyone else's is left to LiteLLM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_otel._attributes import SCOPE_NAME
from agent_otel._guard import report

from ._context import told_call
from ._methods import MARK, guard_methods

MODULE = "litellm.integrations.opentelemetry"
_CLASS = "OpenTelemetry"
_HANDLERS = ("_handle_success", "_handle_failure")
_PARENT = "_get_span_context"
CHAT_CALLS = frozenset(
    {"completion", "acompletion", "text_completion", "atext_completion", "responses",
     "aresponses", "anthropic_messages"}
)  # fmt: skip
"""LiteLLM's ``call_type`` of a model call a chat span of ours describes."""


def _told(kwargs: object) -> bool:
    try:  # inside LiteLLM's logging: nothing may raise there
        call_type = kwargs.get("call_type") if isinstance(kwargs, dict) else None
        return isinstance(call_type, str) and call_type in CHAT_CALLS and told_call()
    except Exception:
        report("stand-down")
        return False  # theirs is recorded: a second account, not a lost one


def _ours(span: object) -> bool:
    """Whether ``span`` is one of agent-otel's (our tracer's scope)."""
    return getattr(getattr(span, "instrumentation_scope", None), "name", None) == SCOPE_NAME


def _own_span(theirs: Callable[..., Any]) -> Callable[..., Any]:
    def parent(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = theirs(self, *args, **kwargs)
        try:  # inside LiteLLM's logging: nothing may raise there
            if isinstance(found, tuple) and len(found) == 2 and _ours(found[1]):
                return found[0], None  # its own span, in that context: under ours
        except Exception:
            report("stand-down")
        return found

    setattr(parent, MARK, theirs)
    return parent


def _guarded(name: str, theirs: Callable[..., Any]) -> Callable[..., Any]:
    if name == _PARENT:
        return _own_span(theirs)

    def guard(self: Any, kwargs: Any, *args: Any, **more: Any) -> Any:
        if not _told(kwargs):
            return theirs(self, kwargs, *args, **more)
        if name == "_handle_success":  # LiteLLM's own skip path closes the proxy's span
            end = getattr(self, "_end_proxy_span_from_kwargs", None)
            if callable(end) and len(args) >= 3:
                end(kwargs, args[2])
        return None

    setattr(guard, MARK, theirs)
    return guard


def guard_litellm() -> int:
    """Guard LiteLLM's OpenTelemetry callback's handlers and its finding of a parent span if it
    is loaded and not yet guarded; how many were."""
    return guard_methods(MODULE, _CLASS, (*_HANDLERS, _PARENT), _guarded)

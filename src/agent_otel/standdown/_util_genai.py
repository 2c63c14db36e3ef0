"""Every instrumentation built on ``opentelemetry-util-genai``'s handler, through one context key.

Read in util-genai 1.3b0 (``handler.py``, ``_inference_invocation.py``):
``TelemetryHandler.inference()``, the one start path of every model-call span that the
official ``opentelemetry-instrumentation-genai-*`` packages make (openai, anthropic,
langchain, bedrock, llama-index, ...), looks up ``CLIENT_INFERENCE_CONTEXT_KEY`` in the
context. When it holds an ``InferenceData``, an inference span already covers the call: the
handler returns a ``SuppressedInferenceInvocation``, which starts no span, records no metric
and emits no event, and at its end merges what it saw into that ``InferenceData``. With
``capture_content`` left False on it, no message content is merged.

So inside our chat span the context carries a fresh ``InferenceData`` under that key: the
packages stand down without a patch of any of them. The key and the class are read from
util-genai's own module, and only when something has already imported it (an instrumentation
that uses the handler has): agent-otel never imports util-genai. Older util-genai (1.1b0)
has no such key; openai-v2 on it is guarded instead (:mod:`._openai_v2`).
"""

from __future__ import annotations

import sys
from contextlib import suppress

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context

from agent_otel import _guard

from ._methods import MARK  # also marks an InferenceData covered() made (theirs carry none)

MODULE = "opentelemetry.util.genai._inference_invocation"


def missing(context: Context | None) -> bool:
    """Whether util-genai is loaded and its key holds nothing in ``context`` (default: current):
    the context was made before util-genai was imported, so :func:`covered` could not set it."""
    module = sys.modules.get(MODULE)
    key = getattr(module, "CLIENT_INFERENCE_CONTEXT_KEY", None)
    return isinstance(key, str) and otel_context.get_value(key, context) is None


def covered(context: Context) -> Context:
    """``context`` where util-genai's handler sees an inference span (if util-genai is loaded)."""
    module = sys.modules.get(MODULE)
    if module is None:
        return context
    key = getattr(module, "CLIENT_INFERENCE_CONTEXT_KEY", None)
    data = getattr(module, "InferenceData", None)
    if not isinstance(key, str) or not isinstance(data, type):
        return context
    try:
        ours = data()
    except Exception:  # a later util-genai whose InferenceData wants arguments: theirs stays
        _guard.report("standdown.util_genai")
        return context
    with suppress(TypeError):  # (one without a __dict__ still stands down, never released)
        vars(ours)[MARK] = True
    return otel_context.set_value(key, ours, context)


def released(context: Context | None) -> Context | None:
    """``context`` (default: current) without util-genai's key where the key holds an
    ``InferenceData`` of ours (:func:`covered`): the chat span or run it stood down for has
    ended, and a call made there is none of ours; None where the key holds no such value."""
    module = sys.modules.get(MODULE)
    key = getattr(module, "CLIENT_INFERENCE_CONTEXT_KEY", None)
    if not isinstance(key, str):
        return None
    here = context if context is not None else otel_context.get_current()
    if getattr(otel_context.get_value(key, here), MARK, False) is not True:
        return None
    return otel_context.set_value(key, None, here)

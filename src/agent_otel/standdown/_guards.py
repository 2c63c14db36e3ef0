"""The instrumentations that read no context key, guarded before a chat span of ours starts.

Each guard is cheap when its package is not loaded (one look in ``sys.modules``) and when its
guard is already in place; each one's module says what it guards and why.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ._handler import MODULE as UTIL_GENAI_HANDLER
from ._handler import guard_handler
from ._langsmith import CLIENT as LANGSMITH
from ._langsmith import hold_langsmith
from ._litellm import MODULE as LITELLM
from ._litellm import guard_litellm
from ._openai_v2 import PACKAGE as OPENAI_V2
from ._openai_v2 import guard_openai_v2

GUARDS: tuple[tuple[str, Callable[[], int]], ...] = (
    (OPENAI_V2, guard_openai_v2),
    (LITELLM, guard_litellm),
    (UTIL_GENAI_HANDLER, guard_handler),
    (LANGSMITH, hold_langsmith),
)
"""Per instrumentation: the module whose presence says it is loaded, and its guard."""

_MODULES = frozenset(module for module, _ in GUARDS)


def guard_providers() -> None:
    """Guard every such instrumentation that is loaded (openai-v2, LiteLLM's callback,
    util-genai's handler's agent, workflow and tool invocations, LangSmith's OpenTelemetry
    mode). None loaded: one test in C, a lookup per module (before each chat span: 44
    bytecodes per LLM call as a loop, 12 so; figure 2)."""
    if sys.modules.keys().isdisjoint(_MODULES):  # (the view iterates _MODULES, not modules)
        return
    modules = sys.modules
    for module, guard in GUARDS:
        if module in modules:
            guard()

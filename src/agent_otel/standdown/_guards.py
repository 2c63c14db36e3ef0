"""The instrumentations that read no context key, guarded before a chat span of ours starts.

Each guard is cheap when its package is not loaded (one look in ``sys.modules``) and when its
guard is already in place; each one's module says what it guards and why.
"""

from __future__ import annotations

import sys

from ._langsmith import CLIENT as LANGSMITH
from ._langsmith import hold_langsmith
from ._litellm import MODULE as LITELLM
from ._litellm import guard_litellm
from ._openai_v2 import PACKAGE as OPENAI_V2
from ._openai_v2 import guard_openai_v2


def guard_providers() -> None:
    """Guard every such instrumentation that is loaded (openai-v2, LiteLLM's callback,
    LangSmith's OpenTelemetry mode): a look in ``sys.modules`` each when none is."""
    modules = sys.modules
    if OPENAI_V2 in modules:
        guard_openai_v2()
    if LITELLM in modules:
        guard_litellm()
    if LANGSMITH in modules:
        hold_langsmith()

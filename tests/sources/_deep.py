"""The three-level script every framework row plays (``test_nested_deep``).

``lead`` asks ``ask_expert`` (the tool running ``expert``), ``expert`` asks ``ask_clerk`` (the
tool running ``clerk``), ``clerk`` asks ``lookup``, whose body opens ``client lookup`` on
another library's tracer; each agent then answers. Each agent's two model calls report
``s.TURNS`` usage where the builder's model lets the script choose it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

QUESTION = "Is Paris on file?"
ANSWERS = {"lead": "Paris is on file.", "expert": "On file.", "clerk": "Found Paris."}
CALL_IDS = {"lead": "call_x", "expert": "call_c", "clerk": "call_l"}
"""The id of each agent's one tool call (where the framework keeps the model's ids)."""


def lookup(tracer: Tracer) -> Callable[..., Any]:
    """The clerk's ``lookup`` tool: its body opens ``client lookup``, as an HTTP client would."""

    def lookup(term: str) -> str:
        """Look a term up in the files.

        Args:
            term: what to look up.
        """
        with tracer.start_as_current_span("client lookup"):
            return f"{term}: on file"

    return lookup

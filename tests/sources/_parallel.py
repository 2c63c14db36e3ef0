"""The tool-scope script every framework row plays (``test_tool_scopes``), on its test model.

One model response asks for three tool calls at once (``CALLS``): ``add`` twice, with other
arguments, and ``mul``; the next response answers "done". Each tool body opens a span of
another library's tracer, ``client <x>``, as an MCP or HTTP client would: it must nest under
the ``execute_tool`` span of the very call made with ``x``. A row's builder, ``_fw_<name>``,
plays it with ``parallel(tracer)``: the adapter's events of an agent named ``calc`` whose
tools are ``tools(tracer, ...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.trace import Tracer

AGENT = "calc"
CALLS = [("c1", "add", 1), ("c2", "add", 2), ("c3", "mul", 3)]
"""(call id, tool, argument): the model's one response; ``add`` twice, with other arguments."""


def tools(tracer: Tracer, *, sync: Collection[str] = ("mul",)) -> list[Callable[..., Any]]:
    """``add`` and ``mul``, each opening ``client <x>`` on ``tracer`` while it runs.

    The names in ``sync`` are plain functions (most frameworks run those on a thread), the
    others coroutine functions (run in the framework's task). Docstrings and hints are those
    every framework's tool decorator reads.
    """

    def add(x: int) -> int:
        """Add one.

        Args:
            x: a number.
        """
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    def mul(x: int) -> int:
        """Double.

        Args:
            x: a number.
        """
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    return [body if body.__name__ in sync else _coroutine(body) for body in (add, mul)]


def _coroutine(body: Callable[[int], int]) -> Callable[..., Any]:
    async def tool(x: int) -> int:
        return body(x)

    tool.__name__, tool.__qualname__, tool.__doc__ = body.__name__, body.__qualname__, body.__doc__
    return tool

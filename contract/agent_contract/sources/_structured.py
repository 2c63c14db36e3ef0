"""A framework's structured output as the run's answer.

Where a framework's model answers through an output tool (pydantic-ai's ``output_type``,
Strands' ``structured_output_model``), no text tells the answer: the run's answer is the
output the framework validated, as the JSON value it dumps to (``StructuredFinal``).
"""

from __future__ import annotations

from typing import Any

from agent_contract.agent.events import StructuredFinal

__all__ = ["structured_final"]


def structured_final(output: Any) -> StructuredFinal | None:
    """``output`` (a pydantic model, a dataclass, a dict...) as the run's answer; ``None``
    for no output or a text one (the text the last call told is the answer)."""
    if output is None or isinstance(output, str):
        return None
    try:
        from pydantic_core import to_jsonable_python

        data = to_jsonable_python(output)
    except Exception:  # a value pydantic cannot dump: as it is
        data = output
    return StructuredFinal(data=data)

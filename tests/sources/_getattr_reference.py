"""What the sources' fast reads are held to: reading as ``getattr`` reads
(``test_optional_field``, ``test_plain_models``)."""

from __future__ import annotations

from typing import Any


def or_of_getattrs(obj: Any, *names: str) -> Any:
    """``getattr(obj, a, None) or getattr(obj, b, None) or ...``: what ``optional_field``
    must return."""
    value = None
    for name in names:
        value = getattr(obj, name, None)
        if value:
            return value
    return value


class Extras:
    """Extras set by hand that are not a dict: truthy, answering ``in`` and subscripts its own
    way (pydantic still asks them)."""

    def __bool__(self) -> bool:
        return True

    def __contains__(self, name: object) -> bool:
        return name == "reasoning"

    def __getitem__(self, name: str) -> str:
        return f"{name} from a mapping"

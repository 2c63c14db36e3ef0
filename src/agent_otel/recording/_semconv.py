"""Which names a run writes: v1.41.1's (the default) or the conventions' head's.

The ``semconv`` option of a wrapper, else the process default :func:`configure()
<agent_otel.configure>` set, else ``AGENT_OTEL_SEMCONV``, else ``v1.41``. Resolved once per
wrapper (or instrumented agent) into an ``_attributes.Conventions``, so the hot path reads
fields and never branches on a mode. ``OTEL_SEMCONV_STABILITY_OPT_IN`` is not read here.
"""

from __future__ import annotations

import os

from agent_otel import _attributes as A
from agent_otel._guard import logger as _log
from agent_otel._plain import a_kind, shown, text_of

from ._hints import OptionTypeError

__all__ = ["ENV_VAR", "check_semconv", "conventions_for", "set_default_semconv"]

ENV_VAR = "AGENT_OTEL_SEMCONV"
_default: list[str | None] = [None]  # configure()'s choice (None: not chosen)
_told: set[str] = set()


def check_semconv(value: object, caller: str = "configure") -> str:
    """``value`` as a mode name: a ``TypeError`` naming ``caller(semconv=...)`` for what is no
    ``str``, a ``ValueError`` naming the modes there are for a ``str`` that is none of them."""
    text = text_of(value)  # a str subclass as the str it is; nothing else is hashed
    if text in A.CONVENTIONS:
        return text
    choices = ", ".join(repr(k) for k in A.CONVENTIONS)
    if text is None:
        raise OptionTypeError(
            f"{caller}(semconv=...) takes one of {choices}, or None, not {a_kind(value)}"
        )
    raise ValueError(f"{caller}(semconv=...) takes one of {choices}, or None, not {shown(value)}")


def set_default_semconv(value: str | None) -> None:
    """The process default (``configure(semconv=...)``); None goes back to the variable."""
    _default[0] = None if value is None else check_semconv(value)


def conventions_for(value: str | None) -> A.Conventions:
    """The names a wrapper's runs write: ``value`` (the option), else the process default,
    else the environment variable (an unknown value is told once and ignored)."""
    if value is None:
        value = _default[0]
    if value is None:
        raw = os.environ.get(ENV_VAR, "").strip().lower()
        if raw in A.CONVENTIONS:
            value = raw
        elif raw and raw not in _told:
            _told.add(raw)
            _log.warning(
                "agent-otel: %s=%r is not one of %s; using %r",
                ENV_VAR, raw, ", ".join(A.CONVENTIONS), A.SEMCONV_V1_41,
            )  # fmt: skip
    return A.CONVENTIONS[check_semconv(value, "otel_wrapper")] if value is not None else A.V1_41

"""A sampler that keeps no trace started here, or a ratio variable that is no ratio, told once.

Both leave a newcomer without traces, or with every one, and no word that says why: the
terminal view prints nothing under ``sampler=ALWAYS_OFF`` or ``OTEL_TRACES_SAMPLER_ARG=0``,
as under ``OTEL_SDK_DISABLED`` (told too); and ``OTEL_TRACES_SAMPLER_ARG=10`` (meant as 10 %)
keeps every trace, the SDK's line saying only that it "could not convert" a number.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler

from agent_otel._guard import warn_once

_RATIO_SAMPLERS: Final = frozenset({"traceidratio", "parentbased_traceidratio"})
_ARG: Final = "OTEL_TRACES_SAMPLER_ARG"


_ROOT: Final = re.compile(r"root:(.*?),remoteParentSampled:")


def _keeps_none(sampler: Sampler) -> bool:
    """Whether ``sampler``, one of the SDK's, drops every trace that starts in this process:
    asked for a root span of the trace id a ratio keeps first (its low 64 bits zero), as the
    SDK asks it for each root span. Always off, a ratio of 0, or a ``ParentBased`` of either."""
    if type(sampler).__module__ != "opentelemetry.sdk.trace.sampling":
        return False  # the application's own: not asked here
    try:  # (a ParentBased's root may be the application's)
        result = sampler.should_sample(Context(), 1 << 64, "invoke_agent")  # (no parent)
    except Exception:  # its failure is the SDK's to meet at the first span, not configure()'s
        return False
    return result.decision is Decision.DROP


def _described(sampler: Sampler) -> str:
    """The sampler's description; a ``ParentBased`` one's root, which decides here."""
    description = sampler.get_description()
    root = _ROOT.search(description)
    return root[1] if root else description


def hint_sampler(sampler: Sampler, given: bool, env: Mapping[str, str] | None = None) -> None:
    """Tell once what about the sampler in force a newcomer did not mean; ``given``: it is
    ``configure(sampler=...)``'s, else the variables'."""
    env = os.environ if env is None else env
    name = env.get("OTEL_TRACES_SAMPLER", "").lower()
    raw = env.get(_ARG)
    if not given and name in _RATIO_SAMPLERS and raw is not None and raw.strip():
        try:
            ratio = float(raw)
        except ValueError:
            ratio = math.nan
        if not 0 <= ratio <= 1:
            warn_once(
                _ARG, raw,
                "agent-otel: %s=%r is not a ratio from 0 to 1 (0.1 keeps a tenth of the "
                "traces), so every trace is kept: write the share as a fraction",
                _ARG, raw,
            )  # fmt: skip
    if _keeps_none(sampler):
        where = "configure(sampler=...)" if given else "OTEL_TRACES_SAMPLER (and _ARG)"
        warn_once(
            "sampler", "keeps none",
            "agent-otel: the sampler of %s, %s, keeps no trace that starts in this process, "
            "so no run is exported nor shown in the terminal; to record them, pass another "
            "sampler or leave it out (docs/configure.md)",
            where, _described(sampler),
        )  # fmt: skip

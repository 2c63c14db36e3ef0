"""The clock every timestamp of a run comes from (epoch nanoseconds).

A module attribute rather than a parameter so that ``agent_otel.testing`` can swap in a
deterministic clock for snapshot tests; a run reads it once when it starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable

now_ns: Callable[[], int] = time.time_ns

"""A test script run in a fresh interpreter (an import that must really be the first, a
global provider set once per process): its last line of output read as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any


def child_json(*args: str, timeout: float, env: Mapping[str, str] | None = None) -> Any:
    """Run ``python *args`` with this process's import path (and ``env`` over this process's
    environment); it must exit 0 (else its stderr's tail is the failure); the JSON its last
    line of output holds."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])

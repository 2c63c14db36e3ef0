"""The README's zero-code commands, read from the README itself, and the venv they install.

``python tests/integration/zero_code.py`` (run by ``.ci/run`` before the heavy suite, which
has no network) makes a fresh virtual environment at ``<repo>/.zero-code-venv`` and runs the
README's install lines in it, exactly as written, from the checkout. It records those lines
in the venv, so the test can tell a venv made from an older README. The test then runs the
README's remaining lines (its ``export`` and ``opentelemetry-instrument`` lines) against a
real OTLP/gRPC receiver on the distro's default address.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".zero-code-venv"
STAMP = VENV / "readme-install.txt"
HEADING = "### Zero code: `opentelemetry-instrument`"


def readme_lines() -> list[str]:
    """The command lines of the bash block under the README's zero-code heading."""
    text = (REPO / "README.md").read_text()
    section = text[text.index(HEADING) :]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the README's zero-code section has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def install_lines() -> list[str]:
    return [line for line in readme_lines() if line.lstrip().startswith("pip ")]


def run_lines() -> list[str]:
    return [line for line in readme_lines() if line not in install_lines()]


def activated(env: dict[str, str]) -> dict[str, str]:
    """``env`` as after ``source .zero-code-venv/bin/activate``."""
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    path = f"{VENV / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    return {**clean, "VIRTUAL_ENV": str(VENV), "PATH": path}


def main() -> int:
    lines = install_lines()
    if STAMP.exists() and STAMP.read_text() == "\n".join(lines):
        print(f"{VENV.name} is up to date with the README")
        return 0
    venv.create(VENV, clear=True, with_pip=True)
    env = activated({k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        return done.returncode
    STAMP.write_text("\n".join(lines))
    print(f"{VENV.name}: installed the README's {lines}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

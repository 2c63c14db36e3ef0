"""Regenerate the output pictures in README.md from real runs, or check they still match.

    python docs/pictures.py          # rewrite each picture from a fresh run
    python docs/pictures.py --check  # exit 1 when a picture no longer matches a real run

A picture is the fenced block right after a ``<!-- picture: COMMAND -->`` line; COMMAND (an
example script) is run with this interpreter and no ``OTEL_*`` variables, and its terminal
view (stderr) becomes the block. The check compares everything but what changes from run to
run: trace ids, durations and the timeline bars.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"]
MARKER = re.compile(r"^<!-- picture: (?P<command>.+?) -->\n```\n(?P<body>.*?)```\n", re.S | re.M)
TIMING = re.compile(r"\s+\d+(?:\.\d+)?(?:ns|µs|ms|s|m\d+\.\ds)\s+[█·]+$")
TRACE = re.compile(r"^trace [0-9a-f]{32}", re.M)


def run(command: str) -> str:
    """The terminal view of one real run of ``command`` (a script path from the root)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    paths = [str(ROOT / "src"), str(ROOT / "contract"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    done = subprocess.run(
        [sys.executable, *command.split()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stderr


def normalized(picture: str) -> list[str]:
    """The picture without what differs between runs."""
    text = TRACE.sub("trace <id>", picture)
    return [TIMING.sub("  <time>", line.rstrip()) for line in text.strip().splitlines()]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for page in PAGES:
        text = page.read_text()

        def replace(match: re.Match[str], page: Path = page) -> str:
            fresh = run(match["command"])
            if normalized(fresh) != normalized(match["body"]):
                stale.append(f"{page.name}: {match['command']}")
            return f"<!-- picture: {match['command']} -->\n```\n{fresh.rstrip()}\n```\n"

        updated = MARKER.sub(replace, text)
        if not check:
            page.write_text(updated)
    if check and stale:
        print("pictures that no longer match a real run (python docs/pictures.py):", *stale)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

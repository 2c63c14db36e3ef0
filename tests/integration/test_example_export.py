"""examples/send_to_collector.py, run as a user would, delivers its traces to a real backend."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from _support import REPO, Phoenix, poll, spans_in_phoenix

pytestmark = pytest.mark.heavy


def test_send_to_collector_example_reaches_phoenix(phoenix: Phoenix) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.http_url, OTEL_METRICS_EXPORTER="none")
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "send_to_collector.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    trace_ids = re.findall(r"^delivered trace ([0-9a-f]{32})$", done.stdout, re.MULTILINE)
    assert len(trace_ids) == 3, done.stdout

    for i, trace_id in enumerate(trace_ids):
        spans = poll(
            lambda t=trace_id: (s := spans_in_phoenix(phoenix, t)) and len(s) >= 8 and s,
            timeout=60,
            what=f"the 8 spans of trace {trace_id}",
        )
        by_name: dict[str, list[dict[str, object]]] = {}
        for span in spans:
            by_name.setdefault(str(span["name"]), []).append(span)
        # request > invoke_agent > 2 steps > (chat + 2 tools) and (chat)
        assert {name: len(group) for name, group in by_name.items()} == {
            f"request {i}": 1,
            "invoke_agent researcher": 1,
            "step 0": 1,
            "step 1": 1,
            "chat gpt-4o-mini": 2,
            "execute_tool web_search": 1,
            "execute_tool read_docs": 1,
        }
        [request], [agent] = by_name[f"request {i}"], by_name["invoke_agent researcher"]
        assert agent["parent_span_id"] == request["span_id"]
        for step in by_name["step 0"] + by_name["step 1"]:
            assert step["parent_span_id"] == agent["span_id"]

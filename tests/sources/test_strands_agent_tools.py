"""A Strands agent-as-tool whose run failed: the class it failed with is kept for the outer
run's result, and what no run of ours reads is not kept forever. Runs without Strands (the
adapter reads the items as they come)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent_contract.sources import strands_stream


def test_failed_agent_tools_no_run_reads_are_not_kept_forever() -> None:
    """The outer agent of an ``as_tool()`` run on its own (its nested run recorded inside some
    other traced tool) never reads its result: each failed call's note stayed in a module-wide
    table, one more per failure for the life of the process."""
    state: Any = SimpleNamespace(requests=SimpleNamespace(error=None))
    strands_stream._FAILED_AGENT_TOOLS.clear()
    try:
        for n in range(5000):
            use_id = f"tooluse_{n}"
            result = {"toolUseId": use_id, "status": "error", "content": [{"text": "boom"}]}
            failed: list[Any] = []
            item = {"tool_result": result}
            assert strands_stream._inner_events(state, item, use_id, failed) == []
            assert [e.error_type for e in failed] == ["tool_error"]
        assert len(strands_stream._FAILED_AGENT_TOOLS) <= 1024
        assert strands_stream._FAILED_AGENT_TOOLS["tooluse_4999"] == "tool_error"  # the newest
    finally:
        strands_stream._FAILED_AGENT_TOOLS.clear()

"""The terminal view's live part: open runs updating in place on a terminal, as before
elsewhere. A fake terminal is ``rich``'s own ``Console(force_terminal=True)`` on a StringIO."""

from __future__ import annotations

import asyncio
import io
import re
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry import context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.exporting._console import ConsoleTreeExporter
from agent_otel.exporting._live import LiveRuns, live_runs_for
from agent_otel.testing import InMemoryTelemetry

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def refresh_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]


def text_of(renderable: Any) -> str:
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(renderable)
    out = console.file.getvalue()
    assert isinstance(out, str)
    return out


def view_and_tree(screen: io.StringIO) -> tuple[LiveRuns, TracerProvider]:
    view = LiveRuns(Console(file=screen, force_terminal=True, width=120), refresh_per_second=20)
    exporter = ConsoleTreeExporter(screen, color=False)
    exporter.live = view
    # the view first, as configure() adds it; then the exporter under test
    telemetry = InMemoryTelemetry(processors=[view, SimpleSpanProcessor(exporter)])
    return view, telemetry.tracer_provider


@pytest.mark.parametrize("capture", [False, True], ids=["capture_off", "capture_on"])
def test_an_open_run_updates_in_place_then_prints_its_final_tree(capture: bool) -> None:
    """With capture on the run holds the ended call's span for the tool calls told after it:
    the view still shows it ended."""
    screen = io.StringIO()
    view, provider = view_and_tree(screen)
    seen: dict[str, Any] = {}

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", messages=[])
        yield TextDelta(text="let me look")
        yield LLMCallEnd(call_id="c1", finish_reason="tool_calls")
        yield Usage(input_tokens=1200, output_tokens=34)
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        seen["frame"] = text_of(view.render())
        seen["threads"] = len(refresh_threads())
        await asyncio.sleep(0.3)  # a few refreshes of the live area
        seen["screen"] = screen.getvalue()
        yield ToolResult(tool_call_id="t1", content="found")
        yield StepBoundary()

    async def run() -> None:
        wrap = otel_wrapper(tracer_provider=provider, agent_name="a", capture_content=capture)
        async for _ in wrap(agent()):
            pass

    asyncio.run(run())
    frame = seen["frame"]
    assert "invoke_agent a" in frame
    if not capture:  # a held call's tokens count when its span ends
        assert "1,200 in / 34 out tokens" in frame  # the ended call's tokens, so far
    assert re.search(r"execute_tool search\s+\S+\s+in progress", frame)
    assert "step 0" in frame
    assert "chat m" not in frame  # it ended: no longer open
    assert seen["threads"] == 1
    assert "invoke_agent a" in ANSI.sub("", seen["screen"])  # drawn on the terminal meanwhile
    assert refresh_threads() == []  # the live area left with the last run
    assert not view.active
    final = ANSI.sub("", screen.getvalue()[len(seen["screen"]) :])
    assert "invoke_agent a" in final and "chat m" in final  # the final tree, as today
    provider.shutdown()


def test_a_run_that_ends_prints_its_tree_above_a_run_still_open() -> None:
    screen = io.StringIO()
    view, provider = view_and_tree(screen)
    wrap = otel_wrapper(tracer_provider=provider, agent_name="outer")
    inner = otel_wrapper(tracer_provider=provider, agent_name="short")
    printed: dict[str, Any] = {}

    async def short() -> AsyncIterator[Any]:
        yield TextDelta(text="quick")

    async def outer() -> AsyncIterator[Any]:
        yield TextDelta(text="slow")
        token = context.attach(context.Context())  # a run of its own trace
        try:
            async for _ in inner(short()):
                pass
        finally:
            context.detach(token)
        printed["active"] = view.active
        printed["screen"] = ANSI.sub("", screen.getvalue())
        yield TextDelta(text="done")

    async def main() -> None:
        async for _ in wrap(outer()):
            pass

    above: list[bool] = []
    print_above = view.print_above
    view.print_above = lambda text: above.append(print_above(text)) or above[-1]  # type: ignore[method-assign]
    asyncio.run(main())
    assert above[0] is True  # through the live console, not across its area
    assert printed["active"]  # the outer run was still shown live
    assert "invoke_agent short" in printed["screen"]  # the short run's tree, printed above it
    assert not view.active and refresh_threads() == []
    provider.shutdown()


def test_the_open_spans_it_did_not_write_show_scrubbed() -> None:
    """An application's own span open in the run (its name a URL with a key in its query)
    shows scrubbed, as the tree printed when the run ends does."""
    key = "sk-proj-" + "Ab3dE6gH9k" * 4
    screen = io.StringIO()
    view, provider = view_and_tree(screen)
    seen: dict[str, str] = {}

    async def agent() -> AsyncIterator[Any]:
        with provider.get_tracer("app").start_as_current_span(f"GET /v1?key={key}"):
            seen["frame"] = text_of(view.render())
        yield TextDelta(text="done")

    async def main() -> None:
        async for _ in otel_wrapper(tracer_provider=provider, agent_name="a")(agent()):
            pass

    asyncio.run(main())
    assert "GET /v1?key=[REDACTED:openai_api_key len=48]" in seen["frame"]
    assert key[8:] not in seen["frame"] + screen.getvalue()
    provider.shutdown()


def test_non_terminal_prints_as_before_and_builds_no_live_view() -> None:
    stream = io.StringIO()
    tel = configure("live-test", console=True, console_stream=stream, set_global=False)
    try:
        assert tel.console is not None and tel.console.live is None

        async def agent() -> AsyncIterator[Any]:
            yield TextDelta(text="hi")

        async def run() -> None:
            async for _ in otel_wrapper(tracer_provider=tel.tracer_provider)(agent()):
                pass

        asyncio.run(run())
        assert "invoke_agent" in stream.getvalue()
        assert "\x1b[" not in stream.getvalue()  # no cursor movement, no colour
    finally:
        tel.shutdown()


def test_configure_on_a_terminal_builds_the_live_view() -> None:
    tel = configure("live-test", console=True, console_stream=Terminal(), set_global=False)
    try:
        assert tel.console is not None and isinstance(tel.console.live, LiveRuns)
    finally:
        tel.shutdown()
    assert refresh_threads() == []


def test_without_rich_the_view_prints_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails as if not installed
    assert live_runs_for(Terminal()) is None


def test_a_stream_that_cannot_say_gets_no_live_view() -> None:
    class Broken(io.StringIO):
        def isatty(self) -> bool:
            raise OSError("closed")

    assert live_runs_for(Broken()) is None


def test_the_live_view_shows_names_through_the_scrubber_it_was_given() -> None:
    """``configure(scrub=...)``'s scrubber reaches the live part of the view as it does the
    tree: a user's pattern hides an open span's name, and ``False`` shows it as it is."""
    from agent_otel import Scrubber

    employee = "EMP-123456"
    frames: dict[str, str] = {}
    for name, scrub in (
        ("custom", Scrubber(patterns={"employee_id": r"EMP-\d{6}"})),
        ("off", False),
    ):
        screen = io.StringIO()
        view = LiveRuns(Console(file=screen, force_terminal=True, width=120), scrub=scrub)
        provider = InMemoryTelemetry(processors=[view]).tracer_provider
        tracer = provider.get_tracer("app")
        with (
            tracer.start_as_current_span(f"invoke_agent {employee}"),
            tracer.start_as_current_span(f"GET /staff/{employee}"),
        ):
            frames[name] = text_of(view.render())
        provider.shutdown()
    assert employee not in frames["custom"]
    assert "invoke_agent [REDACTED:employee_id len=10]" in frames["custom"]
    assert "GET /staff/[REDACTED:employee_id len=10]" in frames["custom"]
    assert f"invoke_agent {employee}" in frames["off"]
    assert f"GET /staff/{employee}" in frames["off"]


def test_agent_strings_show_as_written_never_as_markup_or_escape_codes() -> None:
    """The live tree's labels are the agent's text: rich markup in a name (``[bold]``, ``[/]``,
    a trailing backslash) shows as written, and escape codes show as ``\\x1b``, never reaching
    the terminal; the final tree prints the same way."""
    markup = "[bold]x[/] [/] \\"
    evil = f"{markup}\x1b]0;pwned\x07\x1b[2J"
    shown = f"{markup}\\x1b]0;pwned\\x07\\x1b[2J"
    screen = io.StringIO()
    view, provider = view_and_tree(screen)
    seen: dict[str, str] = {}

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", messages=[])
        yield LLMCallEnd(call_id="c1", finish_reason="tool_calls")
        yield ToolCall(id="t1", function=FunctionCall(name=evil, arguments="{}"))
        seen["frame"] = text_of(view.render())
        await asyncio.sleep(0.2)  # drawn on the terminal a few times
        yield ToolResult(tool_call_id="t1", content="found")

    async def main() -> None:
        async for _ in otel_wrapper(tracer_provider=provider, agent_name=evil)(agent()):
            pass

    asyncio.run(main())
    frame = seen["frame"]
    lines = frame.splitlines()
    assert lines[0].startswith(f"invoke_agent {shown}  ")
    assert re.search(rf"execute_tool {re.escape(shown)}\s+\S+\s+in progress$", frame, re.M)
    assert "\x1b" not in frame
    assert "\x1b]0;pwned" not in screen.getvalue() and "\x1b[2J" not in screen.getvalue()
    assert f"execute_tool {shown}" in screen.getvalue()  # the final tree
    provider.shutdown()


def test_a_wide_fan_out_renders_a_screenful_without_holding_up_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run with a thousand tools open at once (a batch fan-out): every span start and end
    in the agent's threads waits on the view's lock, which a refresh held while it built a
    tree of all of them (4 times a second, in time growing with their square). The tree is
    built without the lock, and shows the first 20 tools and how many more (docs/live.md)."""
    from rich.tree import Tree

    most = 20
    view = LiveRuns(Console(file=io.StringIO(), width=120), refresh_per_second=1)
    provider = InMemoryTelemetry(processors=[view]).tracer_provider
    tracer = provider.get_tracer("app")
    locked_while_building: list[bool] = []
    add = Tree.add

    def watched_add(self: Tree, *args: Any, **kwargs: Any) -> Tree:
        locked_while_building.append(view._lock.locked())
        return add(self, *args, **kwargs)

    monkeypatch.setattr(Tree, "add", watched_add)
    with tracer.start_as_current_span("invoke_agent a"):
        with tracer.start_as_current_span("step 0") as step:
            tools = [tracer.start_span(f"execute_tool t{n}") for n in range(1_000)]
            frame = text_of(view.render()).splitlines()
            for tool in tools:
                tool.end()
        del step
    assert frame[0].startswith("invoke_agent a")
    assert frame[1].lstrip("└─ ").startswith("step 0")
    shown = [line for line in frame if "execute_tool" in line]
    assert [line.split("execute_tool ")[1].split()[0] for line in shown] == [
        f"t{n}" for n in range(most)
    ]
    assert frame[-1].strip().endswith(f"… {1_000 - most:,} more")
    assert len(frame) == most + 3
    assert locked_while_building and not any(locked_while_building)
    provider.shutdown()

"""The terminal tree: pure rendering on hand-built spans, and the buffering exporter."""

from __future__ import annotations

import io
import re

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)

from agent_otel.exporting._console import (
    ConsoleTreeExporter,
    ModelUsage,
    format_duration,
    render_token_summary,
    render_tree,
)
from agent_otel.testing import InMemoryTelemetry

TRACE = 0xABCD
T0 = 1_700_000_000_000_000_000
MS = 1_000_000
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def make_span(
    name: str,
    span_id: int,
    parent: int | None,
    start_ms: float,
    end_ms: float,
    attributes: dict[str, object] | None = None,
    status: Status | None = None,
    remote_parent: bool = False,
) -> ReadableSpan:
    context = SpanContext(TRACE, span_id, is_remote=False, trace_flags=TraceFlags(1))
    parent_ctx = (
        SpanContext(TRACE, parent, is_remote=remote_parent, trace_flags=TraceFlags(1))
        if parent is not None
        else None
    )
    return ReadableSpan(
        name=name,
        context=context,
        parent=parent_ctx,
        attributes=attributes or {},  # type: ignore[arg-type]
        start_time=int(T0 + start_ms * MS),
        end_time=int(T0 + end_ms * MS),
        status=status or Status(StatusCode.UNSET),
    )


def run_spans() -> list[ReadableSpan]:
    """invoke_agent 0-1000 ms > step 200-1000 > chat 200-450 (tokens), tool 500-800 (error)."""
    return [
        make_span(
            "invoke_agent researcher", 1, None, 0, 1000, {"gen_ai.operation.name": "invoke_agent"}
        ),
        make_span("step", 2, 1, 200, 1000, {"agent_otel.step.index": 0}),
        # given out of order on purpose: children are ordered by start time
        make_span(
            "execute_tool search",
            4,
            2,
            500,
            800,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "error.type": "Timeout",
            },
            Status(StatusCode.ERROR, "took too long"),
        ),
        make_span(
            "chat gpt-4o",
            3,
            2,
            200,
            450,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 34,
            },
        ),
    ]


def test_render_tree_plain_layout() -> None:
    # Longest label: "   └─ execute_tool search  [ERROR Timeout]" = 6 + 19 + 2 + 15 = 42 chars.
    # width 73 = 42 (label) + 2 + 7 (duration) + 2 + 20 (bar); the cap 73*3//5 = 43 >= 42.
    # Bar: 20 columns over 1000 ms, 50 ms a column. step 200-1000 -> columns 4..20;
    # chat 200-450 -> 4..ceil(9.0)=9; tool 500-800 -> 10..16.
    full = "█" * 20
    expected = "\n".join(
        [
            "trace 0000000000000000000000000000abcd",
            "invoke_agent researcher".ljust(42) + "    1.00s  " + full,
            "└─ step".ljust(42) + "    800ms  " + "····" + "█" * 16,
            "   ├─ chat gpt-4o  in=12 out=34".ljust(42)
            + "    250ms  "
            + "····"
            + "█" * 5
            + "·" * 11,
            "   └─ execute_tool search  [ERROR Timeout]"
            + "    300ms  "
            + "·" * 10
            + "█" * 6
            + "····",
        ]
    )
    assert render_tree(run_spans(), color=False, width=73) == expected


def test_colour_is_only_escapes_around_the_plain_text() -> None:
    coloured = render_tree(run_spans(), color=True, width=73)
    assert "\x1b[31m[ERROR Timeout]" in coloured  # error in red
    assert "\x1b[36min=12 out=34" in coloured  # tokens in cyan
    assert ANSI.sub("", coloured) == render_tree(run_spans(), color=False, width=73)
    assert "\x1b[" not in render_tree(run_spans(), color=False, width=73)


def test_marks_incomplete_error_without_type_and_tool_name() -> None:
    spans = [
        make_span("invoke_agent a", 1, None, 0, 100),
        make_span(
            "execute_tool",
            2,
            1,
            0,
            50,
            {"gen_ai.tool.name": "fetch", "agent_otel.incomplete": True},
        ),
        make_span("chat m", 3, 1, 50, 60, status=Status(StatusCode.ERROR, "boom")),
        make_span("step", 4, 1, 60, 70, status=Status(StatusCode.ERROR)),
    ]
    lines = render_tree(spans, color=False, width=100).splitlines()
    assert lines[2].startswith("├─ execute_tool  tool=fetch  [incomplete]")
    assert lines[3].startswith("├─ chat m  [ERROR boom]")  # no error.type: the description
    assert lines[4].startswith("└─ step  [ERROR] ")


def test_orphans_render_as_roots_and_long_names_are_cut_before_marks() -> None:
    long_name = "execute_tool " + "x" * 80
    spans = [
        make_span("invoke_agent a", 1, None, 0, 100),
        make_span(long_name, 2, 99, 10, 20, {"agent_otel.incomplete": True}),  # parent absent
    ]
    lines = render_tree(spans, color=False, width=60).splitlines()
    # cap = min(60 - 11 - 10, 60*3//5) = 36 label chars: the name is cut, the mark kept
    assert lines[1].startswith("invoke_agent a")
    assert lines[2].startswith("execute_tool xxx")
    assert lines[2][:36].endswith("…  [incomplete]")
    assert all(len(line) == 60 for line in lines[1:])


def test_remote_parent_is_a_root() -> None:
    spans = [make_span("invoke_agent worker", 5, 77, 0, 10, remote_parent=True)]
    assert (
        render_tree(spans, color=False, width=40).splitlines()[1].startswith("invoke_agent worker")
    )


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0ns"),
        (999, "999ns"),
        (1_400, "1µs"),
        (12_345_678, "12ms"),
        (999_600_000, "1.00s"),  # rounds up into seconds, never "1000ms"
        (1_234_000_000, "1.23s"),
        (125_000_000_000, "2m05.0s"),
    ],
)
def test_format_duration(ns: int, text: str) -> None:
    assert format_duration(ns) == text


def test_token_summary_table() -> None:
    usage = {"mini": ModelUsage(1, 15, 5), "gpt-4o": ModelUsage(2, 1200, 340)}
    # columns: name 11 wide ("token usage"), calls 5, input 5 ("1,200"), output 6 ("output")
    assert render_token_summary(usage, color=False).splitlines() == [
        "token usage  calls  input  output",
        "  gpt-4o         2  1,200     340",
        "  mini           1     15       5",
        "  total          3  1,215     345",
    ]
    one = render_token_summary({"m": ModelUsage(1, 3, 4)}, color=False).splitlines()
    assert one == ["token usage  calls  input  output", "  m              1      3       4"]
    assert render_token_summary({}, color=False) == ""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _provider(exporter: ConsoleTreeExporter) -> TracerProvider:
    """The kit's provider with ``exporter`` (under test) exporting too."""
    return InMemoryTelemetry(processors=[SimpleSpanProcessor(exporter)]).tracer_provider


def test_exporter_prints_a_trace_when_its_root_ends_and_sums_tokens() -> None:
    stream = io.StringIO()
    exporter = ConsoleTreeExporter(stream, width=80)
    tracer = _provider(exporter).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a"):
        with tracer.start_as_current_span(
            "chat m1", attributes={"gen_ai.response.model": "m1", "gen_ai.usage.input_tokens": 5}
        ):
            pass
        with tracer.start_as_current_span(
            "chat m2",
            attributes={"gen_ai.request.model": "m2", "gen_ai.usage.output_tokens": 7},
        ):
            pass
        assert stream.getvalue() == ""  # children wait for their root
        assert exporter.buffered_spans == 2
    text = stream.getvalue()
    assert text.splitlines()[1].startswith("invoke_agent a")
    assert "\x1b[" not in text  # not a TTY: plain
    assert exporter.buffered_spans == 0
    usage = exporter.token_usage()
    assert usage == {"m1": ModelUsage(1, 5, 0), "m2": ModelUsage(1, 0, 7)}
    exporter.shutdown()
    exporter.shutdown()  # idempotent: the summary once
    summary = stream.getvalue()[len(text) :]
    assert summary.count("token usage") == 1
    assert "  m1" in summary
    assert "  m2" in summary


def test_the_strings_of_spans_it_did_not_write_are_scrubbed_before_they_print() -> None:
    """Our runs' strings were scrubbed as written; the application's own spans in the trace,
    other instrumentations', their model names and an evaluation's note were not, and the
    terminal (a container's log) is an export too: the view scrubs what it prints."""
    key = "sk-proj-" + "Ab3dE6gH9k" * 4
    token = "ghp_" + "x7Yq2" * 8
    stream = io.StringIO()
    exporter = ConsoleTreeExporter(stream, width=400)
    tracer = _provider(exporter).get_tracer("app")
    with tracer.start_as_current_span("invoke_agent a") as root:
        ids = root.get_span_context()
        exporter.add_note(ids.trace_id, ids.span_id, f"evaluation {token}")
        with tracer.start_as_current_span(f"GET https://api.example.com/v1?key={key}") as call:
            call.set_status(Status(StatusCode.ERROR, f"401: bad key {key}"))
        usage = {"gen_ai.request.model": f"m-{token}", "gen_ai.usage.input_tokens": 5}
        with tracer.start_as_current_span("chat", attributes=usage) as chat:
            chat.set_attribute("gen_ai.tool.name", token)
            chat.set_attribute("error.type", f"E{token}")
            chat.set_status(Status(StatusCode.ERROR))
    exporter.shutdown()
    text = stream.getvalue()
    assert "GET https://api.example.com/v1?key=[REDACTED:openai_api_key len=48]" in text
    assert "[ERROR 401: bad key [REDACTED:openai_api_key len=48]]" in text
    assert "tool=[REDACTED:github_token len=44]" in text
    assert "[ERROR E[REDACTED:github_token len=44]]" in text
    assert "evaluation [REDACTED:github_token len=44]" in text
    assert "  m-[REDACTED:github_token len=44]" in text  # the token summary's model
    assert key[8:] not in text
    assert token[4:] not in text


def test_exporter_colours_a_tty_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = _Tty()
    tracer = _provider(ConsoleTreeExporter(tty, width=60)).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a"):
        pass
    assert "\x1b[" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty2 = _Tty()
    tracer = _provider(ConsoleTreeExporter(tty2, width=60)).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a"):
        pass
    assert "\x1b[" not in tty2.getvalue()


def test_unfinished_traces_are_bounded_and_reported_at_shutdown() -> None:
    stream = io.StringIO()
    exporter = ConsoleTreeExporter(stream, max_buffered_spans=10)
    tracer = _provider(exporter).get_tracer("t")
    for _ in range(30):  # 30 traces whose root never ends: 60 children
        root = tracer.start_span("invoke_agent stuck")
        context = set_span_in_context(root)
        for _ in range(2):
            tracer.start_span("step", context=context).end()
        assert exporter.buffered_spans <= 10
    assert stream.getvalue() == ""
    exporter.shutdown()
    out = stream.getvalue()
    assert out.count("(root span not ended)") == 5  # the 10 newest spans: 5 traces
    assert "50 spans of unfinished traces dropped" in out


def test_exporter_never_raises_when_the_stream_fails() -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise ValueError("I/O operation on closed file")

    tracer = _provider(ConsoleTreeExporter(Broken())).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a"):
        pass  # no exception reaches the traced code


def test_exporter_ignores_non_recording_parent_context() -> None:
    stream = io.StringIO()
    tracer = _provider(ConsoleTreeExporter(stream)).get_tracer("t")
    remote = SpanContext(TRACE, 42, is_remote=True, trace_flags=TraceFlags(1))
    with tracer.start_as_current_span(
        "invoke_agent child", context=set_span_in_context(NonRecordingSpan(remote))
    ):
        pass
    assert "invoke_agent child" in stream.getvalue()  # a remote parent makes a local root


def test_a_note_printed_after_its_trace_is_scrubbed_as_the_tree_is() -> None:
    """An evaluation recorded after its run's tree printed shows below the span's name at once,
    and one of a run this view never showed at shutdown: both printed the span's name (an
    application's URL with a key in its query) and the note as they were, unscrubbed."""
    key = "sk-proj-" + "Ab3dE6gH9k" * 4
    stream = io.StringIO()
    exporter = ConsoleTreeExporter(stream, width=200)
    tracer = _provider(exporter).get_tracer("app")
    with tracer.start_as_current_span(f"GET /v1?key={key}") as root:
        ids = root.get_span_context()
    exporter.add_note(ids.trace_id, ids.span_id, f"evaluation late {key}")
    exporter.add_note(0x7B, 0x1C8, f"evaluation orphan {key}")
    exporter.shutdown()
    text = stream.getvalue()
    assert key[8:] not in text
    late = text.split("\n", 2)[2]  # after the tree's two lines: the late note's own
    assert "GET /v1?key=[REDACTED:openai_api_key len=48]\n" in late
    assert "evaluation late [REDACTED:openai_api_key len=48]" in late
    assert "evaluation orphan [REDACTED:openai_api_key len=48]" in late


def test_configures_scrubber_is_the_one_the_terminal_view_prints_with() -> None:
    """``configure(scrub=...)``: the view showed every string through the default scrubber, so
    a user's own patterns (an employee id the export hides) printed in the terminal, and
    ``scrub=False`` (a developer's machine) still redacted; the resource follows it too."""
    from agent_otel import Scrubber
    from agent_otel.exporting._configure import configure

    key = "sk-proj-" + "Ab3dE6gH9k" * 4
    employee = "EMP-123456"
    custom = Scrubber(patterns={"employee_id": r"EMP-\d{6}"})
    printed = {}
    for name, scrub in (("custom", custom), ("off", False)):
        stream = io.StringIO()
        telemetry = configure(
            "svc",
            console=True,
            console_stream=stream,
            set_global=False,
            scrub=scrub,
            resource_attributes={"owner": employee},
        )
        tracer = telemetry.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span(f"lookup {employee}", attributes={
            "gen_ai.request.model": f"m-{employee}", "gen_ai.usage.input_tokens": 1,
        }) as span:  # fmt: skip
            span.set_status(Status(StatusCode.ERROR, f"denied {key}"))
            ids = span.get_span_context()
        telemetry.console.add_note(ids.trace_id, ids.span_id, f"evaluation {employee}")  # type: ignore[union-attr]
        telemetry.shutdown()
        printed[name] = stream.getvalue()
        owner = telemetry.tracer_provider.resource.attributes["owner"]
        assert owner == ("[REDACTED:employee_id len=10]" if scrub else employee)
    custom_text = printed["custom"]
    assert employee not in custom_text and key[8:] not in custom_text
    assert "lookup [REDACTED:employee_id len=10]" in custom_text
    assert "[ERROR denied [REDACTED:openai_api_key len=48]]" in custom_text
    assert "evaluation [REDACTED:employee_id len=10]" in custom_text
    assert "  m-[REDACTED:employee_id len=10]" in custom_text  # the token summary
    off = printed["off"]
    assert f"lookup {employee}" in off and f"[ERROR denied {key[:12]}" in off  # (then cut)
    assert f"evaluation {employee}" in off and f"  m-{employee}" in off
    assert "REDACTED" not in off


def test_control_characters_in_span_strings_print_as_escapes_never_run() -> None:
    """An agent's, model's or tool's name, a status, another instrumentation's token count or
    an evaluation's note may hold escape codes (clear the screen, set the window title) or a
    newline: the terminal view shows them as Python's escapes (``\\x1b``), in the tree, in a
    note printed after its run, and in the token summary, and each span keeps one line."""
    evil = "x\x1b]0;pwned\x07\x1b[2J\nforged line\u202e"
    shown = "x\\x1b]0;pwned\\x07\\x1b[2J\\nforged line\\u202e"
    stream = io.StringIO()
    exporter = ConsoleTreeExporter(stream, width=400)
    tracer = _provider(exporter).get_tracer("app")
    with tracer.start_as_current_span(f"invoke_agent {evil}") as root:
        ids = root.get_span_context()
        usage = {"gen_ai.request.model": evil, "gen_ai.usage.input_tokens": evil}
        with tracer.start_as_current_span("chat", attributes=usage) as chat:
            chat.set_attribute("gen_ai.tool.name", evil)
            chat.set_status(Status(StatusCode.ERROR, evil))
    tree = stream.getvalue()
    exporter.add_note(ids.trace_id, ids.span_id, f"evaluation {evil}")  # after it printed
    exporter.shutdown()
    text = stream.getvalue()
    for control in ("\x1b", "\x07", "\u202e"):
        assert control not in text
    lines = tree.splitlines()
    assert len(lines) == 3  # the trace id, the run, its call: no forged line
    assert lines[1].startswith(f"invoke_agent {shown}")
    assert f"in={shown}" in lines[2] and f"tool={shown}" in lines[2]
    assert f"[ERROR {shown}]" in lines[2]
    late = text[len(tree) :].splitlines()
    assert late[1] == f"invoke_agent {shown}"  # the span the late note names
    assert late[2] == f"└─ evaluation {shown}"
    assert f"  {shown}" in text[len(tree) :]  # the summary's model

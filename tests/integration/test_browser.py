"""What a person sees of a run in Phoenix's and MLflow's web UIs, in a real headless Chromium.

A run with a failing tool (``genai_scenario``: two steps, two chat calls, ``get_time``
returning an error), content capture on, goes through ``agent.invoke(messages,
stream_wrapper=otel_wrapper())`` to a real Phoenix and a real ``mlflow server`` on loopback.
Debian's ``chromium``, driven by Playwright with that executable (no browser download), opens
each trace list and the trace, and the tests read the page as a person would: the run's name
and input in the list, the tree, the failing tool marked with its reason, the chat view with
its messages. Screenshots go to ``artifacts/screenshots/`` (git-ignored; CI keeps the folder);
``AGENT_OTEL_DOCS_SCREENSHOTS=1`` also writes the small ones docs/backends.md shows.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import uuid4

import pytest
from _support import MLFLOW_EXPERIMENT, REPO, MLflow, Phoenix, poll, spans_in_phoenix
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import Message
from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.recording.content._capture import ENV_CAPTURE
from conftest import _missing
from genai_scenario import AGENT, ANSWER, CONVERSATION, PROVIDER, TOOLS, agent_events

pytestmark = pytest.mark.heavy

SHOTS = REPO / "artifacts" / "screenshots"
DOCS_SHOTS = REPO / "docs" / "images"
ROOT = f"invoke_agent {AGENT}"
FAILED_TOOL = f"execute_tool {TOOLS[1][1]}"
REASON = TOOLS[1][3]  # the failing tool's returned text: its reason, capture on
TIMEOUT_MS = 120_000  # a loaded 2-core CI machine renders slowly


def _question(backend: str) -> str:
    """The run's question, unique so its row is found among other runs in the same list."""
    return f"What is the weather in Paris, and what time is it there? ({backend} {uuid4().hex[:6]})"


def _send(monkeypatch: pytest.MonkeyPatch, url: str, question: str, headers: str = "") -> str:
    """The failing-tool run through ``invoke()`` to ``url`` (OTLP/HTTP); its trace id."""
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_ONLY")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{url}/v1/traces")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # traces-only backends
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    if headers:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", headers)
    local = InMemorySpanExporter()
    tel = configure(
        "agent-otel-browser",
        timeout=60,
        console=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(local)],
    )
    wrapper = otel_wrapper(
        agent_name=AGENT,
        provider=PROVIDER,
        conversation_id=CONVERSATION,
        tracer_provider=tel.tracer_provider,
        meter_provider=tel.meter_provider,
    )
    agent = ScriptedAgent(agent_events(), delay=0.01)  # a visible timeline
    messages = [Message(role="user", content=question)]
    try:
        # In a thread of its own: Playwright's sync API keeps an event loop in this one.
        with ThreadPoolExecutor(1) as thread:
            result = thread.submit(asyncio.run, agent.invoke(messages, wrapper)).result()
        assert result.text == ANSWER
        assert tel.force_flush(90_000)
    finally:
        assert tel.shutdown(90_000)
    [trace_id] = {
        format(s.context.trace_id, "032x") for s in local.get_finished_spans() if s.context
    }
    return trace_id


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian ``chromium`` under Playwright; no browser is ever downloaded."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright (pip install playwright -c tests/constraints.txt)")
    executable = os.environ.get("AGENT_OTEL_CHROMIUM") or shutil.which("chromium")
    if executable is None:
        _missing("Chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    # Phoenix flattens its span tree below ~1300 px: a desktop window's width.
    context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    try:
        yield opened
    finally:
        context.close()


def _shot(page: Any, name: str, docs: bool = False) -> None:
    """A screenshot as a CI artefact; also, small, for docs/backends.md when asked to."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    if docs and os.environ.get("AGENT_OTEL_DOCS_SCREENSHOTS") == "1":
        from PIL import Image  # only to write the docs' copies: a 64-colour palette

        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        with Image.open(path) as shot:
            small = shot.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
            small.save(DOCS_SHOTS / f"{name}.png", optimize=True)


def _assert_tree(lefts: list[tuple[str, float]]) -> None:
    """The tree as drawn: each span indented under its parent (left edge of its label)."""
    x: dict[str, list[float]] = {}
    for name, left in lefts:
        x.setdefault(name.strip(), []).append(left)
    [root], steps = x[ROOT], x["step 0"] + x["step 1"]
    calls = x["chat gpt-4o"] + x["execute_tool get_weather"] + x[FAILED_TOOL]
    assert len(calls) == 4, lefts
    assert root < min(steps) and max(steps) < min(calls), lefts


def _text(locator: Any) -> str:
    return str(locator.inner_text())


def test_phoenix_shows_the_run_its_input_and_the_failing_tools_reason(
    phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch, page: Any
) -> None:
    question = _question("phoenix")
    trace_id = _send(monkeypatch, phoenix.http_url, question)
    poll(
        lambda: len(spans_in_phoenix(phoenix, trace_id)) >= 7,
        timeout=60,
        what=f"trace {trace_id} in Phoenix",
    )

    # The trace list (root spans): the run's name, its input and output previews.
    page.goto(f"{phoenix.http_url}/projects", wait_until="domcontentloaded")
    page.get_by_role("link", name="default").first.click()
    page.get_by_role("tab", name="Traces").click()
    row = page.get_by_role("row").filter(has_text=question)
    row.wait_for()
    assert ROOT in _text(row)
    assert ANSWER in _text(row)
    _shot(page, "phoenix-trace-list", docs=True)

    # The trace: the tree, only the failing tool marked, its reason in the error banner.
    row.get_by_text(ROOT).click()
    nodes = page.locator(".span-node__heading")  # one heading per span of the tree
    for name in (ROOT, "step 0", "step 1", "chat gpt-4o", "execute_tool get_weather", FAILED_TOOL):
        nodes.filter(has_text=name).first.wait_for()
    _assert_tree([(_text(n), n.bounding_box()["x"]) for n in nodes.all()])
    marked = [_text(n) for n in nodes.filter(has=page.locator("[aria-label=ERROR]")).all()]
    assert marked == [FAILED_TOOL]
    nodes.filter(has_text=FAILED_TOOL).click()
    page.get_by_text(REASON, exact=True).wait_for()  # the red banner
    _shot(page, "phoenix-failing-tool", docs=True)

    # A chat span: the conversation, message by message, not one text.
    nodes.filter(has_text="chat gpt-4o").nth(1).click()
    page.get_by_text("Tool Result: call_2").wait_for()  # the failing tool's message, as sent
    for role in ("user", "assistant", "tool"):
        assert page.get_by_text(role, exact=True).count() >= 1, role
    _shot(page, "phoenix-chat", docs=True)


# What MLflow's UI stores once its first-visit tip and its assistant panel were dismissed:
# set before each page loads, so neither covers the page (as for a returning user).
_MLFLOW_SEEN = """
localStorage.setItem("mlflow.detectIssues.guidanceShown_v1", "true");
localStorage.setItem("mlflow.assistant.fab.autoOpenedOnFirstLoad_v1", "true");
localStorage.setItem("mlflow.assistant.panelOpen_v1", "false");
"""


def _mlflow_page(page: Any, mlflow: MLflow, path: str, ready: str) -> None:
    """Open an MLflow page as a returning user and wait for the text ``ready``."""
    page.add_init_script(_MLFLOW_SEEN)
    page.goto(f"{mlflow.url}/#/experiments/{MLFLOW_EXPERIMENT}/{path}")
    page.get_by_text(ready, exact=True).first.wait_for()


def test_mlflow_shows_the_run_by_name_with_its_input_and_its_chat_view(
    mlflow: MLflow, monkeypatch: pytest.MonkeyPatch, page: Any
) -> None:
    question = _question("mlflow")
    trace_id = _send(
        monkeypatch, mlflow.url, question, f"x-mlflow-experiment-id={MLFLOW_EXPERIMENT}"
    )

    # The trace list with its "Trace name" column shown: the run's name, input and output.
    _mlflow_page(page, mlflow, "traces", "Traces")
    row = page.locator("[role=row]").filter(has=page.get_by_label(f"Select trace tr-{trace_id}"))
    row.wait_for()
    assert question in _text(row)
    page.get_by_role("button", name="Display").click()
    page.get_by_text("Columns", exact=True).click()
    page.get_by_text("Trace name", exact=True).click()
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    poll(lambda: ROOT in _text(row), timeout=30, what="the trace name in MLflow's list")
    assert ANSWER in _text(row)
    _shot(page, "mlflow-trace-list", docs=True)

    # The trace: the tree, and the chat span's conversation view.
    _mlflow_page(page, mlflow, f"traces?traceId=tr-{trace_id}", FAILED_TOOL)
    nodes = page.locator("[data-testid^='span-title-row-']")  # one title per span of the tree
    for name in (ROOT, "step 0", "step 1", "chat gpt-4o", "execute_tool get_weather", FAILED_TOOL):
        nodes.filter(has_text=name).first.wait_for()
    _assert_tree([(_text(n).splitlines()[0], n.bounding_box()["x"]) for n in nodes.all()])
    nodes.filter(has_text="chat gpt-4o").nth(1).click()
    page.get_by_text("Tool calls", exact=True).first.wait_for()  # the assistant's tool calls
    for role in ("User", "Assistant"):
        assert page.get_by_text(role, exact=True).count() >= 1, role
    assert page.get_by_text(f'"{REASON}"', exact=True).count() >= 1  # the tool's message
    _shot(page, "mlflow-chat", docs=True)


def test_mlflow_marks_the_failing_tool_with_its_reason(
    mlflow: MLflow, monkeypatch: pytest.MonkeyPatch, page: Any
) -> None:
    trace_id = _send(monkeypatch, mlflow.url, _question("mlflow-tool"), "x-mlflow-experiment-id=0")
    _mlflow_page(page, mlflow, f"traces?traceId=tr-{trace_id}", FAILED_TOOL)
    page.get_by_text(FAILED_TOOL, exact=True).first.click()
    _shot(page, "mlflow-failing-tool")
    page.get_by_text(REASON).first.wait_for(timeout=15_000)

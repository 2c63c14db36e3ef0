"""A provider instrumentation first imported while our chat span is open stands down at once.

Our guards are put in place on what is loaded as a wrapper is made and as each chat span
starts. An agent that imports LiteLLM (its OpenTelemetry callback's class comes with it), or
imports and instruments openai-v2 or the official ``genai-openai`` package, only inside its
first chat span, after OpenTelemetry's instrumentation package was ever imported, made its
first call with no guard: two chat spans, its tokens counted twice. Each case runs in a fresh
process (``late_import_child.py``), so the import really is the first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from child_process import child_json

CHILD = Path(__file__).with_name("late_import_child.py")
PROVIDERS = {
    "litellm": "litellm.integrations.opentelemetry",
    "openai-v2": "opentelemetry.instrumentation.openai_v2",
    "genai-openai": "opentelemetry.instrumentation.genai.openai",
}
"""Each provider the child can import late, and the module that says it is installed here."""
INPUT_TOKENS = 7  # the mock completion's prompt_tokens


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


@pytest.mark.heavy  # a child interpreter each, LiteLLM's import alone some seconds
@pytest.mark.timeout(300)
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_provider_imported_inside_our_chat_span_stands_down_from_its_first_call(
    provider: str,
) -> None:
    """One chat span (ours) and the call's tokens counted once, in the very call during which
    the instrumentation was imported and turned on. Opted out, the next run's call is traced
    by it beside ours: it was active, so the first run shows a stand-down, not a silent one."""
    if not _installed(PROVIDERS[provider]):
        pytest.skip(f"{PROVIDERS[provider]} is not installed here")
    result: dict[str, Any] = child_json(str(CHILD), provider, timeout=240)
    assert result["loaded_before"] == []  # no instrumentation module before the chat span
    assert result["warnings"] == []  # nothing of ours swallowed
    assert result["standing_down"] == {"tokens": INPUT_TOKENS, "scopes": ["agent_otel"] * 3}
    opted_out = result["opted_out"]
    assert [scope for scope in opted_out["scopes"] if scope != "agent_otel"]
    assert opted_out["tokens"] == 2 * INPUT_TOKENS


def test_a_watched_module_loads_as_it_would_and_its_own_error_comes_out_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finder changes nothing of the import but what runs after it: the module keeps the
    loader the other finders gave it, the guards run once it has run, and a module whose code fails
    raises its own exception, the guards not run."""
    from agent_otel.standdown._imports import GuardOnImport
    from agent_otel.standdown._loader import GuardingLoader

    (tmp_path / "late_fine.py").write_text("VALUE = 1\n")
    (tmp_path / "late_broken.py").write_text("raise LookupError('its own')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran: list[int] = []
    finder = GuardOnImport(frozenset({"late_fine", "late_broken"}), lambda: ran.append(1))
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    for name in ("late_fine", "late_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    import late_fine  # type: ignore[import-not-found]

    assert late_fine.VALUE == 1 and ran == [1]
    assert not isinstance(late_fine.__loader__, GuardingLoader)  # the finders' own loader
    assert late_fine.__spec__.loader is late_fine.__loader__
    with pytest.raises(LookupError, match="its own"):
        import late_broken  # type: ignore[import-not-found]  # noqa: F401
    assert ran == [1]
    monkeypatch.delitem(sys.modules, "late_fine")

"""The adapters import nothing heavy: no OpenTelemetry, and no SDK or framework until used."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

from agent_contract import sources

# Every module of the package, found rather than listed, so a new adapter is checked too.
MODULES = sorted(
    m.name for m in pkgutil.iter_modules(sources.__path__) if not m.name.startswith("_")
)
HEAVY = ["opentelemetry", "openai", "anthropic", "litellm", "agents", "langgraph",
         "langchain_core", "pydantic_ai", "httpx", "httpx2", "agno", "autogen_agentchat",
         "autogen_core", "autogen_ext", "google", "strands", "smolagents",
         "llama_index", "workflows"]  # fmt: skip


def test_every_source_module_imports_with_pydantic_and_the_standard_library_only() -> None:
    imports = "; ".join(f"import agent_contract.sources.{name}" for name in MODULES)
    names = "sorted({m.split('.')[0] for m in sys.modules})"
    check = f"import json, sys; {imports}; print(json.dumps({names}))"
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(done.stdout))
    assert loaded.isdisjoint(HEAVY), loaded & set(HEAVY)
    assert "agent_contract" in loaded
    assert {
        "agno_stream",
        "autogen_stream",
        "google_adk_stream",
        "pydantic_ai_stream",
        "strands_stream",
    } <= set(MODULES)

"""Test helpers for agent-otel users and our own tests (in-memory providers, span trees)."""

"""agent-otel's benchmark suite: ``python -m benchmarks.run [--quick]`` (see README.md here)."""

"""agent-otel: OpenTelemetry observability middleware for AI agents."""

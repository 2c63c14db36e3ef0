"""Recording a run: read events by shape, route them to their span's owner, write spans and
metrics.

``_wrapper`` owns iteration; ``_read`` maps each event to a ``RunRecorder`` method;
``_recorder`` routes it to the owner of the span it belongs to (``_run``, ``_step``, ``_chat``,
``_tool``), each writing every attribute, metric and ending of its span through ``_span``'s
guarded door; ``content/`` shapes captured content; ``_metrics`` holds the instruments.
docs/layout.md lists every module.
"""

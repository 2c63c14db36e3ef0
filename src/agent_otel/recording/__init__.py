"""Recording a run: read events by shape, feed the run's state machine, write spans and metrics.

``_wrapper`` owns iteration; ``_read`` maps each event to a recorder call; ``_recorder`` with
``_state``, ``_llm``, ``_tools`` and ``_calls`` keeps one run's spans; ``_content`` and
``_messages`` shape captured content; ``_metrics`` holds the instruments.
"""

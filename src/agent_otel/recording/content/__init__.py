"""Opt-in content capture: prompts, completions and tool payloads, within byte budgets.

``_capture`` (:class:`ContentCapture`, the environment variable, the text buffer of a streamed
response), ``_fit`` (JSON cut to a budget at a cost bounded by the budget), ``_messages`` +
``_message_parts`` (agent messages as the conventions' message parts), ``_spans`` (content on a
span, encoded once), ``_run_capture`` (one run's accounts: the history already recorded, the
bytes left), ``_previews`` (the root's plain-text previews), ``_tool_definitions`` (the tools a
request offers, as ``gen_ai.tool.definitions``), ``_inference_event`` (content as
``gen_ai.client.inference.operation.details`` log events). The span owners in ``recording/``
decide where content goes; this folder decides what it looks like.
"""

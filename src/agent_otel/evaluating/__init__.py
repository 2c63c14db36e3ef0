"""Evaluation results: a judge's score for a run or an LLM call, as a GenAI log event."""

from ._result import record_evaluation

__all__ = ["record_evaluation"]

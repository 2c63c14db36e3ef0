"""Tail sampling of whole runs, in process: keep the runs that matter, a ratio of the rest."""

from ._policy import SamplerStats, TailSamplingPolicy
from ._processor import TailSampler

__all__ = ["SamplerStats", "TailSampler", "TailSamplingPolicy"]

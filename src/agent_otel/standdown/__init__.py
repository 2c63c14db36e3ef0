"""Provider instrumentations stand down while our chat span covers a model call, so each call
has one chat span and its tokens are counted once; HTTP spans stay. ``otel_wrapper(
stand_down_providers=False)`` opts out."""

from ._context import PROVIDER_MODULES, inference_span, stand_down
from ._openai_v2 import guard_openai_v2

__all__ = ["PROVIDER_MODULES", "guard_openai_v2", "inference_span", "stand_down"]

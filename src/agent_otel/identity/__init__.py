"""Run identity: ``session.id``, ``user.id`` and ``gen_ai.conversation.id`` on every span of a
run and of its sub-agent runs, in-process and across processes; never on metrics."""

from typing import TYPE_CHECKING, Any

from ._identity import RunIdentity, identity_of, run_identity, with_identity

if TYPE_CHECKING:
    from ._processor import RunIdentityProcessor


def __getattr__(name: str) -> Any:
    """``RunIdentityProcessor`` is an SDK span processor: the SDK loads only when asked."""
    if name == "RunIdentityProcessor":
        from ._processor import RunIdentityProcessor

        return RunIdentityProcessor
    raise AttributeError(f"module 'agent_otel.identity' has no attribute {name!r}")


__all__ = ["RunIdentity", "RunIdentityProcessor", "identity_of", "run_identity", "with_identity"]

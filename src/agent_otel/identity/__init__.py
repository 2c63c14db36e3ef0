"""Run identity: ``session.id``, ``user.id`` and ``gen_ai.conversation.id`` on every span of a
run and of its sub-agent runs, in-process and across processes; never on metrics."""

from ._identity import RunIdentity, identity_of, run_identity, with_identity

__all__ = ["RunIdentity", "identity_of", "run_identity", "with_identity"]

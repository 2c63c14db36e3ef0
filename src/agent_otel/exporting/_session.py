"""The HTTP session of the OTLP/HTTP exporters ``configure()`` builds: a forked child's own.

``requests`` keeps a finished request's connection open for the next one, as a Collector
lets it. A child forked after the parent exported holds the same socket in its copy of the
session's pools: its requests went on the parent's connection, and when both exported at
once their bytes mixed on it (a request the collector cannot read, an answer read by the
process that did not ask). In a forked child each adapter's pools are made afresh, settings
(retries, pool sizes) kept; the parent's connections are dropped unused, never closed there
(a parent thread may hold a pool's lock at the fork, and the socket is still the parent's).
"""

from __future__ import annotations

import copy

import requests
from requests.adapters import HTTPAdapter

from agent_otel._fork import in_forked_child

__all__ = ["ForkSafeSession"]


class ForkSafeSession(requests.Session):
    """A ``requests.Session`` whose connection pools a forked child gets empty."""

    def __init__(self) -> None:
        super().__init__()
        in_forked_child(self._renew_pools)

    def _renew_pools(self) -> None:
        for prefix, adapter in list(self.adapters.items()):
            if isinstance(adapter, HTTPAdapter):
                # a copy is made from its settings alone (its pickling state), with new pools
                self.adapters[prefix] = copy.copy(adapter)

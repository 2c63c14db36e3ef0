"""What one run is recorded with: built once per wrapper from its options, adjusted per run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.trace import Tracer
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel.cost import BUNDLED_PRICES, PriceTable
from agent_otel.scrubbing import Scrub

from ._metrics import Instruments
from .content._capture import ContentCapture


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything a :class:`~agent_otel.recording._recorder.RunRecorder` needs besides its events.

    ``agent_attributes`` are set on the agent span (request parameters and run parameters an
    instrumented agent was called with, already filtered to the allow-list); ``input_messages``
    are the messages the run was invoked with, recorded only when content capture is on.
    ``prices`` prices calls whose provider reports no cost (None: no costing).
    ``stand_down_providers``: provider instrumentations stand down inside our chat spans.
    ``logger`` emits the content events (``ContentCapture.events``), ``error_logger`` the
    event of a failed model call (whatever the capture). ``scrub`` scrubs every
    string the run writes (None: scrubbing off; see :mod:`agent_otel.scrubbing`).
    ``conventions``: the names the run writes where the head renamed v1.41.1's.
    ``pending_interval``: seconds between snapshots of the run's open spans (None: none).
    ``starts``: the span starts this wrapper's runs checked once (``_span.known_start``).
    ``endpoint``: the server attributes of the chat spans started with these settings (a
    call's ``EndpointCallStart``: ``_endpoint.endpoint_settings``), part of their memoised
    start; empty for the agent's plain calls, which pay nothing for it.
    ``handlers``: the event classes this wrapper's runs have read, with their handlers
    (``_read.handler_for``): each run's dispatch table starts as a copy.
    ``run_metric_attributes``: the agent run's metric attributes these settings make, built
    once (each run copies them: figure 2, per run); None when its name or provider is not an
    exact ``str``, whose run builds its own (no method of such a value runs here).
    """

    tracer: Tracer
    instruments: Instruments
    agent_name: str | None = None
    agent_id: str | None = None
    agent_description: str | None = None
    provider: str | None = None
    conversation_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    agent_attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capture: ContentCapture | None = None
    step_spans: bool = True
    chunk_metric: bool = False
    activate_context: bool = True
    input_messages: Sequence[Any] | None = None
    system_instructions: str | None = None
    prices: PriceTable | None = BUNDLED_PRICES
    stand_down_providers: bool = True
    logger: Logger | None = None
    error_logger: Logger | None = None
    scrub: Scrub | None = None
    conventions: A.Conventions = A.V1_41
    pending_interval: float | None = None
    starts: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    endpoint: Mapping[str, AttributeValue] = field(default_factory=dict, repr=False)
    handlers: dict[type, Any] = field(default_factory=dict, compare=False, repr=False)
    run_metric_attributes: dict[str, AttributeValue] | None = field(
        default=None, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        name, provider = self.agent_name, self.provider
        if (name is None or type(name) is str) and (provider is None or type(provider) is str):
            object.__setattr__(self, "run_metric_attributes", run_metric_attributes(self))

    def for_run(self) -> RunSettings:
        """The settings of one run: these, with the run's own content accounts when its
        capture keeps any (``ContentCapture.for_run``)."""
        capture = self.capture
        if capture is None:
            return self
        own = capture.for_run()
        return self if own is capture else replace(self, capture=own)

    @property
    def currency(self) -> str:
        """The currency every cost of this run is in (the price table's; USD without one)."""
        return self.prices.currency if self.prices is not None else "USD"


def run_metric_attributes(settings: RunSettings) -> dict[str, AttributeValue]:
    """The agent run's metric attributes: its operation, name and (where the conventions list
    it on the agent span) provider, as the options give them (checked where recorded)."""
    attributes: dict[str, AttributeValue] = {A.OPERATION_NAME: A.OP_INVOKE_AGENT}
    if settings.agent_name:
        attributes[A.AGENT_NAME] = settings.agent_name
    if settings.provider and settings.conventions.agent_provider:
        attributes[A.PROVIDER_NAME] = settings.provider
    return attributes

"""The options of ``otel_wrapper()``, ``instrument()`` and ``AgentInstrumentor``, written once.

:class:`Options` names and documents every option; :func:`settings_from` turns them, once per
wrapper or instrumented agent, into the :class:`RunSettings` every run starts from: the tracer
and instruments of the providers (cached per provider), content capture and its logger."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Literal, TypedDict

from opentelemetry._logs import Logger, LoggerProvider, get_logger
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NoOpTracer, Tracer, TracerProvider, get_tracer
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import guarded, report
from agent_otel._plain import id_text, plain, shown
from agent_otel._version import __version__
from agent_otel.cost import BUNDLED_PRICES, PriceTable
from agent_otel.scrubbing import Scrub, Scrubber, resolve_scrubber
from agent_otel.standdown._guards import guard_from_now

from ._hints import PROVIDERS, check_provider, hint_bare_provider, hint_own_variables, unexpected
from ._metrics import Instruments
from ._pages import documented
from ._pending import interval_from
from ._semconv import check_semconv, conventions_for
from ._settings import RunSettings
from .content._capture import ContentCapture, capture_from

__all__ = ["OPTION_NAMES", "Options", "scrub_for", "settings_from", "tracer_for"]

_tracers: weakref.WeakKeyDictionary[TracerProvider, Tracer] = weakref.WeakKeyDictionary()
# Per provider, one set of instruments per set of names (v1.41.1's, the head's).
_instruments: weakref.WeakKeyDictionary[MeterProvider, dict[str, Instruments]] = (
    weakref.WeakKeyDictionary()
)


def tracer_for(provider: TracerProvider | None) -> Tracer:
    """Our tracer on ``provider`` (default: the global one), cached per provider; a provider
    that raises (or cannot be cached) gives a no-op one."""
    try:
        if provider is None:  # the global provider (a proxy until one is set)
            return get_tracer(A.SCOPE_NAME, __version__)
        tracer = _tracers.get(provider)
        if tracer is None:
            tracer = get_tracer(A.SCOPE_NAME, __version__, provider)
            with guarded("tracer cache"):
                _tracers[provider] = tracer
        return tracer
    except Exception:
        report("tracer provider")
        return NoOpTracer()


def _error_logger(provider: LoggerProvider | None) -> Logger | None:
    """The logger for a failed model call's event, content or not (the global provider by
    default; its proxy until one is set)."""
    try:
        return get_logger(A.SCOPE_NAME, __version__, provider)
    except Exception:  # a provider that raises: no such events, the run is still traced
        report("logger provider")
        return None


def _logger(provider: LoggerProvider | None, capture: ContentCapture | None) -> Logger | None:
    """The logger for content events: only when they are on (the global provider by default)."""
    if capture is None or not capture.events:
        return None
    try:
        return get_logger(A.SCOPE_NAME, __version__, provider)
    except Exception:  # a provider that raises: no events, the run is still traced
        report("logger provider")
        return None


def _instruments_for(
    provider: MeterProvider | None, conventions: A.Conventions = A.V1_41
) -> Instruments:
    if provider is None:
        return Instruments.create(None, conventions)
    try:
        by_names = _instruments.get(provider)
    except Exception:  # unhashable or not weakly referenceable: not cached
        return Instruments.create(provider, conventions)
    instruments = by_names.get(conventions.name) if by_names is not None else None
    if instruments is None:
        instruments = Instruments.create(provider, conventions)
        with guarded("meter cache"):
            _instruments.setdefault(provider, {})[conventions.name] = instruments
    return instruments


class Options(TypedDict, total=False):
    """What a run is recorded with; every option is optional.

    ``otel_wrapper(**options)``, ``instrument(agent, **options)`` and
    ``AgentInstrumentor().instrument(**options)`` take the same options:

    - ``tracer_provider``, ``meter_provider``, ``logger_provider``: where spans, metrics and
      content events go (default: the global ones; nothing global is ever set).
    - ``agent_name``: ``gen_ai.agent.name`` of the run (``instrument()``: its ``name=``, else
      the agent's ``tool_name``, ``name`` or class name).
    - ``agent_id``: ``gen_ai.agent.id`` of the run's agent span, when the agent has an id of
      its own (an assistant or deployment id); not on metrics.
    - ``capture_content``: prompts, completions and tool payloads, off by default (True, or a
      :class:`ContentCapture`; default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
      Content events go to ``logger_provider``.
    - ``conversation_id``, ``session_id``, ``user_id``: on every span of the run and of runs
      started below it (never on metrics).
    - ``prices``: prices calls whose provider reports no cost (default: the bundled dated
      table; None turns costing off).
    - ``stand_down_providers``: while a chat span of the run covers a model call, provider
      instrumentations (openai-v2, OpenInference, OpenLLMetry) stand down so the call has one
      chat span and its tokens count once; HTTP spans stay (default True; False keeps theirs).
    - ``attributes``: set on the agent span at start.
    - ``step_spans``: a span per step (default True).
    - ``chunk_metric``: ``gen_ai.client.operation.time_per_output_chunk`` per chunk (a
      histogram record per token, so off by default: the chat span carries the chunk count and
      mean interval instead).
    - ``provider``: the ``gen_ai.provider.name`` of calls whose events name none.
    - ``activate_context``: make the run's innermost span current while the agent computes
      each event (default True; False: the agent sees the consumer's context, the spans are
      the same).
    - ``scrub``: every string the run exports is scrubbed of credentials first, content
      capture on or off (default: ``configure(scrub=...)``, else True; False turns it off; a
      :class:`~agent_otel.Scrubber` adds patterns, keys or a callback; docs/scrubbing.md).
    - ``semconv``: the names where the GenAI conventions' head renamed v1.41.1's: ``"v1.41"``
      or ``"head"`` (default: ``configure(semconv=...)``, else ``AGENT_OTEL_SEMCONV``, else
      ``"v1.41"``; docs/conformance.md lists what changes). Never both names at once.
    - ``pending_spans``: show runs while they run: at start and then every interval, a
      zero-duration child marked ``agent_otel.pending`` for each span still open, with its
      attributes so far (True: every 15 s; a number: every that many seconds, at least 1;
      default False; docs/live.md).
    """

    tracer_provider: TracerProvider | None
    meter_provider: MeterProvider | None
    logger_provider: LoggerProvider | None
    agent_name: str | None
    agent_id: str | None
    capture_content: bool | str | ContentCapture | None
    conversation_id: str | None
    session_id: str | None
    user_id: str | None
    prices: PriceTable | None
    stand_down_providers: bool
    attributes: Mapping[str, AttributeValue] | None
    step_spans: bool
    chunk_metric: bool
    provider: str | None
    activate_context: bool
    scrub: bool | Scrubber
    semconv: Literal["v1.41", "head"] | None
    pending_spans: bool | float


OPTION_NAMES = frozenset(Options.__optional_keys__)
_NAMES = ("agent_name", "provider")
_IDS = ("agent_id", "conversation_id", "session_id", "user_id")  # an int or UUID as its text
_FLAGS = ("stand_down_providers", "step_spans", "chunk_metric", "activate_context")


def _check_text(caller: str, name: str, value: object, takes: str = "a str") -> None:
    """A text option (a name, an id as :func:`~agent_otel._plain.id_text` reads it) is a
    ``str`` (a subclass is read as the ``str`` it is) or None: anything else raises
    ``TypeError`` here, not at every run as a span lost."""
    if value is not None and not issubclass(type(value), str):  # (never its own __class__)
        raise TypeError(f"{caller}({name}=...) takes {takes} or None, not {shown(value)}")


def _check_values(options: Options, caller: str) -> None:
    """Each option's value is one it can work with, or ``TypeError`` naming the option: at
    configuration, so no run pays for the check and none loses its spans to a wrong type."""
    for name in _NAMES:
        _check_text(caller, name, options.get(name))
    for name in _IDS:
        _check_text(caller, name, id_text(options.get(name)), "a str, an int, a UUID")
    for name in _FLAGS:
        if name in options and type(options[name]) is not bool:  # type: ignore[literal-required]
            value = options[name]  # type: ignore[literal-required]
            raise TypeError(f"{caller}({name}=...) takes True or False, not {shown(value)}")
    prices = options.get("prices")
    if prices is not None and not issubclass(type(prices), PriceTable):
        raise TypeError(
            f"{caller}(prices=...) takes a PriceTable or None (no costs), not {shown(prices)}: "
            "pass BUNDLED_PRICES.with_prices({model: ModelPrice(...)}), or "
            "PriceTable({model: ModelPrice(...)}) for a table of your own"
        )
    attributes = options.get("attributes")
    if attributes is not None and not issubclass(type(attributes), Mapping):
        raise TypeError(
            f"{caller}(attributes=...) takes a mapping of attribute names to values, "
            f"not {shown(attributes)}"
        )
    for key in dict.keys(attributes) if isinstance(attributes, dict) else attributes or ():
        if not issubclass(type(key), str) or not str.__len__(key):  # else no agent span
            raise TypeError(
                f"{caller}(attributes=...) takes a mapping of attribute names to values, "
                f"and a name is a non-empty str, not {shown(key)}"
            )
    check_scrub(caller, options.get("scrub"))
    if options.get("semconv") is not None:
        check_semconv(options.get("semconv"), caller)
    interval_from(options.get("pending_spans"), caller)


def check_scrub(caller: str, scrub: object) -> None:
    """``scrub=`` is True, False, a :class:`Scrubber` or None, else ``TypeError``."""
    if scrub is not None and type(scrub) is not bool and not issubclass(type(scrub), Scrubber):
        raise TypeError(f"{caller}(scrub=...) takes True, False or a Scrubber, not {shown(scrub)}")


def settings_from(options: Options, caller: str = "otel_wrapper") -> RunSettings:
    """The settings every run of one wrapper (or instrumented agent) starts from.

    Raises ``TypeError`` for a name that is not an option, as a keyword argument would.
    """
    unknown = sorted(set(options) - OPTION_NAMES)
    if unknown:
        raise TypeError(unexpected(caller, unknown[0], OPTION_NAMES))
    with documented(caller):
        for name, method in PROVIDERS.items():
            check_provider(caller, name, options.get(name), method)
        _check_values(options, caller)
    hint_bare_provider(caller, options.get("tracer_provider"))
    hint_own_variables()  # (the environment read once per process)
    from ._scope import watch_sessions  # (it imports the recorder's modules)

    watch_sessions()
    if options.get("stand_down_providers", True):
        guard_from_now()  # before the application's first model call, not its first chat span
    with documented(caller):
        capture = capture_from(options.get("capture_content"), caller)
    scrubber = resolve_scrubber(options.get("scrub"))
    conventions = conventions_for(options.get("semconv"))
    instruments, bound = _instruments_for(options.get("meter_provider"), conventions).scrub(
        scrubber
    )
    return RunSettings(
        tracer=tracer_for(options.get("tracer_provider")),
        instruments=instruments,
        scrub=bound,
        logger=_logger(options.get("logger_provider"), capture),
        error_logger=_error_logger(options.get("logger_provider")),
        agent_name=plain(options.get("agent_name")),
        agent_id=id_text(options.get("agent_id")),
        provider=plain(options.get("provider")),
        conversation_id=id_text(options.get("conversation_id")),
        session_id=id_text(options.get("session_id")),
        user_id=id_text(options.get("user_id")),
        prices=options.get("prices", BUNDLED_PRICES),
        stand_down_providers=options.get("stand_down_providers", True),
        agent_attributes=_attributes(options.get("attributes"), bound),
        capture=capture,
        step_spans=options.get("step_spans", True),
        chunk_metric=options.get("chunk_metric", False),
        activate_context=options.get("activate_context", True),
        conventions=conventions,
        pending_interval=interval_from(options.get("pending_spans")),
    )


def _attributes(
    given: Mapping[str, AttributeValue] | None, scrub: Scrub | None
) -> dict[str, AttributeValue]:
    """The ``attributes`` option as a plain dict (a subclass read by dict's own methods), each
    value under a secret key name (``db_password``, ``api_key``) redacted, as the resource's
    are: these keys are data the caller passed (``attributes=vars(config)``), not ours."""
    pairs = dict.items(given) if isinstance(given, dict) else (given or {}).items()
    attributes = {str.__str__(key): value for key, value in pairs}  # a str subclass: its str
    if scrub is None or not attributes:
        return attributes
    scrubbed: dict[str, AttributeValue] = scrub.value(attributes)
    return scrubbed


def scrub_for(meter_provider: MeterProvider | None, scrub: bool | Scrubber | None) -> Scrub | None:
    """The scrub for writes outside a run (evaluations), counted on ``meter_provider``."""
    return _instruments_for(meter_provider).scrub(resolve_scrubber(scrub))[1]

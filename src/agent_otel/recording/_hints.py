"""What a newcomer's common mistakes are told: a factory passed uncalled, an option misspelt
(also ``configure()``'s, or a run's option given to it, or ``configure()``'s to a run), an
option given by position, an ``AGENT_OTEL_*`` variable agent-otel does not read or an
``OTEL_*`` one misspelt, a tracer (or
a class) where a provider
belongs, an instrumented agent whose runs cannot be traced (a synchronous stream, an
``invoke`` that drops its wrapper), and runs recorded before any SDK is configured, an
evaluation that names no run. Each message says what to do next."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
from collections.abc import Callable, Collection, Mapping
from typing import Any, ParamSpec, TypeVar, cast

from opentelemetry import trace
from opentelemetry.trace import ProxyTracer, Tracer

from agent_otel._guard import logger as _log
from agent_otel._guard import report, warn_once
from agent_otel._plain import a_kind, shown, text_of
from agent_otel.recording._pages import page_of, see

__all__ = [
    "CHECKED",
    "CONFIGURE_OPTIONS",
    "ENV_CAPTURE",
    "OWN_VARIABLES",
    "PROVIDERS",
    "UNCHECKED",
    "OptionTypeError",
    "a_kind",
    "bound_factory",
    "check_provider",
    "configured_apart",
    "did_you_mean",
    "factory",
    "hint_bare_provider",
    "hint_own_variables",
    "hint_reinstrumented",
    "hint_unattached",
    "hint_unconfigured",
    "hint_uninstrumented_root",
    "hint_unknown_event",
    "hint_untraced",
    "keyworded",
    "keyworded_but",
    "keywords",
    "nearest",
    "positional",
    "unexpected",
]


class OptionTypeError(TypeError, ValueError):
    """A value of the wrong type for an option (``semconv=1.41``, ``pending_spans="15"``) that
    raised ``ValueError`` before it raised ``TypeError`` as every other option's does: both, so
    an ``except ValueError`` written then still catches it."""


P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=Callable[..., object])

_told: list[bool] = []
_untraced: set[tuple[str, str]] = set()  # (class, what): told once each

CHECKED: set[str] = set()
"""The names the checks tell (``InMemoryTelemetry.span``): a test holds each to its page."""


def factory(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` takes keyword options only and returns a stream wrapper. Called with a positional
    argument it was passed where its result belongs (``stream_wrapper=otel_wrapper``): say so.
    The signature seen by ``inspect`` and type checkers stays ``fn``'s."""
    name = fn.__name__
    CHECKED.add(name)

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if args:
            raise TypeError(_positional(name, args[0]))
        return fn(*args, **kwargs)

    return checked


def bound_factory(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """:func:`factory` for a method that makes a stream wrapper (the test kit's
    ``telemetry.wrapper``), told as ``name``: ``stream_wrapper=otel_telemetry.wrapper``, passed
    uncalled, is the same mistake as ``stream_wrapper=otel_wrapper``, and was told only as
    Python's ``takes 1 positional argument but 2 were given``."""

    CHECKED.add(name)

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            if len(args) > 1:  # (the first is the instance)
                raise TypeError(_positional(name, args[1]))
            return fn(*args, **kwargs)

        return checked

    return decorate


def _positional(name: str, given: object) -> str:
    """What ``name()`` called with ``given`` as its first positional argument is told: an
    option given by position (a name as text) needs its keyword; anything else is the stream
    or the agent where the wrapper ``name()`` returns belongs."""
    if issubclass(type(given), str):  # shown as the plain text it is, at most 64 characters
        return (
            f"{name}() takes its options as keywords, as in {name}(agent_name={shown(given)})"
            f"{see(name)}"
        )
    page = page_of(name)
    return (
        f"{name}() takes keyword options and returns the stream wrapper: pass "
        f"stream_wrapper={name}() (called, with any options), not {name} itself"
        + (f" ({page})" if page else "")
    )


_apart: list[bool] = []
"""Whether ``configure()`` built providers it did not make the global ones
(``set_global=False``): a run on the global ones is then told to pass them, not to call it."""


def configured_apart() -> None:
    """``configure()`` returned providers that are not the global ones."""
    _apart[:] = [True]


def hint_unconfigured(tracer: Tracer) -> None:
    """Once per process: a run on the global tracer while no SDK provider is installed records
    nothing; say how to get it recorded (after ``configure(set_global=False)``, docs/configure.md's
    first example: by passing its handle's providers, the call being made already)."""
    if _told or type(tracer) is not ProxyTracer:
        return
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    _told.append(True)
    if _apart:
        _log.warning(
            "agent-otel: no OpenTelemetry tracer provider is the global one, so agent runs on "
            "the global providers are not recorded: configure(set_global=False) built providers "
            "that are not global. Pass its handle's, as in otel_wrapper(tracer_provider="
            "telemetry.tracer_provider, meter_provider=telemetry.meter_provider) (instrument() "
            "takes the same), or leave set_global=True."
        )
        return
    _log.warning(
        "agent-otel: no OpenTelemetry tracer provider is configured, so agent runs are not "
        "recorded. Call agent_otel.configure() once at startup (it prints each run in the "
        "terminal, or exports over OTLP), or pass tracer_provider=.%s",
        _IN_A_TEST if os.environ.get("PYTEST_CURRENT_TEST") else "",
    )


_IN_A_TEST = (
    " In a test, take the otel_telemetry fixture instead and run with stream_wrapper="
    "otel_telemetry.wrapper() (or instrument(agent, **otel_telemetry.providers())), then read "
    "its spans (docs/testing.md)"
)
"""What a run on no provider in a pytest test (``PYTEST_CURRENT_TEST`` set) is told too: the
fixture that records it where the test can read it, not ``configure()``'s exporters."""


PROVIDERS = {
    "tracer_provider": "get_tracer",
    "meter_provider": "get_meter",
    "logger_provider": "get_logger",
}
"""The provider options, and the method each provider is asked for its signal with."""


CONFIGURE_OPTIONS = frozenset(
    {
        "service_name", "endpoint", "protocol", "headers", "timeout", "sampler",
        "resource_attributes", "console", "console_stream", "prometheus_port",
        "prometheus_host", "metric_export_interval_millis", "max_queue_size", "span_processors",
        "tail_sampling", "metric_readers", "log_processors", "set_global",
        "shutdown_timeout_millis", "semconv", "scrub",
    }
)  # fmt: skip
"""``configure()``'s options (a test holds this to its signature): one given to a run's
entry point is told where it belongs."""


OWN_VARIABLES = frozenset({"AGENT_OTEL_SEMCONV", "AGENT_OTEL_PROMETHEUS_PORT"})
"""The ``AGENT_OTEL_*`` variables agent-otel reads (a test holds this to the code)."""
_PREFIX = "AGENT_OTEL_"
# this repository's test and build tooling's (tests/integration, tools/build.sh): not settings
_TOOLING = frozenset(
    {"AGENT_OTEL_CHROMIUM", "AGENT_OTEL_DOCS_SCREENSHOTS", "AGENT_OTEL_TOOLS_CACHE"}
)
_variables_read: list[bool] = []


ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable every run reads for content capture (``content/_capture``)."""
_RUN_VARIABLES = frozenset({ENV_CAPTURE})
"""The ``OTEL_*`` variables a run reads (with no SDK: ``configure()`` adds the SDK's)."""


_OTHERS_CONTENT = {
    "TRACELOOP_TRACE_CONTENT": "OpenLLMetry's",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "Google ADK's",
}
"""Other libraries' variables that switch their own content capture on: set, with ours not,
a newcomer expects prompts on our spans too."""
_CONTENT_PAGE = "docs/tracing.md#content-capture-and-privacy"


def _hint_others_content(names: Mapping[str, str]) -> None:
    """Tell each of :data:`_OTHERS_CONTENT` set to a true value while ours is unset: content
    stays off on agent-otel's spans (private by default), and nothing said why."""
    if ENV_CAPTURE in names:
        return
    for name, library in _OTHERS_CONTENT.items():
        if names.get(name, "").strip().lower() in ("true", "1", "yes"):
            warn_once(
                "variable", name,
                "agent-otel: %s=%s switches on %s content capture, not agent-otel's, which stays "
                "off unless %s=true (or a mode such as SPAN_ONLY) or capture_content=True is given "
                "to the wrapper (%s)",
                name, names[name], library, ENV_CAPTURE, _CONTENT_PAGE,
            )  # fmt: skip


def _within_two_edits(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with at most two letters inserted, deleted, replaced or two
    neighbours swapped (``ENDPIONT``, ``TRACE_EXPORTER``, ``EXPORT_OTLP``): a typo, where
    difflib's ratio also takes a longer name of another library (``..._CONTENT_MODE``)."""
    if abs(len(a) - len(b)) > 2:
        return False
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        now = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            now[j] = min(row[j] + 1, now[j - 1] + 1, row[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                now[j] = min(now[j], before[j - 2] + 1)
        before, row = row, now
        if min(row) > 2:
            return False
    return row[-1] <= 2


def _hint_misspelt_otel(names: Mapping[str, str], read: Collection[str]) -> None:
    """Tell each ``OTEL_*`` variable set that no SDK or agent-otel setting has as its name but
    is a typo of one in ``read`` that is not set (``OTEL_EXPORTER_OTLP_ENDPIONT``): its
    setting is not in force (the terminal view shows instead of the Collector getting the
    traces), and nothing else said so. The prefix is shared, so a name far from every one
    read is another library's, left alone."""
    for name in sorted(n for n in names if n.startswith("OTEL_") and n not in read):
        meant = [v for v in sorted(read) if v not in names and _within_two_edits(name, v)]
        if len(meant) == 1:
            warn_once(
                "variable", name,
                "agent-otel: %s is not a variable OpenTelemetry or agent-otel reads, so it is "
                "ignored: did you mean %s? (the variables: docs/configure.md)", name, meant[0],
            )  # fmt: skip


def hint_own_variables(
    env: Mapping[str, str] | None = None, *, again: bool = False, otel: Collection[str] = ()
) -> None:
    """Tell each variable of our own prefix that agent-otel does not read (``AGENT_OTEL_
    SEMCONVV=head``): the prefix is ours, so it is a typo, and the setting it meant is not in
    force; and each ``OTEL_*`` typo of a variable a run reads, or of one in ``otel`` (the SDK's,
    from ``configure()``). Once per name; the environment is read once per process unless
    ``again`` (``configure()``, which is called once)."""
    if _variables_read and not again:
        return
    _variables_read.append(True)
    names = os.environ if env is None else env
    _hint_misspelt_otel(names, _RUN_VARIABLES | frozenset(otel))
    _hint_others_content(names)
    known = OWN_VARIABLES | _TOOLING
    ours = {variable.removeprefix(_PREFIX): variable for variable in OWN_VARIABLES}
    for name in sorted(n for n in names if n.startswith(_PREFIX) and n not in known):
        near = [ours[n] for n in difflib.get_close_matches(name.removeprefix(_PREFIX), ours, n=1)]
        warn_once(
            "variable", name,
            "agent-otel: %s is not a variable agent-otel reads, so it is ignored%s "
            "(the variables: docs/configure.md)",
            name, f": did you mean {near[0]}?" if near else "",
        )  # fmt: skip


def did_you_mean(name: str, names: Collection[str]) -> str:
    """The hint after "unexpected keyword argument": the nearest option, if one is near (by
    spelling, or the one option that has the name as a word: ``tracer`` is
    ``tracer_provider``, ``name`` is ``agent_name``); for one of ``configure()``'s options
    that ``names`` lacks, that it belongs to ``configure()``."""
    if name in CONFIGURE_OPTIONS:  # (never in names: a name they take is not told)
        return (
            f": {name!r} is an option of configure(), which builds the providers and exporters "
            "once per process; a run writes to the providers it is given (tracer_provider=, "
            "meter_provider=, logger_provider=) or to the global ones configure() set"
        )
    return nearest(name, names)


def nearest(name: str, names: Collection[str]) -> str:
    """``: did you mean 'x'?`` for the name ``name`` most likely meant (by spelling, or the one
    that has ``name`` as a word), or nothing when none is near."""
    options = sorted(names)
    near = difflib.get_close_matches(name, options, n=1)
    if not near:
        near = [option for option in options if name in option.split("_")]
    return f": did you mean {near[0]!r}?" if len(near) == 1 else ""


def _by_position(fn: Callable[..., object]) -> tuple[list[str], list[str]]:
    """The parameters ``fn`` takes by position, and its keyword-only ones, in order."""
    parameters = inspect.signature(fn).parameters.values()
    return (
        [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)],
        [p.name for p in parameters if p.kind is p.KEYWORD_ONLY],
    )


def _as_written(value: object, parameter: str) -> str:
    """``value`` as a call would spell it: text or a number as itself, else its parameter."""
    return shown(value) if issubclass(type(value), (str, int, float)) else parameter


def _too_many(name: str, given: list[str], named: list[str], args: tuple[object, ...]) -> str:
    """What a call of ``name()`` with more positional arguments than it takes is told: the
    extra ones belong to its keyword options, as in the call rewritten with their names."""
    count = len(given)
    written = [_as_written(arg, parameter) for arg, parameter in zip(args, given, strict=False)]
    pairs = list(zip(named, args[count:], strict=False))[:3]  # the first few: a line
    extra = [f"{key}={_as_written(arg, '...')}" for key, arg in pairs]
    more = ["..."] if len(args) - count > len(pairs) else []
    example = f"{name}({', '.join(written + extra + more)})"
    takes = f"{count} argument by position" if count == 1 else f"{count} arguments by position"
    return (
        f"{name}() takes {takes} and its options as keywords, {len(args)} were given by "
        f"position: name them, as in {example}{see(name)}"
    )


def positional(fn: Callable[P, R]) -> Callable[P, R]:
    """A call with more positional arguments than ``fn`` takes raises at the call, as Python
    would, saying which keyword each extra one most likely is (``configure("svc", url)``:
    ``endpoint=``). The signature seen by ``inspect`` and type checkers stays ``fn``'s."""
    name = fn.__name__
    given, named = _by_position(fn)
    CHECKED.add(name)

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if len(args) > len(given):
            raise TypeError(_too_many(name, given, named, args))
        return fn(*args, **kwargs)

    return checked


def unexpected(
    name: str,
    unknown: str,
    takes: Collection[str],
    where: str = "",
    hint: Callable[[str, Collection[str]], str] = did_you_mean,
) -> str:
    """What ``name()`` given a keyword it does not take is told, as Python says it, with
    ``where`` that option belongs, else ``hint``: the nearest name it takes (for a run's or
    ``configure()``'s options, :func:`did_you_mean`: also the other's); then the page that
    documents what ``name()`` takes."""
    told = f": {where}" if where else hint(unknown, takes)
    return f"{name}() got an unexpected keyword argument {unknown!r}{told}{see(name)}"


def _checking(
    fn: Callable[P, R],
    name: str,
    elsewhere: Mapping[str, str],
    hint: Callable[[str, Collection[str]], str] = did_you_mean,
    bound: int = 0,
) -> Callable[P, R]:
    """``fn`` (a function, or a method, whose ``self`` is its first argument: ``bound`` 1)
    checking its keywords, and its positional arguments where it has keyword-only ones, before
    it runs; told as ``name()``."""
    parameters = inspect.signature(fn).parameters.values()
    takes = frozenset(
        p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )
    given, named = _by_position(fn)
    most = len(given) if named else math.inf  # no keyword-only options: Python's own words
    CHECKED.add(name)

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if len(args) > most:
            raise TypeError(_too_many(name, given[bound:], named, args[bound:]))
        if not takes.issuperset(kwargs):
            unknown = sorted(set(kwargs) - takes)[0]
            where = elsewhere.get(unknown, "")
            raise TypeError(unexpected(name, unknown, takes - {"self"}, where, hint))
        return fn(*args, **kwargs)

    return checked


def keywords(elsewhere: Mapping[str, str]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A function called with a keyword it does not take raises at the call, as Python would,
    with the nearest name it takes or, for a name in ``elsewhere``, where that option belongs
    (``configure(capture_content=True)``: a run's option). The signature seen by ``inspect``
    and type checkers stays the function's; a call with known keywords pays one set check."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        return _checking(fn, fn.__name__, elsewhere)

    return decorate


def keyworded(fn: C) -> C:
    """Any other public function or class: given a keyword it does not take, it says the
    nearest one (``Scrubber(pattern=...)``: ``patterns``; ``telemetry.span(nme=...)``:
    ``name``), as its own call (``InMemoryTelemetry.span()``). A class's constructor and each
    public method it defines that takes a named argument are checked: for a class with methods
    the recorder calls per run, span or event, :func:`keyworded_but`. Not for a function the
    recorder calls per run or event, nor a class it makes per run whose constructor it cannot
    avoid: the check costs each call one more."""
    return _keyworded(fn, frozenset())


def keyworded_but(*per_run: str) -> Callable[[C], C]:
    """:func:`keyworded` for a class, except its methods named in ``per_run``: the recorder
    (or the SDK, for a span processor's ``on_start``/``on_end``) calls them per run, span or
    event, where the check would cost each call, and a mistake in them is Python's to tell."""
    left = frozenset(per_run)
    return lambda fn: _keyworded(fn, left)


UNCHECKED: dict[str, frozenset[str]] = {}
"""The methods :func:`keyworded_but` leaves to Python, by their class's name (a test reads it)."""


def _keyworded(fn: C, left: frozenset[str]) -> C:
    """``fn`` checked: a function, or a class's constructor and its public methods but ``left``."""
    if not isinstance(fn, type):
        return cast(C, _checking(fn, fn.__name__, {}, nearest))
    cls: Any = fn  # (mypy: neither reading nor assigning a class's __init__)
    if _named(cls.__init__, 1):
        cls.__init__ = _checking(cls.__init__, fn.__name__, {}, nearest, bound=1)
    if left:
        UNCHECKED[fn.__qualname__] = left
    for attribute, value in list(vars(fn).items()):
        if attribute.startswith("_") or attribute in left:
            continue
        method, bound, wrap = _method(value)
        if method is None or not _named(method, bound):
            continue
        name = f"{fn.__qualname__}.{attribute}"
        setattr(fn, attribute, wrap(_checking(method, name, {}, nearest, bound=bound)))
    return fn


def _method(value: object) -> tuple[Callable[..., Any] | None, int, Callable[[Any], Any]]:
    """The function a class attribute runs, how many of its arguments Python binds (``self``
    or ``cls``), and what makes the attribute again of a function like it."""
    if isinstance(value, staticmethod):
        return value.__func__, 0, staticmethod
    if isinstance(value, classmethod):
        return value.__func__, 1, classmethod
    if inspect.isfunction(value):
        return value, 1, lambda checked: checked
    return None, 0, lambda checked: checked  # a property, a nested class, a constant


def _named(fn: Callable[..., Any], bound: int) -> bool:
    """Whether ``fn`` takes an argument by name past the ``bound`` ones and no ``**options``
    (which it checks itself, as ``RemoteAgentCall()`` does): else nothing to tell."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = list(inspect.signature(fn).parameters.values())[bound:]
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return False
    return any(p.kind in kinds for p in parameters)


def check_provider(caller: str, name: str, provider: object, method: str) -> None:
    """Raise ``TypeError`` when provider option ``name`` is given what is not a provider: a
    tracer for a tracer provider, a class for its instance, anything without ``method``. (A
    provider whose ``method`` raises fails at run time: that costs its signal, told once.)"""
    if provider is None:
        return
    a_class = issubclass(type(provider), type)  # (type() never reads its __class__)
    try:
        if not a_class and callable(getattr(provider, method, None)):
            return
    except Exception:  # a hostile object: its failure is told where it is used
        return
    wanted = "".join(part.title() for part in name.split("_"))  # TracerProvider
    what = (
        f"pass an instance, as {name}={wanted}()"
        if a_class
        else f"pass its {name}, as {name}=telemetry.{name}"
        if _holds(provider, name, method)  # configure()'s handle, or the test kit's
        else f"pass the provider itself (what you call {method}() on)"
    )
    raise TypeError(
        f"{caller}({name}=...) takes a {wanted} (an object with {method}()), not "
        f"{a_kind(provider)}: {what}, or leave it out for the global one"
    )


def _holds(handle: object, name: str, method: str) -> bool:
    """Whether ``handle`` holds the provider asked for as its attribute ``name``: the
    ``Telemetry`` configure() returns, an ``InMemoryTelemetry``."""
    try:
        return callable(getattr(getattr(handle, name, None), method, None))
    except Exception:  # a hostile object: not a handle
        return False


def hint_untraced(
    agent: object,
    method: str,
    why: str,
    fix: str = "see docs/faq.md (a synchronous agent) and docs/contract.md",
) -> None:
    """Once per agent class and method: an instrumented agent's run could not be traced
    (``why``), so it ran untraced; say why and what to do (``fix``)."""
    owner = type(agent).__qualname__
    if (owner, method) in _untraced or len(_untraced) >= 256:
        return
    _untraced.add((owner, method))
    _log.warning(
        "agent-otel: %s.%s() %s, so that run was not traced: %s",
        owner,
        method,
        why,
        fix,
    )


_reinstrumented: set[str] = set()  # class names: told once each


def hint_reinstrumented(cls: type, kept: object, given: object) -> None:
    """Once per class: ``instrument()`` on what is already instrumented changes nothing, so
    options it asks for that differ from those in force are ignored; say which, and what to
    do. (``kept`` and ``given``: ``AgentSetup``s, read by their ``asked`` options.)"""
    before: Mapping[str, object] = getattr(kept, "asked", {})
    after: Mapping[str, object] = getattr(given, "asked", {})
    ignored = []
    for key in sorted(set(before) | set(after)):
        try:
            same = key in before and key in after and bool(before[key] == after[key])
        except Exception:  # a value whose == raises: not the same
            same = False
        if not same:
            ignored.append(key)
    owner = cls.__qualname__
    if not ignored or owner in _reinstrumented or len(_reinstrumented) >= 256:
        return
    _reinstrumented.add(owner)
    _log.warning(
        "agent-otel: instrument() on %s, already instrumented, changes nothing: it keeps the "
        "options of the first call (%s as given here ignored); to change them, uninstrument() "
        "it first (docs/instrument.md)",
        owner,
        ", ".join(ignored),
    )


def hint_dropped(cls: type) -> None:
    """Once per class: a drop-in ``instrument(agent)`` returned was dropped without a run
    (the call written as a statement, as if it traced ``agent`` in place), so ``agent`` runs
    untraced; say to keep what it returns. Run by the collector: never raises."""
    try:
        owner = text_of(getattr(cls, "__qualname__", None)) or "an agent"
        warn_once(
            "drop-in", owner,
            "agent-otel: instrument() returned a traced drop-in of %s that was dropped "
            "without a run: the agent given to instrument() is left as it was, untraced. Keep "
            "what it returns and run that (agent = instrument(agent)), or instrument the "
            "class (docs/instrument.md)",
            owner,
        )  # fmt: skip
    except Exception:
        report("dropped drop-in")


_unattached: list[bool] = []


def hint_unattached(name: object) -> None:
    """Once per process: an evaluation recorded with no span context (none given, no current
    span: a judge in the consumer's loop or after the run) and no ``response_id`` names no run,
    so no backend can show it with the run it judges; say what to pass."""
    if _unattached:
        return
    _unattached.append(True)
    _log.warning(
        "agent-otel: record_evaluation(%r) names no run (no span_context=, no current span, "
        "no response_id=), so it is recorded attached to nothing. Pass span_context= the run's: "
        "trace.get_current_span().get_span_context() read inside the agent's code, or "
        "SpanContext(trace_id, span_id, is_remote=True) from the ids a backend shows "
        "(docs/tracing.md#evaluations)",
        name,
    )


def hint_unknown_event(event: object) -> None:
    """Once per kind of object (``a str``, ``a dict``, the agent's own class): a run's stream
    yielded what is no event of the contracts, so it passed through with nothing recorded and
    the run's span stayed bare; say what to yield instead. Never raises: an unknown event is
    the agent's, and it reaches the consumer whatever is told here."""
    try:
        kind = a_kind(event)  # by its type alone: none of its own methods runs
        warn_once(
            "unknown event", kind,
            "agent-otel: a run's stream yielded %s, which is no event agent-otel reads (the "
            "events of agent_contract.protocol or agent_contract.agent): it reached the "
            "consumer unchanged and nothing of it was recorded (counted on the run span as "
            "the anomaly unknown_event). Yield the contract's events (TextDelta(text=...) for "
            "text, LLMCallStart(...) and LLMCallEnd(...) around a model call), or wrap a "
            "framework's stream through its adapter (docs/adapters.md); "
            "docs/endings.md#malformed-streams",
            kind,
        )  # fmt: skip
    except Exception:
        report("unknown event")


def hint_bare_provider(caller: str, provider: object) -> None:
    """Once per process: ``tracer_provider=`` given an SDK ``TracerProvider`` with no span
    processor (its exporter never added): the provider given wins over the global one (over
    ``configure()``'s), and the spans of its runs go nowhere, no export, no terminal view.
    Read as ``end_open_runs`` reads a provider (its multi-processor), defensively: not the
    SDK's, or not readable, is told nothing. Never raises."""
    try:
        processor = getattr(provider, "_active_span_processor", None)
        held = getattr(processor, "_span_processors", None)
        if type(held) is not tuple or held:
            return
        warn_once(
            "tracer provider", "no span processor",
            "agent-otel: %s(tracer_provider=...) was given an SDK TracerProvider with no span "
            "processor: the spans of its runs go nowhere (no export, no terminal view; the "
            "provider given is used, not the global one configure() set). Add one "
            "(tracer_provider.add_span_processor(BatchSpanProcessor(exporter))), pass "
            "configure()'s (tracer_provider=telemetry.tracer_provider), or leave "
            "tracer_provider out for the global one (docs/configure.md#the-handle)",
            caller,
        )  # fmt: skip
    except Exception:
        report("tracer provider")


def hint_uninstrumented_root(given: str, root: str) -> None:
    """Once per kind given: ``uninstrument()`` of an instance or subclass of an instrumented
    class (``@instrument``) returned it unchanged and its runs stayed traced, the class
    tracing every instance and subclass; say which class to uninstrument."""
    warn_once(
        "uninstrument", given,
        "agent-otel: uninstrument() of %s changes nothing: its runs are still traced, by "
        "the instrumented class %s (instrument(%s) or @instrument), which traces every "
        "instance and subclass; uninstrument(%s) undoes it (docs/instrument.md)",
        given, root, root, root,
    )  # fmt: skip

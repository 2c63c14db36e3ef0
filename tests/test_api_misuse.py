"""Every public entry point under misuse: a wrong or hostile argument is a ``TypeError`` or
``ValueError`` at the call that names the argument (never an ``AttributeError`` from deep
inside, a ``RuntimeError`` from the value's own methods, or a run that loses its spans), and a
hostile value met while the agent runs gets its defined repair, counted, and never reaches it.
"""

from __future__ import annotations

import logging
import math
import uuid
from fractions import Fraction
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage
from agent_otel import (
    ContentCapture,
    ContinueTraceMiddleware,
    ModelPrice,
    PriceTable,
    RemoteAgentCall,
    Scrubber,
    TailSampler,
    TailSamplingPolicy,
    extract_context,
    inject_context,
    instrument,
    is_instrumented,
    otel_wrapper,
    record_evaluation,
    run_identity,
    uninstrument,
    with_trace_headers,
)
from agent_otel.testing import InMemoryTelemetry, run_script
from hostile_types import (
    BadHash,
    HostileStr,
    LyingClass,
    LyingDict,
    LyingFloat,
    LyingInt,
    LyingKey,
    LyingList,
    LyingStr,
    NoStr,
)

EVENTS = [
    LLMCallStart(model="gpt-4o-mini", provider="openai"),
    TextDelta(text="hi"),
    Usage(input_tokens=3, output_tokens=2),
    LLMCallEnd(model="gpt-4o-mini", finish_reason="stop"),
]

# Values no option of any kind takes: each raises its own methods, lies about its type, or is
# of a type no option has. (A str subclass is a str: text options take it, as the str it is.)
HOSTILE: dict[str, Any] = {
    "its str raises": NoStr(),
    "its hash raises": BadHash(),
    "an int subclass whose methods raise": LyingInt(3),
    "a float subclass whose methods raise": LyingFloat(1.0),
    "a dict subclass whose methods raise": LyingDict(a=1),
    "a list subclass whose methods raise": LyingList([1]),
    "bytes": b"x",
    "an object": object(),
}
NUMBERS: dict[str, Any] = {"nan": math.nan, "inf": math.inf, "-5": -5, "10**30": 10**30}
NAMES = ("agent_name", "provider")
IDS = ("agent_id", "conversation_id", "session_id", "user_id")  # an int or a UUID: its text
INTS = ("an int subclass whose methods raise", "-5", "10**30")
FLAGS = ("stand_down_providers", "step_spans", "chunk_metric", "activate_context")


def _cases(names: tuple[str, ...], values: dict[str, Any]) -> list[Any]:
    return [pytest.param(n, v, id=f"{n}={label}") for n in names for (label, v) in values.items()]


@pytest.mark.parametrize(
    ("option", "value"),
    _cases(NAMES, {**HOSTILE, **NUMBERS, "a dict": {"a": NoStr()}, "True": True})
    + _cases(
        IDS,
        {k: v for k, v in {**HOSTILE, **NUMBERS}.items() if k not in INTS}
        | {"a dict": {"a": NoStr()}, "True": True, "10**5000": 10**5000},
    )
    + _cases(FLAGS, {**HOSTILE, "a str subclass": LyingStr("no"), "None": None, "'no'": "no"})
    + _cases(("prices", "scrub"), {**HOSTILE, "a str": "abc", "a str sub": LyingStr("x")})
    + _cases(("attributes",), {"its str raises": NoStr(), "a str": "abc", "a list": [1]})
    # a name that is no str: before, one whose str raises cost the run its agent span (its
    # steps exported as roots of their own) and others were renamed or dropped by the SDK
    + _cases(
        ("attributes",),
        {
            "a name whose str raises": {NoStr(): 1},
            "an int name": {1: "x"},
            "a None name": {None: "x"},
            "a tuple name": {("a",): 1},
            "an empty name": {"": 1},
            "a bytes name": {b"k": 1},
        },
    )
    + [pytest.param("prices", {"gpt-4o": 1.0}, id="prices=a dict of prices")]
    # these raised a message naming no call (``semconv=1.41: expected one of``), a wrong type
    # a ValueError (``pending_spans="15"``), or named the type of a str where a mode belongs
    + _cases(("capture_content", "semconv"), {**HOSTILE, "1": 1, "a dict": {}})
    + _cases(
        ("pending_spans",),
        {k: v for k, v in HOSTILE.items() if "int" not in k and "float" not in k}
        | {"'15'": "15", "a list": [15]},
    ),
)
def test_an_option_of_the_wrong_type_is_a_type_error_naming_it(option: str, value: Any) -> None:
    """At configuration, for ``otel_wrapper()`` and ``instrument()`` alike: before, a text
    option of another type cost the run its agent span (or all its spans) at every run, a
    flag whose ``bool()`` raises reached the consumer, and ``prices=`` of anything but a
    ``PriceTable`` was an internal error at every call's end."""
    with pytest.raises(TypeError, match=rf"otel_wrapper\({option}=\.\.\.\) takes") as caught:
        otel_wrapper(**{option: value})
    assert len(str(caught.value)) < 400
    with pytest.raises(TypeError, match=rf"instrument\({option}=\.\.\.\) takes"):
        instrument(ScriptedAgent(EVENTS), **{option: value})


@pytest.mark.parametrize(
    ("option", "value", "told"),
    [
        # a mode no variable value names: content silently stayed off, a log line at best
        ("capture_content", "yes", "a mode ('NO_CONTENT', 'FALSE', 'SPAN_ONLY'"),
        ("capture_content", "span only", "'SPAN_AND_EVENT', any case), not 'span only'"),
        ("semconv", "HEAD", "takes one of 'v1.41', 'head', or None, not 'HEAD'"),
        ("semconv", "v1.41.1", "not 'v1.41.1'"),
        ("pending_spans", 0, "a number of seconds >= 1, not 0"),
        ("pending_spans", math.nan, "not nan"),
    ],
)
def test_an_option_value_out_of_range_is_a_value_error_naming_the_call(
    option: str, value: Any, told: str
) -> None:
    """A value of the right type the option cannot work with raises ``ValueError`` where it is
    given, naming the call and the option as a wrong type's ``TypeError`` does."""
    for call, name in ((otel_wrapper, "otel_wrapper"), (_instrumented, "instrument")):
        with pytest.raises(ValueError, match=rf"^{name}\({option}=\.\.\.\) takes ") as caught:
            call(**{option: value})
        assert told in str(caught.value)


def _instrumented(**options: Any) -> object:
    return instrument(ScriptedAgent(EVENTS), **options)


async def test_an_attribute_name_that_is_a_str_subclass_is_recorded_as_the_str_it_is() -> None:
    """The names check reads a name by ``str``'s own methods: a ``str`` subclass whose own
    methods raise (but for its hash) is the name it is, on the agent span."""
    telemetry = InMemoryTelemetry()
    await run_script(
        telemetry, EVENTS, agent_name="a", attributes=LyingDict({LyingKey("team"): "x"})
    )
    assert (telemetry.span("invoke_agent a").attributes or {}).get("team") == "x"
    telemetry.shutdown()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (42, "42"),
        (LyingInt(7), "7"),
        (uuid.UUID(int=5), "00000000-0000-0000-0000-000000000005"),
        (LyingStr("s-1"), "s-1"),
    ],
    ids=["int", "an int subclass whose methods raise", "UUID", "a str subclass"],
)
async def test_an_id_given_as_an_int_or_a_uuid_is_recorded_as_its_text(
    value: Any, text: str
) -> None:
    """Databases and frameworks hand out ids as ints and UUIDs: before, a session or user id
    of either was dropped without a word (and an agent id kept as an int). Each is recorded
    as its text, by the option and by ``run_identity()`` alike."""
    telemetry = InMemoryTelemetry()
    ids = {"session_id": value, "user_id": value, "conversation_id": value}
    await run_script(telemetry, EVENTS, agent_id=value, **ids)
    with run_identity(**ids):
        await run_script(telemetry, EVENTS)
    first, second = (s for s in telemetry.spans() if s.name.startswith("invoke_agent"))
    for key in ("session.id", "user.id", "gen_ai.conversation.id"):
        assert first.attributes is not None and first.attributes[key] == text
        assert second.attributes is not None and second.attributes[key] == text
    assert first.attributes["gen_ai.agent.id"] == text
    telemetry.shutdown()


@pytest.mark.parametrize(
    ("field", "value"),
    _cases(IDS[1:], {k: v for k, v in {**HOSTILE, **NUMBERS}.items() if k not in INTS})
    + _cases(IDS[1:], {"1.5": 1.5, "True": True, "a dict": {"a": 1}}),
)
def test_run_identity_given_an_id_no_option_takes_is_a_type_error_naming_it(
    field: str, value: Any
) -> None:
    """``run_identity(session_id=1.5)`` was taken and its runs carried no id, without a word,
    where ``otel_wrapper(session_id=1.5)`` raised: the block takes an id as the options do."""
    with pytest.raises(TypeError, match=rf"^run_identity\({field}=\.\.\.\) takes a str, an int"):
        run_identity(**{field: value})


def test_run_identity_given_a_misspelt_id_says_the_one_meant() -> None:
    with pytest.raises(TypeError, match=r"'session': did you mean 'session_id'\?"):
        run_identity(session="s-1")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "name", [NoStr(), 5, b"greeter", ["greeter"]], ids=["NoStr", "int", "bytes", "list"]
)
async def test_instrument_name_of_another_type_names_the_run_as_without_it(name: Any) -> None:
    """``instrument(name=...)`` is the one name that never raises (the fuzzed promise of
    ``test_hostile_fuzz``: hostile arguments never cost an instrumented agent its run): a
    name of another type names nothing: the run is named as with no name given."""
    telemetry = InMemoryTelemetry()
    for given in (None, name):
        traced = instrument(ScriptedAgent(EVENTS), name=given,
                            tracer_provider=telemetry.tracer_provider,
                            meter_provider=telemetry.meter_provider)  # fmt: skip
        async for _ in traced.stream([]):
            pass
    unnamed, hostile = (s.name for s in telemetry.spans() if s.name.startswith("invoke_agent"))
    assert hostile == unnamed == "invoke_agent scripted"  # ScriptedAgent's own name
    telemetry.shutdown()


SEE = r" \(the options: docs/options\.md\)$"  # the page, after the value as told


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("semconv", NoStr(), r"semconv=\.\.\.\) takes one of .* not a NoStr" + SEE),
        ("semconv", LyingStr("head"), None),  # the str it is: a mode
        ("pending_spans", LyingInt(5), None),  # the int it is: 5 seconds
        ("pending_spans", LyingFloat(0.5), r"pending_spans=\.\.\.\) takes .* not 0\.5" + SEE),
        ("pending_spans", {"a": NoStr()}, r"not a dict" + SEE),
        ("pending_spans", 10**400, r"not 1000.*\u2026" + SEE),
        ("capture_content", LyingStr("span_only"), None),
    ],
    ids=lambda v: str.__str__(v)[:20] if isinstance(v, str) else type(v).__name__,
)
def test_a_hostile_value_is_told_without_running_its_own_methods(
    option: str, value: Any, message: str | None, otel_telemetry: InMemoryTelemetry
) -> None:
    """The message shows the value by the plain text it is, or by its type: before, its own
    ``__repr__``, ``__eq__`` or comparisons ran, and raised instead of the ``ValueError``."""
    if message is None:
        otel_telemetry.wrapper(**{option: value})
        return
    with pytest.raises(ValueError, match=message):
        otel_telemetry.wrapper(**{option: value})


@pytest.mark.parametrize(
    "value",
    [NoStr(), [NoStr()], {"k": NoStr()}, {1, 2}, object()],
    ids=["NoStr", "in a list", "in a map", "a set", "an object"],
)
async def test_an_attribute_value_of_no_attribute_type_is_dropped_and_counted(
    value: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """An ``attributes`` value the attribute model has no type for: the SDK called its
    ``str()``, and one that raised cost the run its agent span. It is dropped and counted."""
    await run_script(otel_telemetry, EVENTS, attributes={"team": "core", "odd": value})
    root = otel_telemetry.span("invoke_agent")
    attributes = dict(root.attributes or {})
    assert attributes["team"] == "core"
    assert "odd" not in attributes
    assert attributes["agent_otel.anomaly.kinds"] == ("unsupported_value",)
    assert [s.name for s in otel_telemetry.spans()][-1] == "invoke_agent"


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("history", HostileStr("old"), ValueError),
        ("history", NoStr(), ValueError),
        ("max_bytes", LyingStr("5"), TypeError),
        ("max_run_bytes", LyingInt(-5), ValueError),
        ("max_run_bytes", NoStr(), ValueError),
    ],
    ids=lambda v: v if type(v) is str else type(v).__name__,
)
def test_content_capture_tells_a_hostile_setting_by_its_name(
    field: str, value: Any, error: type[Exception]
) -> None:
    """Before, the value's own ``__eq__``, comparisons or ``__repr__`` ran in the check and
    raised ``RuntimeError`` instead of the error naming the setting."""
    with pytest.raises(error, match=rf"ContentCapture\({field}=\.\.\.\)"):
        ContentCapture(**{field: value})


def test_content_capture_reads_its_settings_as_the_plain_values_they_are() -> None:
    capture = ContentCapture(
        history=HostileStr("new"),  # type: ignore[arg-type]
        max_bytes=LyingInt(5),
        max_run_bytes=LyingInt(50),
    )
    assert (capture.history, capture.max_bytes, capture.max_run_bytes) == ("new", 5, 50)
    assert {type(capture.history), type(capture.max_bytes), type(capture.max_run_bytes)} == {
        str,
        int,
    }


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        *[(f, v, TypeError) for f in ("input", "cache_read") for v in ("1.0", b"1", True)],
        ("output", None, TypeError),
        *[(f, v, ValueError) for f in ("output", "reasoning") for v in (-1, math.nan, math.inf)],
        ("input", NoStr(), TypeError),
        ("cache_write", 10**400, ValueError),
    ],
    ids=lambda v: v if type(v) is str else type(v).__name__,
)
def test_a_price_no_cost_can_be_made_of_is_told_at_once(
    field: str, value: Any, error: type[Exception]
) -> None:
    """Before, any value was taken: a str or None was an internal error at every call's end
    (the cost lost), a negative or NaN price a negative or NaN cost on every span and in the
    cost counter."""
    prices = {"input": 1.0, "output": 2.0, field: value}
    with pytest.raises(error, match=rf"ModelPrice\({field}=\.\.\.\) must be"):
        ModelPrice(**prices)


def test_a_price_is_kept_as_the_plain_number_it_is() -> None:
    price = ModelPrice(input=LyingInt(3), output=LyingFloat(1.5), cache_read=Fraction(1, 2))
    assert (price.input, price.output, price.cache_read) == (3.0, 1.5, 0.5)
    assert {type(price.input), type(price.output), type(price.cache_read)} == {float}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (({"gpt-4o": 2.5},), r"price of 'gpt-4o' must be a ModelPrice\(input=\.\.\., output="),
        (({1: ModelPrice(1, 2)},), r"a model name must be a str, not 1"),
        (("gpt-4o",), r"PriceTable\(prices=\.\.\.\) takes a mapping .*, not 'gpt-4o'"),
        ((None,), r"PriceTable\(prices=\.\.\.\) takes a mapping"),
        (({}, 5), r"PriceTable\(currency=\.\.\.\) must be a str, not 5"),
        (({}, "USD", NoStr()), r"PriceTable\(source=\.\.\.\) must be a str, not a NoStr"),
    ],
)
def test_a_price_table_of_the_wrong_shape_is_a_type_error_naming_it(
    arguments: tuple[Any, ...], message: str
) -> None:
    """Before: ``AttributeError: 'str' object has no attribute 'items'`` for a table that is
    no mapping, ``... 'int' object has no attribute 'lower'`` for a model name that is no
    ``str``, and a dict of floats was taken, then failed at every call's end."""
    with pytest.raises(TypeError, match=message):
        PriceTable(*arguments)


async def test_a_price_table_of_hostile_subclasses_prices_a_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    table = PriceTable(LyingDict({LyingKey("gpt-4o-mini"): ModelPrice(1, 2)}), LyingStr("EUR"))
    await run_script(otel_telemetry, EVENTS, prices=table)
    chat = otel_telemetry.span("chat gpt-4o-mini")
    assert (chat.attributes or {})["gen_ai.usage.cost.currency"] == "EUR"


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        (
            {"keys": "pin_code"},
            TypeError,
            r"keys=\.\.\.\) takes a collection of names, such as \('pin_code',\)",
        ),
        ({"disable": "jwt"}, TypeError, r"disable=\.\.\.\) takes a collection of names"),
        ({"keys": [NoStr()]}, TypeError, r"keys=\.\.\.\) takes str names, not a NoStr"),
        ({"keys": 5}, TypeError, r"keys=\.\.\.\) takes a collection of names, not an int"),
        ({"patterns": "sk-[a-z]+"}, TypeError, r"patterns=\.\.\.\) takes a mapping"),
        ({"patterns": {"ticket": "("}}, ValueError, r"'ticket' does not compile"),
        ({"patterns": {"ticket": 5}}, TypeError, r"'ticket' must be a str or re.Pattern, not 5"),
        ({"patterns": {1: "x"}}, TypeError, r"a name must be a str, not 1"),
        ({"callback": "redact"}, TypeError, r"callback=\.\.\.\) takes a callable"),
    ],
)
def test_a_scrubber_setting_of_the_wrong_shape_is_told_where_it_is_built(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Before: ``keys="pin_code"`` made each letter a secret key (every value under a key
    named ``p``, ``i``... redacted), a bad pattern raised ``re.error``, a pattern of another
    type or a callback that is no callable failed at every string of every run."""
    with pytest.raises(error, match=message):
        Scrubber(**settings)


def test_a_scrubber_reads_hostile_collections_as_the_names_they_hold() -> None:
    scrubber = Scrubber(
        keys=LyingList([LyingStr("pin_code")]),
        disable=LyingDict({LyingKey("jwt"): 1}),
        patterns=LyingDict({LyingKey("ticket"): LyingStr("TCK-[0-9]+")}),
    )
    assert (scrubber.keys, scrubber.disable, scrubber.patterns) == (
        ("pin_code",),
        ("jwt",),
        {"ticket": "TCK-[0-9]+"},
    )
    assert scrubber.text("see TCK-123") == "see [REDACTED:ticket len=7]"


def _raises(text: str) -> str:
    raise RuntimeError("the user's callback failed")


@pytest.mark.internal_errors
@pytest.mark.parametrize(
    "callback",
    [_raises, lambda text: None, lambda text: 5, lambda text: text.encode()],
    ids=["raises", "None", "an int", "bytes"],
)
async def test_a_scrub_callback_that_fails_fails_closed_and_costs_no_span(
    callback: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """Before, a callback that raised cost the run every span (the run's start failed), and
    one returning no ``str`` exported its ``str()`` (``None``, ``5``). Every string it was
    given is replaced by the ``callback`` marker instead, so nothing it may have been there to
    hide is exported; the run is whole, the failure reported once."""
    events = [LLMCallStart(model="m"), TextDelta(text="Project Falcon"), LLMCallEnd()]
    got = await run_script(
        otel_telemetry, events, agent_name="ops", scrub=Scrubber(callback=callback)
    )
    assert got == events
    assert [s.name for s in otel_telemetry.spans()] == [
        "[REDACTED:callback len=6]",
        "[REDACTED:callback len=6]",
        "[REDACTED:callback len=16]",
    ]


async def test_a_scrub_callback_returning_a_str_subclass_is_read_as_its_str(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Before, its own ``__ne__`` ran against the text and raised: every span lost."""
    scrub = Scrubber(callback=lambda text: LyingStr(text.replace("ops", "o**")))
    await run_script(otel_telemetry, EVENTS, agent_name="ops", scrub=scrub)
    assert otel_telemetry.span("invoke_agent o**").name == "invoke_agent o**"


@pytest.mark.parametrize(
    "given",
    [trace.INVALID_SPAN, {"traceparent": "00-1-2-01"}, "ctx", 5, NoStr(), LyingDict(a=1)],
    ids=["a span", "a carrier", "a str", "an int", "NoStr", "LyingDict"],
)
def test_a_context_argument_of_another_type_is_a_type_error_saying_how_to_make_one(
    given: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """Before: ``AttributeError: ... has no attribute 'get'`` from the SDK (or the value's own
    ``RuntimeError``); a span passed for its context is the usual slip."""
    told = r"takes an OpenTelemetry Context or None, not .*: pass trace.set_span_in_context"
    with pytest.raises(TypeError, match=r"inject_context\(context=\.\.\.\) " + told):
        inject_context(given)
    with pytest.raises(TypeError, match=r"extract_context\(context=\.\.\.\) " + told):
        extract_context({}, given)
    with pytest.raises(TypeError, match=r"RemoteAgentCall\(parent=\.\.\.\) " + told):
        RemoteAgentCall("a", parent=given, tracer_provider=otel_telemetry.tracer_provider)
    assert otel_telemetry.spans() == []


@pytest.mark.parametrize(
    "carrier",
    [LyingStr("traceparent"), LyingKey("k"), b"traceparent", "traceparent"],
    ids=["LyingStr", "LyingKey", "bytes", "str"],
)
def test_a_carrier_that_is_one_string_is_no_carrier(carrier: Any) -> None:
    """Before, a ``str`` subclass carrier was iterated by its own ``__iter__`` (it raised)."""
    assert extract_context(carrier) == Context()


seen: list[int] = []


async def _app(scope: Any, receive: Any, send: Any) -> None:
    seen.append(trace.get_current_span().get_span_context().trace_id)


PARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize(
    ("scope", "parented"),
    [
        ({"type": "http", "headers": LyingInt(3)}, False),
        ({"type": "http", "headers": LyingStr("x")}, False),
        ({"type": "http", "headers": [(b"traceparent", NoStr())]}, False),
        ({"type": HostileStr("http"), "headers": [(b"traceparent", PARENT)]}, True),
        (LyingDict(type="http"), False),
        (None, False),
        ("http", False),
        (NoStr(), False),
    ],
    ids=[
        "int headers",
        "str headers",
        "NoStr value",
        "str sub type",
        "LyingDict",
        "None",
        "a str",
        "NoStr",
    ],
)
@pytest.mark.internal_errors
async def test_an_asgi_scope_of_any_shape_reaches_the_app(scope: Any, parented: bool) -> None:
    """Before: ``bool()`` of the headers, ``==`` of the type and ``.get`` of the scope ran in
    the middleware and raised into the request (``RuntimeError``, ``AttributeError``). The app
    is called with the very scope it was given, a header it cannot read naming no parent."""
    seen.clear()
    await ContinueTraceMiddleware(_app)(scope, None, None)
    expected = (
        0x0AF7651916CD43DD8448EB211C80319C
        if type(scope) is dict and "headers" in scope and type(scope["type"]) is HostileStr
        else 0
    )
    assert seen == [expected]


@pytest.mark.parametrize(
    ("environ", "parented"),
    [
        ({"HTTP_TRACEPARENT": PARENT.decode(), "wsgi.version": LyingInt(1)}, True),
        ({"HTTP_TRACEPARENT": HostileStr(PARENT.decode())}, True),
        ({"HTTP_TRACEPARENT": NoStr(), "HTTP_TRACESTATE": [NoStr(), LyingStr("a=1")]}, False),
        (LyingDict(HTTP_TRACEPARENT=PARENT.decode()), True),
        ({LyingKey("k"): "v"}, False),
        (None, False),
        ("HTTP_TRACEPARENT", False),
        (NoStr(), False),
    ],
    ids=["plain", "HostileStr value", "NoStr values", "LyingDict", "LyingKey", "None", "a str",
         "NoStr"],
)  # fmt: skip
def test_a_wsgi_environ_of_any_shape_reaches_the_app(environ: Any, parented: bool) -> None:
    """The environ is read by dict's own methods, its keys and values as the plain str and
    bytes they are: the app gets the very environ it was given, and its body, whatever the
    environ holds; a field it cannot read names no parent."""
    from agent_otel import ContinueTraceWSGIMiddleware

    called: list[tuple[Any, int]] = []

    def app(given: Any, start_response: Any) -> list[bytes]:
        called.append((given, trace.get_current_span().get_span_context().trace_id))
        return [b"ok"]

    assert list(ContinueTraceWSGIMiddleware(app)(environ, None)) == [b"ok"]
    [(given, trace_id)] = called
    assert given is environ
    assert trace_id == (0x0AF7651916CD43DD8448EB211C80319C if parented else 0)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("keep_errors", "no", TypeError),
        ("keep_interrupted", NoStr(), TypeError),
        ("keep_errors", 1, TypeError),
        ("slower_than_s", "3", TypeError),
        ("cost_over", LyingStr("1"), TypeError),
        ("tokens_over", math.nan, TypeError),
        ("tokens_over", 1.5, TypeError),
        ("keep_ratio", "0.5", TypeError),
        ("keep_ratio", True, TypeError),
        ("max_bytes", 1.5, TypeError),
        ("max_spans", LyingStr("5"), TypeError),
        ("slower_than_s", -1, ValueError),
        ("slower_than_s", math.nan, ValueError),
        ("cost_over", math.inf, ValueError),
        ("tokens_over", -1, ValueError),
        ("tokens_over", LyingInt(-5), ValueError),
        ("keep_ratio", math.nan, ValueError),
        ("keep_ratio", LyingFloat(1.5), ValueError),
        ("max_run_spans", LyingInt(0), ValueError),
    ],
    ids=lambda v: v if type(v) is str else type(v).__name__,
)
def test_a_tail_sampling_field_that_cannot_work_is_told_where_the_policy_is_built(
    field: str, value: Any, error: type[Exception]
) -> None:
    """Before: ``keep_errors="no"`` (true) kept every error, ``slower_than_s="3"`` failed at
    every run's end (each run's spans lost to an internal error), a NaN or negative limit
    was taken, and an int subclass whose methods raise gave ``RuntimeError``."""
    with pytest.raises(error, match=rf"TailSamplingPolicy\({field}=\.\.\.\) must be") as caught:
        TailSamplingPolicy(**{field: value})
    assert len(str(caught.value)) < 300


def test_a_tail_sampling_policy_keeps_its_fields_as_the_plain_values_they_are() -> None:
    policy = TailSamplingPolicy(
        keep_ratio=LyingFloat(0.5),
        slower_than_s=LyingInt(3),
        tokens_over=LyingInt(100),
        cost_over=Fraction(1, 4),
        max_spans=LyingInt(10),
    )
    assert (policy.keep_ratio, policy.slower_than_s, policy.tokens_over) == (0.5, 3.0, 100)
    assert (policy.cost_over, policy.max_spans) == (0.25, 10)
    assert type(policy.tokens_over) is int and type(policy.max_spans) is int
    assert type(policy.keep_ratio) is float and type(policy.slower_than_s) is float


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("x",), r"TailSampler\(downstream=\.\.\.\) takes a span processor .* not a str"),
        ((None,), r"TailSampler\(downstream=\.\.\.\) takes a span processor"),
        ((SpanProcessor,), r"downstream=\.\.\.\) .* not the class SpanProcessor"),
        ((LyingClass(),), r"TailSampler\(downstream=\.\.\.\) takes a span processor"),
        ((SpanProcessor(), {"keep_ratio": 1}), r"TailSampler\(policy=\.\.\.\) takes a Tail"),
        ((SpanProcessor(), 0.5), r"TailSampler\(policy=\.\.\.\) takes a TailSamplingPolicy"),
        ((SpanProcessor(), LyingDict(a=1)), r"policy=\.\.\.\) .* not a LyingDict"),
        ((SpanProcessor(), LyingClass()), r"TailSampler\(policy=\.\.\.\) takes a Tail"),
    ],
    ids=["str", "None", "a class", "LyingClass", "a dict", "a float", "LyingDict", "LyingC"],
)
def test_tail_sampler_arguments_that_cannot_work_are_a_type_error(
    arguments: tuple[Any, ...], message: str
) -> None:
    """Before: any downstream was taken and every span's end raised ``AttributeError`` inside
    the SDK; a policy of another type was an ``AttributeError`` (or, for a dict subclass, its
    own ``bool()`` ran and raised ``RuntimeError``)."""
    with pytest.raises(TypeError, match=message):
        TailSampler(*arguments)


@pytest.mark.parametrize(
    "given",
    ["openai", 5, None, object(), pytest.param(LyingClass(), id="LyingC"), InMemoryTelemetry],
    ids=["str", "int", "None", "object", "LyingClass", "a class"],
)
def test_instrumented_with_no_instrumentor_is_a_type_error_saying_what_it_takes(
    given: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """Before: ``AttributeError: 'str' object has no attribute 'instrument'`` (and an
    instrumentor given before it was left instrumented)."""
    first = _Instrumentor()
    told = r"instrumented\(\) takes instrumentors .* not "
    with pytest.raises(TypeError, match=told), otel_telemetry.instrumented(first, given):
        pass
    assert first.calls == []  # none instrumented when one cannot be


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"sampler": "always_off"}, r"sampler=\.\.\.\) takes a Sampler .* not a str"),
        ({"ids": 5}, r"ids=\.\.\.\) takes an IdGenerator .* not an int"),
        ({"processors": SpanProcessor()}, r"processors=\.\.\.\) takes a list of span"),
        ({"processors": "ab"}, r"processors=\.\.\.\) takes a list of span processors"),
        ({"processors": [5]}, r"processors=\.\.\.\) takes span processors .* not an int"),
        ({"processors": [SpanProcessor]}, r"processors=.* not the class SpanProcessor: pass an"),
        ({"export_through": 5}, r"export_through=\.\.\.\) takes a function"),
        ({"exemplar_filter": "on"}, r"exemplar_filter=\.\.\.\) takes an ExemplarFilter"),
    ],
    ids=lambda v: next(iter(v)) if type(v) is dict else None,
)
def test_the_test_kit_tells_an_argument_of_another_kind_where_it_is_built(
    arguments: dict[str, Any], message: str
) -> None:
    """Before, each was taken and failed at the first span inside the SDK
    (``AttributeError: 'str' object has no attribute 'should_sample'``), or iterated a
    processor given for the list."""
    with pytest.raises(TypeError, match=r"InMemoryTelemetry\(" + message):
        InMemoryTelemetry(**arguments)


class _Instrumentor:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def instrument(self, **options: Any) -> None:
        self.calls.append("instrument")

    def uninstrument(self) -> None:
        self.calls.append("uninstrument")


@pytest.mark.parametrize(
    ("propagator", "message"),
    [
        ("tracecontext", r"not a str: pass a propagator, as TraceContextTextMapPropagator\(\)"),
        (5, r"not an int"),
        (TraceContextTextMapPropagator, r"not the class .*: pass an instance"),
        (LyingClass(), r"not a LyingClass"),
    ],
    ids=["str", "int", "a class", "LyingClass"],
)
def test_with_trace_headers_given_no_propagator_is_a_type_error(
    propagator: Any, message: str
) -> None:
    """Before, ``propagator="tracecontext"`` was taken, and then every request reported an
    internal error and went without its trace headers."""
    told = r"with_trace_headers\(propagator=\.\.\.\) takes a TextMapPropagator, "
    with pytest.raises(TypeError, match=told + message):
        with_trace_headers(httpx.Client(), propagator=propagator)


class _FixedHooks(httpx.Client):
    """A client whose ``event_hooks`` cannot be set (a read-only property)."""

    @property  # type: ignore[override]
    def event_hooks(self) -> dict[str, list[Any]]:
        return {"request": [], "response": []}


def test_with_trace_headers_on_a_client_whose_hooks_cannot_be_set_says_so_at_the_call() -> None:
    """Before: ``AttributeError: property 'event_hooks' ... has no setter``."""
    with pytest.raises(TypeError, match=r"_FixedHooks's event_hooks cannot be set .* pass an"):
        with_trace_headers(_FixedHooks())


class _LyingHook(LyingClass):
    """A response hook whose ``__class__`` raises (a proxy's)."""

    def __call__(self, response: Any) -> None:
        pass


class _LyingHooks(httpx.Client):
    """A client that hands out its hooks as a dict and list subclass whose own methods raise."""

    @property  # type: ignore[override]
    def event_hooks(self) -> Any:
        hooks = httpx.Client.event_hooks.fget(self)  # type: ignore[attr-defined]
        return LyingDict({k: LyingList(v) for k, v in dict.items(hooks)})

    @event_hooks.setter
    def event_hooks(self, hooks: Any) -> None:
        httpx.Client.event_hooks.fset(self, hooks)  # type: ignore[attr-defined]


def test_with_trace_headers_reads_hostile_hooks_as_the_dict_and_lists_they_are(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Before, the hooks' own methods ran and raised ``RuntimeError`` out of the call. Now the
    client's own hooks are kept, in order, and each request carries the trace headers."""
    seen: list[str] = []
    received: list[dict[str, str]] = []

    def transport(request: httpx.Request) -> httpx.Response:
        received.append(dict(request.headers))
        return httpx.Response(200)

    client = _LyingHooks(
        transport=httpx.MockTransport(transport),
        event_hooks={"request": [lambda r: seen.append("mine"), _LyingHook()], "response": []},
    )
    with_trace_headers(client, propagator=TraceContextTextMapPropagator())
    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    with tracer.start_as_current_span("call") as span:
        assert client.get("http://tools.test/").status_code == 200
    assert seen == ["mine"]
    trace_id = f"{span.get_span_context().trace_id:032x}"
    assert received[0]["traceparent"].split("-")[1] == trace_id


class _UnhashableMeta(type):
    """A metaclass whose own hash and equality raise."""

    __hash__ = __eq__ = _raises  # type: ignore[assignment]


class _LockedMeta(type):
    """A metaclass whose own attribute lookup raises."""

    def __getattribute__(cls, name: str) -> Any:
        raise RuntimeError("a hostile metaclass's own __getattribute__ ran")


HOSTILE_AGENTS: dict[str, Any] = {
    "a class whose metaclass's hash raises": _UnhashableMeta("Agent", (), {}),
    "a class whose metaclass's lookup raises": _LockedMeta("Agent", (), {}),
    "a str subclass": LyingStr("agent"),
    "an int subclass": LyingInt(3),
    "a dict subclass": LyingDict(a=1),
    "a list subclass": LyingList([1]),
    "its hash raises": BadHash(),
    "its __class__ raises": LyingClass(),
    "a str": "agent",
    "a class of them": LyingStr,
}


@pytest.mark.parametrize("given", [pytest.param(v, id=k) for k, v in HOSTILE_AGENTS.items()])
def test_uninstrument_and_is_instrumented_never_run_the_arguments_own_methods(
    given: Any,
) -> None:
    """Before, an object whose ``__class__`` raises (a lazy proxy's, as Django's), or a class
    whose metaclass's hash or attribute lookup raises, made them raise ``RuntimeError``. What
    was never instrumented is returned as it is, and is not."""
    assert uninstrument(given) is given
    assert is_instrumented(given) is False


_EVALUATION_ARGUMENTS = (
    "name",
    "score",
    "label",
    "explanation",
    "response_id",
    "error_type",
    "evaluator_id",
    "evaluator_version",
    "evaluator_type",
    "span_context",
    "logger_provider",
    "meter_provider",
    "scrub",
)


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        pytest.param(argument, value, id=f"{argument}={label}")
        for argument in _EVALUATION_ARGUMENTS
        for label, value in {**HOSTILE, "LyingClass": LyingClass()}.items()
        if not (argument == "score" and type(value) in (LyingInt, LyingFloat))  # numbers
    ],
)
def test_record_evaluation_given_a_hostile_argument_is_a_type_error_naming_it(
    argument: str, value: Any, otel_telemetry: InMemoryTelemetry
) -> None:
    """Every argument, every hostile value: a ``TypeError`` naming the argument, before any
    event is made (before, an object whose ``__class__`` raises gave ``RuntimeError`` for
    any argument, and ``scrub=`` took anything, a value with no meaning as a scrub setting
    silently scrubbing with the defaults)."""
    arguments: dict[str, Any] = {"name": "relevance", **otel_telemetry.providers()}
    arguments.pop("tracer_provider")
    arguments[argument] = value
    shown_as = "evaluation's name" if argument == "name" else rf"\({argument}=\.\.\.\)"
    with pytest.raises(TypeError, match=shown_as):
        record_evaluation(**arguments)
    assert otel_telemetry.logs() == []


def test_record_evaluation_takes_hostile_subclasses_as_the_values_they_are(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    record_evaluation(
        LyingStr("relevance"),
        score=LyingFloat(0.5),
        label=HostileStr("pass"),
        evaluator_type=LyingKey("human"),
        logger_provider=otel_telemetry.logger_provider,
        meter_provider=otel_telemetry.meter_provider,
        span_context=trace.SpanContext(1, 2, is_remote=True),
    )
    [record] = otel_telemetry.logs()
    attributes = dict(record.log_record.attributes or {})
    assert attributes["gen_ai.evaluation.name"] == "relevance"
    assert attributes["gen_ai.evaluation.score.value"] == 0.5
    assert attributes["gen_ai.evaluation.score.label"] == "pass"
    assert attributes["gen_ai.evaluation.evaluator.type"] == "human"
    with pytest.raises(ValueError, match=r"record_evaluation\(score=\.\.\.\) .* fit a double"):
        record_evaluation("n", score=10**400, logger_provider=otel_telemetry.logger_provider)


def test_what_was_told_is_bounded_when_the_agent_drives_the_told_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An agent yielding an object of a new class per event is told about each kind, but the
    process's memory of what it told stops growing at a bound, with one line saying so."""
    from agent_otel import _guard
    from agent_otel.recording._hints import hint_unknown_event

    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        for n in range(_guard._TOLD_AT_MOST + 50):
            hint_unknown_event(type(f"Kind{n}", (), {})())
    assert len(_guard._told) == _guard._TOLD_AT_MOST
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == _guard._TOLD_AT_MOST + 1
    assert "a Kind0" in lines[0]
    assert "further ones go untold" in lines[-1]

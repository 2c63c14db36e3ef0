"""RunRecorder: routes the events of one agent run to the spans they belong to.

It is fed calls (by :mod:`agent_otel.recording._read`) and reads a clock; it knows nothing about
streams, and it spells no attribute: each span type has one owner that writes every
attribute, metric and ending of its spans (:class:`~._run.Run`, :class:`~._step.Step`,
:class:`~._chat.LLMCall`, :class:`~._tool.ToolCall`). The recorder decides which owner an
event goes to, when spans start and end, and keeps :attr:`RunRecorder.context` pointing at the
innermost sensible span (open LLM call, else the only open tool call, else the step, else the
agent) for the wrapper to activate while the agent computes its next event.

Steps are what ``collect()`` calls a step: a segment (events between ``StepBoundary`` events)
is a step when it holds step content (text, reasoning, an LLM call, a tool call or an orphan
tool result). A segment of bookkeeping only (usage, errors, call ends, markers) makes no step:
its usage and errors join the step before it, which is why a step is held open past its
boundary (it still ends at the boundary's time).

A usage goes to the open call (the newest, when several are open), but a ``CallUsage`` to the
one its ``call_id`` names. A usage that arrives after its ``LLMCallEnd`` is still recorded on
that chat span: an ended call without usage keeps its span open (ending it later at the
``LLMCallEnd`` time) until its usage comes, the run ends, or more than ``MAX_PENDING`` such
calls wait.

Visible text told outside any LLM call after the last one (a code agent's answer, computed by
the code its model wrote) is the run's answer, when no final event gave one (capture on);
else the last call's answer is.

A ``ToolCall`` belongs to the open LLM call; with none open, to the call that ended last, until
another call starts or the step ends: a framework tells the calls its model asked for when it
runs them, after the response's end (pydantic-ai, LlamaIndex, Agno, smolagents). With content
captured, that call's span is held (still ending at its ``LLMCallEnd`` time) until then, so its
output message holds every tool call it asked for; the tool spans keep their own timing. With
capture off nothing is held. A span held past its end (such a call, one waiting for its
usage, a step past its boundary) is not open for the views of what is open (pending snapshots,
the testing kit's ``open_spans()``, the terminal's live view): :meth:`RunRecorder.held_spans`.

Repairs of malformed streams (each counted under ``agent_otel.anomalies`` by kind):

- ``llm_end_without_start``: an ``LLMCallEnd`` matching no open call is ignored.
- ``duplicate_llm_call_id`` / ``duplicate_tool_call_id``: the older span with that id ends,
  marked incomplete, and the new one takes the id.
- ``missing_tool_call_id``: a ``ToolCall`` without id gets a private one; a ``ToolResult``
  without id ends the only open tool call if there is exactly one.
- ``tool_result_without_call``: a zero-length tool span records the result, marked incomplete.
- ``usage_without_call``: counted in the step and run totals only.
- ``event_after_terminal``: recorded as usual after a terminal (``final``) event or a fatal
  ``Error``; counted for new work (chunks, LLM call starts, tool calls and results, finals),
  not for events that end or account for what was open (call end, usage, step boundary).
- ``unknown_event``: passed through, nothing recorded.
- ``unreadable_event``: an event whose field, or content capture reads, raised when read (its
  own code: a property, a ``__getattr__``, an iterator) is passed through, that part of it
  not recorded (``agent_otel._guard.agents_value``, the one rule).
- ``open_at_step_boundary``: calls and tool calls still open at a ``StepBoundary`` end with
  the step, marked incomplete (no span outlives its parent).
- ``unusable_id`` (unhashable, or ``str()`` raising), ``unparseable_arguments``,
  ``unencodable_string``, ``integer_out_of_range``, ``invalid_token_count``: hostile values,
  see ``docs/hostile.md``.
- ``unreadable_chunk`` / ``unencodable_arguments`` / ``untranslatable_part``: a source's
  ``Error`` telling a chunk it skipped / a tool call whose arguments it wrote by its repair
  rule / a request's content part its API has no form for, sent as a text saying so (the last
  two are no failure: counted only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context

from agent_contract.sources._stream import UNREADABLE_CHUNK
from agent_otel import _clock
from agent_otel._attributes import (
    END_CANCELLED,
    END_ERROR,
    END_EXHAUSTED,
    END_INTERRUPTED,
    END_SHUTDOWN,
)
from agent_otel._guard import counted, guarded
from agent_otel._plain import text_of
from agent_otel.identity._identity import identity_of, with_identity
from agent_otel.standdown._context import chat_context, suppressed
from agent_otel.standdown._frameworks import covered_run, framework_context
from agent_otel.standdown._guards import guard_providers

from ._activation import activate
from ._chat import REPAIRS, LLMCall
from ._children import add_child
from ._costs import plus
from ._encodable import id_text
from ._endpoint import endpoint_settings
from ._errors import LEAVES_LOOP, PendingError, error_type_of, raised_from, raised_in
from ._open import is_open
from ._run import Run
from ._scope import ToolScopes, carries, install
from ._settings import RunSettings
from ._step import Step
from ._tool import TOOL_ERROR, ToolCall
from ._usage import Tokens
from .content._spans import failure_text

MAX_PENDING = 8
MAX_ERROR_TYPE = 256  # error.type is low-cardinality: a longer "type" is text, not a class

Owner = Run | Step | LLMCall | ToolCall
Handler = Callable[["RunRecorder", Any], None]
"""What an event class is read with (see :mod:`._read`)."""


class RunRecorder:
    """The spans and metrics of one run; see the module docstring for the rules."""

    __slots__ = (
        "_asking",
        "_asking_done",
        "_calls",
        "_closed",
        "_counting",
        "_endpoints",
        "_inner",
        "_keys",
        "_last_call",
        "_pending",
        "_phase",
        "_quiet",
        "_reasoning_fast",
        "_segment_cost",
        "_segment_usage",
        "_step",
        "_step_errors",
        "_step_index",
        "_suppressing",
        "_text_fast",
        "_tool_failed",
        "_tools",
        "context",
        "current_call",
        "handlers",
        "now",
        "run",
        "s",
        "scopes",
        "terminal",
    )
    _endpoints: dict[Any, Any]  # set by the first call naming its server only (at_endpoint)

    def __init__(self, settings: RunSettings, parent: Context, began: int | None = None) -> None:
        given = settings
        self.s = settings = settings.for_run()  # the run's own content accounts, if any
        self.now: Callable[[], int] = _clock.run_clock()
        self._tools: dict[object, ToolCall] = {}
        # Tool bodies run under their tool's span (._scope): every context of the run says so.
        install()
        self.scopes = ToolScopes(self._tools, self, given)
        self.scopes.framework = self._framework_started
        parent = self.scopes.mark(parent)
        self.run = Run(settings, parent, self.now, began)
        # A tool body runs in the run's own parent (its ids, inside a run), not the caller's.
        self.scopes.parent = self.run.parent
        self._step: Step | None = None
        self._step_index = 0
        self._phase: str | None = None  # the latest PhaseMarker's: on each step started after
        # The current segment's usage and cost: the open step's, else bookkeeping awaiting
        # its step; errors awaiting their step, likewise.
        self._segment_usage = Tokens()
        self._segment_cost: float | None = None
        self._step_errors: list[PendingError] = []
        self._closed: Step | None = None  # ended by a StepBoundary, held for bookkeeping
        self._calls: dict[object, LLMCall] = {}
        self.current_call: LLMCall | None = None
        self._pending: list[LLMCall] = []
        # The call that ended last, held for the tool calls told after its end (capture on),
        # and whether its span would have ended already (its usage came).
        self._asking: LLMCall | None = None
        self._asking_done = False
        self._tool_failed = False  # a tool of the current step returned an error result
        self._keys = 0
        self._last_call: LLMCall | None = None
        self.terminal = False
        # Fast paths for deltas, valid until the structure changes (see text_delta).
        self._text_fast = False
        self._reasoning_fast = False
        self._counting: LLMCall | None = None
        # The run's dispatch table, event class -> handler (filled by ._read.handler_for).
        # A class mapped to None has nothing to do until the structure changes: deltas
        # outside a call or in an unsampled one, once the first is handled (figure 1,
        # unsampled row); _quiet holds what to put back.
        self.handlers: dict[type, Handler | None] = dict(given.handlers)
        self._quiet: list[tuple[type, Handler]] = []
        self._inner: Owner = self.run
        self.context: Context = self.run.context
        self._suppressing: Context | None = None  # the run's parent, providers standing down

    def _framework_started(self, source: str, current: Context, conversation_id: object) -> None:
        """A framework adapter's stream (``source``) starts in a pull of this run's own stream,
        ``current`` that pull's context: the caller's generator or agent class runs the adapter.
        The run is covered from here on as a run whose stream is the adapter's
        (``standdown._frameworks``): the framework's requests, made in tasks of its own before
        the adapter reports them, are not traced a second time by a provider instrumentation.
        Also when the caller's own events came first (its own model call, a tool call whose
        work is the adapter's run): the contexts of the spans open now are made again from the
        covered parent, as every later one is (a call's or tool's when it is next current).
        Any adapter that says so (``source``, its module: one of ours or the caller's own,
        which ``standdown._frameworks.FRAMEWORK_SOURCES`` does not list), with the stand-down
        and activation on, and once. ``conversation_id``: the conversation the framework keeps
        the run in (:meth:`conversation`), whatever the stand-down; the rest of this pull
        carries it too, so a run the framework's tasks started now start continues it."""
        if conversation_id is not None and self.conversation(conversation_id):
            held = identity_of(self.run.parent)  # the ids the run's own contexts now carry
            current = with_identity(held, current) if held is not None else current
            if self.s.activate_context:
                activate(current)
        run = self.run
        if (
            not self.s.stand_down_providers
            or not self.s.activate_context
            or covered_run(run.parent)
        ):
            return
        still_open = partial(is_open, self)  # its tasks calling after its end: not covered
        run.parent = framework_context(run.parent, source, still_open)
        run.context = trace.set_span_in_context(run.span.raw, run.parent)
        self._reparented()
        # The rest of this pull (the wrapper's reset after it undoes this too): the tasks the
        # framework starts now copy it.
        activate(framework_context(current, source, still_open))

    def conversation(self, conversation_id: Any) -> bool:
        """The run continues the conversation ``conversation_id``, told once it had begun (a
        framework adapter's thread or session as it starts, a ``ConversationCallStart``): the
        run's ``gen_ai.conversation.id`` from now on (unless it has one), also on the step
        open now, and in the contexts its calls, tools and nested runs start in. Whether the
        run took it."""
        added = self.run.continues(conversation_id)
        if added is None:
            return False
        if self._step is not None:
            self._step.identify(added)
        self._reparented()
        return True

    def _reparented(self) -> None:
        """The run's parent context changed (covered as a framework run, or given an id): the
        tool bodies' parent, the open step's context and those of the open calls and tools
        (made again the next time each is current) follow it."""
        run = self.run
        parent = self.scopes.parent = run.parent
        self._suppressing = None  # the chat spans' own, made again from the new parent
        if self._step is not None:
            self._step.context = trace.set_span_in_context(self._step.span.raw, parent)
        for call in self._calls.values():
            call.context = None
        for tool in self._tools.values():
            tool.context = None
        self._inner, self.context = run, run.context
        self._refresh()  # the innermost open span's context, made again

    # --- small helpers -----------------------------------------------------------------------
    def anomaly(self, kind: str) -> None:
        self.run.anomaly(kind)

    def _after_terminal(self) -> None:
        """New work arrived after a terminal event: an anomaly (callers test :attr:`terminal`
        first, a Python call less on every event's path)."""
        self.run.anomaly("event_after_terminal")

    def mark_terminal(self) -> None:
        """A terminal event was seen: what follows is counted as an anomaly."""
        self.terminal = True
        self._text_fast = self._reasoning_fast = False
        if self._quiet:
            self._wake()

    @contextmanager
    def aside(self, tool_call_id: Any = None) -> Iterator[None]:
        """A call started inside is a side call (``SideCallStart``): it does not name the run
        (``Run.aside``), and its answer is not the run's, which stays the last own call's (a
        summary or memory request told after the agent's answer). A context of its own, so
        the agent's own calls pay nothing for it. Restored however the call's start ends (an
        internal failure swallowed after it was tracked). ``tool_call_id``: the open tool call
        whose work the request does in place of its tool; the call's span starts under it."""
        last = self._last_call
        tool = self._tools.get(tool_call_id) if type(tool_call_id) is str else None
        owner = self._step or self.run  # where ``_parent`` starts the call (no step: no step
        saved = owner.context  # spans, as a tool is open; none starts meanwhile)
        try:
            if tool is not None:
                owner.context = trace.set_span_in_context(tool.span.raw, saved)
            with self.run.aside():
                yield
        finally:
            started = self._last_call
            self._last_call = last
            if tool is not None:
                owner.context = saved
                if started is not last and started is not None:  # ended first, if still open
                    add_child(tool, started, partial(self._cut_call, started))

    @contextmanager
    def at_endpoint(self, address: Any, port: Any) -> Iterator[None]:
        """A call started inside is sent to the server ``address``:``port``
        (``EndpointCallStart``): its span starts with them, its metrics carry them. A context
        of its own, as :meth:`aside`, so the agent's plain calls pay nothing for it: the call
        starts with the run's settings for that server (``_endpoint``), remembered in
        ``_endpoints``, which no run sets until its first such call (figure 2, per run)."""
        plain = self.s
        memo: dict[Any, Any] | None = getattr(self, "_endpoints", None)
        if memo is None:
            memo = {}
            self._endpoints = memo
        at = endpoint_settings(plain, address, port, memo)
        if at is None:
            yield
            return
        if self._step is None:
            self._open_step()  # with the run's own settings (``llm_start`` would open it)
        self.s = at
        try:
            yield
        finally:
            if self.s is at:  # (unless a shutdown replaced them meanwhile)
                self.s = plain

    def _key(self) -> object:
        self._keys += 1
        return ("agent_otel", self._keys)

    def _parent(self) -> Context:
        """Where a call or tool span starts: under the open step, else the agent span."""
        return self._step.context if self._step is not None else self.run.context

    def _refresh(self) -> None:
        """Point :attr:`context` at the innermost sensible span (the structure changed)."""
        if self._calls:
            call = next(reversed(self._calls.values()))
            self._point(call, call)
        elif not self._tools:  # nothing open (most ends)
            self._point(None, self._step or self.run)
        else:
            tools = self._tools
            self._point(
                None, next(iter(tools.values())) if len(tools) == 1 else self._step or self.run
            )

    def _point(self, call: LLMCall | None, inner: Owner) -> None:
        """The structure changed: ``call`` is the newest open LLM call (None: none open) and
        ``inner`` the innermost sensible span, whose context :attr:`context` becomes. A caller
        that knows them (a call it just started) skips :meth:`_refresh`'s search."""
        self.current_call = call
        self._text_fast = self._reasoning_fast = False
        if self._quiet:
            self._wake()
        if inner is not self._inner:
            self._inner = inner
            context = inner.context  # a call's or tool's: made the first time it is current
            if context is None:
                if call is not None and self.s.stand_down_providers:
                    if self._suppressing is None:
                        self._suppressing = suppressed(self.run.parent)
                    context = chat_context(self._suppressing, inner.span.raw)
                else:
                    context = trace.set_span_in_context(inner.span.raw, self.run.parent)
                inner.context = context
            self.context = context

    # --- text ----------------------------------------------------------------------------------
    def text_delta(self, event: Any) -> None:
        """A ``TextDelta`` / ``MessageDelta``: the hot path.

        Once a call's first visible chunk is handled and nothing else needs the text (no
        content capture, no per-chunk metric), a delta only counts the chunk: no clock, no
        span or metric call. A delta outside a call or in an unsampled one does nothing at
        all, so its class is not even dispatched (:meth:`_quieten`). Any change of structure
        drops back to :meth:`chunk`.
        """
        if self._text_fast:
            counting = self._counting
            if counting is not None:
                counting.chunks += 1
            return
        self.chunk(getattr(event, "text", None), True)
        if self._text_fast and self._counting is None:
            self._quieten(event.__class__, RunRecorder.text_delta)

    def reasoning_delta(self, event: Any) -> None:
        """A ``ReasoningDelta`` / ``ReasoningStep``: as :meth:`text_delta`, for reasoning."""
        if self._reasoning_fast:
            counting = self._counting
            if counting is not None:
                counting.chunks += 1
            return
        self.chunk(getattr(event, "text", None), False)
        if self._reasoning_fast and self._counting is None:
            self._quieten(event.__class__, RunRecorder.reasoning_delta)

    def _quieten(self, cls: type, handler: Handler) -> None:
        """Dispatch nothing for ``cls`` until the structure changes (only a class read by its
        name: one read by its ``type`` field may carry other events too)."""
        if self.handlers.get(cls) is handler:
            self.handlers[cls] = None
            self._quiet.append((cls, handler))

    def _wake(self) -> None:
        """The structure changed: the quietened classes are dispatched again."""
        handlers = self.handlers
        for cls, handler in self._quiet:
            if cls in handlers:  # unless the bounded table was emptied meanwhile
                handlers[cls] = handler
        self._quiet.clear()

    def chunk(self, text: Any, visible: bool) -> None:
        """A text or reasoning delta, in full: timing, first text, captured content."""
        if self.terminal:
            self._after_terminal()
        if self._step is None and self.s.step_spans:
            self.ensure_step()
        call = self.current_call
        run = self.run
        if call is None:
            if visible:
                if run.first_text is None:
                    run.first_text = self.now()
                if self.s.capture is not None:  # kept: the answer, if no call follows
                    run.told(text)
                    return
            # Else outside a call only the first visible text matters.
            self._fast(visible, not self.terminal)
            return
        call.chunk(self.now(), text, visible)
        if visible and run.first_text is None:
            run.first_text = call.first_text
        buffer = call.output if visible else call.reasoning
        self._fast(visible, not self.terminal and buffer is None and not self.s.chunk_metric)

    def _fast(self, visible: bool, allowed: bool) -> None:
        call = self.current_call
        self._counting = call if call is not None and call.recording else None
        if visible:
            self._text_fast = allowed
        else:
            self._reasoning_fast = allowed

    # --- LLM calls -----------------------------------------------------------------------------
    def llm_start(
        self, model: Any, provider: Any, call_id: Any, params: Any, request: Any, tools: Any = None
    ) -> None:
        """``request`` is the event: its ``messages`` are read only when content is captured
        (an adapter may build them from the framework's request only when they are read)."""
        if self.terminal:
            self._after_terminal()
        if self._step is None:
            self._open_step()  # refreshed below, with the new span
        if self._asking is not None:  # a new request: the last one's tool calls are told
            self._release()
        now = self.scopes.new_turn(self.now())  # earlier if it asked for a body that began
        if self.s.stand_down_providers:
            guard_providers()
        if call_id is not None and type(call_id) is not str:  # else already its text
            call_id = id_text(call_id, self.anomaly)
        key: object = call_id if call_id is not None else self._key()
        old = self._calls.pop(key, None)
        if old is not None:
            self.anomaly("duplicate_llm_call_id")
            old.end_response(max(now, old.start), incomplete=True)  # as the new one began
            self._end_call(old)
        model = model if type(model) is str and model else text_of(model) or None
        provider = provider if type(provider) is str and provider else text_of(provider)
        provider = provider or self.s.provider
        self.run.saw_call(model, provider)
        call = LLMCall(
            self.s, self.anomaly, self._parent(), self.run.identity, call_id, model, provider,
            params, now, tools,
        )  # fmt: skip
        self._calls[key] = call  # tracked before anything else can fail
        self._last_call = call
        self._point(call, call)  # the newest call: the innermost
        if call.recording and self.s.capture is not None:
            with counted("chat span start", self.anomaly):  # the agent's messages, read
                messages = getattr(request, "messages", None)
                if messages is not None:
                    encoded = call.capture_input(messages)
                    if not self.run.has_input:
                        self.run.input(encoded)

    def llm_end(self, model: Any, call_id: Any, finish_reason: Any, response_id: Any) -> None:
        if call_id is not None and type(call_id) is not str:  # else already its text
            call_id = id_text(call_id, self.anomaly)
        if call_id is not None:
            call = self._calls.pop(call_id, None)
        elif self._calls:
            call = self._calls.pop(next(reversed(self._calls)))
        else:
            call = None
        if call is None:
            self.anomaly("llm_end_without_start")
            return
        call.respond(model, finish_reason, response_id)
        call.end_response(self.now())
        if call.output is not None:  # content captured: the tool calls told next are its own
            if self._asking is not None:
                self._release()
            self._asking = call
        if call.usage is not None:
            self._end_call(call)
        else:
            self._pending.append(call)
            if self._step is not None:  # ended with its step at the latest
                add_child(self._step, call, partial(self._cut_call, call))
            if len(self._pending) > MAX_PENDING:
                self._end_call(self._pending.pop(0))
        self._refresh()

    def _end_call(self, call: LLMCall) -> None:
        """End an LLM call's span; its cost joins the segment's and the run's totals (a call
        held for its tool calls ends when released)."""
        if call is self._asking:
            self._asking_done = True
            return
        cost = call.end()
        if cost is not None:
            self.run.add_cost(cost)
            self._segment_cost = plus(self._segment_cost, cost)

    def _cut_call(self, call: LLMCall, at: int) -> None:
        """The span ``call`` started under ends (its stand-in's tool, the step of a call held
        for its usage): the call ends first, cut short at ``at`` if still open, else as it
        ended (usage, tool calls no longer awaited); nothing once it has ended."""
        for key, open_call in self._calls.items():
            if open_call is call:
                del self._calls[key]
                call.end_response(at, incomplete=True)
                self._end_call(call)
                self._refresh()
                return
        done = False
        if call is self._asking:  # held for the tool calls it asked for: no more come
            done, self._asking, self._asking_done = self._asking_done, None, False
        if call in self._pending:
            self._pending.remove(call)
            done = True
        if done:
            self._end_call(call)

    def _release(self) -> None:
        """The held call's tool calls are all told: it ends now if it was due to."""
        call, done = self._asking, self._asking_done
        self._asking, self._asking_done = None, False
        if call is not None and done:
            self._end_call(call)

    def usage(self, tokens: Tokens, model: Any) -> None:
        self._segment_usage.add(tokens)  # the run's total: its segments', when each ends
        call = self.current_call
        late = call is None
        if call is None and self._pending:
            call = self._pending.pop()
        if call is None:
            self.anomaly("usage_without_call")
            return
        call.add_usage(tokens, model)
        if late:
            self._end_call(call)

    def usage_of(self, call_id: Any, tokens: Tokens, model: Any) -> None:
        """A usage naming its call (calls open at once): counted on the open call ``call_id``
        names, else as any usage (:meth:`usage`)."""
        try:
            call = self._calls.get(call_id) if type(call_id) is str else None
        except Exception:  # a str subclass whose hash or equality raises: as any usage
            call = None
        if call is None or call is self.current_call:
            self.usage(tokens, model)
            return
        self._segment_usage.add(tokens)  # the run's total: its segments', when each ends
        call.add_usage(tokens, model)

    def run_usage(self, tokens: Tokens, model: Any) -> None:
        """Usage reported for the whole run (the Agent contract's ``RunUsage``)."""
        self.run.add_run_usage(tokens, model)

    # --- tools ---------------------------------------------------------------------------------
    def tool_call(self, call_id: Any, name: Any, arguments: Any, kind: Any = None) -> None:
        """A tool call the model asked for; ``kind``: its ``type`` (``gen_ai.tool.type``)."""
        if self.terminal:
            self._after_terminal()
        if self._step is None:
            self._open_step()  # refreshed below, with the new span
        self.run.tool_calls += 1
        now = self.now()
        if call_id is not None and type(call_id) is not str:  # else already its text
            call_id = id_text(call_id, self.anomaly)
        key: object
        if call_id is None:
            self.anomaly("missing_tool_call_id")
            key = self._key()
        else:
            key = call_id
            if key in self._tools:  # only the recorder changes _tools: read without the lock
                with self.scopes.lock:
                    old = self._tools.pop(key)
                self.anomaly("duplicate_tool_call_id")
                old.end(now, incomplete=True)
        outer = self.scopes.adopt_outer(call_id) if self.scopes.outer is not None else None
        with self.scopes.lock:  # a tool body may be opening this call's span early (._scope)
            tool = outer
            if tool is None and self.scopes.early:
                tool = self.scopes.adopt(call_id, name, arguments)
            if tool is None:
                parent = self._step.context if self._step is not None else self.run.context
                tool = ToolCall(
                    self.s, self.anomaly, parent, self.run.identity, call_id, name, now, kind
                )
            else:
                tool.adopt(call_id, name, kind)
            tool.arguments = arguments
            self._tools[key] = tool  # tracked before anything else can fail
        asker = self.current_call
        if asker is None:  # told after its response's end: still its (held only with capture)
            asker = self._asking
        if asker is not None:
            asker.add_tool_call(call_id, name, arguments)
        if self._calls or len(self._tools) != 1:
            self._refresh()
        else:  # the one tool open, no call: the innermost
            self._point(None, tool)
        if self.s.capture is not None:
            tool.capture_arguments(arguments, self.anomaly)

    def unrun_tool_call(self, call_id: Any, name: Any, arguments: Any, end_id: Any) -> None:
        """A tool call the model asked for that never ran (a response the framework threw
        away): a part of its call's output message, as any call it asked for; no tool span,
        no count of the run's tool calls. Told by its call's end (``UnrunCallsEnd``), before
        the call ends (``end_id`` its id): an end with no call open has none to give them to."""
        asker = self._ending(end_id)
        if asker is None:
            return
        if call_id is not None and type(call_id) is not str:
            call_id = id_text(call_id, self.anomaly)
        asker.add_tool_call(call_id, name, arguments)

    def _ending(self, end_id: Any) -> LLMCall | None:
        """The open call an end names by its id (``end_id``), as :meth:`llm_end` finds it: the
        newest open one when it names none. Its id read as text without counting it: the end
        itself counts an unusable one."""
        if end_id is None:
            return next(reversed(self._calls.values()), None)
        if type(end_id) is not str:
            end_id = id_text(end_id, lambda kind: None)
        return self._calls.get(end_id) if end_id is not None else None

    def server_tool_call(
        self, call_id: Any, name: Any, call: Any, response: Any, end_id: Any
    ) -> None:
        """A tool the provider ran within the request (``ServerToolCallsEnd``): parts of its
        call's output message (``server_tool_call`` and its response); no tool span, no count
        of the run's tool calls. Told by its call's end (``end_id`` its id), before the call
        ends."""
        asker = self._ending(end_id)
        if asker is None:
            return
        if call_id is not None and type(call_id) is not str:
            call_id = id_text(call_id, self.anomaly)
        asker.add_server_tool_call(call_id, name, call, response)

    def tool_result(
        self, call_id: Any, name: Any, content: Any, is_error: Any, error_type: Any = None
    ) -> None:
        """A call's result; ``is_error`` (or an ``error_type``, the failure's class as an
        adapter knows it, or content that is an exception) makes it a failure, whose
        ``error.type`` is that class, else ``tool_error``."""
        if self.terminal:
            self._after_terminal()
        now = self.now()
        if call_id is not None and type(call_id) is not str:  # else already its text
            call_id = id_text(call_id, self.anomaly)
        scopes = self.scopes
        with scopes.lock:
            tool = self._tools.pop(call_id, None) if call_id is not None else None
            if tool is None and call_id is None and len(self._tools) == 1:
                self.anomaly("missing_tool_call_id")
                tool = self._tools.pop(next(iter(self._tools)))
            if tool is None:  # its body opened it, and no ToolCall event ever came
                tool = scopes.take(call_id)
            scopes.ended(call_id)
        incomplete = tool is None
        if tool is None:
            self.anomaly("tool_result_without_call")
            if self._step is None and self.s.step_spans:  # it starts the step: read after it
                self.ensure_step()
                now = self.now()
            tool = ToolCall(
                self.s, self.anomaly, self._parent(), self.run.identity, call_id, name, now
            )
        if self._calls or self._tools:
            self._refresh()
        else:  # nothing open: the step (else the run) is the innermost
            self._point(None, self._step or self.run)
        if error_type is not None and type(error_type) is not str:  # (the usual: None)
            error_type = text_of(error_type)
        elif error_type is None and issubclass(type(content), BaseException):
            # it returned the exception it failed with (type(): its __class__ is never read)
            error_type = error_type_of(content)
        named = error_type is not None and 0 < len(error_type) <= MAX_ERROR_TYPE
        kind = None
        # (an MCP tool whose server answered isError, which the framework passed on as text)
        if is_error is True or named or (tool.mcp is not None and tool.mcp.error):  # it failed
            self._tool_failed = True
            kind = error_type if named else TOOL_ERROR
            if kind == TOOL_ERROR:  # kept only as text (or so named): the class its body raised
                raised = tool.body_error  # (written by the body's thread: read once)
                if raised is not None:
                    kind = error_type_of(raised)
        tool.end(now, kind, incomplete, content)

    def open_early(self, call_id: str | None, name: str | None) -> ToolCall:
        """A tool body started before its ``ToolCall`` event was read (under the scopes' lock,
        on the body's thread): its span starts now, under the open step (._scope); with none
        open (the framework ran ahead of the consumer into a step not told yet) the step starts
        now, as a tool body means a step is under way, and the span goes under it."""
        if self.s.step_spans:
            self._start_step()
        return ToolCall(
            self.s, self.anomaly, self._parent(), self.run.identity, call_id, name, self.now()
        )

    def inner_tool(self, parent: Context, name: str | None) -> ToolCall:
        """A tool run inside a tool body that no model asked for (``._inner``): its span
        starts now under ``parent``, none of the run's calls (under the scopes' lock)."""
        return ToolCall(self.s, self.anomaly, parent, self.run.identity, None, name, self.now())

    def owner_of(self, context: Context) -> Owner | None:
        """The step or run whose span is current in ``context`` (where an inner tool outside
        any tool body starts: ``nested_parent``), if any: it ends that tool first."""
        span = trace.get_current_span(context)
        step = self._step
        if step is not None and span is step.span.raw:
            return step
        return self.run if span is self.run.span.raw else None

    def nested_parent(self, current: Context) -> Context:
        """Where a run started in ``current`` nests (``agent_contract.scope.nested_run``):
        there (a tool body's context), except in an open model call's own context: an agent
        the framework runs while it prepares or reads that request (pydantic-ai's history
        processors) is beside the call, in its step, as a chat span tells one request; and
        in the run's own context: an agent the framework runs on its way to a request not
        told yet (Agno's reasoning agent) is in the step that request is in, which starts
        now when none is open (step spans on)."""
        call = self.current_call
        span = trace.get_current_span(current)
        if call is not None and span is call.span.raw:
            return self._parent()
        if span is self.run.span.raw:
            self.ensure_step()
            return self._parent()
        return current

    # --- steps ---------------------------------------------------------------------------------
    def ensure_step(self) -> None:
        """Step content arrived: start the step (when step spans are on)."""
        if self._open_step():
            self._refresh()

    def _open_step(self) -> bool:
        """Start the step unless one is open or step spans are off (whether it started); the
        caller refreshes :attr:`context` (a call or tool starting in it does so anyway)."""
        if self._step is not None or not self.s.step_spans:
            return False
        with self.scopes.lock:  # a tool body on another thread may be opening it (open_early)
            return self._start_step()

    def _start_step(self) -> bool:
        """Start the step unless one is open (under the scopes' lock)."""
        if self._step is not None:
            return False
        self._end_held_step()
        now = self.now()
        errors = self._step_errors
        self._step = Step(
            self.s, self.anomaly, self.run.context, self.run.parent, self.run.identity,
            self._step_index, min(now, errors[0].time) if errors else now, self._phase,
        )  # fmt: skip
        self._flush_errors(self._step)
        return True

    def step_boundary(self, index: Any, now: int | None = None) -> None:
        """End the segment: a step is held until the next one starts (it ends at ``now``,
        default: the clock's now); what is still open in it ends now."""
        if self._asking is not None:  # the step is complete: so are its tool calls
            self._release()
        step = self._step
        if step is None:  # bookkeeping only: it joins the step before (none: the run)
            usage, cost = self._take_segment()
            if self._closed is not None:
                self._closed.add(usage, cost)
                self._flush_errors(self._closed)
            return
        self._step_index += 1
        self._tool_failed = False
        now = self.now() if now is None else now
        if self._calls or self._tools:  # no span outlives its parent: they end with the step
            self.anomaly("open_at_step_boundary")
            self.end_open(now)
        usage, cost = self._take_segment()
        step.hold(now, index, usage, cost)
        self._closed, self._step = step, None
        self._refresh()

    def _take_segment(self) -> tuple[Tokens, float | None]:
        """The ending segment's usage (now in the run's total) and cost; the next segment
        starts from nothing."""
        usage, cost = self._segment_usage, self._segment_cost
        self._segment_usage, self._segment_cost = Tokens(), None
        self.run.usage.add(usage)
        return usage, cost

    def _end_held_step(self) -> None:
        step, self._closed = self._closed, None
        if step is not None:
            step.end()

    def _flush_errors(self, step: Step) -> None:
        if not self._step_errors:  # (most steps)
            return
        errors, self._step_errors = self._step_errors, []
        for error in errors:
            step.record_error(error.kind, error.description, error.fatal, error.time)

    # --- errors, markers, terminals ------------------------------------------------------------
    def error_event(self, message: Any, error_type: Any, fatal: Any, content: bool = False) -> None:
        """``content``: the message is content (a prompt the framework sends the model, which
        often quotes its answer): it describes the error only where content goes on spans, as a
        tool's failed result does."""
        kind = text_of(error_type) or "agent_error"
        if kind == UNREADABLE_CHUNK:  # a source skipped a chunk: a repair, counted as one
            self.anomaly(kind)
        elif kind in REPAIRS and fatal is not True:
            self.anomaly(kind)  # a source repaired a call's arguments or a part: nothing failed
            return
        description = text_of(message)
        fatal = fatal is True
        inner = self._inner
        if content:
            description = failure_text(self.s.capture, inner.span, description)
        if self._step is None and self.s.step_spans and inner is self.run:
            # between steps: it waits for the step it belongs to
            self._step_errors.append(PendingError(kind, description, fatal, self.now()))
        else:
            inner.record_error(kind, description, fatal, self.now())
        if fatal:
            self.run.fatal(kind, description)
            self.mark_terminal()

    def journey(self, name: Any, journey_id: Any) -> None:
        self.run.journey(name, journey_id)

    def phase(self, name: Any) -> None:
        """A phase: on the run (its latest, an event), and on every step started in it (a
        team member's turn, a graph node: who did the step's calls)."""
        phase = text_of(name)  # a str subclass as the str it is; its __class__ never read
        if phase is not None:
            self._phase = phase
        self.run.phase(name)

    def final(self, output_type: str, value: Any) -> None:
        """A terminal answer (``MessageFinal`` / ``StructuredFinal``)."""
        if self.terminal:
            self._after_terminal()
        self.mark_terminal()
        self.run.final(output_type, value)

    def interrupt(self, interrupt_id: Any, reason: Any) -> None:
        """The run paused on an interrupt: a span event, not an error.

        Several interrupts in one run are normal (``_drain`` collects them all), so only an
        interrupt after another kind of terminal counts as an anomaly.
        """
        if self.terminal and self.run.told_end != END_INTERRUPTED:
            self._after_terminal()
        self.mark_terminal()
        self.run.interrupt(interrupt_id, reason)

    # --- the end -------------------------------------------------------------------------------
    def end_open(self, now: int) -> None:
        """End every open LLM call and tool call, innermost first, marked incomplete (an
        inner tool whose block still runs too: ``_inner``).

        They are cut short, not failed: only the span the run failed in is marked (``fail``),
        so a UI points at it, not at its siblings. But a tool whose body raised out of its
        scope (``ToolCall.body_error``) failed, whether or not the run did: a framework that
        drops such a call (Strands, ADK for a body's own ``CancelledError``) tells nothing
        more, and the run goes on or ends as if the call were merely unanswered."""
        if not self._calls and not self._tools:  # the usual end: nothing open, nothing moves
            return
        calls, self._calls = list(self._calls.values()), {}
        for call in reversed(calls):
            with guarded("run finish"):
                call.end_response(now, incomplete=True)
            self._end_call(call)
        with self.scopes.lock:
            tools = list(self._tools.values())
            self._tools.clear()
        for tool in tools:
            raised, tool.body_error = tool.body_error, None  # (written by the body's thread)
            if raised is not None:  # its body raised and the framework dropped the call
                with guarded("run finish"):
                    tool.fail(raised, error_type_of(raised), now)
            tool.end(now, incomplete=True)
        self._refresh()

    def at_work(self) -> bool:
        """Whether a model call or tool call of the run is open (its work in flight)."""
        return bool(self._calls or self._tools)

    def open_spans(self) -> list[Any]:
        """The run's spans still open, outermost first (read by pending snapshots): not the
        ones that ended and are held for what may still come (:meth:`held_spans`)."""
        owners: list[Owner] = [self.run]
        if self._step is not None:
            owners.append(self._step)
        owners += [*self._calls.values(), *self._tools.values()]
        return [owner.span for owner in owners]

    def ended_by_shutdown(self) -> None:
        """A shutdown ended this run while its agent goes on (a daemon thread's run at exit):
        what it still yields passes through unrecorded. Its new spans would be orphans of an
        ended run, dropped by a provider shut down and counted as lost, by the hundred."""
        self.s = replace(self.s, tracer=trace.NoOpTracer())

    def held_spans(self) -> list[Any]:
        """The run's spans that ended (a step at its boundary, a call at its ``LLMCallEnd``) and
        are held open for what may still come (its bookkeeping, late usage, the tool calls
        its model asked for): their SDK spans end later, at the time they ended."""
        owners: list[Owner] = [*self._pending]
        if self._closed is not None:
            owners.append(self._closed)
        if self._asking is not None and self._asking not in owners:
            owners.append(self._asking)
        return [owner.span for owner in owners]

    def _failure_site(self, error: BaseException, now: int) -> Owner:
        """The span the run failed in: only that one is marked with the exception.

        First every open tool whose body raised out of its scope (``ToolCall.body_error``:
        parallel calls may all have raised, and only one exception leaves the run) fails
        with its own exception; the one whose exception the run's is (or was raised from) is
        the site. Then: an open LLM call is the innermost; else the one open tool the
        exception's traceback names (a frame of the tool's own name, when one open tool has
        it); else a lone open tool, unless a sibling already returned an error result or
        raised (the exception is then that failure surfacing: the lone tool was cut short,
        not failing); else the step or run. The open tools not failed end incomplete.
        """
        site: Owner | None = None
        raisers = [tool for tool in self._tools.values() if tool.body_error is not None]
        for tool in raisers:
            raised, tool.body_error = tool.body_error, None
            if raised is None:  # (written by the body's thread: read once)
                continue
            if site is None and any(seen is raised for seen in raised_from(error)):
                site = tool
                continue
            with guarded("run finish"):
                tool.fail(raised, error_type_of(raised), now)
        if site is not None:
            return site
        if self._calls or not self._tools:
            return self._inner
        tools = [tool for tool in self._tools.values() if not tool.raised]
        if not tools:
            return self._step or self.run
        named = [tool for tool in tools if tool.name in raised_in(error)]
        if len(named) == 1:
            return named[0]
        if len(tools) == 1 and not self._tool_failed and not raisers:
            return tools[0]
        return self._step or self.run

    def end_at_shutdown(self) -> None:
        """End the run a shutdown found open (``end_reason=shutdown``), but by the exit an open
        tool call's body raised, if any (:meth:`_left`): a framework whose cancel raises that
        exit again stops ``asyncio.run()``'s cleanup, leaving the run open until then."""
        left = self._left() if self._tools else None
        if left is None:
            self.end(END_SHUTDOWN)
        else:
            self.end(left[1], left[0])

    def _left(self) -> tuple[BaseException, str] | None:
        """The exit an open tool call's body raised (``sys.exit()``, ``KeyboardInterrupt``:
        ``LEAVES_LOOP``) and the end reason it gives the run (a failure; Ctrl-C's a cancel, as
        a run's own), if any: in a task of its own (a framework's tool task, a sync tool's
        thread awaited there) it leaves the event loop, and ``asyncio.run()`` then cancels
        every task left, the run's too: the run ends by the exit, not by that cancel."""
        with self.scopes.lock:  # (a tool body on another thread may be opening a call)
            tools = list(self._tools.values())
        for tool in tools:
            left = tool.body_error  # (written by the body's thread: read once)
            if isinstance(left, LEAVES_LOOP):
                cancel = isinstance(left, KeyboardInterrupt)
                return left, END_CANCELLED if cancel else END_ERROR
        return None

    def _lost(self, error: BaseException, cancelled: bool) -> BaseException | None:
        """The error an open MCP tool call's request was lost with below the session
        (``McpState.lost``: its ``body_error``), if any: the MCP SDK's transport then cancels
        every request in flight and their callers, the run's task too, so the cancellation the
        run ends by is that failure's, which nobody asked for; where the transport's task group
        closes in a tool body (a session opened for the call), the run ends by the group that
        carries it (``error``: the one of the calls' causes it holds). The run fails with that
        cause, as its calls do; None when ``error`` is neither (``cancelled``: the run ended
        by a cancellation)."""
        with self.scopes.lock:  # (a tool body on another thread may be opening a call)
            tools = list(self._tools.values())
        for tool in tools:
            mcp, lost = tool.mcp, tool.body_error  # (written by the body's thread: read once)
            lost_here = mcp is not None and mcp.lost and lost is not None
            if lost_here and (cancelled or carries(error, lost)):
                return lost
        return None

    def end(self, end_reason: str, error: BaseException | None = None) -> None:
        """End every span exactly once; ``error`` is the exception the run ended with.

        Each part below is isolated: whatever fails while describing one span (an exception
        whose ``__str__`` raises, a value, a hook, a meter) costs that description only, and
        every span still ends, innermost first, at the run's end time.
        """
        now = self.now()
        run = self.run
        run.now = lambda: now  # what the ending counts (an anomaly's event) lies within the run
        for tool in self.scopes.close():  # opened by bodies whose ToolCall never came
            if tool.body_error is None:
                tool.end(now, incomplete=True)
            else:  # a retry of a told call (``ToolScopes.retried``) whose body raised: an open
                self._tools[tool] = tool  # call whose body raised, the run's failure site or not
        with guarded("run finish"):
            if error is not None and end_reason == END_INTERRUPTED:
                run.paused(error, now)  # AgentInterruptedError: an event, not a failure
                error = None
            elif error is not None:
                if run.told_end == END_CANCELLED:  # a framework's cancel, then its exception
                    end_reason = END_CANCELLED
                elif self._tools:
                    lost = self._lost(error, end_reason == END_CANCELLED)
                    left = self._left() if end_reason == END_CANCELLED else None
                    if lost is not None:  # the transport's cancel or group, for its failure
                        error, end_reason = lost, END_ERROR
                    elif left is not None:  # asyncio.run()'s cancel, for a body's exit
                        error, end_reason = left
                error_type = error_type_of(error)
                inner = self._failure_site(error, now)
                inner.fail(error, error_type, now)
                if inner is not run:
                    run.fail(error, error_type, now)
        self.end_open(now)
        self._release()
        if self._pending:  # calls still waiting for their usage (the usual: none)
            pending, self._pending = self._pending, []
            for call in pending:
                self._end_call(call)
        if self.s.capture is not None and not run.has_output:
            with guarded("run finish"):  # no final event: the text told after the last call
                if not run.told_answer() and self._last_call is not None:  # else its answer
                    run.output(self._last_call.output_json)
        # The trailing segment ends as at a boundary, and its bookkeeping joins the last step.
        self.step_boundary(None, now)
        self.step_boundary(None, now)
        if self._step_errors and self.s.step_spans:  # errors only: they make one step
            self.ensure_step()
            self.step_boundary(None, now)
        self._end_held_step()
        if run.told_end and end_reason == END_EXHAUSTED:  # an interrupt, a framework's cancel
            end_reason = run.told_end
        run.end(now, end_reason)

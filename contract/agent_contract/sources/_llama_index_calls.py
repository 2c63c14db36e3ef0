"""LlamaIndex: the model calls a run's workflow steps make that no agent event reports.

An agent workflow tells its own model requests in its stream (``AgentInput``, ``AgentStream``,
``AgentOutput``: ``llama_index_stream``), but a step of a ``Workflow`` of one's own that calls
its LLM itself (``llm.achat``, ``astream_chat``, ``acomplete``, ``predict``,
``structured_predict``), and an agent's steps that ask a model beside its own request (a memory
that summarises), write nothing there. Inside the run the provider instrumentations stand down
(the run covers its model calls), so such a call was in no span and its tokens in no count.

LlamaIndex's instrumentation dispatcher tells every LLM call (``LLMChatStartEvent`` /
``LLMChatEndEvent``, ``LLMCompletionStartEvent`` / ``LLMCompletionEndEvent``; a predict or
structured predict is a chat or completion inside), in the task that makes it, inside a span of
the LLM's method whose parents are the step's span and the workflow run's. :class:`Calls` keeps
one run's (set as :data:`CALLS` in the run's context, which its steps' tasks copy) of those the
run's events do not tell already: not inside a ``run_agent_step`` or ``parse_agent_output``
step of the run's own agent (its own request, its output class's), not inside another call
it keeps (a chat a completion model makes of its ``complete``), not in a tool body (a tool's
own call is left to the provider instrumentations there: ``_context.tool_body``). Each is told
live, as the dispatcher tells it: its start (model, provider, parameters, messages) when its
start event fires, its text as its stream's deltas come (else the response's at its end),
usage from the provider's payload (``raw``) and its end when it ends; a call that raised ends
with ``Error`` of its class. So its chat span lasts its request (it was told whole after it
ended: a span of no time after the real call). Each names its dispatcher span as its
``call_id`` (calls of parallel steps are open at once); a call's text is told only while it is
the newest call open (a reader gives text to the newest), else only its end. The events go
into :attr:`Calls.told`, and :attr:`Calls.wake` (the run's reader's) is called, from the
dispatcher's thread (a sync ``llm.chat`` runs on a worker thread) or the loop's. That is a
run of a workflow of one's own (:attr:`Calls.live`); an agent's run and a nested run read
their stream as it comes, with no wait of their own between its events (their order
matters there), so their calls are told each whole once it ended. In a run of a
workflow of one's own they are the run's calls, the calls of one workflow step one step
(``llama_index_stream``); in an agent's run they are side calls (``SideCallStart``), never
naming the run.

An agent a step runs (``await agent.run(q)``) tells its own requests in its events, which the
step may forward into the run's stream (``ctx.write_event_to_stream``: the run's reader then
tells them) or not (in no stream of ours). So the requests of another agent's
``run_agent_step`` and ``parse_agent_output`` are held until the run ends, and told then only
if no event of that agent (by name) came through the run's stream (:meth:`Calls.heard`).
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agent_contract.events import (
    USAGE_COUNTS,
    AgentEvent,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ReasoningDelta,
    TextDelta,
)
from agent_contract.sources._call_usage import CallUsage
from agent_contract.sources._endpoint import Endpoint, at_endpoint, held_endpoint
from agent_contract.sources._history import call_start, llama_index_messages
from agent_contract.sources._raw_usage import get, usage_from_raw
from agent_contract.sources._watched import failed_call

__all__ = ["CALLS", "PROVIDERS", "Calls", "blocks", "finish_reason"]

PROVIDERS = {
    "OpenAI": "openai", "OpenAIResponses": "openai", "AzureOpenAI": "azure.ai.openai",
    "Anthropic": "anthropic", "Gemini": "gcp.gemini", "GoogleGenAI": "gcp.gen_ai",
    "Vertex": "gcp.vertex_ai", "BedrockConverse": "aws.bedrock", "Bedrock": "aws.bedrock",
    "Ollama": "ollama", "MistralAI": "mistral_ai", "Groq": "groq", "DeepSeek": "deepseek",
    "Cohere": "cohere", "LiteLLM": "litellm",
}  # fmt: skip
"""The provider each LlamaIndex LLM class talks to, by class name."""

CALLS: contextvars.ContextVar[Calls | None] = contextvars.ContextVar(
    "agent_contract_llama_index_calls", default=None
)
"""The calls of the run whose context this is (its workflow's tasks copy it)."""

_STARTS = frozenset({"LLMChatStartEvent", "LLMCompletionStartEvent"})
_ENDS = frozenset({"LLMChatEndEvent", "LLMCompletionEndEvent"})
_DELTAS = frozenset({"LLMChatInProgressEvent", "LLMCompletionInProgressEvent"})
_TOLD_STEPS = (".run_agent_step", ".parse_agent_output")
"""The agent steps whose model requests the run's events tell (the agent's own, its output
class's, early stopping's)."""
_USAGE_FIELDS = (*USAGE_COUNTS, "model")
_ID = 37  # a dispatcher span's id is its method's qualified name, "-" and a uuid4's 36 chars


def _method(span_id: Any) -> str:
    """The qualified name of the method a dispatcher span ``span_id`` is of."""
    return span_id[:-_ID] if isinstance(span_id, str) and len(span_id) > _ID else ""


Told = tuple[Any, str, AgentEvent]
"""One event of a kept call: the call's workflow step (the dispatcher span of the run's step
it was made in, ``None`` for none known), the call's dispatcher span, the event."""


class Calls:
    """One run's model calls no event of its tells (module doc): open ones by the dispatcher
    span of their LLM method, their events told as they come (:meth:`drain`)."""

    def __init__(self, workflow: Any, side: bool) -> None:
        self.workflow = workflow  # the run's
        self.side = side  # an agent's run: each is a side call
        self.run: Any = None  # the dispatcher span of the workflow's run
        self.parents: dict[str, Any] = {}  # the open dispatcher spans of the run, their parents
        self.instances: dict[str, Any] = {}  # and the object each is a method of (an LLM's)
        self.open: dict[str, list[AgentEvent]] = {}  # a held call's events so far
        self.steps: dict[str, Any] = {}  # each open call's workflow step (its span)
        self.streamed: set[str] = set()  # the open calls whose text came in deltas
        self.told: deque[Told] = deque()  # thread-safe: the dispatcher may fire on a thread
        self.wake: Callable[[], object] | None = None  # the reader's, to hear of ``told``
        self.live = False  # told as they come (else each whole once it ended: module doc)
        self.agents: dict[str, Any] = {}  # the open agent steps telling their requests: agent
        self.holding: dict[str, Any] = {}  # each open call of another agent's: its name
        self.held: list[tuple[Any, Any, str, list[AgentEvent]]] = []  # such calls ended
        self.said: set[Any] = set()  # the agents whose events came through the run's stream

    def spanned(self, id_: str, parent: Any, instance: Any, workflow: Any) -> None:
        """A dispatcher span opened in the run: its parent, the LLM method's ``instance``, the
        ``workflow`` whose step it is (``None``: none known)."""
        self.parents[id_] = parent
        self.instances[id_] = instance
        method = _method(id_)
        if instance is self.workflow and self.run is None and method.endswith(".run"):
            self.run = id_
        elif method.endswith(_TOLD_STEPS):
            self.agents[id_] = getattr(workflow, "name", None)

    def heard(self, agent: Any) -> None:
        """An event of the agent named ``agent`` came through the run's stream."""
        self.said.add(agent)

    def left(self, id_: str, error: Any = None) -> None:
        self.parents.pop(id_, None)
        self.instances.pop(id_, None)
        self.agents.pop(id_, None)
        if isinstance(error, BaseException) and id_ in self.open:  # the call raised
            failed, _ = failed_call(error)
            self._done(id_, (failed, LLMCallEnd(call_id=id_)))

    def _tell(self, step: Any, span_id: str, said: Iterable[AgentEvent]) -> None:
        self.told.extend((step, span_id, event) for event in said)
        if self.wake is not None:
            self.wake()

    def _done(self, span_id: str, tail: Iterable[AgentEvent]) -> None:
        """The open call ``span_id`` ended with ``tail``: told now (held, another agent's, to
        the run's end: module doc); its text only while it is the newest call open."""
        whole = span_id in self.holding or not self.live  # its events told together
        if not whole and not self._newest(span_id):
            tail = [e for e in tail if not isinstance(e, (TextDelta, ReasoningDelta))]
        step, said = self.steps.pop(span_id, None), self.open.pop(span_id)
        self.streamed.discard(span_id)
        if span_id in self.holding:
            self.held.append((self.holding.pop(span_id), step, span_id, [*said, *tail]))
        else:
            self._tell(step, span_id, [*said, *tail])

    def _newest(self, span_id: str) -> bool:
        """Whether ``span_id`` is the newest call open (its text goes to it: module doc)."""
        opened = list(self.open)  # one step: another thread may open a call meanwhile
        return bool(opened) and opened[-1] == span_id

    def _ancestors(self, span_id: str) -> Iterator[str]:
        parent = self.parents.get(span_id)
        while isinstance(parent, str):
            yield parent
            parent = self.parents.get(parent)

    def event(self, event: Any) -> None:
        """Read one dispatcher event (any kind) of this run's context."""
        kind = type(event).__name__
        span_id = getattr(event, "span_id", None)
        if not isinstance(span_id, str):
            return
        if kind in _STARTS:
            step, agent = None, None
            for above in self._ancestors(span_id):
                if above in self.open:
                    return  # inside a call kept (a chat a completion model makes)
                own = self.run is not None and self.parents.get(above) == self.run
                if above in self.agents:
                    if own:
                        return  # a step of the run's agent whose request its events tell
                    agent = (self.agents[above],) if agent is None else agent
                if own:
                    step = above
            self.steps[span_id] = step
            start = self._start(event, span_id)
            if agent is not None:
                self.holding[span_id] = agent[0]
            if agent is not None or not self.live:  # told whole once it ended
                self.open[span_id] = [start]
            else:
                self.open[span_id] = []
                self._tell(step, span_id, (start,))
        elif kind in _DELTAS and span_id in self.open:
            delta = getattr(getattr(event, "response", None), "delta", None)
            if isinstance(delta, str) and delta:
                self.streamed.add(span_id)
                if span_id in self.holding or not self.live:
                    self.open[span_id].append(TextDelta(text=delta))
                elif self._newest(span_id):
                    self._tell(self.steps.get(span_id), span_id, (TextDelta(text=delta),))
        elif kind in _ENDS and span_id in self.open:
            self._done(span_id, _ended(event, span_id, span_id not in self.streamed))

    def _start(self, event: Any, span_id: str) -> LLMCallStart:
        llm = getattr(event, "model_dict", None) or {}
        method = _method(span_id)
        model = llm.get("model") or llm.get("model_name")
        params: dict[str, Any] = {}
        for key in ("temperature", "max_tokens"):
            value = llm.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                params[key] = value
        params["stream"] = "stream" in method.rpartition(".")[2]
        start: LLMCallStart
        model = model if isinstance(model, str) and model != "unknown" else None
        provider = PROVIDERS.get(method.partition(".")[0])
        messages = getattr(event, "messages", None)
        if messages is None:  # a completion: its prompt
            prompt = getattr(event, "prompt", None)
            start = call_start(model, provider, params, _prompted, prompt, side=self.side)
        else:
            start = call_start(model, provider, params, llama_index_messages, tuple(messages),
                               side=self.side)  # fmt: skip
        start = at_endpoint(start, llm_endpoint(self.instances.get(span_id)))
        start.call_id = span_id  # calls of parallel steps are open at once
        return start

    def drain(self) -> Iterator[Told]:
        """The calls' events told since the last drain, in order, each with its call's
        workflow step (the dispatcher span of the run's step it was made in, ``None`` for none
        known) and its dispatcher span."""
        while self.told:
            yield self.told.popleft()

    def close(self) -> Iterator[Told]:
        """The run ended: each call still open (a stream never read to its end) ended bare,
        the held ones of agents whose events the stream did not tell, then all in order."""
        for span_id in list(self.open):
            self._done(span_id, (LLMCallEnd(call_id=span_id),))
        for agent, step, span_id, said in self.held:
            if agent is None or agent not in self.said:
                self.told.extend((step, span_id, event) for event in said)
        self.held.clear()
        yield from self.drain()


def _prompted(prompt: Any) -> list[Message]:
    """A completion's prompt as the one user message it sends."""
    return [Message(role="user", content=prompt)] if isinstance(prompt, str) else []


def _ended(event: Any, call_id: str, text: bool) -> Iterator[AgentEvent]:
    """What an end event tells of its call ``call_id``: the text (and thinking) unless its
    deltas told it (``text``), usage, the end."""
    response = getattr(event, "response", None)
    message = getattr(response, "message", None)
    if not text:
        pass
    elif message is not None:
        yield from blocks(message)
    else:
        said = getattr(response, "text", None)
        if isinstance(said, str) and said:
            yield TextDelta(text=said)
    raw = getattr(response, "raw", None)
    usage = usage_from_raw(raw)
    if usage is not None:
        yield CallUsage(call_id=call_id, **{k: getattr(usage, k) for k in _USAGE_FIELDS})
    model, response_id = get(raw, "model"), get(raw, "id")
    yield LLMCallEnd(
        model=model if isinstance(model, str) else None,
        call_id=call_id,
        finish_reason=finish_reason(raw),
        response_id=response_id if isinstance(response_id, str) else None,
    )


def blocks(message: Any) -> Iterator[AgentEvent]:
    """The text and thinking blocks of a response ``message`` (a ``ChatMessage``), in order."""
    for block in getattr(message, "blocks", None) or ():
        kind = getattr(block, "block_type", None)
        text = getattr(block, "text" if kind == "text" else "content", None)
        if isinstance(text, str) and text and kind in ("text", "thinking"):
            yield TextDelta(text=text) if kind == "text" else ReasoningDelta(text=text)


def finish_reason(raw: Any) -> str | None:
    """The finish reason a provider's payload ``raw`` names (OpenAI's choice, Anthropic's)."""
    choices = get(raw, "choices")
    if isinstance(choices, list) and choices:
        reason = get(choices[0], "finish_reason")
    else:
        reason = get(raw, "stop_reason") or get(get(raw, "delta"), "stop_reason")
    return reason if isinstance(reason, str) else None


_URLS = ("azure_endpoint", "api_base", "base_url")
"""Where a LlamaIndex LLM keeps the URL it sends to: an Azure OpenAI LLM's endpoint, an OpenAI
LLM's ``api_base`` (its environment's or OpenAI's API when given none), another's
``base_url`` (Anthropic's)."""


def llm_endpoint(llm: Any) -> Endpoint | None:
    """The server a LlamaIndex ``llm`` sends to: the SDK client it was given, else its URL
    (``_URLS``); None for an LLM with neither (a mock). A property that raises costs only the
    server."""
    return held_endpoint(llm, ("_aclient", "_client"), _URLS)

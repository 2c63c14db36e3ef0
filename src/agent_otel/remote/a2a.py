"""A2A (a2a-sdk 1.x), which propagates no trace context itself: both sides, through its seams.

Caller: :func:`trace_a2a_client` decorates an a2a-sdk ``Client`` (the SDK's public abstract
client, which its own ``BaseClient`` implements): each ``send_message`` is one
:class:`~agent_otel.remote._call.RemoteAgentCall`, current while the SDK pulls each response
(its transport's and an HTTP client's spans nest under it), its W3C headers sent as the call's
service parameters (the SDK's per-call headers). The SDK's client interceptor is the seam that
sees the agent card of each call (:class:`_DescribeCall`); an interceptor alone cannot own the
span: its ``after`` never runs when the transport raises or the caller stops reading.

Remote agent: :func:`trace_a2a_executor` decorates an ``AgentExecutor``: ``execute`` runs in
the context the request's headers name (the server call context keeps them), with the
request's ``contextId`` as the conversation id, so the run the executor starts is a child of
the caller's CLIENT span.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_otel._lazy import needs_extra

try:  # the a2a extra; without it, say so (Python's bare "No module named 'a2a'" did not)
    from a2a.client import Client, ClientCallContext, ClientCallInterceptor
    from a2a.client.interceptors import AfterArgs, BeforeArgs
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        DeleteTaskPushNotificationConfigRequest,
        GetExtendedAgentCardRequest,
        GetTaskPushNotificationConfigRequest,
        GetTaskRequest,
        ListTaskPushNotificationConfigsRequest,
        ListTaskPushNotificationConfigsResponse,
        ListTasksRequest,
        ListTasksResponse,
        SendMessageRequest,
        StreamResponse,
        SubscribeToTaskRequest,
        Task,
        TaskPushNotificationConfig,
        TaskState,
    )
except ModuleNotFoundError as missing:
    needs_extra(missing, "a2a", "agent_otel.remote.a2a needs a2a-sdk 1.x", "a2a")
from opentelemetry import context as otel_context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from agent_otel._guard import report
from agent_otel._plain import text_of
from agent_otel.scrubbing import Scrubber

from ._call import RemoteAgentCall, w3c_headers
from ._continue import remote_parent
from ._held import HELD

__all__ = ["trace_a2a_client", "trace_a2a_executor"]

_CALL = otel_context.create_key("agent_otel.a2a_call")


# --- the caller's side -------------------------------------------------------------------------
def trace_a2a_client(
    client: Client,
    *,
    card: AgentCard | None = None,
    agent_name: str | None = None,
    url: str | None = None,
    provider: str | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    scrub: bool | Scrubber = True,
) -> Client:
    """``client`` (an a2a-sdk ``Client``) whose every ``send_message`` continues the trace.

    Each call is an ``invoke_agent {agent}`` CLIENT span under the current span (a tool's,
    when the call runs in a tool body), named and addressed from the agent card (``card``, else
    the card the SDK calls the agent with; ``agent_name`` and ``url`` win over it), with the
    message's ``contextId`` as ``gen_ai.conversation.id`` (else the one the agent answers
    with), and its W3C context sent on the request. A remote task that ends failed, rejected
    or cancelled fails the span (``error.type``: ``TASK_STATE_FAILED``,
    ``TASK_STATE_REJECTED``, ``TASK_STATE_CANCELED``): the call raised nothing, but the work
    was not done. A call answered with its task still
    at work (submitted, working: a client that polls, a stream the caller stopped reading)
    keeps its span open until a later response of this client or another traced one
    (``get_task``, ``subscribe``, ``cancel_task``, ``list_tasks``, a message on the task) says
    the task ended, and fails it then as above, also after this client closed; a call whose
    task nobody follows to its end ends at shutdown (with the runs: exit,
    ``Telemetry.shutdown()``, ``end_open_runs()``). The remote run is its child when the
    agent's executor is decorated by :func:`trace_a2a_executor` (or its server continues W3C
    context otherwise). Every other request (``cancel_task``, ``get_task``, ``subscribe``, ...)
    opens no span and carries the current context's W3C headers (a tool's span, in a tool
    body), so what the server does for it (the executor's ``cancel``) is in the caller's trace
    too; service parameters the caller gave keep their values. Use the returned client; without
    ``card``, ``client`` itself gains one interceptor (the SDK's public ``add_interceptor``)
    that reads the card of each call.
    """
    return _TracedClient(
        client,
        card,
        agent_name,
        url,
        provider,
        (tracer_provider, meter_provider, scrub),
    )


class _DescribeCall(ClientCallInterceptor):
    """The SDK's interceptor: describes the call current in the context from the card the SDK
    is about to call with (it runs before the transport sends anything)."""

    async def before(self, args: BeforeArgs) -> None:
        call = otel_context.get_value(_CALL)
        if isinstance(call, RemoteAgentCall):
            try:
                describe(call, args.agent_card)
            except Exception:
                report("a2a card")

    async def after(self, args: AfterArgs) -> None:
        return None


def describe(call: RemoteAgentCall, card: AgentCard) -> None:
    """Fill in ``call`` from an agent card: name, description, version, first interface's URL."""
    interfaces = card.supported_interfaces
    call.describe(
        card.name or None,
        (interfaces[0].url or None) if interfaces else None,
        card.description or None,
        card.version or None,
    )


def _context_id(response: object) -> str | None:
    """The ``contextId`` a response names (a task, a message or an update of either); None
    for anything else (a response of another SDK version is read, never trusted)."""
    try:
        kind = response.WhichOneof("payload")  # type: ignore[attr-defined]
        value = getattr(getattr(response, kind), "context_id", None) if kind else None
    except Exception:
        return None
    return text_of(value) or None


_FAILED_STATES = {
    TaskState.TASK_STATE_FAILED: "TASK_STATE_FAILED",
    TaskState.TASK_STATE_REJECTED: "TASK_STATE_REJECTED",
    TaskState.TASK_STATE_CANCELED: "TASK_STATE_CANCELED",
}
"""The states of a task that ended with its work undone: each fails the call, named by it (a
task cancelled, by the caller or the agent, as a cancelled run fails, ``CancelledError``)."""


def _failed_state(response: object) -> str | None:
    """The state's name when a response says the remote task failed, was rejected or was
    cancelled (a task, or an update of its status); None otherwise (a response of another SDK
    version is read, never trusted)."""
    try:
        kind = response.WhichOneof("payload")  # type: ignore[attr-defined]
        if kind not in ("task", "status_update"):
            return None
        return _FAILED_STATES.get(getattr(response, kind).status.state)
    except Exception:  # a state that is no enum value (unhashable, its __eq__ raising)
        return None


_WORKING = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
"""The states of a task still at work: every other one ended it, or waits for the caller
(input, authorisation), which ends that call's part of it."""


def _state_name(state: int) -> str | None:
    """A task state's name (``TASK_STATE_WORKING``); None for a number the SDK does not
    name."""
    try:
        return str(TaskState.Name(state))
    except ValueError:
        return None


def _task_of(response: object) -> tuple[str, int] | None:
    """The task a response names (a task, an update of its status, or a ``Task`` itself) and
    its state; None for anything else (a response of another SDK version is read, never
    trusted)."""
    try:
        if isinstance(response, Task):
            task_id, status = response.id, response.status
        else:
            kind = response.WhichOneof("payload")  # type: ignore[attr-defined]
            if kind == "task":
                task_id, status = response.task.id, response.task.status  # type: ignore[attr-defined]
            elif kind == "status_update":
                update = response.status_update  # type: ignore[attr-defined]
                task_id, status = update.task_id, update.status
            else:
                return None
        state = status.state
        return (task_id, int(state)) if type(task_id) is str and task_id else None
    except Exception:  # a state that is no enum value, a response laid out otherwise
        return None


def _in_trace(context: ClientCallContext | None) -> ClientCallContext | None:
    """The caller's call context for a request that opens no span, its service parameters
    carrying the current context's W3C headers (the caller's own values kept); as it was when
    there is nothing to send. Never raises."""
    try:
        headers = w3c_headers(otel_context.get_current())
        if not headers:
            return context
        own = (context.service_parameters or {}) if context is not None else {}
        return _with_headers(context, {k: v for k, v in headers.items() if k not in own})
    except Exception:
        report("a2a request context")
        return context


def _with_headers(context: ClientCallContext | None, headers: dict[str, str]) -> ClientCallContext:
    """A copy of the caller's call context whose service parameters (sent as the request's
    headers) carry ``headers``; the caller's own context is left as it was."""
    if context is None:
        return ClientCallContext(service_parameters=headers)
    parameters = {**(context.service_parameters or {}), **headers}
    return context.model_copy(update={"service_parameters": parameters})


Providers = tuple[TracerProvider | None, MeterProvider | None, "bool | Scrubber"]


class _TracedClient(Client):
    """An a2a-sdk ``Client`` whose ``send_message`` is a traced remote agent call."""

    def __init__(
        self,
        inner: Client,
        card: AgentCard | None,
        agent_name: str | None,
        url: str | None,
        provider: str | None,
        providers: Providers,
    ) -> None:
        super().__init__()
        self._inner = inner
        self._card = card
        self._agent_name, self._url, self._provider = agent_name, url, provider
        self._providers = providers
        self._describing = False

    def _saw(self, response: object) -> None:
        """A response of this client naming a task: a call held for it (by any traced client
        of the process) ends when it says the task ended (failed, rejected or cancelled:
        failed)."""
        if not HELD:  # (the usual: nothing held)
            return
        seen = _task_of(response)
        if seen is not None and seen[1] not in _WORKING:
            HELD.ended(seen[0], _FAILED_STATES.get(seen[1]))  # type: ignore[call-overload]

    def _finish(
        self, call: RemoteAgentCall, task: tuple[str, int] | None, error: BaseException | None
    ) -> None:
        """The call's stream ended (``error``: raised in it, ``GeneratorExit`` when the caller
        stopped reading): its span ends, unless its task is still at work (its last response
        said so) and nothing failed: it is held until the caller learns the end, with this
        client or another."""
        if task is not None and task[1] in _WORKING and not _raised_in(error):
            call.held(_state_name(task[1]))
            HELD.hold(task[0], call)
        else:
            call.end(error)

    async def _describing_calls(self) -> None:
        """Without a card, the interceptor that reads each call's card, added once."""
        if self._card is None and not self._describing:
            self._describing = True
            try:
                await self._inner.add_interceptor(_DescribeCall())
            except Exception:
                report("a2a interceptor")

    def _start(self, request: SendMessageRequest) -> RemoteAgentCall:
        tracer_provider, meter_provider, scrub = self._providers
        message = request.message if request.HasField("message") else None
        call = RemoteAgentCall(
            self._agent_name,
            self._url,
            conversation_id=(message.context_id or None) if message is not None else None,
            provider=self._provider,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            scrub=scrub,
        )
        if self._card is not None:
            describe(call, self._card)
        return call

    async def send_message(
        self, request: SendMessageRequest, *, context: ClientCallContext | None = None
    ) -> AsyncIterator[StreamResponse]:
        """The inner client's ``send_message``, one ``invoke_agent`` CLIENT span around it:
        current while the SDK pulls each response, never while the caller holds one."""
        await self._describing_calls()
        try:
            call = self._start(request)
            active = otel_context.set_value(_CALL, call, call.context)
            context = _with_headers(context, call.headers)
        except Exception:  # no span: the call itself goes as it would have
            report("a2a call start")
            async for response in self._inner.send_message(request, context=context):
                yield response
            return
        stream = self._inner.send_message(request, context=context)
        task: tuple[str, int] | None = None  # the task its last response named, and its state
        error: BaseException | None = None
        try:
            while True:
                token = otel_context.attach(active)
                try:
                    response = await stream.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    otel_context.detach(token)
                call.set_conversation_id(_context_id(response))
                failed = _failed_state(response)
                if failed is not None:
                    call.fail(failed)
                task = _task_of(response) or task
                self._saw(response)  # (a message on a task an earlier call left at work)
                yield response
        except BaseException as raised:
            error = raised
            raise
        finally:
            self._finish(call, task, error)
            await _close(stream, active)

    # --- every other request: no span, the current context in its headers ----------------------
    async def get_task(
        self, request: GetTaskRequest, *, context: ClientCallContext | None = None
    ) -> Task:
        task = await self._inner.get_task(request, context=_in_trace(context))
        self._saw(task)
        return task

    async def list_tasks(
        self, request: ListTasksRequest, *, context: ClientCallContext | None = None
    ) -> ListTasksResponse:
        tasks = await self._inner.list_tasks(request, context=_in_trace(context))
        if HELD:
            for task in tasks.tasks:
                self._saw(task)
        return tasks

    async def cancel_task(
        self, request: CancelTaskRequest, *, context: ClientCallContext | None = None
    ) -> Task:
        task = await self._inner.cancel_task(request, context=_in_trace(context))
        self._saw(task)
        return task

    async def create_task_push_notification_config(
        self, request: TaskPushNotificationConfig, *, context: ClientCallContext | None = None
    ) -> TaskPushNotificationConfig:
        return await self._inner.create_task_push_notification_config(
            request, context=_in_trace(context)
        )

    async def get_task_push_notification_config(
        self,
        request: GetTaskPushNotificationConfigRequest,
        *,
        context: ClientCallContext | None = None,
    ) -> TaskPushNotificationConfig:
        return await self._inner.get_task_push_notification_config(
            request, context=_in_trace(context)
        )

    async def list_task_push_notification_configs(
        self,
        request: ListTaskPushNotificationConfigsRequest,
        *,
        context: ClientCallContext | None = None,
    ) -> ListTaskPushNotificationConfigsResponse:
        return await self._inner.list_task_push_notification_configs(
            request, context=_in_trace(context)
        )

    async def delete_task_push_notification_config(
        self,
        request: DeleteTaskPushNotificationConfigRequest,
        *,
        context: ClientCallContext | None = None,
    ) -> None:
        await self._inner.delete_task_push_notification_config(request, context=_in_trace(context))

    async def subscribe(
        self, request: SubscribeToTaskRequest, *, context: ClientCallContext | None = None
    ) -> AsyncIterator[StreamResponse]:
        async for response in self._inner.subscribe(request, context=_in_trace(context)):
            self._saw(response)
            yield response

    async def get_extended_agent_card(
        self,
        request: GetExtendedAgentCardRequest,
        *,
        context: ClientCallContext | None = None,
        signature_verifier: Callable[[AgentCard], None] | None = None,
    ) -> AgentCard:
        return await self._inner.get_extended_agent_card(
            request, context=_in_trace(context), signature_verifier=signature_verifier
        )

    async def add_interceptor(self, interceptor: ClientCallInterceptor) -> None:
        await self._inner.add_interceptor(interceptor)

    async def close(self) -> None:
        await self._inner.close()


def _raised_in(error: BaseException | None) -> bool:
    """Whether a call's stream ended by an exception of its own (not the caller that stopped
    reading it)."""
    return error is not None and not isinstance(error, GeneratorExit)


async def _close(stream: Any, active: Any) -> None:
    """Close the SDK's response stream (a caller that stopped early), the call still current."""
    close = getattr(stream, "aclose", None)
    if close is None:
        return
    token = otel_context.attach(active)
    try:
        await close()
    finally:
        otel_context.detach(token)


# --- the remote agent's side -------------------------------------------------------------------
def trace_a2a_executor(executor: AgentExecutor) -> AgentExecutor:
    """``executor`` whose ``execute`` and ``cancel`` run in the caller's trace.

    The W3C context of the request (the headers a2a-sdk's HTTP routes keep in the server call
    context's state, or the gRPC metadata) is the parent of the run ``execute`` starts, and the
    request's ``contextId`` its ``gen_ai.conversation.id``. Pass the result to the request
    handler in place of ``executor``.
    """
    return _TracedExecutor(executor)


class _TracedExecutor(AgentExecutor):
    """An ``AgentExecutor`` running its inner executor in the request's trace context."""

    def __init__(self, inner: AgentExecutor) -> None:
        self._inner = inner

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        token = otel_context.attach(_parent(context))
        try:
            await self._inner.execute(context, event_queue)
        finally:
            otel_context.detach(token)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        token = otel_context.attach(_parent(context))
        try:
            await self._inner.cancel(context, event_queue)
        finally:
            otel_context.detach(token)


def _parent(context: RequestContext) -> Any:
    """The context the request names, with its ``contextId`` as the conversation id."""
    try:
        headers = _headers(context.call_context.state)
        conversation_id = context.context_id
    except Exception:
        report("a2a request context")
        return remote_parent(())  # a request it cannot read names no parent: its own trace
    return remote_parent(headers, conversation_id=conversation_id)


def _headers(state: Any) -> Any:
    """The request's headers: the HTTP routes' ``headers``, else the gRPC call's metadata."""
    headers = state.get("headers")
    if headers is not None:
        return headers
    grpc_context = state.get("grpc_context")
    if grpc_context is not None:
        return list(grpc_context.invocation_metadata() or ())
    return {}

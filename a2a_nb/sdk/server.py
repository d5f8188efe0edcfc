"""Any ``AgentExecutor`` of the official a2a-sdk, served on the A2A over MQTT profile.

The kit's :class:`~a2a_nb.agents.responder.Responder` does what the profile asks of a responder (the
retained card with ``a2a-status`` and a Last Will, requester-made Task.ids, idempotent resend, the
task store, GetTask / CancelTask / ListTasks, pools, bounds on requests and workers); the executor
does only the work. :class:`ExecutorHandler` is the Responder's handler: for each message that starts
or continues a task it builds the SDK's ``RequestContext`` (the kit's Task.id and contextId, the
current ``Task`` on a later turn), runs ``executor.execute`` on one asyncio loop of its own, and turns
each event the executor enqueues into the kit's task verbs:

* ``Message``: the answer (SendMessage result ``{"message": ...}``), as the SDK's handler returns it;
* ``Task``: its state and artifacts (the usual first event, ``new_task(...)``);
* ``TaskStatusUpdateEvent``: the state change, with its status message;
* ``TaskArtifactUpdateEvent``: the artifact update (``append`` and ``lastChunk`` kept).

A CancelTask reaches the executor as ``executor.cancel(...)`` and the running ``execute`` is cancelled.
Untrusted input: requests are checked by the Responder before the executor sees them; the executor's
events are the server's own code, checked by the SDK's types on the way in and by the kit's rules
(state transitions, artifact ids) on the way out. Bounds: the Responder's workers (``ResponderOptions``)
bound the executions in flight; ``CANCEL_WAIT_S`` bounds how long a cancelled executor may take.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Optional, Union

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.types import (AgentCard, Message, SendMessageRequest, Task, TaskArtifactUpdateEvent, TaskState,
                       TaskStatusUpdateEvent)
from google.protobuf.message import Message as Proto

from ..agents.context import TaskContext
from ..agents.responder import Responder, ResponderOptions
from ..agents.runtime import TaskCanceled
from ..mqtt.broker import BrokerEndpoint
from ..protocol import states, topics
from ..protocol.card_interface import mqtt_interface, request_topic_of
from .convert import from_json, to_json

CANCEL_WAIT_S = 5.0
"""How long ``executor.cancel`` and the cancelled ``execute`` may take before the task is left canceled anyway."""
_CANCEL_POLL_S = 0.1


class _Cancelled(Exception):
    """The kit cancelled the task while the executor was running."""


class _KitEvents(EventQueue):
    """The queue an executor enqueues into: each event becomes one change of the kit's task."""

    def __init__(self, ctx: TaskContext):
        self.ctx = ctx
        self.events = 0

    async def enqueue_event(self, event: Any) -> None:
        ctx = self.ctx
        ctx.check_canceled()
        self.events += 1
        if isinstance(event, Message):
            ctx.respond(self._message(event))
        elif isinstance(event, Task):
            self._state(event.status.state, event.status.message if event.status.HasField("message") else None)
            for art in event.artifacts:
                self._artifact(to_json(art), append=False, last_chunk=True)
        elif isinstance(event, TaskStatusUpdateEvent):
            self._state(event.status.state, event.status.message if event.status.HasField("message") else None)
        elif isinstance(event, TaskArtifactUpdateEvent):
            self._artifact(to_json(event.artifact), append=event.append, last_chunk=event.last_chunk)
        else:
            raise TypeError(f"an executor enqueued {type(event).__name__}: only Message, Task, "
                            "TaskStatusUpdateEvent and TaskArtifactUpdateEvent are events")

    def _message(self, msg: Message) -> dict:
        """The executor's message with this task's ids (an SDK helper may leave them out)."""
        out = to_json(msg)
        out.setdefault("taskId", self.ctx.task_id)
        out.setdefault("contextId", self.ctx.context_id)
        return out

    def _state(self, state: int, message: Optional[Message]) -> None:
        name = TaskState.Name(state)
        if name in (states.SUBMITTED, "TASK_STATE_UNSPECIFIED") or name == self.ctx.state and message is None:
            return
        status_message = self._message(message) if message is not None else None
        verb = {states.WORKING: self.ctx.working, states.INPUT_REQUIRED: self.ctx.ask_input,
                states.AUTH_REQUIRED: self.ctx.ask_auth, states.COMPLETED: self.ctx.complete,
                states.FAILED: self.ctx.fail, states.REJECTED: self.ctx.reject}.get(name)
        if verb is None:  # CANCELED: the executor gave up on its own
            raise _Cancelled(name)
        verb(status_message)

    def _artifact(self, art: dict, *, append: bool, last_chunk: bool) -> None:
        self.ctx.artifact(art["artifactId"], art.get("parts") or [], name=art.get("name"),
                          description=art.get("description"), append=append, last_chunk=last_chunk,
                          metadata=art.get("metadata"))


class _Discard(EventQueue):
    """Where ``executor.cancel`` writes: the kit has already marked the task canceled."""

    async def enqueue_event(self, event: Any) -> None:
        return None


class ExecutorHandler:
    """A Responder handler (``handler(ctx)``) that runs an SDK ``AgentExecutor``."""

    def __init__(self, executor: AgentExecutor):
        self.executor = executor
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._lock = threading.Lock()

    def _the_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True, name="sdk-executor-loop").start()
                self._loop = loop
            return self._loop

    def __call__(self, ctx: TaskContext) -> None:
        future = asyncio.run_coroutine_threadsafe(self._run(ctx), self._the_loop())
        try:
            future.result()
        except (_Cancelled, concurrent.futures.CancelledError):
            raise TaskCanceled(ctx.task_id) from None

    def request_context(self, ctx: TaskContext) -> RequestContext:
        """The SDK's view of this message: the kit's ids, and the task so far on a later turn."""
        message = from_json(ctx.message, Message, "the request's message")
        current = from_json(ctx.task, Task, "the stored task") if ctx.turn > 1 else None
        return RequestContext(ServerCallContext(), SendMessageRequest(message=message), task_id=ctx.task_id,
                              context_id=ctx.context_id, task=current)

    async def _run(self, ctx: TaskContext) -> None:
        context = self.request_context(ctx)
        work = asyncio.ensure_future(self.executor.execute(context, _KitEvents(ctx)))
        while not work.done():
            await asyncio.wait({work}, timeout=_CANCEL_POLL_S)
            if not work.done() and ctx.canceled:
                await self._cancel(work, context)
                raise _Cancelled(ctx.task_id)
        work.result()  # the executor's own exception: the Responder marks the task failed and says why

    async def _cancel(self, work: asyncio.Future, context: RequestContext) -> None:
        """CancelTask arrived: ask the executor to stop, then cancel what still runs (bounded)."""
        try:
            await asyncio.wait_for(self.executor.cancel(context, _Discard()), CANCEL_WAIT_S)
        except Exception:  # noqa: BLE001 - an executor that cannot cancel is cancelled all the same
            pass
        work.cancel()
        await asyncio.wait({work}, timeout=CANCEL_WAIT_S)

    def close(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)


def card_json(card: Union[AgentCard, dict], org: str, unit: str, agent: str,
              broker_url: Optional[str] = None) -> dict:
    """The card as JSON, with the MQTT interface of ``org/unit/agent`` first (added when missing)."""
    out = to_json(card) if isinstance(card, Proto) else dict(card)
    if request_topic_of(out) != topics.request_topic(org, unit, agent):
        out["supportedInterfaces"] = [mqtt_interface(org, unit, agent, broker_url),
                                      *(out.get("supportedInterfaces") or [])]
    return out


class ServedExecutor:
    """An executor on the broker: ``responder`` (the kit's role that answers), ``stop()`` says offline,
    disconnects and ends the executor's loop. A context manager."""

    def __init__(self, responder: Responder, handler: ExecutorHandler):
        self.responder, self.handler = responder, handler

    @property
    def agent(self) -> str:
        return self.responder.agent

    @property
    def card(self) -> Optional[dict]:
        return self.responder.card

    def stop(self) -> None:
        self.responder.stop()
        self.handler.close()

    def __enter__(self) -> "ServedExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        r = self.responder
        return f"<ServedExecutor {type(self.handler.executor).__name__} as {r.org}/{r.unit}/{r.agent}>"


def serve(executor: AgentExecutor, card: Union[AgentCard, dict], *, agent: Optional[str] = None,
          org: Optional[str] = None, unit: Optional[str] = None,
          broker: Union[str, BrokerEndpoint, None] = None, pool: Optional[str] = None,
          options: ResponderOptions = ResponderOptions()) -> ServedExecutor:
    """Serve ``executor`` as an MQTT agent now (see :class:`ServedExecutor`).

    Where it answers: ``org``/``unit``/``agent`` when given, else the request topic of the card's
    MQTT interface. The card is published retained with that interface first.
    """
    if not isinstance(executor, AgentExecutor):
        raise TypeError(f"serve() takes an a2a-sdk AgentExecutor, not {type(executor).__name__}")
    if not isinstance(card, (AgentCard, dict)):
        raise TypeError(f"serve() takes the card as an a2a-sdk AgentCard or its JSON (a dict), not {type(card).__name__}")
    found = topics.parse_topic(request_topic_of(to_json(card) if isinstance(card, Proto) else card) or "")
    org = org or (found.org if found else "acme")
    unit = unit or (found.unit if found else "support")
    agent = agent or (found.agent if found and found.agent else None)
    if agent is None:
        raise ValueError("serve() needs agent=... (the card names no MQTT request topic of an agent)")
    handler = ExecutorHandler(executor)
    responder = Responder(agent, handler, org=org, unit=unit, broker=broker, card=card_json(card, org, unit, agent),
                          pool=pool, options=options)
    return ServedExecutor(responder, handler)

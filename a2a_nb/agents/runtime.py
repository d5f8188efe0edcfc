"""The task runtime a card agent shares with the instances it spawns: it decides, it never sends.

It owns the task store, who is listening to each task (blocking waiters and stream subscribers, by
their Response Topic + Correlation Data) and which agent answers for each task now. Every change of
a task is one call here that checks the rules (the state machine, who may see a task, what may be
canceled) and returns what must be sent because of it, as :class:`~.reply_paths.Outgoing` values:
stream subscribers get each event as its own MQTT message; blocking waiters get the Task once it is
terminal or interrupted (Profile: Streaming Reply Mapping 1-7, Optional Task Handover, Requester
Retry 4: retried requests attach to the existing task).

Nothing here publishes (docs/architecture.md, principle 3: state decides, an outbox publishes). The
caller hands what a call returns to the runtime's :class:`~.outbox.Outbox`, deciding and sending in
one go so that messages leave in the order they were decided::

    with runtime.outbox.in_order():
        runtime.outbox.send(runtime.update(task_id, state=states.WORKING).outgoing)

A unit test checks every rule as plain values, with no broker and no session.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional, Sequence

from ..error_base import A2ANbError
from ..protocol import errors, inbound, jsonrpc, messages, properties, states, task_events
from ..protocol.artifacts import ArtifactSet
from ..protocol.errors import A2AError
from ..protocol.packet import MqttMessage, encode_json
from ..protocol.streams import STREAM_SEQ
from .live import LiveAgent
from .outbox import Outbox
from .reply_paths import BLOCKING, STREAM, Listener, Outgoing, Seal
from .store import MemoryTaskStore, TaskRecord, TaskStore

log = logging.getLogger(__name__)


class TaskCanceled(A2ANbError):
    """Raised inside a handler when its task was canceled: the work stops there."""


class Update(NamedTuple):
    """What one change of a task did: the task as stored now, and what it sends, in order."""

    record: TaskRecord
    outgoing: list[Outgoing]


class Received(NamedTuple):
    """What a SendMessage did: ``what`` is ``inbound.SEND_NEW`` or ``SEND_CONTINUE`` (the handler
    runs on the message) or ``SEND_DUPLICATE`` (a retry, attached to the task: nothing runs)."""

    what: str
    record: TaskRecord
    outgoing: list[Outgoing]


@dataclass
class _TaskEntry:
    listeners: list[Listener] = field(default_factory=list)
    cancel: threading.Event = field(default_factory=threading.Event)
    chunk_seq: dict[str, int] = field(default_factory=dict)
    artifacts: Optional[ArtifactSet] = None  # assembled in place, shared with the stored task
    sealed: bool = False  # a ubsp-v1 path waits for it: no task events (their ids and states are metadata)


class TaskRuntime:
    """The tasks of one agent and the instances it spawns, and the rules every change of them obeys.

    ``store``: where tasks are kept (a :class:`~.store.SqliteTaskStore` survives a restart);
    ``clock``: the time stamped on each change. ``outbox``: the agents sharing this runtime and the
    one way their replies leave (the runtime only reads who is live, to decide who sends).
    ``task_events``: ``(org, unit)`` to announce every state change on the event topic of the agent that
    answers for the task (``protocol/task_events.py``: extended observability), None for none."""

    def __init__(self, store: Optional[TaskStore] = None, clock: Callable[[], float] = time.time,
                 outbox: Optional[Outbox] = None, task_events: Optional[tuple[str, str]] = None):
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.task_events = task_events
        self.clock = clock
        self.outbox = outbox or Outbox()
        self.lock = threading.RLock()  # keeps the tables consistent; held for decisions only, never for I/O
        self._entries: dict[str, _TaskEntry] = {}

    # -- agents ----------------------------------------------------------------------------------------
    @property
    def agents(self) -> dict[str, LiveAgent]:
        """The live agents sharing this runtime, by agent id."""
        return self.outbox.agents

    @property
    def unheard_replies(self) -> int:
        """Replies the broker had nobody to deliver to (PUBACK 16: the requester stopped listening)."""
        return self.outbox.unheard

    def register(self, agent: LiveAgent) -> None:
        self.outbox.register(agent)

    def unregister(self, agent: LiveAgent) -> None:
        self.outbox.unregister(agent)

    def sender_for(self, owner: Optional[str], addressed: str) -> Optional[str]:
        """The agent that publishes an answer about a task owned by ``owner`` (None: no task) to a
        request addressed to ``addressed``: the owner while it is live (after a handover, the
        delegate: Profile: Optional Task Handover 2-4), else the addressee; None if neither is live."""
        agents = self.outbox.agents
        if owner is not None and owner in agents:
            return owner
        return addressed if addressed in agents else None

    def owner_of(self, task_id: str) -> Optional[str]:
        rec = self.store.get(task_id)
        return rec.owner if rec else None

    def hand_over(self, task_id: str, agent: str) -> None:
        """From now on ``agent`` executes and answers for the task (Profile: Optional Task Handover);
        the requester stays the task's. Sends nothing: the next item tells the requester, with
        ``a2a-responder-agent-id``. (The caller first waits until the old owner's items reached the
        broker: see :meth:`~.context.TaskContext.hand_over`.)"""
        with self.lock:
            rec = self.store.get(task_id)
            if rec is not None and rec.owner != agent:
                self.store.put(rec.with_owner(agent, self.clock()))

    # -- tasks -----------------------------------------------------------------------------------------
    def _entry(self, task_id: str) -> _TaskEntry:  # callers hold ``lock``
        e = self._entries.get(task_id)
        if e is None:
            e = self._entries[task_id] = _TaskEntry()
        return e

    def _cancel_set(self, task_id: str) -> bool:
        e = self._entries.get(task_id)
        return e is not None and e.cancel.is_set()

    def get(self, task_id: str) -> Optional[TaskRecord]:
        return self.store.get(task_id)

    def record(self, task_id: str) -> TaskRecord:
        """The stored record of a task that must exist (KeyError otherwise)."""
        rec = self.store.get(task_id)
        if rec is None:
            raise KeyError(task_id)
        return rec

    def task_for(self, task_id: str, caller: str) -> Optional[TaskRecord]:
        """The stored task, or None when it does not exist *for this caller*: someone else's task
        answers like an unknown one (``inbound.visible_to``)."""
        rec = self.store.get(task_id)
        return rec if rec is not None and inbound.visible_to(rec.requester, caller) else None

    @property
    def tracked_tasks(self) -> int:
        """Tasks with live bookkeeping here (listeners, cancel flag); finished tasks leave at once."""
        with self.lock:
            return len(self._entries)

    def create(self, message: dict, owner: str, context_id: str, requester: Optional[str] = None) -> TaskRecord:
        """A new SUBMITTED task, executed by ``owner``, belonging to ``requester`` (who asked)."""
        msg = dict(message)
        msg["contextId"] = context_id
        task = messages.task(message["taskId"], context_id, messages.task_status(states.SUBMITTED), history=[msg])
        rec = TaskRecord(task, owner, self.clock(), requester)
        self.store.put(rec)
        return rec

    # -- requests --------------------------------------------------------------------------------------
    def receive(self, message: dict, caller: str, listener: Listener, *, new_context_id: Callable[[], str],
                immediate: bool = False, admit: Optional[Callable[[dict], Optional[A2AError]]] = None) -> Received:
        """SendMessage / SendStreamingMessage from ``caller``, answered on ``listener``.

        A new Task.id creates the task (unless ``admit`` refuses it: its error is raised and nothing
        is created), new input continues an interrupted task, a retry attaches to the task it
        repeats (a stream gets the Task snapshot first). Someone else's Task.id answers like an unknown
        one: -32001. ``immediate`` (``returnImmediately``): the Task is the answer now."""
        task_id = message["taskId"]
        with self.lock:
            rec = self.store.get(task_id)
            if rec is not None and not inbound.visible_to(rec.requester, caller):
                raise errors.task_not_found(task_id)  # someone else's Task.id: not theirs to continue
            what = inbound.classify_send(rec.task if rec else None, message)
            if rec is not None and what == inbound.SEND_DUPLICATE:
                return Received(what, rec, self.add_listener(task_id, listener, snapshot=listener.kind == STREAM))
            out: list[Outgoing] = []
            if rec is None:
                refused = admit(message) if admit is not None else None
                if refused is not None:
                    raise refused
                rec = self.create(message, listener.received_by, message.get("contextId") or new_context_id(),
                                  requester=caller)
            else:
                rec, out = self.update(task_id, state=states.WORKING, append_history=message)
            if immediate:
                out.append(self.reply(rec, listener.received_by, listener.pooled, listener.response_topic,
                                      listener.correlation, jsonrpc.result_response(
                                          listener.request_id, messages.send_message_result(rec.task))))
            else:
                out += self.add_listener(task_id, listener, snapshot=listener.kind == STREAM, lazy=True)
            return Received(what, rec, out)

    def subscribe(self, task_id: str, caller: str, listener: Listener) -> list[Outgoing]:
        """SubscribeToTask: the stream gets the Task snapshot, then every event. An unknown or
        someone else's task: -32001; a finished one: -32004 (nothing left to subscribe to)."""
        with self.lock:
            rec = self.task_for(task_id, caller)
            inbound.check_subscribe(rec.task if rec else None, task_id)
            return self.add_listener(task_id, listener, snapshot=True)

    def add_listener(self, task_id: str, listener: Listener, snapshot: bool, lazy: bool = False) -> list[Outgoing]:
        """Attach a reply path; a stream listener first gets the Task snapshot when ``snapshot``:
        at once, or with ``lazy`` just before the first task event (so a handler that answers with
        a Message sends that Message as the stream's only item, as A2A requires). A blocking path
        to a task that already stopped (finished or interrupted) gets the Task at once."""
        out: list[Outgoing] = []
        with self.lock:
            rec = self.store.get(task_id)
            if snapshot and lazy:
                listener.needs_snapshot = True
            elif snapshot and rec is not None:
                self._send(out, rec, listener, messages.stream_task(trim_history(rec.task, listener.history_length)))
            if rec is not None and listener.kind == BLOCKING and not states.is_active(rec.state):
                self._send(out, rec, listener, messages.send_message_result(trim_history(rec.task, listener.history_length)))
                return out
            if rec is not None and listener.kind == STREAM and states.ends_stream(rec.state):
                return out
            entry = self._entry(task_id)
            entry.listeners.append(listener)
            entry.sealed = entry.sealed or listener.seal is not None
        return out

    def update(self, task_id: str, *, state: Optional[str] = None, status_message: Optional[dict] = None,
               artifact_event: Optional[dict] = None, append_history: Optional[dict] = None,
               force: bool = False, skip: Sequence[Listener] = ()) -> Update:
        """Apply one change, store it and decide what every listener gets. Raises TaskCanceled if
        the task was canceled meanwhile (unless ``force``, used by CancelTask itself), ValueError
        for a change the state machine refuses (a terminal task never changes); nothing is stored
        or sent then."""
        out: list[Outgoing] = []
        with self.lock:
            rec = self.store.get(task_id)
            if rec is None:
                raise KeyError(task_id)
            before = rec.task
            if not force and (rec.state == states.CANCELED or self._cancel_set(task_id)):
                raise TaskCanceled(task_id)
            if state is not None and not states.can_transition(rec.state, state):
                raise ValueError(f"task {task_id}: {states.short_name(rec.state)} cannot become {states.short_name(state)}")
            entry = self._entry(task_id)
            task = dict(rec.task)
            if append_history is not None:
                task["history"] = list(task.get("history", [])) + [append_history]
            streaming = any(l.kind == STREAM for l in entry.listeners)  # events are built only for streams
            events: list[dict] = []
            if artifact_event is not None:
                if entry.artifacts is None:
                    entry.artifacts = ArtifactSet(task.get("artifacts"))
                entry.artifacts.apply(artifact_event, copy_event=False)
                task["artifacts"] = entry.artifacts.shared_list()
                if streaming:
                    events.append(messages.stream_artifact(artifact_event))
            if state is not None:
                status = messages.task_status(state, status_message)
                task["status"] = status
                if status_message is not None:
                    task["history"] = list(task.get("history", [])) + [status_message]
                if streaming:
                    events.append(messages.stream_status(messages.status_update(task_id, task["contextId"], status)))
            rec = rec.with_task(task, self.clock())
            self.store.put(rec, durable=state is not None or append_history is not None)
            if entry.listeners:
                self._notify(out, rec, entry, events, skip, before)
            if state is not None and (before.get("status") or {}).get("state") != rec.state:
                self._announce(out, rec, entry)
            if states.is_terminal(rec.state) and not entry.listeners:
                del self._entries[task_id]  # nothing more will happen to it: keep memory bounded
        return Update(rec, out)

    def cancel(self, task_id: str, caller: str) -> Update:
        """CancelTask from ``caller``: the task becomes CANCELED (streams get that final event,
        blocking waiters the Task) and its handler's next runtime call, ``check_canceled`` or
        ``wait`` raises :class:`TaskCanceled`. An unknown or someone else's task: -32001; a
        finished one: -32002 (not cancelable); nothing changes then."""
        with self.lock:
            rec = self.task_for(task_id, caller)
            inbound.check_cancel(rec.task if rec else None, task_id)
            self._entry(task_id).cancel.set()
            return self.update(task_id, state=states.CANCELED, force=True)

    def binary_requested(self, task_id: str) -> bool:
        """Does a requester waiting for this task want native binary chunks (``a2a-artifact-mode: binary``,
        granted: Optional MQTT Native Binary Artifact Mode 2-4)? An agent may then add raw artifacts."""
        with self.lock:
            entry = self._entries.get(task_id)
            return entry is not None and any(l.artifact_mode == properties.MODE_BINARY for l in entry.listeners)

    def cancel_flag(self, task_id: str) -> threading.Event:
        """Set once the task is canceled: what a handler checks, or waits on instead of sleeping."""
        with self.lock:
            entry = self._entries.get(task_id)
            if entry is not None:
                return entry.cancel
            rec = self.store.get(task_id)
            if rec is None or not states.is_terminal(rec.state):
                return self._entry(task_id).cancel
            flag = threading.Event()  # a finished task keeps no bookkeeping here
            if rec.state == states.CANCELED:
                flag.set()
            return flag

    def complete_with_message(self, task_id: str, message: dict) -> Update:
        """The handler answered with a Message: each waiting request gets ``{"message": ...}`` as its
        answer (a stream's only item), then the stored task completes with that message."""
        out: list[Outgoing] = []
        with self.lock:
            rec = self.record(task_id)
            if rec.state == states.CANCELED or self._cancel_set(task_id):
                raise TaskCanceled(task_id)
            entry = self._entry(task_id)
            waiting, entry.listeners = [l for l in entry.listeners if l.open], []
            for listener in waiting:
                self._send(out, rec, listener, messages.send_message_result(message))
                listener.closed = True
            done = self.update(task_id, state=states.COMPLETED, status_message=message)
        return Update(done.record, out + done.outgoing)

    def binary_chunk(self, task_id: str, artifact_id: str, data: bytes, content_type: Optional[str],
                     last: bool) -> Update:
        """One artifact chunk: raw bytes to binary-mode stream listeners, base64 JSON to the others,
        and appended to the stored artifact (Profile: Optional MQTT Native Binary Artifact Mode)."""
        out: list[Outgoing] = []
        with self.lock:
            rec = self.record(task_id)
            if rec.state == states.CANCELED or self._cancel_set(task_id):
                raise TaskCanceled(task_id)
            entry = self._entry(task_id)
            seqno = entry.chunk_seq.get(artifact_id, 0)
            entry.chunk_seq[artifact_id] = seqno + 1
            binary = [l for l in entry.listeners if l.kind == STREAM and l.artifact_mode == properties.MODE_BINARY]
            for listener in binary:
                self._snapshot_first(out, rec, listener, rec.task)
                self._send_raw(out, rec, listener, data, content_type, artifact_id, seqno, last)
            part = messages.raw_part(data, media_type=content_type)
            event = messages.artifact_update(task_id, rec.task["contextId"], messages.artifact(artifact_id, [part]),
                                             append=seqno > 0, last_chunk=last)
            done = self.update(task_id, artifact_event=event, skip=binary)
        return Update(done.record, out + done.outgoing)

    def reply(self, rec: Optional[TaskRecord], received_by: str, pooled: bool, response_topic: str,
              correlation: bytes, payload: dict, seal: Optional[Seal] = None) -> Outgoing:
        """One answer to one request (a result or an error), sent by whoever answers for the task
        now; ``a2a-responder-agent-id`` when that is not the addressee, or the request was pooled.
        ``seal``: a ubsp-v1 request's answer is sealed to its requester."""
        sender = self.sender_for(rec.owner if rec else None, received_by)
        props = properties.responder_id(sender, received_by, pooled) if sender else ()
        msg = MqttMessage(response_topic, encode_json(payload), qos=1, correlation_data=correlation,
                          user_properties=tuple(props))
        return Outgoing(*_sealed(sender, msg, seal))

    def _announce(self, out: list[Outgoing], rec: TaskRecord, entry: _TaskEntry) -> None:
        """The task's new state on its answering agent's event topic, when this runtime announces them."""
        if self.task_events is None or entry.sealed:
            return
        sender = self.sender_for(rec.owner, rec.owner or "")
        if sender is not None:
            org, unit = self.task_events
            status = rec.task["status"]
            out.append(Outgoing(sender, task_events.task_event(org, unit, sender, rec.id, rec.task["contextId"],
                                                               status["state"], status.get("timestamp"))))

    # -- what each listener gets -----------------------------------------------------------------------
    def _notify(self, out: list[Outgoing], rec: TaskRecord, entry: _TaskEntry, events: list[dict],
                skip: Sequence[Listener] = (), before: Optional[dict] = None) -> None:
        final = states.ends_stream(rec.state)
        for listener in list(entry.listeners):
            if listener.kind == STREAM and any(listener is s for s in skip):
                continue
            if listener.kind == STREAM:
                self._snapshot_first(out, rec, listener, before if before is not None else rec.task)
                for ev in events:
                    self._send(out, rec, listener, ev)
                if final:
                    listener.closed = True
            elif final:
                self._send(out, rec, listener, messages.send_message_result(trim_history(rec.task, listener.history_length)))
                listener.closed = True
        entry.listeners = [l for l in entry.listeners if l.open]

    def _snapshot_first(self, out: list[Outgoing], rec: TaskRecord, listener: Listener, task_before: dict) -> None:
        if listener.needs_snapshot:
            listener.needs_snapshot = False
            self._send(out, rec, listener, messages.stream_task(trim_history(task_before, listener.history_length)))

    def _send(self, out: list[Outgoing], rec: Optional[TaskRecord], listener: Listener, result: dict) -> None:
        """One JSON-RPC result on a reply path; a stream item repeating an earlier one byte for byte
        is numbered with ``a2a-stream-seq`` (see :mod:`a2a_nb.protocol.streams`)."""
        if not listener.open:
            return
        payload = encode_json(jsonrpc.result_response(listener.request_id, result))
        seq = listener.numbering.seq_for(payload) if listener.kind == STREAM else None
        self._emit(out, rec, listener, payload, ((STREAM_SEQ, seq),) if seq else ())

    def _send_raw(self, out: list[Outgoing], rec: TaskRecord, listener: Listener, data: bytes,
                  content_type: Optional[str], artifact_id: str, seqno: int, last: bool) -> None:
        """A native binary chunk: its ``a2a-chunk-seqno`` tells it from a copy (Binary Artifact Mode 8-9)."""
        if not listener.open:
            return
        props = properties.chunk_properties(rec.id, artifact_id, seqno, last, context_id=rec.task.get("contextId"))
        self._emit(out, rec, listener, bytes(data), props, payload_format=0, content_type=content_type)

    def _emit(self, out: list[Outgoing], rec: Optional[TaskRecord], listener: Listener, payload: bytes,
              extra: tuple, payload_format: Optional[int] = None, content_type: Optional[str] = None) -> None:
        """JSON replies go out bare (JSON is the profile's baseline, and every extra MQTT property
        costs paho real time per message); binary chunks carry PFI 0 and their Content Type. The
        sender is decided now, with the item: whoever answers for the task at this point."""
        sender = self.sender_for(rec.owner if rec else None, listener.received_by)
        props: tuple = ()
        if sender is not None:
            props = properties.responder_id(sender, listener.received_by, listener.pooled, listener.announced)
            if props:
                listener.announced = sender
            if listener.artifact_mode is not None:
                props += ((properties.ARTIFACT_MODE, listener.artifact_mode),)
            props += extra
        msg = MqttMessage(listener.response_topic, payload, qos=1, correlation_data=listener.correlation,
                          user_properties=props, content_type=content_type, payload_format=payload_format)
        out.append(Outgoing(*_sealed(sender, msg, listener.seal), listener))


def _sealed(sender: Optional[str], msg: MqttMessage, seal: Optional[Seal]) -> tuple[Optional[str], MqttMessage]:
    """``(sender, message)``, the message sealed when its path asks for it; a message that cannot be
    sealed has no sender (the outbox drops it, the path is lost): never sent in plaintext."""
    if seal is None or sender is None:
        return sender, msg
    sealed = seal(msg, sender)
    return (sender, sealed) if sealed is not None else (None, msg)


def trim_history(task: dict, history_length: Optional[int]) -> dict:
    """The task with only its last ``history_length`` history messages (GetTask ``historyLength``)."""
    if history_length is None or "history" not in task:
        return task
    t = dict(task)
    t["history"] = task["history"][-history_length:] if history_length else []
    if not t["history"]:
        del t["history"]
    return t

"""The task runtime a card agent shares with the instances it spawns.

It owns the task store, who is listening to each task (blocking waiters and stream subscribers, by
their Response Topic + Correlation Data), and which agent answers for each task now. Every change of
a task goes through :meth:`TaskRuntime.update`, which checks the state machine, stores the task and
tells the listeners: stream subscribers get each event as its own MQTT message; blocking waiters get
the Task once it is terminal or interrupted (Profile: Streaming Reply Mapping 1-7, Optional Task
Handover, Requester Retry 4: retried requests attach to the existing task).

The runtime decides what to send to whom; its :class:`~a2a_nb.agents.outbox.Outbox` publishes it.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..protocol import jsonrpc, messages, properties, states
from ..protocol.artifacts import ArtifactSet
from ..protocol.packet import MqttMessage, encode_json
from ..protocol.streams import STREAM_SEQ, StreamNumbering
from .outbox import Outbox
from .store import MemoryTaskStore, TaskRecord, TaskStore

if TYPE_CHECKING:
    from .responder import Responder

log = logging.getLogger(__name__)

BLOCKING, STREAM = "blocking", "stream"


class TaskCanceled(Exception):
    """Raised inside a handler when its task was canceled: the work stops there."""


@dataclass
class Listener:
    """A reply path waiting for a task: Response Topic + Correlation Data + the JSON-RPC id."""

    kind: str  # BLOCKING or STREAM
    response_topic: str
    correlation: bytes
    request_id: Any
    received_by: str  # the agent the request was addressed to
    pooled: bool = False
    artifact_mode: Optional[str] = None  # the chosen mode, when the request asked for one
    history_length: Optional[int] = None
    announced: Optional[str] = None  # last a2a-responder-agent-id sent on this path
    numbering: StreamNumbering = field(default_factory=StreamNumbering)  # a2a-stream-seq of repeats
    closed: bool = False
    needs_snapshot: bool = False  # a new stream: the Task snapshot goes out just before its first event


@dataclass
class _TaskEntry:
    listeners: list[Listener] = field(default_factory=list)
    cancel: threading.Event = field(default_factory=threading.Event)
    chunk_seq: dict[str, int] = field(default_factory=dict)
    artifacts: Optional[ArtifactSet] = None  # assembled in place, shared with the stored task


class TaskRuntime:
    def __init__(self, store: Optional[TaskStore] = None, clock: Callable[[], float] = time.time,
                 outbox: Optional[Outbox] = None):
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.clock = clock
        self.outbox = outbox or Outbox()
        self.lock = threading.RLock()
        self._entries: dict[str, _TaskEntry] = {}

    # -- agents ----------------------------------------------------------------------------------------
    @property
    def agents(self) -> dict[str, "Responder"]:
        """The live agents sharing this runtime, by agent id."""
        return self.outbox.agents

    @property
    def unheard_replies(self) -> int:
        """Replies the broker had nobody to deliver to (PUBACK 16: the requester stopped listening)."""
        return self.outbox.unheard

    def register(self, responder: "Responder") -> None:
        self.outbox.register(responder)

    def unregister(self, responder: "Responder") -> None:
        self.outbox.unregister(responder)

    def owner_of(self, task_id: str) -> Optional[str]:
        rec = self.store.get(task_id)
        return rec.owner if rec else None

    def hand_over(self, task_id: str, agent: str) -> None:
        """From now on ``agent`` executes and answers for the task (Profile: Optional Task Handover).

        What the old owner already published must reach the broker first: two client connections
        have no common order, so without this the new owner's first items could overtake the old
        owner's last ones on the requester's reply topic."""
        old = self.owner_of(task_id)
        if old is not None and old != agent:
            self.outbox.wait_acked(old, 2.0)
        with self.lock:
            rec = self.store.get(task_id)
            if rec is not None and rec.owner != agent:
                self.store.put(rec.with_owner(agent, self.clock()))  # the requester stays the task's

    # -- tasks -----------------------------------------------------------------------------------------
    def _entry(self, task_id: str) -> _TaskEntry:
        with self.lock:
            e = self._entries.get(task_id)
            if e is None:
                e = self._entries[task_id] = _TaskEntry()
            return e

    def get(self, task_id: str) -> Optional[TaskRecord]:
        return self.store.get(task_id)

    def record(self, task_id: str) -> TaskRecord:
        """The stored record of a task that must exist (KeyError otherwise)."""
        rec = self.store.get(task_id)
        if rec is None:
            raise KeyError(task_id)
        return rec

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

    def add_listener(self, task_id: str, listener: Listener, snapshot: bool, lazy: bool = False) -> None:
        """Attach a reply path; a stream listener first gets the Task snapshot when ``snapshot``:
        at once, or with ``lazy`` just before the first task event (so a handler that answers with
        a Message sends that Message as the stream's only item, as A2A requires)."""
        with self.lock:
            rec = self.store.get(task_id)
            if snapshot and lazy:
                listener.needs_snapshot = True
            elif snapshot and rec is not None:
                self._send(rec, listener, messages.stream_task(trim_history(rec.task, listener.history_length)))
            if rec is not None and listener.kind == BLOCKING and not states.is_active(rec.state):
                self._send(rec, listener, messages.send_message_result(trim_history(rec.task, listener.history_length)))
                return
            if rec is not None and listener.kind == STREAM and states.ends_stream(rec.state):
                return
            self._entry(task_id).listeners.append(listener)

    def update(self, task_id: str, *, state: Optional[str] = None, status_message: Optional[dict] = None,
               artifact_event: Optional[dict] = None, append_history: Optional[dict] = None,
               force: bool = False, skip: Sequence[Listener] = ()) -> TaskRecord:
        """Apply one change, store it and tell every listener. Raises TaskCanceled if the task was
        canceled meanwhile (unless ``force``, used by CancelTask itself)."""
        with self.lock:
            rec = self.store.get(task_id)
            if rec is None:
                raise KeyError(task_id)
            before = rec.task
            entry = self._entry(task_id)
            if (entry.cancel.is_set() or rec.state == states.CANCELED) and not force:
                raise TaskCanceled(task_id)
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
                old = rec.state
                if not states.can_transition(old, state):
                    raise ValueError(f"task {task_id}: {states.short_name(old)} cannot become {states.short_name(state)}")
                status = messages.task_status(state, status_message)
                task["status"] = status
                if status_message is not None:
                    task["history"] = list(task.get("history", [])) + [status_message]
                if streaming:
                    events.append(messages.stream_status(messages.status_update(task_id, task["contextId"], status)))
            rec = rec.with_task(task, self.clock())
            self.store.put(rec, durable=state is not None or append_history is not None)
            if entry.listeners:
                self._notify(rec, entry, events, skip, before)
            if states.is_terminal(rec.state) and not entry.listeners:
                del self._entries[task_id]  # nothing more will happen to it: keep memory bounded
            return rec

    def cancel(self, task_id: str) -> TaskRecord:
        """CancelTask: the task becomes CANCELED and its handler's next runtime call, ``check_canceled``
        or ``wait`` raises :class:`TaskCanceled` (the caller checked first that it may be canceled)."""
        with self.lock:
            self._entry(task_id).cancel.set()
            return self.update(task_id, state=states.CANCELED, force=True)

    def cancel_flag(self, task_id: str) -> threading.Event:
        """Set once the task is canceled: what a handler checks, or waits on instead of sleeping."""
        return self._entry(task_id).cancel

    def complete_with_message(self, task_id: str, message: dict) -> TaskRecord:
        """The handler answered with a Message: each waiting request gets ``{"message": ...}`` as its
        answer (a stream's only item), then the stored task completes with that message. The reply
        is published first: from a worker thread it leaves before the bookkeeping; an ``inline``
        agent's network thread writes it once the request is handled."""
        with self.lock:
            entry = self._entry(task_id)
            waiting, entry.listeners = [l for l in entry.listeners if not l.closed], []
            rec = self.store.get(task_id)
            for listener in waiting:
                self._send(rec, listener, messages.send_message_result(message))
                listener.closed = True
            return self.update(task_id, state=states.COMPLETED, status_message=message)

    def _snapshot_first(self, rec: TaskRecord, listener: Listener, task_before: dict) -> None:
        if listener.needs_snapshot:
            listener.needs_snapshot = False
            self._send(rec, listener, messages.stream_task(trim_history(task_before, listener.history_length)))

    def _notify(self, rec: TaskRecord, entry: _TaskEntry, events: list[dict], skip=(), before=None) -> None:
        final = states.ends_stream(rec.state)
        for listener in list(entry.listeners):
            if listener.kind == STREAM and any(listener is s for s in skip):
                continue
            if listener.kind == STREAM:
                self._snapshot_first(rec, listener, before if before is not None else rec.task)
                for ev in events:
                    self._send(rec, listener, ev)
                if final:
                    listener.closed = True
            elif final:
                self._send(rec, listener, messages.send_message_result(trim_history(rec.task, listener.history_length)))
                listener.closed = True
        entry.listeners = [l for l in entry.listeners if not l.closed]

    def send_binary_chunk(self, task_id: str, artifact_id: str, data: bytes, content_type: Optional[str],
                          last: bool) -> None:
        """One artifact chunk: raw bytes to binary-mode stream listeners, base64 JSON to the others,
        and appended to the stored artifact (Profile: Optional MQTT Native Binary Artifact Mode)."""
        with self.lock:
            entry = self._entry(task_id)
            seqno = entry.chunk_seq.get(artifact_id, 0)
            entry.chunk_seq[artifact_id] = seqno + 1
            rec = self.record(task_id)
            binary = [l for l in entry.listeners if l.kind == STREAM and l.artifact_mode == properties.MODE_BINARY]
            for listener in binary:
                self._snapshot_first(rec, listener, rec.task)
                self._send_raw(rec, listener, data, content_type, artifact_id, seqno, last)
            part = messages.raw_part(data, media_type=content_type)
            event = messages.artifact_update(task_id, rec.task["contextId"], messages.artifact(artifact_id, [part]),
                                             append=seqno > 0, last_chunk=last)
            self.update(task_id, artifact_event=event, skip=binary)

    # -- publishing (through the outbox) ---------------------------------------------------------------
    def reply(self, rec: Optional[TaskRecord], received_by: str, pooled: bool, response_topic: str,
              correlation: bytes, payload: dict) -> None:
        """One answer to one request (a result or an error), published by whoever answers for the
        task now; ``a2a-responder-agent-id`` when that is not the addressee, or the request was pooled."""
        publisher = self.outbox.publisher(rec.owner if rec else None, received_by)
        props = properties.responder_id(publisher.agent, received_by, pooled) if publisher else ()
        self.outbox.send(publisher, MqttMessage(response_topic, encode_json(payload), qos=1,
                                                correlation_data=correlation, user_properties=tuple(props)))

    def _reply_properties(self, rec: Optional[TaskRecord], listener: Listener, publisher: "Responder") -> list:
        props = list(properties.responder_id(publisher.agent, listener.received_by, listener.pooled, listener.announced))
        if props:
            listener.announced = publisher.agent
        if listener.artifact_mode is not None:
            props.append((properties.ARTIFACT_MODE, listener.artifact_mode))
        return props

    def _send(self, rec: Optional[TaskRecord], listener: Listener, result: dict) -> None:
        if listener.closed:
            return
        payload = encode_json(jsonrpc.result_response(listener.request_id, result))
        seq = listener.numbering.seq_for(payload) if listener.kind == STREAM else None
        self._publish(rec, listener, payload, [(STREAM_SEQ, seq)] if seq else [])

    def _send_raw(self, rec, listener: Listener, data: bytes, content_type, artifact_id, seqno, last) -> None:
        """A native binary chunk: its ``a2a-chunk-seqno`` tells it from a copy (Binary Artifact Mode 8-9)."""
        props = properties.chunk_properties(rec.id, artifact_id, seqno, last, context_id=rec.task.get("contextId"))
        self._publish(rec, listener, bytes(data), list(props), payload_format=0, content_type=content_type)

    def _publish(self, rec, listener: Listener, payload: bytes, extra: list, payload_format: Optional[int] = None,
                 content_type: Optional[str] = None) -> None:
        """JSON replies go out bare (JSON is the profile's baseline, and every extra MQTT property
        costs paho real time per message); binary chunks carry PFI 0 and their Content Type."""
        if listener.closed:
            return
        publisher = self.outbox.publisher(rec.owner if rec else None, listener.received_by)
        props = tuple(self._reply_properties(rec, listener, publisher) + list(extra)) if publisher else ()
        sent = self.outbox.send(publisher, MqttMessage(listener.response_topic, payload, qos=1,
                                                       correlation_data=listener.correlation, user_properties=props,
                                                       content_type=content_type, payload_format=payload_format))
        if not sent:
            # An item this path will never see: a stream must not go on with a hole in it. Closing
            # the path lets the requester's stall recovery (GetTask, SubscribeToTask) take over.
            listener.closed = True


def trim_history(task: dict, history_length: Optional[int]) -> dict:
    """The task with only its last ``history_length`` history messages (GetTask ``historyLength``)."""
    if history_length is None or "history" not in task:
        return task
    t = dict(task)
    t["history"] = task["history"][-history_length:] if history_length else []
    if not t["history"]:
        del t["history"]
    return t


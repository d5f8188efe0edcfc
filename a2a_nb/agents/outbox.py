"""The outbox: publishes what the task runtime decided, from the right agent's connection.

The runtime decides each message and the agent that sends it (:class:`~.reply_paths.Outgoing`);
this is the one place its decisions become MQTT publishes (DESIGN principle 3: state decides, an
outbox publishes). Three things are kept here, none of them a protocol rule:

* the live agents sharing one runtime (a card agent and the instances it spawns), by agent id;
* **turns**: a task's decision and the publishing of what it decided happen in one turn of that
  task (``with outbox.turn(task_id): outbox.send(runtime.update(...).outgoing)``), so a task's
  messages leave in the order they were decided even when two threads act on one task (a handler
  streaming while a CancelTask or a SubscribeToTask arrives). Other tasks never wait for it, and
  nothing is published while the runtime's own lock is held;
* per agent, the publishes the broker has not acknowledged yet: a handover waits until the old
  owner's last items reached the broker (two connections have no common order: Profile: Optional
  Task Handover), and an agent that is about to die waits for its last replies.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Iterable, Optional

from ..protocol.packet import MqttMessage
from .live import LiveAgent
from .reply_paths import Outgoing

if TYPE_CHECKING:
    from ..mqtt.session import PublishResult

log = logging.getLogger(__name__)


class Outbox:
    """The agents that share one task runtime, and the one way their replies leave."""

    def __init__(self) -> None:
        self.agents: dict[str, LiveAgent] = {}
        self.dropped = 0  # replies that could not be published (no live agent, a dead connection)
        self.unheard = 0  # replies the broker had nobody to deliver to (PUBACK 16)
        self._lock = threading.Lock()
        self._turns = Turns()
        self._unacked: dict[str, int] = {}
        self._acked = threading.Condition(threading.Lock())

    def register(self, agent: LiveAgent) -> None:
        with self._lock:
            self.agents[agent.agent] = agent

    def unregister(self, agent: LiveAgent) -> None:
        with self._lock:
            if self.agents.get(agent.agent) is agent:
                del self.agents[agent.agent]

    def turn(self, task_id: str) -> "Turn":
        """``with outbox.turn(task_id):`` decide and send; one thread at a time per task."""
        return Turn(self._turns, task_id)

    def send(self, items: Iterable[Outgoing]) -> None:
        """Publish each item (QoS 1) from its sender's connection, in order. An item that cannot go
        out (no live sender, a dead connection) marks its reply path lost: the path's later items
        are skipped, and the requester's timeout and stall recovery take over."""
        for item in items:
            path = item.path
            if path is not None and path.lost:
                continue
            if not self._publish(item.sender, item.message) and path is not None:
                path.lost = True

    def _publish(self, sender: Optional[str], msg: MqttMessage) -> bool:
        agent = self.agents.get(sender) if sender is not None else None
        if agent is None or sender is None:
            self.dropped += 1
            return False
        with self._acked:
            self._unacked[sender] = self._unacked.get(sender, 0) + 1
        try:
            agent.session.publish_then(msg, lambda result: self._on_ack(sender, result))
            return True
        except Exception as exc:  # a dead instance
            self._on_ack(sender, None)
            self.dropped += 1
            log.warning("%s could not publish on %s: %s", sender, msg.topic, exc)
            return False

    def _on_ack(self, agent: str, result: Optional["PublishResult"]) -> None:
        if result is not None and result.no_subscribers:
            self.unheard += 1
        with self._acked:
            left = self._unacked[agent] = self._unacked.get(agent, 1) - 1
            if left == 0:  # what ``wait_acked`` waits for; a stream's other PUBACKs wake nobody
                self._acked.notify_all()

    def wait_acked(self, agent: str, timeout: float) -> bool:
        """Wait until the broker acknowledged everything ``agent`` published; False on timeout."""
        with self._acked:
            return self._acked.wait_for(lambda: self._unacked.get(agent, 0) == 0, timeout)


class Turns:
    """One lock per task that a thread is acting on right now; a task nobody acts on holds none."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, list] = {}  # task id -> [its lock, threads holding or waiting for it]

    def enter(self, task_id: str) -> None:
        with self._lock:
            slot = self._held.get(task_id)
            if slot is None:
                slot = self._held[task_id] = [threading.Lock(), 0]
            slot[1] += 1
        slot[0].acquire()

    def leave(self, task_id: str) -> None:
        with self._lock:
            slot = self._held[task_id]
            slot[1] -= 1
            if slot[1] == 0:
                del self._held[task_id]
        slot[0].release()

    def __len__(self) -> int:
        return len(self._held)


class Turn:
    """``with`` block of one task's turn (see :meth:`Outbox.turn`)."""

    __slots__ = ("_turns", "_task_id")

    def __init__(self, turns: Turns, task_id: str) -> None:
        self._turns, self._task_id = turns, task_id

    def __enter__(self) -> None:
        self._turns.enter(self._task_id)

    def __exit__(self, *exc: object) -> None:
        self._turns.leave(self._task_id)

"""The outbox: publishes what the task runtime decided, from the right agent's connection.

The runtime decides each message and the agent that sends it (:class:`~.reply_paths.Outgoing`);
this is the one place its decisions become MQTT publishes (docs/architecture.md, principle 3: state
decides, an outbox publishes). Three things are kept here, none of them a protocol rule:

* the live agents sharing one runtime (a card agent and the instances it spawns), by agent id;
* **the order**: a decision and the publishing of what it decided happen in one go
  (``with outbox.in_order(): outbox.send(runtime.update(...).outgoing)``), so messages leave in the
  order they were decided, also when two threads act on one task (a handler streaming while a
  CancelTask or a SubscribeToTask arrives). The runtime's own lock is never held while publishing.
  One order for all the agents sharing the runtime, not one per task: Python runs one thread at a
  time anyway, and a single lock keeps the workers that wait for it asleep instead of contending
  for the interpreter with the network threads (measured with ``python -m benchmarks``: one lock
  per task made the 200-task load run about a quarter slower, with twice the thread switches, and
  delayed pool claims past their takeover time);
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
        self._in_order = threading.RLock()
        self._unacked: dict[str, int] = {}
        self._acked = threading.Condition(threading.Lock())

    def register(self, agent: LiveAgent) -> None:
        with self._lock:
            self.agents[agent.agent] = agent

    def unregister(self, agent: LiveAgent) -> None:
        with self._lock:
            if self.agents.get(agent.agent) is agent:
                del self.agents[agent.agent]

    def in_order(self) -> threading.RLock:
        """``with outbox.in_order():`` decide, then send what was decided, one thread at a time."""
        return self._in_order

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

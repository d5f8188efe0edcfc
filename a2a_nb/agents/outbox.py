"""The outbox: publishes what the task runtime decided, from the right agent's connection.

"Who publishes this reply" is decided here, once: the agent that answers for the task now (after a
handover, the delegate: Profile: Optional Task Handover 2-4), else the agent the request was
addressed to. The outbox also counts, per agent, the publishes the broker has not acknowledged yet:
a handover waits until the old owner's last items reached the broker (two connections have no
common order), and an agent that is about to die waits for its last replies.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Optional

from ..protocol.packet import MqttMessage

if TYPE_CHECKING:
    from ..mqtt.session import PublishResult
    from .responder import Responder

log = logging.getLogger(__name__)


class Outbox:
    """The agents that share one task runtime (a card agent and the instances it spawns), and the
    one way their replies leave."""

    def __init__(self) -> None:
        self.agents: dict[str, "Responder"] = {}
        self.dropped = 0  # replies that could not be published (no live agent, a dead connection)
        self.unheard = 0  # replies the broker had nobody to deliver to (PUBACK 16)
        self._lock = threading.Lock()
        self._unacked: dict[str, int] = {}
        self._acked = threading.Condition()

    def register(self, responder: "Responder") -> None:
        with self._lock:
            self.agents[responder.agent] = responder

    def unregister(self, responder: "Responder") -> None:
        with self._lock:
            if self.agents.get(responder.agent) is responder:
                del self.agents[responder.agent]

    def publisher(self, owner: Optional[str], received_by: str) -> Optional["Responder"]:
        """The agent that publishes an answer about a task owned by ``owner`` (None: no task) to a
        request that was addressed to ``received_by``: the owner while it is live, else the addressee."""
        agents = self.agents
        if owner is not None and owner in agents:
            return agents[owner]
        return agents.get(received_by)

    def send(self, publisher: Optional["Responder"], msg: MqttMessage) -> bool:
        """Publish ``msg`` (QoS 1) from ``publisher``'s connection; False when it could not go out
        (the requester's timeout and fallback take over then)."""
        if publisher is None:
            self.dropped += 1
            return False
        agent = publisher.agent
        with self._acked:
            self._unacked[agent] = self._unacked.get(agent, 0) + 1
        try:
            publisher.session.publish_then(msg, lambda result: self._on_ack(agent, result))
            return True
        except Exception as exc:  # a dead instance
            self._on_ack(agent, None)
            self.dropped += 1
            log.warning("%s could not publish on %s: %s", agent, msg.topic, exc)
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

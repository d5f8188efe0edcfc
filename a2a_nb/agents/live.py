"""What the outbox needs of a live agent: its id and a connection that publishes.

A :class:`~a2a_nb.agents.responder.Responder` is one; so is any small object a unit test builds
(no broker needed). Naming only what is used keeps the outbox, the runtime and a handler's context
below the responder: they never import it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

from ..protocol.packet import MqttMessage

if TYPE_CHECKING:
    from ..mqtt.session import PublishResult


class Connection(Protocol):
    """Publishes one message (QoS 1) and calls ``on_ack`` with the broker's PUBACK result
    (:meth:`a2a_nb.mqtt.session.Session.publish_then`); raises when it cannot publish."""

    def publish_then(self, msg: MqttMessage, on_ack: Callable[["PublishResult"], None]) -> None: ...


class LiveAgent(Protocol):
    """An agent whose replies the outbox can publish."""

    @property
    def agent(self) -> str: ...

    @property
    def session(self) -> Connection: ...

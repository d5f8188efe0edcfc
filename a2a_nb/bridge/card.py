"""The Agent Card an HTTP client fetches from the bridge: the agent's retained MQTT card with the
bridge's HTTP JSON-RPC endpoint added.

Profile: Discovery Interoperability 1-3 (a card MAY also be found at the HTTP well-known URL; a
client picks a binding from ``supportedInterfaces``), Discovery Subscriber Behavior 2-4 (the
retained card is the current registration, a later one replaces it, an empty one unregisters; the
MQTT entry stays as it is, since MQTT cards are authoritative for MQTT routing). A2A v1.0: the first
entry of ``supportedInterfaces`` is the preferred one, so on the card served over HTTP the bridge's
entry comes first.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from ..mqtt.session import Session
from ..protocol import cards, topics
from ..protocol.packet import MqttMessage

log = logging.getLogger(__name__)

JSONRPC_BINDING = "JSONRPC"
"""``protocolBinding`` of A2A's HTTP JSON-RPC binding (``a2a.utils.constants.TransportProtocol.JSONRPC``)."""
WELL_KNOWN_PATH = "/.well-known/agent-card.json"
"""Where an HTTP client looks for an agent's card (A2A v1.0, ``AGENT_CARD_WELL_KNOWN_PATH``)."""


def jsonrpc_interface(url: str) -> dict[str, Any]:
    """The ``supportedInterfaces`` entry of an HTTP JSON-RPC endpoint."""
    return {"url": url, "protocolBinding": JSONRPC_BINDING, "protocolVersion": cards.PROTOCOL_VERSION}


def bridged_card(card: Mapping[str, Any], url: str) -> dict[str, Any]:
    """``card`` with the bridge's endpoint ``url`` as its first (preferred) interface.

    The agent's own entries follow unchanged (an HTTP client may still choose MQTT). The bridge
    delivers no push notifications and serves no extended card, so the capabilities say so.
    """
    others = [i for i in card.get("supportedInterfaces") or [] if not (isinstance(i, Mapping) and i.get("url") == url)]
    out = dict(card)
    out["supportedInterfaces"] = [jsonrpc_interface(url), *others]
    out["capabilities"] = {**(card.get("capabilities") or {}), "pushNotifications": False, "extendedAgentCard": False}
    return out


class CardWatch:
    """The agent's current retained card, read from its discovery topic on ``session``.

    The broker sends the retained card right after the SUBACK, then every replacement: the bridge
    always serves the card the agent publishes now. An empty retained message unregisters (None).
    ``on_card`` (if set) is called on the network thread after each card: an agent announces itself
    again after a broker restart.
    """

    def __init__(self, session: Session, org: str, unit: str, agent: str):
        self.topic = topics.discovery_topic(org, unit, agent)
        self._card: Optional[dict[str, Any]] = None
        self._seen = threading.Event()
        self.on_card: Optional[Callable[[], None]] = None
        session.subscribe(self.topic, handler=self._on_card)

    def _on_card(self, msg: MqttMessage) -> None:
        read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)  # a peer's bytes, bounded
        if read is None:
            return
        if not read.registered:
            self._card = None
            return
        if read.card is None:
            log.warning("ignored a card on %s: %s", self.topic, read.error)
            return
        self._card = read.card
        self._seen.set()
        if self.on_card is not None:
            self.on_card()

    def wait(self, timeout: float) -> Optional[dict[str, Any]]:
        """The card, after waiting up to ``timeout`` s for the first one."""
        self._seen.wait(timeout)
        return self._card

    @property
    def current(self) -> Optional[dict[str, Any]]:
        return self._card

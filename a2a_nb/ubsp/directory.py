"""Where the other side's public keys come from: key metadata read from the broker, then trusted or not.

Profile: Optional Untrusted-Broker Security Profile 5-7; Security Metadata and Trust 1-3. A peer's
key metadata is on the broker: a responder's in its Agent Card (the ``ubsp-v1`` extension's params),
a requester's retained on its event topic (:func:`a2a_nb.protocol.ubsp.key_metadata_message`). The
broker is not trusted, so the metadata only says *where* the keys are: :class:`~.trust.KeyTrust`
decides whether to believe it (a ``jwksUri`` on an allowed HTTPS host; an inline set only when the
operator allows it). No key, no message: nothing is ever sent in plaintext instead.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Optional

from ..mqtt.session import Session
from ..protocol import cards, topics, ubsp
from ..protocol.packet import MqttMessage
from .trust import KeyTrust, UntrustedKeySource

MAX_PEERS = 256
"""Peers whose metadata one agent follows at a time (the least recently used one is dropped)."""
WAIT_S = 2.0
"""How long a first lookup waits for a peer's retained metadata after subscribing to it."""


class KeyDirectory:
    """The key metadata of the peers an agent talks to, followed on the broker, and their trusted keys."""

    def __init__(self, session: Session, trust: KeyTrust, *, max_peers: int = MAX_PEERS, wait_s: float = WAIT_S):
        self.session, self.trust = session, trust
        self.max_peers, self.wait_s = max_peers, wait_s
        self._metadata: "OrderedDict[tuple[str, str, str], Optional[dict[str, Any]]]" = OrderedDict()
        self._arrived = threading.Condition()

    def jwks(self, org: str, unit: str, agent: str) -> dict[str, Any]:
        """The trusted public JWK Set of ``agent``; :class:`UntrustedKeySource` when it has none."""
        metadata = self._lookup(org, unit, agent)
        if metadata is None:
            raise UntrustedKeySource(f"no ubsp-v1 key metadata for {org}/{unit}/{agent} on the broker "
                                     f"(no card extension {ubsp.EXTENSION_URI}, no key-metadata event)")
        return self.trust.jwks_for(metadata)

    def _lookup(self, org: str, unit: str, agent: str) -> Optional[dict[str, Any]]:
        peer = (org, unit, agent)
        with self._arrived:
            if peer in self._metadata:
                self._metadata.move_to_end(peer)
                return self._metadata[peer]
            self._metadata[peer] = None
            dropped = self._metadata.popitem(last=False)[0] if len(self._metadata) > self.max_peers else None
        if dropped is not None:
            self._unfollow(dropped)
        self.session.subscribe(topics.discovery_topic(org, unit, agent), handler=self._on_message)
        self.session.subscribe(topics.event_topic(org, unit, agent), handler=self._on_message)
        with self._arrived:  # retained messages arrive right after the SUBACKs
            self._arrived.wait_for(lambda: self._metadata.get(peer) is not None, self.wait_s)
            return self._metadata.get(peer)

    def _unfollow(self, peer: tuple[str, str, str]) -> None:
        for topic in (topics.discovery_topic(*peer), topics.event_topic(*peer)):
            try:
                self.session.unsubscribe(topic)
            except Exception:  # the session is closing: nothing to follow any more
                pass

    def _on_message(self, msg: MqttMessage) -> None:
        """Network thread: a card or a key-metadata event of a followed peer."""
        found = _read(msg)
        if found is None:
            return
        peer, metadata = found
        with self._arrived:
            if peer in self._metadata:
                self._metadata[peer] = metadata
                self._arrived.notify_all()


def _read(msg: MqttMessage) -> Optional[tuple[tuple[str, str, str], Optional[dict[str, Any]]]]:
    """``((org, unit, agent), metadata)`` from a card or key-metadata message (None metadata: none now)."""
    card = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
    if card is not None:
        metadata = ubsp.card_key_metadata(card.card) if card.card is not None else None
        return (card.org, card.unit, card.agent), metadata
    keys = ubsp.read_key_metadata(msg)
    info = topics.parse_topic(msg.topic)
    if keys is None or info is None:
        return None
    return (info.org, info.unit, keys[0]), keys[1]

"""Where the other side's public keys come from: key metadata read from the broker, then trusted or not.

Profile: Optional Untrusted-Broker Security Profile 5-7; Security Metadata and Trust 1-3. A peer's
key metadata is on the broker: a responder's in its Agent Card (the ``ubsp-v1`` extension's params),
a requester's retained on its event topic (:func:`a2a_nb.protocol.ubsp.key_metadata_message`). The
directory follows both for the agent's org/unit from the start (the retained ones arrive right after
subscribing), so a lookup only reads what arrived: it never subscribes or waits on the network thread
(an agent that answers there, ``ResponderOptions(inline=True)``, must not block it), and a
lookup on the network thread never fetches a ``jwksUri``: it uses what is cached, or fails at once
(a responder opens sealed requests on a worker, where a fetch may wait).

The broker is not trusted, so the metadata only says *where* the keys are: :class:`~.trust.KeyTrust`
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
from .keys import KeySet
from .trust import KeyTrust, UntrustedKeySource

MAX_PEERS = 1024
"""Peers whose key metadata one agent keeps (the least recently used one is dropped first)."""
MAX_UNITS = 16
"""Org/units one agent follows (its own, and those of peers it was asked to reach)."""
WAIT_S = 2.0
"""How long a requester's lookup waits for metadata that has not arrived yet (a card just published)."""

Peer = tuple[str, str, str]


class KeyDirectory:
    """The key metadata of the agents in the org/units it follows, and their trusted keys."""

    def __init__(self, session: Session, trust: KeyTrust, org: str, unit: str, *, max_peers: int = MAX_PEERS):
        self.session, self.trust, self.max_peers = session, trust, max_peers
        self._metadata: "OrderedDict[Peer, dict[str, Any]]" = OrderedDict()
        self._followed: set[tuple[str, str]] = set()
        self._arrived = threading.Condition()
        self.follow(org, unit)

    def follow(self, org: str, unit: str) -> None:
        """Read the cards and key-metadata events of ``org``/``unit`` from now on (SUBACKs awaited:
        call it from the agent's own thread, never from a message handler)."""
        with self._arrived:
            if (org, unit) in self._followed:
                return
            if len(self._followed) >= MAX_UNITS:
                raise UntrustedKeySource(f"this agent already follows {MAX_UNITS} org/units; not {org}/{unit}")
            self._followed.add((org, unit))
        self.session.subscribe(topics.discovery_filter(org, unit), handler=self._on_message)
        self.session.subscribe(f"{topics.PREFIX}/event/{org}/{unit}/+", handler=self._on_message)

    def key_set(self, org: str, unit: str, agent: str, wait: float = 0.0, fetch: bool = True) -> KeySet:
        """The trusted public JWK Set of ``agent``, parsed; :class:`UntrustedKeySource` when it has none.
        ``wait``: seconds to wait for metadata not seen yet (0 on the network thread); ``fetch=False``:
        only keys already at hand (never fetched on the network thread either)."""
        if (org, unit) not in self._followed:
            if not wait:
                raise UntrustedKeySource(f"no ubsp-v1 key metadata for {org}/{unit}/{agent}: {org}/{unit} is not followed")
            self.follow(org, unit)
        peer = (org, unit, agent)
        with self._arrived:
            self._arrived.wait_for(lambda: peer in self._metadata, wait)
            metadata = self._metadata.get(peer)
            if metadata is not None:
                self._metadata.move_to_end(peer)
        if metadata is None:
            raise UntrustedKeySource(f"no ubsp-v1 key metadata for {org}/{unit}/{agent} on the broker "
                                     f"(no card extension {ubsp.EXTENSION_URI}, no key-metadata event)")
        return self.trust.key_set_for(metadata, fetch=fetch and not self.session.on_network_thread())

    def _on_message(self, msg: MqttMessage) -> None:
        """Network thread: a card or an event of the followed org/units."""
        found = _read(msg)
        if found is None:
            return
        peer, metadata = found
        with self._arrived:
            if metadata is None:
                self._metadata.pop(peer, None)
                return
            self._metadata[peer] = metadata
            self._metadata.move_to_end(peer)
            while len(self._metadata) > self.max_peers:
                self._metadata.popitem(last=False)
            self._arrived.notify_all()


def _read(msg: MqttMessage) -> Optional[tuple[Peer, Optional[dict[str, Any]]]]:
    """``((org, unit, agent), metadata)`` from a card or key-metadata message (None metadata: none
    now); None for any other message (another event, a pool member's presence)."""
    card = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
    if card is not None:
        metadata = ubsp.card_key_metadata(card.card) if card.card is not None else None
        return (card.org, card.unit, card.agent), metadata
    keys = ubsp.read_key_metadata(msg)
    info = topics.parse_topic(msg.topic)
    if keys is None or info is None:
        return None
    return (info.org, info.unit, keys[0]), keys[1]

"""Pool dispatch without broker help: which live member claims a pooled request.

Profile: Optional Shared Subscription Dispatch 4 and 13. Members MAY consume the pool through
``$share/{group_id}/...``; how members coordinate is implementation-specific. Some brokers (Eclipse
Mosquitto 2.0.11, the Debian 12 package) never deliver shared subscriptions on topics that start
with ``$``, so ``$share/g/$a2a/...`` stays silent. For those, every member subscribes to the plain
pool topic and exactly one claims each request. Requesters see no difference: they still publish to
the non-shared pool topic.

Who claims: the members announce themselves with a retained *presence* message on their own event
topic ``$a2a/v1/event/{org}/{unit}/{agent}`` (``a2a-status=online``); their Last Will replaces it
with ``a2a-status=offline`` when they die (Profile: Presence and Liveness, applied to pool members,
which have no card). Every member keeps the set of live members and claims a request when it wins
the rendezvous (highest-random-weight) hash of the request's key over that set: every member
computes the same winner, and when a member dies only *its* keys move to the others. The key is
the Task.id, so a requester's retry (same Task.id, new Correlation Data; Profile: Requester Retry
and Timeout Profile) reaches the same live member, or a new one once the first is gone.
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, NamedTuple, Optional

from . import properties, topics
from .ids import validate_identifier
from .messages import task_ids_of
from .packet import MqttMessage, encode_json

PRESENCE_EVENT = "pool-presence"
"""``a2a-event-type`` of a pool member's presence message."""


def pool_key(payload: bytes, correlation: Optional[bytes]) -> str:
    """Task.id of a pooled request when it can be read, else its Correlation Data (hex)."""
    try:
        task_id = task_ids_of(json.loads(payload), {})[0]
    except (ValueError, AttributeError, TypeError):
        task_id = None
    if isinstance(task_id, str) and task_id:
        return task_id
    return (correlation or b"").hex()


def _weight(member: str, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{member}\n{key}".encode()).digest()[:8], "big")


def claim(key: str, members: Iterable[str]) -> str:
    """The member that handles ``key``: the highest ``sha256(member, key)`` among ``members``.

    The answer depends only on the set of names (not on their order), so every member that sees
    the same live set picks the same one; removing a member moves only the keys it had won.
    """
    names = sorted(set(members))
    if not names:
        raise ValueError("a pool has at least one live member (a member counts itself)")
    return max(names, key=lambda name: _weight(name, key))


class Presence(NamedTuple):
    """One pool member's presence: which pool, which agent, online or not."""

    pool: str
    agent: str
    online: bool


def presence_filter(org: str, unit: str) -> str:
    """``$a2a/v1/event/{org}/{unit}/+``: where the members of every pool of a unit announce themselves."""
    validate_identifier(org, "org_id")
    validate_identifier(unit, "unit_id")
    return f"{topics.PREFIX}/event/{org}/{unit}/+"


def presence_message(org: str, unit: str, pool: str, agent: str, status: str, source: str) -> MqttMessage:
    """A member's retained presence on its own event topic (also its Last Will, ``offline``/``lwt``)."""
    return MqttMessage(topics.event_topic(org, unit, agent), encode_json({"pool": pool, "agent": agent}), qos=1,
                       retain=True, content_type="application/json", payload_format=1,
                       user_properties=((properties.EVENT_TYPE, PRESENCE_EVENT),)
                       + properties.presence_properties(status, source))


def read_presence(msg: MqttMessage) -> Optional[Presence]:
    """The presence a message announces, or None when it is not a pool member's presence message."""
    if msg.user_property(properties.EVENT_TYPE) != PRESENCE_EVENT:
        return None
    try:
        body = json.loads(msg.payload)
        pool, agent = body["pool"], body["agent"]
    except (ValueError, TypeError, KeyError):
        return None
    if not (isinstance(pool, str) and isinstance(agent, str)) or not msg.topic.endswith("/" + agent):
        return None  # a presence names the agent of its own topic (the ACL lets it write only there)
    return Presence(pool, agent, msg.user_property(properties.STATUS) == properties.ONLINE)


def card_status(msg: MqttMessage) -> Optional[tuple[str, bool]]:
    """``(agent, online)`` for a discovery (Agent Card) message, else None; a deleted card is offline.

    A member that also has a card (a ticket desk serving a pool) has one will only, its card's: for
    the other members its card going offline is its presence going offline."""
    if not msg.topic.startswith(f"{topics.PREFIX}/discovery/"):
        return None
    online = bool(msg.payload) and msg.user_property(properties.STATUS) != properties.OFFLINE
    return msg.topic.rsplit("/", 1)[1], online


class Membership:
    """Who is live in one pool, as one member sees it (no I/O: the member feeds it what arrives).

    A member is live while its presence says ``online`` and its card, if it has one, does not say
    ``offline``. The member itself always counts: it would not be asking otherwise.
    """

    def __init__(self, me: str, pool: str):
        self.me, self.pool = me, pool
        self._present: set[str] = set()
        self._cards_offline: set[str] = set()
        self.live: frozenset[str] = frozenset({me})

    def saw_presence(self, presence: Presence) -> None:
        if presence.pool != self.pool:
            return
        (self._present.add if presence.online else self._present.discard)(presence.agent)
        self._update()

    def saw_card(self, agent: str, online: bool) -> None:
        (self._cards_offline.discard if online else self._cards_offline.add)(agent)
        self._update()

    def forget(self) -> None:
        """Start over (after a reconnect: the retained messages tell again who is there)."""
        self._present.clear()
        self._cards_offline.clear()
        self._update()

    def _update(self) -> None:
        self.live = frozenset((self._present - self._cards_offline) | {self.me})

    def claims(self, key: str) -> bool:
        """Does this member win ``key`` among the live members?"""
        return claim(key, self.live) == self.me

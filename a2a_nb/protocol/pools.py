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

Two rules keep a client that is not a member from taking a share of the requests:

* **Only allowed members count.** A presence counts only when its agent is on the pool's allow-list
  (``allowed``: names, or a prefix ending in ``*``). On the secure broker (``a2a_nb.mqtt.secure``)
  each login writes only its own event topic, so a name on the list is proven; on an open broker
  anyone can speak for any name, and only the second rule protects the pool.
* **An unclaimed request is taken over.** The winner says it took a request with a *claim* on
  ``$a2a-nb-pool/{org}/{unit}/{pool}/{agent}`` (the request's Correlation Data, no payload; outside
  ``$a2a/``, so recordings do not show it; on the secure broker only the pool's members may write
  there). The other members keep the request: when no claim came within ``takeover_s`` (1 s), its
  winner is *silent* (not live until a claim or an ``online`` presence of it is seen again), and the
  winner among the remaining live members takes it and claims it, naming the silent one (so the
  members that had not waited for it agree). A presence for a member that never answers therefore
  costs the requests that reach it within that second a second's delay, instead of a share of all.

A busy member is not a silent one: a winner whose claims of other requests kept coming in within
the last ``takeover_s`` is behind, and it will claim this one too (a loaded process claims late,
and a takeover then would run the request twice). Its requests wait up to ``MAX_WAIT_S`` before
they are taken over anyway (a winner that does claim, but not this request, had another view of
who is live). And a member judges silence only by what it has read: the responder passes as
``now`` no later than the moment up to which its network thread has read everything.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Generic, Iterable, NamedTuple, Optional, TypeVar

from . import properties, topics
from .ids import validate_identifier
from .messages import task_ids_of
from .packet import MqttMessage, encode_json

PRESENCE_EVENT = "pool-presence"
"""``a2a-event-type`` of a pool member's presence message."""

CLAIMS_PREFIX = "$a2a-nb-pool"
"""Root of the members' claims topics (outside ``$a2a/``: no recorder or lint sees them)."""

TAKEOVER_S = 1.0
"""How long the other members wait for the winner's claim before one of them takes the request.
The claim leaves the winner as the request arrives, so on a working broker it comes within
milliseconds (across a Mosquitto 2.0.11 bridge within about 45 ms: Nagle on the bridge's socket, see
:mod:`a2a_nb.mqtt.bridged`, which carries the claims too); a late claim means the request ran twice,
never that it was lost."""

MAX_WAIT_S = 10.0
"""The longest a request waits for a winner that keeps claiming other requests but not this one."""

MAX_WAITING = 1000
MAX_WAITING_BYTES = 16 * 1024 * 1024
"""Bounds on the requests one member keeps while it waits for their claims (each is kept at most
about ``takeover_s`` per silent winner): beyond them a request is not watched (counted in
``Membership.unwatched``), and it depends on its winner and the requester's retries, as before."""


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


def allows(allowed: Optional[Iterable[str]], agent: str) -> bool:
    """Is ``agent`` on the allow-list? Entries are names or prefixes ending in ``*``
    (``analyst-analysts-*``); ``None`` allows every name (a broker where every client is trusted)."""
    if allowed is None:
        return True
    return any(agent == entry or (entry.endswith("*") and agent.startswith(entry[:-1])) for entry in allowed)


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


def claims_topic(org: str, unit: str, pool: str, agent: str) -> str:
    """``$a2a-nb-pool/{org}/{unit}/{pool}/{agent}``: where ``agent`` claims the pool's requests it takes."""
    for value, what in ((org, "org_id"), (unit, "unit_id"), (pool, "pool_id"), (agent, "agent_id")):
        validate_identifier(value, what)
    return f"{CLAIMS_PREFIX}/{org}/{unit}/{pool}/{agent}"


def claims_filter(org: str, unit: str, pool: str) -> str:
    """``$a2a-nb-pool/{org}/{unit}/{pool}/+``: every member's claims in one pool."""
    return claims_topic(org, unit, pool, "x")[:-1] + "+"


class Claim(NamedTuple):
    """``agent`` took the pooled request with Correlation Data ``correlation``; ``silent``: the
    winner it took the request over from (None: it won the request itself)."""

    agent: str
    correlation: bytes
    silent: Optional[str] = None


MAX_CLAIM_BYTES = 256
"""A claim's payload is empty, or ``{"silent": "<agent>"}`` for a takeover; a longer one is read as empty."""


def claim_message(org: str, unit: str, pool: str, agent: str, correlation: bytes,
                  silent: Optional[str] = None) -> MqttMessage:
    """``agent`` took the pooled request with this Correlation Data (not retained). A takeover names
    the silent winner, so the members that had not found it silent yet agree with this one."""
    payload = b"" if silent is None else encode_json({"silent": silent})
    return MqttMessage(claims_topic(org, unit, pool, agent), payload, qos=1, correlation_data=correlation)


def read_claim(msg: MqttMessage) -> Optional[Claim]:
    """The claim a message makes, or None when it is not one."""
    if not msg.topic.startswith(CLAIMS_PREFIX + "/") or not msg.correlation_data:
        return None
    silent = None
    if msg.payload and len(msg.payload) <= MAX_CLAIM_BYTES:
        try:
            named = json.loads(msg.payload).get("silent")
        except (ValueError, AttributeError):
            named = None
        silent = named if isinstance(named, str) else None
    return Claim(msg.topic.rsplit("/", 1)[1], msg.correlation_data, silent)


def card_status(msg: MqttMessage) -> Optional[tuple[str, bool]]:
    """``(agent, online)`` for a discovery (Agent Card) message, else None; a deleted card is offline.

    A member that also has a card (a ticket desk serving a pool) has one will only, its card's: for
    the other members its card going offline is its presence going offline."""
    if not msg.topic.startswith(f"{topics.PREFIX}/discovery/"):
        return None
    online = bool(msg.payload) and msg.user_property(properties.STATUS) != properties.OFFLINE
    return msg.topic.rsplit("/", 1)[1], online


T = TypeVar("T")


@dataclass
class _Waiting(Generic[T]):
    """A pooled request another member won, kept until that member's claim (or a takeover)."""

    key: str
    winner: str
    deadline: float
    size: int
    request: T
    latest: float  # taken over at this time even from a winner that keeps claiming other requests


class Membership(Generic[T]):
    """Who is live in one pool, as one member sees it, and the requests it watches for a claim (no
    I/O and no clock: the member feeds it what arrives, with the time).

    A member is live while its presence says ``online``, its name is allowed, its card (if it has
    one) does not say ``offline`` and it is not silent. The member itself always counts: it would
    not be asking otherwise. ``allowed``: see :func:`allows`.
    """

    def __init__(self, me: str, pool: str, allowed: Optional[Iterable[str]] = None, *,
                 takeover_s: float = TAKEOVER_S, max_waiting: int = MAX_WAITING,
                 max_waiting_bytes: int = MAX_WAITING_BYTES):
        self.me, self.pool = me, pool
        self.allowed: Optional[tuple[str, ...]] = None if allowed is None else tuple(allowed)
        self.takeover_s, self.max_waiting, self.max_waiting_bytes = takeover_s, max_waiting, max_waiting_bytes
        self._present: set[str] = set()
        self._cards_offline: set[str] = set()
        self._silent: set[str] = set()
        self._last_claim: dict[str, float] = {}  # present member -> when its latest claim was read
        self._waiting: dict[bytes, _Waiting[T]] = {}  # Correlation Data -> a request whose claim is awaited
        self._waiting_bytes = 0
        self.live: frozenset[str] = frozenset({me})
        self.not_allowed = 0  # presence messages that did not count: their agent is not on the allow-list
        self.taken_over = 0  # requests this member took because their winner did not claim them
        self.unwatched = 0  # requests not kept for a takeover (MAX_WAITING / MAX_WAITING_BYTES reached)

    # -- who is live -----------------------------------------------------------------------------------
    def saw_presence(self, presence: Presence) -> None:
        if presence.pool != self.pool:
            return
        if not allows(self.allowed, presence.agent):
            self.not_allowed += 1
            return
        if presence.online:
            self._present.add(presence.agent)
            self._silent.discard(presence.agent)  # (re)started: it gets its chance again
        else:
            self._present.discard(presence.agent)
            self._last_claim.pop(presence.agent, None)
        self._update()

    def saw_card(self, agent: str, online: bool) -> None:
        (self._cards_offline.discard if online else self._cards_offline.add)(agent)
        self._update()

    def forget(self) -> None:
        """Start over (after a reconnect: the retained messages tell again who is there; the
        requesters' retries bring back what was waiting)."""
        self._present.clear()
        self._cards_offline.clear()
        self._silent.clear()
        self._last_claim.clear()
        self._waiting.clear()
        self._waiting_bytes = 0
        self._update()

    def _update(self) -> None:
        self.live = frozenset((self._present - self._cards_offline - self._silent) | {self.me})

    def claims(self, key: str) -> bool:
        """Does this member win ``key`` among the live members?"""
        return claim(key, self.live) == self.me

    # -- claims and takeovers --------------------------------------------------------------------------
    def arrived(self, key: str, correlation: Optional[bytes], request: T, size: int, now: float) -> bool:
        """A pooled request arrived: True when this member takes it now (it wins the hash); else it
        is kept until the winner's claim, or taken over by :meth:`due` (no Correlation Data: nobody
        can answer it, nothing to wait for)."""
        winner = claim(key, self.live)
        if winner == self.me:
            return True
        if not correlation or correlation in self._waiting:
            return False
        if len(self._waiting) >= self.max_waiting or self._waiting_bytes + size > self.max_waiting_bytes:
            self.unwatched += 1
            return False
        self._waiting[correlation] = _Waiting(key, winner, now + self.takeover_s, size, request, now + MAX_WAIT_S)
        self._waiting_bytes += size
        return False

    def saw_claim(self, claim: Claim, now: float) -> None:
        """An allowed member claimed a request (read at ``now``): nobody else takes it, and that
        member is not silent. A takeover's silent winner is silent here too (this member may not
        have waited for it)."""
        if not allows(self.allowed, claim.agent):
            return
        if claim.agent in self._present:  # bounded: only members that announced themselves
            self._last_claim[claim.agent] = now
        gone = self._waiting.pop(claim.correlation, None)
        if gone is not None:
            self._waiting_bytes -= gone.size
        self._silent.discard(claim.agent)
        if claim.silent is not None and claim.silent not in (self.me, claim.agent):
            self._silent.add(claim.silent)
        self._update()

    def due(self, now: float) -> list[tuple[T, str]]:
        """The requests this member takes over at ``now``, each with the winner it takes it from: that
        winner did not claim it within ``takeover_s`` and claimed nothing else meanwhile (or it let
        ``MAX_WAIT_S`` pass), so it is silent, and this member wins the request among the remaining
        live ones. Requests another member wins now wait ``takeover_s`` more for that one's claim."""
        late = {w.winner for w in self._waiting.values()
                if w.winner != self.me and (w.latest <= now or (w.deadline <= now and not self._busy(w.winner, now)))}
        if late:
            self._silent |= late
            self._update()
        mine: list[tuple[T, str]] = []
        for correlation, w in list(self._waiting.items()):
            if w.winner in self.live:
                continue  # its winner still has time to claim it
            winner = claim(w.key, self.live)
            if winner == self.me:
                del self._waiting[correlation]
                self._waiting_bytes -= w.size
                self.taken_over += 1
                mine.append((w.request, w.winner))
            else:
                w.winner, w.deadline, w.latest = winner, now + self.takeover_s, now + MAX_WAIT_S
        return mine

    def _busy(self, member: str, now: float) -> bool:
        """Did ``member`` claim some request within the last ``takeover_s``?"""
        return self._last_claim.get(member, float("-inf")) + self.takeover_s > now

    def next_deadline(self) -> Optional[float]:
        """When :meth:`due` may next have something to hand over (None: nothing is waiting)."""
        return min((min(w.latest, max(w.deadline, self._last_claim.get(w.winner, float("-inf")) + self.takeover_s))
                    for w in self._waiting.values()), default=None)

    @property
    def waiting(self) -> int:
        """How many requests this member keeps until their claim."""
        return len(self._waiting)

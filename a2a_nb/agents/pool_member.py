"""A responder's membership of a pool: how it consumes the pool topic, and, without broker help,
which pooled requests it takes.

Profile: Optional Shared Subscription Dispatch 4-10 and 13 (shared subscriptions / pools), Presence
and Liveness (a pool member's retained presence and its last will). The member consumes
``$share/{group_id}/$a2a/v1/request/{org}/{unit}/pool/{pool}`` when the broker delivers ``$share`` on
``$`` topics (the broker chooses the member), else the plain pool topic with *slot claiming*: it
follows the members' presence and claims, takes the requests it wins and claims them, and takes over
the ones whose winner stays silent. The rules (who wins, when a winner is silent, the bounds) live in
:mod:`a2a_nb.protocol.pools`; this module only wires them to a session and a few threads.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable, Optional

from ..mqtt.session import Session, Subscription
from ..protocol import pools, properties, topics
from ..protocol.packet import LIVE_ONLY, MqttMessage

log = logging.getLogger(__name__)

TAKEOVER_RECHECK_S = 0.05
"""How often a pool member looks again at a request whose claim is overdue but whose winner is busy,
or whose claim its own network thread may not have read yet."""

POOL_DISPATCH = ("auto", "slot")
"""``"auto"``: ``$share`` where the broker delivers it on ``$`` topics, else slot claiming;
``"slot"``: always slot claiming (bridged brokers: a ``$share`` group is per broker)."""


class PoolMember:
    """Agent ``agent``'s membership of pool ``pool`` of ``{org}/{unit}``.

    ``intake``: called with each pooled request this member takes (on the network thread, or on the
    takeover thread); ``frozen``: while it says True, nothing is taken (a dying responder).
    ``members_allowed``, ``takeover_s``: see :class:`a2a_nb.protocol.pools.Membership`.
    """

    def __init__(self, org: str, unit: str, agent: str, pool: str, *, intake: Callable[[MqttMessage], None],
                 frozen: Callable[[], bool], members_allowed: Optional[Iterable[str]] = None,
                 takeover_s: float = pools.TAKEOVER_S, dispatch: str = "auto"):
        if dispatch not in POOL_DISPATCH:
            raise ValueError(f"pool_dispatch is one of {POOL_DISPATCH}, not {dispatch!r}")
        self.org, self.unit, self.agent, self.pool = org, unit, agent, pool
        self.dispatch = dispatch
        self.mode: Optional[str] = None  # "shared" ($share) or "slot" (see protocol/pools.py)
        self.mode_why = ""  # why slot claiming: what the broker said or did
        self._intake, self._frozen = intake, frozen
        # slot mode: who is live in the pool, and the pooled requests waiting for their winner's claim
        self.membership: pools.Membership[MqttMessage] = pools.Membership(
            agent, pool, members_allowed, takeover_s=takeover_s)
        self._lock = threading.Lock()
        self._wake = threading.Event()  # a request started waiting for a claim, or the member stops
        self._stopping = False
        self._session: Optional[Session] = None

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError(f"{self.agent} has not joined pool {self.pool}")
        return self._session

    def presence_message(self, status: str, source: str) -> MqttMessage:
        """This member's retained presence (also its last will, with ``source`` ``lwt``)."""
        return pools.presence_message(self.org, self.unit, self.pool, self.agent, status, source)

    def announce(self, status: str, timeout: float = 5.0) -> None:
        """Publish this member's retained presence (``online`` on joining, ``offline`` on a graceful stop)."""
        self.session.publish(self.presence_message(status, properties.SOURCE_AGENT), timeout=timeout)

    def join(self, session: Session) -> None:
        """Consume the pool via ``$share`` when the broker delivers it on ``$`` topics (and ``dispatch``
        allows it), else via the plain pool topic with slot claiming."""
        self._session = session
        probe = f"$a2a-nb-probe/{self.org}/{self.unit}/{self.agent}"  # a $ topic outside $a2a/: no recorder sees it
        if self.dispatch == "auto" and session.delivers_shared_dollar_topics(probe):
            self.mode = "shared"  # the broker dispatches: presence is only for people watching
            session.subscribe(topics.shared_pool_subscription(self.org, self.unit, self.pool),
                              handler=self._on_request)
            self.announce(properties.ONLINE)
            return
        # Order matters: learn who is live, tell the others (PUBACK: they have it queued), and only then
        # take pool requests, so every member sees this one's presence before a request it could claim.
        # Across a bridge the PUBACK is only this broker's: a member on the other broker may read a request
        # published there before this presence crosses, and both take it (a window of one bridge hop).
        self.mode = "slot"
        self.mode_why = ("the broker's CONNACK says it has no shared subscriptions"
                         if not session.capabilities.shared_subscriptions
                         else "the broker does not deliver $share/ subscriptions on $ topics")
        log.info("%s: pool %s by slot claiming: %s", self.agent, self.pool, self.mode_why)
        self._follow_members()
        self.announce(properties.ONLINE)
        threading.Thread(target=self._watch_claims, name=f"{self.agent}-takeovers", daemon=True).start()
        session.subscribe(Subscription(topics.pool_topic(self.org, self.unit, self.pool), retain_handling=LIVE_ONLY),
                          handler=self._on_request)

    def rejoin(self) -> None:
        """After a reconnect: a broker restarted without persistence has forgotten the retained
        presence, and in slot mode the live members are learnt afresh (Profile: Presence and Liveness)."""
        if self.mode == "slot":
            with self._lock:
                self.membership.forget()
            self._follow_members()
        self.announce(properties.ONLINE)

    def stop(self) -> None:
        """The takeover thread ends; nothing more is taken over."""
        self._stopping = True
        self._wake.set()

    @property
    def live(self) -> frozenset[str]:
        """Slot mode: the members of the pool this one sees live (itself included)."""
        return self.membership.live

    # -- slot mode: following the others (network thread) -------------------------------------------
    def _follow_members(self) -> None:
        """Read the members' presence, and the cards (a member with a card has only its card's will);
        the retained ones arrive right after each SUBACK. And the members' claims."""
        self.session.subscribe(pools.presence_filter(self.org, self.unit), handler=self._on_presence)
        self.session.subscribe(topics.discovery_filter(self.org, self.unit), handler=self._on_member_card)
        self.session.subscribe(pools.claims_filter(self.org, self.unit, self.pool), handler=self._on_claim)

    def _on_member_card(self, msg: MqttMessage) -> None:
        seen = pools.card_status(msg)
        if seen is not None:
            with self._lock:
                self.membership.saw_card(*seen)

    def _on_presence(self, msg: MqttMessage) -> None:
        """Keep the set of live members of this pool (this member always counts itself)."""
        seen = pools.read_presence(msg)
        if seen is not None:
            with self._lock:
                self.membership.saw_presence(seen)

    def _on_claim(self, msg: MqttMessage) -> None:
        """Another member took a pooled request; nobody else waits for it."""
        seen = pools.read_claim(msg)
        if seen is not None and seen.agent != self.agent:
            with self._lock:
                self.membership.saw_claim(seen, time.monotonic())

    # -- taking requests -------------------------------------------------------------------------------
    def _on_request(self, msg: MqttMessage) -> None:
        if self.mode != "slot":
            self._intake(msg)  # the broker chose this member
        elif self._arrived(msg):
            self._take(msg)
        # else another live member wins it; this one takes it over only if that one does not claim it

    def _arrived(self, msg: MqttMessage) -> bool:
        """Slot mode: does this member take the request now (it wins the rendezvous hash among the
        live members)? Else the request waits for its winner's claim. Decided on the network thread
        as the request arrives, so every member decides with the presence messages that came before
        it, in the broker's order."""
        key = pools.pool_key(msg.payload, msg.correlation_data)
        with self._lock:
            take = self.membership.arrived(key, msg.correlation_data, msg, len(msg.payload), time.monotonic())
            first = self.membership.waiting == 1
        if not take and first:  # a later one has a later deadline: the watcher wakes for the earliest anyway
            self._wake.set()
        return take

    def _watch_claims(self) -> None:
        """Slot mode, its own thread: take over the pooled requests whose winner did not claim them
        within ``takeover_s`` and that this member wins among the members left. It judges by what
        its network thread has read: a claim waiting unread in the socket is not silence."""
        while not self._stopping:
            with self._lock:
                deadline = self.membership.next_deadline()
            wait = 1.0 if deadline is None else min(1.0, max(TAKEOVER_RECHECK_S, deadline - time.monotonic()))
            self._wake.wait(wait)
            self._wake.clear()
            read_until = min(time.monotonic(), self.session.read_until)
            with self._lock:
                mine = self.membership.due(read_until)
            for msg, silent in mine:
                if self._stopping:
                    return
                log.info("%s: took over a request of pool %s that %s did not claim", self.agent, self.pool, silent)
                try:
                    self._take(msg, silent)
                except Exception:  # e.g. the session closed meanwhile: the watcher goes on
                    log.exception("%s: could not take over a pooled request", self.agent)

    def _take(self, msg: MqttMessage, silent: Optional[str] = None) -> None:
        """Slot mode: claim the request (the other members stop waiting for it), then run it.
        ``silent``: the winner this member takes it over from."""
        if self._frozen():
            return
        if msg.correlation_data:
            try:
                self.session.publish_then(pools.claim_message(self.org, self.unit, self.pool, self.agent,
                                                              msg.correlation_data, silent), self._claim_acked)
            except Exception as exc:  # no claim: the others take it over too (a duplicate, never a loss)
                log.warning("%s: could not claim a pooled request: %s", self.agent, exc)
        self._intake(msg)

    def _claim_acked(self, result) -> None:
        if not result.accepted:
            log.warning("%s: the broker refused its claim in pool %s (%s): the other members will run its "
                        "requests too; is it a member of the pool on this broker?", self.agent, self.pool, result.reason)

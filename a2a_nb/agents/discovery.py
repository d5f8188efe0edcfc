"""A live registry of Agent Cards seen on the discovery topics.

Profile: Discovery Subscriber Behavior (scoped filter, retained messages are current state, a later
retained message replaces, an empty retained message unregisters), Presence Subscriber Behavior
(``a2a-status`` is advisory; no card means unregistered), Optional Broker-Managed Status (a value
with ``a2a-status-source=broker`` is preferred over the agent's own).

A card is a peer's data: any program that may publish on the discovery topics can put anything
there. Every payload becomes an entry (an empty one unregisters; ``cards.read_card_message`` reads
each message): one that is no usable JSON (``cards.parse_card``: above 64 KiB, nested deeper than 64
levels, not UTF-8 JSON) keeps ``error`` and an empty card, and ``problems`` lists what
``card_schema.card_problems`` finds wrong with any other.
``find`` selects among valid cards only; the views show every entry and mark the invalid ones
("card not valid: skills must be a non-empty list"). At most ``MAX_AGENTS`` (1,000) agents are
kept; the cards of more are left out and noted in ``invalid``.
"""
from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session, SessionError
from ..protocol import card_schema, cards, properties, topics
from ..protocol.packet import MqttMessage


@dataclass
class AgentEntry:
    agent: str
    org: str
    unit: str
    card: dict
    status: Optional[str]
    status_source: Optional[str]
    updated_at: float
    retained: bool
    history: list = field(default_factory=list)  # (time, status, source)
    error: Optional[str] = None  # why the payload is no card at all (then ``card`` is empty)

    @property
    def online(self) -> bool:
        return self.status == properties.ONLINE

    @cached_property
    def problems(self) -> list[str]:
        """What is wrong with the card (``card_schema.card_problems``, or why it is no card); ``[]``
        when valid."""
        return [self.error] if self.error else card_schema.card_problems(self.card)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        """``""`` for a valid card, else one line: ``card not valid: skills must be a non-empty list``
        (the first problem, and how many more)."""
        if not self.problems:
            return ""
        first = self.problems[0].removeprefix("card.")
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"card not valid: {first}{more}"

    @property
    def tags(self) -> set[str]:
        """Every tag of every skill of a valid card (an invalid card offers none)."""
        if not self.valid:
            return set()
        return {t for s in self.card["skills"] for t in s["tags"]}


MAX_HISTORY = 100
"""Presence changes kept per agent (``AgentEntry.history``, the latest)."""


def _skills(card: dict) -> list[dict]:
    skills = card.get("skills")
    return [s for s in skills if isinstance(s, dict)] if isinstance(skills, list) else []


def skill_ids(card: dict) -> list[str]:
    """The ids of a card's skills that have a text id (what of an invalid card is readable)."""
    return [s["id"] for s in _skills(card) if isinstance(s.get("id"), str)]


def skill_tags(card: dict) -> set[str]:
    """The text tags of a card's skills (what of an invalid card is readable)."""
    return {t for s in _skills(card) if isinstance(s.get("tags"), list) for t in s["tags"] if isinstance(t, str)}


def presence_of(read: cards.CardMessage, previous: Optional[AgentEntry]) -> tuple[Optional[str], Optional[str]]:
    """Status and source of a card message; broker-managed status wins while the broker keeps
    sending it (Profile: Optional Broker-Managed Status 4)."""
    status, source = read.status, read.status_source
    if previous is not None and previous.status_source == properties.SOURCE_BROKER and source != properties.SOURCE_BROKER:
        return previous.status, previous.status_source
    return status, source


MAX_AGENTS = 1000
"""Agents a ``Discovery`` keeps; the cards of more are noted in ``invalid``, not kept."""
MAX_INVALID = 100
"""Notes kept in ``Discovery.invalid`` (the latest)."""


SETTLE_QUIET_S = 0.1
"""``settled()`` where the broker refuses the fence subscription: this long without a new card."""


class Discovery:
    """Subscribe to ``$a2a/v1/discovery/{org}/{unit}/+`` and keep the current card of each agent.

    The retained cards arrive right after the subscription, on the network thread: ``Discovery(wait=1.0)``
    (or ``settled()``) returns once they are here, so ``table()`` and ``find()`` see them at once."""

    def __init__(self, org: str = "acme", unit: str = "support", *, agent: str = "discovery",
                 broker: Union[str, BrokerEndpoint, None] = None,
                 on_change: Optional[Callable[[str, Optional[AgentEntry]], None]] = None,
                 wait: Optional[float] = None):
        self.org, self.unit = org, unit
        self.entries: dict[str, AgentEntry] = {}
        self.invalid: collections.deque[tuple[str, str]] = collections.deque(maxlen=MAX_INVALID)  # (topic, why)
        self.on_change = on_change
        self._cond = threading.Condition()
        self.session = Session(org, unit if unit != "+" else "all", agent, broker=broker)
        self.session.subscribe(topics.discovery_filter(org, unit), handler=self._on_card)
        self._last_card = time.monotonic()
        if wait is not None:
            self.settled(wait)

    def settled(self, timeout: float = 1.0) -> bool:
        """Wait (at most ``timeout`` s) until the retained cards the broker had at subscribe time are
        here; True when they are. A second subscription is the fence: the broker queues a
        subscription's retained messages before it answers the next packet. Where it refuses that
        one, a quiet ``SETTLE_QUIET_S`` without a new card counts instead."""
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise TypeError(f"settled(timeout=...) takes seconds (a number >= 0), not {timeout!r}")
        fence = topics.discovery_topic(self.org, self.unit if self.unit != "+" else "all",
                                       f"{self.session.agent}-settled")
        try:
            self.session.subscribe(fence, timeout=max(timeout, 0.001))
            self.session.unsubscribe(fence, timeout=max(timeout, 0.001))
            return True
        except SessionError:
            pass
        deadline = time.monotonic() + timeout
        with self._cond:
            while time.monotonic() - self._last_card < SETTLE_QUIET_S:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, SETTLE_QUIET_S))
        return True

    def _on_card(self, msg: MqttMessage) -> None:
        read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
        if read is None:
            return
        key = read.agent
        with self._cond:
            self._last_card = time.monotonic()
            if not read.registered:  # retained-delete: unregistered
                removed = self.entries.pop(key, None)
                self._cond.notify_all()
                entry = None
                if removed is None:
                    return
            else:
                prev = self.entries.get(key)
                if prev is None and len(self.entries) >= MAX_AGENTS:
                    self.invalid.append((msg.topic, f"not kept: this discovery already holds {MAX_AGENTS} agents"))
                    return
                if read.error is not None:
                    self.invalid.append((msg.topic, read.error))
                status, source = presence_of(read, prev)
                entry = AgentEntry(key, read.org, read.unit, read.card or {}, status, source,
                                   msg.received_at or time.time(), msg.retain,
                                   list(prev.history)[-MAX_HISTORY + 1:] if prev else [], read.error)
                entry.history.append((entry.updated_at, status, source))
                self.entries[key] = entry
                self._cond.notify_all()
        if self.on_change is not None:
            self.on_change(key, entry)

    # -- queries -------------------------------------------------------------------------------------
    def get(self, agent: str) -> Optional[AgentEntry]:
        with self._cond:
            return self.entries.get(agent)

    def agents(self) -> list[str]:
        with self._cond:
            return sorted(self.entries)

    def find(self, tags: Iterable[str] = (), capabilities: Iterable[str] = (), schemes=None,
             online_only: bool = False, valid_only: bool = True) -> list[AgentEntry]:
        """Agents whose card has a skill with all ``tags``, the ``capabilities`` and security
        requirements the ``schemes`` held can satisfy (the walkthrough's three checks).

        Only valid cards (no ``problems``) unless ``valid_only=False``: the discovery browser shows
        the others too, marked."""
        with self._cond:
            entries = list(self.entries.values())
        return [e for e in entries
                if (e.valid or not valid_only)
                and cards.card_matches(e.card, tags=tags, capabilities=capabilities, schemes=schemes)
                and (e.online or not online_only)]

    def wait_for(self, agent: str, status: Optional[str] = None, timeout: float = 5.0,
                 present: bool = True) -> Optional[AgentEntry]:
        """Block until the agent's card is there (with ``status``), or gone when ``present=False``;
        return its entry (None once it is gone).

        Never gives up in silence: after ``timeout`` seconds it raises :class:`TimeoutError` saying
        what it waited for and what it saw, e.g. ``waited 5.0 s for echo to be online; last seen:
        offline (source lwt) at 14:03:05.120; agents seen: echo, ticket-desk``. A closed discovery
        (``close()``, ``a2a_nb.stop_all()``) sees no more cards, so waiting on it raises
        :class:`RuntimeError` at once instead of running out.
        """
        def ready() -> bool:
            e = self.entries.get(agent)
            if not present:
                return e is None
            return e is not None and (status is None or e.status == status)

        deadline = time.monotonic() + timeout
        with self._cond:
            while not ready():
                if self.session.closed:
                    raise RuntimeError(f"cannot wait for {self._goal(agent, status, present)}: this discovery is "
                                       f"closed (close() or a2a_nb.stop_all() was called), so no card reaches it "
                                       f"any more; {self._seen(agent)}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"waited {timeout:g} s for {self._goal(agent, status, present)}; "
                                       f"{self._seen(agent)}")
                self._cond.wait(min(left, 0.25))  # wakes at every card; the slice notices a closed session
            return self.entries.get(agent)

    @staticmethod
    def _goal(agent: str, status: Optional[str], present: bool) -> str:
        if not present:
            return f"the card of {agent} to be removed"
        return f"{agent} to be {status}" if status else f"a card of {agent}"

    def _seen(self, agent: str) -> str:
        """What this discovery holds about ``agent`` and who else it saw (under ``_cond``)."""
        e = self.entries.get(agent)
        if e is None:
            last = f"no card of {agent}"
        else:
            at = time.strftime("%H:%M:%S", time.localtime(e.updated_at)) + f".{int(e.updated_at % 1 * 1000):03d}"
            last = f"{e.status or 'no a2a-status'} (source {e.status_source or 'none'}) at {at}"
        names = sorted(self.entries)
        seen = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        where = topics.discovery_filter(self.org, self.unit)
        return f"last seen: {last}; agents seen on {where}: {seen or 'none'}"

    def table(self) -> list[dict]:
        """One row per agent (for a DataFrame or a printout). A card that is not valid shows what
        of it is readable and says what is wrong in ``why not valid`` (``""`` for a valid card)."""
        with self._cond:
            entries = sorted(self.entries.values(), key=lambda e: e.agent)
        rows = []
        for e in entries:
            name = e.card.get("name")
            caps = e.card.get("capabilities")
            rows.append({"agent": e.agent, "name": name if isinstance(name, str) else None, "status": e.status,
                         "source": e.status_source, "skills": ", ".join(skill_ids(e.card)),
                         "tags": ", ".join(sorted(skill_tags(e.card))),
                         "streaming": isinstance(caps, dict) and caps.get("streaming") is True,
                         "card problems": len(e.problems), "why not valid": e.verdict})
        return rows

    def close(self) -> None:
        self.session.close()
        with self._cond:
            self._cond.notify_all()  # a wait_for in progress says at once that nothing more comes

    def __enter__(self) -> "Discovery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

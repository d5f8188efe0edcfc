"""A live registry of Agent Cards seen on the discovery topics.

Profile: Discovery Subscriber Behavior (scoped filter, retained messages are current state, a later
retained message replaces, an empty retained message unregisters), Presence Subscriber Behavior
(``a2a-status`` is advisory; no card means unregistered), Optional Broker-Managed Status (a value
with ``a2a-status-source=broker`` is preferred over the agent's own).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session
from ..protocol import cards, properties, topics
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

    @property
    def online(self) -> bool:
        return self.status == properties.ONLINE

    @property
    def problems(self) -> list[str]:
        return cards.check_card(self.card)


def presence_of(msg: MqttMessage, previous: Optional[AgentEntry]) -> tuple[Optional[str], Optional[str]]:
    """Status and source of a card message; broker-managed status wins while the broker keeps
    sending it (Profile: Optional Broker-Managed Status 4)."""
    status = msg.user_property(properties.STATUS)
    source = msg.user_property(properties.STATUS_SOURCE)
    if previous is not None and previous.status_source == properties.SOURCE_BROKER and source != properties.SOURCE_BROKER:
        return previous.status, previous.status_source
    return status, source


class Discovery:
    """Subscribe to ``$a2a/v1/discovery/{org}/{unit}/+`` and keep the current card of each agent."""

    def __init__(self, org: str = "acme", unit: str = "support", *, agent: str = "discovery",
                 broker: Union[str, BrokerEndpoint, None] = None,
                 on_change: Optional[Callable[[str, Optional[AgentEntry]], None]] = None):
        self.org, self.unit = org, unit
        self.entries: dict[str, AgentEntry] = {}
        self.invalid: list[tuple[str, str]] = []  # (topic, why)
        self.on_change = on_change
        self._cond = threading.Condition()
        self.session = Session(org, unit if unit != "+" else "all", agent, broker=broker)
        self.session.subscribe(topics.discovery_filter(org, unit), handler=self._on_card)

    def _on_card(self, msg: MqttMessage) -> None:
        info = topics.parse_topic(msg.topic)
        if info is None or info.kind != "discovery" or info.agent is None:
            return
        key = info.agent
        with self._cond:
            if not msg.payload:  # retained-delete: unregistered
                removed = self.entries.pop(key, None)
                self._cond.notify_all()
                entry = None
                if removed is None:
                    return
            else:
                try:
                    card = json.loads(msg.payload)
                except ValueError as exc:
                    self.invalid.append((msg.topic, f"card is not JSON: {exc}"))
                    return
                prev = self.entries.get(key)
                status, source = presence_of(msg, prev)
                entry = AgentEntry(key, info.org, info.unit, card, status, source, msg.received_at or time.time(),
                                   msg.retain, list(prev.history) if prev else [])
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
             online_only: bool = False) -> list[AgentEntry]:
        """Agents whose card has a skill with all ``tags``, the ``capabilities`` and security
        requirements the ``schemes`` held can satisfy (the walkthrough's three checks)."""
        with self._cond:
            entries = list(self.entries.values())
        return [e for e in entries
                if cards.card_matches(e.card, tags=tags, capabilities=capabilities, schemes=schemes)
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
        """One row per agent (for a DataFrame or a printout)."""
        with self._cond:
            entries = sorted(self.entries.values(), key=lambda e: e.agent)
        return [{"agent": e.agent, "name": e.card.get("name"), "status": e.status, "source": e.status_source,
                 "skills": ", ".join(s.get("id", "") for s in e.card.get("skills", [])),
                 "tags": ", ".join(sorted({t for s in e.card.get("skills", []) for t in s.get("tags", [])})),
                 "streaming": bool(e.card.get("capabilities", {}).get("streaming")),
                 "card problems": len(e.problems)} for e in entries]

    def close(self) -> None:
        self.session.close()
        with self._cond:
            self._cond.notify_all()  # a wait_for in progress says at once that nothing more comes

    def __enter__(self) -> "Discovery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

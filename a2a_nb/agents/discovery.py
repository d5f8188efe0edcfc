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
        """Block until the agent's card is there (with ``status``), or gone when ``present=False``."""
        def ready():
            e = self.entries.get(agent)
            if not present:
                return e is None
            return e is not None and (status is None or e.status == status)

        with self._cond:
            self._cond.wait_for(ready, timeout)
            return self.entries.get(agent)

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

    def __enter__(self) -> "Discovery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

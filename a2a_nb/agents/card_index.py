"""Which agents of a unit have an Agent Card: what a :class:`~a2a_nb.agents.requester.Requester`
checks when nobody subscribes to a new task's agent (PUBACK 16), before it waits for a reply that
cannot come (``UnknownAgent``). The index lives only for that check (``with CardIndex(...)``): a
session routes a message to the first subscription that matches it, so a lasting ``+`` filter would
take the cards from a narrower one made later (the bridge's ``CardWatch``).

Profile: Discovery Subscriber Behavior 1-2 (a scoped filter; the retained cards are the current
registrations, an empty retained message unregisters), Presence Subscriber Behavior 3 (no retained
card: the agent is unregistered or unavailable). The broker sends the retained cards right after the
SUBACK: ``wait_for`` a card of the agent is short.

Cards are a peer's data: only their topic's agent name and ``a2a-status`` are kept (``cards.read_card_message``
bounds and parses them), for at most ``MAX_AGENTS`` agents. A login the broker does not let read the
discovery topics leaves the index off (``watching`` False): then nothing is refused for lack of a card.
"""
from __future__ import annotations

import threading
from typing import Optional

from ..mqtt.session import Session, SessionError
from ..protocol import cards, properties, topics
from ..protocol.packet import MqttMessage

MAX_AGENTS = 1000
"""Agents kept; a card of one more is not noted (as ``Discovery.MAX_AGENTS``)."""
NAMES_SHOWN = 12
"""Agents an error message lists before "and N more"."""


class CardIndex:
    """The agents with a retained card on ``$a2a/v1/discovery/{org}/{unit}/+``, and their ``a2a-status``."""

    def __init__(self, session: Session, org: str, unit: str):
        self.org, self.unit = org, unit
        self._status: dict[str, Optional[str]] = {}
        self._cond = threading.Condition()
        self.watching = False
        self._session = session
        self._filter = topics.discovery_filter(org, unit)
        try:
            session.subscribe(self._filter, handler=self._on_card)
            self.watching = True
        except SessionError:  # the login may not read discovery: no check, as `send` does
            pass

    def close(self) -> None:
        """End this index's share of the discovery subscription (others on the session keep theirs)."""
        if self.watching:
            self.watching = False
            try:
                self._session.unsubscribe(self._filter, handler=self._on_card)
            except SessionError:
                pass

    def __enter__(self) -> "CardIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _on_card(self, msg: MqttMessage) -> None:
        read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
        if read is None:
            return
        with self._cond:
            if not read.registered:
                self._status.pop(read.agent, None)
            elif read.agent in self._status or len(self._status) < MAX_AGENTS:
                self._status[read.agent] = read.status
            self._cond.notify_all()

    def wait_for(self, agent: str, timeout: float) -> bool:
        """True once ``agent`` has a card, False after ``timeout`` s without one."""
        with self._cond:
            return self._cond.wait_for(lambda: agent in self._status, timeout)

    def known(self) -> str:
        """``echo, ticket-desk (offline)``: the agents with a card (``none``), for an error message."""
        with self._cond:
            names = sorted(self._status.items())
        shown = ", ".join(name + (" (offline)" if st == properties.OFFLINE else "") for name, st in names[:NAMES_SHOWN])
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        return (shown + more) or "none"

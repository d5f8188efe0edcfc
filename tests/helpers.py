"""Helpers the tests share (one definition each): unique names, a quick retry profile, the exercise
checks' "no answer given away" rule, and clearing the retained cards a test leaves behind."""
from __future__ import annotations

import uuid
from typing import Iterable

from a2a_nb.protocol import topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.retry import RetryProfile

ORG = "acme"

QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=3.0, max_attempts=3, backoff_s=(0.05, 0.1, 0.2))
"""Short waits for tests whose agent is silent on purpose: a retry within a second."""


def uid(prefix: str) -> str:
    """A name of the test's own (``prefix`` and 8 random hex digits): its topics, Client IDs and
    retained messages never meet another test's on the shared broker."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def gives_nothing_away(feedback, *answers: object) -> None:
    """An exercise check said "not yet" without giving any of ``answers`` away in its hint."""
    assert not feedback.right, feedback
    assert "✗ not yet" in str(feedback)
    for answer in answers:
        assert str(answer) not in feedback.message, f"the hint gives {answer!r} away: {feedback.message}"


def clear_cards(broker_url: str, unit: str, agents: Iterable[str], org: str = ORG) -> None:
    """Delete the retained cards of ``agents`` in ``{org}/{unit}`` (an empty retained payload)."""
    from a2a_nb.mqtt.session import Session

    cleaner = Session(org, unit, uid("cleaner"), broker=broker_url)
    try:
        for agent in agents:
            cleaner.publish(MqttMessage(topics.discovery_topic(org, unit, agent), b"", qos=1, retain=True))
    finally:
        cleaner.close()


__all__ = ["ORG", "QUICK", "uid", "gives_nothing_away", "clear_cards"]

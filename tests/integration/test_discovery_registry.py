"""The discovery registry against a real Mosquitto: live state, replacement, removal, selection,
presence preferences (Profile: Discovery Subscriber Behavior, Presence and Liveness,
Optional Broker-Managed Status)."""
from __future__ import annotations

import json
import re
import threading
import time

import pytest

from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.responder import Responder
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, properties, topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import desk_card, echo_card, echo_handler
from tests.waiting import wait_until as _wait


def card(unit: str, agent: str, tags, streaming=True, schemes=None, requirements=None) -> dict:
    return cards.agent_card(name=agent, description="test agent", version="1.0.0", org="acme", unit=unit,
                            agent=agent, skills=[cards.skill("s", "S", "a skill", tags=tags)], streaming=streaming,
                            security_schemes=schemes, security_requirements=requirements)


def test_registry_tracks_online_update_crash_and_unregister(broker_url):
    unit = "disco1"
    with Discovery("acme", unit, broker=broker_url) as disco:
        agent = Responder("echo", echo_handler, unit=unit, card=echo_card("acme", unit), broker=broker_url)
        entry = disco.wait_for("echo", status="online")
        assert entry.status == "online" and entry.status_source == "agent" and entry.problems == []
        updated = dict(agent.card, version="2.0.0")
        agent.publish_card(updated)
        assert disco.wait_for("echo", timeout=3) and _wait(lambda: disco.get("echo").card["version"] == "2.0.0")
        agent.crash()
        entry = disco.wait_for("echo", status="offline")
        assert entry.status_source == "lwt"
        again = Responder("echo", echo_handler, unit=unit, card=echo_card("acme", unit), broker=broker_url)
        assert disco.wait_for("echo", status="online").status_source == "agent"
        again.unregister()
        assert disco.wait_for("echo", present=False) is None
        assert "echo" not in disco.agents()
        again.stop()


def test_a_late_subscriber_sees_retained_cards_as_current_state(broker_url):
    unit = "disco2"
    agent = Responder("ticket-desk", lambda ctx: None, unit=unit, card=desk_card("acme", unit), broker=broker_url)
    with Discovery("acme", unit, broker=broker_url) as disco:
        entry = disco.wait_for("ticket-desk", status="online")
        assert entry.retained is True
    agent.unregister()
    agent.stop()


def test_selection_by_tags_capabilities_and_security_schemes(broker_url):
    unit = "disco3"
    pub = Session("acme", unit, "publisher", broker=broker_url)
    bearer = {"bearer": cards.bearer_scheme()}
    cards_by_agent = {
        "rca": card(unit, "rca", ["ticket", "root-cause-analysis"]),
        "rca-nostream": card(unit, "rca-nostream", ["root-cause-analysis"], streaming=False),
        "rca-secure": card(unit, "rca-secure", ["root-cause-analysis"], schemes=bearer,
                           requirements=[cards.requirement("bearer", ["tickets:read"])]),
        "other": card(unit, "other", ["billing"]),
    }
    for agent, c in cards_by_agent.items():
        pub.publish(MqttMessage(topics.discovery_topic("acme", unit, agent), json.dumps(c).encode(), retain=True,
                                user_properties=properties.presence_properties("online", "agent")))
    with Discovery("acme", unit, broker=broker_url) as disco:
        assert _wait(lambda: len(disco.agents()) == 4)
        names = lambda found: sorted(e.agent for e in found)  # noqa: E731
        assert names(disco.find(tags=["root-cause-analysis"])) == ["rca", "rca-nostream", "rca-secure"]
        assert names(disco.find(tags=["root-cause-analysis"], schemes=set())) == ["rca", "rca-nostream"]
        assert names(disco.find(tags=["root-cause-analysis"], capabilities=["streaming"])) == ["rca", "rca-secure"]
        assert names(disco.find(tags=["root-cause-analysis"], capabilities=["streaming"], schemes={"bearer"})) == \
            ["rca", "rca-secure"]
        assert names(disco.find(tags=["root-cause-analysis"], capabilities=["streaming"], schemes=set())) == ["rca"]
        assert names(disco.find(tags=["billing"])) == ["other"]
        assert {row["agent"] for row in disco.table()} == set(cards_by_agent)
    for agent in cards_by_agent:
        pub.publish(MqttMessage(topics.discovery_topic("acme", unit, agent), b"", retain=True))


def test_broker_managed_status_is_preferred_and_bad_cards_are_reported(broker_url):
    unit = "disco4"
    pub = Session("acme", unit, "publisher", broker=broker_url)
    topic = topics.discovery_topic("acme", unit, "x")
    c = json.dumps(card(unit, "x", ["t"])).encode()
    with Discovery("acme", unit, broker=broker_url) as disco:
        pub.publish(MqttMessage(topic, c, retain=True, user_properties=(("a2a-status", "offline"),
                                                                           ("a2a-status-source", "broker"))))
        assert disco.wait_for("x", status="offline").status_source == "broker"
        pub.publish(MqttMessage(topic, c, retain=True, user_properties=(("a2a-status", "online"),
                                                                           ("a2a-status-source", "agent"))))
        assert _wait(lambda: len(disco.get("x").history) == 2)
        assert disco.get("x").status == "offline" and disco.get("x").status_source == "broker"
        broken = {"name": "no description"}
        pub.publish(MqttMessage(topics.discovery_topic("acme", unit, "broken"), json.dumps(broken).encode(),
                                retain=True))
        entry = disco.wait_for("broken")
        assert any("description" in p for p in entry.problems)
        pub.publish(MqttMessage(topics.discovery_topic("acme", unit, "garbage"), b"not json", retain=True))
        assert _wait(lambda: disco.invalid and "not JSON" in disco.invalid[-1][1])
    for agent in ("x", "broken", "garbage"):
        pub.publish(MqttMessage(topics.discovery_topic("acme", unit, agent), b"", retain=True))



def test_wait_for_says_what_it_waited_for_and_what_it_saw_when_it_gives_up(broker_url):
    unit = "disco5"
    with Discovery("acme", unit, broker=broker_url) as disco:
        agent = Responder("echo", echo_handler, unit=unit, card=echo_card("acme", unit), broker=broker_url)
        assert disco.wait_for("echo", status="online").online
        agent.crash()
        assert disco.wait_for("echo", status="offline").status_source == "lwt"

        started = time.monotonic()
        with pytest.raises(TimeoutError) as caught:
            disco.wait_for("echo", status="online", timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 1.5  # gives up when the time is up, not later
        said = str(caught.value)
        assert said.startswith("waited 0.3 s for echo to be online; last seen: offline (source lwt) at "), said
        assert re.search(r" at \d\d:\d\d:\d\d\.\d{3};", said), said
        assert said.endswith(f"agents seen on $a2a/v1/discovery/acme/{unit}/+: echo"), said

        with pytest.raises(TimeoutError, match=r"waited 0\.2 s for a card of billing; last seen: no card of billing; "
                                               r"agents seen on .*: echo$"):
            disco.wait_for("billing", timeout=0.2)
        with pytest.raises(TimeoutError, match=r"waited 0\.2 s for the card of echo to be removed; "
                                               r"last seen: offline \(source lwt\)"):
            disco.wait_for("echo", present=False, timeout=0.2)


def test_wait_for_on_a_closed_discovery_fails_at_once_and_says_why(broker_url):
    unit = "disco6"
    disco = Discovery("acme", unit, broker=broker_url)
    agent = Responder("echo", echo_handler, unit=unit, card=echo_card("acme", unit), broker=broker_url)
    assert disco.wait_for("echo", status="online").online
    assert disco.wait_for("echo", status="online", timeout=0).online  # what is already there needs no wait

    # closed while a wait is in progress: the waiter learns it at once, not when its time runs out
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            disco.wait_for("echo", status="offline", timeout=30)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    disco.close()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 1.0
    assert isinstance(outcome[0], RuntimeError)
    assert "cannot wait for echo to be offline: this discovery is closed" in str(outcome[0])
    assert "last seen: online (source agent)" in str(outcome[0])

    # and afterwards (the 5 s wait a learner met in lesson 01 after its clean-up), at once
    agent.crash()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="closed"):
        disco.wait_for("echo", status="offline")
    assert time.monotonic() - started < 0.5

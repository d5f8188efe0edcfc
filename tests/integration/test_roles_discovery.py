"""Responder discovery and presence against a real Mosquitto.

Profile: Discovery Publisher Behavior 1-3, Presence and Liveness (a2a-status / a2a-status-source,
Last Will, graceful offline), Discovery Subscriber Behavior 2-3.
"""
from __future__ import annotations

import json
import queue

import pytest

from a2a_nb.agents import Requester, Responder, ResponderOptions
from a2a_nb.mqtt.session import Session, Subscription
from a2a_nb.protocol.packet import MqttMessage
from tests.integration._roles_support import FAST, ORG, UNIT, card_for, discovery_topic, traffic  # noqa: F401
from tests.sdk_check import assert_valid
from tests.helpers import uid


def echo(ctx):
    return f"echo: {ctx.text}"


@pytest.fixture(autouse=True)
def _clear_retained_cards(broker_url):
    """Leave no retained card behind for other suites' discovery subscribers."""
    before = set(_used)
    yield
    cleaner = Session(ORG, UNIT, uid("cleaner"), broker=broker_url)
    for agent in set(_used) - before:
        cleaner.publish(MqttMessage(discovery_topic(agent), b"", qos=1, retain=True))
    cleaner.close()


_used: list[str] = []


def agent_id() -> str:
    a = uid("desk")
    _used.append(a)
    return a


def watch(broker_url: str, topic: str) -> "queue.Queue[MqttMessage]":
    """A live watcher that sees the original retain flag (Retain As Published) and no history."""
    q: "queue.Queue[MqttMessage]" = queue.Queue()
    s = Session(ORG, UNIT, uid("watcher"), broker=broker_url)
    s.subscribe(Subscription(topic, qos=1, retain_as_published=True, retain_handling=2), handler=q.put)
    return q


def late_subscriber(broker_url: str, topic: str, wait: float = 1.0) -> list[MqttMessage]:
    """What a subscriber arriving now gets from the broker (the retained state), within ``wait``."""
    q: "queue.Queue[MqttMessage]" = queue.Queue()
    s = Session(ORG, UNIT, uid("late"), broker=broker_url)
    s.subscribe(topic, qos=1, handler=q.put)
    got = []
    try:
        got.append(q.get(timeout=wait))
        while True:
            got.append(q.get(timeout=0.2))
    except queue.Empty:
        pass
    s.close()
    return got


def presence(m: MqttMessage) -> tuple:
    return m.user_property("a2a-status"), m.user_property("a2a-status-source")


def test_card_is_published_retained_qos1_online_by_agent(broker_url, traffic):
    agent = agent_id()
    topic = discovery_topic(agent)
    live = watch(broker_url, topic)
    card = card_for(agent)
    Responder(agent, echo, card=card, broker=broker_url)

    m = live.get(timeout=3)
    assert m.retain is True, "the card must be published retained"
    assert m.qos == 1, "the card must be published with QoS 1"
    assert presence(m) == ("online", "agent")
    assert json.loads(m.payload) == card
    assert_valid("AgentCard", json.loads(m.payload))

    (kept,) = late_subscriber(broker_url, topic)
    assert kept.retain is True and presence(kept) == ("online", "agent")
    assert kept.qos == 1
    assert json.loads(kept.payload) == card


def test_republished_card_replaces_the_retained_one(broker_url, traffic):
    agent = agent_id()
    r = Responder(agent, echo, card=card_for(agent), broker=broker_url)
    new_card = dict(card_for(agent), version="2.0.0")
    r.publish_card(new_card)
    got = late_subscriber(broker_url, discovery_topic(agent))
    assert len(got) == 1 and json.loads(got[0].payload)["version"] == "2.0.0"
    assert presence(got[0]) == ("online", "agent")


def test_crash_publishes_the_last_will_offline_lwt_on_the_same_topic(broker_url, traffic):
    agent = agent_id()
    topic = discovery_topic(agent)
    card = card_for(agent)
    r = Responder(agent, echo, card=card, broker=broker_url)
    live = watch(broker_url, topic)
    r.crash()

    m = live.get(timeout=5)
    assert m.topic == topic
    assert m.retain is True and m.qos == 1
    assert presence(m) == ("offline", "lwt")
    assert json.loads(m.payload) == card, "the will carries the Agent Card"
    (kept,) = late_subscriber(broker_url, topic)
    assert presence(kept) == ("offline", "lwt"), "the will replaced the retained card"


def test_lost_connection_without_disconnect_also_triggers_the_will(broker_url, traffic):
    agent = agent_id()
    topic = discovery_topic(agent)
    r = Responder(agent, echo, card=card_for(agent), broker=broker_url, options=ResponderOptions(keepalive=2))
    live = watch(broker_url, topic)
    r.session.kill_socket()  # TCP dropped, no DISCONNECT packet: an ungraceful disconnect

    m = live.get(timeout=6)
    assert m.retain is True and presence(m) == ("offline", "lwt")


def test_graceful_stop_republishes_offline_by_agent_and_sends_no_will(broker_url, traffic):
    agent = agent_id()
    topic = discovery_topic(agent)
    card = card_for(agent)
    r = Responder(agent, echo, card=card, broker=broker_url)
    live = watch(broker_url, topic)
    r.stop()

    m = live.get(timeout=3)
    assert m.retain is True and m.qos == 1
    assert presence(m) == ("offline", "agent")
    assert json.loads(m.payload) == card
    with pytest.raises(queue.Empty):
        live.get(timeout=0.5)  # no last will after a graceful stop
    (kept,) = late_subscriber(broker_url, topic)
    assert presence(kept) == ("offline", "agent")
    assert not r.alive


def test_unregister_clears_the_retained_card(broker_url, traffic):
    agent = agent_id()
    topic = discovery_topic(agent)
    r = Responder(agent, echo, card=card_for(agent), broker=broker_url)
    assert len(late_subscriber(broker_url, topic)) == 1
    live = watch(broker_url, topic)
    r.unregister()

    m = live.get(timeout=3)
    assert m.payload == b"" and m.retain is True, "an empty retained payload deletes the card"
    assert late_subscriber(broker_url, topic, wait=0.7) == [], "a new subscriber must get nothing"
    r.stop()  # a stop after unregister must not bring a card back
    assert late_subscriber(broker_url, topic, wait=0.5) == []


def test_a_spawned_instance_without_card_publishes_nothing_on_discovery(broker_url, traffic):
    agent = agent_id()
    live = watch(broker_url, discovery_topic(agent))
    r = Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    assert req.send(agent, "hi").text == "echo: hi"
    r.stop()
    with pytest.raises(queue.Empty):
        live.get(timeout=0.3)

"""Failover (issue [17] item 4): ``A2A_BROKER_URL`` lists several brokers; a session whose broker dies
moves to the next, renews its subscriptions there, an agent republishes its card, and a requester's
stream resumes (GetTask) as after a reconnect: nothing is lost.

Two real Mosquittos started by the test (not bridged: both sides move, so nothing has to cross); the
bridged case is in tests/integration/test_bridged_brokers.py.
"""
from __future__ import annotations

import threading
import time

import pytest

from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder
from a2a_nb.mqtt.broker import BrokerEndpoint, BrokerError, EmbeddedBroker, free_port
from a2a_nb.mqtt.failover import ATTEMPTS_PER_BROKER, broker_for_attempt, split_urls
from a2a_nb.mqtt.session import ConnectFailed, Session
from a2a_nb.protocol import properties, states
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import echo_card
from tests.waiting import wait_until
from tests.reliability.test_faults import CHUNKS, RESILIENT, chunks_of, streaming_handler
from tests.helpers import uid

ORG = "acme"


@pytest.fixture
def two_brokers():
    with EmbeddedBroker() as a, EmbeddedBroker() as b:
        yield a, b


def test_a_url_list_is_parsed_once_into_brokers_in_order():
    ep = BrokerEndpoint.from_url("mqtt://u:p%2Cq@127.0.0.1:1001, mqtt://127.0.0.1:1002?inflight=5,")
    assert [(b.host, b.port) for b in ep.brokers] == [("127.0.0.1", 1001), ("127.0.0.1", 1002)]
    assert ep.password == "p,q" and ep.brokers[1].inflight == 5 and ep.brokers[0].alternates == ()
    assert ep.url == "mqtt://u:***@127.0.0.1:1001,mqtt://127.0.0.1:1002?inflight=5"
    assert BrokerEndpoint.from_url(ep.url_with_secret) == ep
    with pytest.raises(BrokerError, match="mixes mqtt:// and mqtts://"):
        BrokerEndpoint.from_url("mqtt://a:1,mqtts://b:2")
    assert split_urls(" a ,, b ") == ["a", "b"]


def test_reconnect_attempts_stay_on_the_lost_broker_briefly_then_go_round_the_list():
    picks = [broker_for_attempt(k, 1, 3) for k in range(1, 2 * ATTEMPTS_PER_BROKER * 3 + 1)]
    assert picks[:ATTEMPTS_PER_BROKER] == [1] * ATTEMPTS_PER_BROKER
    assert picks[ATTEMPTS_PER_BROKER:2 * ATTEMPTS_PER_BROKER] == [2] * ATTEMPTS_PER_BROKER
    assert picks[2 * ATTEMPTS_PER_BROKER:3 * ATTEMPTS_PER_BROKER] == [0] * ATTEMPTS_PER_BROKER
    assert broker_for_attempt(7, 0, 1) == 0


def test_an_unreachable_first_broker_is_passed_over_at_connect(two_brokers):
    _, b = two_brokers
    dead = f"mqtt://127.0.0.1:{free_port()}"
    s = Session(ORG, uid("unit"), uid("late"), broker=f"{dead},{b.url}")
    assert s.connected and s.endpoint.port == b.port
    with pytest.raises(ConnectFailed, match=r"no broker of the list answered \(2 tried\)"):
        Session(ORG, uid("unit"), uid("none"), broker=f"{dead},mqtt://127.0.0.1:{free_port()}")


def test_a_session_moves_to_the_next_broker_and_renews_its_subscriptions(two_brokers):
    a, b = two_brokers
    said: list[str] = []
    s = Session(ORG, uid("unit"), uid("mover"), broker=f"{a.url},{b.url}", connect=False)
    s.on_link = said.append
    s.connect()
    got = threading.Event()
    topic = f"$a2a/v1/event/{ORG}/{s.unit}/{s.agent}"
    s.subscribe(topic, handler=lambda m: got.set())
    a.crash()
    assert wait_until(lambda: s.connected and s.endpoint.port == b.port, 10)  # not the old link, not yet noticed lost
    assert any("moved to the next broker of the list" in line and str(b.port) in line for line in said), said
    other = Session(ORG, s.unit, uid("other"), broker=b.url)
    other.publish(MqttMessage(topic, b"{}"))
    assert got.wait(5), "the subscription was renewed on the new broker"


def test_an_agent_and_a_requester_fail_over_mid_stream_and_nothing_is_lost(two_brokers):
    a, b = two_brokers
    urls, unit = f"{a.url},{b.url}", uid("unit")
    agent = "streamer"
    responder = Responder(agent, streaming_handler(pace=0.08), unit=unit, card=echo_card(ORG, unit, agent),
                          broker=urls)
    requester = Requester(uid("coord"), unit=unit, broker=urls, retry=RESILIENT)
    stream = requester.stream(agent, "stream through a failover")
    seen, crashed_at = 0, None
    for _ in stream:
        seen += 1
        if seen == 3 and crashed_at is None:
            a.crash()
            crashed_at = time.monotonic()
    assert crashed_at is not None
    assert responder.session.endpoint.port == b.port and requester.session.endpoint.port == b.port
    final = requester.get_task(stream.task_id)
    assert final["status"]["state"] == states.COMPLETED
    assert chunks_of(final) == [f"chunk {i}" for i in range(CHUNKS)]
    assert stream.state == states.COMPLETED and responder.stats.executions == 1
    # the card was published again on the broker it moved to, online
    entry = Discovery(ORG, unit, broker=b.url).wait_for(agent, status=properties.ONLINE, timeout=5)
    assert entry is not None and entry.card["name"]
    assert requester.send(agent, "after the failover").state == states.COMPLETED


def test_failover_between_bridged_brokers_mid_stream_loses_nothing(bridged_pair):
    """Issue [17]'s case: the agent lists A then B, the requester sits on B (bridged to A); A is killed
    mid-stream. The agent moves to B, republishes its card there; the requester's stream resumes (GetTask)."""
    a_url, b_url = bridged_pair.urls
    unit, agent = uid("unit"), "streamer"
    responder = Responder(agent, streaming_handler(pace=0.08), unit=unit, card=echo_card(ORG, unit, agent),
                          broker=f"{a_url},{b_url}")
    requester = Requester(uid("coord"), unit=unit, broker=b_url, retry=RESILIENT)
    Discovery(ORG, unit, broker=b_url).wait_for(agent, status=properties.ONLINE, timeout=5)  # the card crossed
    stream = requester.stream(agent, "stream through the loss of broker A")
    seen = 0
    for _ in stream:
        seen += 1
        if seen == 3:
            bridged_pair.crash("a")
    assert seen >= 3 and responder.session.endpoint.port == bridged_pair.b.port
    final = requester.get_task(stream.task_id)
    assert final["status"]["state"] == states.COMPLETED and stream.state == states.COMPLETED
    assert chunks_of(final) == [f"chunk {i}" for i in range(CHUNKS)] and responder.stats.executions == 1
    assert requester.send(agent, "after the failover").state == states.COMPLETED

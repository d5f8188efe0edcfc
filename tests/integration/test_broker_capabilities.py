"""Brokers that offer less than Mosquitto (issue [17]): the kit reads the CONNACK and adapts or
refuses in one line; ``check-broker`` says what of the profile works.

Each limited broker is a real Mosquitto behind ``tests/broker_proxy.py``, which rewrites what a more
limited broker would (Shared Subscription Available = 0; ``$`` topics refused with 144 as ejabberd
does; Payload Format Indicator dropped). Nothing is mocked: every message crosses the real broker.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from a2a_nb.agents import Requester, Responder
from a2a_nb.mqtt import wire
from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.broker_check import check_broker
from a2a_nb.mqtt.session import ConnectFailed, Session, SessionError
from a2a_nb.protocol import topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import echo_card, echo_handler
from tests.broker_proxy import LimitedBroker, Limits
from tests.integration._roles_support import ORG
from tests.integration.test_pools import CountingWork
from tests.integration.test_roles_streaming import chunker
from tests.helpers import uid

FAST = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=3.0, max_attempts=2, backoff_s=(0.1,))
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture
def limited(private_broker):
    proxies: list[LimitedBroker] = []

    def make(**limits) -> LimitedBroker:
        proxies.append(LimitedBroker(private_broker.port, Limits(**limits)))
        return proxies[-1]

    yield make
    for p in proxies:
        p.close()


def run_cli(*args: str, url: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, A2A_BROKER_URL=url)
    return subprocess.run([sys.executable, "-m", "a2a_nb", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_check_broker_on_the_kits_mosquitto_finds_every_capability_and_core_working(broker_url):
    out = run_cli("check-broker", url=broker_url)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for line in ("retain                 yes", "wildcards              yes", "shared subscriptions   yes",
                 "max qos                2"):
        assert line in text
    for feature in ("$a2a topics", "discovery", "request/reply", "wills"):
        assert any(l.strip().startswith(feature) and "works" in l and "does not" not in l for l in text.splitlines())
    assert "by topic and by wildcard filter" in text
    assert "raw bytes arrive whole with Payload Format Indicator 0" in text
    assert text.rstrip().endswith("Core works on this broker")
    assert "!" not in text.split("the profile on this broker")[0]  # no gap named under the CONNACK


def test_the_docs_check_broker_sample_is_what_the_command_prints(broker_url):
    page = (Path(__file__).resolve().parents[2] / "docs" / "another-broker.md").read_text()
    sample = page.split("$ python -m a2a_nb check-broker mqtt://127.0.0.1:1883\n", 1)[1].split("```", 1)[0]
    printed = run_cli("check-broker", url=broker_url).stdout
    assert sample.splitlines()[1:] == printed.splitlines()[1:]  # all but the first line, which names the port


def test_no_shared_subscriptions_in_connack_no_share_sent_and_the_pool_answers_each_request_once(limited):
    proxy = limited(no_shared=True)
    unit = uid("unit")
    s = Session(ORG, unit, uid("asker"), broker=proxy.url)
    assert s.capabilities.shared_subscriptions is False and s.capabilities.retain is True
    with pytest.raises(SessionError, match="Shared Subscription Available = 0"):
        s.subscribe(f"$share/g/{topics.pool_topic(ORG, unit, 'p')}")
    assert s.connected, "refused by the kit, not by the broker: the connection stays"

    pool, work = uid("pool"), CountingWork()
    members = [Responder(f"member-{i}", work, unit=unit, pool=pool, broker=proxy.url) for i in range(3)]
    assert {m.pool_mode for m in members} == {"slot"} and "CONNACK" in members[0].pool_mode_why
    req = Requester(uid("coord"), unit=unit, broker=proxy.url, retry=FAST)
    with ThreadPoolExecutor(6) as ex:
        replies = list(ex.map(lambda i: req.send(f"pool:{pool}", f"job {i}"), range(20)))
    assert all(r.state == COMPLETED for r in replies)
    runs = Counter(t for _, t in work.runs)
    assert runs == Counter(r.task_id for r in replies) and set(runs.values()) == {1}
    assert proxy.shared_subscribes == 0, "the kit never asked for $share on a broker that said it has none"

    found = check_broker(BrokerEndpoint.from_url(proxy.url))
    pools_line = next(f for f in found.findings if f.feature == "pools")
    assert pools_line.verdict == "works (fallback)" and "CONNACK: no shared subscriptions" in pools_line.detail
    assert found.core_works and proxy.shared_subscribes == 0


def test_a_broker_that_refuses_dollar_topics_is_named_as_unable_to_carry_the_profile(limited):
    proxy = limited(refuse_dollar=True)
    unit = uid("unit")
    with pytest.raises(ConnectFailed) as refused:  # an agent's Last Will is on its $a2a card topic
        Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=proxy.url)
    text = str(refused.value)
    assert "(144)" in text and "refuses topics starting with $" in text and "cannot carry" in text
    assert refused.value.reason_code == 0x90

    s = Session(ORG, unit, uid("plain"), broker=proxy.url)  # no will: it connects, its publishes fail
    result = s.publish(MqttMessage(topics.event_topic(ORG, s.unit, s.agent), b"{}"))
    assert result.reason_code == 0x90 and "cannot carry the profile's $a2a/v1" in result.reason

    out = run_cli("check-broker", url=proxy.url)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    (dollar,) = [l for l in lines if l.strip().startswith("$a2a topics")]
    assert "does not work" in dollar and "cannot carry" in dollar
    assert lines[-1] == "Core does NOT work on this broker"


def test_binary_chunks_are_recognised_when_the_broker_drops_payload_format_indicator_0(limited):
    proxy = limited(drop_pfi=True)
    agent, data = uid("binary"), os.urandom(50 * 256)
    Responder(agent, chunker(data, 50), broker=proxy.url)
    req = Requester(uid("coord"), broker=proxy.url, retry=FAST)
    stream = req.stream(agent, "send the blob", artifact_mode="binary")
    view = stream.wait()
    assert stream.state == COMPLETED and view.binary["blob"].data() == data
    assert sum(1 for e in stream.events if e.kind == "binaryChunk") == 50

    found = check_broker(BrokerEndpoint.from_url(proxy.url))
    (binary,) = [f for f in found.findings if f.feature == "binary mode"]
    assert "drops Payload Format Indicator 0" in binary.detail and found.core_works


def test_receive_maximum_below_the_kits_inflight_is_kept(limited):
    """A broker may allow fewer unacknowledged publishes than the kit keeps (MQTT v5 §3.3.4); paho takes
    a limit only before it connects, so the session connects once more, keeping the broker's limit."""
    proxy = limited(receive_maximum=5)
    s = Session(ORG, uid("unit"), uid("many"), broker=proxy.url + "?inflight=50")
    assert s.capabilities.receive_maximum == 5 and s.endpoint.inflight == 5 and "inflight=5" in s.endpoint.url
    assert proxy.connects == 2 and s.connected
    results = [s.publish_nowait(MqttMessage(topics.event_topic(ORG, s.unit, s.agent), b"{}")) for _ in range(200)]
    assert all(r.result(5).accepted for r in results)
    assert 1 <= proxy.max_unacked <= 5, proxy.max_unacked
    unlimited = Session(ORG, s.unit, uid("unlimited"), broker=proxy.url + "?inflight=0")
    assert unlimited.endpoint.inflight == 5


def test_the_kits_own_mosquitto_sets_no_receive_maximum_so_inflight_stays_unlimited(broker_url):
    s = Session(ORG, uid("unit"), uid("fast"), broker=broker_url)
    assert s.capabilities.receive_maximum == 65535 and s.endpoint.inflight == BrokerEndpoint.from_url(broker_url).inflight


def test_a_publish_over_the_brokers_maximum_packet_size_is_refused_before_it_is_sent(limited):
    msg = MqttMessage(topics.event_topic(ORG, "u", "big"), b"x" * 1000, qos=1, correlation_data=b"c" * 16,
                      user_properties=(("a2a-task-id", "t-1"),), content_type="application/json")
    size = len(wire.encode_publish(msg, mid=1))  # the bytes paho writes for it
    proxy = limited(max_packet_size=size)
    s = Session(ORG, "u", uid("big"), broker=proxy.url)
    assert s.capabilities.max_packet_size == size
    assert s.publish(msg).accepted and proxy.largest_publish == size, "exactly at the limit: sent"
    with pytest.raises(SessionError, match=f"is {size + 1:,} bytes, over the broker's Maximum Packet Size of {size:,}"):
        s.publish(MqttMessage(msg.topic, msg.payload + b"x", qos=1, correlation_data=msg.correlation_data,
                              user_properties=msg.user_properties, content_type=msg.content_type))
    assert s.connected and proxy.largest_publish == size, "refused by the kit: nothing sent, still connected"


def test_check_broker_across_bridged_brokers_publishes_on_the_first_and_reads_on_the_last(bridged_pair):
    a_url, b_url = bridged_pair.urls
    out = run_cli("check-broker", f"{a_url},{b_url}", url="")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "(published on the first, read on the last)" in lines[0] and str(bridged_pair.b.port) in lines[0]
    for feature in ("discovery", "request/reply", "wills", "binary mode"):
        (line,) = [l for l in lines if l.strip().startswith(feature)]
        assert " works " in line, line
    assert lines[-1] == "Core works across these brokers" and "the profile across these brokers:" in lines


def test_binary_chunks_cross_a_bridge_with_their_payload_format_indicator(bridged_pair):
    a_url, b_url = bridged_pair.urls
    agent, data = uid("binary"), os.urandom(40 * 256)
    Responder(agent, chunker(data, 40), broker=a_url)
    req = Requester(uid("coord"), broker=b_url, retry=FAST)
    stream = req.stream(agent, "send the blob", artifact_mode="binary")
    assert stream.wait().binary["blob"].data() == data and stream.state == COMPLETED

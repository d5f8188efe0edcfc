"""One retained message that paho cannot read must not take a kit client off the broker (issue 18, case 5).

MQTT v5 allows U+FEFF in a string (spec 1.5.4); paho-mqtt 2.2 drops the connection of the client that
*receives* it (``docs/paho-feff-bug.md``). Mosquitto accepts and retains it. The attacker here is the
least an attacker needs: a bare paho client with any login that may publish a retained card.

* On any broker (here the kit's broker *without* its plugin, as a foreign Mosquitto would be): an agent
  whose own connection reads discovery (a slot-mode pool member reads the cards of its unit) loses its
  connection once, reconnects without retained messages, says so in one warning, and keeps answering;
  a live unreadable message costs one reconnect, not a loop. Discovery and the recorder degrade the same
  way and still see what is published after. Before the fix: 8-19 reconnects a second, sends failed.
  ``serve echo`` and ``send`` on the command line work beside the poison card.
* On the kit's broker (``a2a_status`` plugin, ``broker`` and ``broker --secure``): such a PUBLISH is
  refused (PUBACK 135) on every topic, in a User Property, the Content Type or the Response Topic;
  nothing is retained, nobody drops. A Will carrying U+FEFF passes (no plugin hook): one reconnect.
* An agent reads its request topics live only: a request left retained is never read (neither
  answered again at every connect, nor able to drop the agent).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.agents import Requester, Responder
from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.responder import ResponderOptions
from a2a_nb.mqtt.broker import EmbeddedBroker
from a2a_nb.mqtt.session import Session, paho_client
from a2a_nb.mqtt.status_plugin import plugin_path
from a2a_nb.protocol import topics
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import echo_card, echo_handler
from a2a_nb.traffic.recorder import Recorder
from tests.waiting import wait_until
from tests.helpers import uid

ORG = "acme"
BOM = "\ufeff"
RETRY = RetryProfile(reply_first_timeout_s=5.0, stream_idle_timeout_s=5.0, max_attempts=2, backoff_s=(0.2,))


@pytest.fixture(scope="module")
def foreign():
    """A Mosquitto without the kit's plugin: what the session meets on a broker it does not run."""
    with EmbeddedBroker(broker_status=False) as b:
        yield b


class Mallory:
    """A bare paho client: publishes what it likes, PUBACK codes kept."""

    def __init__(self, broker: EmbeddedBroker):
        self.acks: dict[int, int] = {}
        self.client = paho_client(broker.endpoint, uid("mallory"))
        self.client.on_publish = lambda c, u, mid, rc, p: self.acks.__setitem__(mid, rc.value)
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()

    def publish(self, topic: str, payload: bytes = b"{}", *, retain: bool = True, **props) -> int:
        """The PUBACK reason code of one QoS 1 publish with these properties (paho attribute names)."""
        p = Properties(PacketTypes.PUBLISH)
        for name, value in props.items():
            setattr(p, name, value)
        info = self.client.publish(topic, payload, qos=1, retain=retain, properties=p)
        assert wait_until(lambda: info.mid in self.acks, 10), "no PUBACK"
        return self.acks[info.mid]

    def poison_card(self, unit: str, agent: str = "mallory") -> int:
        return self.publish(topics.discovery_topic(ORG, unit, agent), encode_json(echo_card(ORG, unit, agent)),
                            UserProperty=[("a2a-status", "online" + BOM)])

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def mallory(foreign):
    m = Mallory(foreign)
    yield m
    m.close()


def test_a_retained_card_paho_cannot_read_does_not_take_a_pool_member_off_the_broker(foreign, mallory, caplog):
    unit = uid("unit")
    assert mallory.poison_card(unit) == 16  # accepted and retained: Mosquitto allows U+FEFF
    member = Responder(uid("echo"), echo_handler, unit=unit, card=echo_card(ORG, unit), broker=foreign.url,
                       pool=uid("pool"), options=ResponderOptions(pool_dispatch="slot", inline=True))
    session = member.session
    assert wait_until(lambda: session.unreadable_drops >= 1 and session.connected, 15), "the poison never arrived"
    req = Requester(uid("req"), unit=unit, broker=foreign.url, retry=RETRY)
    for i in range(5):
        reply = req.send(member.agent, f"still here {i}")
        assert reply.message is not None and f"still here {i}" in str(reply.message), reply
    assert session.connect_count == 2 and session.unreadable_drops == 1, "one drop, one reconnect, no loop"
    warned = [r for r in caplog.records if "could not read a message" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING and "\n" not in warned[0].getMessage()


def test_serve_echo_and_send_on_the_command_line_work_beside_a_poison_card(foreign, mallory, tmp_path):
    """The issue's case as a user meets it: ``serve echo`` (its ubsp-v1 key directory reads the unit's
    cards on the agent's own connection) and ``send`` (which looks the card up). Before: ``serve``
    reconnected ~9 times a second and every ``send`` failed."""
    unit = uid("unit")
    assert mallory.poison_card(unit) == 16
    env = dict(os.environ, A2A_BROKER_URL=foreign.url, XDG_STATE_HOME=str(tmp_path))
    cli = [sys.executable, "-m", "a2a_nb"]
    serve = subprocess.Popen(cli + ["serve", "echo", "--unit", unit], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        cards: list[MqttMessage] = []
        Session(ORG, unit, uid("watch"), broker=foreign.url).subscribe(topics.discovery_topic(ORG, unit, "echo"),
                                                                      handler=cards.append)
        assert wait_until(lambda: cards, 30), "echo never published its card"
        for i in range(3):
            sent = subprocess.run(cli + ["send", "echo", f"hello {i}", "--unit", unit], env=env, capture_output=True,
                                  text=True, timeout=60)
            assert sent.returncode == 0 and f"hello {i}" in sent.stdout, sent.stdout + sent.stderr
    finally:
        serve.terminate()
        _, err = serve.communicate(timeout=30)
    log = (foreign.workdir / "mosquitto.log").read_text()
    assert log.count(f"as acme/{unit}/echo ") <= 2, "one drop at most, not a reconnect loop"
    assert err.count("paho could not read a message") <= 1


def test_a_live_unreadable_request_costs_one_reconnect(foreign, mallory):
    """A guard, not a bug of today: a message that is not retained is not sent again (clean start)."""
    unit = uid("unit")
    agent = Responder(uid("echo"), echo_handler, unit=unit, card=echo_card(ORG, unit), broker=foreign.url,
                      options=ResponderOptions(inline=True))
    mallory.publish(agent.request_topic, b"{}", retain=False, ContentType="application/json" + BOM)
    assert wait_until(lambda: agent.session.connect_count == 2 and agent.session.connected, 15), "dropped once, back"
    reply = Requester(uid("req"), unit=unit, broker=foreign.url, retry=RETRY).send(agent.agent, "after")
    assert reply.message is not None and "after" in str(reply.message)
    assert agent.session.connect_count == 2


def test_discovery_and_the_recorder_degrade_to_what_is_published_after(foreign, mallory, tmp_path):
    unit = uid("unit")
    assert mallory.poison_card(unit) == 16
    disc = Discovery(ORG, unit, agent=uid("disc"), broker=foreign.url)
    rec = Recorder(foreign.url, tmp_path / "rec.jsonl", org_filter=f"$a2a/v1/discovery/{ORG}/{unit}/#",
                   agent=uid("rec")).start()
    assert rec.session is not None
    assert wait_until(lambda: disc.session.connect_count >= 2 and rec.session.connect_count >= 2
                      and disc.session.connected and rec.session.connected, 15), "the poison never arrived"
    later = Session(ORG, unit, "later", broker=foreign.url)
    later.publish(MqttMessage(topics.discovery_topic(ORG, unit, "later"), encode_json(echo_card(ORG, unit, "later")),
                              retain=True))
    assert wait_until(lambda: "later" in disc.entries, 10), "a card published after is still seen"
    assert wait_until(lambda: rec.count >= 1, 10), "and recorded"
    assert disc.session.connect_count == 2 and rec.session.connect_count == 2
    rec.stop()


@pytest.mark.skipif(plugin_path() is None, reason="the a2a_status plugin cannot be built here")
def test_the_kits_broker_refuses_unreadable_properties_on_every_topic(caplog):
    with EmbeddedBroker(broker_status=True) as kit:
        unit = uid("unit")
        mallory = Mallory(kit)
        try:
            card = topics.discovery_topic(ORG, unit, "mallory")
            assert mallory.poison_card(unit) == 135
            assert mallory.publish(card, UserProperty=[("name" + BOM, "v")]) == 135
            assert mallory.publish(card, ContentType=BOM + "application/json") == 135
            assert mallory.publish(f"$a2a/v1/request/{ORG}/{unit}/echo", ResponseTopic="a/" + BOM) == 135
            assert mallory.publish(f"plain/{unit}", UserProperty=[("k", BOM)]) == 135
            assert mallory.publish(card, UserProperty=[("a2a-status", "online")]) in (0, 16), "the same, readable"
            assert mallory.client.is_connected(), "refused, not disconnected"
        finally:
            mallory.close()
        disc = Discovery(ORG, unit, agent=uid("disc"), broker=kit.url)
        assert wait_until(lambda: "mallory" in disc.entries, 10)
        assert disc.session.unreadable_drops == 0 and disc.session.connect_count == 1
        log = (kit.workdir / "mosquitto.log").read_text()
        assert log.count("U+FEFF in a property") == 1, "one notice a minute, not one a refusal"


@pytest.mark.skipif(plugin_path() is None, reason="the a2a_status plugin cannot be built here")
def test_on_broker_secure_the_least_privileged_login_is_refused_and_its_will_costs_one_reconnect():
    """``broker --secure`` loads the plugin: the ``cli`` login's own card with U+FEFF is refused. Its
    Will is not (Mosquitto 2.0 has no plugin hook on Wills): the session's own defence takes over."""
    from paho.mqtt.reasoncodes import ReasonCode

    from a2a_nb.mqtt.secure import SecureBroker

    with SecureBroker() as secure:
        login = secure.credentials("cli")
        assert login.username is not None
        own_card = f"$a2a/v1/discovery/{login.username}"
        acks: dict[int, int] = {}
        c = paho_client(login, login.username)
        c.on_publish = lambda cl, u, mid, rc, p: acks.__setitem__(mid, rc.value)
        will = Properties(PacketTypes.WILLMESSAGE)
        will.UserProperty = [("a2a-status", "offline" + BOM)]
        c.will_set(own_card, b'{"name":"cli"}', qos=1, retain=True, properties=will)
        c.connect(secure.host, secure.port)
        c.loop_start()
        p = Properties(PacketTypes.PUBLISH)
        p.UserProperty = [("a2a-status", "online" + BOM)]
        info = c.publish(own_card, b'{"name":"cli"}', qos=1, retain=True, properties=p)
        assert wait_until(lambda: info.mid in acks, 10) and acks[info.mid] == 135
        c.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message"))
        c.loop_stop()
        disc = Discovery(secure.org, secure.unit, agent="discovery", broker=secure.credentials("discovery"))
        assert wait_until(lambda: disc.session.connect_count == 2 and disc.session.connected, 15), \
            "the Will passed the plugin; the session renews without retained messages"
        echo = Responder("echo", echo_handler, org=secure.org, unit=secure.unit,
                         card=echo_card(secure.org, secure.unit), broker=secure.credentials("echo"))
        assert wait_until(lambda: "echo" in disc.entries, 10), "cards published after are still seen"
        assert disc.session.connect_count == 2 and echo.session.connect_count == 1


def test_a_retained_request_is_not_read_again_at_every_connect(foreign, mallory):
    """Anyone may write an agent's request topic (the secure ACL too), so anyone could leave a request
    there retained, to be answered again (or, unreadable, to drop the agent) at every (re)subscribe.
    The agent reads its request topics live only (Retain Handling 2)."""
    unit = uid("unit")
    agent = uid("echo")
    replies: list[MqttMessage] = []
    watcher = Session(ORG, unit, uid("replies"), broker=foreign.url)
    watcher.subscribe(f"$a2a/v1/reply/{ORG}/{unit}/mallory/#", handler=replies.append)
    request = {"jsonrpc": "2.0", "id": "r1", "method": "SendMessage",
               "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "replayed"}]}}}
    ack = mallory.publish(f"$a2a/v1/request/{ORG}/{unit}/{agent}", encode_json(request),
                          ResponseTopic=f"$a2a/v1/reply/{ORG}/{unit}/mallory/x", CorrelationData=b"c1",
                          ContentType="application/json")
    assert ack == 16, "retained, nobody listening yet"
    echo = Responder(agent, echo_handler, unit=unit, card=echo_card(ORG, unit, agent), broker=foreign.url,
                     options=ResponderOptions(inline=True))
    reply = Requester(uid("req"), unit=unit, broker=foreign.url, retry=RETRY).send(agent, "live")
    assert reply.message is not None and "live" in str(reply.message)
    assert echo.stats.requests == 1 and replies == [], "the retained request was never read"
    assert echo.session.connect_count == 1 and echo.session.unreadable_drops == 0


"""Broker-managed status (Profile: Optional Broker-Managed Status via MQTT User Properties 1-4): the
kit's embedded Mosquitto with the ``a2a_status`` plugin marks an agent's card online/broker while it is
connected and publishes it offline/broker when its connection ends. Real Mosquitto, real plugin."""
from __future__ import annotations

import threading

import pytest

from a2a_nb.agents import Responder
from a2a_nb.mqtt.broker import EmbeddedBroker
from a2a_nb.mqtt.session import Session
from a2a_nb.mqtt.status_plugin import plugin_path, unavailable_reason
from a2a_nb.protocol import properties, topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import echo_card, echo_handler
from tests.waiting import wait_until
from tests.helpers import uid

ORG = "acme"
pytestmark = pytest.mark.skipif(plugin_path() is None, reason=f"the a2a_status plugin cannot be built here: "
                                f"{unavailable_reason()}")


class Cards:
    """Every card message of a unit, as (status, source, payload size), and the retained one a late reader sees."""

    def __init__(self, url: str, unit: str):
        self.url, self.unit = url, unit
        self.seen: list[tuple] = []
        self.messages: list[MqttMessage] = []
        self._lock = threading.Lock()
        self.session = Session(ORG, unit, uid("watcher"), broker=url)
        self.session.subscribe(topics.discovery_filter(ORG, unit), handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self._lock:
            self.seen.append((m.topic.rsplit("/", 1)[1], m.user_property(properties.STATUS),
                              m.user_property(properties.STATUS_SOURCE), len(m.payload)))
            self.messages.append(m)

    def of(self, agent: str) -> list[tuple]:
        with self._lock:
            return [s[1:] for s in self.seen if s[0] == agent]

    def retained(self, agent: str) -> tuple:
        got: list[MqttMessage] = []
        late = Session(ORG, self.unit, uid("late"), broker=self.url)
        late.subscribe(topics.discovery_topic(ORG, self.unit, agent), handler=got.append)
        wait_until(lambda: got, 2)
        late.close()
        return (got[0].user_property(properties.STATUS), got[0].user_property(properties.STATUS_SOURCE)) if got else ()


@pytest.fixture(scope="module")
def broker_url():
    """A broker of this module's own, with the plugin (the kit's default broker runs without it)."""
    with EmbeddedBroker(broker_status=True) as b:
        yield b.url


def test_the_broker_marks_a_connected_agents_card_online_and_a_killed_one_offline(broker_url, unit):
    cards = Cards(broker_url, unit)
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=broker_url)
    assert wait_until(lambda: ("online", "broker") in [c[:2] for c in cards.of("echo")], 3), cards.of("echo")
    assert cards.retained("echo") == ("online", "broker")
    marked = [m for m in cards.messages if m.user_property(properties.STATUS_SOURCE) == "broker"][0]
    assert marked.content_type == "application/json" and marked.json()["name"], "the rest of the card as it came"
    assert [k for k, _ in marked.user_properties].count(properties.STATUS) == 1
    echo.session.kill_socket()  # no DISCONNECT: the broker sends the will (offline, lwt), then the plugin speaks
    assert wait_until(lambda: [c[:2] for c in cards.of("echo")][-1:] == [("offline", "broker")], 5), cards.of("echo")
    assert ("offline", "lwt") in [c[:2] for c in cards.of("echo")]
    assert cards.retained("echo") == ("offline", "broker"), "the last word a late reader sees is the broker's"


def test_a_clean_goodbye_stays_the_agents_own_then_the_broker_says_offline(broker_url, unit):
    cards = Cards(broker_url, unit)
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=broker_url)
    wait_until(lambda: cards.of("echo"), 3)
    echo.stop()  # publishes offline/agent, then disconnects cleanly
    assert wait_until(lambda: [c[:2] for c in cards.of("echo")][-2:] == [("offline", "agent"), ("offline", "broker")],
                      5), cards.of("echo")


def test_an_unregistered_card_is_forgotten_and_nobody_else_speaks_for_an_agent(broker_url, unit):
    cards = Cards(broker_url, unit)
    agent = Session(ORG, unit, "gone", broker=broker_url)
    card_topic = topics.discovery_topic(ORG, unit, "gone")
    online = properties.presence_properties(properties.ONLINE, properties.SOURCE_AGENT)
    agent.publish(MqttMessage(card_topic, b'{"name":"gone"}', retain=True, user_properties=online))
    agent.publish(MqttMessage(card_topic, b"", retain=True))  # unregistered
    agent.close()
    other = Session(ORG, unit, "tool", broker=broker_url)  # a card published by another client: left as it is
    other.publish(MqttMessage(topics.discovery_topic(ORG, unit, "someone"), b'{"name":"someone"}', retain=True,
                              user_properties=online))
    other.close()
    assert wait_until(lambda: cards.of("someone"), 3)
    assert [c[:2] for c in cards.of("gone")] == [("online", "broker"), (None, None)], "nothing after unregistering"
    assert cards.of("someone") == [("online", "agent", 18)], "not its own card: not the broker's word"


def test_a_card_over_64_kib_is_forwarded_as_sent_not_marked_by_a_broker_that_could_not_say_offline(broker_url, unit):
    cards = Cards(broker_url, unit)
    big = Session(ORG, unit, "big", broker=broker_url)
    online = properties.presence_properties(properties.ONLINE, properties.SOURCE_AGENT)
    big.publish(MqttMessage(topics.discovery_topic(ORG, unit, "big"), b"x" * (64 * 1024 + 1), retain=True,
                            user_properties=online))
    assert wait_until(lambda: cards.of("big"), 3)
    big.close()
    small = Session(ORG, unit, "small", broker=broker_url)  # a later event: everything before it has arrived
    small.publish(MqttMessage(topics.discovery_topic(ORG, unit, "small"), b"{}", retain=True))
    small.close()
    assert wait_until(lambda: ("offline", "broker") in [c[:2] for c in cards.of("small")], 3)
    assert cards.of("big") == [("online", "agent", 64 * 1024 + 1)], "the agent's own word, and no offline/broker"


def test_a_broker_without_the_plugin_leaves_cards_as_agents_publish_them(unit):
    with EmbeddedBroker(broker_status=False) as plain:
        assert "a2a_status" not in (plain.workdir / "mosquitto.conf").read_text()
        cards = Cards(plain.url, unit)
        Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=plain.url)
        assert wait_until(lambda: cards.of("echo"), 3)
        assert [c[:2] for c in cards.of("echo")] == [("online", "agent")]


def test_the_kits_discovery_ends_on_the_brokers_offline_after_a_crash(broker_url, unit):
    """Profile: Optional Broker-Managed Status 4: what a learner's Discovery shows is the broker's word,
    online while the agent is connected, offline once its connection is gone (the Last Will came first,
    and stays behind the broker's word)."""
    from a2a_nb.agents.discovery import Discovery

    cards = Cards(broker_url, unit)
    with Discovery(ORG, unit, broker=broker_url) as disco:
        echo = Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=broker_url)
        disco.wait_for("echo", status="online")
        assert wait_until(lambda: disco.get("echo").status_source == "broker", 3), disco.get("echo")
        echo.crash()  # the process dies: no goodbye, no reconnect; the will, then the broker's word
        assert wait_until(lambda: [c[:2] for c in cards.of("echo")][-1:] == [("offline", "broker")], 5), cards.of("echo")
        assert wait_until(lambda: (disco.get("echo").status, disco.get("echo").status_source) == ("offline", "broker"),
                          2), disco.get("echo")
        assert ("offline", "lwt") in [c[:2] for c in cards.of("echo")]  # it came, and did not win

"""What the ``a2a_status`` plugin keeps is bounded, and what it does when it cannot keep a card (issue 18, 10).

Who can send it what: any client that may publish its own card topic (on ``broker --secure`` each login
has one, ``$a2a/v1/discovery/{org}/{unit}/{login}``; on an open broker anybody, under any client id).
Bounds (``plugins/a2a_status.c``): per card at most 64 KiB of payload and 4 KiB of property strings,
at most ``max_agents`` cards (1,024; ``plugin_opt_max_agents``): 68 MiB at most in all. A card it
cannot keep (too big, or every slot taken) is forwarded exactly as the agent sent it, never marked
by the broker, so the broker never says "online" for an agent it could not later say "offline" for;
a slot frees when its agent disconnects. Before: the properties were copied whatever their size
(40 agents x 4 MB: +155 MB in Mosquitto, then published again, retained, as the offline card), and an
agent beyond the 1,024th was marked online/broker but never offline.
"""
from __future__ import annotations


import pytest

from a2a_nb.mqtt.broker import EmbeddedBroker
from a2a_nb.mqtt.session import Session
from a2a_nb.mqtt.status_plugin import plugin_path, unavailable_reason
from a2a_nb.protocol import properties, topics
from a2a_nb.protocol.packet import MqttMessage
from tests.integration.test_broker_status import ORG, Cards
from tests.waiting import wait_until
from tests.helpers import uid

pytestmark = pytest.mark.skipif(plugin_path() is None, reason=f"the a2a_status plugin cannot be built here: "
                                f"{unavailable_reason()}")

ONLINE = properties.presence_properties(properties.ONLINE, properties.SOURCE_AGENT)


def card(unit: str, agent: str, extra: tuple = ()) -> MqttMessage:
    return MqttMessage(topics.discovery_topic(ORG, unit, agent), b'{"name":"%s"}' % agent.encode(), retain=True,
                       user_properties=tuple(ONLINE) + extra)


def test_a_card_with_more_than_4_kib_of_properties_is_not_kept_nor_published_again():
    with EmbeddedBroker(broker_status=True) as b:
        unit = uid("u")
        cards = Cards(b.url, unit)
        fat = Session(ORG, unit, "fat", broker=b.url)
        fat.publish(card(unit, "fat", (("padding", "x" * 60_000),) * 16))  # ~1 MB: the attack was 40 x 4 MB
        fit = Session(ORG, unit, "fit", broker=b.url)
        fit.publish(card(unit, "fit", (("padding", "x" * 3000),)))  # within 4 KiB: kept
        assert wait_until(lambda: cards.of("fat") and cards.of("fit"), 5)
        fat.kill_socket()
        fit.kill_socket()
        assert wait_until(lambda: ("offline", "broker") in [c[:2] for c in cards.of("fit")], 5), cards.of("fit")
        assert [c[:2] for c in cards.of("fat")] == [("online", "agent")], "as sent; the broker says nothing of it"
        assert cards.retained("fat") == ("online", "agent"), "no 1 MB offline copy retained by the broker"


def test_when_every_slot_is_taken_cards_pass_as_sent_and_a_freed_slot_is_used_again():
    with EmbeddedBroker(broker_status=True, extra_config="plugin_opt_max_agents 2") as b:
        unit = uid("u")
        cards = Cards(b.url, unit)
        a, bee, extra = (Session(ORG, unit, name, broker=b.url) for name in ("a", "b", "extra"))
        for s, name in ((a, "a"), (bee, "b"), (extra, "extra")):
            s.publish(card(unit, name))
        assert wait_until(lambda: cards.of("extra"), 5)
        assert [c[:2] for c in cards.of("a") + cards.of("b")] == [("online", "broker")] * 2
        assert [c[:2] for c in cards.of("extra")] == [("online", "agent")], "full: forwarded as the agent sent it"
        extra.kill_socket()
        a.kill_socket()  # frees a slot
        assert wait_until(lambda: ("offline", "broker") in [c[:2] for c in cards.of("a")], 5)
        late = Session(ORG, unit, "late", broker=b.url)
        late.publish(card(unit, "late"))
        assert wait_until(lambda: cards.of("late"), 5)
        assert [c[:2] for c in cards.of("late")] == [("online", "broker")], "the freed slot serves the next agent"
        assert [c[:2] for c in cards.of("extra")] == [("online", "agent")], "never marked offline by the broker"
        log = (b.workdir / "mosquitto.log").read_text()
        assert "a2a_status: 2 agents watched (the most it keeps): the card of acme/%s/extra" % unit in log

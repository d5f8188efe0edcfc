"""The CONNACK's capabilities and the kit's rules about them (MQTT v5 §3.2.2.3), as pure values."""
from __future__ import annotations

from a2a_nb.mqtt.capabilities import (BrokerCapabilities, connect_refused_words, publish_refused_words)
from a2a_nb.protocol import properties


def test_absent_properties_mean_mqtts_generous_defaults():
    caps = BrokerCapabilities.from_connack({})
    assert caps == BrokerCapabilities()
    assert caps.retain and caps.wildcards and caps.shared_subscriptions and caps.max_qos == 2
    assert caps.receive_maximum == 65535 and caps.max_packet_size is None and caps.profile_gaps() == []


def test_connack_properties_are_read_by_their_paho_names():
    caps = BrokerCapabilities.from_connack({"RetainAvailable": 0, "WildcardSubscriptionAvailable": 0,
                                            "SharedSubscriptionAvailable": 0, "MaximumQoS": 0,
                                            "ReceiveMaximum": 10, "MaximumPacketSize": 1000, "TopicAliasMaximum": 5})
    assert (caps.retain, caps.wildcards, caps.shared_subscriptions) == (False, False, False)
    assert (caps.max_qos, caps.receive_maximum, caps.max_packet_size, caps.topic_alias_maximum) == (0, 10, 1000, 5)
    gaps = caps.profile_gaps()
    assert len(gaps) == 4 and any("retained Agent Cards (Core)" in g for g in gaps)


def test_subscriptions_the_broker_said_it_cannot_take_are_refused_before_sending():
    caps = BrokerCapabilities(shared_subscriptions=False, wildcards=False)
    assert "Shared Subscription Available = 0" in caps.refuse_subscription("$share/g/$a2a/v1/request/o/u/pool/p")
    assert "Wildcard" in caps.refuse_subscription("$a2a/v1/discovery/o/u/+")
    assert "Wildcard" in caps.refuse_subscription("$a2a/v1/reply/o/u/a/#")
    assert caps.refuse_subscription("$a2a/v1/request/o/u/echo") is None
    assert caps.refuse_subscription("$a2a/v1/request/o/u/a+b") is None  # a + inside a level is no wildcard


def test_publishes_the_broker_cannot_take_are_refused_with_the_reason():
    assert "Retain Available = 0" in BrokerCapabilities(retain=False).refuse_publish("t", 1, True)
    assert BrokerCapabilities(retain=False).refuse_publish("t", 1, False) is None
    assert "the profile needs QoS 1" in BrokerCapabilities(max_qos=0).refuse_publish("t", 1, False)
    small = BrokerCapabilities(max_packet_size=100)
    assert "over the broker's Maximum Packet Size of 100" in small.refuse_publish("t", 1, False, size=101)
    assert small.refuse_publish("t", 1, False, size=100) is None


def test_the_inflight_limit_stays_within_receive_maximum():
    assert BrokerCapabilities().inflight_limit(0) == 0 and BrokerCapabilities().inflight_limit(20) == 20
    assert BrokerCapabilities(receive_maximum=5).inflight_limit(0) == 5
    assert BrokerCapabilities(receive_maximum=5).inflight_limit(20) == 5
    assert BrokerCapabilities(receive_maximum=50).inflight_limit(20) == 20


def test_topic_name_invalid_on_a_dollar_topic_is_explained():
    assert "cannot carry the profile" in connect_refused_words(0x90, "$a2a/v1/discovery/o/u/a")
    assert connect_refused_words(0x90, "plain/topic") is None and connect_refused_words(0x87, "$a2a/x") is None
    assert "cannot carry the profile" in publish_refused_words(0x90, "$a2a/v1/request/o/u/a")
    assert publish_refused_words(0x90, "plain") is None


def test_a_binary_chunk_is_known_by_its_user_properties_with_or_without_pfi_0():
    chunk = properties.chunk_properties("t1", "a1", 3, False)
    assert properties.is_binary_chunk(chunk, 0) and properties.is_binary_chunk(chunk, None)
    assert not properties.is_binary_chunk(chunk, 1), "PFI 1 means UTF-8 text: JSON"
    assert not properties.is_binary_chunk(((properties.EVENT_TYPE, properties.EVENT_ARTIFACT_UPDATE),), None)
    assert not properties.is_binary_chunk((), 0)

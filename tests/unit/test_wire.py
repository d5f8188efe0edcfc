"""The PUBLISH / PUBACK codec of mqtt/wire.py (MQTT v5 §3.3, §3.4) against paho's public ``Properties``."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt import wire
from a2a_nb.mqtt.wire import MalformedPacket, decode_puback, decode_publish, variable_byte_integer
from a2a_nb.protocol.packet import MqttMessage


def publish_packet(topic: str, payload: bytes, qos: int = 1, mid: int = 7, props: Properties = None) -> bytes:
    """A PUBLISH variable header + payload as a broker sends it, properties packed by paho."""
    body = struct.pack("!H", len(topic.encode())) + topic.encode()
    if qos:
        body += struct.pack("!H", mid)
    body += props.pack() if props is not None else b"\x00"
    return body + payload


def full_props() -> Properties:
    p = Properties(PacketTypes.PUBLISH)
    p.PayloadFormatIndicator = 1
    p.MessageExpiryInterval = 70000
    p.ContentType = "application/json"
    p.ResponseTopic = "$a2a/v1/reply/acme/support/é/x"
    p.CorrelationData = bytes(range(40))
    p.UserProperty = [("a2a-stream-seq", "3"), ("k", "v é"), ("a2a-stream-seq", "4")]
    return p


def test_every_property_reads_as_paho_reads_it():
    packet = publish_packet("$a2a/v1/reply/acme/support/req/r1", b'{"ok":true}', props=full_props())
    msg, mid = decode_publish(0x32, packet)  # PUBLISH, QoS 1
    assert mid == 7 and msg.topic == "$a2a/v1/reply/acme/support/req/r1" and msg.payload == b'{"ok":true}'
    p = Properties(PacketTypes.PUBLISH)
    p.unpack(full_props().pack())  # what paho reads from the same property bytes
    assert (msg.payload_format, msg.message_expiry, msg.content_type) == (1, 70000, "application/json")
    assert msg.response_topic == p.ResponseTopic and msg.correlation_data == p.CorrelationData
    assert list(msg.user_properties) == p.UserProperty and msg.user_property("a2a-stream-seq") == "4"
    assert msg.qos == 1 and not msg.retain and msg.received_at is not None


def test_qos0_has_no_packet_identifier_and_retain_is_read():
    msg, mid = decode_publish(0x31, publish_packet("t/a", b"x", qos=0))  # QoS 0, retain
    assert (mid, msg.qos, msg.retain, msg.payload, msg.user_properties) == (0, 0, True, b"x", ())
    assert msg.correlation_data is None and msg.response_topic is None


def test_skips_the_properties_the_kit_never_asks_for():
    p = Properties(PacketTypes.PUBLISH)
    p.SubscriptionIdentifier = [300]
    p.TopicAlias = 5
    msg, _ = decode_publish(0x32, publish_packet("t", b"p", props=p))
    assert msg.payload == b"p" and msg.topic == "t"


@pytest.mark.parametrize("packet, why", [
    (b"\x00", "field runs past"),
    (b"\x00\x05abc", "field runs past"),
    (b"\x00\x01t\x00", "packet identifier"),
    (b"\x00\x01t\x00\x01\x05\x01", "runs past"),
    (b"\x00\x01t\x00\x01\x02\x63\x00", "unknown"),
    (b"\x00\x02\xff\xfe\x00\x01\x00", "not valid UTF-8"),
    (b"\x00\x01t\x00\x01\xff\xff\xff\xff\x01", "Variable Byte Integer"),
    (b"\x00\x01t\x00\x01\x03\x09\x00\x05", "runs past"),
])
def test_malformed_publish_is_refused(packet, why):
    with pytest.raises(MalformedPacket, match=why):
        decode_publish(0x32, packet)


def test_puback_without_properties_is_read_and_with_properties_left_to_paho():
    assert decode_puback(b"\x01\x02") == (258, 0)
    assert decode_puback(b"\x01\x02\x10") == (258, 16)
    assert decode_puback(b"\x01\x02\x87\x00") == (258, 0x87)
    reason = Properties(PacketTypes.PUBACK)
    reason.ReasonString = "not authorized"
    assert decode_puback(b"\x01\x02\x87" + reason.pack()) is None
    with pytest.raises(MalformedPacket):
        decode_puback(b"\x01")


def test_variable_byte_integer_matches_the_spec_examples():
    assert variable_byte_integer(b"\x00", 0) == (0, 1)
    assert variable_byte_integer(b"\x7f", 0) == (127, 1)
    assert variable_byte_integer(b"\x80\x01", 0) == (128, 2)
    assert variable_byte_integer(b"\xff\xff\xff\x7f", 0) == (268_435_455, 4)
    with pytest.raises(MalformedPacket):
        variable_byte_integer(b"\x80", 0)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64), st.sampled_from([0x30, 0x31, 0x32, 0x33]))
def test_random_bytes_never_raise_anything_but_malformed_packet(data, command):
    try:
        msg, mid = decode_publish(command, data)
    except MalformedPacket:
        return
    assert isinstance(msg.topic, str) and 0 <= mid <= 0xFFFF


@settings(max_examples=200, deadline=None)
@given(topic=st.text(min_size=1, max_size=30), payload=st.binary(max_size=200),
       corr=st.binary(max_size=40), users=st.lists(st.tuples(st.text(max_size=10), st.text(max_size=10)), max_size=4))
def test_round_trip_of_random_messages(topic, payload, corr, users):
    p = Properties(PacketTypes.PUBLISH)
    p.CorrelationData = corr
    if users:
        p.UserProperty = users
    msg, _ = decode_publish(0x32, publish_packet(topic, payload, props=p))
    assert (msg.topic, msg.payload, msg.correlation_data, list(msg.user_properties)) == (topic, payload, corr, users)


def test_wire_has_no_paho_import():
    source = open(wire.__file__).read()
    assert "import paho" not in source and "from paho" not in source


def test_packing_and_reading_agree_and_the_length_prefix_matches_paho():
    from paho.mqtt.properties import VariableByteIntegers

    for v in (0, 127, 128, 16_383, 16_384, 2_097_152, 268_435_455):
        assert wire.encode_variable_byte_integer(v) == VariableByteIntegers.encode(v)
    props = wire.encode_publish_properties(1, 60, "application/json", "r/t", b"\x00\x01", [("a2a-x", "é")])
    msg, mid = decode_publish(0x32, b"\x00\x01t\x00\x09" + props + b"payload")
    assert (mid, msg.payload_format, msg.message_expiry, msg.content_type, msg.response_topic) == \
        (9, 1, 60, "application/json", "r/t")
    assert msg.correlation_data == b"\x00\x01" and msg.user_properties == (("a2a-x", "é"),) and msg.payload == b"payload"


def test_a_whole_publish_packet_reads_back_and_its_properties_are_paho_s():
    """encode_publish spells out a whole PUBLISH: fixed header, Remaining Length, topic, packet
    identifier, the properties exactly as paho packs them, payload."""
    m = MqttMessage("$a2a/v1/reply/acme/support/req/r1", b'{"ok":true}' * 20, qos=1, retain=True,
                    correlation_data=bytes(16), user_properties=(("a2a-stream-seq", "3"),), content_type="application/json")
    packet = wire.encode_publish(m, mid=513)
    command, rest = wire.split_packet(packet)
    assert command == 0x33 and packet[1:3] == wire.encode_variable_byte_integer(len(rest))  # 259 bytes: two-byte length
    back, mid = decode_publish(command, rest)
    assert back == m and mid == 513
    paho = Properties(PacketTypes.PUBLISH)
    paho.CorrelationData = m.correlation_data
    paho.UserProperty = list(m.user_properties)
    paho.ContentType = m.content_type
    topic_and_mid = 2 + len(m.topic) + 2
    assert rest[topic_and_mid:topic_and_mid + len(paho.pack())] == paho.pack()
    assert wire.encode_publish(MqttMessage("t", b"x", qos=0)) == b"\x30\x05\x00\x01t\x00x"
    with pytest.raises(ValueError, match="packet identifier"):
        wire.encode_publish(MqttMessage("t", b"x", qos=1))
    with pytest.raises(MalformedPacket, match="Remaining Length"):
        wire.split_packet(packet[:-1])


def test_a_publish_piece_by_piece_is_the_packet_and_each_piece_says_its_value():
    msg = MqttMessage("$a2a/v1/request/acme/support/desk", b'{"id":1}', qos=1, response_topic="$a2a/v1/reply/r/é",
                      correlation_data=b"c0ffee", message_expiry=20, user_properties=(("a2a-k", "v"),))
    fields = wire.publish_fields(msg, mid=300)
    assert b"".join(f.data for f in fields) == wire.encode_publish(msg, 300)
    assert [f.name for f in fields] == [
        "Packet type and flags", "Remaining Length", "Topic Name", "Packet Identifier", "Property Length",
        "Message Expiry Interval", "Response Topic", "Correlation Data", "User Property", "Payload"]
    by = {f.name: f for f in fields}
    assert by["Packet type and flags"].data == b"\x32" and by["Packet type and flags"].says == "PUBLISH, QoS 1"
    assert by["Packet Identifier"].data == b"\x01\x2c"
    assert by["Response Topic"].data[by["Response Topic"].value_at:] == "$a2a/v1/reply/r/é".encode()
    assert by["Correlation Data"].data[:3] == b"\x09\x00\x06" and by["Correlation Data"].says == "c0ffee"
    assert by["Topic Name"].data[by["Topic Name"].value_at:] == msg.topic.encode()
    assert by["Message Expiry Interval"].data[1:] == (20).to_bytes(4, "big")
    assert by["Payload"].says == '{"id":1}'
    assert wire.publish_fields(MqttMessage("t", b"\xff" * 3, qos=0))[-1].says == "3 bytes"
    assert wire.publish_fields(MqttMessage("t", b"x" * 60, qos=0))[-1].says == "x" * 48 + "…"
    remaining = sum(len(f.data) for f in fields[2:])
    assert by["Remaining Length"].says == f"{remaining} bytes follow"
    retained = wire.publish_fields(MqttMessage("t", b"x", qos=0, retain=True))
    assert [f.name for f in retained] == ["Packet type and flags", "Remaining Length", "Topic Name", "Property Length",
                                          "Payload"]
    assert retained[0].says == "PUBLISH, QoS 0, RETAIN"

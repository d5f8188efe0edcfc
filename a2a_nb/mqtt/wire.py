"""What an MQTT v5 PUBLISH looks like on the wire: a pure, tested codec for lessons and tools.

The kit's session does not use it: paho-mqtt reads and writes every packet through its public API
(see :mod:`.session`). This module spells out the bytes of the one packet the A2A profile lives in
(MQTT v5 §3.3 PUBLISH: fixed header, topic, packet identifier, properties §2.2.2, payload; §3.4
PUBACK: packet identifier, reason code), so a learner can build a message and see every byte of it,
and read a captured packet back. tests/unit/test_wire.py checks it against paho's own ``Properties``.
Pure functions: no I/O, no paho.
"""
from __future__ import annotations

import struct
import time
from typing import Iterable, Optional

from ..protocol.packet import MqttMessage

# PUBLISH property identifiers (MQTT v5 §3.3.2.3)
PAYLOAD_FORMAT, MESSAGE_EXPIRY, CONTENT_TYPE, RESPONSE_TOPIC, CORRELATION_DATA = 0x01, 0x02, 0x03, 0x08, 0x09
SUBSCRIPTION_IDENTIFIER, TOPIC_ALIAS, USER_PROPERTY = 0x0B, 0x23, 0x26


class MalformedPacket(ValueError):
    """The bytes do not form the packet they claim to be (MQTT v5 §4.13: close the connection)."""


def variable_byte_integer(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the Variable Byte Integer at ``pos`` (MQTT v5 §1.5.5)."""
    value, shift = 0, 0
    for i in range(4):
        if pos + i >= len(buf):
            break
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + i + 1
        shift += 7
    raise MalformedPacket("malformed Variable Byte Integer")


def encode_variable_byte_integer(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | 0x80 if value else byte)
        if not value:
            return bytes(out)


def _utf8(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("!H", len(data)) + data


def encode_publish_properties(payload_format: Optional[int] = None, expiry: Optional[int] = None,
                              content_type: Optional[str] = None, response_topic: Optional[str] = None,
                              correlation: Optional[bytes] = None,
                              user: Iterable[tuple[str, str]] = ()) -> bytes:
    """The properties of a PUBLISH (or a will), length first (MQTT v5 §2.2.2: identifier, value)."""
    out = bytearray()
    if payload_format is not None:
        out += bytes((PAYLOAD_FORMAT, payload_format))
    if expiry is not None:
        out += bytes((MESSAGE_EXPIRY,)) + struct.pack("!I", expiry)
    if content_type is not None:
        out += bytes((CONTENT_TYPE,)) + _utf8(content_type)
    if response_topic is not None:
        out += bytes((RESPONSE_TOPIC,)) + _utf8(response_topic)
    if correlation is not None:
        out += bytes((CORRELATION_DATA,)) + struct.pack("!H", len(correlation)) + correlation
    for key, value in user:
        out += bytes((USER_PROPERTY,)) + _utf8(key) + _utf8(value)
    return encode_variable_byte_integer(len(out)) + bytes(out)


def encode_publish(msg: MqttMessage, mid: int = 0) -> bytes:
    """The whole PUBLISH packet of ``msg`` (MQTT v5 §3.3): fixed header (type 3, DUP 0, QoS, RETAIN;
    Remaining Length), topic, packet identifier (QoS 1 and 2 only), properties, payload."""
    if msg.qos and not 0 < mid <= 0xFFFF:
        raise ValueError("a QoS 1 or 2 PUBLISH needs a packet identifier from 1 to 65535")
    correlation = bytes(msg.correlation_data) if msg.correlation_data is not None else None
    variable = _utf8(msg.topic) + (struct.pack("!H", mid) if msg.qos else b"") + encode_publish_properties(
        msg.payload_format, msg.message_expiry, msg.content_type, msg.response_topic, correlation,
        msg.user_properties)
    command = 0x30 | (msg.qos << 1) | (0x01 if msg.retain else 0x00)
    body = variable + bytes(msg.payload)
    return bytes((command,)) + encode_variable_byte_integer(len(body)) + body


def split_packet(packet: bytes) -> tuple[int, bytes]:
    """(first byte of the fixed header, what follows the Remaining Length) of one whole packet
    (MQTT v5 §2.1): the two arguments :func:`decode_publish` takes."""
    if not packet:
        raise MalformedPacket("an empty packet has no fixed header")
    length, start = variable_byte_integer(packet, 1)
    if start + length != len(packet):
        raise MalformedPacket(f"Remaining Length says {length} bytes, {len(packet) - start} follow")
    return packet[0], packet[start:]


def _chunk(buf: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """A two-byte-length-prefixed field (string or binary data, MQTT v5 §1.5.4 / §1.5.6)."""
    if pos + 2 > end:
        raise MalformedPacket("a length-prefixed field runs past its packet")
    stop = pos + 2 + ((buf[pos] << 8) | buf[pos + 1])
    if stop > end:
        raise MalformedPacket("a length-prefixed field runs past its packet")
    return bytes(buf[pos + 2:stop]), stop


def _text(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    raw, pos = _chunk(buf, pos, end)
    try:
        return raw.decode("utf-8"), pos
    except UnicodeDecodeError:
        raise MalformedPacket("a UTF-8 string field is not valid UTF-8") from None


def decode_publish(command: int, packet: bytes) -> tuple[MqttMessage, int]:
    """The message of a PUBLISH (``command`` is the fixed header's first byte, ``packet`` what
    follows the remaining length) and its packet identifier (0 for QoS 0)."""
    qos = (command >> 1) & 0x03
    end = len(packet)
    topic, pos = _text(packet, 0, end)
    mid = 0
    if qos:
        if pos + 2 > end:
            raise MalformedPacket("PUBLISH too short for its packet identifier")
        mid = (packet[pos] << 8) | packet[pos + 1]
        pos += 2
    length, pos = variable_byte_integer(packet, pos)
    stop = pos + length
    if stop > end:
        raise MalformedPacket("PUBLISH properties: their length runs past the packet")
    response_topic: Optional[str] = None
    correlation: Optional[bytes] = None
    content_type: Optional[str] = None
    expiry: Optional[int] = None
    payload_format: Optional[int] = None
    user: list[tuple[str, str]] = []
    while pos < stop:
        ident = packet[pos]
        pos += 1
        if ident == USER_PROPERTY:
            key, pos = _text(packet, pos, stop)
            value, pos = _text(packet, pos, stop)
            user.append((key, value))
        elif ident == CORRELATION_DATA:
            correlation, pos = _chunk(packet, pos, stop)
        elif ident == RESPONSE_TOPIC:
            response_topic, pos = _text(packet, pos, stop)
        elif ident == CONTENT_TYPE:
            content_type, pos = _text(packet, pos, stop)
        elif ident == PAYLOAD_FORMAT and pos < stop:
            payload_format, pos = packet[pos], pos + 1
        elif ident == MESSAGE_EXPIRY and pos + 4 <= stop:
            expiry, pos = int.from_bytes(packet[pos:pos + 4], "big"), pos + 4
        elif ident == TOPIC_ALIAS and pos + 2 <= stop:
            pos += 2  # the kit never allows topic aliases (CONNECT has no Topic Alias Maximum)
        elif ident == SUBSCRIPTION_IDENTIFIER:
            _, pos = variable_byte_integer(packet, pos)  # the kit never sets subscription identifiers
        else:
            raise MalformedPacket(f"PUBLISH property 0x{ident:02x} is unknown or truncated")
    if pos != stop:
        raise MalformedPacket("PUBLISH properties overrun their length")
    msg = MqttMessage(topic=topic, payload=bytes(packet[stop:]), qos=qos, retain=bool(command & 0x01),
                      response_topic=response_topic, correlation_data=correlation, user_properties=tuple(user),
                      content_type=content_type, message_expiry=expiry, payload_format=payload_format,
                      received_at=time.time())
    return msg, mid


def decode_puback(packet: bytes) -> Optional[tuple[int, int]]:
    """(packet identifier, reason code) of a PUBACK without properties (MQTT v5 §3.4.2: a missing
    reason code means 0 Success); None when it carries properties (a reason string) for paho to read."""
    if len(packet) == 2:
        return (packet[0] << 8) | packet[1], 0
    if len(packet) == 3 or (len(packet) == 4 and packet[3] == 0):
        return (packet[0] << 8) | packet[1], packet[2]
    if len(packet) < 2:
        raise MalformedPacket("PUBACK too short for its packet identifier")
    return None

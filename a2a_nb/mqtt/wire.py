"""What an MQTT v5 PUBLISH looks like on the wire: a pure, tested codec for lessons and tools.

The kit's session does not use it: paho-mqtt reads and writes every packet through its public API
(see :mod:`.session`). This module spells out the bytes of the one packet the A2A profile lives in
(MQTT v5 §3.3 PUBLISH: fixed header, topic, packet identifier, properties §2.2.2, payload; §3.4
PUBACK: packet identifier, reason code), so a learner can build a message and see every byte of it,
and read a captured packet back (lesson 02 shows a request with :func:`publish_fields`).
tests/unit/test_wire.py checks it against paho's own ``Properties``.
Pure functions: no I/O, no paho.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import Iterable, Optional

from ..error_base import A2ANbError
from ..protocol.ids import readable_correlation
from ..protocol.packet import MqttMessage

# PUBLISH property identifiers (MQTT v5 §3.3.2.3)
PAYLOAD_FORMAT, MESSAGE_EXPIRY, CONTENT_TYPE, RESPONSE_TOPIC, CORRELATION_DATA = 0x01, 0x02, 0x03, 0x08, 0x09
SUBSCRIPTION_IDENTIFIER, TOPIC_ALIAS, USER_PROPERTY = 0x0B, 0x23, 0x26


class MalformedPacket(A2ANbError, ValueError):
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


@dataclass(frozen=True)
class Field:
    """One piece of a packet, in wire order: its name, its bytes, and what they say. The bytes
    before ``value_at`` are structure (a property identifier, a length prefix), the rest its value."""

    name: str
    data: bytes
    says: str
    value_at: int = 0


def _property_fields(payload_format: Optional[int], expiry: Optional[int], content_type: Optional[str],
                     response_topic: Optional[str], correlation: Optional[bytes],
                     user: Iterable[tuple[str, str]]) -> list[Field]:
    """Each property of a PUBLISH: its identifier byte, then its value (MQTT v5 §2.2.2.2, §3.3.2.3)."""
    out = []
    if payload_format is not None:
        out.append(Field("Payload Format Indicator", bytes((PAYLOAD_FORMAT, payload_format)),
                         "UTF-8 text" if payload_format == 1 else "bytes", 1))
    if expiry is not None:
        out.append(Field("Message Expiry Interval", bytes((MESSAGE_EXPIRY,)) + struct.pack("!I", expiry), f"{expiry} s", 1))
    if content_type is not None:
        out.append(Field("Content Type", bytes((CONTENT_TYPE,)) + _utf8(content_type), content_type, 3))
    if response_topic is not None:
        out.append(Field("Response Topic", bytes((RESPONSE_TOPIC,)) + _utf8(response_topic), response_topic, 3))
    if correlation is not None:
        out.append(Field("Correlation Data", bytes((CORRELATION_DATA,)) + struct.pack("!H", len(correlation)) + correlation,
                         readable_correlation(correlation), 3))
    for key, value in user:
        out.append(Field("User Property", bytes((USER_PROPERTY,)) + _utf8(key) + _utf8(value), f"{key}={value}", 1))
    return out


def encode_publish_properties(payload_format: Optional[int] = None, expiry: Optional[int] = None,
                              content_type: Optional[str] = None, response_topic: Optional[str] = None,
                              correlation: Optional[bytes] = None,
                              user: Iterable[tuple[str, str]] = ()) -> bytes:
    """The properties of a PUBLISH (or a will), length first (MQTT v5 §2.2.2: identifier, value)."""
    props = b"".join(f.data for f in _property_fields(payload_format, expiry, content_type, response_topic,
                                                      correlation, user))
    return encode_variable_byte_integer(len(props)) + props


def publish_fields(msg: MqttMessage, mid: int = 0) -> list[Field]:
    """The PUBLISH packet of ``msg`` piece by piece, in wire order (MQTT v5 §3.3): fixed header
    (type 3, DUP 0, QoS, RETAIN; Remaining Length), topic, packet identifier (QoS 1 and 2 only),
    property length, each property, payload. A lesson shows them; :func:`encode_publish` joins them."""
    if msg.qos and not 0 < mid <= 0xFFFF:
        raise ValueError("a QoS 1 or 2 PUBLISH needs a packet identifier from 1 to 65535")
    correlation = bytes(msg.correlation_data) if msg.correlation_data is not None else None
    props = _property_fields(msg.payload_format, msg.message_expiry, msg.content_type, msg.response_topic,
                             correlation, msg.user_properties)
    props_length = sum(len(f.data) for f in props)
    body = [Field("Topic Name", _utf8(msg.topic), msg.topic, 2)]
    if msg.qos:
        body.append(Field("Packet Identifier", struct.pack("!H", mid), f"{mid} (its PUBACK names it)"))
    body.append(Field("Property Length", encode_variable_byte_integer(props_length), f"{props_length} bytes"))
    body += props
    body.append(Field("Payload", bytes(msg.payload), _payload_says(bytes(msg.payload))))
    remaining = sum(len(f.data) for f in body)
    command = 0x30 | (msg.qos << 1) | (0x01 if msg.retain else 0x00)
    header = [Field("Packet type and flags", bytes((command,)),
                    f"PUBLISH, QoS {msg.qos}" + (", RETAIN" if msg.retain else "")),
              Field("Remaining Length", encode_variable_byte_integer(remaining), f"{remaining} bytes follow")]
    return header + body


def _payload_says(payload: bytes, shown: int = 48) -> str:
    """The payload's start when it is text (A2A's JSON), else its size."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return f"{len(payload)} bytes"
    return text if len(text) <= shown else text[:shown] + "…"


def encode_publish(msg: MqttMessage, mid: int = 0) -> bytes:
    """The whole PUBLISH packet of ``msg`` (MQTT v5 §3.3): its :func:`publish_fields`, joined."""
    return b"".join(f.data for f in publish_fields(msg, mid))


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

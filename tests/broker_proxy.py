"""A TCP proxy in front of a real Mosquitto that makes it behave like a more limited broker.

Issue [17] found brokers that (a) say Shared Subscription Available = 0 in their CONNACK, (b) refuse
every topic starting with ``$`` (ejabberd: a will on ``$a2a/...`` gets CONNACK 144, a PUBLISH PUBACK
144), (c) drop an explicit Payload Format Indicator 0. The proxy reproduces each on demand, packet by
packet (the kit's own wire codec, ``a2a_nb.mqtt.wire``), and counts what the client sent, so a test can
show how the kit copes with such a broker without installing one. Everything else passes through.
"""
from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, replace
from typing import Optional

from a2a_nb.mqtt import wire

CONNECT, CONNACK, PUBLISH, PUBACK, SUBSCRIBE = 1, 2, 3, 4, 8
SHARED_SUBSCRIPTION_AVAILABLE, RECEIVE_MAXIMUM, MAXIMUM_PACKET_SIZE = 0x2A, 0x21, 0x27
TOPIC_NAME_INVALID = 0x90


@dataclass
class Limits:
    no_shared: bool = False  # CONNACK: Shared Subscription Available = 0
    refuse_dollar: bool = False  # wills and PUBLISHes on $ topics refused with 144
    drop_pfi: bool = False  # PUBLISHes to clients lose their Payload Format Indicator
    receive_maximum: Optional[int] = None  # CONNACK: Receive Maximum
    max_packet_size: Optional[int] = None  # CONNACK: Maximum Packet Size


_FIXED_SIZE = {0x01: 1, 0x02: 4, 0x11: 4, 0x13: 2, 0x17: 1, 0x19: 1, 0x21: 2, 0x22: 2, 0x23: 2, 0x24: 1, 0x25: 1,
               0x27: 4, 0x28: 1, 0x29: 1, 0x2A: 1}


def _properties(props: bytes) -> list[tuple[int, bytes]]:
    """(identifier, raw value) of each property (MQTT v5 §2.2.2.2)."""
    out, pos = [], 0
    while pos < len(props):
        ident, pos = props[pos], pos + 1
        start = pos
        if ident in _FIXED_SIZE:
            pos += _FIXED_SIZE[ident]
        elif ident == 0x0B:
            _, pos = wire.variable_byte_integer(props, pos)
        elif ident == 0x26:
            for _ in range(2):
                pos += 2 + struct.unpack("!H", props[pos:pos + 2])[0]
        else:  # strings and binary data
            pos += 2 + struct.unpack("!H", props[pos:pos + 2])[0]
        out.append((ident, props[start:pos]))
    return out


def _read_packet(sock: socket.socket, buf: bytearray) -> Optional[bytes]:
    """One whole MQTT packet from ``sock`` (``buf`` keeps what was read beyond it); None at EOF."""
    while True:
        if len(buf) >= 2:
            try:
                length, start = wire.variable_byte_integer(bytes(buf[:5]), 1)
            except wire.MalformedPacket:
                length, start = -1, 0
            if length >= 0 and len(buf) >= start + length:
                packet = bytes(buf[:start + length])
                del buf[:start + length]
                return packet
        data = sock.recv(65536)
        if not data:
            return None
        buf += data


def _packet(command: int, body: bytes) -> bytes:
    return bytes((command,)) + wire.encode_variable_byte_integer(len(body)) + body


def _will_topic(body: bytes) -> Optional[str]:
    """The will topic of a CONNECT (MQTT v5 §3.1.3), or None without a will."""
    pos = 2 + struct.unpack("!H", body[:2])[0]  # protocol name
    flags = body[pos + 1]
    pos += 4  # level, flags, keep alive
    plen, pos = wire.variable_byte_integer(body, pos)
    pos += plen
    cid_len = struct.unpack("!H", body[pos:pos + 2])[0]
    pos += 2 + cid_len
    if not flags & 0x04:
        return None
    wlen, pos = wire.variable_byte_integer(body, pos)
    pos += wlen
    tlen = struct.unpack("!H", body[pos:pos + 2])[0]
    return body[pos + 2:pos + 2 + tlen].decode()


class LimitedBroker:
    """``LimitedBroker(upstream_port, Limits(...))``: a loopback port (``.port``, ``.url``) in front of
    the broker. ``shared_subscribes`` counts SUBSCRIBE packets naming ``$share/``."""

    def __init__(self, upstream_port: int, limits: Limits, host: str = "127.0.0.1"):
        self.upstream = (host, upstream_port)
        self.limits = limits
        self.shared_subscribes = 0
        self.connects = 0
        self.unacked = 0  # QoS 1 PUBLISHes from clients not yet acknowledged, and the most seen at once
        self.max_unacked = 0
        self.largest_publish = 0  # bytes of the largest QoS 1 PUBLISH a client sent
        self._server = socket.create_server((host, 0))
        self.port = self._server.getsockname()[1]
        self.url = f"mqtt://{host}:{self.port}"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="limited-broker").start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        buf = bytearray()
        try:
            while True:
                packet = _read_packet(src, buf)
                if packet is None:
                    break
                out = self._from_client(packet, src) if from_client else self._to_client(packet)
                if out is False:
                    break
                if out:
                    dst.sendall(out)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _from_client(self, packet: bytes, client: socket.socket):
        """What to forward of a client's packet (False: close the connection)."""
        kind = packet[0] >> 4
        command, body = wire.split_packet(packet)
        if kind == CONNECT:
            self.connects += 1
            will = _will_topic(body)
            if self.limits.refuse_dollar and will and will.startswith("$"):
                client.sendall(_packet(0x20, bytes((0, TOPIC_NAME_INVALID, 0))))
                return False
        elif kind == SUBSCRIBE and b"$share/" in body:
            self.shared_subscribes += 1
        elif kind == PUBLISH and self.limits.refuse_dollar and wire.decode_publish(command, body)[0].topic.startswith("$"):
            if command & 0x06:
                mid = wire.decode_publish(command, body)[1]
                client.sendall(_packet(PUBACK << 4, struct.pack("!HB", mid, TOPIC_NAME_INVALID) + b"\x00"))
            return b""
        elif kind == PUBLISH and command & 0x06:
            self.largest_publish = max(self.largest_publish, len(packet))
            with self._lock:
                self.unacked += 1
                self.max_unacked = max(self.max_unacked, self.unacked)
        return packet

    def _to_client(self, packet: bytes) -> bytes:
        kind = packet[0] >> 4
        command, body = wire.split_packet(packet)
        if kind == PUBACK:
            with self._lock:
                self.unacked = max(0, self.unacked - 1)
        if kind == CONNACK and (self.limits.no_shared or self.limits.receive_maximum or self.limits.max_packet_size):
            plen, pos = wire.variable_byte_integer(body, 2)
            changed = {}
            if self.limits.no_shared:
                changed[SHARED_SUBSCRIPTION_AVAILABLE] = b"\x00"
            if self.limits.receive_maximum:
                changed[RECEIVE_MAXIMUM] = struct.pack("!H", self.limits.receive_maximum)
            if self.limits.max_packet_size:
                changed[MAXIMUM_PACKET_SIZE] = struct.pack("!I", self.limits.max_packet_size)
            kept = [(i, v) for i, v in _properties(body[pos:pos + plen]) if i not in changed]
            props = b"".join(bytes((i,)) + v for i, v in kept + list(changed.items()))
            return _packet(command, body[:2] + wire.encode_variable_byte_integer(len(props)) + props)
        if kind == PUBLISH and self.limits.drop_pfi:
            msg, mid = wire.decode_publish(command, body)
            if msg.payload_format is not None:
                return wire.encode_publish(replace(msg, payload_format=None), mid)
        return packet

    def drop_connections(self) -> None:
        """Cut every connection (the clients reconnect through the proxy); the counts start again."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
            self.unacked = self.max_unacked = 0
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._closed = True
        self._server.close()
        with self._lock:
            for s in self._sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

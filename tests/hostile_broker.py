"""A fake MQTT broker on 127.0.0.1, written with raw sockets: what a hostile (or mistaken) broker
sends a client. Each connection reads the client's CONNECT, then plays one ``mode``:

* ``flood``: a real CONNACK, then QoS 0 PUBLISHes on a topic nobody subscribed, as fast as it can,
  while it answers the client's SUBSCRIBE, QoS 1 PUBLISH and PINGREQ (so the client goes on);
* ``huge-connack``: a CONNACK whose Remaining Length says 256 MB, then that many bytes, as fast as
  the client reads them;
* ``huge-publish``: a real CONNACK, then a PUBLISH whose Remaining Length says 256 MB, streamed;
* ``garbage``: an HTTP answer instead of a CONNACK (a web server on the port).

``sent`` counts the bytes it wrote, ``connects`` keeps each CONNECT. It stops with ``close()``; every
socket has a timeout.
"""
from __future__ import annotations

import socket
import threading
from typing import Optional

CONNACK = bytes([0x20, 0x03, 0x00, 0x00, 0x00])  # MQTT v5: no session, Success, no properties
HUGE = 256 * 1024 * 1024 - 1  # the largest Remaining Length MQTT allows (268,435,455)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        n, digit = divmod(n, 128)
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


def publish_qos0(topic: str, payload: bytes) -> bytes:
    t = topic.encode()
    body = len(t).to_bytes(2, "big") + t + b"\x00" + payload  # topic, no properties, payload
    return b"\x30" + varint(len(body)) + body


class HostileBroker:
    def __init__(self, mode: str, payload: int = 16 * 1024):
        self.mode, self.payload = mode, payload
        self.sent = 0
        self.connections = 0
        self.connects: list[bytes] = []  # each CONNECT the clients sent, whole
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _read_connect(self, conn: socket.socket) -> Optional[bytes]:
        data = b""
        while len(data) < 5 or not self._complete(data):
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        return data

    @staticmethod
    def _complete(data: bytes) -> bool:
        length, mult, i = 0, 1, 1
        while i < len(data):
            length += (data[i] & 127) * mult
            mult *= 128
            if not data[i] & 128:
                return len(data) >= i + 1 + length
            i += 1
        return False

    def _send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        try:
            connect = self._read_connect(conn)
            if connect is None:
                return
            self.connects.append(connect)
            if self.mode == "garbage":
                self._send(conn, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                self._stop.wait(10)
                return
            if self.mode == "huge-connack":
                self._send(conn, b"\x20" + varint(HUGE))
                self._stream(conn, HUGE)
                return
            self._send(conn, CONNACK)
            if self.mode == "huge-publish":
                self._send(conn, b"\x30" + varint(HUGE) + b"\x00\x01t\x00")
                self._stream(conn, HUGE - 4)
                return
            lock = threading.Lock()
            threading.Thread(target=self._answer, args=(conn, lock), daemon=True).start()
            packet = publish_qos0("nobody/subscribed/this", b"x" * self.payload) * 16
            while not self._stop.is_set():
                with lock:
                    self._send(conn, packet)
        except OSError:  # the client hung up, as it should
            pass
        finally:
            conn.close()

    def _answer(self, conn: socket.socket, lock: threading.Lock) -> None:
        """Answer what the client sends as a broker would (SUBACK, PUBACK, PINGRESP), so it keeps going."""
        buf = b""
        try:
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                buf += chunk
                while self._complete(buf):
                    length, mult, i = 0, 1, 1
                    while True:
                        length += (buf[i] & 127) * mult
                        mult *= 128
                        if not buf[i] & 128:
                            break
                        i += 1
                    first, body, buf = buf[0], buf[i + 1:i + 1 + length], buf[i + 1 + length:]
                    kind, answer = first >> 4, b""
                    if kind == 8:  # SUBSCRIBE: granted QoS 1
                        answer = bytes([0x90, 0x04]) + body[:2] + b"\x00\x01"
                    elif kind == 3 and (first >> 1) & 3 == 1:  # a QoS 1 PUBLISH: PUBACK, Success
                        topic_len = int.from_bytes(body[:2], "big")
                        answer = bytes([0x40, 0x02]) + body[2 + topic_len:4 + topic_len]
                    elif kind == 12:  # PINGREQ
                        answer = bytes([0xD0, 0x00])
                    if answer:
                        with lock:
                            self._send(conn, answer)
        except OSError:
            return

    def _stream(self, conn: socket.socket, n: int) -> None:
        block = bytes(64 * 1024)
        while n > 0 and not self._stop.is_set():
            self._send(conn, block[:n])
            n -= len(block)

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for t in self._threads:
            t.join(5)

    def __enter__(self) -> "HostileBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

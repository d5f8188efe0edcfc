"""The benchmark's floor: the same request/reply and stream done with bare paho-mqtt.

This is the one place besides ``session.py`` that touches paho, on purpose: the kit is measured as a
ratio against what raw paho does on the same broker in the same run (TCP_NODELAY set on both, as the
kit does, so the comparison is about the kit's own overhead).
"""
from __future__ import annotations

import socket
import statistics
import threading
import time
import timeit
from typing import Optional

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.session import paho_client

from .apart import Apart


def _client(ep: BrokerEndpoint, cid: str) -> mqtt.Client:
    c = paho_client(ep, cid)  # the URL's login, TLS and inflight window, as the kit's sessions have them
    connected = threading.Event()
    codes: list[int] = []

    def on_connect(client, userdata, flags, reason_code, props) -> None:
        codes.append(reason_code.value)
        connected.set()

    c.on_connect = on_connect
    c.connect(ep.host, ep.port, keepalive=30)
    sock = c.socket()
    assert isinstance(sock, socket.socket)  # TLS sockets are socket.socket too
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.loop_start()
    if not connected.wait(5):
        raise RuntimeError(f"raw paho client could not connect to {ep.url}")
    if codes[0] >= 0x80:
        c.loop_stop()
        raise RuntimeError(f"the broker at {ep.url} refused the raw paho client (reason code {codes[0]})")
    return c


def _subscribe(c: mqtt.Client, topic: str, qos: int = 1) -> None:
    done = threading.Event()
    c.on_subscribe = lambda *a: done.set()
    c.subscribe(topic, qos)
    if not done.wait(5):
        raise RuntimeError("raw paho subscribe timed out")


def percentiles(samples: list[float]) -> dict:
    s = sorted(samples)
    return {"n": len(s), "median_ms": statistics.median(s) * 1000, "p99_ms": s[int(0.99 * (len(s) - 1))] * 1000,
            "mean_ms": statistics.fmean(s) * 1000}


class RawEcho:
    """A raw QoS 1 request with Response Topic + Correlation Data, echoed by a raw responder: the
    floor a SendMessage round trip is measured against. ``round_trip()`` times one."""

    payload = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}'

    def __init__(self, ep: BrokerEndpoint, requester_ep: Optional[BrokerEndpoint] = None, unit: str = "raw"):
        """The responder on ``ep``, the requester there too or on ``requester_ep`` (another broker,
        bridged to ``ep``); ``unit`` keeps the topics and client IDs of two such pairs apart."""
        self.req_topic, self.rep_topic = f"$a2a/v1/request/bench/{unit}/echo", f"$a2a/v1/reply/bench/{unit}/req/floor"
        self.responder = _client(ep, f"bench/{unit}/echo")
        self.requester = _client(requester_ep or ep, f"bench/{unit}/req")
        self.responder.on_message = self._echo
        _subscribe(self.responder, self.req_topic)
        self._got = threading.Event()
        self.requester.on_message = lambda *a: self._got.set()
        _subscribe(self.requester, self.rep_topic)
        self._count = 0

    @staticmethod
    def _echo(client, userdata, m) -> None:
        props = Properties(PacketTypes.PUBLISH)
        props.CorrelationData = m.properties.CorrelationData
        client.publish(m.properties.ResponseTopic, m.payload, qos=1, properties=props)

    def round_trip(self) -> float:
        """One request and its reply, timed like the kit's ``send``: from building the request's
        properties (the kit's timed region builds its message and properties too) to the reply."""
        self._count += 1
        self._got.clear()
        t = time.perf_counter()
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = self.rep_topic
        props.CorrelationData = self._count.to_bytes(8, "big")
        self.requester.publish(self.req_topic, self.payload, qos=1, properties=props)
        if not self._got.wait(5):
            raise RuntimeError("raw echo did not answer")
        return time.perf_counter() - t

    def close(self) -> None:
        for c in (self.responder, self.requester):
            c.disconnect()
            c.loop_stop()


class _Sink:
    """A raw subscriber that counts the messages of one topic; ``done`` is set at the ``n``-th."""

    def __init__(self, ep: BrokerEndpoint, cid: str, topic: str, n: int):
        self.n, self.count, self.done = n, 0, threading.Event()
        self.client = _client(ep, cid)
        self.client.on_message = self._on_message
        _subscribe(self.client, topic)

    def _on_message(self, *a) -> None:
        self.count += 1
        if self.count >= self.n:
            self.done.set()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class RawPublisher:
    """The publishing side of the raw loop: QoS 1, the same Correlation Data on every message."""

    def __init__(self, ep: BrokerEndpoint, topic: str, payload: bytes = b"x" * 200):
        self.topic, self.payload, self.published = topic, payload, 0
        self.client = _client(ep, f"bench/raw/pub-{topic.rsplit('/', 1)[-1]}")
        self.props = Properties(PacketTypes.PUBLISH)
        self.props.CorrelationData = b"stream"

    def publish(self, n: int) -> None:
        for _ in range(n):
            self.client.publish(self.topic, self.payload, qos=1, properties=self.props)
            self.published += 1

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def stream_rate(ep: BrokerEndpoint, n: int = 5000, payload: bytes = b"x" * 200) -> dict:
    """Raw QoS 1 publish loop from one client to a subscriber: messages per second end to end."""
    topic = "$a2a/v1/reply/bench/raw/sub/stream"
    sink = _Sink(ep, "bench/raw/sub", topic, n)
    try:
        pub = RawPublisher(ep, topic, payload)
        try:
            t, cpu = time.perf_counter(), time.process_time()
            pub.publish(n)
            sink.done.wait(60)
            elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
        finally:
            pub.close()
    finally:
        sink.close()
    return {"n": sink.count, "seconds": elapsed, "per_s": sink.count / elapsed, "cpu_us": cpu_us(cpu, sink.count)}


def stream_rate_apart(ep: BrokerEndpoint, n: int = 5000) -> dict:
    """The raw loop with its publisher in another process (``benchmarks.apart``): messages per second
    at the subscriber, from the parent's "go" to the last message."""
    topic = f"$a2a/v1/reply/bench/raw/sub/apart-{time.monotonic_ns()}"
    sink = _Sink(ep, f"bench/raw/sub-{topic.rsplit('-', 1)[-1]}", topic, n)
    try:
        with Apart("raw-publisher", ep.url_with_secret, topic, str(n)) as child:
            t = time.perf_counter()
            child.say("go")
            sink.done.wait(60)
            elapsed = time.perf_counter() - t
    finally:
        sink.close()
    return {"n": sink.count, "seconds": elapsed, "per_s": sink.count / elapsed}


def cpu_us(cpu_s: float, items: int) -> Optional[float]:
    """This process's CPU time per item in µs (both ends of a stream run here; the broker does not):
    steadier from run to run than items per second, which moves with whatever else the machine does."""
    return round(cpu_s / items * 1e6, 1) if items else None


def paho_costs(repeat: int = 5, number: int = 2000) -> dict:
    """Microseconds paho's public ``Properties`` API takes per message, in this process: what every
    kit message (and every raw one) pays. A stream item carries Correlation Data; a request also a
    Response Topic and a Message Expiry Interval; an item the kit numbers one User Property more.
    Reading a PUBLISH builds a ``Properties`` (its constructor rebuilds paho's name tables) and
    unpacks it; name lookups are linear scans with ``str.replace`` (``getIdentFromName``)."""
    def best(fn) -> float:
        return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6

    def props(*extra: str) -> Properties:
        p = Properties(PacketTypes.PUBLISH)
        p.CorrelationData = b"0123456789abcdef0123456789abcdef"
        if "request" in extra:
            p.ResponseTopic = "$a2a/v1/reply/bench/raw/req/0123456789abcdef"
            p.MessageExpiryInterval = 10
        if "numbered" in extra:
            p.UserProperty = [("a2a-stream-seq", "17")]
        return p

    out = {"new_properties_us": best(lambda: Properties(PacketTypes.PUBLISH))}
    for name, p in (("item", props()), ("request", props("request")), ("numbered_item", props("numbered"))):
        packed = p.pack()
        out[f"pack_{name}_us"] = best(p.pack)
        out[f"read_{name}_us"] = best(lambda packed=packed: Properties(PacketTypes.PUBLISH).unpack(packed))
    return out

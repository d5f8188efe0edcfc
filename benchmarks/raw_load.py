"""The load run's shape done with bare paho-mqtt: what the transport and Python's threads cost alone.

``raw_load_rate(ep, tasks=200, events=20)`` mirrors ``load.run_load`` without any A2A:

* 5 responder clients (the load run has a desk and 4 pool members), each with 8 worker threads
  (``ResponderOptions(workers=8)``) that answer a request with ``events + 2`` QoS 1 replies (the load
  run's snapshot, chunks and final status) to its Response Topic with its Correlation Data;
* 4 requester clients, ``tasks`` threads started together at a barrier, one request each; a reply is
  routed by its Correlation Data to its task's queue, and the task thread takes its items from there
  (as a kit ``Stream`` is read by its caller's thread).

No JSON-RPC, no task store, no handover, no pool dispatch: the difference between this rate and the
kit's load run is the kit's own work; the difference between this rate and ``raw_floor.stream_rate``
is what 200 concurrent streams in one Python process cost any paho program. With ``apart=True`` the
responders run in a process of their own (``benchmarks.apart``), as the kit's agents then do.
"""
from __future__ import annotations

import queue
import threading
import time
import uuid
from typing import Optional

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt.broker import BrokerEndpoint

from .apart import Apart
from .raw_floor import _client, _subscribe

RESPONDERS, WORKERS, REQUESTERS = 5, 8, 4


def request_topics(unit: str) -> list[str]:
    return [f"$a2a/v1/request/bench/{unit}/agent-{i}" for i in range(RESPONDERS)]


class RawResponders:
    """The responders: each request is answered by a worker with ``events + 2`` QoS 1 replies."""

    def __init__(self, ep: BrokerEndpoint, unit: str, events: int):
        self.items = events + 2
        self.requests = 0  # what reached a responder (5 network threads count: under a lock)
        self._count = threading.Lock()
        self.work: queue.Queue = queue.Queue()
        self.clients = [_client(ep, f"bench/{unit}/agent-{i}") for i in range(RESPONDERS)]
        for c, topic in zip(self.clients, request_topics(unit)):
            c.on_message = self._on_request
            _subscribe(c, topic)
        self.workers = [threading.Thread(target=self._worker, daemon=True, name=f"raw-load-worker-{n}")
                        for n in range(RESPONDERS * WORKERS)]
        for w in self.workers:
            w.start()

    def _on_request(self, client, userdata, m) -> None:
        with self._count:
            self.requests += 1
        self.work.put((client, m.properties.ResponseTopic, m.properties.CorrelationData))

    def _worker(self) -> None:
        while True:
            job = self.work.get()
            if job is None:
                return
            client, topic, corr = job
            props = Properties(PacketTypes.PUBLISH)
            props.CorrelationData = corr
            for i in range(self.items):
                client.publish(topic, f'{{"jsonrpc":"2.0","id":1,"result":{{"item":{i}}}}}'.ljust(160), qos=1,
                               properties=props)

    def close(self) -> None:
        for _ in self.workers:
            self.work.put(None)
        for c in self.clients:
            c.disconnect()
            c.loop_stop()


class _RawLoad:
    def __init__(self, ep: BrokerEndpoint, tasks: int, events: int, unit: str, apart: bool):
        self.tasks, self.items = tasks, events + 2
        self.req_topics = request_topics(unit)
        self.rep_topics = [f"$a2a/v1/reply/bench/{unit}/req-{j}" for j in range(REQUESTERS)]
        self.inboxes: dict[bytes, queue.Queue] = {}
        self.received: dict[int, int] = {}  # replies per requester client, each counted by its own network thread
        self.responders: Optional[RawResponders] = None
        self.child: Optional[Apart] = None
        self.requests: Optional[int] = None  # known once closed
        if apart:
            self.child = Apart("raw-responders", ep.url_with_secret, unit, str(events))
        else:
            self.responders = RawResponders(ep, unit, events)
        self.requesters = [_client(ep, f"bench/{unit}/req-{j}") for j in range(REQUESTERS)]
        for j, c in enumerate(self.requesters):
            c.on_message = self._on_reply
            _subscribe(c, self.rep_topics[j])

    def _on_reply(self, client, userdata, m) -> None:
        self.received[id(client)] = self.received.get(id(client), 0) + 1  # also replies for no task of this run
        inbox = self.inboxes.get(m.properties.CorrelationData)
        if inbox is not None:
            inbox.put(m.payload)

    def _one(self, k: int, start: threading.Barrier, got: list[int]) -> None:
        corr = f"task-{k}".encode()
        inbox = self.inboxes[corr] = queue.Queue()
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = self.rep_topics[k % REQUESTERS]
        props.CorrelationData = corr
        start.wait(30)
        self.requesters[k % REQUESTERS].publish(self.req_topics[k % RESPONDERS], b'{"jsonrpc":"2.0"}', qos=1,
                                                properties=props)
        n = 0
        try:
            while n < self.items:
                inbox.get(timeout=30)
                n += 1
        except queue.Empty:
            pass
        got[k] = n

    def run(self) -> dict:
        start = threading.Barrier(self.tasks + 1)
        got = [0] * self.tasks
        threads = [threading.Thread(target=self._one, args=(k, start, got), daemon=True) for k in range(self.tasks)]
        for t in threads:
            t.start()
        start.wait(30)
        t0 = time.perf_counter()
        for t in threads:
            t.join(60)
        wall = time.perf_counter() - t0
        expected = self.tasks * self.items
        return {"tasks": self.tasks, "items": sum(got), "lost": expected - sum(got),
                "extra": max(0, sum(self.received.values()) - expected), "seconds": wall, "per_s": sum(got) / wall,
                "apart": self.child is not None}

    def close(self) -> None:
        """Requesters first, then the responders (here, or the child, whose request count is kept)."""
        for c in self.requesters:
            c.disconnect()
            c.loop_stop()
        if self.responders is not None:
            self.requests = self.responders.requests
            self.responders.close()
        if self.child is not None:
            self.child.close()
            self.requests = (self.child.counts or {}).get("requests")


def raw_load_rate(ep: BrokerEndpoint, tasks: int = 200, events: int = 20, unit: Optional[str] = None,
                  apart: bool = False) -> dict:
    """``tasks`` concurrent raw streams of ``events + 2`` replies each (see the module docstring):
    items per second over the run's wall time, how many never arrived and how many arrived beyond
    what was asked (``extra``: another run's replies, or a request answered twice). ``unit`` defaults to a
    fresh one, so two runs on one broker never share topics. ``apart``: the responders run in a process
    of their own. ``requests``: how many requests reached a responder (``tasks``, each once)."""
    if tasks < 1 or events < 0:
        raise ValueError("tasks must be >= 1 and events >= 0")
    load = _RawLoad(ep, tasks, events, unit or f"rawload-{uuid.uuid4().hex[:8]}", apart)
    result: dict = {}
    try:
        result = load.run()
    finally:
        load.close()
    result["requests"] = load.requests  # requests that reached a responder: tasks, once each
    return result

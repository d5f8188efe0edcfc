"""The probe's MQTT side: send anything (well formed or not) and collect what comes back.

Unlike the kit's :class:`~a2a_nb.agents.requester.Requester`, which always sends correct requests
and hides the transport, the probe's client lets a check choose every byte and property of a request
(malformed JSON, binary or text Correlation Data, Message Expiry, odd user properties, a Response
Topic outside the reply namespace) and shows every reply it caused, even the wrong ones.

Each request gets a reply topic of its own (``$a2a/v1/reply/{org}/{unit}/{probe}/{suffix}``), so a
reply that echoes the wrong Correlation Data is still known to belong to it. Everything sent and
received is kept in ``traffic`` (in order) for the traffic lint at the end of a probe.
Profile: Request/Reply Mapping (MQTT v5) 2-5, Requester Behavior (Interop) 1, 5.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session
from ..protocol import jsonrpc, properties, topics
from ..protocol.ids import IdSource
from ..protocol.packet import MqttMessage, encode_json
from ..protocol.routing import Address, RoutingTable
from ..protocol.streams import reply_ends_stream

FIRST, FINAL = "first", "final"
"""How long an exchange listens: until the first correlated reply, or until a stream-final item."""


@dataclass
class Exchange:
    """One request and every message that arrived on its reply topic."""

    sent: MqttMessage
    replies: list[MqttMessage] = field(default_factory=list)
    waited_s: float = 0.0
    """How long the probe would wait for a reply (its timeout)."""
    refused: str = ""
    """Why the broker did not take the request (a PUBACK failure code), else empty."""
    elapsed_s: float = 0.0

    @property
    def correlated(self) -> list[MqttMessage]:
        """The replies that echo the request's Correlation Data byte for byte."""
        return [r for r in self.replies if r.correlation_data == self.sent.correlation_data]

    @property
    def stray(self) -> list[MqttMessage]:
        """Replies on this request's reply topic with other (or no) Correlation Data."""
        return [r for r in self.replies if r.correlation_data != self.sent.correlation_data]

    @property
    def first(self) -> Optional[MqttMessage]:
        found = self.correlated
        return found[0] if found else None

    @property
    def payloads(self) -> list[Any]:
        """The correlated replies' JSON payloads (None for a payload that is not JSON)."""
        return [json_of(r.payload) for r in self.correlated]

    @property
    def response(self) -> Optional[dict]:
        """The first correlated reply as a JSON object, if it is one."""
        first = self.payloads[:1]
        return first[0] if first and isinstance(first[0], dict) else None

    @property
    def result(self) -> Any:
        r = self.response
        return r.get("result") if r else None

    @property
    def error(self) -> Optional[dict]:
        r = self.response
        err = r.get("error") if r else None
        return err if isinstance(err, dict) else None

    @property
    def error_code(self) -> Optional[int]:
        code = (self.error or {}).get("code")
        return code if isinstance(code, int) else None

    def responder(self) -> Optional[str]:
        """The latest ``a2a-responder-agent-id`` among the correlated replies."""
        found = [r.user_property(properties.RESPONDER_AGENT_ID) for r in self.correlated]
        named = [f for f in found if f]
        return named[-1] if named else None

    def came_back(self) -> str:
        """What came back, in one line, for the report's "received" column."""
        if self.refused:
            return self.refused
        if not self.replies:
            return f"nothing within {self.waited_s:g} s"
        parts = [describe_reply(r) for r in self.correlated[:3]]
        if len(self.correlated) > 3:
            parts.append(f"... {len(self.correlated)} items in all")
        if self.stray:
            parts.append(f"{len(self.stray)} reply(ies) with other Correlation Data "
                         f"({short_bytes(self.stray[0].correlation_data)})")
        return "; ".join(parts)


def json_of(payload: bytes) -> Any:
    """The payload as JSON, or None when it is not UTF-8 JSON."""
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def short_bytes(value: Optional[bytes], n: int = 12) -> str:
    """Correlation Data for a person: its text when it is printable UTF-8, else hex."""
    if value is None:
        return "none"
    try:
        text = value.decode("utf-8")
        shown = text if text.isprintable() else value.hex()
    except UnicodeDecodeError:
        shown = "0x" + value.hex()
    return shown if len(shown) <= n else shown[:n] + "…"


def describe_reply(msg: MqttMessage) -> str:
    """A reply in a few words: the error code, the result kind and state, or the raw size."""
    data = json_of(msg.payload)
    if not isinstance(data, dict):
        return f"{len(msg.payload)} bytes that are not a JSON-RPC response"
    if isinstance(data.get("error"), dict):
        err = data["error"]
        marker = err.get("data", {}).get("a2a_error") if isinstance(err.get("data"), dict) else None
        return f"error {err.get('code')}" + (f" ({marker})" if marker else "")
    result = data.get("result")
    if isinstance(result, dict):
        for kind in ("task", "statusUpdate", "artifactUpdate", "message"):
            if kind in result and isinstance(result[kind], dict):
                state = result[kind].get("status", {}).get("state") if kind != "message" else None
                return kind + (f" {state}" if state else "")
        state = result.get("status", {}).get("state") if isinstance(result.get("status"), dict) else None
        if state:
            return f"Task {state}"
        if "tasks" in result:
            return f"ListTasks page ({len(result.get('tasks') or [])} tasks)"
    return "result"


class ProbeClient:
    """An MQTT v5 client named ``{org}/{unit}/{agent}`` that sends the probe's requests.

    ``timeout`` bounds every wait for a reply (seconds); ``grace`` is how long it keeps listening
    after a stream-final item, to catch anything published after it.
    """

    def __init__(self, org: str, unit: str, *, broker: Union[str, BrokerEndpoint, None] = None,
                 agent: Optional[str] = None, timeout: float = 1.0, grace: float = 0.15):
        self.org, self.unit = org, unit
        self.ids = IdSource()
        self.agent = agent or f"probe-{self.ids.reply_suffix()[:8]}"
        self.timeout, self.grace = timeout, grace
        self.routing = RoutingTable()
        self.traffic: list[MqttMessage] = []
        """Everything the probe sent and received, in order (``sent`` holds the positions of its own)."""
        self.sent: set[int] = set()
        self._waiting: dict[str, "queue.SimpleQueue[MqttMessage]"] = {}
        self._lock = threading.Lock()
        self.session = Session(org, unit, self.agent, broker=broker)
        self.session.subscribe(topics.reply_filter(org, unit, self.agent), handler=self._on_message)
        self.side_topic = topics.event_topic(org, unit, self.agent)
        """A topic of the probe's own outside the reply namespace (see the reflected-response-topic check)."""
        self.session.subscribe(self.side_topic, handler=self._on_message)

    # -- intake (network thread) -----------------------------------------------------------------------
    def _on_message(self, msg: MqttMessage) -> None:
        self._keep(msg)
        waiting = self._waiting.get(msg.topic)
        if waiting is not None:
            waiting.put(msg)

    def _keep(self, msg: MqttMessage, sent_by_probe: bool = False) -> None:
        with self._lock:  # the network thread appends too: the position must be the message's own
            if sent_by_probe:
                self.sent.add(len(self.traffic))
            self.traffic.append(msg)

    # -- building requests ------------------------------------------------------------------------------
    def new_reply_topic(self) -> str:
        return topics.reply_topic(self.org, self.unit, self.agent, self.ids.reply_suffix())

    def request_payload(self, method: str, params: Optional[dict]) -> bytes:
        return encode_json(jsonrpc.request(method, params, self.ids.jsonrpc_id()))

    def topic_for(self, agent: str, task_id: Optional[str] = None) -> str:
        """The request topic for ``agent``, or where the task's latest responder id points."""
        route = self.routing.target(task_id) if task_id else None
        return route.topic if route is not None else topics.request_topic(self.org, self.unit, agent)

    # -- exchanges ------------------------------------------------------------------------------------------
    def exchange(self, topic: str, payload: bytes, *, correlation: Optional[bytes] = b"",
                 response_topic: Optional[str] = "", user_properties: tuple = (),
                 message_expiry: Optional[int] = None, until: str = FIRST,
                 timeout: Optional[float] = None, task_id: Optional[str] = None) -> Exchange:
        """Publish one request (QoS 1) and collect its replies.

        ``correlation=b""`` / ``response_topic=""`` mean "a fresh one" (the probe's usual hex text and
        its own new reply topic); None leaves the property out. ``until``: ``FIRST`` stops at the first
        reply (correlated or not: the topic is this request's own), ``FINAL`` at a stream-final item
        (then listens ``grace`` longer, to catch anything published after it) or after ``timeout`` of
        silence. Replies naming ``a2a-responder-agent-id`` update the routing of ``task_id``.
        """
        wait = self.timeout if timeout is None else timeout
        reply_topic = self.new_reply_topic() if response_topic == "" else response_topic
        corr = self.ids.correlation() if correlation == b"" else correlation
        sent = MqttMessage(topic, payload, qos=1, response_topic=reply_topic, correlation_data=corr,
                           user_properties=tuple(user_properties), message_expiry=message_expiry)
        inbox: "queue.SimpleQueue[MqttMessage]" = queue.SimpleQueue()
        listen_on = reply_topic or ""
        self._waiting[listen_on] = inbox
        started = time.monotonic()
        self._keep(replace(sent, received_at=time.time()), sent_by_probe=True)
        ex = Exchange(sent, waited_s=wait)
        try:
            ack = self.session.publish(sent, timeout=max(wait, 1.0))
            if ack.accepted:
                self._collect(ex, inbox, until, wait)
            else:
                ex.refused = f"the broker refused the request (PUBACK {ack.reason_code} {ack.reason})"
        finally:
            self._waiting.pop(listen_on, None)
        ex.elapsed_s = time.monotonic() - started
        if task_id is not None:
            self._follow(task_id, ex)
        return ex

    def _collect(self, ex: Exchange, inbox: "queue.SimpleQueue[MqttMessage]", until: str, wait: float) -> None:
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                msg = inbox.get(timeout=left)
            except queue.Empty:
                return
            ex.replies.append(msg)  # on this request's own reply topic: its answer, right or wrong
            if until == FIRST:
                return  # later replies still reach ``traffic``, which the traffic lint reads
            if not reply_ends_stream(json_of(msg.payload)):
                deadline = time.monotonic() + wait  # a stream: the idle timer starts again
                continue
            deadline = min(deadline, time.monotonic() + self.grace)  # ended: listen a little longer

    def _follow(self, task_id: str, ex: Exchange) -> None:
        for reply in ex.correlated:
            responder = reply.user_property(properties.RESPONDER_AGENT_ID)
            if responder:
                try:
                    self.routing.observe(task_id, responder, time.time())
                except ValueError:
                    pass  # not a valid agent_id: the handover check reports it

    def start_route(self, task_id: str, target: str) -> str:
        """Route a new task to ``target`` (an agent, or ``pool:NAME``); returns its request topic."""
        return self.routing.start(task_id, Address.parse(target, self.org, self.unit), time.time()).current.topic

    def call(self, agent: str, method: str, params: Optional[dict], *, task_id: Optional[str] = None,
             until: str = FIRST, **kw: Any) -> Exchange:
        """A well-formed JSON-RPC request to ``agent`` (or the task's latest responder)."""
        return self.exchange(self.topic_for(agent, task_id), self.request_payload(method, params),
                             until=until, task_id=task_id, **kw)

    def close(self) -> None:
        self.session.close()

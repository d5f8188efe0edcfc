"""The probe's MQTT side: send anything (well formed or not) and collect what comes back.

Unlike the kit's :class:`~a2a_nb.agents.requester.Requester`, which always sends correct requests
and hides the transport, the probe's client lets a check choose every byte and property of a request
(malformed JSON, binary or text Correlation Data, Message Expiry, odd user properties, a Response
Topic outside the reply namespace) and shows every reply it caused, even the wrong ones.

Each request gets a reply topic of its own (``$a2a/v1/reply/{org}/{unit}/{probe}/{suffix}``), so a
reply that echoes the wrong Correlation Data is still known to belong to it. Everything sent and
received is kept in ``traffic`` (in order) for the traffic lint at the end of a probe.

The agent is untrusted, so every exchange is bounded, in time and in what it keeps:

* time: an exchange waits ``timeout`` for each reply, and ends ``EXCHANGE_DEADLINE_FACTOR`` (10)
  timeouts after its request at the latest, stream or not (``Exchange.ran_out`` says it was cut);
  no exchange outlives the probe's overall deadline (``ends_at``).
* bytes and items: a reply larger than ``MAX_REPLY_BYTES`` (1 MiB, payload and properties), or one
  that would take an exchange past ``MAX_EXCHANGE_BYTES`` (4 MiB), is kept as its first
  ``HEAD_BYTES`` (a :class:`Cut`); an exchange keeps ``MAX_REPLIES`` (200) replies and counts the
  rest; ``traffic`` keeps at most ``MAX_TRAFFIC`` (5,000) messages and ``MAX_TRAFFIC_BYTES``
  (16 MiB) of them. Measured against a hostile agent (``tests/probe/hostile_agent.py``): 10 MB
  replies took the probe to 2.2 GB RSS before these bounds, a flood of 3,000 replies per request
  to 730 MB; with them both stay near 100 MB.
* JSON: a payload is read with the kit's bounded parser (``protocol.bounded_json``: 64 levels of
  nesting), never into a ``RecursionError``.

Profile: Request/Reply Mapping (MQTT v5) 2-5, Requester Behavior (Interop) 1, 5.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session, SessionError
from ..protocol import jsonrpc, properties, topics
from ..protocol.bounded_json import loads_bounded
from ..protocol.ids import IdSource
from ..protocol.packet import MqttMessage, encode_json
from ..protocol.routing import Address, RoutingTable
from ..protocol.safe_text import quoted
from ..protocol.streams import reply_ends_stream

FIRST, FINAL = "first", "final"
"""How long an exchange listens: until the first correlated reply, or until a stream-final item."""

EXCHANGE_DEADLINE_FACTOR = 10
"""An exchange ends at most this many ``timeout`` after its request (10 s with the default 1 s),
even while a stream keeps sending non-final items."""
MAX_REPLY_BYTES = 1024 * 1024
"""A reply larger than this (payload, Correlation Data, Response Topic and user properties) is kept
as a :class:`Cut`: the probe does not read it."""
MAX_EXCHANGE_BYTES = 4 * 1024 * 1024
"""Bytes of replies one exchange keeps whole; a reply past it is kept as a :class:`Cut`."""
HEAD_BYTES = 256
"""How much of a reply's payload a :class:`Cut` keeps."""
MAX_REPLIES = 200
"""Replies one exchange keeps (a stream of the kit's ticket desk has about 10); later ones are counted."""
MAX_TRAFFIC = 5000
MAX_TRAFFIC_BYTES = 16 * 1024 * 1024
"""Messages from the agent, and bytes of them, that ``traffic`` keeps for the lint (and the probe's
own requests, always: a Core probe sends about 45)."""


@dataclass(frozen=True)
class Cut(MqttMessage):
    """A reply too large to keep: its properties and the first ``HEAD_BYTES`` of its payload.
    ``size`` is what it weighed (payload and properties)."""

    size: int = 0


def size_of(msg: MqttMessage) -> int:
    """What a message weighs in memory for the bounds above: payload, Correlation Data, Response
    Topic, Content Type and user properties."""
    props = sum(len(k) + len(v) for k, v in msg.user_properties)
    return (len(msg.payload) + len(msg.correlation_data or b"") + len(msg.response_topic or "")
            + len(msg.content_type or "") + props)


def bounded(msg: MqttMessage) -> MqttMessage:
    """``msg`` as the probe keeps it: whole up to ``MAX_REPLY_BYTES``, else its head (a :class:`Cut`)."""
    size = size_of(msg)
    return cut(msg, size) if size > MAX_REPLY_BYTES else msg


def cut(msg: MqttMessage, size: int) -> Cut:
    """``msg`` kept as its head: the first ``HEAD_BYTES`` of the payload, the first 16 user properties."""
    return Cut(msg.topic, msg.payload[:HEAD_BYTES], msg.qos, msg.retain, msg.response_topic, msg.correlation_data,
               msg.user_properties[:16], msg.content_type, msg.message_expiry, msg.payload_format,
               received_at=msg.received_at, size=size)


@dataclass
class _Listener:
    """What the network thread keeps for one exchange, within ``MAX_REPLIES`` and ``MAX_EXCHANGE_BYTES``."""

    inbox: "queue.SimpleQueue[MqttMessage]" = field(default_factory=queue.SimpleQueue)
    kept: int = 0
    kept_bytes: int = 0
    dropped: int = 0


@dataclass
class Exchange:
    """One request and every message that arrived on its reply topic."""

    sent: MqttMessage
    replies: list[MqttMessage] = field(default_factory=list)
    waited_s: float = 0.0
    """How long the probe would wait for a reply (its timeout)."""
    refused: str = ""
    """Why the request did not go out: the broker refused it (a PUBACK failure code), the connection
    was down, or the probe's deadline had run out; else empty."""
    elapsed_s: float = 0.0
    ran_out: float = 0.0
    """When an exchange listening for a stream-final item was cut (``EXCHANGE_DEADLINE_FACTOR``
    timeouts, or the probe's overall deadline): the seconds it had; else 0."""
    dropped: int = 0
    """Replies that came after the first ``MAX_REPLIES``: counted, not kept."""
    _parsed: Optional[list[Any]] = field(default=None, repr=False, compare=False)

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
        """The correlated replies' JSON payloads (None for a payload that is not JSON, or a :class:`Cut`),
        parsed once."""
        correlated = self.correlated
        if self._parsed is None or len(self._parsed) != len(correlated):
            self._parsed = [json_of(r) for r in correlated]
        return self._parsed

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
        if len(self.correlated) > 3 or self.dropped:
            parts.append(f"... {len(self.correlated) + self.dropped} items in all"
                         + (f" ({self.dropped} not kept)" if self.dropped else ""))
        if self.stray:
            parts.append(f"{len(self.stray)} reply(ies) with other Correlation Data "
                         f"({short_bytes(self.stray[0].correlation_data)})")
        if self.ran_out:
            parts.append(no_end(self.ran_out))
        return "; ".join(parts)


def no_end(seconds: float) -> str:
    """What an exchange cut at its deadline says: the words a check's verdict quotes."""
    return f"no terminal state within {seconds:g} s"


def json_of(msg: Union[MqttMessage, bytes]) -> Any:
    """A reply's payload as JSON, or None when it is not UTF-8 JSON within the kit's bounds (64
    levels, ``MAX_REPLY_BYTES``), or the reply is a :class:`Cut`."""
    if isinstance(msg, Cut):
        return None
    try:
        return loads_bounded(msg.payload if isinstance(msg, MqttMessage) else msg, max_bytes=MAX_REPLY_BYTES)
    except ValueError:
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


def _brief(value: Any) -> str:
    """An agent's short value (an error code, a state name) for the "received" column: a string or
    an integer as it is, anything else as ``repr``, cut to 40 characters either way."""
    return value[:40] if isinstance(value, str) else str(value) if isinstance(value, int) else quoted(value, 40)


def describe_reply(msg: MqttMessage) -> str:
    """A reply in a few words: the error code, the result kind and state, or the raw size (the
    agent's own values quoted short: ``quoted``)."""
    if isinstance(msg, Cut):
        return f"a reply of {msg.size:,} bytes, more than the probe keeps (see MAX_REPLY_BYTES)"
    data = json_of(msg)
    if not isinstance(data, dict):
        return f"{len(msg.payload)} bytes that are not a JSON-RPC response"
    if isinstance(data.get("error"), dict):
        err = data["error"]
        code = err.get("code")
        marker = err.get("data", {}).get("a2a_error") if isinstance(err.get("data"), dict) else None
        return f"error {_brief(code)}" + (f" ({_brief(marker)})" if marker else "")
    result = data.get("result")
    if isinstance(result, dict):
        for kind in ("task", "statusUpdate", "artifactUpdate", "message"):
            if kind in result and isinstance(result[kind], dict):
                status = result[kind].get("status") if kind != "message" else None
                state = status.get("state") if isinstance(status, dict) else None
                return kind + (f" {_brief(state)}" if state else "")
        state = result.get("status", {}).get("state") if isinstance(result.get("status"), dict) else None
        if state:
            return f"Task {_brief(state)}"
        if "tasks" in result:
            tasks = result.get("tasks")
            return f"ListTasks page ({len(tasks) if isinstance(tasks, list) else 'no list of'} tasks)"
    return "result"


class ProbeClient:
    """An MQTT v5 client named ``{org}/{unit}/{agent}`` that sends the probe's requests.

    ``timeout`` bounds every wait for a reply (seconds) and, times ``EXCHANGE_DEADLINE_FACTOR``,
    every exchange; ``grace`` is how long it keeps listening after a stream-final item, to catch
    anything published after it. ``ends_at`` (a ``time.monotonic()`` value, or None) is the probe's
    overall deadline: no exchange lasts past it, and none starts after it.
    """

    def __init__(self, org: str, unit: str, *, broker: Union[str, BrokerEndpoint, None] = None,
                 agent: Optional[str] = None, timeout: float = 1.0, grace: float = 0.15,
                 ends_at: Optional[float] = None):
        self.org, self.unit = org, unit
        self.ids = IdSource()
        self.agent = agent or f"probe-{self.ids.reply_suffix()[:8]}"
        self.timeout, self.grace, self.ends_at = timeout, grace, ends_at
        self.exchange_deadline = EXCHANGE_DEADLINE_FACTOR * timeout
        self.ran_out = False
        """True once an exchange was cut, or not sent, because the overall deadline had come."""
        self.routing = RoutingTable()
        self.traffic: list[MqttMessage] = []
        """What the probe sent and received, in order (``sent`` holds the positions of its own),
        within ``MAX_TRAFFIC`` messages and ``MAX_TRAFFIC_BYTES``."""
        self.sent: set[int] = set()
        self.traffic_bytes = 0
        self.not_kept = 0
        """Messages from the agent that ``traffic`` had no room for."""
        self._waiting: dict[str, _Listener] = {}
        self._lock = threading.Lock()
        self.session = Session(org, unit, self.agent, broker=broker)
        self.session.subscribe(topics.reply_filter(org, unit, self.agent), handler=self._on_message)
        self.side_topic = topics.event_topic(org, unit, self.agent)
        """A topic of the probe's own outside the reply namespace (see the reflected-response-topic check)."""
        self.session.subscribe(self.side_topic, handler=self._on_message)

    # -- intake (network thread) -----------------------------------------------------------------------
    def _on_message(self, msg: MqttMessage) -> None:
        """Keep a reply within the bounds (see the module's docstring) and hand it to its exchange."""
        size = size_of(msg)
        kept = bounded(msg)
        with self._lock:
            listener = self._waiting.get(msg.topic)
            if listener is not None:
                if listener.kept >= MAX_REPLIES:
                    listener.dropped += 1
                    self.not_kept += 1
                    return
                if listener.kept_bytes + size_of(kept) > MAX_EXCHANGE_BYTES:
                    kept = cut(msg, size)
                listener.kept += 1
                listener.kept_bytes += size_of(kept)
            self._keep(kept)
        if listener is not None:
            listener.inbox.put(kept)

    def keep(self, msg: MqttMessage) -> None:
        """Add a message from the agent that came another way (its card) to ``traffic``."""
        with self._lock:
            self._keep(msg)

    def _keep(self, msg: MqttMessage, sent_by_probe: bool = False) -> None:
        """Append to ``traffic`` (within its bounds, always for the probe's own requests); the caller
        holds ``_lock``: the network thread appends too, and a position must be the message's own."""
        size = size_of(msg)
        if sent_by_probe:
            self.sent.add(len(self.traffic))
        elif len(self.traffic) - len(self.sent) >= MAX_TRAFFIC or self.traffic_bytes + size > MAX_TRAFFIC_BYTES:
            self.not_kept += 1
            return
        else:
            self.traffic_bytes += size
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

    # -- time ---------------------------------------------------------------------------------------------
    def time_left(self) -> float:
        """Seconds until the overall deadline (infinite without one)."""
        return float("inf") if self.ends_at is None else self.ends_at - time.monotonic()

    # -- exchanges ------------------------------------------------------------------------------------------
    def exchange(self, topic: str, payload: bytes, *, correlation: Optional[bytes] = b"",
                 response_topic: Optional[str] = "", user_properties: tuple = (),
                 message_expiry: Optional[int] = None, until: str = FIRST,
                 timeout: Optional[float] = None, task_id: Optional[str] = None,
                 content_type: Optional[str] = None) -> Exchange:
        """Publish one request (QoS 1) and collect its replies.

        ``correlation=b""`` / ``response_topic=""`` mean "a fresh one" (the probe's usual hex text and
        its own new reply topic); None leaves the property out. ``until``: ``FIRST`` stops at the first
        reply (correlated or not: the topic is this request's own), ``FINAL`` at a stream-final item
        (then listens ``grace`` longer, to catch anything published after it) or after ``timeout`` of
        silence. Either way the exchange ends ``exchange_deadline`` after the request at the latest,
        and by the overall deadline (``ran_out`` says so). Replies naming ``a2a-responder-agent-id``
        update the routing of ``task_id``.
        """
        wait = self.timeout if timeout is None else timeout
        reply_topic = self.new_reply_topic() if response_topic == "" else response_topic
        corr = self.ids.correlation() if correlation == b"" else correlation
        sent = MqttMessage(topic, payload, qos=1, response_topic=reply_topic, correlation_data=corr,
                           user_properties=tuple(user_properties), message_expiry=message_expiry,
                           content_type=content_type)
        listener = _Listener()
        listen_on = reply_topic or ""
        started = time.monotonic()
        ex = Exchange(sent, waited_s=wait)
        limit = min(self.exchange_deadline, self.time_left())
        if limit <= 0:
            self.ran_out = True
            ex.refused = "not sent: the probe's deadline had run out"
            return ex
        with self._lock:
            self._waiting[listen_on] = listener
            self._keep(replace(sent, received_at=time.time()), sent_by_probe=True)
        try:
            if not self.session.connected:  # e.g. the agent's U+FEFF in a user property: paho drops the
                # connection on it (MalformedPacket) and the session reconnects within about 0.1 s
                self.session.wait_connected(min(wait, limit))
            ack = self.session.publish(sent, timeout=min(max(wait, 1.0), limit))
            if ack.accepted:
                self._collect(ex, listener.inbox, until, wait, started, limit)
            else:
                ex.refused = f"the broker refused the request (PUBACK {ack.reason_code} {ack.reason})"
        except SessionError as exc:
            ex.refused = f"not sent: {exc}"
        finally:
            with self._lock:
                self._waiting.pop(listen_on, None)
                ex.dropped = listener.dropped
        ex.elapsed_s = time.monotonic() - started
        if task_id is not None:
            self._follow(task_id, ex)
        return ex

    def _collect(self, ex: Exchange, inbox: "queue.SimpleQueue[MqttMessage]", until: str, wait: float,
                 started: float, limit: float) -> None:
        """Take replies until ``until`` is met, after ``wait`` of silence, or ``limit`` seconds after
        ``started`` (then ``ex.ran_out`` when a stream was still going, and ``self.ran_out`` when the
        limit was the probe's overall deadline)."""
        hard_end = started + limit
        deadline = min(time.monotonic() + wait, hard_end)
        ended = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msg = inbox.get(timeout=left)
            except queue.Empty:
                break
            ex.replies.append(msg)  # on this request's own reply topic: its answer, right or wrong
            if until == FIRST:
                return  # later replies still reach ``traffic``, which the traffic lint reads
            if not reply_ends_stream(json_of(msg)):
                deadline = min(time.monotonic() + wait, hard_end)  # a stream: the idle timer starts again
                continue
            ended = True
            deadline = min(deadline, time.monotonic() + self.grace)  # ended: listen a little longer
        if deadline < hard_end or ended:
            return  # silence, or the grace after a final item: the exchange ended by itself
        if limit < self.exchange_deadline:
            self.ran_out = True  # cut by the probe's overall deadline
        if until == FINAL and ex.replies:
            ex.ran_out = limit

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

"""The MQTT v5 session: the only module of the kit that imports paho-mqtt.

It holds a plain ``paho.mqtt.client.Client`` and uses only paho's documented methods and callbacks
(``connect``, ``publish``, ``subscribe``, ``on_message``, ``on_publish``, ...): paho reads and writes
every packet, on the session's own network thread (``network_loop.py``: paho's external-loop API,
which hands over messages that arrive together in one go). The session turns each delivered
``MQTTMessage`` into a plain :class:`~a2a_nb.protocol.packet.MqttMessage` handed to a handler,
waits for PUBACK/SUBACK so callers see broker reason codes (code 16 "No matching subscribers" is
surfaced), sets TCP_NODELAY on every socket (the "40 ms trap"), keeps one live client per client
ID and resubscribes after a reconnect.

A message paho cannot read ends the connection that receives it (paho 2.2 refuses U+FEFF in a
property string, which MQTT v5 allows: ``docs/paho-feff-bug.md``); the broker would send a retained
one again with every resubscription, and the session would reconnect many times a second for as long
as it stays retained. So after such a drop (paho's own "Protocol error", not the broker's) the session
renews its subscriptions with Retain Handling 2 (MQTT v5 §3.8.3.1: no retained messages at subscribe
time), says so once in a warning, and carries on: live messages still arrive; retained ones sent
before are not read again on this session (``skips_retained``). Each live unreadable message costs one
reconnect; the kit's broker refuses them (``plugins/a2a_status.c``).

What a broker can send the session, and its bounds (the broker is untrusted: a fake one on a port, or
a real one that misbehaves): packets of at most ``max_packet_size`` bytes (16 MiB; sent in CONNECT as
Maximum Packet Size, and enforced by the network loop, which also says "not an MQTT broker" for an
answer to CONNECT that is not a small CONNACK: ``network_loop.py``); messages on topics this session
never subscribed to are dropped and counted (``unsolicited``); messages for a subscription without a
handler wait in ``inbox``, at most :data:`INBOX_MAX_MESSAGES` of them and :data:`INBOX_MAX_BYTES` of
payload (the rest dropped and counted); each socket's receive buffer is :data:`RECEIVE_BUFFER` bytes.

Profile: Client Session Requirements (MQTT v5, Client ID ``{org}/{unit}/{agent}``, reconnect),
QoS Guidance (PUBACK reason codes), Presence and Liveness (last will with user properties),
Request/Reply Mapping (Response Topic and Correlation Data as MQTT v5 properties).
"""
from __future__ import annotations

import copy
import functools
import logging
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Optional, Union

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from ..error_base import A2ANbError
from ..protocol.ids import client_id as make_client_id
from ..protocol.packet import MqttMessage
from ..protocol.safe_text import safe_text
from ..protocol.topics import SHARE_PREFIX
from . import capabilities, failover
from .broker import BrokerEndpoint, resolve
from .capabilities import BrokerCapabilities
from .network_loop import NetworkLoop

log = logging.getLogger(__name__)

Handler = Callable[[MqttMessage], None]

NO_MATCHING_SUBSCRIBERS = 16
MAX_PACKET_BYTES = 16 * 1024 * 1024
"""The largest packet a session takes from its broker (Maximum Packet Size in CONNECT, MQTT v5
§3.1.2.11.4): above the kit's largest messages (a probe reads replies of 10 MiB to cut them)."""
RECEIVE_BUFFER = 64 * 1024
"""SO_RCVBUF of every connection: how much a broker can have waiting in the kernel for one read (Linux
doubles it); it bounds how far past ``max_packet_size`` a packet gets before the loop ends it."""
INBOX_MAX_MESSAGES = 10_000
INBOX_MAX_BYTES = 64 * 1024 * 1024
LINK_NOTICE_S = 5.0
"""While the broker is gone, ``on_link`` hears of a reconnect attempt at most once per this many seconds
(the first attempt always; the network loop tries after 0.05 s, doubling up to every 2 s)."""


class SessionError(A2ANbError, RuntimeError):
    """Connecting, publishing or subscribing failed; the message names the broker's reason.

    ``reason_code`` is the broker's own answer when the broker refused (a CONNACK or SUBACK reason
    code, 128 or more, e.g. 135 *Not authorized*); it is None when no broker answered: the kit
    refused before sending anything, or the broker could not be reached or did not answer in time.
    """

    def __init__(self, message: str, reason_code: Optional[int] = None):
        super().__init__(message)
        self.reason_code = reason_code


class ConnectFailed(SessionError):
    """The first connection failed: the broker never accepted this session (nothing was lost).
    ``stalled``: the broker did not answer in time (as opposed to refusing or closing)."""

    def __init__(self, message: str, reason_code: Optional[int] = None, *, stalled: bool = False):
        super().__init__(message, reason_code)
        self.stalled = stalled


@dataclass(frozen=True)
class PublishResult:
    """What the broker said about one publish (PUBACK reason code for QoS 1, 0 for QoS 0)."""

    reason_code: int
    reason: str

    @property
    def accepted(self) -> bool:
        """Codes below 0x80 are success codes (0 Success, 16 No matching subscribers)."""
        return self.reason_code < 0x80

    @property
    def no_subscribers(self) -> bool:
        return self.reason_code == NO_MATCHING_SUBSCRIBERS


class PendingPublish:
    """A publish in flight; ``result()`` waits for its PUBACK."""

    def __init__(self, session: "Session", mid: int, qos: int, topic: str = ""):
        self._session, self.mid, self.qos, self.topic = session, mid, qos, topic

    def result(self, timeout: float = 5.0) -> PublishResult:
        if self.qos == 0:
            return PublishResult(0, "Success")
        return explained(self._session._wait_puback(self.mid, timeout), self.topic)


def explained(result: PublishResult, topic: str) -> PublishResult:
    """``result`` with the kit's words for a refusal it can explain (a broker that forbids ``$`` topics)."""
    if result.accepted:
        return result
    words = capabilities.publish_refused_words(result.reason_code, topic)
    return PublishResult(result.reason_code, f"{result.reason}: {words}") if words else result


@dataclass(frozen=True)
class Subscription:
    filter: str
    qos: int = 1
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0


class Fanout:
    """Several handlers of one subscription filter, each called with every message, in the order they
    subscribed; one that raises does not keep the message from the others."""

    def __init__(self, handlers: tuple[Handler, ...]):
        self.handlers = handlers

    def __call__(self, msg: MqttMessage) -> None:
        for h in self.handlers:
            try:
                h(msg)
            except Exception:  # one consumer's bug must not starve the others
                log.exception("a handler failed for a message on %s", msg.topic)

    @staticmethod
    def join(present: Optional[Handler], new: Optional[Handler]) -> Optional[Handler]:
        """The handler of a filter subscribed again: ``new`` beside the present one(s)."""
        if present is None or new is None:
            return new if new is not None else present
        have = present.handlers if isinstance(present, Fanout) else (present,)
        return present if new in have else Fanout(have + (new,))

    @staticmethod
    def without(present: Optional[Handler], gone: Handler) -> Optional[Handler]:
        """The handler(s) left when ``gone`` stops; None when nothing would be left."""
        have = present.handlers if isinstance(present, Fanout) else (present,) if present is not None else ()
        left = tuple(h for h in have if h != gone)
        if not left or len(left) == len(have):
            return None if not left else present
        return left[0] if len(left) == 1 else Fanout(left)


class BoundedInbox(queue.Queue):
    """``Session.inbox``: a queue of at most ``max_messages`` messages and ``max_bytes`` of payload;
    :meth:`offer` drops (and counts in ``dropped``) what would not fit."""

    def __init__(self, max_messages: int = INBOX_MAX_MESSAGES, max_bytes: int = INBOX_MAX_BYTES):
        super().__init__()
        self.max_messages, self.max_bytes = max_messages, max_bytes
        self.bytes = 0
        self.dropped = 0

    def offer(self, msg: MqttMessage) -> bool:
        """Put ``msg`` unless the inbox is full; False (and one more ``dropped``) when it was."""
        with self.not_full:
            if self._qsize() >= self.max_messages or self.bytes + len(msg.payload) > self.max_bytes:
                self.dropped += 1
                return False
            self._put(msg)
            self.unfinished_tasks += 1
            self.not_empty.notify()
            return True

    def _put(self, item: MqttMessage) -> None:  # queue.Queue's hooks for a subclass (as PriorityQueue's)
        super()._put(item)
        self.bytes += len(item.payload)

    def _get(self) -> MqttMessage:
        item = super()._get()
        self.bytes -= len(item.payload)
        return item


_registry: "dict[str, Session]" = {}
_registry_lock = threading.Lock()


def stop_all() -> int:
    """Disconnect every live session of this process (a notebook's "stop everything" cell)."""
    with _registry_lock:
        sessions = list(_registry.values())
    for s in sessions:
        s.close()
    return len(sessions)


def live_sessions() -> list[str]:
    with _registry_lock:
        return sorted(_registry)


def connected_sessions() -> list[str]:
    """Client IDs of the live sessions the broker has accepted (a CONNACK came); the others of
    :func:`live_sessions` are still connecting."""
    with _registry_lock:
        return sorted(cid for cid, s in _registry.items() if s.connected)


def topic_matches(filter_: str, topic: str) -> bool:
    """MQTT filter matching (``+``, ``#``; wildcards never match a leading ``$`` level), with the
    ``$share/{group}/`` prefix removed first."""
    if filter_.startswith(SHARE_PREFIX):
        filter_ = filter_.split("/", 2)[2]
    if filter_ == topic:
        return True
    f, t = filter_.split("/"), topic.split("/")
    if t[0].startswith("$") and f[0] in ("+", "#"):
        return False
    for i, level in enumerate(f):
        if level == "#":
            return True
        if i >= len(t) or (level != "+" and level != t[i]):
            return False
    return len(f) == len(t)


_PAHO_PROTOCOL_ERROR = ReasonCode(PacketTypes.DISCONNECT, "Protocol error")
"""What paho hands ``on_disconnect`` when it ended the connection itself on a packet it could not
read (a ``MalformedPacket``: paho's documented ``convert_disconnect_error_code_to_reason_code``)."""


def _publish_result(reason_code: ReasonCode) -> PublishResult:
    """The PUBACK reason code paho hands ``on_publish`` (MQTT v5 §3.4.2.1), as a plain value."""
    return _result_for(reason_code.packetType, reason_code.value)


@functools.lru_cache(maxsize=64)
def _result_for(packet_type: int, value: int) -> PublishResult:
    """One ``PublishResult`` per reason code, made once: every QoS 1 publish gets a PUBACK, and
    naming its code (``str(ReasonCode)``) scans paho's name table each time. A frozen value can
    be shared."""
    return PublishResult(value, str(ReasonCode(packet_type, identifier=value)))


class Session:
    """One MQTT v5 client with Client ID ``{org}/{unit}/{agent}``.

    Messages arrive on the session's network thread and go to the handler registered with the matching
    ``subscribe`` call (else to ``default_handler``, else to ``inbox``). Handlers must be quick:
    they only hand items to queues or conditions.
    Creating a second Session with the same client ID closes the first one (re-running a cell).
    ``on_reconnect``: called (with no arguments, on a short-lived thread of its own, never on the
    network thread) after every successful re-connect, once the subscriptions are renewed. A
    broker restarted without persistence has forgotten every retained message, so agents republish
    their retained Agent Card from here (Profile: Presence and Liveness, LWT Configuration 4).
    ``on_close``: called on the caller's thread by ``close()`` (not by a ``send_will`` close), while
    the session can still publish: the last word of an agent that exits without a goodbye of its
    own (``stop_all()``, ``atexit``, a re-run cell), since the broker sends no will after a clean
    DISCONNECT.
    ``on_link``: told in words (on the network thread: it must be quick) when the connection to the
    broker is lost, while the session tries to reconnect (``broker gone for 12 s, reconnecting (attempt
    9) ...``, at most every :data:`LINK_NOTICE_S`) and when it is back; unset, the words are logged (INFO).
    """

    def __init__(
        self,
        org: str,
        unit: str,
        agent: str,
        broker: Union[str, BrokerEndpoint, None] = None,
        will: Optional[MqttMessage] = None,
        keepalive: int = 30,
        default_handler: Optional[Handler] = None,
        connect: bool = True,
        connect_timeout: float = 10.0,
        max_packet_size: int = MAX_PACKET_BYTES,
    ):
        self.org, self.unit, self.agent = org, unit, agent
        self.max_packet_size = max_packet_size
        """The largest packet taken from the broker (sent in CONNECT; a larger one ends the connection)."""
        self.client_id = make_client_id(org, unit, agent)
        listed = broker if isinstance(broker, BrokerEndpoint) else resolve(broker, self.client_id)
        self.brokers = listed.brokers
        """The brokers this session may use, in order (a comma-separated URL: ``failover.py``)."""
        self.endpoint = self.brokers[0]
        """The broker this session uses now (or tries to)."""
        self._broker_index = 0
        self._connect_timeout = connect_timeout
        self._lost_index = 0  # the broker whose connection was lost last
        self.keepalive = keepalive
        self.default_handler = default_handler
        self.on_reconnect: Optional[Callable[[], None]] = None
        self.on_close: Optional[Callable[[], None]] = None
        self.on_link: Optional[Callable[[str], None]] = None
        self._lost: Optional[tuple[float, str]] = None  # since when (monotonic) and why the broker is gone
        self._reconnects = 0  # attempts since the connection was lost
        self._link_said = 0.0
        self.inbox = BoundedInbox()
        self.unsolicited = 0
        """Messages the broker sent on topics this session never subscribed to (dropped)."""
        self._refused_why: Optional[str] = None  # why the network loop ended the connection (what the broker sent)
        self._will = will
        self._subs: list[tuple[Subscription, Optional[Handler]]] = []
        self._route_cache: dict[str, tuple[bool, Optional[Handler]]] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._pubacks: dict[int, PublishResult] = {}
        self._qos0_mids: set[int] = set()  # QoS 0 publishes whose on_publish is still to come
        self._ack_callbacks: dict[int, Callable[["PublishResult"], None]] = {}
        self._subacks: dict[int, list[int]] = {}
        self._unsubacks: set[int] = set()
        self._connected = False
        self._connack: Optional[tuple[int, str]] = None
        self.capabilities = BrokerCapabilities()
        """What the broker's latest CONNACK said it offers (``mqtt/capabilities.py``); MQTT's defaults
        until it has answered."""
        self._dropped_before_connack = False  # the broker closed the first connection without a CONNACK
        self._closed = False
        self.unreadable_drops = 0
        """Connections paho ended because it could not read a packet the broker sent (see the module docstring)."""
        self.skips_retained = False
        """After such a drop: subscriptions are renewed without their retained messages."""
        self.connect_count = 0
        self.received = 0
        self._client = self._make_client()
        self._loop: Optional[NetworkLoop] = None
        if connect:
            self.connect(connect_timeout)

    # -- setup -----------------------------------------------------------------------------------
    def _make_client(self) -> mqtt.Client:
        c = paho_client(self.endpoint, self.client_id)
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_publish = self._on_publish
        c.on_subscribe = self._on_subscribe
        c.on_unsubscribe = self._on_unsubscribe
        c.on_socket_open = self._on_socket_open
        c.on_pre_connect = self._on_pre_connect
        if self._will is not None:
            w = self._will
            c.will_set(w.topic, w.payload, qos=w.qos, retain=w.retain, properties=_properties(w, PacketTypes.WILLMESSAGE))
        return c

    def connect(self, timeout: float = 10.0) -> "Session":
        """Connect and wait for CONNACK; replaces any live session with the same client ID.

        ``timeout`` bounds each wait: the TCP connection and the TLS handshake (paho's
        ``connect_timeout``, else 5 s of its own), then the CONNACK, which gets what is left of it.
        With a list of brokers, one that cannot be reached is passed over for the next (one that
        answers and refuses is not: the others would refuse too).
        Raises :class:`ConnectFailed` with the likely cause (:func:`connect_failure`)."""
        self._connect_timeout = timeout
        if len(self.brokers) == 1:
            return self._connect_to_endpoint(timeout)
        deadline = time.monotonic() + timeout  # one for the whole list
        unreachable: list[str] = []
        order, passes, tried = list(range(len(self.brokers))), 0, 0
        while order and time.monotonic() < deadline:
            slow: list[int] = []
            for index in order:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if tried:  # a paho client that failed to connect takes no new target: a fresh one for the next
                    self._broker_index, self.endpoint = index, self.brokers[index]
                    self._client = self._make_client()
                tried += 1
                within = min(left, failover.ATTEMPT_TIMEOUT_S * 2 ** passes, timeout)
                try:
                    return self._connect_to_endpoint(within)
                except ConnectFailed as exc:
                    if exc.reason_code is not None:
                        raise
                    if exc.stalled:
                        slow.append(index)  # another pass gives it twice as long
                    unreachable.append(str(exc))
                    with self._cond:
                        self._connack, self._dropped_before_connack = None, False
            order, passes = slow, passes + 1
        shown = "; ".join(dict.fromkeys(unreachable[-3:]))  # bounded: a list of 100 stalled nodes says 3
        within_deadline = "" if not order else f" within {timeout:g} s, the list's deadline"
        raise ConnectFailed(f"no broker of the list answered ({tried} tried{within_deadline}): {shown}",
                            stalled=bool(order))

    def _use_broker(self, index: int) -> None:
        """From now on, (re)connect to broker ``index`` of ``brokers`` with its own login (never while connected)."""
        self._broker_index, self.endpoint = index, self.brokers[index]
        if self.endpoint.username:
            self._client.username_pw_set(self.endpoint.username, self.endpoint.password)

    def _connect_properties(self) -> Properties:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 0
        props.MaximumPacketSize = self.max_packet_size  # the broker must not send more (MQTT v5 §3.1.2.11.4)
        return props

    def _reconnect(self, timed_out: bool = False) -> Optional[float]:
        """The network thread's reconnect attempt (``paho_lock`` held): to the broker the attempt's
        number picks from the list (``failover.broker_for_attempt``), else the same one again. With a
        list, the attempt has ``failover.attempt_timeout`` for TCP, TLS and CONNACK (returned to the
        network loop, which cuts it then), and one that ran out of time moves on to the next broker."""
        if len(self.brokers) == 1:
            self._client.reconnect()
            return None
        if timed_out:  # a node that stalled is not restarting: no second attempt on it
            self._reconnects = failover.last_attempt_on_broker(self._reconnects)
        attempt = self._reconnects + 1
        index = failover.broker_for_attempt(attempt, self._lost_index, len(self.brokers))
        within = failover.attempt_timeout(attempt, len(self.brokers), self._connect_timeout)
        self._client.disconnect()  # no socket now: only marks paho's client closed, so it takes a new timeout
        self._client.connect_timeout = within
        if index != self._broker_index:
            self._use_broker(index)
        self._client.connect_async(self.endpoint.host, self.endpoint.port, keepalive=self.keepalive,
                                   clean_start=True, properties=self._connect_properties())
        self._client.reconnect()
        return within

    def _connect_to_endpoint(self, timeout: float) -> "Session":
        if self.endpoint.username_is_client_id and self.endpoint.username != self.client_id:
            raise ConnectFailed(
                f"{self.client_id} would log in as {self.endpoint.username}: this broker renames every client "
                "after its login, so its ACL would not let it read its own topics. Use the credentials made "
                f"for this agent (broker.credentials({self.agent!r})).")
        with _registry_lock:
            old = _registry.get(self.client_id)
            _registry[self.client_id] = self
        if old is not None and old is not self:
            old.close()
        deadline = time.monotonic() + timeout
        self._client.connect_timeout = timeout
        try:
            self._client.connect(self.endpoint.host, self.endpoint.port, keepalive=self.keepalive,
                                 clean_start=True, properties=self._connect_properties())
        except (OSError, ValueError) as exc:
            self._unregister()
            raise ConnectFailed(connect_failure(self.endpoint, exc, timeout),
                                stalled=isinstance(exc, TimeoutError)) from None
        self._loop = NetworkLoop(self._client, self._deliver, name=f"mqtt-{self.client_id}", reconnect=self._reconnect,
                                 max_packet=self.max_packet_size, refuse=self._refuse)
        self._loop.start()
        with self._cond:
            answered = self._cond.wait_for(lambda: self._connack is not None or self._dropped_before_connack,
                                           max(0.0, deadline - time.monotonic()))
            connack = self._connack
        if connack is None:
            self._loop.stop()
            self._unregister()
            if self._refused_why:  # the network loop ended it: not an MQTT broker
                raise ConnectFailed(f"the server at {self.endpoint.url} is {self._refused_why}")
            raise ConnectFailed(connect_failure(self.endpoint, None if answered else TimeoutError(), timeout,
                                                connected=True), stalled=not answered)
        code, reason = connack
        if code >= 0x80:
            self._loop.stop()
            self._unregister()
            words = capabilities.connect_refused_words(code, self._will.topic if self._will else None)
            raise ConnectFailed(f"the broker at {self.endpoint.url} refused {self.client_id}: {reason} ({code})"
                                + (f"; {words}" if words else ""), code)
        if self._inflight_limit() != self.endpoint.inflight:
            return self._connect_within_receive_maximum(max(0.1, deadline - time.monotonic()))
        return self

    def _connect_within_receive_maximum(self, timeout: float) -> "Session":
        """The broker allows fewer unacknowledged publishes than this client would keep (Receive Maximum,
        MQTT v5 §3.3.4). paho takes an inflight limit only on a client that is not connected, so: a clean
        DISCONNECT (no will), and the same connect again with a new paho client keeping the broker's limit."""
        limit = self._inflight_limit()
        log.info("%s: the broker's Receive Maximum is %d: connecting again keeping at most that many publishes "
                 "unacknowledged", self.client_id, limit)
        self.connect_count = 0  # not a reconnect: no notices, no resubscribe
        self._client.disconnect()
        self._stop_loop()
        with self._cond:
            self._connack, self._connected, self._dropped_before_connack = None, False, False
        self.endpoint = replace(self.endpoint, inflight=limit)
        self.brokers = tuple(self.endpoint if i == self._broker_index else b for i, b in enumerate(self.brokers))
        self._client = self._make_client()
        return self._connect_to_endpoint(timeout)

    # -- paho callbacks (network thread: only hand over) ----------------------------------------
    def _on_socket_open(self, client, userdata, sock) -> None:
        """Every new connection (reconnects too) sends small packets at once (TCP_NODELAY), and lets the
        broker have at most ``RECEIVE_BUFFER`` bytes waiting for it (``network_loop.py`` counts them)."""
        if isinstance(sock, socket.socket):  # TLS sockets are socket.socket too
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
            except OSError:  # already closed
                pass

    def _refuse(self, why: str, too_large: bool) -> None:
        """The network loop ends the connection for what the broker sent (network thread, paho's lock
        held): note why (a first connect raises it, a later loss tells it), and say DISCONNECT (0x95
        Packet too large for a packet over ``max_packet_size``, MQTT v5 §3.14.2.1)."""
        self._refused_why = why
        if too_large:
            self._client.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, "Packet too large"))
        else:
            self._client.disconnect()

    def _packet_read(self, kind: str) -> None:
        loop = self._loop
        if loop is not None:
            loop.packet_read(kind)

    def _tell(self, text: str) -> None:
        hook = self.on_link
        if hook is None:
            log.info("%s: %s", self.client_id, text)
            return
        try:
            hook(text)
        except Exception:  # a failing hook must not stop the network thread
            log.exception("%s: the on_link hook failed", self.client_id)

    def _inflight_limit(self) -> int:
        """Unacknowledged QoS 1 publishes: the URL's ``inflight`` within the broker's Receive Maximum."""
        return self.capabilities.inflight_limit(self.endpoint.inflight)

    def _on_pre_connect(self, client, userdata) -> None:
        """paho is about to open a connection: after a loss, one more reconnect attempt."""
        lost = self._lost
        if lost is None:
            return
        self._reconnects += 1
        now = time.monotonic()
        if self._reconnects == 1:
            self._tell(f"broker gone ({lost[1]}): reconnecting to {self.endpoint.url} (attempt 1) ...")
        elif now - self._link_said >= LINK_NOTICE_S:
            self._tell(f"broker gone for {now - lost[0]:.0f} s, reconnecting (attempt {self._reconnects}) ...")
        else:
            return
        self._link_said = now

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.value >= 0x80:
            self._packet_read("CONNACK")  # a refusal: the loop's connected() counts an acceptance
        lost = self._lost
        if lost is not None and reason_code.value < 0x80:
            self._lost = None
            where = ("broker back" if self._broker_index == self._lost_index
                     else f"moved to the next broker of the list, {self.endpoint.url},")
            self._tell(f"{where} after {time.monotonic() - lost[0]:.1f} s (attempt {self._reconnects}): "
                       "subscriptions renewed; messages sent while it was gone may be lost")
        if reason_code.value < 0x80:
            self.capabilities = BrokerCapabilities.from_connack(properties.json() if properties else {})
            if self.connect_count and self._inflight_limit() != self.endpoint.inflight:  # connect() handles the first
                log.warning("%s: the broker's Receive Maximum is now %d, below the %s unacknowledged publishes this "
                            "session keeps; paho cannot lower it on a live client: reconnect the agent (or set "
                            "?inflight=%d in the broker URL)", self.client_id, self.capabilities.receive_maximum,
                            self.endpoint.inflight or "unlimited", self._inflight_limit())
        with self._cond:
            self._connack = (reason_code.value, str(reason_code))
            self._qos0_mids.clear()  # paho drops QoS 0 messages unsent at a disconnect, without on_publish
            self._connected = reason_code.value < 0x80
            if self._connected:
                self.connect_count += 1
                if self._loop is not None:
                    self._loop.connected()
            resubscribe = self._connected and self.connect_count > 1 and not flags.session_present
            subs = list(self._subs)
            self._cond.notify_all()
        if resubscribe and subs:
            client.subscribe([(s.filter, self._subscribe_options(s)) for s, _ in subs])
        if self._connected and self.connect_count > 1 and self.on_reconnect is not None:
            self._run_reconnect_hook()

    def _run_reconnect_hook(self) -> None:
        """Call ``on_reconnect`` on its own thread: it may publish and wait for the PUBACK, which
        only this network thread could read (waiting here would deadlock)."""
        def run() -> None:
            hook = self.on_reconnect
            if hook is None or self._closed:
                return
            try:
                hook()
            except Exception:  # a failing hook must not end the session; the next reconnect calls it again
                log.exception("%s: the on_reconnect hook failed", self.client_id)

        threading.Thread(target=run, name=f"{self.agent}-reconnected", daemon=True).start()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        unreadable = (self._connected and not flags.is_disconnect_packet_from_server
                      and reason_code == _PAHO_PROTOCOL_ERROR)  # on an accepted connection: garbage is not this
        if unreadable and not self._closed:
            self._unreadable()
        if self.connect_count and not self._closed and self._lost is None:  # not our own close()
            why = (f"it closed the connection: {reason_code} ({reason_code.value})"
                   if flags.is_disconnect_packet_from_server
                   else self._refused_why or ("paho could not read a message it sent" if unreadable else "connection lost"))
            self._refused_why = None
            self._lost, self._reconnects, self._lost_index = (time.monotonic(), why), 0, self._broker_index
        with self._cond:
            self._connected = False
            if self._connack is None:
                self._dropped_before_connack = True
            self._cond.notify_all()

    def _subscribe_options(self, sub: Subscription) -> SubscribeOptions:
        """``sub``'s options; Retain Handling 2 (no retained messages) once the session ``skips_retained``."""
        return _options(replace(sub, retain_handling=2) if self.skips_retained else sub)

    def _unreadable(self) -> None:
        """paho dropped the connection on a packet it could not read (network thread): from now on the
        subscriptions are renewed without retained messages, so a retained one cannot do it again."""
        self.unreadable_drops += 1
        if self.skips_retained:
            return
        self.skips_retained = True
        log.warning("%s: paho could not read a message from the broker at %s (e.g. U+FEFF in a property: "
                    "docs/paho-feff-bug.md) and dropped the connection; reconnecting without retained messages: "
                    "cards and presence retained before now are not seen by this session", self.client_id,
                    self.endpoint.url)

    def _deliver(self, burst: list[mqtt.MQTTMessage]) -> None:
        """Messages paho delivered together (``on_message``: every PUBLISH, QoS 0, 1 and 2, once)."""
        for m in burst:
            self._on_message(_from_paho(m))

    def _on_message(self, msg: MqttMessage) -> None:
        self.received += 1
        subscribed, handler = self._route(msg.topic)
        if not subscribed:  # a broker's doing, never a subscription's: dropped (said once)
            self.unsolicited += 1
            if self.unsolicited == 1:
                log.warning("%s: the broker sent a message on %s, a topic this client never subscribed to: "
                            "dropped (and any more such)", self.client_id, safe_text(msg.topic, 80))
            return
        try:
            if handler is not None:
                handler(msg)
            elif not self.inbox.offer(msg) and self.inbox.dropped == 1:
                log.warning("%s: the inbox is full (%d messages, %d bytes: nobody reads them): dropping more",
                            self.client_id, self.inbox.qsize(), self.inbox.bytes)
        except Exception:  # a handler bug must never kill the network thread
            log.exception("%s: handler failed for a message on %s", self.client_id, msg.topic)

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        """paho's ``on_publish``: the PUBACK of a QoS 1 publish (PUBCOMP for QoS 2), or a QoS 0
        message written to the socket (no acknowledgement exists for it: dropped)."""
        result = _publish_result(reason_code)
        with self._cond:
            if mid in self._qos0_mids:
                self._qos0_mids.discard(mid)
                return
        self._packet_read("PUBACK")
        with self._cond:
            callback = self._ack_callbacks.pop(mid, None)
            if callback is None:
                self._pubacks[mid] = result
                self._cond.notify_all()
        if callback is not None:
            callback(result)

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        self._packet_read("SUBACK")
        with self._cond:
            self._subacks[mid] = [rc.value for rc in reason_codes]
            self._cond.notify_all()

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        self._packet_read("UNSUBACK")
        with self._cond:
            self._unsubacks.add(mid)
            self._cond.notify_all()

    def _route(self, topic: str) -> tuple[bool, Optional[Handler]]:
        """Whether a subscription of this session matches ``topic``, and the handler of the first such
        subscription that has one (else ``default_handler``; None: the inbox)."""
        cache = self._route_cache
        found = cache.get(topic)
        if found is not None:
            return found
        subscribed, handler = False, None
        for sub, h in self._subs:
            if topic_matches(sub.filter, topic):
                subscribed = True
                if h is not None:
                    handler = h
                    break
        found = (subscribed, handler if handler is not None else self.default_handler)
        if len(cache) < 10000:
            cache[topic] = found
        return found

    # -- operations ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def bursts(self) -> int:
        """How many times the network thread handed over messages (``received`` counts them): a
        run of messages that arrived together is handed over at once (``network_loop.py``)."""
        return self._loop.bursts if self._loop is not None else 0

    @property
    def read_until(self) -> float:
        """A ``time.monotonic()`` before which every message that reached this client was handed
        over (``network_loop.py``); the time now when the session has no network thread."""
        return self._loop.read_until if self._loop is not None else time.monotonic()

    def on_network_thread(self) -> bool:
        """Is the caller this session's network thread (a message handler), which must never wait
        for anything slow: a key fetch, a PUBACK?"""
        return self._loop is not None and self._loop.is_current()

    def wait_connected(self, timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._connected or self._closed, timeout) and self._connected

    def publish(self, msg: MqttMessage, timeout: float = 5.0) -> PublishResult:
        """Publish and wait for the PUBACK; returns its reason code (16 = nobody subscribed)."""
        return self.publish_nowait(msg).result(timeout)

    def publish_nowait(self, msg: MqttMessage) -> PendingPublish:
        """Publish without waiting; call ``result()`` on what it returns to read the PUBACK (a PUBACK
        nobody reads stays in memory: fire-and-forget publishes use ``publish_then``)."""
        self._ensure_open()
        props = _properties(msg, PacketTypes.PUBLISH)
        caps = self.capabilities
        if msg.retain or msg.qos > caps.max_qos or caps.max_packet_size is not None:
            refusal = caps.refuse_publish(msg.topic, msg.qos, msg.retain, _packet_size(msg, props))
            if refusal:
                raise SessionError(f"{self.client_id}: not published: {refusal}")
        info = self._client.publish(msg.topic, msg.payload, qos=msg.qos, retain=msg.retain, properties=props)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise SessionError(f"{self.client_id}: publish to {msg.topic} not accepted by the client: "
                               f"{mqtt.error_string(info.rc)}")
        if msg.qos == 0:
            self._forget_qos0_ack(info.mid)
        return PendingPublish(self, info.mid, msg.qos, msg.topic)

    def _forget_qos0_ack(self, mid: int) -> None:
        """paho calls ``on_publish`` for a QoS 0 message too, once written, before or after
        ``publish()`` returns. Nobody waits for it, and its packet identifier comes back 65,535
        publishes later: kept, it would answer a later QoS 1 publish before its real PUBACK."""
        with self._cond:
            if self._pubacks.pop(mid, None) is None:
                self._qos0_mids.add(mid)

    def publish_then(self, msg: MqttMessage, on_ack: Callable[["PublishResult"], None]) -> None:
        """Publish without waiting; ``on_ack`` gets the PUBACK result on the network thread (QoS 1/2)
        or at once (QoS 0). The requester uses it to wait for a reply and the PUBACK at the same time."""
        # Never hold our lock while paho publishes: paho calls _on_publish under its own mutex.
        mid = self.publish_nowait(msg).mid
        told = on_ack
        on_ack = lambda result: told(explained(result, msg.topic))  # noqa: E731 (the refusal in words)
        if msg.qos == 0:
            on_ack(PublishResult(0, "Success"))
            return
        with self._cond:  # the PUBACK may already be in: then it waits in _pubacks
            if mid in self._pubacks:
                result = self._pubacks.pop(mid)
            else:
                self._ack_callbacks[mid] = on_ack
                return
        on_ack(result)

    def _wait_puback(self, mid: int, timeout: float) -> PublishResult:
        with self._cond:
            if not self._cond.wait_for(lambda: mid in self._pubacks or self._closed, timeout):
                raise SessionError(f"{self.client_id}: no PUBACK within {timeout:.1f} s (is the broker up?)")
            if mid not in self._pubacks:
                raise SessionError(f"{self.client_id}: session closed before the PUBACK arrived")
            return self._pubacks.pop(mid)

    def subscribe(
        self,
        filter_: Union[str, Subscription],
        handler: Optional[Handler] = None,
        qos: int = 1,
        timeout: float = 5.0,
        **options,
    ) -> int:
        """Subscribe and return the granted QoS only after the SUBACK arrived (profile: subscribe
        to the reply topic before publishing a request that names it).

        Two parts of one agent may subscribe to the same filter (a pool member's presence watch and its
        ubsp-v1 key directory both read ``$a2a/v1/event/{org}/{unit}/+``): each handler then gets every
        message (:class:`Fanout`), and retained messages come again for the newcomer (the broker resends
        them on the renewed subscription: the handlers must take a repeat)."""
        sub = filter_ if isinstance(filter_, Subscription) else Subscription(filter_, qos, **options)
        self._ensure_open()
        refusal = self.capabilities.refuse_subscription(sub.filter)
        if refusal:
            raise SessionError(f"{self.client_id}: not subscribed to {sub.filter}: {refusal}")
        with self._cond:
            present = next((h for s, h in self._subs if s.filter == sub.filter), None)
            self._subs = [(s, h) for s, h in self._subs if s.filter != sub.filter] + [(sub, Fanout.join(present, handler))]
            self._route_cache = {}
        codes = self._subscribe_once_acked(sub, timeout)
        if codes[0] >= 0x80:
            with self._cond:
                self._subs = [(s, h) for s, h in self._subs if s.filter != sub.filter]
                self._route_cache = {}
            raise SessionError(f"{self.client_id}: the broker refused the subscription to {sub.filter} "
                               f"(reason code {codes[0]})", codes[0])
        return codes[0]

    def _subscribe_once_acked(self, sub: Subscription, timeout: float) -> list[int]:
        """Send SUBSCRIBE for ``sub`` and wait for its SUBACK's codes. A connection lost meanwhile (a
        message paho cannot read arrives right after an earlier SUBACK) loses the SUBSCRIBE: the reconnect
        renews every subscription, and this one is sent again on the new connection for its own SUBACK."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if self.connect_count:  # lost before: wait for the reconnect
                    self._cond.wait_for(lambda: self._connected or self._closed, max(0.0, deadline - time.monotonic()))
                epoch = self.connect_count
            rc, mid = self._client.subscribe(sub.filter, options=self._subscribe_options(sub))
            if rc == mqtt.MQTT_ERR_NO_CONN and epoch and not self._closed and time.monotonic() < deadline:
                with self._cond:
                    self._cond.wait(0.05)  # paho saw the loss before on_disconnect told this session
                continue
            if rc != mqtt.MQTT_ERR_SUCCESS:
                raise SessionError(f"{self.client_id}: subscribe to {sub.filter} failed: {mqtt.error_string(rc)}")
            assert mid is not None  # paho numbers every SUBSCRIBE it accepted
            with self._cond:
                self._cond.wait_for(lambda: mid in self._subacks or self._closed or not self._connected
                                    or self.connect_count != epoch, max(0.0, deadline - time.monotonic()))
                if mid in self._subacks or self._closed:
                    return self._subacks.pop(mid, [0x80])
            if time.monotonic() >= deadline:
                raise SessionError(f"{self.client_id}: no SUBACK for {sub.filter} within {timeout:.1f} s")

    def unsubscribe(self, filter_: str, timeout: float = 5.0, handler: Optional[Handler] = None) -> None:
        """Stop ``handler``'s share of ``filter_`` (others subscribed to it keep it), or, without a
        handler or when it was the last one, the whole subscription (UNSUBSCRIBE, waiting for the UNSUBACK).

        The subscription's handler keeps its messages until the UNSUBACK (or ``timeout``): the broker may
        still deliver what it matched before it saw the UNSUBSCRIBE (MQTT 5 §3.10.4), and such a message
        is the subscriber's, not "a topic this client never subscribed to"."""
        with self._cond:
            present = next((h for s, h in self._subs if s.filter == filter_), None)
            rest = Fanout.without(present, handler) if handler is not None else None
            if rest is not None:
                self._subs = [(s, rest if s.filter == filter_ else h) for s, h in self._subs]
                self._route_cache = {}
                return
        try:
            if not self._closed:
                rc, mid = self._client.unsubscribe(filter_)
                if rc == mqtt.MQTT_ERR_SUCCESS:
                    deadline = time.monotonic() + timeout
                    with self._cond:
                        self._cond.wait_for(lambda: mid in self._unsubacks or self._closed, timeout)
                        self._unsubacks.discard(mid)
                    self._wait_handed_over(time.monotonic(), deadline)
        finally:
            with self._cond:
                self._subs = [(s, h) for s, h in self._subs if s.filter != filter_]
                self._route_cache = {}

    def _wait_handed_over(self, since: float, deadline: float) -> None:
        """Wait (until ``deadline``) for the network thread to hand over every message read before
        ``since``: a message read in the same turn as the UNSUBACK reaches its handler only after paho
        reported the UNSUBACK. Never on the network thread itself (it hands them over after this returns)."""
        if self._loop is None or self.on_network_thread():
            return
        while self.read_until < since and not self._closed and time.monotonic() < deadline:
            self._loop.wake()  # out of select: a turn that starts after ``since`` moves read_until past it
            time.sleep(0.002)

    def delivers_shared_dollar_topics(self, probe_topic: str, wait: float = 1.0) -> bool:
        """Does this broker deliver ``$share/...`` subscriptions on topics starting with ``$``?

        Probed by publishing to ``probe_topic`` (a topic of this client's own) and waiting for the
        message to arrive through a shared subscription. The PUBACK code alone cannot tell: another
        subscriber (a recorder on ``$a2a/#``) also makes it 0.
        """
        if not self.capabilities.shared_subscriptions:  # asking would end the connection (MQTT v5 §4.8.2)
            return False
        shared = f"$share/a2a-nb-probe/{probe_topic}"
        arrived = threading.Event()
        self.subscribe(shared, handler=lambda m: arrived.set())
        try:
            if self.publish(MqttMessage(probe_topic, b"{}", qos=1)).no_subscribers:
                return False
            return arrived.wait(wait)
        finally:
            self.unsubscribe(shared)

    def receive(self, timeout: float = 5.0) -> Optional[MqttMessage]:
        """Next message from ``inbox`` (messages without a handler), or None after ``timeout``."""
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self, send_will: bool = False) -> None:
        """Disconnect. ``send_will=True`` asks the broker to publish the last will anyway: a clean
        way to show a "crashed" agent without killing a process."""
        hook = self.on_close
        if hook is not None and not send_will and not self._closed:
            self.on_close = None
            try:
                hook()
            except Exception:  # closing must go on
                log.exception("%s: the on_close hook failed", self.client_id)
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        try:
            if send_will:
                self._client.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message"))
            else:
                self._client.disconnect()
        finally:
            self._stop_loop()
            self._unregister()

    def kill_socket(self) -> None:
        """Drop the TCP connection without DISCONNECT (the broker sends the will after it notices)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._loop is not None:
            self._loop.stop_reconnecting()  # before the cut: the thread must not connect again
        sock = self._client.socket()
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._stop_loop()
        self._unregister()

    def _stop_loop(self) -> None:
        if self._loop is not None:
            self._loop.stop()

    def _unregister(self) -> None:
        with _registry_lock:
            if _registry.get(self.client_id) is self:
                del _registry[self.client_id]

    def _ensure_open(self) -> None:
        if self._closed:
            raise SessionError(f"{self.client_id}: this session is closed (a newer one with the same "
                               "client ID may have replaced it)")

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("connected" if self._connected else "connecting")
        return f"<Session {self.client_id} {state} {self.endpoint.url}>"


def paho_client(endpoint: BrokerEndpoint, client_id: str) -> mqtt.Client:
    """A bare paho MQTT v5 client set up for ``endpoint`` as every session sets its own: the URL's login
    (never printed), TLS with its CA, its inflight window; not connected (``c.connect(endpoint.host,
    endpoint.port)``). The session builds on it; so do the benchmark's raw-paho floor and the tests'
    clients written from the profile, so a ``user:pass@`` or ``mqtts://`` URL works for all of them."""
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    c.max_inflight_messages_set(endpoint.inflight)
    c.max_queued_messages_set(0)
    if endpoint.username:
        c.username_pw_set(endpoint.username, endpoint.password)
    if endpoint.tls:
        problem = endpoint.ca_file_problem()
        if problem:
            raise ConnectFailed(problem)
        try:
            c.tls_set(ca_certs=endpoint.ca_file)
        except (ssl.SSLError, OSError) as exc:  # a file that holds no certificate
            raise ConnectFailed(f"cannot use the CA file {endpoint.ca_file}: it holds no PEM certificate "
                                f"({_reason(exc)}); give the broker's CA certificate") from None
    return c


def connect_failure(endpoint: BrokerEndpoint, exc: Optional[BaseException], timeout: float, *,
                    connected: bool = False) -> str:
    """Why a first connection to ``endpoint`` failed, in words a learner can act on (never a password).

    ``exc``: what paho's connect raised. ``connected``: the connection was made (and the CONNECT
    sent), then the broker closed it (``exc`` None) or sent no CONNACK in time (a ``TimeoutError``).
    The usual causes: nothing listens (refused), a wrong host (an unknown name, or no answer at
    all), and TLS on one side only: an ``mqtts://`` URL on a plain port (the handshake is reset),
    ``mqtt://`` on a TLS port (the broker closes the connection without a CONNACK)."""
    where = f"cannot reach the MQTT broker at {endpoint.url}"
    if connected:
        tls_hint = "" if endpoint.tls else "; if that port expects TLS, use mqtts:// instead of mqtt://"
        if exc is None:
            return f"{where}: it closed the connection without answering CONNECT{tls_hint}"
        return f"{where}: the port took the connection but sent no CONNACK within {timeout:g} s: is it an MQTT " \
               f"v5 broker?{tls_hint}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (f"{where}: its TLS certificate is not trusted ({exc.verify_message}): give the broker's CA "
                "certificate with A2A_BROKER_CA=/path/ca.crt or ?ca=/path/ca.crt in the URL")
    if endpoint.tls and isinstance(exc, (ssl.SSLError, ConnectionResetError, ConnectionAbortedError,
                                         BrokenPipeError)):
        return (f"{where}: the TLS handshake failed ({_reason(exc)}): the port answers, but not with TLS; "
                "for a plain MQTT port use mqtt:// instead of mqtts://")
    if isinstance(exc, socket.gaierror):
        return f"{where}: unknown host {endpoint.host!r} ({_reason(exc)}); check the host in the URL"
    if isinstance(exc, TimeoutError):
        return (f"{where}: no answer within {timeout:g} s; check the host and port (a host that is down, "
                "or a firewall, lets a connection wait without a word)")
    start_one = "(`python -m a2a_nb broker` starts one; A2A_BROKER_URL points the kit at it)"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where}: nothing listens on port {endpoint.port} ({_reason(exc)}). Is it running? {start_one}"
    return f"{where}: {_reason(exc) if exc else 'no reason given'}. Is it running? {start_one}"


def _reason(exc: BaseException) -> str:
    """An OS error's own words without ``[Errno N]`` (``Connection refused``), else its text."""
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# -- conversions between MqttMessage and paho --------------------------------------------------------
# paho's ``Properties`` is slow to build: its constructor rebuilds its name and type tables on every
# call (about 5 µs), and every attribute set scans them (about 4 µs). Two shortcuts, both with paho's
# public API only: a blank ``Properties`` per packet type is made once and copied (copy.copy shares
# the tables, about 1.5 µs); and the properties that repeat from one publish to the next (a stream's
# replies all carry the same Correlation Data and User Properties) are set once on a cached object
# that paho only reads (a cached object is never changed: a new value is set on a copy, cached too).
_BLANK = {packet_type: Properties(packet_type) for packet_type in (PacketTypes.PUBLISH, PacketTypes.WILLMESSAGE)}


def _properties(msg: MqttMessage, packet_type: int) -> Optional[Properties]:
    """The MQTT v5 properties of a PUBLISH or a will (Request/Reply Mapping: Response Topic,
    Correlation Data; A2A User Property Naming), or None when the message has none."""
    if (msg.response_topic is None and msg.correlation_data is None and not msg.user_properties
            and msg.content_type is None and msg.message_expiry is None and msg.payload_format is None):
        return None
    corr = bytes(msg.correlation_data) if msg.correlation_data is not None else None
    if not msg.user_properties:  # paho only reads it (packs it, again for a resend): one object serves every publish
        return _fixed_properties(packet_type, msg.response_topic, corr, msg.content_type, msg.message_expiry,
                                 msg.payload_format)
    user = tuple((str(k), str(v)) for k, v in msg.user_properties)
    make = _with_user_properties if sum(len(k) + len(v) for k, v in user) <= _CACHED_USER_CHARS else \
        _with_user_properties.__wrapped__  # large values are not kept: the cache stays small
    return make(packet_type, msg.response_topic, corr, msg.content_type, msg.message_expiry, msg.payload_format, user)


_CACHED_USER_CHARS = 1024
"""User Properties of at most this many characters (names and values) are cached with their Properties."""


@functools.lru_cache(maxsize=256)
def _with_user_properties(packet_type: int, response_topic: Optional[str], correlation: Optional[bytes],
                          content_type: Optional[str], message_expiry: Optional[int], payload_format: Optional[int],
                          user_properties: tuple[tuple[str, str], ...]) -> Properties:
    """:func:`_fixed_properties` plus these User Properties, on a copy (the cached one never changes).
    Cached too: a stream's items repeat their Correlation Data and User Properties item after item."""
    props = copy.copy(_fixed_properties(packet_type, response_topic, correlation, content_type, message_expiry,
                                        payload_format))
    props.UserProperty = list(user_properties)
    return props


@functools.lru_cache(maxsize=256)
def _fixed_properties(packet_type: int, response_topic: Optional[str], correlation: Optional[bytes],
                      content_type: Optional[str], message_expiry: Optional[int],
                      payload_format: Optional[int]) -> Properties:
    """Every property but the User Properties, set through paho's public attribute API (which
    checks name and packet type). Cached: callers copy it and never change it. A new Correlation
    Data is set on a copy of the same properties without it (cached too): a requester's requests
    differ only in their Correlation Data."""
    if correlation is not None:
        props = copy.copy(_fixed_properties(packet_type, response_topic, None, content_type, message_expiry,
                                            payload_format))
        props.CorrelationData = correlation
        return props
    props = copy.copy(_BLANK[packet_type])
    if response_topic is not None:
        props.ResponseTopic = response_topic
    if content_type is not None:
        props.ContentType = content_type
    if message_expiry is not None:
        props.MessageExpiryInterval = int(message_expiry)
    if payload_format is not None:
        props.PayloadFormatIndicator = int(payload_format)
    return props


def _packet_size(msg: MqttMessage, props: Optional[Properties]) -> int:
    """The bytes of ``msg``'s PUBLISH packet (MQTT v5 §3.3): fixed header, topic, packet id, properties
    (paho packs them), payload. Asked only where the broker set a Maximum Packet Size."""
    prop_bytes = len(props.pack()) if props is not None else 1
    rest = 2 + len(msg.topic.encode()) + (2 if msg.qos else 0) + prop_bytes + len(msg.payload)
    length_bytes = 1 if rest < 128 else 2 if rest < 16384 else 3 if rest < 2097152 else 4
    return 1 + length_bytes + rest


def _from_paho(m: mqtt.MQTTMessage) -> MqttMessage:
    """A message paho delivered, read through its public attributes (``topic``, ``payload``, ``qos``,
    ``retain``, ``properties``: a ``Properties`` whose attributes exist only when the PUBLISH had them)."""
    p = m.properties
    corr = getattr(p, "CorrelationData", None)
    return MqttMessage(
        topic=m.topic,
        payload=bytes(m.payload),
        qos=m.qos,
        retain=bool(m.retain),
        response_topic=getattr(p, "ResponseTopic", None),
        correlation_data=bytes(corr) if corr is not None else None,
        user_properties=tuple(getattr(p, "UserProperty", ())),  # paho reads each as a (str, str) tuple
        content_type=getattr(p, "ContentType", None),
        message_expiry=getattr(p, "MessageExpiryInterval", None),
        payload_format=getattr(p, "PayloadFormatIndicator", None),
        received_at=time.time(),
    )


def _options(sub: Subscription) -> SubscribeOptions:
    return SubscribeOptions(qos=sub.qos, noLocal=sub.no_local, retainAsPublished=sub.retain_as_published,
                            retainHandling=sub.retain_handling)

"""Bridged brokers: an embedded Mosquitto that carries the profile's topics to and from another broker.

Agents on one broker and requesters on the other then see one A2A space: retained cards and their
``a2a-status`` (Profile: Discovery, Presence and Liveness), requests and replies with Response Topic,
Correlation Data and user properties unchanged (Request/Reply Mapping), handover (Optional Task
Handover) and pools (Optional Shared Subscription Dispatch). Mosquitto's bridge is one client
connection from this broker to the remote one; :func:`bridge_config` writes it, one line per
decision (each line says why), checked against Mosquitto 2.0.11 in ``tests/integration/test_bridged_brokers.py``.

Pools: a ``$share`` group is per broker (each broker of a bridge would dispatch its own copy; Mosquitto
2.0.11 does not deliver ``$share`` on ``$`` topics anyway, and ``ResponderOptions(pool_dispatch="slot")``
makes members claim on any broker). Members claim pooled requests on ``$a2a-nb-pool/...``
(:mod:`a2a_nb.protocol.pools`), so that tree crosses the bridge too: a claim that stayed on its own
broker would look like silence on the other, and the request would run twice.

Latency: Mosquitto 2.0.11 sets TCP_NODELAY (``set_tcp_nodelay true``) on the sockets it accepts, not
on the one its bridge opens, so a request that follows a reply back to back waits for the other
broker's delayed ACK (about 40 ms); ``python -m benchmarks`` measures it (``benchmarks/bridged.py``).
"""
from __future__ import annotations

import ipaddress
import secrets
import threading
import time
from typing import Callable, Iterable, Optional

from ..protocol import pools, topics
from ..protocol.packet import MqttMessage
from .broker import BrokerEndpoint, BrokerError, EmbeddedBroker, config_value

CHECK_PREFIX = "$a2a-nb-bridge"
"""A tree of the kit's own that the bridge carries too: :meth:`BridgedBroker.wait_bridged` sends a
message each way on it (outside ``$a2a/``, so no recorder or lint sees it)."""

BRIDGED_TREES: tuple[str, ...] = (topics.ALL_A2A, f"{pools.CLAIMS_PREFIX}/#", f"{CHECK_PREFIX}/#")
"""What crosses, both ways, QoS 1: the profile's ``$a2a/#`` (cards, presence, ubsp key metadata,
requests, replies, events), the pool members' claims, and the bridge check. Not the pool members'
``$a2a-nb-probe/...``: it asks what *this* broker delivers."""

LOOP_PROBE_PERIOD_S = 1.0
"""How often :class:`LoopGuard` sends its probe: a loop is found within about this long after it forms."""

LOOP_SETTLED_S = 30.0
LOOP_GRACE_S = 3.0
"""A guard that saw no loop for ``LOOP_SETTLED_S`` belongs to the broker that was there first: when a
loop appears, it gives the newcomer that closed it (whose own guard stops it at once) ``LOOP_GRACE_S``,
then probes again, and stops only if the loop is still there. 30 s: a restarted newcomer's guard is
still young when the older broker's bridge comes back to it (Mosquitto retries within 10 s,
``restart_timeout``)."""

RECEIVE_MAXIMUM = 65534
"""Mosquitto 2.0.11 sends its ``max_inflight_messages`` as the bridge's MQTT v5 Receive Maximum: the
embedded broker's 0 ("no limit") becomes Receive Maximum 0, a protocol error for which the remote
closes the connection (and 65535 wraps to 0 as well). 65534 keeps "practically no limit" (it is also
the window this broker grants its own clients, so their endpoint keeps paho's "no limit")."""


def bridge_config(remote: BrokerEndpoint, *, name: str = "a2a", client_id: Optional[str] = None,
                  trees: Iterable[str] = BRIDGED_TREES) -> str:
    """The ``mosquitto.conf`` lines that bridge this broker to ``remote`` (appended to the generated config).

    ``trees``: the topic filters that cross (a lesson or a test may leave one out to show what breaks).

    ``client_id``: the bridge's Client ID on the remote broker (default: unique per call, so two
    bridged brokers on one machine do not take each other's connection over). The remote password,
    if any, is written into the config (mode 0600 in the broker's private work folder) and nowhere else.
    Every part of ``remote`` is data: one Mosquitto would not read back as the same one value
    (a newline, any control character, blanks at an end: :func:`~a2a_nb.mqtt.broker.config_value`)
    is refused with :class:`BrokerError`.
    """
    client_id = client_id or f"a2a-nb-bridge-{secrets.token_hex(4)}"
    host = config_value("the bridge URL's host", remote.host, token=True)
    lines = [
        f"max_inflight_messages {RECEIVE_MAXIMUM}",  # see RECEIVE_MAXIMUM: 0 breaks the bridge's CONNECT
        "connection " + config_value("the bridge name", name, token=True),
        f"address {host}:{remote.port}" if ":" not in host else f"address [{host}]:{remote.port}",
        "bridge_protocol_version mqttv50",  # v5: properties (Response Topic, Correlation Data, user properties) cross
        # both ways on one connection, QoS 1 (Profile: QoS Guidance)
        *(f"topic {config_value('a bridged topic filter', tree, token=True)} both 1" for tree in trees),
        # no echo: a v5 bridge subscribes with No Local + Retain As Published, so nothing comes back the way it
        # came and retained cards stay retained; try_private (the default) is the v3 "I am a bridge" flag, which a
        # v5 bridge does not send (its CONNECT is plain v5). A loop through another path (a broker bridged to
        # itself, two brokers bridged to each other) is no echo: LoopGuard catches it
        "try_private true",
        # nothing is kept across an outage either way (2.0.11 sends no Session Expiry Interval): say so, and
        # resubscribe cleanly; the retained cards and presence come again on every reconnect
        "cleansession true",
        "remote_clientid " + config_value("the bridge client id", client_id, token=True),
        "start_type automatic",  # connect at start, reconnect after a loss
        "restart_timeout 1 10",  # first retry after about a second, backing off to 10 s
        "keepalive_interval 10",  # a silent remote (no TCP reset) is noticed within 15 s
        # $SYS/broker/connection/<client_id>/state: 1 while up, 0 when down (also the bridge's will on the remote)
        "notifications true",
    ]
    if remote.username:
        lines.append("remote_username " + config_value("the bridge URL's user", remote.username))
    if remote.password:
        lines.append("remote_password " + config_value("the bridge's password", remote.password))
    if remote.tls:
        if remote.ca_file:
            config_value("the bridge's CA file", remote.ca_file)  # before an error quotes it
        problem = remote.ca_file_problem()
        if problem or not remote.ca_file:
            raise BrokerError(problem or f"the bridge to {remote.url} uses TLS: name the remote broker's CA "
                              "certificate with ?ca=/path/ca.crt in the URL or A2A_BROKER_CA")
        lines.append(f"bridge_cafile {remote.ca_file}")
    return "\n".join(lines)


def describe(remote: BrokerEndpoint, trees: Iterable[str] = BRIDGED_TREES) -> str:
    """One line for a banner: what is bridged and where (the password never shows)."""
    return f"bridged to {remote.url}: {', '.join(trees)} both ways, QoS 1, MQTT v5"


def _same_machine(remote_host: str, own_host: str) -> bool:
    """Whether ``remote_host`` surely names this machine's listener on ``own_host`` (loopback, the same
    address, or any address when listening on all of them). No name is resolved: a remote reached
    another way (a LAN address, a proxy) is LoopGuard's to catch."""
    if remote_host == own_host or remote_host == "localhost":
        return True
    try:
        remote = ipaddress.ip_address(remote_host)
    except ValueError:
        return False
    mapped = getattr(remote, "ipv4_mapped", None)
    remote = mapped or remote
    return remote.is_loopback or remote.is_unspecified or own_host in ("0.0.0.0", "::")


class LoopGuard:
    """Watches a bridged broker for a loop: a message published here that comes back here.

    A loop forms when a broker is bridged to itself, or to a broker bridged back to it (directly, or
    through others): No Local only keeps a bridge from getting back what it sent *itself*, so each
    bridge forwards what the other brought in, for ever (measured: one publish, 54,000 copies in 10 s).
    Mosquitto 2.0.11 has no hop count, and the other broker may not be the kit's, so the guard asks
    the network: every :data:`LOOP_PROBE_PERIOD_S` it publishes one QoS 0 probe on
    ``$a2a-nb-bridge/loop/<token>`` (a tree the bridge carries) and counts its copies here. One copy is
    the local delivery; a second is a loop: ``on_loop(copies)`` runs once (on the guard's thread),
    and the guard stops (after a grace when its broker was there first: :data:`LOOP_GRACE_S`).
    ``python -m a2a_nb broker --bridge-to`` then stops its broker with an error.
    """

    def __init__(self, broker: "BridgedBroker", on_loop: Callable[[int], None],
                 period: float = LOOP_PROBE_PERIOD_S, settled_after: float = LOOP_SETTLED_S,
                 grace: float = LOOP_GRACE_S):
        from .session import Session  # the one module that talks MQTT

        self.topic = f"{CHECK_PREFIX}/loop/{secrets.token_hex(6)}"
        self.on_loop, self.period, self.settled_after, self.grace = on_loop, period, settled_after, grace
        self.copies: dict[int, int] = {}  # probe number -> copies seen here
        self.looped = threading.Event()
        self._found = threading.Event()
        self._ignore_up_to = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._session = Session("a2a-nb", "bridge", f"loop-guard-{secrets.token_hex(4)}", broker=broker.endpoint)
        try:
            self._session.subscribe(self.topic, handler=self._count, qos=0)
        except BaseException:
            self._session.close()
            raise
        self._thread = threading.Thread(target=self._run, name="bridge-loop-guard", daemon=True)

    def _count(self, msg: MqttMessage) -> None:
        try:
            number = int(msg.payload)
        except ValueError:  # not one of ours
            return
        with self._lock:
            if number <= self._ignore_up_to:  # a probe from before the grace, still going round
                return
            seen = self.copies[number] = self.copies.get(number, 0) + 1
        if seen >= 2:
            self._found.set()

    def start(self) -> "LoopGuard":
        self._thread.start()
        return self

    def _run(self) -> None:
        number, started, graced = 0, time.monotonic(), False
        try:
            while not self._stop.is_set():
                number += 1
                self._session.publish_nowait(MqttMessage(self.topic, str(number).encode(), qos=0))
                if not self._found.wait(self.period) or self._stop.is_set():
                    continue
                if graced or time.monotonic() - started < self.settled_after:
                    self.looped.set()
                    break
                graced = True  # there first: the newcomer that closed the loop stops itself meanwhile
                if self._stop.wait(self.grace):
                    break
                with self._lock:
                    self._ignore_up_to, self.copies = number, {}
                    self._found.clear()
        except Exception:  # the broker went away under the guard (stopped): nothing left to watch
            return
        finally:
            self._session.close()
        if self.looped.is_set():
            self.on_loop(max(self.copies.values()))

    def stop(self) -> None:
        self._stop.set()
        self._found.set()  # wakes the thread now
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(5)


class BridgedBroker(EmbeddedBroker):
    """An embedded Mosquitto bridged to ``remote`` (see :func:`bridge_config`).

    ``start()`` returns once Mosquitto listens; :meth:`wait_bridged` tells when the bridge carries
    messages. Its clients connect to ``url`` as to any embedded broker.
    """

    def __init__(self, remote: BrokerEndpoint, port: Optional[int] = None, host: str = "127.0.0.1", *,
                 name: str = "a2a", trees: Iterable[str] = BRIDGED_TREES, start_timeout: float = 10.0):
        if port is not None and remote.port == port and _same_machine(remote.host, host):
            raise BrokerError(f"this broker would be bridged to itself ({remote.url} is its own port {port} on "
                              "this machine): every message would go round for ever; bridge it to another broker")
        self.remote = remote
        self.trees = tuple(trees)
        self.bridge_client_id = f"a2a-nb-bridge-{secrets.token_hex(4)}"
        super().__init__(port=port, host=host, start_timeout=start_timeout,
                         extra_config=bridge_config(remote, name=name, client_id=self.bridge_client_id, trees=self.trees))

    @property
    def state_topic(self) -> str:
        """Where Mosquitto says whether the bridge is up (retained ``1``/``0``; ``notifications true``)."""
        return f"$SYS/broker/connection/{self.bridge_client_id}/state"

    def wait_connected(self, timeout: float = 5.0, cancel: Optional[threading.Event] = None) -> bool:
        """Wait until this broker says its bridge is connected (its ``state_topic`` reads ``1``); needs
        no login on the remote broker. False after ``timeout``, or once ``cancel`` is set (Ctrl-C)."""
        from .session import Session  # the one module that talks MQTT

        up = threading.Event()
        deadline = time.monotonic() + timeout
        with Session("a2a-nb", "bridge", f"state-{secrets.token_hex(4)}", broker=self.endpoint,
                     connect_timeout=timeout) as session:
            session.subscribe(self.state_topic, handler=lambda m: up.set() if m.payload == b"1" else up.clear())
            while not up.wait(max(0.0, min(0.1, deadline - time.monotonic()))):
                if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
                    return False
            return True

    def wait_bridged(self, timeout: float = 10.0) -> bool:
        """Wait until a message sent here reaches the remote broker and one sent there arrives here
        (the bridge is connected *and* subscribed); False after ``timeout``. It connects to the remote
        broker with ``remote``'s login: for an open remote (tests, lessons), else see :meth:`wait_connected`."""
        from .session import Session  # the one module that talks MQTT

        token = secrets.token_hex(4)
        deadline = time.monotonic() + timeout
        here = Session("a2a-nb", "bridge", f"check-here-{token}", broker=self.endpoint, connect_timeout=timeout)
        try:
            there = Session("a2a-nb", "bridge", f"check-there-{token}", broker=self.remote, connect_timeout=timeout)
        except Exception:
            here.close()
            raise
        pending = {here: f"{CHECK_PREFIX}/check/{token}/to-there", there: f"{CHECK_PREFIX}/check/{token}/to-here"}
        try:
            here.subscribe(pending[there])  # each side reads what is sent *to* it (in its inbox)
            there.subscribe(pending[here])
            while pending and time.monotonic() < deadline:
                for sender, topic in list(pending.items()):  # resent until it crossed
                    sender.publish_nowait(MqttMessage(topic, b"", qos=0))
                for sender, reader in ((here, there), (there, here)):
                    if sender in pending and reader.receive(timeout=0.05) is not None:
                        del pending[sender]
            return not pending
        finally:
            here.close()
            there.close()

    def describe(self) -> str:
        return describe(self.remote, self.trees)

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self.running else "stopped"
        return f"<BridgedBroker {state}, {self.describe()}>"


class BridgedPair:
    """Two embedded Mosquittos, ``b`` bridged to ``a``: for tests and lessons that put agents on one
    broker and requesters on the other. ``urls`` is ``(a.url, b.url)``; ``crash("a")`` kills one
    (SIGKILL), ``restart("a")`` brings it back on the same port; ``stop()`` stops both.
    """

    def __init__(self, timeout: float = 10.0, trees: Iterable[str] = BRIDGED_TREES):
        self.a = EmbeddedBroker().start()
        try:
            self.b = BridgedBroker(self.a.endpoint, trees=trees)
            self.b.start()
            if not self.b.wait_bridged(timeout):
                raise BrokerError(f"the bridge from {self.b.url} to {self.a.url} carried nothing within "
                                  f"{timeout:.0f} s; its log:\n{self.b.log_text()[-2000:]}")
        except BaseException:
            self.stop()
            raise

    @property
    def urls(self) -> tuple[str, str]:
        return self.a.url, self.b.url

    def broker(self, which: str) -> EmbeddedBroker:
        if which not in ("a", "b"):
            raise ValueError(f"which is 'a' (the remote broker) or 'b' (the bridged one), not {which!r}")
        return self.a if which == "a" else self.b

    def crash(self, which: str) -> None:
        self.broker(which).crash()

    def restart(self, which: str, timeout: float = 10.0) -> bool:
        """Start ``which`` again on its port; True once the bridge carries messages again."""
        self.broker(which).restart()
        return self.b.wait_bridged(timeout)

    def stop(self) -> None:
        for broker in (getattr(self, "b", None), self.a):
            if broker is not None:
                broker.stop()

    def __enter__(self) -> "BridgedPair":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<BridgedPair a={self.a.url} b={self.b.url} (b bridged to a)>"

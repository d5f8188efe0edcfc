"""Ask a live broker what of the profile works on it (``python -m a2a_nb check-broker [URL]``).

The CONNACK names the broker's limits (``capabilities.py``); what it really does with the profile's
traffic is found by trying it, with three short-lived clients under a throw-away unit
(``a2a-nb-check/{nonce}``) so no real agent or recording is confused:

1. **$a2a topics**: a QoS 1 publish on ``$a2a/v1/...`` is accepted (a broker that forbids ``$`` topics
   answers 144 and cannot carry the profile at all).
2. **discovery**: a retained card with its ``a2a-status`` user properties reaches a later subscriber,
   by its exact topic and by the unit's wildcard filter; then it is cleared (Profile: Discovery).
3. **request/reply**: Response Topic, Correlation Data, Content Type and user properties arrive intact,
   and the reply comes back on the Response Topic (Profile: Request/Reply Mapping).
4. **wills**: a client's Last Will on its card topic, with its user properties, is published when its
   connection drops (Profile: Presence and Liveness).
5. **pools**: ``$share`` on ``$`` topics, else the kit's slot claiming (Optional Shared Subscription Dispatch).
6. **binary mode**: a payload of raw bytes arrives whole; whether Payload Format Indicator 0 is forwarded
   (the kit recognises chunks by their user properties either way: Optional Native Binary Artifact Mode).

Core works when 1-4 do. Every wait is bounded (``timeout`` per step).

Given a list of brokers (``URL_A,URL_B``: bridged sites, or two nodes of a cluster), the publishing
clients sit on the first and the reading ones on the last, so each step checks that the traffic
crosses: the card, the request and its reply, the will, the bytes.
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Callable, Optional

from ..protocol import properties, topics
from ..protocol.packet import MqttMessage
from .broker import BrokerEndpoint
from .capabilities import BrokerCapabilities
from .session import Session, SessionError

CORE, OPTIONAL = "Core", "optional"
WORKS, FAILS, FALLBACK = "works", "does not work", "works (fallback)"


@dataclass(frozen=True)
class Finding:
    """One thing tried on the broker: what, whether the profile needs it, the verdict and why."""

    feature: str
    level: str
    verdict: str
    detail: str

    @property
    def works(self) -> bool:
        return self.verdict != FAILS


@dataclass(frozen=True)
class BrokerCheck:
    """What ``check_broker`` found: the CONNACK's capabilities and one finding per feature."""

    url: str
    capabilities: Optional[BrokerCapabilities]
    findings: tuple[Finding, ...]
    across: bool = False  # published on one broker, read on another

    @property
    def core_works(self) -> bool:
        return self.capabilities is not None and all(f.works for f in self.findings if f.level == CORE)

    def lines(self) -> list[str]:
        """The report as the command prints it."""
        out = [f"broker {self.url}"]
        if self.capabilities is not None:
            out.append("CONNACK says:")
            for name, value in self.capabilities.as_dict().items():
                shown = "not set" if value is None else "yes" if value is True else "no" if value is False else value
                out.append(f"  {name.replace('_', ' '):<22} {shown}")
            for gap in self.capabilities.profile_gaps():
                out.append(f"  ! {gap}")
        where = "across these brokers" if self.across else "on this broker"
        out.append(f"the profile {where}:")
        for f in self.findings:
            out.append(f"  {f.feature:<15} {f.verdict:<17} ({f.level}) {f.detail}")
        out.append(f"Core works {where}" if self.core_works else f"Core does NOT work {where}")
        return out


class _Inbox:
    """Messages of one topic filter, waited for with a bound."""

    def __init__(self) -> None:
        self.items: list[MqttMessage] = []
        self._cond = threading.Condition()

    def put(self, msg: MqttMessage) -> None:
        with self._cond:
            self.items.append(msg)
            self._cond.notify_all()

    def wait(self, pred: Callable[[MqttMessage], bool], timeout: float) -> Optional[MqttMessage]:
        with self._cond:
            found: list[MqttMessage] = []

            def seen() -> bool:
                found[:] = [m for m in self.items if pred(m)][:1]
                return bool(found)

            self._cond.wait_for(seen, timeout)
            return found[0] if found else None


def check_broker(endpoint: BrokerEndpoint, timeout: float = 3.0) -> BrokerCheck:
    """Try the profile's traffic on the broker at ``endpoint`` (raises ``ConnectFailed`` if it cannot be reached)."""
    org, unit = "a2a-nb-check", uuid.uuid4().hex[:10]
    sessions: list[Session] = []

    first, last = endpoint.brokers[0], endpoint.brokers[-1]

    def session(agent: str, broker: BrokerEndpoint) -> Session:
        s = Session(org, unit, agent, broker=broker, connect_timeout=timeout * 2)
        sessions.append(s)
        return s

    try:
        owner = session("card-owner", first)
        findings = [_dollar_topics(owner, org, unit, timeout)]
        if findings[0].works:
            watcher = session("watcher", last)
            findings += [_discovery(owner, watcher, org, unit, timeout),
                         _request_reply(owner, watcher, org, unit, timeout),
                         _wills(first, watcher, org, unit, timeout),
                         _pools(owner),
                         _binary(owner, watcher, org, unit, timeout)]
        across = first != last
        url = f"{first.url} -> {last.url} (published on the first, read on the last)" if across else first.url
        return BrokerCheck(url, owner.capabilities, tuple(findings), across)
    finally:
        for s in sessions:
            if not s.closed:
                s.close()


def _dollar_topics(s: Session, org: str, unit: str, timeout: float) -> Finding:
    topic = topics.event_topic(org, unit, s.agent)
    try:
        result = s.publish(MqttMessage(topic, b"{}", qos=1), timeout)
    except SessionError as exc:
        return Finding("$a2a topics", CORE, FAILS, str(exc))
    if not result.accepted:
        # a broker that forbids $ topics: the session's words say so (capabilities.NO_DOLLAR_TOPICS)
        return Finding("$a2a topics", CORE, FAILS, f"a QoS 1 publish on {topic} was refused: {result.reason} "
                       f"({result.reason_code})")
    return Finding("$a2a topics", CORE, WORKS, "QoS 1 publishes on $a2a/v1/... accepted")


def _discovery(owner: Session, watcher: Session, org: str, unit: str, timeout: float) -> Finding:
    topic = topics.discovery_topic(org, unit, owner.agent)
    card = MqttMessage(topic, b'{"name":"check"}', qos=1, retain=True, content_type="application/json",
                       user_properties=properties.presence_properties(properties.ONLINE, properties.SOURCE_AGENT))
    try:
        owner.publish(card, timeout)
        exact, listed = _Inbox(), _Inbox()  # one subscription at a time: the session hands a message to the first match
        watcher.subscribe(topic, handler=exact.put)
        got = exact.wait(lambda m: bool(m.payload), timeout)
        watcher.unsubscribe(topic)
        try:
            watcher.subscribe(topics.discovery_filter(org, unit), handler=listed.put)
            by_filter = listed.wait(lambda m: m.topic == topic and bool(m.payload), timeout) is not None
            watcher.unsubscribe(topics.discovery_filter(org, unit))
        except SessionError:  # Wildcard Subscription Available = 0
            by_filter = False
        owner.publish(MqttMessage(topic, b"", qos=1, retain=True), timeout)  # unregistered again
    except SessionError as exc:
        return Finding("discovery", CORE, FAILS, str(exc))
    if got is None:
        return Finding("discovery", CORE, FAILS, f"a retained card on {topic} did not reach a later subscriber "
                       f"within {timeout:g} s")
    if not got.retain or got.user_property(properties.STATUS) != properties.ONLINE:
        return Finding("discovery", CORE, FAILS, "the retained card arrived without its retain flag or its "
                       "a2a-status user property")
    if not by_filter:
        return Finding("discovery", CORE, WORKS, "retained card by its exact topic; NOT by the unit's wildcard "
                       "filter, so agents must be named (no listing)")
    return Finding("discovery", CORE, WORKS, "retained card with user properties, by topic and by wildcard filter")


def _request_reply(requester: Session, responder: Session, org: str, unit: str, timeout: float) -> Finding:
    request_topic = topics.request_topic(org, unit, responder.agent)
    reply_topic = topics.reply_topic(org, unit, requester.agent, "check")
    corr = uuid.uuid4().bytes
    sent = MqttMessage(request_topic, b'{"jsonrpc":"2.0"}', qos=1, response_topic=reply_topic, correlation_data=corr,
                       content_type="application/json", user_properties=(("a2a-check", "1"),))
    requests, replies = _Inbox(), _Inbox()

    def answer(m: MqttMessage) -> None:
        requests.put(m)
        if m.response_topic:
            responder.publish_then(MqttMessage(m.response_topic, b'{"ok":true}', qos=1,
                                               correlation_data=m.correlation_data), lambda r: None)

    try:
        responder.subscribe(request_topic, handler=answer)
        requester.subscribe(reply_topic, handler=replies.put)
        requester.publish(sent, timeout)
    except SessionError as exc:
        return Finding("request/reply", CORE, FAILS, str(exc))
    got = requests.wait(lambda m: True, timeout)
    if got is None:
        return Finding("request/reply", CORE, FAILS, f"the request did not arrive within {timeout:g} s")
    lost = [name for name, ok in (("Response Topic", got.response_topic == reply_topic),
                                   ("Correlation Data", got.correlation_data == corr),
                                   ("Content Type", got.content_type == "application/json"),
                                   ("user properties", got.user_property("a2a-check") == "1")) if not ok]
    if lost:
        return Finding("request/reply", CORE, FAILS, "the broker did not forward " + ", ".join(lost))
    if replies.wait(lambda m: m.correlation_data == corr, timeout) is None:
        return Finding("request/reply", CORE, FAILS, f"no reply on the Response Topic within {timeout:g} s")
    return Finding("request/reply", CORE, WORKS, "Response Topic, Correlation Data, Content Type and user "
                   "properties forwarded intact")


def _wills(endpoint: BrokerEndpoint, watcher: Session, org: str, unit: str, timeout: float) -> Finding:
    topic = topics.discovery_topic(org, unit, "will-check")
    will = MqttMessage(topic, b'{"name":"will-check"}', qos=1, retain=True,
                       user_properties=properties.presence_properties(properties.OFFLINE, properties.SOURCE_LWT))
    wills = _Inbox()
    try:
        watcher.subscribe(topic, handler=wills.put)
        dying = Session(org, unit, "will-check", broker=endpoint, will=will, connect_timeout=timeout * 2)
    except SessionError as exc:
        return Finding("wills", CORE, FAILS, str(exc))
    dying.kill_socket()
    got = wills.wait(lambda m: m.user_property(properties.STATUS_SOURCE) == properties.SOURCE_LWT, timeout * 2)
    try:
        watcher.publish(MqttMessage(topic, b"", qos=1, retain=True), timeout)
    except SessionError:
        pass
    if got is None:
        return Finding("wills", CORE, FAILS, f"a dropped client's Last Will did not arrive within {timeout * 2:g} s")
    return Finding("wills", CORE, WORKS, "Last Will with its user properties published when a client drops")


def _pools(s: Session) -> Finding:
    if not s.capabilities.shared_subscriptions:
        return Finding("pools", OPTIONAL, FALLBACK, "CONNACK: no shared subscriptions; the kit's pools use slot "
                       "claiming on the plain pool topic")
    probe = f"$a2a-nb-probe/{s.org}/{s.unit}/{s.agent}"
    if s.delivers_shared_dollar_topics(probe):
        return Finding("pools", OPTIONAL, WORKS, "$share/ subscriptions deliver $ topics: the broker dispatches")
    return Finding("pools", OPTIONAL, FALLBACK, "$share/ on $ topics stays silent; the kit's pools use slot "
                   "claiming on the plain pool topic")


def _binary(sender: Session, watcher: Session, org: str, unit: str, timeout: float) -> Finding:
    topic = topics.reply_topic(org, unit, watcher.agent, "binary")
    payload = bytes(range(256))
    got = _Inbox()
    try:
        watcher.subscribe(topic, handler=got.put)
        sender.publish(MqttMessage(topic, payload, qos=1, payload_format=0), timeout)
    except SessionError as exc:
        return Finding("binary mode", OPTIONAL, FAILS, str(exc))
    m = got.wait(lambda m: True, timeout)
    if m is None or m.payload != payload:
        return Finding("binary mode", OPTIONAL, FAILS, "256 raw bytes did not arrive whole")
    if m.payload_format != 0:
        return Finding("binary mode", OPTIONAL, WORKS, "raw bytes arrive whole; the broker drops Payload Format "
                       "Indicator 0 (the kit recognises chunks by their user properties)")
    return Finding("binary mode", OPTIONAL, WORKS, "raw bytes arrive whole with Payload Format Indicator 0")

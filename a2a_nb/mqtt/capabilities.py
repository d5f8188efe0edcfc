"""What a broker says it offers, read from its CONNACK, and what that means for the profile.

An MQTT v5 broker names its limits in the CONNACK properties (MQTT v5 §3.2.2.3): whether it keeps
retained messages, takes wildcard and shared subscriptions, the highest QoS it accepts, how many
QoS 1 messages a client may keep unacknowledged (Receive Maximum), the largest packet it takes and
how many topic aliases it allows. An absent property means the generous default of the MQTT
specification. The session reads them at every connect (``Session.capabilities``) and adapts or
refuses in one line instead of being disconnected by a broker that was never asked:

* no ``$share/...`` where Shared Subscription Available is 0 (pools fall back to slot claiming);
* no wildcard filter where Wildcard Subscription Available is 0;
* no retained publish where Retain Available is 0 (discovery needs retained cards);
* no QoS above Maximum QoS (the profile needs QoS 1: Profile, QoS Guidance);
* no more unacknowledged publishes than Receive Maximum, no packet above Maximum Packet Size.

Pure: nothing here touches a socket (``mqtt/broker_check.py`` asks a live broker).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

from ..protocol.packet import PROFILE_QOS

TOPIC_NAME_INVALID = 0x90
"""Reason code 144: a broker that forbids topics starting with ``$`` answers a will or a PUBLISH on
``$a2a/...`` with it (ejabberd does, at CONNECT already when the Last Will names such a topic)."""


NO_DOLLAR_TOPICS = (
    "this broker refuses topics starting with $ (reason code 144, Topic Name invalid), so it cannot carry "
    "the profile's $a2a/v1/... topics; use a broker that allows them (Mosquitto, EMQX, HiveMQ, VerneMQ), "
    "see docs/another-broker.md"
)


@dataclass(frozen=True)
class BrokerCapabilities:
    """The CONNACK's word on what the broker offers; the defaults are MQTT v5's for an absent property."""

    retain: bool = True
    wildcards: bool = True
    shared_subscriptions: bool = True
    subscription_ids: bool = True
    max_qos: int = 2
    receive_maximum: int = 65535
    max_packet_size: Optional[int] = None
    topic_alias_maximum: int = 0
    server_keep_alive: Optional[int] = None

    @classmethod
    def from_connack(cls, props: Mapping[str, Any]) -> "BrokerCapabilities":
        """From CONNACK properties by their paho names (``Properties.json()``: ``"RetainAvailable"``, ...)."""
        def flag(name: str) -> bool:
            return bool(props.get(name, 1))

        return cls(
            retain=flag("RetainAvailable"),
            wildcards=flag("WildcardSubscriptionAvailable"),
            shared_subscriptions=flag("SharedSubscriptionAvailable"),
            subscription_ids=flag("SubscriptionIdentifierAvailable"),
            max_qos=int(props.get("MaximumQoS", 2)),
            receive_maximum=int(props.get("ReceiveMaximum", 65535)),
            max_packet_size=int(props["MaximumPacketSize"]) if "MaximumPacketSize" in props else None,
            topic_alias_maximum=int(props.get("TopicAliasMaximum", 0)),
            server_keep_alive=int(props["ServerKeepAlive"]) if "ServerKeepAlive" in props else None,
        )

    def as_dict(self) -> dict:
        return asdict(self)

    # -- what the kit may do on this broker (one place per rule) --------------------------------------
    def refuse_subscription(self, filter_: str) -> Optional[str]:
        """Why ``filter_`` must not be sent to this broker, or None when it may be."""
        if filter_.startswith("$share/") and not self.shared_subscriptions:
            return ("the broker's CONNACK says Shared Subscription Available = 0: no $share/ subscriptions on "
                    "this broker (pools fall back to slot claiming)")
        levels = filter_.split("/")
        if ("+" in levels or "#" in levels) and not self.wildcards:
            return "the broker's CONNACK says Wildcard Subscription Available = 0: subscribe to exact topics only"
        return None

    def refuse_publish(self, topic: str, qos: int, retain: bool, size: Optional[int] = None) -> Optional[str]:
        """Why this publish must not be sent to this broker, or None. ``size``: the whole packet in bytes."""
        if retain and not self.retain:
            return (f"the broker's CONNACK says Retain Available = 0, so the retained message on {topic} would end "
                    "the connection: this broker cannot keep Agent Cards for discovery")
        if qos > self.max_qos:
            return (f"the broker's CONNACK says Maximum QoS = {self.max_qos}: the profile needs QoS {PROFILE_QOS} "
                    "on discovery, request and reply paths")
        if size is not None and self.max_packet_size is not None and size > self.max_packet_size:
            return (f"the message on {topic} is {size:,} bytes, over the broker's Maximum Packet Size of "
                    f"{self.max_packet_size:,} bytes (it would drop or refuse it)")
        return None

    def inflight_limit(self, wanted: int) -> int:
        """How many QoS 1 publishes to keep unacknowledged: ``wanted`` (0 = no limit) within the broker's
        Receive Maximum (MQTT v5 §3.3.4: a client must not send more)."""
        if self.receive_maximum >= 65535:
            return wanted
        return self.receive_maximum if wanted == 0 else min(wanted, self.receive_maximum)

    def profile_gaps(self) -> list[str]:
        """What of the profile this broker's CONNACK already rules out, one line each (empty: nothing)."""
        gaps = []
        if not self.retain:
            gaps.append("discovery: no retained messages, so no retained Agent Cards (Core)")
        if self.max_qos < PROFILE_QOS:
            gaps.append(f"QoS: Maximum QoS {self.max_qos}, the profile needs QoS {PROFILE_QOS} (Core)")
        if not self.wildcards:
            gaps.append("discovery: no wildcard subscriptions, so no listing of all cards of a unit")
        if not self.shared_subscriptions:
            gaps.append("pools: no shared subscriptions; the kit's pools use slot claiming instead")
        return gaps


def connect_refused_words(code: int, will_topic: Optional[str]) -> Optional[str]:
    """A CONNACK refusal the kit can explain better than its reason code (None: the code says it)."""
    if code == TOPIC_NAME_INVALID and will_topic and will_topic.startswith("$"):
        return f"its Last Will on {will_topic} was refused: {NO_DOLLAR_TOPICS}"
    return None


def publish_refused_words(code: int, topic: str) -> Optional[str]:
    """A PUBACK refusal the kit can explain better than its reason code (None: the code says it)."""
    if code == TOPIC_NAME_INVALID and topic.startswith("$"):
        return NO_DOLLAR_TOPICS
    return None

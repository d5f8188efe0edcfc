"""The MQTT entry of an Agent Card's ``supportedInterfaces``: writing it and finding it.

Profile: Discovery Interoperability 3 (a client chooses the MQTT entry of ``supportedInterfaces``),
Topic Model (the request topic it names). The profile does not fix a ``protocolBinding`` URI for
MQTT, so the kit writes ``MQTT_BINDING`` (the profile's published location, versioned) and also
recognises the informal spellings other implementations use (``"MQTT5+JSONRPC"``,
``"MQTTv5+JSONRPCv2"``): see ``is_mqtt_binding``. ``cards`` builds cards with ``mqtt_interface``;
``card_schema`` checks that a card has such an entry; a requester reads it with ``request_topic_of``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import unquote, urlsplit

from . import topics

MQTT_BINDING = "https://github.com/emqx/mqtt-for-ai/tree/main/a2a-over-mqtt/specification/0.1"
"""``protocolBinding`` URI of the A2A over MQTT profile v0.1 (where the profile is published)."""
PROTOCOL_VERSION = "1.0"
"""A2A protocol version this kit speaks (``AgentInterface.protocolVersion``)."""


def is_mqtt_binding(binding: object) -> bool:
    """True for ``MQTT_BINDING`` and the informal ``MQTT...`` binding names seen in the wild."""
    return isinstance(binding, str) and (
        binding == MQTT_BINDING or binding.upper().startswith("MQTT")
    )


def mqtt_interface(org: str, unit: str, agent: str, broker_url: Optional[str] = None) -> dict[str, Any]:
    """The ``supportedInterfaces`` entry for an agent's MQTT request topic.

    ``url`` is the request topic (``$a2a/v1/request/{org}/{unit}/{agent}``); with ``broker_url``
    (``mqtt://host:port``) it becomes ``mqtt://host:port/$a2a/v1/request/...``. The card is found on
    the broker it names, so the bare topic is the default.
    """
    topic = topics.request_topic(org, unit, agent)
    url = topic if broker_url is None else f"{broker_url.rstrip('/')}/{topic}"
    return {"url": url, "protocolBinding": MQTT_BINDING, "protocolVersion": PROTOCOL_VERSION}


def _topic_from_url(url: str) -> Optional[str]:
    if url.startswith(topics.PREFIX + "/"):
        return url
    parts = urlsplit(url)
    if parts.scheme.lower() in ("mqtt", "mqtts", "ws", "wss") and parts.path:
        path = unquote(parts.path.lstrip("/"))
        if path.startswith(topics.PREFIX + "/"):
            return path
    return None


def request_topic_of_url(url: object) -> Optional[str]:
    """The request (or pool) topic an MQTT interface ``url`` names (a bare topic or
    ``mqtt[s]://host:port/<topic>``), or None when it names none."""
    topic = _topic_from_url(url) if isinstance(url, str) else None
    if topic is None:
        return None
    try:
        info = topics.parse_topic(topic)
    except ValueError:
        return None
    if info is not None and info.kind in ("request", "pool") and info.shared_group is None:
        return topic
    return None


def request_topic_of(card: Mapping[str, Any]) -> Optional[str]:
    """The request (or pool) topic named by the card's first MQTT ``supportedInterfaces`` entry.

    Accepts a bare topic or ``mqtt[s]://host:port/<topic>`` as ``url``; returns None when no MQTT
    entry names a well-formed request topic (then use the discovery topic's ids).
    """
    if not isinstance(card, Mapping):
        return None
    for itf in card.get("supportedInterfaces") or []:
        if not isinstance(itf, Mapping) or not is_mqtt_binding(itf.get("protocolBinding")):
            continue
        topic = request_topic_of_url(itf.get("url"))
        if topic is not None:
            return topic
    return None

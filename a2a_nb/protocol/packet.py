"""One MQTT v5 PUBLISH as a plain value.

The sans-I/O core builds these, the session (the only paho module) sends them and hands received
ones back in the same shape, and the recorder writes them as JSON lines. Keeping a single value type
is what lets a notebook *show* a message before it is sent and replay exactly what crossed the
broker (profile: Request/Reply Mapping (MQTT v5), A2A User Property Naming).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from . import properties
from .properties import UserProperties

PROFILE_QOS = 1
"""Discovery, request and reply paths use QoS 1 (Profile: QoS Guidance): every message's default."""

LIVE_ONLY = 2
"""MQTT v5 Retain Handling 2 (§3.8.3.1): no retained messages at subscribe time. A request is never
retained business (Request/Reply Mapping): an agent reads its request topics with it, so a request
that anyone may publish retained is not answered again at every reconnect, and a retained message
on them that paho cannot read (``docs/paho-feff-bug.md``) cannot keep the agent off the broker."""


@dataclass(frozen=True)
class MqttMessage:
    """A PUBLISH with every MQTT v5 property this profile uses.

    ``user_properties`` keeps order and repeats, as MQTT does. ``payload_format`` is the Payload
    Format Indicator (1 = UTF-8 text, 0 = bytes, None = absent). ``received_at`` is a
    ``time.time()`` stamp set by the session on arrival (None for outgoing messages).
    """

    topic: str
    payload: bytes = b""
    qos: int = PROFILE_QOS
    retain: bool = False
    response_topic: Optional[str] = None
    correlation_data: Optional[bytes] = None
    user_properties: UserProperties = ()
    content_type: Optional[str] = None
    message_expiry: Optional[int] = None
    payload_format: Optional[int] = None
    received_at: Optional[float] = field(default=None, compare=False)

    def user_property(self, key: str) -> Optional[str]:
        """The last value of a user property (MQTT allows repeats; the most recent wins): ``properties.get``."""
        return properties.get(self.user_properties, key)

    def json(self) -> Any:
        """The payload parsed as JSON (raises ``ValueError`` when it is not)."""
        return json.loads(self.payload)

    def with_user_properties(self, *pairs: tuple[str, str]) -> "MqttMessage":
        return replace(self, user_properties=self.user_properties + tuple(pairs))


# Built once (json.dumps would build one per call). ``check_circular=False``: the C encoder then
# skips its bookkeeping of every container it enters (about a quarter of the time of a stream
# item's encoding); payloads are trees built by the protocol helpers or parsed JSON, never cyclic
# (a cycle would end in RecursionError instead of ValueError).
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def encode_json(obj: Any) -> bytes:
    """Compact UTF-8 JSON, the one encoding every A2A payload of the kit uses."""
    return _COMPACT.encode(obj).encode("utf-8")

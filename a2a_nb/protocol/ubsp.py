"""The rules of the untrusted-broker security profile ``ubsp-v1``, as pure functions (no crypto here).

Under ``ubsp-v1`` every request, reply and stream payload of an interaction is a JOSE JWE that only
the other side can open; the MQTT properties (topics, Correlation Data, the ``a2a-`` user
properties) stay readable, because the broker routes by them. What this module says:

* the user properties a protected request and a protected reply carry, and the checks a responder
  and a requester make on them (Profile: Optional Untrusted-Broker Security Profile 2-4, 8-11);
* the claims inside the protected content: who sent it (``iss``), to whom (``aud``), a unique
  ``jti`` and a short ``exp`` (item 12: replay protection), and a bounded :class:`ReplayCache`;
* in a reply or stream item, the request it answers (``req``: the request's ``jti``, Correlation
  Data and JSON-RPC id, inside the signed part): a sealed reply captured from one exchange cannot
  answer another (:func:`reply_binding`, :func:`binding_problem`);
* where an agent's public key metadata is found (items 5-7; Security Metadata and Trust 1): a
  responder's in its Agent Card, as the params of the extension :data:`EXTENSION_URI`
  (``{"jwksUri": ..., "jwks": ...}``); a requester, which has no card, publishes the same object
  retained on its own event topic (``a2a-event-type: key-metadata``) and clears it when it stops.

Whether key metadata can be *trusted* (a ``jwksUri`` on an allowed HTTPS host; an inline set only
when the operator says so) is :mod:`a2a_nb.ubsp.trust`; sealing and opening is :mod:`a2a_nb.ubsp.keys`.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Mapping, Optional

from . import properties, topics
from .bounded_json import loads_bounded
from .ids import validate_identifier
from .packet import MqttMessage, encode_json
from .properties import UserProperties

PROFILE = "ubsp-v1"
CONTENT_TYPE = "application/jose"  # JWE compact serialization (what the kit sends)
CONTENT_TYPES = frozenset({"application/jose", "application/jose+json"})  # item 4: either is accepted
EXTENSION_URI = "urn:a2a-nb:ext:ubsp-v1"
"""The Agent Card extension whose params hold the agent's key metadata (``jwksUri`` and/or ``jwks``)."""
KEY_EVENT = "key-metadata"
"""``a2a-event-type`` of a requester's retained key metadata on its event topic."""

TTL_S = 60.0
"""How long a protected payload is valid after it was sealed (``exp - iat``)."""
MAX_TTL_S = 300.0
"""A payload claiming a longer life is refused: the replay cache only has to remember this long."""
SKEW_S = 5.0
"""Clock difference tolerated between two agents."""
MAX_JTI = 128

OPENED_JTI = "a2a-nb-ubsp-request-jti"
"""Set by the responder on a request it opened (never on the wire: one that arrives with it loses it):
the request's ``jti``, which every reply to it is bound to."""

UBSP_PROPERTIES = frozenset({properties.SECURITY_PROFILE, properties.REQUESTER_AGENT_ID,
                             properties.RECIPIENT_AGENT_ID, properties.RECIPIENT_KID, OPENED_JTI})


def request_properties(requester: str, recipient: str, kid: Optional[str] = None) -> UserProperties:
    """The user properties of a protected request (Profile: Untrusted-Broker Security Profile 8, 10)."""
    props: tuple[tuple[str, str], ...] = ((properties.SECURITY_PROFILE, PROFILE),
                                          (properties.REQUESTER_AGENT_ID, requester),
                                          (properties.RECIPIENT_AGENT_ID, recipient))
    return props + (((properties.RECIPIENT_KID, kid),) if kid else ())


def response_properties(requester: str, responder: str) -> UserProperties:
    """The user properties of a protected reply or stream item (item 9)."""
    return ((properties.SECURITY_PROFILE, PROFILE), (properties.REQUESTER_AGENT_ID, requester),
            (properties.RESPONDER_AGENT_ID, responder))


def is_protected(msg: MqttMessage) -> bool:
    """Does the message say it is under a security profile (any value: an unknown one is refused)?"""
    return msg.user_property(properties.SECURITY_PROFILE) is not None


def _content_type_problem(msg: MqttMessage) -> Optional[str]:
    ctype = (msg.content_type or "").split(";")[0].strip().lower()
    if ctype not in CONTENT_TYPES:
        return f"Content Type {msg.content_type!r} is not a JOSE type (application/jose or application/jose+json)"
    return None


def request_problem(msg: MqttMessage, me: str) -> Optional[str]:
    """Why a protected request cannot be processed by agent ``me``, or None (items 3, 4, 8, 11; the
    caller answers ``transport_protocol_error``)."""
    profile = msg.user_property(properties.SECURITY_PROFILE)
    if profile != PROFILE:
        return f"security profile {profile!r} is not supported (this agent speaks {PROFILE})"
    requester = msg.user_property(properties.REQUESTER_AGENT_ID)
    if not requester or not _is_id(requester):
        return "a ubsp-v1 request must name its requester (a2a-requester-agent-id)"
    recipient = msg.user_property(properties.RECIPIENT_AGENT_ID)
    if recipient != me:
        return f"a2a-recipient-agent-id {recipient!r} is not this responder ({me})"
    return _content_type_problem(msg)


def response_problem(msg: MqttMessage, requester: str) -> Optional[str]:
    """Why a reply to a protected request is not a protected reply for ``requester``, or None (item 9)."""
    if msg.user_property(properties.SECURITY_PROFILE) != PROFILE:
        return "the reply is not protected (no a2a-security-profile: ubsp-v1)"
    if msg.user_property(properties.REQUESTER_AGENT_ID) != requester:
        return f"a2a-requester-agent-id is not {requester}"
    responder = msg.user_property(properties.RESPONDER_AGENT_ID)
    if not responder or not _is_id(responder):
        return "a protected reply must name its responder (a2a-responder-agent-id)"
    return _content_type_problem(msg)


def is_plaintext_refusal(reply: Any) -> bool:
    """May this plaintext reply answer a ubsp-v1 request? Only as a JSON-RPC error (``reply`` parsed):
    a responder that cannot open a request, or has no trusted key for the requester, can say why
    only in plaintext, and an error reveals no payload. Anything else must be sealed (item 3)."""
    return isinstance(reply, dict) and isinstance(reply.get("error"), dict) and "result" not in reply


def without_ubsp(props: UserProperties) -> UserProperties:
    """The user properties minus the profile's own, for the opened message handed to the kit."""
    return tuple((k, v) for k, v in props if k not in UBSP_PROPERTIES)


def _is_id(value: str) -> bool:
    try:
        validate_identifier(value, "agent_id")
        return True
    except ValueError:
        return False


# -- the claims in the protected content ---------------------------------------------------------------
def claims(sender: str, recipient: str, jti: str, now: Optional[float] = None, ttl: float = TTL_S) -> dict[str, Any]:
    """What a sender puts in the protected content beside the payload (item 12)."""
    now = time.time() if now is None else now
    return {"iss": sender, "aud": recipient, "jti": jti, "iat": round(now, 3), "exp": int(now + ttl) + 1}


def claims_problem(found: Mapping[str, Any], sender: str, recipient: str, now: float) -> Optional[str]:
    """Why the claims of an opened payload are not acceptable from ``sender`` to ``recipient`` at ``now``."""
    if found.get("iss") != sender:
        return f"sealed by {found.get('iss')!r}, not by {sender}"
    if found.get("aud") != recipient:
        return f"sealed for {found.get('aud')!r}, not for {recipient}"
    jti, iat, exp = found.get("jti"), found.get("iat"), found.get("exp")
    if not isinstance(jti, str) or not 0 < len(jti) <= MAX_JTI:
        return "no usable jti"
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (iat, exp)):
        return "iat and exp must be numbers"
    assert isinstance(iat, (int, float)) and isinstance(exp, (int, float))
    if exp < now - SKEW_S:
        return f"expired {now - exp:.0f} s ago"
    if iat > now + SKEW_S or exp - iat > MAX_TTL_S + 1:
        return "iat in the future or a lifetime above the profile's maximum"
    return None


BINDING_CLAIM = "req"
"""The claim of a reply or stream item naming the request it answers."""


def reply_binding(request_jti: Optional[str], correlation: Optional[bytes], request_id: Any) -> dict[str, Any]:
    """The claim a responder signs into every reply and stream item to one request: that request's
    ``jti``, Correlation Data (hex) and JSON-RPC id. The refusal of a request the responder could
    not open names its Correlation Data only (``request_jti`` and ``request_id`` None)."""
    return {BINDING_CLAIM: {"jti": request_jti, "cd": (correlation or b"").hex(), "id": request_id}}


def binding_problem(found: Mapping[str, Any], request_jti: str, correlation: Optional[bytes],
                    request_id: Any, is_error: bool = False) -> Optional[str]:
    """Why a reply's claims do not bind it to the request sealed with ``request_jti``, sent with
    ``correlation`` and JSON-RPC id ``request_id`` (None: they do). One line. A JSON-RPC error
    (``is_error``) bound by Correlation Data alone is accepted: the refusal of a request its
    responder could not open (it tells no more than a plaintext refusal, which is accepted too)."""
    bound = found.get(BINDING_CLAIM)
    if not isinstance(bound, dict):
        return "the sealed reply names no request it answers (no req claim): refused"
    want = reply_binding(request_jti, correlation, request_id)[BINDING_CLAIM]
    parts: tuple[tuple[str, str], ...] = (("jti", "request jti"), ("cd", "Correlation Data"), ("id", "JSON-RPC id"))
    if is_error and bound.get("jti") is None and bound.get("id") is None:
        parts = (("cd", "Correlation Data"),)
    for part, label in parts:
        if bound.get(part) != want[part]:
            return (f"the sealed reply answers another request ({label} {str(bound.get(part))[:40]!r}, "
                    f"not {str(want[part])[:40]!r}): refused as a replay")
    return None


class ReplayCache:
    """The ``jti`` values seen and not yet expired (item 12). Bounded: when ``max_entries`` unexpired
    ones are held, new payloads are refused (fail closed) instead of forgetting one that could then
    be replayed.

    ``not_before``: payloads issued (``iat``) before it are refused. An agent whose keys outlive its
    process (loaded, not made fresh) and whose memory of the ``jti`` values it saw did not survive
    the restart sets it to its start time: else a request captured before the restart could be
    replayed within its ``exp``. It compares the sender's clock with ours: a sender ``d`` seconds
    behind sees its requests of the agent's first ``d`` seconds refused; one ``d`` seconds ahead
    leaves a window of ``d`` seconds before the restart (a cache kept on disk,
    :class:`a2a_nb.ubsp.replays.KeptReplayCache`, has no such window)."""

    def __init__(self, max_entries: int = 100_000, not_before: Optional[float] = None):
        self.max_entries = max_entries
        self.not_before = not_before
        self._seen: "OrderedDict[str, float]" = OrderedDict()  # jti -> exp, oldest first

    def check(self, jti: str, exp: float, now: float, iat: Optional[float] = None) -> Optional[str]:
        """None the first time ``jti`` is seen (it is remembered until ``exp``), else why it is refused."""
        if self.not_before is not None and iat is not None and iat < self.not_before - 0.001:  # iat: in ms
            return (f"issued {self.not_before - iat:.1f} s before this agent started: refused as a possible "
                    "replay (its memory of earlier requests is gone); send it again")
        self._expire(now)
        if jti in self._seen:
            return f"replayed: jti {jti[:40]} was seen before"
        if len(self._seen) >= self.max_entries:
            return "replay cache full: refusing protected payloads until some expire"
        self._seen[jti] = exp
        self._remembered(jti, exp)
        return None

    def _expire(self, now: float) -> None:
        while self._seen:
            first, first_exp = next(iter(self._seen.items()))
            if first_exp + SKEW_S >= now:
                break
            del self._seen[first]

    def _remembered(self, jti: str, exp: float) -> None:
        """Hook: a new ``jti`` was accepted (a cache kept on disk writes it down)."""

    def __len__(self) -> int:
        return len(self._seen)


# -- key metadata: where an agent's public keys are found ---------------------------------------------
def card_extension(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The Agent Card extension declaring ``ubsp-v1`` with the agent's key metadata."""
    return {"uri": EXTENSION_URI, "description": "ubsp-v1: end-to-end JWE payloads; params hold the agent's "
            "public keys (jwksUri and/or an inline jwks)", "required": False, "params": dict(metadata)}


def card_key_metadata(card: Any) -> Optional[dict[str, Any]]:
    """The key metadata in a card's ``ubsp-v1`` extension, or None when the card does not offer it."""
    caps = card.get("capabilities") if isinstance(card, dict) else None
    exts = caps.get("extensions") if isinstance(caps, dict) else None
    for ext in exts if isinstance(exts, list) else ():
        if isinstance(ext, dict) and ext.get("uri") == EXTENSION_URI and isinstance(ext.get("params"), dict):
            return dict(ext["params"])
    return None


def key_metadata_message(org: str, unit: str, agent: str, metadata: Optional[Mapping[str, Any]]) -> MqttMessage:
    """A requester's retained key metadata on its event topic; ``None`` clears it (an empty retained)."""
    payload = b"" if metadata is None else encode_json({"agent": agent, **metadata})
    return MqttMessage(topics.event_topic(org, unit, agent), payload, qos=1, retain=True,
                       content_type="application/json" if payload else None,
                       user_properties=((properties.EVENT_TYPE, KEY_EVENT),))


MAX_METADATA_BYTES = 64 * 1024


def read_key_metadata(msg: MqttMessage) -> Optional[tuple[str, Optional[dict[str, Any]]]]:
    """``(agent, metadata)`` of a key metadata message (metadata None: cleared), else None."""
    info = topics.parse_topic(msg.topic)
    if (info is None or info.kind != "event" or info.agent is None
            or msg.user_property(properties.EVENT_TYPE) != KEY_EVENT):
        return None
    if not msg.payload:
        return info.agent, None
    if len(msg.payload) > MAX_METADATA_BYTES:
        return None
    try:
        data = loads_bounded(msg.payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("agent") != info.agent:
        return None
    return info.agent, {k: v for k, v in data.items() if k in ("jwksUri", "jwks")}

"""MQTT v5 User Properties defined by the A2A over MQTT profile.

Profile: A2A User Property Naming; Presence and Liveness; Optional Shared Subscription Dispatch 10;
Optional MQTT Native Binary Artifact Mode; OAuth 2.0 and OIDC over MQTT User Properties;
Optional Untrusted-Broker Security Profile.

User properties travel as ``((key, value), ...)`` tuples, the shape ``MqttMessage`` keeps.
"""
from __future__ import annotations

from typing import Iterable, Optional

UserProperties = tuple[tuple[str, str], ...]
"""User properties as ``MqttMessage`` keeps them: ``((key, value), ...)`` in order, repeats kept."""

STATUS = "a2a-status"
STATUS_SOURCE = "a2a-status-source"
RESPONDER_AGENT_ID = "a2a-responder-agent-id"
AUTHORIZATION = "a2a-authorization"
ARTIFACT_MODE = "a2a-artifact-mode"
EVENT_TYPE = "a2a-event-type"
TASK_ID = "a2a-task-id"
CONTEXT_ID = "a2a-context-id"
ARTIFACT_ID = "a2a-artifact-id"
CHUNK_SEQNO = "a2a-chunk-seqno"
LAST_CHUNK = "a2a-last-chunk"
SECURITY_PROFILE = "a2a-security-profile"
REQUESTER_AGENT_ID = "a2a-requester-agent-id"
RECIPIENT_AGENT_ID = "a2a-recipient-agent-id"
RECIPIENT_KID = "a2a-recipient-kid"

ONLINE = "online"
OFFLINE = "offline"
SOURCE_AGENT = "agent"
SOURCE_LWT = "lwt"
SOURCE_BROKER = "broker"
MODE_JSON = "json"
MODE_BINARY = "binary"
EVENT_ARTIFACT_UPDATE = "task-artifact-update"

PREFIX = "a2a-"
KNOWN = frozenset(
    {
        STATUS, STATUS_SOURCE, RESPONDER_AGENT_ID, AUTHORIZATION, ARTIFACT_MODE, EVENT_TYPE,
        TASK_ID, CONTEXT_ID, ARTIFACT_ID, CHUNK_SEQNO, LAST_CHUNK, SECURITY_PROFILE,
        REQUESTER_AGENT_ID, RECIPIENT_AGENT_ID, RECIPIENT_KID,
    }
)
"""Every user property name the profile defines."""

STATUSES = frozenset({ONLINE, OFFLINE})
SOURCES = frozenset({SOURCE_AGENT, SOURCE_LWT, SOURCE_BROKER})
REDACTED = "[redacted]"


def is_binding_property(key: str) -> bool:
    """True for keys with the binding's ``a2a-`` prefix (Profile: A2A User Property Naming 1-2)."""
    return isinstance(key, str) and key.startswith(PREFIX)


def is_authorization_key(key: str) -> bool:
    """True for ``a2a-authorization`` in any letter case: MQTT keys are case sensitive, but for a
    bearer token the kit errs on the safe side (Profile: OAuth 2.0 and OIDC over MQTT User
    Properties 6, Responder Behavior 8)."""
    return key.lower() == AUTHORIZATION


def redact(user_properties: Iterable[tuple[str, str]]) -> UserProperties:
    """The same pairs with every ``a2a-authorization`` value replaced by ``"[redacted]"``.

    Use before printing or recording: bearer tokens must never be shown or echoed
    (Profile: OAuth 2.0 and OIDC over MQTT User Properties 6).
    """
    return tuple((k, REDACTED if is_authorization_key(k) else v) for k, v in user_properties)


def without_authorization(user_properties: Iterable[tuple[str, str]]) -> UserProperties:
    """The pairs minus ``a2a-authorization``: responders never echo it (Responder Behavior 8)."""
    return tuple((k, v) for k, v in user_properties if not is_authorization_key(k))


def as_dict(user_properties: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The pairs as a dict; a repeated key keeps its last value (MQTT allows repeats; the most recent wins).

    The one reader of user properties: ``get``, ``MqttMessage.user_property`` and the traffic
    DataFrame and checks (which read recorded ``[key, value]`` lists) all use it.
    """
    return dict(user_properties)


def get(user_properties: Iterable[tuple[str, str]], key: str) -> Optional[str]:
    """The last value of ``key`` (MQTT allows repeats; the most recent wins), or None."""
    return as_dict(user_properties).get(key)


def presence_properties(status: str, source: str) -> UserProperties:
    """``a2a-status`` and ``a2a-status-source`` for a discovery (Agent Card) publication.

    ``status`` is ``online``/``offline``; ``source`` is ``agent``, ``lwt`` or ``broker``. A Last Will
    only ever reports ``offline``. Profile: Presence and Liveness, Optional Broker-Managed Status.
    """
    if status not in STATUSES:
        raise ValueError(
            f"a2a-status must be 'online' or 'offline', got {status!r} (Profile: Presence and Liveness)"
        )
    if source not in SOURCES:
        raise ValueError(
            f"a2a-status-source must be 'agent', 'lwt' or 'broker', got {source!r} "
            "(Profile: Presence and Liveness)"
        )
    if source == SOURCE_LWT and status != OFFLINE:
        raise ValueError(
            "a Last Will reports a disconnect: use presence_properties('offline', 'lwt') "
            "(Profile: Last Will and Testament (LWT) Configuration 1)"
        )
    return ((STATUS, status), (STATUS_SOURCE, source))


def bearer(token: str) -> tuple[str, str]:
    """The ``("a2a-authorization", "Bearer <token>")`` pair for a request.

    Profile: OAuth 2.0 and OIDC over MQTT User Properties 2 (send it over TLS only).
    """
    if not isinstance(token, str) or not token.strip():
        raise ValueError("bearer token must be a non-empty string")
    if token.lower().startswith("bearer "):
        raise ValueError("pass the bare access token; 'Bearer ' is added for you")
    return (AUTHORIZATION, f"Bearer {token}")


def parse_bearer(value: Optional[str]) -> str:
    """The token inside an ``a2a-authorization`` value ``"Bearer <token>"``; ValueError otherwise."""
    if value is None:
        raise ValueError("missing a2a-authorization user property (expected 'Bearer <token>')")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ValueError("a2a-authorization must look like 'Bearer <access_token>'")
    return token.strip()


def artifact_mode(value: Optional[str]) -> str:
    """The effective artifact mode for a requested ``a2a-artifact-mode`` value.

    Absent or unknown means ``json`` (Profile: Optional MQTT Native Binary Artifact Mode 6).
    """
    return MODE_BINARY if value == MODE_BINARY else MODE_JSON


def chunk_properties(
    task_id: str,
    artifact_id: str,
    seqno: int,
    last: bool,
    context_id: Optional[str] = None,
) -> UserProperties:
    """User properties of one native binary artifact chunk (Binary Artifact Mode 8-9).

    Values are strings: ``seqno`` as decimal, ``last`` as ``"true"``/``"false"``.
    """
    if not isinstance(seqno, int) or isinstance(seqno, bool) or seqno < 0:
        raise ValueError(f"a2a-chunk-seqno must be an int >= 0, got {seqno!r}")
    if not task_id or not artifact_id:
        raise ValueError("binary artifact chunks need both a task id and an artifact id")
    props: list[tuple[str, str]] = [
        (EVENT_TYPE, EVENT_ARTIFACT_UPDATE),
        (TASK_ID, task_id),
        (ARTIFACT_ID, artifact_id),
        (CHUNK_SEQNO, str(seqno)),
        (LAST_CHUNK, "true" if last else "false"),
    ]
    if context_id is not None:
        props.append((CONTEXT_ID, context_id))
    return tuple(props)


def is_binary_chunk(user_properties: Iterable[tuple[str, str]], payload_format: Optional[int]) -> bool:
    """Is this stream item a native binary artifact chunk (Binary Artifact Mode 5-9)?

    Recognised by the user properties every chunk carries (``a2a-event-type: task-artifact-update``
    with an ``a2a-chunk-seqno``), not by its Payload Format Indicator alone: responders set PFI 0 as the
    profile requires, but some brokers drop an explicit PFI 0 on the way, which would turn a chunk into a
    "payload is not valid UTF-8" JSON error. A PFI of 1 (UTF-8 text) still means JSON."""
    if payload_format == 1:
        return False
    found = dict(user_properties)
    return found.get(EVENT_TYPE) == EVENT_ARTIFACT_UPDATE and CHUNK_SEQNO in found


def responder_id(publisher: str, addressed: str, pooled: bool, announced: Optional[str] = None) -> UserProperties:
    """The ``a2a-responder-agent-id`` a reply or stream item carries, if any.

    Pooled replies always name their concrete responder (Profile: Optional Shared Subscription
    Dispatch 10). A reply from another agent than the one addressed is a handover (Optional Task
    Handover); once a reply path has been told who answers, every later change is told too.
    """
    if pooled or publisher != addressed or (announced is not None and announced != publisher):
        return ((RESPONDER_AGENT_ID, publisher),)
    return ()

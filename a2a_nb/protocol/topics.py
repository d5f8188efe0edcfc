"""Topic names and filters of the A2A over MQTT profile, and a parser for them.

Profile: Topic Model; Discovery Subscriber Behavior 1; Request/Reply Mapping 4;
Optional Shared Subscription Dispatch.

Every builder validates its identifiers (``InvalidIdentifier``), so a topic built here can never
gain or lose a level because of a stray ``/``, ``+`` or ``#``.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

from .ids import InvalidIdentifier, validate_identifier

PREFIX = "$a2a/v1"
ALL_A2A = "$a2a/#"
"""Everything of the profile. A plain ``#`` does not match topics that start with ``$``."""

SHARE_PREFIX = "$share/"
POOL_SEGMENT = "pool"
GROUP_ID_MAX = 64
"""Recommended maximum ``group_id`` length (Profile: Optional Shared Subscription Dispatch 9)."""

KINDS = ("discovery", "request", "reply", "event", "pool")
_GROUP_UNSAFE = re.compile(r"[^A-Za-z0-9._]")


def _ids(org: str, unit: str) -> None:
    validate_identifier(org, "org_id")
    validate_identifier(unit, "unit_id")


def discovery_topic(org: str, unit: str, agent: str) -> str:
    """``$a2a/v1/discovery/{org}/{unit}/{agent}``: the retained Agent Card (Profile: Discovery Topic)."""
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    return f"{PREFIX}/discovery/{org}/{unit}/{agent}"


def request_topic(org: str, unit: str, agent: str) -> str:
    """``$a2a/v1/request/{org}/{unit}/{agent}``: an agent's direct request topic.

    ``agent_id`` ``"pool"`` is refused: ``$a2a/v1/request/{org}/{unit}/pool/...`` is the pool
    namespace, so an agent named ``pool`` could not be told apart from it. Use ``pool_topic``.
    Profile: Direct Interaction Topics, Request/Reply Mapping 1.
    """
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    if agent == POOL_SEGMENT:
        raise InvalidIdentifier(
            "agent_id 'pool' is reserved on request topics: '$a2a/v1/request/{org}/{unit}/pool/...' "
            "is the shared pool namespace. Rename the agent, or use pool_topic(org, unit, pool_id) "
            "for pooled requests (Profile: Optional Pool Request Topic)"
        )
    return f"{PREFIX}/request/{org}/{unit}/{agent}"


def reply_topic(org: str, unit: str, agent: str, suffix: str) -> str:
    """``$a2a/v1/reply/{org}/{unit}/{agent}/{reply_suffix}`` for the requester ``agent``.

    Profile: Request/Reply Mapping 4, Client Session Requirements 4.
    """
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    validate_identifier(suffix, "reply_suffix")
    return f"{PREFIX}/reply/{org}/{unit}/{agent}/{suffix}"


def reply_namespace(org: str, unit: str) -> str:
    """``$a2a/v1/reply/{org}/{unit}/``: where the requesters of one org and unit get their replies.

    A responder publishes replies only below a namespace like this one (Profile: Request/Reply
    Mapping 4), never to a Response Topic that names a card, a request or an event topic.
    """
    _ids(org, unit)
    return f"{PREFIX}/reply/{org}/{unit}/"


def reply_filter(org: str, unit: str, agent: str) -> str:
    """``$a2a/v1/reply/{org}/{unit}/{agent}/+``: every reply topic of one requester."""
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    return f"{PREFIX}/reply/{org}/{unit}/{agent}/+"


def event_topic(org: str, unit: str, agent: str) -> str:
    """``$a2a/v1/event/{org}/{unit}/{agent}`` (Profile: Event Delivery)."""
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    return f"{PREFIX}/event/{org}/{unit}/{agent}"


def pool_topic(org: str, unit: str, pool: str) -> str:
    """``$a2a/v1/request/{org}/{unit}/pool/{pool}``: where requesters publish pooled requests.

    Requesters publish here, never to ``$share/...`` (Profile: Optional Shared Subscription
    Dispatch 2-3).
    """
    _ids(org, unit)
    validate_identifier(pool, "pool_id")
    return f"{PREFIX}/request/{org}/{unit}/{POOL_SEGMENT}/{pool}"


def sanitize_group_id(label: str) -> str:
    """Make a broker-safe ``group_id`` from any label: deterministic, ``[A-Za-z0-9._]``, <= 64 chars.

    Characters outside ``[A-Za-z0-9._]`` become ``_``. A result longer than 64 chars is cut to 55
    and gets ``_`` plus the first 8 hex chars of the SHA-256 of the original label, so two long
    labels that share a prefix still get different groups.
    Profile: Optional Shared Subscription Dispatch 6-9.
    """
    if not isinstance(label, str) or label == "":
        raise ValueError(f"group label must be a non-empty string, got {label!r}")
    safe = _GROUP_UNSAFE.sub("_", label)
    if len(safe) <= GROUP_ID_MAX:
        return safe
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    return f"{safe[: GROUP_ID_MAX - 9]}_{digest}"


def group_id(org: str, unit: str, pool: str) -> str:
    """The shared-subscription ``group_id`` every member of one pool uses.

    Base ``a2a.{org}.{unit}.{pool}``, sanitized and length-limited by ``sanitize_group_id``. Never
    random per instance: all members of a pool must compute the same value
    (Profile: Optional Shared Subscription Dispatch 5-9).
    """
    _ids(org, unit)
    validate_identifier(pool, "pool_id")
    return sanitize_group_id(f"a2a.{org}.{unit}.{pool}")


def shared_pool_subscription(org: str, unit: str, pool: str) -> str:
    """``$share/{group_id}/$a2a/v1/request/{org}/{unit}/pool/{pool}``: what pool members subscribe to.

    Profile: Optional Shared Subscription Dispatch 4.
    """
    return f"{SHARE_PREFIX}{group_id(org, unit, pool)}/{pool_topic(org, unit, pool)}"


def event_filter(org: str, unit: str) -> str:
    """``$a2a/v1/event/{org}/{unit}/+``: the event topics of every agent of a unit (Profile: Event Delivery 1)."""
    validate_identifier(org, "org_id")
    validate_identifier(unit, "unit_id")
    return f"{PREFIX}/event/{org}/{unit}/+"


def discovery_filter(org: str, unit: str = "+") -> str:
    """``$a2a/v1/discovery/{org}/{unit}/+``; ``unit`` may be ``"+"`` for every unit of the org.

    Profile: Discovery Subscriber Behavior 1.
    """
    validate_identifier(org, "org_id")
    if unit != "+":
        validate_identifier(unit, "unit_id")
    return f"{PREFIX}/discovery/{org}/{unit}/+"


@dataclass(frozen=True)
class TopicInfo:
    """What an A2A topic says: its kind and the identifiers in it.

    ``agent`` is the responder for ``request``, the requester for ``reply`` and the publisher for
    ``discovery``/``event``; ``pool`` is set only for ``pool``; ``shared_group`` only when the
    topic came with a ``$share/{group}/`` prefix.
    """

    kind: str
    org: str
    unit: str
    agent: Optional[str] = None
    pool: Optional[str] = None
    reply_suffix: Optional[str] = None
    shared_group: Optional[str] = None

    @property
    def topic(self) -> str:
        """The canonical topic again (without any ``$share/`` prefix)."""
        if self.kind == "pool":
            return pool_topic(self.org, self.unit, self.pool or "")
        if self.kind == "reply":
            return reply_topic(self.org, self.unit, self.agent or "", self.reply_suffix or "")
        builder = {"discovery": discovery_topic, "request": request_topic, "event": event_topic}
        return builder[self.kind](self.org, self.unit, self.agent or "")


def _split_share(topic: str) -> tuple[Optional[str], str]:
    if not topic.startswith(SHARE_PREFIX):
        return None, topic
    rest = topic[len(SHARE_PREFIX):]
    group, sep, inner = rest.partition("/")
    if not sep:
        return group, ""
    return group, inner


def is_a2a_topic(topic: str) -> bool:
    """True when ``topic`` (after an optional ``$share/{group}/``) is under ``$a2a/v1/``.

    Says nothing about whether it is well formed: ``parse_topic`` checks that.
    """
    if not isinstance(topic, str):
        return False
    return _split_share(topic)[1].startswith(PREFIX + "/")


def parse_topic(topic: str) -> Optional[TopicInfo]:
    """Parse a profile topic name (not a wildcard filter) into a ``TopicInfo``.

    Returns ``None`` for topics outside ``$a2a/v1/``; raises ``ValueError`` (``InvalidIdentifier``
    for bad ids) for a malformed ``$a2a/v1/...`` topic. Accepts a ``$share/{group_id}/`` prefix.
    Profile: Topic Model, Optional Shared Subscription Dispatch 4.
    """
    if not isinstance(topic, str):
        raise ValueError(f"topic must be a string, got {type(topic).__name__}")
    group, inner = _split_share(topic)
    if not inner.startswith(PREFIX + "/"):
        return None
    if group is not None:
        validate_identifier(group, "group_id")
    segs = inner.split("/")
    kind = segs[2]
    rest = segs[3:]
    expected = {"discovery": 3, "request": 3, "event": 3, "reply": 4}
    if kind not in expected:
        raise ValueError(
            f"topic {topic!r}: unknown kind {kind!r} after '$a2a/v1/'; expected one of "
            "'discovery', 'request', 'reply', 'event' (Profile: Topic Model)"
        )
    if kind == "request" and len(rest) == 4 and rest[2] == POOL_SEGMENT:
        org, unit, _, pool = rest
        _ids(org, unit)
        validate_identifier(pool, "pool_id")
        return TopicInfo("pool", org, unit, pool=pool, shared_group=group)
    if len(rest) != expected[kind]:
        shape = {
            "discovery": "$a2a/v1/discovery/{org_id}/{unit_id}/{agent_id}",
            "request": "$a2a/v1/request/{org_id}/{unit_id}/{agent_id} or "
            "$a2a/v1/request/{org_id}/{unit_id}/pool/{pool_id}",
            "event": "$a2a/v1/event/{org_id}/{unit_id}/{agent_id}",
            "reply": "$a2a/v1/reply/{org_id}/{unit_id}/{agent_id}/{reply_suffix}",
        }[kind]
        raise ValueError(
            f"topic {topic!r} has {len(rest)} level(s) after '$a2a/v1/{kind}/', expected "
            f"{shape} (Profile: Topic Model)"
        )
    org, unit, agent = rest[0], rest[1], rest[2]
    _ids(org, unit)
    validate_identifier(agent, "agent_id")
    if kind == "request" and agent == POOL_SEGMENT:
        raise ValueError(
            f"topic {topic!r}: a pool request topic needs a pool_id after 'pool/' "
            "(Profile: Optional Pool Request Topic)"
        )
    if kind == "reply":
        suffix = validate_identifier(rest[3], "reply_suffix")
        return TopicInfo("reply", org, unit, agent=agent, reply_suffix=suffix, shared_group=group)
    return TopicInfo(kind, org, unit, agent=agent, shared_group=group)

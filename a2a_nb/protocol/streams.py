"""Reading a reply stream: where it ends, and which items are duplicates.

Profile: Streaming Reply Mapping 5-7 (a terminal state, INPUT_REQUIRED or AUTH_REQUIRED ends the
stream for that Correlation Data; a ``message`` result ends it too), Error Handling and
Deduplication 1-2 (QoS 1 may deliver an item twice: de-duplicate by correlation and event identity).

A copy that QoS 1 delivers twice is the same PUBLISH again: same Correlation Data, same payload,
byte for byte. So an item is told from a copy by its payload. Only when an agent sends the very same
payload twice on one stream on purpose (the same text chunk appended twice) does the kit's runtime
number the repeat with the user property ``a2a-stream-seq`` (an ``a2a-`` property of this
implementation, Profile: A2A User Property Naming 2), so it is not taken for a copy. Numbering every
item would cost each one a user property, which paho writes and reads slowly.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from . import states

STREAM_SEQ = "a2a-stream-seq"


def event_state(result: dict[str, Any]) -> Optional[str]:
    """The task state an item carries (status update or task snapshot), else None (also when the
    item is malformed, e.g. a ``status`` that is not an object)."""
    body = result.get("statusUpdate") or result.get("task")
    status = body.get("status") if isinstance(body, dict) else None
    state = status.get("state") if isinstance(status, dict) else None
    return state if isinstance(state, str) else None


def ends_stream(result: dict[str, Any]) -> bool:
    """True for the item after which nothing more comes on this correlation."""
    if "message" in result:
        return True
    state = event_state(result)
    return state is not None and states.ends_stream(state)


def reply_ends_stream(reply: object) -> bool:
    """Is this JSON-RPC reply (parsed JSON) the last on its correlation? A JSON-RPC error, or a
    result that ``ends_stream`` (a Message, a terminal or interrupted state). Profile: Streaming
    Reply Mapping 5-7. Artifact updates and non-final states do not; v1.0 has no ``final`` flag."""
    if not isinstance(reply, dict):
        return False
    if "error" in reply:
        return True
    result = reply.get("result")
    return isinstance(result, dict) and ends_stream(result)


def item_key(result: dict[str, Any], seq: Optional[str] = None, payload: Optional[bytes] = None) -> Any:
    """What tells a stream item from a copy of it: its ``a2a-stream-seq`` when it has one, else its
    payload bytes (a digest of them), else, for a recording that kept only the parsed JSON, the
    result as canonical JSON."""
    if seq is not None:
        return ("seq", seq)
    if payload is not None:
        return ("payload", hashlib.blake2b(payload, digest_size=16).digest())
    return ("json", json.dumps(result, sort_keys=True))


@dataclass
class StreamDeduper:
    """The requester's half, per correlation: the items already delivered."""

    seen: set[Any] = field(default_factory=set)
    finished: bool = False
    duplicates: int = 0

    def accept(self, result: dict[str, Any], seq: Optional[str] = None, payload: Optional[bytes] = None) -> bool:
        """True when ``result`` is new and the stream has not ended; records it."""
        if self.finished:
            self.duplicates += 1
            return False
        k = item_key(result, seq, payload)
        if k in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(k)
        if ends_stream(result):
            self.finished = True
        return True


@dataclass
class StreamNumbering:
    """The responder's half, per reply path: ``seq_for`` gives an item its ``a2a-stream-seq`` (its
    position on the path, from 1) only when this path already carried the same payload. Keeps one
    hash per item sent, as the requester keeps one key per item received."""

    count: int = 0
    sent: set[int] = field(default_factory=set)

    def seq_for(self, payload: bytes) -> Optional[str]:
        self.count += 1
        h = hash(payload)  # equal payloads hash alike; a rare collision only numbers an item needlessly
        if h in self.sent:
            return str(self.count)
        self.sent.add(h)
        return None

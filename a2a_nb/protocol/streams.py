"""Reading a reply stream: where it ends, and which items are duplicates.

Profile: Streaming Reply Mapping 5-7 (a terminal state, INPUT_REQUIRED or AUTH_REQUIRED ends the
stream for that Correlation Data; a ``message`` result ends it too), Error Handling and
Deduplication 1-2 (QoS 1 may deliver an item twice: de-duplicate by correlation and event identity).

The kit's responders number each stream item with the user property ``a2a-stream-seq`` (an
``a2a-`` property of this implementation, Profile: A2A User Property Naming 2). Items from other
implementations are identified by their content: status by (state, timestamp), artifact chunks by
(artifactId, position in the artifact), task snapshots and messages by their bytes / messageId.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from . import states
from .messages import stream_kind

STREAM_SEQ = "a2a-stream-seq"


def event_state(result: dict[str, Any]) -> Optional[str]:
    """The task state an item carries (status update or task snapshot), else None."""
    body = result.get("statusUpdate") or result.get("task")
    state = body.get("status", {}).get("state") if isinstance(body, dict) else None
    return state if isinstance(state, str) else None


def ends_stream(result: dict[str, Any]) -> bool:
    """True for the item after which nothing more comes on this correlation."""
    if "message" in result:
        return True
    state = event_state(result)
    return state is not None and states.ends_stream(state)


@dataclass
class StreamDeduper:
    """Per-correlation memory of the items already delivered."""

    seen: set[Any] = field(default_factory=set)
    artifact_chunks: dict[str, Any] = field(default_factory=dict)
    finished: bool = False
    duplicates: int = 0

    def key(self, result: dict[str, Any], seq: Optional[str]) -> Any:
        if seq is not None:
            return ("seq", seq)
        kind = stream_kind(result)
        body = result[kind]
        if kind == "statusUpdate":
            st = body.get("status", {})
            return (kind, st.get("state"), st.get("timestamp"))
        if kind == "message":
            return (kind, body.get("messageId"))
        digest = hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return (kind, digest)

    def accept(self, result: dict[str, Any], seq: Optional[str] = None) -> bool:
        """True when ``result`` is new and the stream has not ended; records it."""
        if self.finished:
            self.duplicates += 1
            return False
        k = self.key(result, seq)
        if k in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(k)
        if ends_stream(result):
            self.finished = True
        return True

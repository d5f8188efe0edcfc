"""Pool dispatch without broker help: which member claims a pooled request.

Profile: Optional Shared Subscription Dispatch 4 and 13. Members MAY consume the pool through
``$share/{group_id}/...``; how members coordinate is implementation-specific. Some brokers (Eclipse
Mosquitto 2.0.11, the Debian 12 package) never deliver shared subscriptions on topics that start
with ``$``, so ``$share/g/$a2a/...`` stays silent. For those, every member subscribes to the plain
pool topic and exactly one claims each request: the member whose slot is a hash of the request's
Task.id (so a retry with new Correlation Data reaches the same member), else of its Correlation
Data. Requesters see no difference: they still publish to the non-shared pool topic.
"""
from __future__ import annotations

import hashlib
import json
from typing import Optional

from .messages import task_ids_of


def pool_key(payload: bytes, correlation: Optional[bytes]) -> str:
    """Task.id of a pooled request when it can be read, else its Correlation Data (hex)."""
    try:
        task_id = task_ids_of(json.loads(payload), {})[0]
    except (ValueError, AttributeError, TypeError):
        task_id = None
    if isinstance(task_id, str) and task_id:
        return task_id
    return (correlation or b"").hex()


def claim_slot(key: str, members: int) -> int:
    """The member slot (0..members-1) that handles ``key``; the same on every member."""
    if members < 1:
        raise ValueError("a pool has at least one member")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % members

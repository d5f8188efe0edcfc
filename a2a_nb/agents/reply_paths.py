"""Reply paths, and the messages the task runtime decides to send on them: plain values.

A reply path is where a request waits for its answers: the request's Response Topic and
Correlation Data (Profile: Request/Reply Mapping 3-7). A blocking request (SendMessage) waits for
one answer, a stream (SendStreamingMessage, SubscribeToTask) for every event of its task until the
one that ends the stream (Streaming Reply Mapping 5-7).

The runtime (:mod:`.runtime`) decides what goes out on which path and returns it as
:class:`Outgoing` values; the outbox (:mod:`.outbox`) publishes them. Both read these values, and
neither imports the other's module for them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

from ..protocol.packet import MqttMessage
from ..protocol.streams import StreamNumbering

BLOCKING, STREAM = "blocking", "stream"

Seal = Callable[[MqttMessage, str], Optional[MqttMessage]]
"""Turns a reply and its sender into the protected reply (``ubsp-v1``), or None when it cannot."""


@dataclass
class Listener:
    """A reply path waiting for a task: Response Topic + Correlation Data + the JSON-RPC id."""

    kind: str  # BLOCKING or STREAM
    response_topic: str
    correlation: bytes
    request_id: Any
    received_by: str  # the agent the request was addressed to
    pooled: bool = False
    artifact_mode: Optional[str] = None  # the chosen mode, when the request asked for one
    history_length: Optional[int] = None
    announced: Optional[str] = None  # last a2a-responder-agent-id sent on this path
    numbering: StreamNumbering = field(default_factory=StreamNumbering)  # a2a-stream-seq of repeats
    closed: bool = False  # the runtime decided this path's last item
    needs_snapshot: bool = False  # a new stream: the Task snapshot goes out just before its first event
    lost: bool = False  # set by the outbox: an item could not be published here, so nothing more goes out
    seal: Optional[Seal] = None  # ubsp-v1: every item is sealed to the requester before it is sent

    @property
    def open(self) -> bool:
        """Still waiting for items. A lost path is not: a stream must not go on with a hole in it;
        the requester's stall recovery (GetTask, SubscribeToTask) takes over."""
        return not (self.closed or self.lost)


class Outgoing(NamedTuple):
    """One MQTT message the runtime decided to send: ``sender`` is the agent whose connection
    publishes it (None: no live agent can, so it is dropped), ``path`` the reply path it continues,
    if any (when it cannot be published, the path is lost and gets no more items)."""

    sender: Optional[str]
    message: MqttMessage
    path: Optional[Listener] = None

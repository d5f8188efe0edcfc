"""A tap on a unit's request topics: a plain MQTT session that shows every request sent to any
agent of the unit, as the broker carried it (lessons 04 and 05 use it as their spy).

It only subscribes to ``$a2a/v1/request/{org}/{unit}/#`` (Direct Interaction Topics, Request/Reply
Mapping 1) and reads what arrives. A peer's bytes are untrusted: a payload that is not a JSON-RPC
request still gives a row (``method`` says what was wrong), and every text is escaped and cut.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session
from ..protocol import topics
from ..protocol.ids import readable_correlation
from ..protocol.bounded_json import loads_bounded
from ..protocol.packet import MqttMessage
from ..protocol.safe_text import safe_text

MAX_PAYLOAD = 1 << 20
"""Bytes of a request payload the tap parses (a larger one is shown as too large)."""


def correlation_text(data: Optional[bytes]) -> str:
    """Correlation Data as every view shows it (``ids.readable_correlation``), at most 80 characters;
    empty when there is none."""
    return readable_correlation(data, 80) if data else ""


def request_row(m: MqttMessage) -> dict[str, Any]:
    """One tapped request as a row: ``to`` (the agent, or ``pool:NAME``), ``topic``, ``method``,
    ``messageId``, ``Task.id``, ``contextId`` and ``Correlation Data`` (as ``correlation_text``)."""
    info = topics.parse_topic(m.topic)
    to = "" if info is None else (f"pool:{info.pool}" if info.pool else (info.agent or ""))
    row = {"to": safe_text(to, 60), "topic": safe_text(m.topic, 200), "method": "", "messageId": "",
           "Task.id": "", "contextId": "", "Correlation Data": correlation_text(m.correlation_data)}
    try:
        request = loads_bounded(m.payload, max_bytes=MAX_PAYLOAD)
    except ValueError as exc:
        return {**row, "method": f"(not a JSON-RPC request: {safe_text(exc, 60)})"}
    if not (isinstance(request, dict) and isinstance(request.get("method"), str)
            and isinstance(request.get("params"), dict)):
        return {**row, "method": "(not a JSON-RPC request: no method and params object)"}
    params: dict = request["params"]
    message = params["message"] if isinstance(params.get("message"), dict) else {}
    fields = {"method": request["method"], "messageId": message.get("messageId", ""),
              "Task.id": message.get("taskId") or params.get("id") or "",
              "contextId": message.get("contextId", "")}
    return {**row, **{key: safe_text(value, 80) for key, value in fields.items()}}


class RequestTap:
    """A session subscribed to every request topic of ``org``/``unit``; ``take()`` returns the
    requests seen since the last call, one ``request_row`` each."""

    def __init__(self, org: str = "acme", unit: str = "support", client_id: str = "tap",
                 broker: Union[str, BrokerEndpoint, None] = None):
        self.filter = f"$a2a/v1/request/{org}/{unit}/#"
        self.session = Session(org, unit, client_id, broker=broker)
        self.session.subscribe(self.filter)   # no handler: messages wait in the session's inbox
        self.listening = True

    @property
    def client_id(self) -> str:
        return self.session.client_id

    def take(self, wait: float = 0.2) -> list[dict[str, Any]]:
        """The requests that arrived since the last call; waits up to ``wait`` s for each next one."""
        rows = []
        while (m := self.session.receive(timeout=wait)) is not None:
            rows.append(request_row(m))
        return rows

    def stop_listening(self) -> None:
        """Unsubscribe (the session stays open: it can still publish)."""
        if self.listening:
            self.session.unsubscribe(self.filter)
            self.listening = False

    def close(self) -> None:
        self.session.close()

    def __repr__(self) -> str:
        return f"RequestTap({self.client_id} on {self.filter}{'' if self.listening else ', not listening'})"

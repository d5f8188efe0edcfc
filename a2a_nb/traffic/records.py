"""The recording format (JSON lines, v1): one record dict per MQTT PUBLISH, and how to read,
write and check it. See ``FORMAT.md`` beside this file for every key.

The recorder (``recorder.py``) writes records, the DataFrame (``frame.py``) and the checks
(``lint.py``) read them; this module is the one place that knows the format, so neither of them
needs the other.

One record (one line of a file, wrapped here)::

    {"v": 1,                      # format version
     "t": 1733150371.142,         # receive time, unix seconds (float)
     "topic": "$a2a/v1/request/acme/support/echo",
     "qos": 1, "retain": false,
     "response_topic": "$a2a/v1/reply/acme/support/coordinator/92026e5b7655cb6f",  # or null
     "correlation": "e2364a5e...",  # Correlation Data as lowercase hex, or null
     "user_properties": [["a2a-status", "online"], ...],  # in order, repeats kept;
                                  # a2a-authorization values are "[redacted]"
     "content_type": "application/json",  # or null
     "message_expiry": 30,        # Message Expiry Interval in seconds, or null
     "payload_format": 1,         # Payload Format Indicator (1 UTF-8, 0 bytes) or null
     "payload_json": {...},       # the payload parsed as JSON, or null
     "payload_b64": null,         # base64 of the payload when it is not JSON, else null
     "size": 231}                 # payload length in bytes

A payload is JSON when it decodes as UTF-8 JSON and its Payload Format Indicator is not 0 (native
binary artifact chunks stay bytes even when they happen to look like JSON). An empty payload (a
retained-card delete) has ``payload_b64 == ""``. ``payload_json`` is the parsed value, so
re-serialising it may differ from the original bytes in whitespace; ``size`` is the original.
"""
from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from ..protocol.packet import MqttMessage
from ..protocol.properties import redact

FORMAT_VERSION = 1
FIELDS = ("v", "t", "topic", "qos", "retain", "response_topic", "correlation", "user_properties",
          "content_type", "message_expiry", "payload_format", "payload_json", "payload_b64", "size")
"""Keys of every record, in the order they are written."""

DEFAULTS: dict[str, Any] = {"v": FORMAT_VERSION, "t": 0.0, "qos": 0, "retain": False, "response_topic": None,
                            "correlation": None, "user_properties": None, "content_type": None,
                            "message_expiry": None, "payload_format": None, "payload_json": None,
                            "payload_b64": None, "size": 0}
"""What a hand-made record may leave out (only ``topic`` is required)."""

PathLike = Union[str, os.PathLike]


# -- MqttMessage <-> record --------------------------------------------------------------------------

def to_record(msg: MqttMessage, t: Optional[float] = None) -> dict[str, Any]:
    """One ``MqttMessage`` as a v1 record dict (``a2a-authorization`` values redacted).

    ``t`` defaults to ``msg.received_at`` (else now).
    """
    payload = msg.payload
    data: Any = None
    b64: Optional[str] = None
    is_json = False
    if payload and msg.payload_format != 0:
        try:
            data = json.loads(payload)
            is_json = True
        except (ValueError, UnicodeDecodeError):
            is_json = False
    if not is_json:
        b64 = base64.b64encode(payload).decode("ascii")
    corr = msg.correlation_data
    return {
        "v": FORMAT_VERSION,
        "t": t if t is not None else (msg.received_at if msg.received_at is not None else time.time()),
        "topic": msg.topic,
        "qos": msg.qos,
        "retain": bool(msg.retain),
        "response_topic": msg.response_topic,
        "correlation": corr.hex() if corr is not None else None,
        "user_properties": [[k, v] for k, v in redact(msg.user_properties)],
        "content_type": msg.content_type,
        "message_expiry": msg.message_expiry,
        "payload_format": msg.payload_format,
        "payload_json": data,
        "payload_b64": b64,
        "size": len(payload),
    }


def from_record(rec: dict[str, Any]) -> MqttMessage:
    """Rebuild the ``MqttMessage`` of a record (for replaying or showing it).

    The payload is the base64 bytes when present, else compact JSON of ``payload_json``; a
    redacted token stays redacted.
    """
    if rec.get("payload_b64") is not None:
        payload = base64.b64decode(rec["payload_b64"])
    elif rec.get("payload_json") is not None or rec.get("size"):
        payload = json.dumps(rec.get("payload_json"), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    else:
        payload = b""
    corr = rec.get("correlation")
    return MqttMessage(
        topic=rec["topic"],
        payload=payload,
        qos=int(rec.get("qos", 1)),
        retain=bool(rec.get("retain", False)),
        response_topic=rec.get("response_topic"),
        correlation_data=bytes.fromhex(corr) if corr is not None else None,
        user_properties=tuple((str(k), str(v)) for k, v in rec.get("user_properties") or ()),
        content_type=rec.get("content_type"),
        message_expiry=rec.get("message_expiry"),
        payload_format=rec.get("payload_format"),
        received_at=rec.get("t"),
    )


# -- checking ----------------------------------------------------------------------------------------

def complete_record(k: int, rec: Any) -> dict[str, Any]:
    """Record number ``k`` with every key of ``FIELDS`` (``DEFAULTS`` fill the missing ones).

    Raises ``ValueError`` when it is not a dict with at least ``topic``: hand-made test traffic
    may be short, but never shapeless.
    """
    if not isinstance(rec, dict) or "topic" not in rec:
        raise ValueError(f"record {k} is not a recording record (a dict with at least 'topic'; see "
                         f"a2a_nb/traffic/FORMAT.md): {str(rec)[:120]}")
    return {**DEFAULTS, **rec}


def _checked_line(path: Path, n: int, line: str) -> dict[str, Any]:
    """Line ``n`` of a recording as a record; ``ValueError`` naming the line when it is not one."""
    try:
        rec = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"{path}:{n}: not a JSON line ({exc}); is this a recording made by "
                         "a2a_nb.traffic.Recorder?") from None
    if not isinstance(rec, dict) or rec.get("v") != FORMAT_VERSION:
        got = (f"\"v\": {rec['v']!r}" if "v" in rec else "an object without \"v\"") \
            if isinstance(rec, dict) else f"a JSON {type(rec).__name__}"
        raise ValueError(f"{path}:{n}: expected a recording record with \"v\": {FORMAT_VERSION} "
                         f"(see a2a_nb/traffic/FORMAT.md), got {got}")
    return rec


# -- files -------------------------------------------------------------------------------------------

def record_line(rec: dict[str, Any]) -> str:
    """A record as one compact JSON line (without the newline)."""
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def read_records(path: PathLike) -> list[dict[str, Any]]:
    """Read a recording (JSON lines, format v1) into a list of record dicts.

    Blank lines are skipped. A line that is not JSON, or a record of another format version,
    raises ``ValueError`` naming the line, so a truncated or foreign file is never half-read.
    A missing last newline (a recording cut short) is fine.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no recording at {p}: record one with `python -m a2a_nb record --out {p}` "
                                "or `with Recorder(path=...)`")
    if p.is_dir():
        raise IsADirectoryError(f"{p} is a folder, not a recording: give the .jsonl file inside it")
    try:
        with p.open("r", encoding="utf-8") as fh:
            return [_checked_line(p, n, line) for n, line in enumerate(fh, 1) if line.strip()]
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not text (a recording is UTF-8 JSON lines, see "
                         "a2a_nb/traffic/FORMAT.md); is this a recording made by a2a_nb.traffic.Recorder?") from None


def write_records(records: Iterable[dict[str, Any]], path: PathLike) -> int:
    """Write record dicts as a v1 recording (one JSON line each); returns how many."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(record_line(rec))
            fh.write("\n")
            n += 1
    return n

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

A recording holds a peer's bytes, so reading one is bounded and checked line by line: a line
longer than ``MAX_LINE_BYTES`` (16 MiB), not UTF-8, not JSON, nested deeper than
``MAX_RECORD_DEPTH`` or with a field of the wrong type is refused with ``ValueError`` naming the file
and the line (``FILE line 7: qos must be 0, 1 or 2, got 'one'``). The recorder writes within the
same bounds: a payload nested deeper than ``bounded_json.MAX_DEPTH`` (64) is kept in base64, and a
record whose line would be longer than ``MAX_LINE_BYTES`` leaves its payload (then its user
properties) out, naming them in ``omitted``.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional, Union

from ..protocol.bounded_json import MAX_DEPTH, loads_bounded
from ..protocol.packet import MqttMessage
from ..protocol.properties import redact
from ..protocol.safe_text import quoted

FORMAT_VERSION = 1
FIELDS = ("v", "t", "topic", "qos", "retain", "response_topic", "correlation", "user_properties",
          "content_type", "message_expiry", "payload_format", "payload_json", "payload_b64", "size")
"""Keys of every record, in the order they are written."""

DEFAULTS: dict[str, Any] = {"v": FORMAT_VERSION, "t": 0.0, "qos": 0, "retain": False, "response_topic": None,
                            "correlation": None, "user_properties": None, "content_type": None,
                            "message_expiry": None, "payload_format": None, "payload_json": None,
                            "payload_b64": None, "size": 0}
"""What a hand-made record may leave out (only ``topic`` is required)."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line of a recording, in bytes (16 MiB): readers refuse longer ones, the recorder never
writes one (it leaves the payload out instead: ``omitted``). A recorded A2A message takes 1-6 kB."""
MAX_RECORD_DEPTH = MAX_DEPTH + 1
"""Deepest nesting of a record line: the record object around a payload of ``MAX_DEPTH`` levels."""

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
            data = loads_bounded(payload)  # deeper than MAX_DEPTH, NaN, 1e400: kept as bytes
            is_json = True
        except ValueError:
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

    The payload is the base64 bytes when present, else compact JSON of ``payload_json`` (empty
    when the record ``omitted`` it); a redacted token stays redacted. ``ValueError`` when the
    record's Correlation Data is not hex or its ``payload_b64`` not base64.
    """
    if rec.get("payload_b64") is not None:
        payload = base64.b64decode(rec["payload_b64"])
    elif rec.get("payload_json") is not None or (rec.get("size") and not rec.get("omitted")):
        payload = json.dumps(rec.get("payload_json"), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    else:
        payload = b""
    corr = rec.get("correlation")
    try:
        correlation = bytes.fromhex(corr) if corr is not None else None
    except (TypeError, ValueError):
        raise ValueError(f"correlation {quoted(corr)} is not hex text (FORMAT.md: Correlation Data as "
                         "lowercase hex)") from None
    return MqttMessage(
        topic=rec["topic"],
        payload=payload,
        qos=int(rec.get("qos", 1)),
        retain=bool(rec.get("retain", False)),
        response_topic=rec.get("response_topic"),
        correlation_data=correlation,
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


def _is_int(value: Any) -> bool:
    return type(value) is int  # not bool, which Python counts as an int


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _is_pairs(value: Any) -> bool:
    return isinstance(value, list) and all(
        type(p) is list and len(p) == 2 and type(p[0]) is str and type(p[1]) is str for p in value)


def _is_base64(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_FIELD_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("topic", lambda v: type(v) is str, "a string"),
    ("t", _is_number, "a number (Unix seconds)"),
    ("qos", lambda v: _is_int(v) and 0 <= v <= 2, "0, 1 or 2"),
    ("retain", lambda v: type(v) is bool, "true or false"),
    ("size", lambda v: _is_int(v) and v >= 0, "a whole number of bytes"),
    ("response_topic", _optional(lambda v: type(v) is str), "a string or null"),
    ("correlation", _optional(lambda v: type(v) is str), "a string (hex) or null"),
    ("content_type", _optional(lambda v: type(v) is str), "a string or null"),
    ("message_expiry", _optional(lambda v: _is_int(v) and v >= 0), "a whole number of seconds or null"),
    ("payload_format", _optional(lambda v: _is_int(v) and v in (0, 1)), "0, 1 or null"),
    ("user_properties", _optional(_is_pairs), "a list of [key, value] string pairs or null"),
    ("payload_b64", _optional(_is_base64), "base64 text or null"),
    ("omitted", lambda v: isinstance(v, list) and all(type(x) is str for x in v), "a list of field names"),
)
"""Each field a record may hold, what its value must be (FORMAT.md), and how to say so."""


def record_problem(rec: Any) -> Optional[str]:
    """What makes ``rec`` no v1 record (one line: ``qos must be 0, 1 or 2, got 'one'``), or None.

    A record is an object with ``"v": 1`` and a string ``topic``; the other keys may be left out
    (``DEFAULTS``) but, when present, hold the type FORMAT.md gives them. Unknown keys are allowed.
    """
    if not isinstance(rec, dict):
        return f"expected a recording record with \"v\": {FORMAT_VERSION} (see a2a_nb/traffic/FORMAT.md), " \
               f"got a JSON {type(rec).__name__}"
    if not (_is_int(rec.get("v")) and rec["v"] == FORMAT_VERSION):
        got = f"\"v\": {quoted(rec['v'])}" if "v" in rec else "an object without \"v\""
        return f"expected a recording record with \"v\": {FORMAT_VERSION} (see a2a_nb/traffic/FORMAT.md), got {got}"
    if "topic" not in rec:
        return "a record needs its \"topic\" (see a2a_nb/traffic/FORMAT.md)"
    for key, ok, what in _FIELD_RULES:
        if key in rec and not ok(rec[key]):
            return f"{key} must be {what}, got {quoted(rec[key])}"
    return None


def _checked_line(path: Path, n: int, raw: bytes) -> Optional[dict[str, Any]]:
    """Line ``n`` of a recording as a record (None for a blank line); ``ValueError`` naming the
    file and the line when it is not one."""
    where = f"{path} line {n}"
    if len(raw) > MAX_LINE_BYTES:
        raise ValueError(f"{where}: longer than {MAX_LINE_BYTES:,} bytes (MAX_LINE_BYTES; the recorder never "
                         "writes such a line): is this a recording made by a2a_nb.traffic.Recorder?")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not text (a recording is UTF-8 JSON lines, see a2a_nb/traffic/FORMAT.md; "
                         f"{exc.reason} at byte {exc.start + 1} of the line); is this a recording made by "
                         "a2a_nb.traffic.Recorder?") from None
    if not line.strip():
        return None
    try:
        rec = loads_bounded(line, max_depth=MAX_RECORD_DEPTH)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}; is this a recording made by a2a_nb.traffic.Recorder?") from None
    problem = record_problem(rec)
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    return rec


def _lines(fh: BinaryIO) -> Iterator[bytes]:
    """The lines of a file, each read with a bound: one longer than ``MAX_LINE_BYTES`` comes back
    one byte too long (and is refused) instead of being read whole into memory."""
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        yield raw[:-1] if raw.endswith(b"\n") else raw


# -- files -------------------------------------------------------------------------------------------

def record_line(rec: dict[str, Any]) -> str:
    """A record as one compact JSON line (without the newline)."""
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def bounded_record(rec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``rec`` and its line, within ``MAX_LINE_BYTES``: a record whose line would be longer leaves
    out its payload (``payload_json``, ``payload_b64``: null) and, if still too long, its user
    properties (``[]``), and names them in ``omitted``; ``size`` still says how long the payload was."""
    line = record_line(rec)
    for left_out in (("payload",), ("payload", "user_properties")):
        if len(line) * 4 <= MAX_LINE_BYTES or len(line.encode("utf-8")) <= MAX_LINE_BYTES:
            return rec, line
        rec = {**rec, "payload_json": None, "payload_b64": None, "omitted": list(left_out)}
        if "user_properties" in left_out:
            rec["user_properties"] = []
        line = record_line(rec)
    return rec, line


def existing_recording(path: Union[str, os.PathLike]) -> Path:
    """``path`` as a Path when a file is there; else ``FileNotFoundError`` / ``IsADirectoryError`` saying
    what to do (``lint`` asks this before it loads pandas)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no recording at {p}: record one with `python -m a2a_nb record --out {p}` "
                                "or `with Recorder(path=...)`")
    if p.is_dir():
        raise IsADirectoryError(f"{p} is a folder, not a recording: give the .jsonl file inside it")
    return p


def read_records(path: PathLike) -> list[dict[str, Any]]:
    """Read a recording (JSON lines, format v1) into a list of record dicts.

    Blank lines are skipped. A line that is no record (longer than ``MAX_LINE_BYTES``, not
    UTF-8, not JSON, nested too deeply, a field of the wrong type, another format version)
    raises ``ValueError`` naming the file and the line, so a truncated or foreign file is never
    half-read. A missing last newline (a recording cut short) is fine.
    """
    p = existing_recording(path)
    with p.open("rb") as fh:
        return [rec for n, raw in enumerate(_lines(fh), 1) if (rec := _checked_line(p, n, raw)) is not None]


def is_recording(path: PathLike) -> bool:
    """Is ``path`` a recording, by its first line that is not blank (read within ``MAX_LINE_BYTES``)?
    For tools that may replace a recording but nothing else (``record --out``)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            for n, raw in enumerate(_lines(fh), 1):
                if _checked_line(p, n, raw) is not None:
                    return True
    except (OSError, ValueError):
        return False
    return False


def write_records(records: Iterable[dict[str, Any]], path: PathLike) -> int:
    """Write record dicts as a v1 recording (one JSON line each); returns how many."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(record_line(rec))
            fh.write("\n")
            n += 1
    return n

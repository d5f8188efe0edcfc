"""Record every A2A message that crosses the broker, one JSON line per MQTT PUBLISH.

The recorder is an ordinary MQTT v5 client (Client ID ``{org}/{unit}/recorder-<random>``,
Profile: Client Session Requirements 3) that subscribes to ``$a2a/#`` (a plain ``#`` does not
match topics that start with ``$``) with QoS 2, so each message is kept at the QoS it was
published with, and with *Retain As Published*, so the retain flag of live publications survives
(retained Agent Cards, Profile: Discovery Topic). pandas, the charts and the conformance checks
all read what it writes: what a learner sees is exactly what crossed the broker.

What it records is one record dict per message, in the format of ``records.py`` (JSON lines
v1, see ``FORMAT.md`` beside this file), within its bounds: a payload nested deeper than 64 levels
is kept as base64, and a message whose line would pass ``records.MAX_LINE_BYTES`` (16 MiB) is kept
without its payload (``omitted``), so every recording it writes can be read back.

Threading: paho's network thread only appends the received message to a deque (no parsing, no
I/O), so a burst never makes the broker queue overflow; a writer thread turns messages into
records and writes them through a buffered file, flushed by ``flush()``, ``wait_idle()`` and
``stop()``.
"""
from __future__ import annotations

import collections
import contextlib
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional, TextIO, Union

from ..mqtt.broker import ENV_CREDENTIALS, BrokerEndpoint
from ..mqtt.session import Session, Subscription
from ..protocol.packet import MqttMessage
from ..protocol.topics import ALL_A2A
from .records import PathLike, bounded_record, to_record


class Recorder:
    """Record all ``$a2a/...`` traffic of a broker, in memory and (with ``path``) to a JSONL file.

    ``with Recorder(path="run.jsonl") as rec: ...`` records while the block runs; outside a
    ``with`` call ``start()`` and ``stop()``. ``rec.records`` is the list of record dicts so far
    (see the module docstring for the format); ``rec.wait_idle(0.3)`` waits until the traffic has
    been quiet for 0.3 s, the simple way to know a conversation is over.

    ``org_filter`` narrows what is recorded (for example ``"$a2a/v1/+/acme/#"``); it must start
    with ``$a2a/`` because a filter starting with a wildcard does not match ``$`` topics.
    """

    def __init__(
        self,
        broker: Union[str, BrokerEndpoint, None] = None,
        path: Optional[PathLike] = None,
        org_filter: str = ALL_A2A,
        *,
        org: str = "acme",
        unit: str = "support",
        agent: Optional[str] = None,
        keep: bool = True,
        out: Optional[TextIO] = None,
    ):
        if not isinstance(org_filter, str) or not org_filter.startswith("$a2a/"):
            raise ValueError(
                f"org_filter {org_filter!r} must start with '$a2a/' (for example '$a2a/#'): MQTT "
                "wildcards at the first level never match topics that start with '$'")
        self.broker = broker
        self.path = Path(path) if path is not None else None
        self.filter = org_filter
        self.org, self.unit = org, unit
        # on the secure broker (a credentials file in the environment) only `recorder` may read everything
        self.agent = agent or ("recorder" if os.environ.get(ENV_CREDENTIALS) else f"recorder-{secrets.token_hex(3)}")
        self.keep = keep
        self.session: Optional[Session] = None
        self.count = 0
        self.started_at: Optional[float] = None
        self.stopped_at: Optional[float] = None
        self.last_at: Optional[float] = None
        self._records: list[dict[str, Any]] = []
        self._pending: "collections.deque[MqttMessage]" = collections.deque()
        self._lock = threading.RLock()  # converts pending messages; guards records and file
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._writer: Optional[threading.Thread] = None
        self._fh: Optional[TextIO] = None
        self._out = out
        """A text stream of the caller's (``record --out -``: stdout) written instead of ``path``, flushed
        after every batch and never closed."""

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "Recorder":
        """Connect, subscribe to the filter (SUBACK awaited) and start recording; idempotent."""
        if self.session is not None and not self.session.closed:
            return self
        if self._out is not None:
            self._fh = self._out
        elif self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a" if self.count else "w", encoding="utf-8", buffering=1 << 20)
        self._stop.clear()
        self._writer = threading.Thread(target=self._write_loop, name=f"{self.agent}-writer", daemon=True)
        self._writer.start()
        try:
            self.session = Session(self.org, self.unit, self.agent, broker=self.broker)
            self.session.subscribe(Subscription(self.filter, qos=2, retain_as_published=True),
                                   handler=self._on_message)
        except Exception:
            self._shutdown_writer()
            raise
        self.started_at = time.time()
        self.stopped_at = None
        return self

    def stop(self) -> "Recorder":
        """Disconnect, convert what is still pending and flush the file; idempotent."""
        if self.session is not None and not self.session.closed:
            self.session.close()
        self._shutdown_writer()
        if self.started_at is not None and self.stopped_at is None:
            self.stopped_at = time.time()
        return self

    def _shutdown_writer(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._writer is not None:
            self._writer.join(timeout=30)
            self._writer = None
        self._drain()
        with self._lock:
            if self._fh is not None:
                self._fh.flush()
                if self._fh is not self._out:
                    self._fh.close()
                self._fh = None

    @property
    def running(self) -> bool:
        return self.session is not None and not self.session.closed

    @contextlib.contextmanager
    def paused(self) -> Iterator["Recorder"]:
        """``with rec.paused(): ...``: the recorder stops listening for the block (UNSUBACK awaited,
        so the broker already counts it out when the block starts) and listens again after it
        (SUBACK awaited; retained messages are not sent again). Nothing published meanwhile is
        recorded. While paused it is no subscriber: a QoS 1 publish that nobody else listens to gets
        PUBACK 16 (No matching subscribers) instead of 0."""
        session = self.session
        if session is None or session.closed:
            yield self
            return
        session.unsubscribe(self.filter)
        try:
            yield self
        finally:
            if not session.closed:
                session.subscribe(Subscription(self.filter, qos=2, retain_as_published=True, retain_handling=2),
                                  handler=self._on_message)

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- intake (paho's network thread: append only) ---------------------------------------------------
    def _on_message(self, msg: MqttMessage) -> None:
        self._pending.append(msg)  # deque.append is atomic
        self.last_at = msg.received_at
        if len(self._pending) == 1:
            self._wake.set()

    # -- writer thread -----------------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(0.2)
            self._wake.clear()
            self._drain()

    def _drain(self) -> int:
        """Turn pending messages into records (and file lines); returns how many."""
        n = 0
        with self._lock:
            pending = self._pending
            fh = self._fh
            while pending:
                try:
                    msg = pending.popleft()
                except IndexError:
                    break
                rec, line = bounded_record(to_record(msg))
                if self.keep:
                    self._records.append(rec)
                if fh is not None:
                    fh.write(line)
                    fh.write("\n")
                n += 1
            if n and fh is not None and fh is self._out:
                fh.flush()  # a pipe's reader sees each batch as it comes
            self.count += n
        return n

    def flush(self) -> int:
        """Convert everything received so far and flush the file; returns the record count."""
        self._drain()
        with self._lock:
            if self._fh is not None:
                self._fh.flush()
            return self.count

    # -- reading -----------------------------------------------------------------------------------------
    @property
    def records(self) -> list[dict[str, Any]]:
        """The records so far (a copy; everything received up to now is included)."""
        self._drain()
        with self._lock:
            return list(self._records)

    def __len__(self) -> int:
        self._drain()
        return self.count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records)

    def clear(self) -> None:
        """Forget the in-memory records (the file keeps them)."""
        self._drain()
        with self._lock:
            self._records.clear()

    def wait_idle(self, seconds: float = 0.3, timeout: float = 30.0) -> int:
        """Return once no message has arrived for ``seconds`` (or after ``timeout``); flushes.

        Returns the number of records. Use it after a conversation instead of a fixed sleep.
        """
        deadline = time.monotonic() + timeout
        while True:
            seen = self._seen()
            quiet_until = time.monotonic() + seconds
            while time.monotonic() < quiet_until:
                time.sleep(min(0.02, seconds))
                if self._seen() != seen:
                    break
            else:
                return self.flush()
            if time.monotonic() >= deadline:
                return self.flush()

    def _seen(self) -> int:
        s = self.session
        return s.received if s is not None else self.count

    def wait_for(self, n: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``n`` messages were received; True if they were."""
        deadline = time.monotonic() + timeout
        while self._seen() < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        self.flush()
        return True

    def frame(self):
        """The records as a pandas DataFrame (``load_traffic(self)``).

        The only link between the recorder and the DataFrame, one way and imported on use: the
        frame reads records (``records.py``), never the recorder, so the two import no loop.
        """
        from .frame import load_traffic

        return load_traffic(self)

    def __repr__(self) -> str:
        state = "recording" if self.running else "stopped"
        where = f" -> {self.path}" if self.path else ""
        return f"<Recorder {self.org}/{self.unit}/{self.agent} {self.filter} {state}, {len(self)} messages{where}>"

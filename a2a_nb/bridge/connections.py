"""The bridge's TCP connections: a cap on how many are open, a deadline for each request to arrive,
and refusals logged once per interval.

A web page, or any local process, can open connections and never finish a request (slowloris):
each one holds a file descriptor. Without a bound, 1,100 of them at a limit of 1,024 files locked
the bridge out (every descriptor taken), and asyncio's retries of the failing ``accept()`` kept
45 % of a core busy logging "Too many open files", 72,000 lines in 4 s. So:

* **at most ``max_connections`` open** (default 64, well under the usual 1,024 files; the 16 unary
  requests and 8 streams of ``app.BridgeApp`` fit with room for idle keep-alive clients). When all
  are taken, a new connection pushes out the oldest one that has not sent a whole request yet;
  only when every open connection is busy with a real request is the new one answered ``503`` and
  closed at once. A flood of idle connections therefore costs the legitimate client nothing but a
  reconnect, and the bridge never runs out of descriptors;
* **a request must arrive in full within ``request_timeout_s``** (default 10 s; head and body),
  counted from the connection's start or, on a kept-alive connection, from the request's first
  byte (between requests uvicorn's keep-alive timeout of 5 s closes an idle connection);
* **a listen backlog of 64**: asyncio accepts up to that many connections in one turn of its loop
  before the cap sees any of them, and closes the ones pushed out a turn later, so a burst briefly
  holds more than the cap (measured: at most 191 descriptors during 300 or 1,100 idle connections,
  73 once settled). A limit of 1,024 files leaves room to spare; at a low one (256) a burst may
  touch it, which costs one log line and a second's pause in accepting, never a flood;
* **refusals are logged once per interval** (``RefusalLog``, 10 s): the first one at once, the rest
  as one line with their count, never one line per connection.

``gated_protocol`` builds the uvicorn HTTP protocol (h11) that applies the cap and the deadline. It
overrides only ``asyncio.Protocol``'s own methods and reads the request's progress from h11's
public state (``their_state``) on uvicorn's ``conn``.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections import OrderedDict
from typing import Any, Callable, Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64
REQUEST_TIMEOUT_S = 10.0
LOG_INTERVAL_S = 10.0
LISTEN_BACKLOG = 64


def _plain_response(status: str, text: str, *headers: str) -> bytes:
    """A whole HTTP/1.1 response written straight to a socket uvicorn never saw (then closed)."""
    body = text.encode()
    head = [f"HTTP/1.1 {status}", "Content-Type: text/plain; charset=utf-8", *headers, "Connection: close",
            f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


BUSY = _plain_response("503 Service Unavailable", "the bridge has all its connections busy; retry in 1 s\n",
                       "Retry-After: 1")


class RefusalLog:
    """Warnings about refused connections and requests, at most one line per kind per ``interval_s``.

    ``note(kind, detail)`` logs the first refusal of a kind at once; later ones within the interval
    are counted and said in one line when it ends (``KIND: 1234 more in the last 10 s (last:
    DETAIL)``). Runs on the server's event loop (the flush is a ``call_later`` of that loop)."""

    def __init__(self, interval_s: float = LOG_INTERVAL_S, logger: logging.Logger = log):
        self.interval_s, self.logger = interval_s, logger
        self._last: dict[str, float] = {}  # kind -> when its last line was written
        self._held: dict[str, tuple[int, str]] = {}  # kind -> (refusals not written yet, last detail)

    def note(self, kind: str, detail: str = "") -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is None or (now - last >= self.interval_s and kind not in self._held):
            self._last[kind] = now
            self.logger.warning("%s%s", kind, f" ({detail})" if detail else "")
            return
        count, _ = self._held.get(kind, (0, ""))
        if count == 0:
            asyncio.get_running_loop().call_later(max(0.0, last + self.interval_s - now), self._flush, kind)
        self._held[kind] = (count + 1, detail)

    def _flush(self, kind: str) -> None:
        count, detail = self._held.pop(kind, (0, ""))
        if count:
            self._last[kind] = time.monotonic()
            self.logger.warning("%s: %d more in the last %g s%s", kind, count, self.interval_s,
                                f" (last: {detail})" if detail else "")

    def loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The event loop's exception handler: a failing ``accept()`` for want of descriptors
        (asyncio logs it once per pending connection, thousands of times a second) becomes one line
        per interval; anything else goes to asyncio's default handler."""
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            self.note("cannot accept a connection: no file descriptors left", str(exc))
            return
        loop.default_exception_handler(context)


class ConnectionGate:
    """Which connections are open and which of them still wait for a whole request (oldest first)."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS, request_timeout_s: float = REQUEST_TIMEOUT_S,
                 refusals: Optional[RefusalLog] = None, count: Optional[Callable[[str], None]] = None):
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        if not request_timeout_s > 0:
            raise ValueError(f"request_timeout_s must be a positive number of seconds, got {request_timeout_s}")
        self.max_connections, self.request_timeout_s = max_connections, request_timeout_s
        self.refusals = refusals or RefusalLog()
        self.count = count or (lambda _name: None)  # tells the bridge's stats: refused, evicted, timed_out
        self.open: set[asyncio.Protocol] = set()
        # the open connections without a whole request yet, oldest first, with their transports
        self.waiting: "OrderedDict[asyncio.Protocol, asyncio.BaseTransport]" = OrderedDict()

    def admit(self, conn: asyncio.Protocol) -> bool:
        """Room for ``conn``? At the cap, the oldest connection still waiting for its request is
        closed to make room; with none waiting, ``conn`` is refused."""
        if len(self.open) >= self.max_connections:
            if not self.waiting:
                self.count("connections_refused")
                self.refusals.note(f"refused a connection: all {self.max_connections} open connections are busy "
                                   "with requests (HTTP 503)")
                return False
            oldest, transport = self.waiting.popitem(last=False)
            self.open.discard(oldest)
            transport.close()  # its connection_lost follows on the loop's next turn
            self.count("connections_evicted")
            self.refusals.note(f"closed a connection without a whole request to make room for a new one "
                               f"(at most {self.max_connections} open)")
        self.open.add(conn)
        return True

    def forget(self, conn: asyncio.Protocol) -> None:
        self.open.discard(conn)
        self.waiting.pop(conn, None)


def gated_protocol(gate: ConnectionGate) -> type[H11Protocol]:
    """uvicorn's h11 protocol with ``gate``'s cap and request deadline (``uvicorn.Config(http=...)``)."""

    class GatedH11Protocol(H11Protocol):
        _refused = False
        _deadline: Optional[asyncio.TimerHandle] = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if not gate.admit(self):
                self._refused = True
                transport.write(BUSY)
                transport.close()
                return
            super().connection_made(transport)
            self._await_request()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._await_request()  # a head or body under way: its deadline runs (not restarted by more bytes)
            else:
                self._request_arrived()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            gate.forget(self)
            self._request_arrived()
            if not self._refused:
                super().connection_lost(exc)

        def _await_request(self) -> None:
            if self._deadline is None and not self.transport.is_closing():
                self._deadline = asyncio.get_running_loop().call_later(gate.request_timeout_s, self._timed_out)
                gate.waiting[self] = self.transport

        def _request_arrived(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            gate.waiting.pop(self, None)

        def _timed_out(self) -> None:
            self._deadline = None
            gate.waiting.pop(self, None)
            gate.count("requests_timed_out")
            gate.refusals.note(f"closed a connection that sent no whole request within {gate.request_timeout_s:g} s")
            self.transport.close()

    return GatedH11Protocol

"""The session's network thread: paho's network loop, run by the kit through paho's public
external-loop API (``socket()``, ``loop_read()``, ``loop_write()``, ``loop_misc()``, ``want_write()``,
``on_socket_register_write``, ``reconnect()``), the way event-loop wrappers of paho (aiomqtt) run it.
It drives the client ``session.py`` gives it and imports nothing of paho itself.

Why not ``loop_start()``: paho's own loop reads one packet per turn and hands every message over at
once, so a reader thread blocked on a reply stream is woken once per item, and every wake-up makes
that thread and paho's network thread take turns at Python's GIL around each of the ~8 system calls
paho makes per message (measured: about half of a stream's cost, see ``python -m benchmarks``).
This loop reads while messages keep coming (up to ``burst`` of them), then hands the whole burst
over: a waiting reader wakes once per burst, not once per message. A thread that publishes while
the network thread waits in ``select`` writes its packet itself, instead of waking that thread to
do it. Every paho call on the connection is made holding ``paho_lock``, so paho never reads or
writes on two threads at once.

Profile: Client Session Requirements (reconnect with backoff; the session renews its
subscriptions from ``on_connect``).
"""
from __future__ import annotations

import logging
import select
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import paho.mqtt.client as mqtt

log = logging.getLogger(__name__)

Deliver = Callable[[list[Any]], None]  # paho MQTTMessages


class NetworkLoop:
    """Runs one paho ``Client``'s network I/O on a thread of its own until ``stop()``.

    ``deliver`` gets each burst of delivered ``MQTTMessage``s, in arrival order, on this thread.
    After a lost connection it calls ``reconnect`` (default: paho's ``reconnect()``; the session's
    picks the broker of a list, ``failover.py``) after ``min_delay`` s, doubling up to ``max_delay`` s
    until ``connected()`` is called (the session calls it on a successful CONNACK). ``reconnect`` runs
    on this thread holding ``paho_lock``.
    """

    def __init__(self, client: "mqtt.Client", deliver: Deliver, name: str, *, min_delay: float = 0.05,
                 max_delay: float = 2.0, burst: int = 100, reconnect: Callable[[], Any] | None = None):
        self.client, self.deliver, self.burst = client, deliver, burst
        self.reconnect = reconnect or client.reconnect
        self.min_delay, self.max_delay = min_delay, max_delay
        self._delay = min_delay
        self.bursts = 0  # hand-overs so far: fewer than the messages whenever they came in runs
        self.read_until = time.monotonic()
        """Every message that reached the socket before this (``time.monotonic()``) was handed over: a
        thread that judges another client silent (a pool member waiting for a claim) reads no further
        in time than this, so a busy network thread cannot make a client look silent."""
        self._arrived: list["mqtt.MQTTMessage"] = []
        self._stopping = threading.Event()
        self.paho_lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        client.on_message = self._arrive
        client.on_socket_register_write = self._wake_for_write

    # -- the caller's side -------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def connected(self) -> None:
        """A CONNACK accepted us: the next lost connection starts again from the shortest delay."""
        self._delay = self.min_delay

    def stop_reconnecting(self) -> None:
        """No new connection from now on: the thread ends with the connection it has."""
        self._stopping.set()

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread once what paho still has to write (a DISCONNECT) is written; called on the
        thread itself (a handler closing its own session), it ends after the handler returns."""
        self.stop_reconnecting()
        self.wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def is_current(self) -> bool:
        """Is the caller this loop's thread (a message handler)?"""
        return threading.current_thread() is self._thread

    def wake(self) -> None:
        """Make the thread leave ``select`` now (a byte on its own socket pair)."""
        try:
            self._wake_w.send(b"w")
        except (BlockingIOError, OSError):  # already woken, or stopped
            pass

    # -- paho's callbacks --------------------------------------------------------------------------
    def _arrive(self, client, userdata, message: "mqtt.MQTTMessage") -> None:
        self._arrived.append(message)  # handed over with the rest of its burst

    def _wake_for_write(self, client, userdata, sock) -> None:
        """paho has something to write. This thread writes it after what it is doing; another
        thread writes it at once when paho is free, else wakes this thread. It never waits for
        the lock: paho calls this holding locks of its own, which this thread may need."""
        if threading.current_thread() is self._thread:
            return
        if not self.paho_lock.acquire(blocking=False):
            self.wake()
            return
        try:
            rc = client.loop_write()
        finally:
            self.paho_lock.release()
        if rc or client.want_write():  # a lost connection or a full socket: this thread takes over
            self.wake()

    # -- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._turns()
        finally:
            self._wake_r.close()
            self._wake_w.close()

    def _turns(self) -> None:
        c = self.client
        while True:
            sock = c.socket()
            if sock is None:
                if self._stopping.is_set():
                    return
                self._reconnect()
                continue
            pending = getattr(sock, "pending", None)  # TLS: bytes already decrypted wait in the socket
            timeout = 0.0 if pending is not None and pending() else 1.0
            turn = time.monotonic()
            try:
                readable = select.select([sock, self._wake_r], [sock] if c.want_write() else [], [], timeout)[0]
            except (OSError, ValueError):  # the socket was closed under us (kill_socket, a disconnect)
                readable = []
            if self._wake_r in readable:
                self._drain_wake()
            # paho's loop_* methods return 0 (MQTT_ERR_SUCCESS), or an error code after which paho has
            # closed the socket and called on_disconnect: the next turn reconnects
            if sock in readable or timeout == 0.0:
                rc, drained = self._read_burst()
                if drained:
                    self.read_until = turn
                if rc:
                    continue
            else:
                self.read_until = turn  # nothing arrived since this turn began
            with self.paho_lock:
                if c.want_write() and c.loop_write():
                    continue
                if self._stopping.is_set() and not c.want_write():
                    return
                c.loop_misc()  # keepalive: PINGREQ when due, a lost connection when PINGRESP is late

    def _read_burst(self) -> tuple[int, bool]:
        """Read messages while they keep coming, then hand them over together; paho's return code,
        and whether the socket ran dry (not only ``burst`` messages read)."""
        rc, drained = 0, False
        with self.paho_lock:
            for _ in range(self.burst):
                before = len(self._arrived)
                rc = self.client.loop_read()
                if rc or len(self._arrived) == before:
                    drained = not rc
                    break  # nothing more to read now (or another packet type: select tells if more wait)
            burst, self._arrived = self._arrived, []
        if burst:  # handlers run without the lock: they publish, and other threads may write meanwhile
            self.bursts += 1
            try:
                self.deliver(burst)
            except Exception:  # a delivery bug must never end the network thread
                log.exception("delivering %d message(s) failed", len(burst))
        return rc, drained

    def _drain_wake(self) -> None:
        try:
            self._wake_r.recv(4096)  # one byte per wake; one read takes them all
        except (BlockingIOError, OSError):
            pass

    def _reconnect(self) -> None:
        """Wait, then open a new connection (paho's ``reconnect()`` sends CONNECT again)."""
        if self._stopping.wait(self._delay):
            return
        self._delay = min(self._delay * 2, self.max_delay)
        try:
            with self.paho_lock:
                self.reconnect()
        except (OSError, ValueError) as exc:  # broker still away: try again after the next delay
            log.debug("reconnect failed: %s", exc)

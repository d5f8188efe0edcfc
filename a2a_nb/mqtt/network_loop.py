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

**What a broker can make this thread hold** (the broker is a peer like any other: a fake one on a
port, or a real one that misbehaves). paho reads each packet whole into memory before the kit sees it,
so the loop bounds what paho reads, with paho's public API and the socket's:

* the first packet of every connection must be a CONNACK of at most :data:`FIRST_PACKET_MAX` bytes:
  on a plain TCP socket its fixed header is read with ``MSG_PEEK`` *before* paho reads anything, and
  anything else (an HTTP answer, garbage, a Remaining Length of 256 MB) ends the connection as "not
  an MQTT broker" (through TLS, which cannot be peeked, the byte count below and the packet order do);
* a packet of any kind before the CONNACK is refused the same way;
* after the CONNACK, no packet may be larger than ``max_packet`` (the Maximum Packet Size the session
  sends in CONNECT, MQTT v5 §3.1.2.11.4): on Linux the loop counts the bytes read from the connection
  (``TCP_INFO`` bytes received minus ``FIONREAD`` unread) since the last packet paho completed, and
  disconnects (reason 0x95 Packet too large) when one packet has taken more. It looks after each
  hand-over, so a packet may get up to two reads of paho (100 socket reads each, at most the socket's
  receive buffer, which the session caps) past the bound before the connection ends. On other
  systems only the Maximum Packet Size asks the broker to keep within it;
* a hand-over holds at most ``burst`` messages and about ``burst_bytes`` of payload.

Profile: Client Session Requirements (reconnect with backoff; the session renews its
subscriptions from ``on_connect``).
"""
from __future__ import annotations

import logging
import select
import socket
import ssl
import struct
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    import paho.mqtt.client as mqtt

log = logging.getLogger(__name__)

Deliver = Callable[[list[Any]], None]  # paho MQTTMessages
Refuse = Callable[[str, bool], None]  # (words, the packet was too large): end this connection

CONNACK = 0x20
FIRST_PACKET_MAX = 64 * 1024
"""The largest first packet (a CONNACK: a few bytes, its properties a few hundred) taken from a broker."""
FIRST_PACKET_WAIT_S = 10.0
"""How long a connection may take to show a whole CONNACK fixed header once it sent a byte."""
SLACK = 64 * 1024
"""Bytes counted beyond a packet's bound before the connection ends (TLS records, buffered plaintext)."""
BURST_BYTES = 8 * 1024 * 1024
"""A hand-over stops taking messages once their payloads reach this many bytes."""
_LINUX_TCP_INFO = sys.platform.startswith("linux") and hasattr(socket, "TCP_INFO")
_TCPI_BYTES_RECEIVED = 128  # struct tcp_info (Linux 4.1+): __u64 tcpi_bytes_received


def bytes_read(sock: Any) -> Optional[int]:
    """How many bytes the program has read from TCP connection ``sock`` so far (received minus still
    unread); None where the system cannot say (not Linux, not TCP, closed)."""
    if not _LINUX_TCP_INFO:
        return None
    try:
        import fcntl
        import termios

        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCPI_BYTES_RECEIVED + 8)
        if len(info) < _TCPI_BYTES_RECEIVED + 8:
            return None
        received = struct.unpack_from("Q", info, _TCPI_BYTES_RECEIVED)[0]
        unread = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        return received - unread
    except (OSError, ValueError, AttributeError):
        return None


def first_packet_verdict(head: bytes, limit: int = FIRST_PACKET_MAX) -> Optional[str]:
    """What the first bytes a broker sent say: None for the start of a CONNACK within ``limit`` bytes,
    ``""`` when too few bytes arrived to tell, else why this is not an MQTT broker (in words)."""
    if not head:
        return ""
    if head[0] != CONNACK:
        return f"not an MQTT broker: it answered CONNECT with {shown(head)}, not a CONNACK"
    length, mult = 0, 1
    for i, byte in enumerate(head[1:5]):
        length += (byte & 127) * mult
        mult *= 128
        if not byte & 128:
            break
        if i == 3:
            return f"not an MQTT broker: it answered CONNECT with {shown(head)} (no valid packet length)"
    else:
        return ""  # the length goes on in bytes not arrived yet
    if length > limit:
        return (f"not an MQTT broker: its answer to CONNECT announced {length:,} bytes (a CONNACK takes a few; "
                f"at most {limit:,} are read)")
    return None


def shown(head: bytes) -> str:
    """A broker's first bytes, as a Python bytes literal (escaped: never a control character on a terminal)."""
    return repr(bytes(head[:16]))


class NetworkLoop:
    """Runs one paho ``Client``'s network I/O on a thread of its own until ``stop()``.

    ``deliver`` gets each burst of delivered ``MQTTMessage``s, in arrival order, on this thread.
    After a lost connection it calls ``reconnect`` (default: paho's ``reconnect()``; the session's
    picks the broker of a list, ``failover.py``) after ``min_delay`` s, doubling up to ``max_delay`` s
    (counted from the start of the previous attempt) until ``connected()`` is called (the session calls
    it on a successful CONNACK). ``reconnect`` runs on this thread holding ``paho_lock``; it is told
    whether the previous attempt ran out of time, and may return the seconds the new attempt has until
    its CONNACK: past them, this thread cuts the connection (a node that took it and never answers).
    """

    def __init__(self, client: "mqtt.Client", deliver: Deliver, name: str, *, min_delay: float = 0.05,
                 max_delay: float = 2.0, burst: int = 100,
                 reconnect: Callable[[bool], Optional[float]] | None = None,
                 max_packet: Optional[int] = None, burst_bytes: int = BURST_BYTES, refuse: Optional[Refuse] = None):
        self.client, self.deliver, self.burst = client, deliver, burst
        self.max_packet, self.burst_bytes = max_packet, burst_bytes
        self.refuse = refuse
        """Told (on this thread, ``paho_lock`` held) why a connection is ended, before it is: the session
        notes the words and sends its DISCONNECT; unset, a plain DISCONNECT."""
        self.refusals = 0  # connections ended for what the broker sent
        self._watched: Any = None  # the connection the fields below are about
        self._verified = False  # its first packet's fixed header was checked (or cannot be: TLS)
        self._accepted = False  # its CONNACK came
        self._opened_at = 0.0
        self._mark: Optional[int] = None  # bytes read from it when paho last completed a packet
        self._packets = 0  # packets paho completed (messages, and what the session reports: packet_read)
        self._early: Optional[str] = None  # a packet that came before the CONNACK
        self._arrived_bytes = 0
        self.reconnect = reconnect or self._paho_reconnect
        self._attempt_started: Optional[float] = None  # the last reconnect attempt (None: connected since)
        self._connack_due: Optional[float] = None
        self._timed_out = False
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
        self._accepted = True
        self._packets += 1

    def packet_read(self, kind: str) -> None:
        """paho completed a packet of ``kind`` (PUBACK, SUBACK, UNSUBACK, a refusing CONNACK): told by
        the session's callbacks, on this thread. One before the CONNACK ends the connection."""
        self._packets += 1
        if kind != "CONNACK" and not self._accepted and self._early is None:
            self._early = kind
        self._connack_due = self._attempt_started = None

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
        self._arrived_bytes += len(message.payload)
        self._packets += 1
        if not self._accepted and self._early is None:
            self._early = "a PUBLISH"

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
            if sock is not self._watched:
                self._watch(sock)
            due = self._connack_due
            if due is not None and time.monotonic() >= due:
                self._cut(sock)
            pending = getattr(sock, "pending", None)  # TLS: bytes already decrypted wait in the socket
            timeout = 0.0 if pending is not None and pending() else 1.0
            if due is not None:
                timeout = min(timeout, max(0.0, due - time.monotonic()))
            turn = time.monotonic()
            try:
                readable = select.select([sock, self._wake_r], [sock] if c.want_write() else [], [], timeout)[0]
            except (OSError, ValueError):  # the socket was closed under us (kill_socket, a disconnect)
                readable = []
            if self._wake_r in readable:
                self._drain_wake()
            # paho's loop_* methods return 0 (MQTT_ERR_SUCCESS), or an error code after which paho has
            # closed the socket and called on_disconnect: the next turn reconnects
            if (sock in readable or timeout == 0.0) and not self._verified:
                with self.paho_lock:
                    verdict = self._first_packet(sock)
                if verdict == "":  # a CONNACK's header not whole yet: wait for it, without spinning
                    time.sleep(0.01)
                    readable = []
                elif verdict is not None:
                    self._end(sock, verdict, too_large=False)
                    continue
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

    # -- what the broker may send (see the module docstring) ---------------------------------------
    def _watch(self, sock: Any) -> None:
        """A new connection (the first, or a reconnect): its first packet is still to be checked."""
        self._watched, self._accepted, self._early = sock, False, None
        self._verified = isinstance(sock, ssl.SSLSocket)  # TLS cannot be peeked: counted and ordered only
        self._opened_at = time.monotonic()
        self._mark = bytes_read(sock)

    def _first_packet(self, sock: Any) -> Optional[str]:
        """Peek at the first bytes of a plain TCP connection (paho has read none): None when they start
        a CONNACK within bounds, "" while too few came, else why the connection must end."""
        try:
            head = sock.recv(16, socket.MSG_PEEK)
        except BlockingIOError:
            return ""
        except (OSError, ValueError):  # closed or reset: paho reads it and reports the loss
            self._verified = True
            return None
        if not head:  # the broker closed the connection: paho reports it
            self._verified = True
            return None
        verdict = first_packet_verdict(head)
        if verdict == "" and time.monotonic() - self._opened_at > FIRST_PACKET_WAIT_S:
            return f"not an MQTT broker: it sent {shown(head)} and no whole CONNACK header within {FIRST_PACKET_WAIT_S:g} s"
        if verdict is None:
            self._verified = True
        return verdict

    def _over_bound(self, sock: Any) -> Optional[str]:
        """After a read: has the packet paho is reading taken more bytes than a packet may have?"""
        if self._early is not None:
            return f"not an MQTT broker: it sent {self._early} before its CONNACK"
        bound = self.max_packet if self._accepted else FIRST_PACKET_MAX
        used = bytes_read(sock)
        if used is None or self._mark is None or not bound:
            return None
        if used - self._mark > bound + SLACK:
            if not self._accepted:
                return (f"not an MQTT broker: its answer to CONNECT took more than {FIRST_PACKET_MAX:,} bytes "
                        "(a CONNACK takes a few)")
            return (f"it sent a packet of more than {bound:,} bytes, the Maximum Packet Size this client set "
                    "in CONNECT (MQTT v5 §3.1.2.11.4)")
        return None

    def _end(self, sock: Any, why: str, too_large: bool) -> None:
        """End this connection for what the broker sent; paho reads nothing more from it. The session's
        ``refuse`` sends the DISCONNECT; if paho could not write it at once, the socket is shut."""
        self.refusals += 1
        log.info("%s: %s", self._thread.name, why)  # the session says it: raised, or told as the loss
        with self.paho_lock:
            try:
                if self.refuse is not None:
                    self.refuse(why, too_large)
                else:
                    self.client.disconnect()
                self.client.loop_write()  # paho closes the socket once its DISCONNECT is written
                if self.client.socket() is sock and isinstance(sock, socket.socket):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    self.client.loop_write()  # a write on a shut socket fails: paho closes it
            except (OSError, ValueError) as exc:
                log.debug("ending the connection: %s", exc)

    def _read_burst(self) -> tuple[int, bool]:
        """Read messages while they keep coming (at most ``burst`` of them, ``burst_bytes`` of payload),
        then hand them over together; paho's return code, and whether the socket ran dry."""
        rc, drained = 0, False
        sock = self.client.socket()
        packets = self._packets
        with self.paho_lock:
            for _ in range(self.burst):
                before = len(self._arrived)
                rc = self.client.loop_read()
                if rc or len(self._arrived) == before or self._arrived_bytes >= self.burst_bytes \
                        or self._early is not None:
                    drained = not rc and len(self._arrived) == before
                    break  # nothing more to read now (or another packet type: select tells if more wait)
            burst, self._arrived, self._arrived_bytes = self._arrived, [], 0
        if not rc and sock is not None and self.client.socket() is sock:
            why = self._over_bound(sock)
            if why is not None:
                self._end(sock, why, too_large=self._early is None and self._accepted)
                return 1, False  # nothing of this connection is handed over
            if self._packets != packets:
                self._mark = bytes_read(sock)  # a packet completed: the count starts again
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

    def _paho_reconnect(self, timed_out: bool) -> None:
        self.client.reconnect()

    def _cut(self, sock: Any) -> None:
        """The attempt had no CONNACK in time: end its connection (paho then reports it lost)."""
        self._connack_due, self._timed_out = None, True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already gone
            pass

    def _reconnect(self) -> None:
        """Wait, then open a new connection (paho's ``reconnect()`` sends CONNECT again)."""
        since = 0.0 if self._attempt_started is None else time.monotonic() - self._attempt_started
        if self._stopping.wait(max(0.0, self._delay - since)):
            return
        self._delay = min(self._delay * 2, self.max_delay)
        timed_out, self._timed_out = self._timed_out, False
        self._attempt_started = time.monotonic()
        try:
            with self.paho_lock:
                within = self.reconnect(timed_out)
            self._connack_due = None if within is None else self._attempt_started + within
        except (OSError, ValueError) as exc:  # broker still away: try again after the next delay
            self._timed_out = isinstance(exc, TimeoutError)  # TCP or TLS handshake out of time
            log.debug("reconnect failed: %s", exc)

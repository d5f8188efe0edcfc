"""A reply stream from MQTT as Server-Sent Events on the HTTP response.

Over MQTT each stream item is one PUBLISH to the Response Topic with the request's Correlation Data
(Profile: Streaming Reply Mapping 1-2); over HTTP each is one SSE event on the open response, its
``data`` a complete JSON-RPC response with the request's ``id`` (A2A v1.0 JSON-RPC binding). The
items themselves do not change. An error in the middle of a stream is an ``event: error`` whose data
is the JSON-RPC error response (as the a2a-sdk server sends it).

The MQTT side of a stream lives exactly as long as its HTTP client listens: whichever way the
response ends (the task reached a final or interrupted state, an error, the client went away), the
Stream is closed, which frees its Correlation Data and ends the stream's reader, a daemon thread that
hands each item to the event loop (``pump``).

**While a stream waits**, the response says why in SSE comments, which every SSE client skips (the
a2a-sdk's too) and which keep the connection visibly alive. While the broker is away (the bridge's
MQTT session reconnects), once a second, in the session's own words when it has new ones::

    : broker gone (connection lost): reconnecting to mqtt://127.0.0.1:1883 (attempt 1); this stream
      ends in 30 s unless it comes back
    : broker gone for 1 s, the bridge is reconnecting; this stream ends in 29 s unless it comes back

(one line each on the wire) and, if it returns, ``: broker back after 3 s; items ticket-desk sent
meanwhile may be lost: ...``. The session starts clean, so what the agent published meanwhile is
gone: the stream is recovered with
GetTask (Profile: Requester Retry 8) as soon as the agent announces itself again (it republishes its
card once it is reconnected and subscribed; measured: 3 s after a kill -9 whose broker was back 2 s
later, where the stream used to stay silent for its 30 s idle timeout), at the latest after the
stream-idle timeout. With the broker there, every 5 s of silence: ``: no item from ticket-desk for
10 s (a stream silent for 30 s is recovered with GetTask)``.

How long a stream can wait, with the default retry profile:

* the broker stays away: the stream ends with a -32004 error event naming the task to re-subscribe
  to, ``patience_s`` after the bridge noticed the loss (the stream-idle timeout, 30 s; a broker
  killed with kill -9 is noticed at once, a network that falls silent when MQTT's keep-alive gives
  up), or sooner when the requester's own recovery fails first (its publishes are refused at once:
  30 s after the last item plus backoffs of at most 1.2 + 2.4 s);
* the broker comes back but the agent does not answer: the requester's recovery runs on the
  profile's times, at worst the stream-idle timeout plus one GetTask's retries
  (``RetryProfile.worst_case_s()``), 30 + 3 x 15 + 1.2 + 2.4 = 78.6 s after the last item; a task
  handed over to an analyst may take one more such round with the card agent (Optional Task
  Handover: fallback).
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..error_base import A2ANbError
from ..agents.requester import RequestTimeout, Stream
from ..mqtt.session import SessionError
from ..protocol import errors, jsonrpc
from ..protocol.jsonrpc import RequestId
from .forward import as_error, stream_result

MEDIA_TYPE = "text/event-stream"
STATUS_EVERY_S = 1.0
QUIET_NOTE_S = 5.0


def sse_event(payload: Any, event: Optional[str] = None) -> bytes:
    """One SSE event: an optional ``event:`` line and one ``data:`` line (compact JSON has no newline)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()


def sse_comment(text: str) -> bytes:
    """An SSE comment (``: text``), which clients skip: what the bridge is doing while a stream waits."""
    return f": {' '.join(text.splitlines())}\n\n".encode()


class OpenStream:
    """One SSE response's MQTT stream. ``finished``: its last item (or an error) was relayed.
    ``close`` (idempotent, from any thread) ends the stream and tells ``on_close`` once.
    ``waiting``: what the response says while it waits (set by ``relay``)."""

    def __init__(self, stream: Stream, on_close: Callable[[], None]):
        self.stream, self._on_close = stream, on_close
        self.finished = False
        self.waiting: Optional[Waiting] = None
        self._closed = False
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.stream.close()
        self._on_close()


class BrokerGone(A2ANbError):
    """The bridge's broker stayed away for the stream's whole patience."""


@dataclass
class BrokerWatch:
    """What the bridge's streams know of its MQTT broker: whether it is connected, the session's
    latest words about the link (``Session.on_link``: ``broker gone for 12 s, reconnecting (attempt
    9) ...``, at most every 5 s), how long a stream waits for a broker that went away, and the
    requester's stream-idle timeout (after which a silent stream is recovered with GetTask)."""

    connected: Callable[[], bool]
    patience_s: float
    idle_timeout_s: float
    news: tuple[float, str] = (0.0, "")  # (monotonic time, text)

    def heard(self, text: str) -> None:
        """``Session.on_link`` (network thread): keep the words for the next comment."""
        self.news = (time.monotonic(), text)


class Waiting:
    """What an open stream says while it waits for its next item (module docstring): ``check``
    after each second without one, ``arrived`` when one comes. Both return an SSE comment's text or
    None; ``check`` raises ``BrokerGone`` once the broker has been away for ``patience_s``.
    ``may_have_lost``: the broker went away since the last whole Task (items sent meanwhile are lost)."""

    def __init__(self, agent: str, broker: BrokerWatch):
        self.agent, self.broker = agent, broker
        self.last_item = self.said_at = time.monotonic()
        self.gone_since: Optional[float] = None
        self.may_have_lost = False
        self.quiet_notes = 0

    def check(self) -> Optional[str]:
        now = time.monotonic()
        if not self.broker.connected():
            if self.gone_since is None:
                self.gone_since, self.may_have_lost = now, True
            left = self.broker.patience_s - (now - self.gone_since)
            if left <= 0:
                raise BrokerGone()
            heard_at, heard = self.broker.news
            said = heard.removesuffix(" ...") if heard_at > self.said_at else \
                f"broker gone for {now - self.gone_since:.0f} s, the bridge is reconnecting"
            self.said_at = now
            return f"{said}; this stream ends in {left:.0f} s unless it comes back"
        if self.gone_since is not None:
            return self._back(now)
        quiet = now - self.last_item
        if quiet < QUIET_NOTE_S * (self.quiet_notes + 1):
            return None
        self.quiet_notes += 1
        return (f"no item from {self.agent} for {quiet:.0f} s (a stream silent for {self.broker.idle_timeout_s:g} s "
                "is recovered with GetTask)")

    def arrived(self, whole_task: bool) -> Optional[str]:
        """An item came (``whole_task``: a Task, as a recovery's GetTask or a SubscribeToTask sends).
        Only a whole Task makes up for what the broker's absence lost: an item sent after the broker
        came back (one the agent had queued, say) does not say that none went missing before it."""
        self.last_item, self.quiet_notes = time.monotonic(), 0
        if whole_task:
            self.may_have_lost = False
        return self._back(self.last_item) if self.gone_since is not None and self.broker.connected() else None

    def broker_lost(self, task_id: Optional[str]) -> errors.A2AError:
        """The stream's last word when it ends without a broker (-32004, retry-eligible)."""
        away = f" {time.monotonic() - self.gone_since:.0f} s ago" if self.gone_since is not None else ""
        return errors.responder_unavailable(
            f"the bridge lost its MQTT broker{away} and is still reconnecting; task {task_id} may still be "
            "running: SubscribeToTask once the bridge is back")

    def _back(self, now: float) -> str:
        away, self.gone_since = now - (self.gone_since or now), None
        return (f"broker back after {away:.0f} s; items {self.agent} sent meanwhile may be lost: the stream is "
                f"recovered with GetTask when {self.agent} announces itself again, at the latest after "
                f"{self.broker.idle_timeout_s:g} s of silence")


Handoff = tuple[str, Any]  # ("item", StreamResponse) | ("end", None) | ("error", exception)


def pump(stream: Stream, loop: asyncio.AbstractEventLoop, items: "asyncio.Queue[Handoff]") -> None:
    """Read ``stream`` to its end on this (daemon) thread, handing each item to ``items`` on ``loop``.
    Blocking reads stay off the event loop; a daemon thread never holds up the program's exit."""
    def hand(kind: str, value: Any) -> bool:
        try:
            loop.call_soon_threadsafe(items.put_nowait, (kind, value))
            return True
        except RuntimeError:  # the loop is closed: the bridge stopped, nobody reads any more
            stream.close()
            return False

    try:
        for event in stream:
            if not hand("item", stream_result(event)):
                return
        hand("end", None)
    except Exception as exc:  # noqa: BLE001 - the response says it as its last event
        hand("error", exc)


async def relay(opened: OpenStream, first: dict[str, Any], request_id: RequestId, agent: str,
                broker: BrokerWatch) -> AsyncIterator[bytes]:
    """The SSE bytes of a stream whose first item was already read.

    The stream's reader (``pump``) hands the next items over; every ``STATUS_EVERY_S`` without one
    the response may say why in a comment (``Waiting``). When the HTTP client goes away, Starlette
    cancels this generator, and ``finally`` closes the stream, which also ends the reader."""
    loop = asyncio.get_running_loop()
    items: "asyncio.Queue[Handoff]" = asyncio.Queue()
    threading.Thread(target=pump, args=(opened.stream, loop, items), name=f"bridge-stream-{agent}",
                     daemon=True).start()
    waiting = opened.waiting = Waiting(agent, broker)
    getter: Optional["asyncio.Task[Handoff]"] = None
    try:
        yield sse_event(jsonrpc.result_response(request_id, first))
        while True:
            getter = getter or asyncio.ensure_future(items.get())
            if not (await asyncio.wait({getter}, timeout=STATUS_EVERY_S))[0]:
                note = waiting.check()
                if note:
                    yield sse_comment(note)
                continue
            (kind, value), getter = getter.result(), None
            if kind == "error":
                raise value
            if kind == "end":
                opened.finished = True
                return
            note = waiting.arrived(whole_task="task" in value)
            if note:
                yield sse_comment(note)
            yield sse_event(jsonrpc.result_response(request_id, value))
    except Exception as exc:  # noqa: BLE001 - every failure becomes the stream's last event
        opened.finished = True
        # no broker: said the same way whether the bridge's patience or the requester's retries ran out
        lost = isinstance(exc, (RequestTimeout, SessionError)) and not broker.connected()
        error = waiting.broker_lost(opened.stream.task_id) if isinstance(exc, BrokerGone) or lost \
            else as_error(exc, agent)
        yield sse_event(jsonrpc.error_response(request_id, error), event="error")
    finally:
        if getter is not None:
            getter.cancel()
        opened.close()

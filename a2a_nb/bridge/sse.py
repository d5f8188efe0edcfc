"""A reply stream from MQTT as Server-Sent Events on the HTTP response.

Over MQTT each stream item is one PUBLISH to the Response Topic with the request's Correlation Data
(Profile: Streaming Reply Mapping 1-2); over HTTP each is one SSE event on the open response, its
``data`` a complete JSON-RPC response with the request's ``id`` (A2A v1.0 JSON-RPC binding). The
items themselves do not change. An error in the middle of a stream is an ``event: error`` whose data
is the JSON-RPC error response (as the a2a-sdk server sends it).

The MQTT side of a stream lives exactly as long as its HTTP client listens: whichever way the
response ends (the task reached a final or interrupted state, an error, the client went away), the
Stream is closed, which frees its Correlation Data and the worker thread that waits for the next item.
"""
from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from typing import Any, Callable, Optional

import anyio
import anyio.to_thread

from ..agents.requester import Stream
from ..protocol import jsonrpc
from ..protocol.jsonrpc import RequestId
from .forward import as_error, stream_result

MEDIA_TYPE = "text/event-stream"


def sse_event(payload: Any, event: Optional[str] = None) -> bytes:
    """One SSE event: an optional ``event:`` line and one ``data:`` line (compact JSON has no newline)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()


def _next_result(stream: Stream) -> Optional[dict[str, Any]]:
    """The next item as a StreamResponse, or None at the end (blocks: runs on a worker thread)."""
    event = next(stream, None)
    return None if event is None else stream_result(event)


class OpenStream:
    """One SSE response's MQTT stream. ``finished``: its last item (or an error) was relayed.
    ``close`` (idempotent, from any thread) ends the stream and tells ``on_close`` once."""

    def __init__(self, stream: Stream, on_close: Callable[[], None]):
        self.stream, self._on_close = stream, on_close
        self.finished = False
        self._closed = False
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.stream.close()
        self._on_close()


async def relay(opened: OpenStream, first: dict[str, Any], request_id: RequestId, agent: str,
                limiter: anyio.CapacityLimiter) -> AsyncIterator[bytes]:
    """The SSE bytes of a stream whose first item was already read.

    Waiting for the next item blocks a worker thread (of ``limiter``); when the HTTP client goes
    away, Starlette cancels this generator, and ``finally`` closes the stream, which also wakes that
    thread (``abandon_on_cancel``: the event loop does not wait for it)."""
    try:
        yield sse_event(jsonrpc.result_response(request_id, first))
        while True:
            item = await anyio.to_thread.run_sync(_next_result, opened.stream, limiter=limiter,
                                                  abandon_on_cancel=True)
            if item is None:
                opened.finished = True
                return
            yield sse_event(jsonrpc.result_response(request_id, item))
    except Exception as exc:  # noqa: BLE001 - every failure becomes the stream's last event
        opened.finished = True
        yield sse_event(jsonrpc.error_response(request_id, as_error(exc, agent)), event="error")
    finally:
        opened.close()

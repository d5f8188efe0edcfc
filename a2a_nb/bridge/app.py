"""The bridge's HTTP face: a Starlette app with two routes.

* ``GET /.well-known/agent-card.json``: the agent's retained card with the bridge's endpoint first
  (``card.bridged_card``); 404 while the agent has no card on the broker.
* ``POST /``: one JSON-RPC request (A2A v1.0 method names). Unary methods answer one JSON-RPC
  response; ``SendStreamingMessage`` and ``SubscribeToTask`` answer Server-Sent Events (``sse``).
  JSON-RPC errors travel with HTTP 200, as in the a2a-sdk server.

Before a route runs, ``guard.Guard`` checks the Host and Origin (HTTP 403 for a foreign one), and
``rpc`` takes only JSON bodies (HTTP 415 otherwise): no web page the user visits can reach the agent
(see ``guard``). Every request is bounded: its connection (``connections``: at most 64 open, a
whole request within 10 s), the body (``max_body_bytes``, -32600 beyond it), the unary requests and
the streams open at once (``max_requests``, ``max_streams``; beyond them HTTP 503 with
``Retry-After`` and the MQTT binding's retry-eligible -32004 ``responder_unavailable``), and each
one's time (the Requester's retry profile). The ``Authorization`` header goes on as the request's
``a2a-authorization``; the bridge never writes it into a response or a log line.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..protocol import errors, jsonrpc
from ..protocol.cards import PROTOCOL_VERSION
from ..protocol.errors import A2AError
from .card import WELL_KNOWN_PATH, CardWatch, bridged_card
from .connections import RefusalLog
from .forward import STREAMING_METHODS, Forwarder, as_error, bearer_token
from .guard import JSONRPC_MEDIA_TYPES, Allowed, Guard, json_media_type, shown
from .sse import MEDIA_TYPE, BrokerWatch, OpenStream, relay

VERSION_HEADER = "A2A-Version"
MAX_BODY_BYTES = 1 << 20
RETRY_AFTER_S = 1


@dataclass
class BridgeStats:
    """What the bridge did so far (a notebook cell or a test reads it)."""

    requests: int = 0
    in_progress: int = 0  # unary requests waiting for their MQTT reply now
    refused: int = 0  # answered 503: every slot busy
    streams_opened: int = 0
    streams_open: int = 0
    streams_cut: int = 0  # closed before their last item: the HTTP client left (or the bridge stopped)
    refused_host: int = 0  # HTTP 403: a Host the bridge does not answer to (DNS rebinding)
    refused_origin: int = 0  # HTTP 403: a web page of another origin
    refused_media_type: int = 0  # HTTP 415: a JSON-RPC body that is not application/json
    connections_refused: int = 0  # answered 503 and closed: every open connection busy with a request
    connections_evicted: int = 0  # closed to make room: the oldest one without a whole request
    requests_timed_out: int = 0  # connections closed: no whole request within the deadline

    def add(self, counter: str) -> None:
        setattr(self, counter, getattr(self, counter) + 1)


def check_version(header: Optional[str]) -> None:
    """-32009 unless the ``A2A-Version`` header (when sent) names A2A 1.x: the only version the
    kit's agents speak. Without the header the request is taken as 1.0 (curl-friendly)."""
    if header and header.strip().split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
        raise errors.version_not_supported(header.strip())


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (-32600) as soon as it grows past ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise errors.invalid_request(f"body of {declared} bytes; this bridge takes at most {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise errors.invalid_request(f"body larger than {limit} bytes")
    return bytes(body)


def rpc_error(request_id: jsonrpc.RequestId, error: A2AError, status: int = 200) -> JSONResponse:
    """A JSON-RPC error response (HTTP 200 as in the a2a-sdk server; 503 busy, 415 not JSON)."""
    headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
    return JSONResponse(jsonrpc.error_response(request_id, error), status_code=status, headers=headers)


class BridgeApp:
    """The routes, their limits and counters; ``app`` is the ASGI application (the routes behind
    ``guard.Guard``)."""

    def __init__(self, forwarder: Forwarder, cards: CardWatch, url: str, allowed: Allowed, *,
                 max_requests: int = 16, max_streams: int = 8, max_body_bytes: int = MAX_BODY_BYTES,
                 refusals: Optional[RefusalLog] = None, broker_patience_s: Optional[float] = None):
        self.forwarder, self.cards, self.url, self.allowed = forwarder, cards, url, allowed
        self.max_requests, self.max_streams, self.max_body_bytes = max_requests, max_streams, max_body_bytes
        # an open stream waits for a broker that went away as long as the profile lets a stream be silent
        idle_s = forwarder.requester.retry.stream_idle_timeout_s
        self.broker = BrokerWatch(self.broker_connected, broker_patience_s or idle_s, idle_s)
        cards.on_card = self._agent_announced
        self.stats = BridgeStats()
        self.refusals = refusals or RefusalLog()
        self.open_streams: set[OpenStream] = set()
        self.closing = False
        self._lock = threading.Lock()  # streams are counted on the event loop and closed by stop()
        self._unary_threads = anyio.CapacityLimiter(max_requests)
        self._stream_threads = anyio.CapacityLimiter(max_streams)
        routes = Starlette(routes=[Route(WELL_KNOWN_PATH, self.card, methods=["GET"]),
                                   Route("/", self.rpc, methods=["POST"])])
        self.app = Guard(routes, allowed, self.refusals, self.stats.add)

    def broker_connected(self) -> bool:
        """Is the bridge's MQTT session connected now (False while it reconnects)?"""
        return self.forwarder.requester.session.connected

    @property
    def agent(self) -> str:
        return self.forwarder.agent

    async def card(self, request: Request) -> Response:
        card = self.cards.current
        if card is None:
            return JSONResponse({"error": f"{self.agent} has no Agent Card on {self.cards.topic} right now"},
                                status_code=404)
        return JSONResponse(bridged_card(card, self.url))

    async def rpc(self, request: Request) -> Response:
        self.stats.requests += 1
        content_type = request.headers.get("content-type")
        if not json_media_type(content_type):
            self.stats.refused_media_type += 1
            got = shown(content_type) if content_type is not None else "none"
            return rpc_error(None, errors.invalid_request(
                f"Content-Type {got}: A2A JSON-RPC takes {' or '.join(JSONRPC_MEDIA_TYPES)}"), status=415)
        body = b""
        try:
            body = await read_body(request, self.max_body_bytes)
            obj = jsonrpc.parse_request(body)
            method, params = jsonrpc.check_method(obj["method"]), obj.get("params") or {}
            check_version(request.headers.get(VERSION_HEADER))
            token = bearer_token(request.headers.get("authorization"))
        except A2AError as exc:
            return rpc_error(jsonrpc.request_id_of(body), exc)
        except ClientDisconnect:  # the client left (or its connection's deadline closed it) mid-body
            return Response(status_code=400)
        request_id = obj.get("id")
        if method in STREAMING_METHODS:
            return await self._stream(request_id, method, params, token)
        return await self._unary(request_id, method, params, token)

    async def _unary(self, request_id: jsonrpc.RequestId, method: str, params: dict[str, Any],
                     token: Optional[str]) -> Response:
        if self.stats.in_progress >= self.max_requests:
            return self._busy(request_id, f"{self.max_requests} requests in progress")
        self.stats.in_progress += 1
        try:
            result = await anyio.to_thread.run_sync(self.forwarder.call, method, params, token,
                                                    limiter=self._unary_threads)
        except Exception as exc:  # noqa: BLE001 - as_error names every failure for the client
            return rpc_error(request_id, as_error(exc, self.agent, self.broker_connected()))
        finally:
            self.stats.in_progress -= 1
        return JSONResponse(jsonrpc.result_response(request_id, result))

    async def _stream(self, request_id: jsonrpc.RequestId, method: str, params: dict[str, Any],
                      token: Optional[str]) -> Response:
        with self._lock:
            if self.stats.streams_open >= self.max_streams:
                return self._busy(request_id, f"{self.max_streams} streams open")
            self.stats.streams_open += 1
        try:
            stream, first = await anyio.to_thread.run_sync(self.forwarder.open_stream, method, params, token,
                                                           limiter=self._stream_threads)
        except Exception as exc:  # noqa: BLE001 - an error before the first item: a plain JSON-RPC error
            with self._lock:
                self.stats.streams_open -= 1
            return rpc_error(request_id, as_error(exc, self.agent, self.broker_connected()))
        opened = OpenStream(stream, lambda: self._stream_closed(opened))
        with self._lock:
            self.stats.streams_opened += 1
            self.open_streams.add(opened)
            closing = self.closing
        if closing:  # opened while the bridge stops: its first item, then the end
            opened.close()
        # the background task runs after the response, also when the client left mid-stream
        return StreamingResponse(relay(opened, first, request_id, self.agent, self.broker),
                                 media_type=MEDIA_TYPE, headers={"Cache-Control": "no-store"},
                                 background=BackgroundTask(opened.close))

    def _agent_announced(self) -> None:
        """The agent published its card (network thread): after a broker restart it is back and
        subscribed, so a stream that may have lost items asks for its task now (GetTask) instead of
        after the stream-idle timeout (Profile: Requester Retry 8)."""
        with self._lock:
            streams = [o for o in self.open_streams if o.waiting is not None and o.waiting.may_have_lost]
        for opened in streams:
            opened.stream.recover_now(f"{self.agent} announced itself again")

    def _stream_closed(self, opened: OpenStream) -> None:
        with self._lock:
            self.open_streams.discard(opened)
            self.stats.streams_open -= 1
            if not opened.finished:
                self.stats.streams_cut += 1

    def _busy(self, request_id: jsonrpc.RequestId, what: str) -> JSONResponse:
        self.stats.refused += 1
        return rpc_error(request_id, errors.responder_unavailable(f"the bridge to {self.agent} has {what}; "
                                                                   f"retry in {RETRY_AFTER_S} s"), status=503)

    def close_streams(self) -> None:
        """End every open stream, and each one opened from now on (the bridge stops): their HTTP
        responses finish at once instead of holding the server's shutdown."""
        with self._lock:
            self.closing = True
            streams = list(self.open_streams)
        for opened in streams:
            opened.close()


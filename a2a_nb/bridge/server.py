"""``Bridge``: the HTTP bridge as an object a cell starts and stops, on a free loopback port.

``with Bridge("ticket-desk") as bridge: bridge.url`` serves the agent's card and its JSON-RPC
endpoint at ``http://127.0.0.1:PORT/`` until the block ends. Underneath: one Requester (MQTT Client
ID ``{org}/{unit}/bridge``, its reply topic subscribed once) that every HTTP client shares, and
uvicorn running the Starlette app on a thread of its own. Start and stop are bounded: ``start``
gives up after ``start_timeout_s``, ``stop`` ends the open streams, then the server (its graceful
shutdown limited to ``STOP_GRACE_S``), then the MQTT session. Whatever closes that session
(``a2a_nb.stop_all()``, a new bridge taking over its Client ID) stops the HTTP server as well.

Only local programs and pages the operator allows may call it (``guard``: Host, Origin, JSON media
type), over a bounded number of connections that must send their request in time (``connections``).

Tasks over MQTT belong to their requester (the kit's rule): every task made through one bridge is
the bridge's, so its HTTP clients see each other's tasks unless the agent checks bearer tokens,
whose subject then tells them apart.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any, Optional, Union

import uvicorn

from ..error_base import A2ANbError
from ..agents.requester import Requester
from ..mqtt.broker import BrokerEndpoint
from ..protocol.retry import DEFAULT, RetryProfile
from .app import BridgeApp, BridgeStats
from .card import WELL_KNOWN_PATH, CardWatch, bridged_card
from .connections import LISTEN_BACKLOG, MAX_CONNECTIONS, REQUEST_TIMEOUT_S, ConnectionGate, RefusalLog, gated_protocol
from .forward import Forwarder
from .guard import Allowed

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STOP_GRACE_S = 2
CARD_WAIT_S = 2.0


class NoCard(A2ANbError, LookupError):
    """The agent has no retained Agent Card on the broker: nothing to bridge (is it served?)."""


class Bridge:
    """An HTTP JSON-RPC front for one MQTT agent (see the module docstring)."""

    def __init__(self, agent: str = "ticket-desk", *, org: str = "acme", unit: str = "support",
                 broker: Union[str, BrokerEndpoint, None] = None, port: int = 0, as_agent: str = "bridge",
                 retry: RetryProfile = DEFAULT, max_requests: int = 16, max_streams: int = 8,
                 card_wait_s: float = CARD_WAIT_S, start_timeout_s: float = 5.0,
                 allow_token_without_tls: bool = False, seed: Optional[int] = None,
                 allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = (),
                 max_connections: int = MAX_CONNECTIONS, request_timeout_s: float = REQUEST_TIMEOUT_S):
        self.agent, self.org, self.unit, self.port = agent, org, unit, port
        self._broker, self._as_agent, self._retry, self._seed = broker, as_agent, retry, seed
        self.max_requests, self.max_streams = max_requests, max_streams
        self.allow_hosts, self.allow_origins = tuple(allow_hosts), tuple(allow_origins)
        Allowed.on_port(port, self.allow_hosts, self.allow_origins)  # a bad name or origin: ValueError now
        self.max_connections, self.request_timeout_s = max_connections, request_timeout_s
        self.card_wait_s, self.start_timeout_s = card_wait_s, start_timeout_s
        self.allow_token_without_tls = allow_token_without_tls
        self.requester: Optional[Requester] = None
        self.http: Optional[BridgeApp] = None
        self._server: Optional[uvicorn.Server] = None
        self._thread: Optional[threading.Thread] = None

    # -- what a cell reads -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The JSON-RPC endpoint (also the base URL an a2a-sdk client resolves the card from)."""
        return f"http://{HOST}:{self.port}/"

    @property
    def card_url(self) -> str:
        return f"http://{HOST}:{self.port}{WELL_KNOWN_PATH}"

    @property
    def card(self) -> Optional[dict[str, Any]]:
        """The card an HTTP client gets now (None while the agent has none)."""
        mqtt_card = self.http.cards.current if self.http else None
        return bridged_card(mqtt_card, self.url) if mqtt_card is not None else None

    @property
    def stats(self) -> BridgeStats:
        return self.http.stats if self.http else BridgeStats()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "Bridge":
        """Connect to the broker, wait for the agent's card, then serve HTTP; raises ``NoCard``."""
        if self.running:
            return self
        self.requester = Requester(self._as_agent, org=self.org, unit=self.unit, broker=self._broker,
                                   retry=self._retry, seed=self._seed,
                                   allow_token_without_tls=self.allow_token_without_tls)
        # the HTTP side ends with the MQTT session: `a2a_nb.stop_all()`, a re-run cell whose new bridge
        # takes over the Client ID, or the program's exit stop the server too
        self.requester.session.on_close = self._stop_http
        try:
            cards = CardWatch(self.requester.session, self.org, self.unit, self.agent)
            if cards.wait(self.card_wait_s) is None:
                raise NoCard(f"no Agent Card for {self.agent} in {self.org}/{self.unit} "
                             f"(waited {self.card_wait_s:g} s on {cards.topic})")
            sock = _listen(self.port)
            self.port = sock.getsockname()[1]
            allowed = Allowed.on_port(self.port, self.allow_hosts, self.allow_origins)
            self.http = BridgeApp(Forwarder(self.requester, self.agent), cards, self.url, allowed,
                                  max_requests=self.max_requests, max_streams=self.max_streams)
            self._tell_streams_of_the_link(self.http)
            self._serve(sock)
        except BaseException:
            self.stop()
            raise
        return self

    def _tell_streams_of_the_link(self, http: BridgeApp) -> None:
        """The session's words about its broker link (gone, reconnecting with the attempt number,
        back) reach the open streams' comments; they and the requester's notes on stream recovery
        are logged as warnings, so the operator sees them too."""
        assert self.requester is not None
        session, agent = self.requester.session, self.agent
        logged = session.on_link  # the requester's: it hands the words to on_notice

        def on_link(text: str) -> None:
            http.broker.heard(text)
            if logged is not None:
                logged(text)

        session.on_link = on_link
        self.requester.on_notice = lambda text: log.warning("bridge to %s: %s", agent, text)

    def _serve(self, sock: socket.socket) -> None:
        assert self.http is not None
        refusals = self.http.refusals
        gate = ConnectionGate(self.max_connections, self.request_timeout_s, refusals, self.http.stats.add)
        config = uvicorn.Config(self.http.app, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=STOP_GRACE_S, http=gated_protocol(gate),
                                backlog=LISTEN_BACKLOG)
        self._server = server = uvicorn.Server(config)
        _quiet_invalid_requests()

        async def serve() -> None:
            asyncio.get_running_loop().set_exception_handler(refusals.loop_error)
            await server.serve(sockets=[sock])

        self._thread = threading.Thread(target=asyncio.run, args=(serve(),),
                                        name=f"bridge-{self.agent}-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the bridge's HTTP server did not start on {self.url} "
                                   f"within {self.start_timeout_s:g} s")
            time.sleep(0.01)

    def stop(self) -> None:
        """End the open streams, the HTTP server and the MQTT session (bounded; safe to repeat)."""
        self._stop_http()
        if self.requester is not None:
            self.requester.close()

    def _stop_http(self) -> None:
        """End the open streams, then the server: its graceful shutdown waits at most ``STOP_GRACE_S``."""
        if self.http is not None:
            self.http.close_streams()
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(STOP_GRACE_S + 1)
            if thread.is_alive():
                server.force_exit = True
                thread.join(1)

    def __enter__(self) -> "Bridge":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"serving {self.url}" if self.running else "stopped"
        return f"<Bridge HTTP → MQTT {self.org}/{self.unit}/{self.agent}: {state}>"


def _listen(port: int) -> socket.socket:
    """A listening TCP socket on the loopback interface (``port`` 0: a free one).

    ``TCP_NODELAY``, which the connections inherit: without it a response written in two pieces
    (headers, then body) waits for the client's delayed ACK, about 40 ms per request on a kept-alive
    connection (Nagle's algorithm)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


_INVALID_HTTP = RefusalLog()


def _quiet_invalid_requests() -> None:
    """uvicorn warns "Invalid HTTP request received." once per bad request: a flood of them would
    flood the log. Those warnings go through a ``RefusalLog`` (one line per interval) instead."""
    logger = logging.getLogger("uvicorn.error")
    if _invalid_request_filter not in logger.filters:
        logger.addFilter(_invalid_request_filter)


def _invalid_request_filter(record: logging.LogRecord) -> bool:
    if record.getMessage() != "Invalid HTTP request received.":
        return True
    _INVALID_HTTP.note("refused a request that is not valid HTTP (HTTP 400)")
    return False

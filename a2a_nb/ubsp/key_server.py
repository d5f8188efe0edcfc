"""A small HTTPS server of public key sets, for lessons and tests (Profile: Security Metadata and Trust 1, 3).

An agent's card says ``{"jwksUri": server.url_for("weather")}``; :meth:`KeyServer.trust` is the
:class:`~.trust.KeyTrust` that believes this server and no other::

    with KeyServer() as server:
        server.publish("weather", keys.public_jwks())
        trust = server.trust()
        trust.jwks_for({"jwksUri": server.url_for("weather")})   # fetched over verified TLS

It listens on ``127.0.0.1`` (a free port), with a certificate from the kit's own throw-away CA
(:func:`a2a_nb.mqtt.secure.make_certificates`), written in a temporary folder that :meth:`close`
removes. Each connection has its own daemon thread, and every read or write on it ends within
``REQUEST_TIMEOUT_S``, so a client that stops half-way holds a thread for a few seconds at most.
"""
from __future__ import annotations

import json
import shutil
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import quote

from ..mqtt.secure import make_certificates
from .trust import KeyTrust

REQUEST_TIMEOUT_S = 5.0
"""Longest wait for one read or write on a connection (the TLS handshake included)."""

CERT_HOSTS = ("127.0.0.1", "localhost")
"""The names the server's certificate is valid for."""

JWKS_TYPE = "application/jwk-set+json"


class _JwksHTTPServer(ThreadingHTTPServer):
    """The published key sets (path -> body) and a count of the requests answered."""

    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext) -> None:
        self.tls = tls
        self.lock = threading.Lock()
        self.bodies: dict[str, bytes] = {}
        self.requests_served = 0
        super().__init__(("127.0.0.1", 0), _JwksHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that leaves, or distrusts our CA, is not an error to log."""

    def answered(self, path: str) -> Optional[bytes]:
        """Count a request; the body published at ``path``, if any."""
        with self.lock:
            self.requests_served += 1
            return self.bodies.get(path)


class _JwksHandler(BaseHTTPRequestHandler):
    """GET of a published path: 200 and the key set; any other path: 404; any other method: 405."""

    timeout = REQUEST_TIMEOUT_S

    def setup(self) -> None:
        """TLS here, in the connection's own thread (on accept, a slow handshake would stall the server)."""
        self.request.settimeout(REQUEST_TIMEOUT_S)
        self.request = self._server().tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.request.close()

    def _server(self) -> _JwksHTTPServer:
        assert isinstance(self.server, _JwksHTTPServer)
        return self.server

    def do_GET(self) -> None:
        body = self._server().answered(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", JWKS_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _not_allowed(self) -> None:
        self._server().answered("")
        self.send_error(405)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _not_allowed

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing per request."""


def _tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


class KeyServer:
    """An HTTPS JWKS server on ``127.0.0.1``, started by ``KeyServer()``; :meth:`close` (or ``with``) ends it."""

    def __init__(self, certificates: Optional[Mapping[str, Path]] = None) -> None:
        """``certificates``: the ``ca``, ``cert`` and ``key`` files of a CA kept elsewhere (several
        processes on one machine share one, :mod:`.local_keys`); else a throw-away CA is made."""
        self._folder: Optional[str] = None
        try:
            if certificates is None:
                self._folder = tempfile.mkdtemp(prefix="a2a-nb-keys-")
                certificates = make_certificates(self._folder, hosts=CERT_HOSTS)
            paths = certificates
            self._httpd = _JwksHTTPServer(_tls_context(paths["cert"], paths["key"]))
        except BaseException:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
            raise
        self.ca_file = str(paths["ca"])
        """The PEM file of the CA that signed the server's certificate: what a client trusts."""
        self.host_port = f"127.0.0.1:{self._httpd.server_port}"
        self._closed = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"KeyServer {self.host_port}", daemon=True)
        self._thread.start()

    def url_for(self, agent_id: str) -> str:
        """The ``jwksUri`` of ``agent_id``'s key set, e.g. ``https://127.0.0.1:PORT/jwks/weather.json``."""
        return f"https://{self.host_port}{self._path_for(agent_id)}"

    def publish(self, agent_id: str, jwks: dict[str, Any]) -> None:
        """Serve ``jwks`` at :meth:`url_for` ``(agent_id)`` (as given: a test may publish a bad set)."""
        body = json.dumps(jwks).encode("utf-8")
        with self._httpd.lock:
            self._httpd.bodies[self._path_for(agent_id)] = body

    def remove(self, agent_id: str) -> None:
        """Stop serving ``agent_id``'s key set (its URL answers 404)."""
        with self._httpd.lock:
            self._httpd.bodies.pop(self._path_for(agent_id), None)

    def trust(self, **kw: Any) -> KeyTrust:
        """A :class:`KeyTrust` that allows exactly this server, with its CA; ``kw`` sets or overrides fields."""
        fields: dict[str, Any] = {"allowed_hosts": (self.host_port,), "ca_file": self.ca_file, **kw}
        return KeyTrust(**fields)

    @property
    def requests_served(self) -> int:
        """How many HTTP requests the server has answered (a cached key set costs none)."""
        with self._httpd.lock:
            return self._httpd.requests_served

    def close(self) -> None:
        """Stop serving (and remove a throw-away CA's folder). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=REQUEST_TIMEOUT_S)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> KeyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<KeyServer {self.host_port} closed>"
        with self._httpd.lock:
            count = len(self._httpd.bodies)
        return f"<KeyServer https://{self.host_port} serving {count} key set{'s' if count != 1 else ''}>"

    @staticmethod
    def _path_for(agent_id: str) -> str:
        return f"/jwks/{quote(agent_id, safe='')}.json"

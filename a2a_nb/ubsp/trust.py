"""Which public keys to trust: the Trusted JKU policy for ``ubsp-v1``.

Under ``ubsp-v1`` a requester encrypts to the responder's public key, and the responder to the
requester's, each "resolved from trusted agent metadata" (Profile: Optional Untrusted-Broker Security
Profile 5-6). An Agent Card carries that metadata in an extension's params (Profile: Security Metadata
and Trust 1)::

    {"jwksUri": "https://keys.example/jwks/weather.json"}     # where to fetch the keys, or
    {"jwks": {"keys": [{"kty": "EC", "crv": "P-256", ...}]}}  # the keys themselves, inline

The card reached us through the broker, the very party ``ubsp-v1`` does not trust. So a key is
trusted only through something the broker cannot forge, and :class:`KeyTrust` is that policy:

* ``jwksUri`` is fetched only over ``https://``, only from a host on ``allowed_hosts``, with the TLS
  certificate *and* its host name checked (Profile: Security Metadata and Trust 3). A broker that
  rewrites the card can point ``jwksUri`` elsewhere, but not to a host we trust;
* an inline ``jwks`` is refused unless ``trust_inline=True``: whoever wrote the card could have written
  it, so trusting it means trusting the broker (fine in a lesson, not against a hostile broker);
* when ``jwksUri`` is present but refused or unreachable, the inline set is **never** used instead:
  else a broker could break the URI on purpose to make us use its own keys;
* the fetch is bounded: ``max_bytes``, one deadline ``timeout_s`` for the whole fetch (a server
  sending one byte a second cannot hold us longer), no redirects, JSON no deeper than the kit accepts,
  1 to 32 keys, public members only;
* a failure is remembered for ``failure_cache_s`` (30 s): the same URI is not fetched again until
  then, nor any URI of a host:port that did not answer in time or could not be reached (a key
  server that accepts and never answers costs one ``timeout_s``, not one per message naming it);
  at most ``MAX_CACHED_URIS`` of each are kept;
* a caller that must not wait (an agent's network thread) asks with ``fetch=False``: it gets what
  is cached, or a refusal at once.

Every refusal is an :class:`UntrustedKeySource`, one line naming the source and the reason.

The request is HTTP/1.0 over a TLS socket, read here in a few lines rather than by ``http.client``:
``http.client`` reads the response headers with one socket timeout *per read*, so a server trickling
its headers could hold it for hours; here the socket's timeout is set to the time left before every
read. (Resolving a host name is not bounded by the deadline: the system resolver has its own.)
"""
from __future__ import annotations

import copy
import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional
from urllib.parse import urlsplit

from ..error_base import A2ANbError
from ..protocol.bounded_json import loads_bounded
from ..protocol.safe_text import safe_text
from .keys import KeySet, SealError, parse_key_set

MAX_KEYS = 32
"""Most keys accepted in one JWKS (a key set holds a few: the current key and the next one)."""

PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")
"""JWK members that hold private or secret key material (RFC 7518 6.2.2, 6.3.2, 6.4.1)."""

MAX_CACHED_URIS = 256
"""Most URIs whose key sets one :class:`KeyTrust` keeps (the oldest is dropped first)."""

HEAD_LIMIT = 16 * 1024
"""Longest status line and headers accepted in an answer (a JWKS server sends a few hundred bytes)."""

_CHUNK = 16 * 1024


class UntrustedKeySource(A2ANbError, ValueError):
    """A key source refused, in one line: ``refused jwksUri https://evil.example/k.json: host evil.example
    is not on the trusted list (trusted: 127.0.0.1:8443)`` (made by :meth:`refused`)."""

    def __init__(self, message: str) -> None:
        super().__init__(safe_text(message, 500))  # one line, whatever a peer wrote into the URI

    @classmethod
    def refused(cls, source: str, reason: str) -> UntrustedKeySource:
        """``refused {source}: {reason}``, e.g. source ``jwksUri https://...`` or ``inline JWKS``."""
        return cls(f"refused {safe_text(source, 160)}: {reason}")


class KeyServerUnreachable(UntrustedKeySource):
    """The key server did not answer in time, could not be reached, or its TLS failed: the whole
    host:port is given up for a while, not only the URI."""


class _Refused(Exception):
    """A reason to refuse, raised deep in a fetch; :func:`fetch_jwks` adds the URI to it."""


class _Cache:
    """Fetched key sets (or failures) per URI, each until it expires; at most ``MAX_CACHED_URIS``. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def get(self, uri: str) -> Any:
        with self._lock:
            entry = self._sets.get(uri)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._sets[uri]
                return None
            return entry[1]

    def put(self, uri: str, jwks: Any, expires: float) -> None:
        with self._lock:
            self._sets[uri] = (expires, jwks)
            self._sets.move_to_end(uri)
            while len(self._sets) > MAX_CACHED_URIS:
                self._sets.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()


@dataclass(frozen=True)
class KeyTrust:
    """The Trusted JKU policy: where keys may come from (Profile: Security Metadata and Trust 1-3).

    ``allowed_hosts``: ``"host"`` (any port) or ``"host:port"``, e.g. ``("127.0.0.1:8443",)``; an IPv6
    host is written ``"[::1]:8443"``. ``ca_file``: the PEM file of the CAs that may sign a key server's
    certificate (``None``: the system's). ``trust_inline``: accept an inline ``jwks``, i.e. trust
    whoever could write the card, **the broker included**. ``timeout_s``: the deadline for a whole
    fetch. ``cache_s``: how long a fetched set is reused. ``failure_cache_s``: how long a failed
    fetch is not tried again (the URI, or the whole host:port when it did not answer).
    """

    allowed_hosts: tuple[str, ...] = ()
    ca_file: Optional[str] = None
    trust_inline: bool = False
    max_bytes: int = 64 * 1024
    timeout_s: float = 3.0
    cache_s: float = 300.0
    failure_cache_s: float = 30.0
    _cache: _Cache = field(default_factory=_Cache, init=False, repr=False, compare=False)
    _failures: _Cache = field(default_factory=_Cache, init=False, repr=False, compare=False)
    _fetching: dict[str, threading.Event] = field(default_factory=dict, init=False, repr=False, compare=False)
    _fetching_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allowed_hosts, str):  # ("a:1") without its comma is a string, not a tuple
            raise TypeError(f"allowed_hosts is a tuple of hosts: write ({self.allowed_hosts!r},)")
        if self.max_bytes <= 0 or self.timeout_s <= 0:
            raise ValueError("max_bytes and timeout_s must be positive")

    def allows(self, host: str, port: int) -> bool:
        """Is ``host`` (any port) or ``host:port`` on ``allowed_hosts``? Host names compare lower-case."""
        name = _host_name(host)
        listed = {entry.strip().lower() for entry in self.allowed_hosts}
        return bool(listed & {host.lower(), name, f"{name}:{port}"})

    def jwks_for(self, metadata: Mapping[str, Any], fetch: bool = True) -> dict[str, Any]:
        """The public key set that ``metadata`` (an Agent Card extension's params) points to.

        ``jwksUri`` wins when present: fetched under this policy, reused for ``cache_s``; refused or
        unreachable, it raises (the inline set is never a fallback), and so does every use for
        ``failure_cache_s``. ``fetch=False``: only what is cached (a thread that must not wait).
        Else the inline ``jwks``, only with ``trust_inline``. Raises :class:`UntrustedKeySource`.
        Thread-safe. A copy: the caller may change it, never what is cached.
        """
        return copy.deepcopy(self._trusted(metadata, fetch))

    def key_set_for(self, metadata: Mapping[str, Any], fetch: bool = True) -> KeySet:
        """As :meth:`jwks_for`, parsed: what sealing and opening use. Nothing is copied, and a set is
        parsed once (:func:`a2a_nb.ubsp.keys.parse_key_set`, by content), so a conversation pays the
        policy check and a dictionary lookup per message, not a JSON round trip."""
        jwks = self._trusted(metadata, fetch)
        try:
            return parse_key_set(jwks)
        except SealError as exc:
            raise UntrustedKeySource.refused("key set", str(exc)) from None

    def _trusted(self, metadata: Mapping[str, Any], fetch: bool) -> dict[str, Any]:
        """:meth:`jwks_for` without the copy (callers never change it)."""
        if not isinstance(metadata, Mapping):
            kind = type(metadata).__name__
            raise UntrustedKeySource.refused("key metadata", f"an object with jwksUri or jwks, not {kind}")
        if "jwksUri" in metadata:
            uri = metadata["jwksUri"]
            if not isinstance(uri, str):
                raise UntrustedKeySource.refused("jwksUri", f"a URI is a string, not {type(uri).__name__}")
            return self._fetched(uri, fetch)
        if "jwks" in metadata:
            return self._inline(metadata["jwks"])
        raise UntrustedKeySource.refused("key metadata", "it holds neither jwksUri nor jwks")

    def clear_cache(self) -> None:
        """Forget every fetched key set and every failure (e.g. after a key rotation, or once a key
        server is back): the next use fetches again."""
        self._cache.clear()
        self._failures.clear()

    def _fetched(self, uri: str, fetch: bool = True) -> dict[str, Any]:
        cached = self._cache.get(uri)
        if cached is None:
            origin = _origin(uri)
            failed = self._failures.get(uri) or (self._failures.get(origin) if origin else None)
            if failed is not None:
                raise UntrustedKeySource(f"{failed} (not tried again for {self.failure_cache_s:g} s)")
            if not fetch:
                raise UntrustedKeySource.refused(f"jwksUri {uri}", "its keys are not fetched yet, and this "
                                                 "thread does not fetch (an agent's network thread)")
            with self._fetching_lock:
                running = self._fetching.get(uri)
                if running is None:
                    self._fetching[uri] = threading.Event()
            if running is not None:  # another thread fetches it: one fetch, its outcome for both
                running.wait(self.timeout_s + 1.0)
                return self._fetched(uri, fetch)
            try:
                cached = fetch_jwks(uri, self)  # not under the cache's lock: a slow server blocks no other URI
                if self.cache_s > 0:
                    self._cache.put(uri, cached, time.monotonic() + self.cache_s)
            except UntrustedKeySource as exc:
                if self.failure_cache_s > 0:
                    until = time.monotonic() + self.failure_cache_s
                    self._failures.put(uri, str(exc), until)
                    if isinstance(exc, KeyServerUnreachable) and origin:
                        self._failures.put(origin, str(exc), until)
                raise
            finally:
                with self._fetching_lock:
                    self._fetching.pop(uri).set()
        return cached

    def _inline(self, jwks: Any) -> dict[str, Any]:
        if not self.trust_inline:
            raise UntrustedKeySource.refused("inline JWKS", "anyone who can write the card (the broker too) "
                                             "could have written it; trust it with KeyTrust(trust_inline=True), "
                                             "or publish a jwksUri")
        return checked_jwks(jwks, "inline JWKS")


def checked_jwks(value: Any, source: str = "JWKS") -> dict[str, Any]:
    """``value`` when it is a set of public keys: ``{"keys": [...]}`` with 1 to ``MAX_KEYS`` objects, each
    with a string ``kty`` and no private member (``d``, ``p``, ``q``, ``dp``, ``dq``, ``qi``, ``k``); else
    :class:`UntrustedKeySource` naming ``source``."""
    if not isinstance(value, dict) or not isinstance(value.get("keys"), list):
        raise UntrustedKeySource.refused(source, 'a JWKS is an object {"keys": [...]}')
    keys = value["keys"]
    if not 1 <= len(keys) <= MAX_KEYS:
        raise UntrustedKeySource.refused(source, f"a JWKS holds 1 to {MAX_KEYS} keys, this one {len(keys)}")
    for i, key in enumerate(keys):
        if not isinstance(key, dict) or not isinstance(key.get("kty"), str):
            raise UntrustedKeySource.refused(source, f"key {i} is not a JWK (an object with a string kty)")
        private = [member for member in PRIVATE_MEMBERS if member in key]
        if private:
            members = ", ".join(private)
            raise UntrustedKeySource.refused(source, f"a JWKS must hold public keys only (key {i} holds {members})")
    return value


# --- fetching a jwksUri -----------------------------------------------------------------------------------


class _Target(NamedTuple):
    """Where a ``jwksUri`` points: the host to connect to and check the certificate for, and the request."""

    host: str
    port: int
    host_header: str
    path: str

    def request(self) -> bytes:
        """HTTP/1.0, so the answer is never chunked: it ends with its Content-Length or when the server closes."""
        return (f"GET {self.path} HTTP/1.0\r\nHost: {self.host_header}\r\n"
                "Accept: application/jwk-set+json, application/json\r\nUser-Agent: a2a_nb\r\n\r\n").encode("ascii")


def fetch_jwks(uri: str, trust: KeyTrust) -> dict[str, Any]:
    """The public key set at ``uri``, fetched under ``trust`` (Profile: Security Metadata and Trust 3).

    Refused (:class:`UntrustedKeySource`): a URI that is not ``https://`` or whose host is not on
    ``trust.allowed_hosts``; a certificate not signed by ``trust.ca_file`` or not for that host; a
    redirect (never followed); a status other than 200; more than ``trust.max_bytes``; no complete
    answer within ``trust.timeout_s``; not JSON, or nested too deeply; not a set of public keys.
    """
    source = f"jwksUri {uri}"
    try:
        target = _trusted_target(uri, trust)
        value = _parsed(_get(target, trust, time.monotonic() + trust.timeout_s), trust.max_bytes)
    except _Refused as exc:
        raise UntrustedKeySource.refused(source, str(exc)) from None
    except ssl.SSLCertVerificationError as exc:
        raise KeyServerUnreachable.refused(source, f"TLS certificate verify failed ({exc.verify_message})") from None
    except ssl.SSLError as exc:
        raise KeyServerUnreachable.refused(source, f"TLS failed ({exc.reason or exc})") from None
    except TimeoutError:
        raise KeyServerUnreachable.refused(source, f"no complete answer within {trust.timeout_s:g} s") from None
    except OSError as exc:
        raise KeyServerUnreachable.refused(source, f"unreachable ({exc.strerror or type(exc).__name__})") from None
    return checked_jwks(value, source)


def _origin(uri: str) -> Optional[str]:
    """``host:port`` of a URI (the key of a failure that is the server's, not the path's), or None."""
    try:
        parts = urlsplit(uri)
        return f"{_host_name(parts.hostname)}:{parts.port or 443}" if parts.hostname else None
    except ValueError:
        return None


def _host_name(host: str) -> str:
    """``host`` as written in a URI and on the allow-list: lower-case, an IPv6 address in brackets."""
    return f"[{host.lower()}]" if ":" in host else host.lower()


def _trusted_target(uri: str, trust: KeyTrust) -> _Target:
    """Where ``uri`` points, when it is ``https://`` and its host is on the allow-list."""
    try:
        parts = urlsplit(uri)
        port = parts.port or 443
    except ValueError as exc:
        raise _Refused(f"not a URI ({exc})") from None
    if parts.scheme.lower() != "https":
        raise _Refused(f"only https:// is trusted, not {parts.scheme or 'a relative URI'}")
    host = parts.hostname
    if not host:
        raise _Refused("the URI names no host")
    if parts.username is not None or parts.password is not None:
        raise _Refused("a jwksUri holds no user name or password")
    shown = _host_name(host) + (f":{port}" if parts.port else "")
    if not trust.allows(host, port):
        listed = ", ".join(trust.allowed_hosts) or "none"
        raise _Refused(f"host {shown} is not on the trusted list (trusted: {listed})")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not all("!" <= ch <= "~" for ch in path):  # printable ASCII only: no space, CR or LF to forge a header
        raise _Refused("the path holds a character a URI must percent-encode")
    return _Target(host, port, shown, path)


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _get(target: _Target, trust: KeyTrust, deadline: float) -> bytes:
    """GET the target over TLS, certificate and host name checked, and return the body of a 200 answer."""
    context = ssl.create_default_context(cafile=trust.ca_file)  # verifies the certificate and the host name
    with socket.create_connection((target.host, target.port), timeout=_time_left(deadline)) as raw:
        raw.settimeout(_time_left(deadline))  # the TLS handshake, as a whole, within what is left
        with context.wrap_socket(raw, server_hostname=target.host) as tls:
            tls.sendall(target.request())
            head, start = _read_head(tls, deadline)
            status, headers = _parse_head(head)
            _check_status(status, headers)
            return _read_body(tls, deadline, start, _content_length(headers, trust.max_bytes), trust.max_bytes)


def _recv(tls: ssl.SSLSocket, deadline: float, most: int = _CHUNK) -> bytes:
    """One read that ends by the deadline: the socket's timeout is what is left of it."""
    tls.settimeout(_time_left(deadline))
    return tls.recv(most)


def _read_head(tls: ssl.SSLSocket, deadline: float) -> tuple[bytes, bytes]:
    """The status line and headers, and the first bytes of the body read with them."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise _Refused(f"the answer's headers are longer than {HEAD_LIMIT:,} bytes")
        chunk = _recv(tls, deadline)
        if not chunk:
            raise _Refused("the server closed the connection before its headers ended")
        data += chunk
    head, _, start = data.partition(b"\r\n\r\n")
    return head, start


_STATUS_LINE = re.compile(r"HTTP/1\.[01] ([0-9]{3})(?: .*)?")


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status code and the headers (names lower-case)."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    match = _STATUS_LINE.fullmatch(status_line)
    if match is None:
        raise _Refused(f"not an HTTP answer ({safe_text(status_line, 60)})")
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        name, value = name.strip().lower(), value.strip()
        if not colon or not name:
            raise _Refused(f"a malformed header ({safe_text(line, 60)})")
        if name == "content-length" and headers.get(name, value) != value:
            raise _Refused("two different Content-Length headers")
        headers[name] = value
    return int(match.group(1)), headers


def _check_status(status: int, headers: dict[str, str]) -> None:
    if 300 <= status < 400:
        location = safe_text(headers.get("location", "nowhere"), 100)
        raise _Refused(f"status {status}, a redirect to {location}: redirects are not followed")
    if status != 200:
        raise _Refused(f"status {status}, not 200")


def _content_length(headers: dict[str, str], max_bytes: int) -> Optional[int]:
    """The announced body length, refused when above ``max_bytes`` (before the body is read)."""
    if "transfer-encoding" in headers:
        raise _Refused(f"Transfer-Encoding {safe_text(headers['transfer-encoding'], 40)} in an answer to HTTP/1.0")
    text = headers.get("content-length")
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]{1,15}", text):
        raise _Refused(f"Content-Length {safe_text(text, 40)} is not a number of bytes")
    length = int(text)
    if length > max_bytes:
        raise _Refused(f"Content-Length {length:,} is more than the {max_bytes:,} bytes accepted")
    return length


def _read_body(tls: ssl.SSLSocket, deadline: float, start: bytes, length: Optional[int], max_bytes: int) -> bytes:
    """The body: ``length`` bytes, or (no Content-Length) all until the server closes, at most
    ``max_bytes + 1`` read, one more than accepted, to tell a body of exactly ``max_bytes`` from a longer one."""
    want = length if length is not None else max_bytes + 1
    body = bytearray(start[:want])
    while len(body) < want:
        chunk = _recv(tls, deadline, min(_CHUNK, want - len(body)))
        if not chunk:
            break
        body += chunk
    if length is None and len(body) > max_bytes:
        raise _Refused(f"the body is longer than the {max_bytes:,} bytes accepted")
    if length is not None and len(body) < length:
        raise _Refused(f"the body ended after {len(body):,} of its {length:,} bytes")
    return bytes(body)


def _parsed(body: bytes, max_bytes: int) -> Any:
    try:
        return loads_bounded(body, max_bytes=max_bytes)
    except ValueError as exc:
        raise _Refused(f"the body is {exc}") from None

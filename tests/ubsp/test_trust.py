"""The Trusted JKU policy (Profile: Security Metadata and Trust 1-3): which key sets ``KeyTrust`` believes.

Real HTTPS on loopback: a ``KeyServer``, and for answers it never gives (a redirect, not JSON, a trickle)
a test-local TLS server, ``RawTLSServer``. Nothing is mocked.
"""
from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from a2a_nb.mqtt.secure import make_certificates
from a2a_nb.ubsp import trust as trust_module
from a2a_nb.ubsp.key_server import KeyServer
from a2a_nb.ubsp.trust import PRIVATE_MEMBERS, KeyTrust, UntrustedKeySource

EC_KEY = {"kty": "EC", "crv": "P-256", "kid": "k1", "use": "enc",
          "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
JWKS = {"keys": [EC_KEY]}


@pytest.fixture
def server():
    with KeyServer() as key_server:
        yield key_server


Answer = Callable[[ssl.SSLSocket, threading.Event], None]


class RawTLSServer:
    """An HTTPS server of the test's own: reads a request, then ``answer`` writes any bytes, at any pace."""

    def __init__(self, folder, answer: Answer, hosts=("127.0.0.1",)):
        paths = make_certificates(folder, hosts=hosts)
        self.ca_file = str(paths["ca"])
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(paths["cert"], paths["key"])
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)  # the accept loop looks at `stop` ten times a second
        self.port = self.listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}/jwks/raw.json"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def trust(self, **kw) -> KeyTrust:
        return KeyTrust(**{"allowed_hosts": (f"127.0.0.1:{self.port}",), "ca_file": self.ca_file, **kw})

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(2)
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    request = b""
                    while b"\r\n\r\n" not in request:
                        request += tls.recv(4096) or b"\r\n\r\n"
                    self.answer(tls, self.stop)
            except OSError:  # the client hung up, or refused our certificate: the point of some tests
                pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def raw_server(tmp_path):
    """``raw_server(answer, hosts=...)`` starts a ``RawTLSServer``; each is closed after the test."""
    servers = []

    def start(answer: Answer, hosts=("127.0.0.1",)) -> RawTLSServer:
        folder = tmp_path / f"raw{len(servers)}"
        folder.mkdir()
        servers.append(RawTLSServer(folder, answer, hosts))
        return servers[-1]

    yield start
    for raw in servers:
        raw.close()


def sends(data: bytes) -> Answer:
    return lambda tls, stop: tls.sendall(data)


def refusal(trust: KeyTrust, metadata) -> str:
    with pytest.raises(UntrustedKeySource) as caught:
        trust.jwks_for(metadata)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("refused "), message
    return message


# --- fetched over verified TLS, then cached ---------------------------------------------------------------


def test_a_published_jwks_is_fetched_then_served_from_the_cache(server):
    """A published set is fetched over HTTPS once; the second call is served by the cache, without a request."""
    server.publish("weather", JWKS)
    trust = server.trust()
    first = trust.jwks_for({"jwksUri": server.url_for("weather")})
    first["keys"].clear()  # the caller's copy: the cached set is not changed
    assert trust.jwks_for({"jwksUri": server.url_for("weather")}) == JWKS
    assert server.requests_served == 1
    trust.clear_cache()
    assert trust.jwks_for({"jwksUri": server.url_for("weather")}) == JWKS
    assert server.requests_served == 2


def test_the_cache_expires_and_holds_a_bounded_number_of_uris(server, monkeypatch):
    """A cached set is fetched again after cache_s, and the oldest URI is dropped beyond MAX_CACHED_URIS."""
    monkeypatch.setattr(trust_module, "MAX_CACHED_URIS", 2)
    for agent in ("a", "b", "c"):
        server.publish(agent, JWKS)
    trust = server.trust(cache_s=0.3)
    for agent in ("a", "b", "c", "b", "c"):  # "a" dropped when "c" came; "b" and "c" still cached
        trust.jwks_for({"jwksUri": server.url_for(agent)})
    assert server.requests_served == 3
    trust.jwks_for({"jwksUri": server.url_for("a")})
    assert server.requests_served == 4
    time.sleep(0.4)
    trust.jwks_for({"jwksUri": server.url_for("a")})
    assert server.requests_served == 5


def test_concurrent_lookups_all_get_the_set(server):
    """jwks_for is safe to call from several threads at once."""
    server.publish("weather", JWKS)
    trust = server.trust()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(trust.jwks_for({"jwksUri": server.url_for("weather")})))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert results == [JWKS] * 8


# --- who may serve keys -----------------------------------------------------------------------------------


def test_a_host_not_on_the_list_is_refused_naming_host_and_list():
    """A jwksUri on a host not listed is refused, and the message names the host and the list."""
    trust = KeyTrust(allowed_hosts=("127.0.0.1:8443",))
    assert refusal(trust, {"jwksUri": "https://Evil.Example/k.json"}) == (
        "refused jwksUri https://Evil.Example/k.json: host evil.example is not on the trusted list "
        "(trusted: 127.0.0.1:8443)")
    assert "host 127.0.0.1:9999 is not on the trusted list" in refusal(trust, {"jwksUri": "https://127.0.0.1:9999/k"})
    assert "(trusted: none)" in refusal(KeyTrust(), {"jwksUri": "https://127.0.0.1:8443/k"})


def test_hosts_compare_lower_case_with_or_without_port():
    """A listed "host" allows any port, "host:port" only that one; case does not matter."""
    trust = KeyTrust(allowed_hosts=("Keys.Example", "127.0.0.1:8443", "[::1]:8443"))
    assert trust.allows("keys.example", 443) and trust.allows("KEYS.example", 8443)
    assert trust.allows("127.0.0.1", 8443) and not trust.allows("127.0.0.1", 443)
    assert trust.allows("::1", 8443) and not trust.allows("::1", 443)
    with pytest.raises(TypeError, match="tuple"):
        KeyTrust(allowed_hosts="127.0.0.1:8443")  # type: ignore[arg-type]


def test_only_https_is_trusted(server):
    """An http:// jwksUri is refused, even on a listed host and port."""
    message = refusal(server.trust(), {"jwksUri": f"http://{server.host_port}/jwks/weather.json"})
    assert message.endswith("only https:// is trusted, not http")


def test_a_certificate_from_another_ca_is_refused(server):
    """A listed host whose certificate our CA did not sign is refused: the certificate is verified."""
    with KeyServer() as other:
        other.publish("weather", JWKS)
        trust = server.trust(allowed_hosts=(other.host_port,))  # the other host listed, but our CA
        message = refusal(trust, {"jwksUri": other.url_for("weather")})
    assert "TLS certificate verify failed (unable to get local issuer certificate)" in message


def test_a_certificate_for_another_host_name_is_refused(raw_server):
    """A certificate from the trusted CA, but not for the host connected to, is refused: the name is verified."""
    raw = raw_server(sends(b"HTTP/1.0 200 OK\r\n\r\n" + b'{"keys": [{"kty": "EC"}]}'), hosts=("localhost",))
    message = refusal(raw.trust(), {"jwksUri": raw.url})
    assert "TLS certificate verify failed (IP address mismatch" in message


def test_localhost_and_127_0_0_1_are_different_hosts(server):
    """The allow-list compares names as written: localhost is refused unless listed, then accepted."""
    server.publish("weather", JWKS)
    by_name = server.url_for("weather").replace("127.0.0.1", "localhost")
    port = server.host_port.split(":")[1]
    assert f"host localhost:{port} is not on the trusted list" in refusal(server.trust(), {"jwksUri": by_name})
    assert server.trust(allowed_hosts=(f"localhost:{port}",)).jwks_for({"jwksUri": by_name}) == JWKS


# --- what the server answers ------------------------------------------------------------------------------


def test_an_unknown_path_is_refused_naming_the_status(server):
    """A 404 (never published, or removed) is refused, naming the status."""
    assert refusal(server.trust(), {"jwksUri": server.url_for("nobody")}).endswith("status 404, not 200")
    server.publish("weather", JWKS)
    server.remove("weather")
    assert "status 404" in refusal(server.trust(), {"jwksUri": server.url_for("weather")})


def test_a_redirect_is_refused_and_not_followed(server, raw_server, tmp_path):
    """A 302 is refused, naming status and target, and the target (a trusted, working server) is never asked."""
    server.publish("weather", JWKS)
    target = server.url_for("weather")
    raw = raw_server(sends(f"HTTP/1.0 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n".encode()))
    both_cas = tmp_path / "both.pem"  # both servers trusted: only the redirect itself is refused
    both_cas.write_text(Path(raw.ca_file).read_text() + Path(server.ca_file).read_text())
    trust = raw.trust(allowed_hosts=(f"127.0.0.1:{raw.port}", server.host_port), ca_file=str(both_cas))
    assert trust.jwks_for({"jwksUri": target}) == JWKS  # the target itself is trusted ...
    trust.clear_cache()
    message = refusal(trust, {"jwksUri": raw.url})
    assert message.endswith(f"status 302, a redirect to {target}: redirects are not followed")
    assert server.requests_served == 1  # ... but was asked only by the direct fetch above


def test_a_content_length_above_max_bytes_is_refused_before_reading(server):
    """A set of 1,000 keys (over 64 KiB) is refused by its Content-Length."""
    big = {"keys": [{"kty": "RSA", "kid": f"k{i}", "e": "AQAB", "n": "n" * 342} for i in range(1000)]}
    server.publish("big", big)
    message = refusal(server.trust(), {"jwksUri": server.url_for("big")})
    assert "is more than the 65,536 bytes accepted" in message and "Content-Length 3" in message


def test_a_body_without_content_length_is_cut_at_max_bytes(raw_server):
    """Without a Content-Length, reading stops one byte past max_bytes, and the body is refused."""
    raw = raw_server(sends(b"HTTP/1.0 200 OK\r\n\r\n" + b" " * 5000))
    assert refusal(raw.trust(max_bytes=1000), {"jwksUri": raw.url}).endswith(
        "the body is longer than the 1,000 bytes accepted")


def test_a_trickling_server_is_refused_within_the_deadline(raw_server):
    """A server sending one byte every 0.5 s is refused once timeout_s has passed, not kept on."""
    def trickle(tls, stop):
        tls.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
        while not stop.wait(0.5):
            tls.sendall(b" ")

    raw = raw_server(trickle)
    started = time.monotonic()
    message = refusal(raw.trust(timeout_s=1.5), {"jwksUri": raw.url})
    elapsed = time.monotonic() - started
    assert message.endswith("no complete answer within 1.5 s")
    assert 1.4 < elapsed < 2.5, elapsed


def test_a_server_trickling_its_headers_is_refused_within_the_deadline(raw_server):
    """The deadline covers the headers too: a status line sent one byte at a time cannot hold the fetch."""
    def trickle(tls, stop):
        for byte in b"HTTP/1.0 200 OK\r\nX-Slow: " + b"x" * 100:
            if stop.wait(0.3):
                return
            tls.sendall(bytes([byte]))

    raw = raw_server(trickle)
    started = time.monotonic()
    assert "no complete answer within 1 s" in refusal(raw.trust(timeout_s=1.0), {"jwksUri": raw.url})
    assert time.monotonic() - started < 2.0


def test_an_unreachable_port_is_refused_quickly():
    """Nothing listening: refused at once, naming the OS error."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free once the probe closes
    started = time.monotonic()
    message = refusal(KeyTrust(allowed_hosts=(f"127.0.0.1:{port}",)), {"jwksUri": f"https://127.0.0.1:{port}/k"})
    assert message.endswith("unreachable (Connection refused)")
    assert time.monotonic() - started < 1.0


# --- what the body holds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("member", PRIVATE_MEMBERS)
def test_a_key_with_a_private_member_is_refused(server, member):
    """A JWKS holding private key material (d, p, q, dp, dq, qi or k) is refused."""
    server.publish("leaky", {"keys": [EC_KEY, {**EC_KEY, member: "c2VjcmV0"}]})
    message = refusal(server.trust(), {"jwksUri": server.url_for("leaky")})
    assert message.endswith(f"a JWKS must hold public keys only (key 1 holds {member})")


def test_a_body_that_is_not_json_is_refused(raw_server):
    """A 200 whose body is not JSON is refused, saying so."""
    raw = raw_server(sends(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nnot json!"))
    assert "the body is not JSON (Expecting value at column 1)" in refusal(raw.trust(), {"jwksUri": raw.url})


def test_json_nested_too_deeply_is_refused(server):
    """A key set nested 100 levels deep is refused by the kit's bounded JSON parser."""
    deep: list = []
    for _ in range(100):
        deep = [deep]
    server.publish("deep", {"keys": [{**EC_KEY, "x5c": deep}]})
    assert refusal(server.trust(), {"jwksUri": server.url_for("deep")}).endswith(
        "the body is nested more than 64 levels deep")


@pytest.mark.parametrize("jwks, reason", [
    ([EC_KEY], 'a JWKS is an object {"keys": [...]}'),
    ({"keys": []}, "a JWKS holds 1 to 32 keys, this one 0"),
    ({"keys": [EC_KEY] * 33}, "a JWKS holds 1 to 32 keys, this one 33"),
    ({"keys": [{"kty": 1}]}, "key 0 is not a JWK (an object with a string kty)"),
])
def test_a_jwks_of_the_wrong_shape_is_refused(server, jwks, reason):
    """Not an object with 1 to 32 keys, each with a string kty: refused."""
    server.publish("odd", jwks)
    assert refusal(server.trust(), {"jwksUri": server.url_for("odd")}).endswith(reason)


# --- inline sets, and no fallback -------------------------------------------------------------------------


def test_an_inline_jwks_is_refused_unless_trust_inline():
    """An inline jwks is what the broker could have written: refused by default, accepted with trust_inline."""
    assert refusal(KeyTrust(), {"jwks": JWKS}).startswith("refused inline JWKS: anyone who can write the card")
    inline = KeyTrust(trust_inline=True)
    assert inline.jwks_for({"jwks": JWKS}) == JWKS
    assert refusal(inline, {"jwks": {"keys": [{**EC_KEY, "d": "c2VjcmV0"}]}}).startswith("refused inline JWKS: ")
    assert refusal(inline, {}) == "refused key metadata: it holds neither jwksUri nor jwks"


def test_a_refused_or_unreachable_jwks_uri_never_falls_back_to_the_inline_set():
    """With trust_inline, a jwksUri that is refused or unreachable still raises: the inline set is not used."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    trust = KeyTrust(allowed_hosts=(f"127.0.0.1:{port}",), trust_inline=True)
    assert "not on the trusted list" in refusal(trust, {"jwksUri": "https://evil.example/k.json", "jwks": JWKS})
    assert "unreachable" in refusal(trust, {"jwksUri": f"https://127.0.0.1:{port}/k.json", "jwks": JWKS})


def test_a_peer_cannot_break_the_message_into_lines():
    """Control characters a peer puts in a jwksUri are shown escaped: the message stays one line."""
    message = refusal(KeyTrust(), {"jwksUri": "https://evil.example/\x1b[2J\r\x85k"})
    assert "\\x1b[2J" in message and "\x1b" not in message and "\x85" not in message


# --- the key server itself ---------------------------------------------------------------------------------


def test_the_key_server_answers_get_only(server):
    """GET of a published path: 200 and application/jwk-set+json; another path: 404; another method: 405."""
    server.publish("weather", JWKS)
    context = ssl.create_default_context(cafile=server.ca_file)
    host, port = server.host_port.split(":")
    answers = []
    for method, path in (("GET", "/jwks/weather.json"), ("GET", "/jwks/other.json"), ("POST", "/jwks/weather.json")):
        conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=5)
        try:
            conn.request(method, path)
            response = conn.getresponse()
            answers.append((response.status, response.getheader("Content-Type")))
            response.read()
        finally:
            conn.close()
    assert answers[0] == (200, "application/jwk-set+json")
    assert [status for status, _ in answers[1:]] == [404, 405]
    assert server.url_for("a b/c") == f"https://{server.host_port}/jwks/a%20b%2Fc.json"
    assert repr(server) == f"<KeyServer https://{server.host_port} serving 1 key set>"


# --- failures remembered; a thread that must not wait never fetches (issue 35 item 4) ---------------------


def hangs(tls, stop):
    stop.wait(30)  # reads the request, answers nothing


def test_a_failure_is_remembered_for_the_uri_and_a_silent_server_for_its_host_port(raw_server):
    """A server that never answers costs one ``timeout_s``; the same URI, or another path on that
    host:port, is refused at once for ``failure_cache_s``, naming the first failure; clear_cache retries."""
    raw = raw_server(hangs)
    trust = raw.trust(timeout_s=1.0)
    assert "no complete answer within 1 s" in refusal(trust, {"jwksUri": raw.url})
    for uri in (raw.url, raw.url.replace("raw.json", "other.json")):
        started = time.monotonic()
        message = refusal(trust, {"jwksUri": uri})
        assert "no complete answer within 1 s (not tried again for 30 s)" in message
        assert time.monotonic() - started < 0.5
    trust.clear_cache()
    started = time.monotonic()
    refusal(trust, {"jwksUri": raw.url})
    assert time.monotonic() - started >= 0.9  # fetched again


def test_a_refused_answer_is_remembered_for_its_uri_only(server):
    """A 404 is the URI's failure, not the server's: another URI on it is still fetched."""
    trust = server.trust()
    server.publish("weather", JWKS)
    assert "status 404" in refusal(trust, {"jwksUri": server.url_for("nobody")})
    assert "status 404" in refusal(trust, {"jwksUri": server.url_for("nobody")})
    assert server.requests_served == 1
    assert trust.jwks_for({"jwksUri": server.url_for("weather")}) == JWKS


def test_concurrent_lookups_of_a_silent_server_make_one_fetch(raw_server):
    raw = raw_server(hangs)
    trust = raw.trust(timeout_s=1.0)
    messages: list = []

    def look() -> None:
        try:
            trust.jwks_for({"jwksUri": raw.url})
        except UntrustedKeySource as exc:
            messages.append(str(exc))

    threads = [threading.Thread(target=look) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(messages) == 6 and all("no complete answer within 1 s" in m for m in messages)
    assert sum("not tried again" not in m for m in messages) == 1  # one fetched; five read its outcome


def test_a_lookup_that_must_not_wait_uses_the_cache_only(server):
    """``fetch=False`` (an agent's network thread): refused at once when the set is not cached, the
    cached set once another thread fetched it."""
    server.publish("weather", JWKS)
    trust = server.trust()
    uri = server.url_for("weather")
    assert "not fetched yet" in refusal_nowait(trust, uri) and server.requests_served == 0
    assert trust.jwks_for({"jwksUri": uri}) == JWKS
    assert trust.jwks_for({"jwksUri": uri}, fetch=False) == JWKS and server.requests_served == 1


def refusal_nowait(trust: KeyTrust, uri: str) -> str:
    with pytest.raises(UntrustedKeySource) as caught:
        trust.jwks_for({"jwksUri": uri}, fetch=False)
    return str(caught.value)

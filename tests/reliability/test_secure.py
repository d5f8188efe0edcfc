"""The secured broker (TLS, a password per agent, identity-derived ACLs) and bearer tokens.

* Only TLS clients with valid credentials get in; the broker ties the Client ID to the username.
* An intruder with the valid credentials of another agent can neither read other agents' requests
  or replies (so neither their bearer tokens) nor publish or delete another agent's card.
* The story runs unchanged over TLS, each agent with its own login.
* A responder with a ``BearerPolicy`` refuses missing, expired, foreign, mis-addressed, under-scoped
  and forged tokens before any processing, refuses tokens on a non-TLS connection, and never echoes
  a token (checked on all traffic with an observer account that may read ``$a2a/#``).
"""
from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import uuid

import paho.mqtt.client as mqtt
import pytest

from a2a_nb.agents.auth import (PERMISSION_DENIED, UNAUTHENTICATED, BearerPolicy, LocalIssuer, auth_reason,
                                required_scopes_from_card)
from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder
from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.secure import SecureBroker, acl_text, hash_password, verify_password, write_password_file
from a2a_nb.mqtt.session import Session, SessionError, Subscription, paho_client
from a2a_nb.protocol import cards, errors, properties, states
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.scenarios import run_scenario
from tests.helpers import uid

ORG, UNIT = "acme", "support"
FAST = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.1,))
SCOPE = "tickets.analyze"


@pytest.fixture(scope="module")
def secure_broker():
    broker = SecureBroker().start()
    yield broker
    broker.stop()


class Observer:
    """Every message on ``$a2a/#`` (the broker's ``recorder`` account may read everything)."""

    def __init__(self, endpoint: BrokerEndpoint, agent: str = "recorder"):
        self.messages: list[MqttMessage] = []
        self.lock = threading.Lock()
        self.session = Session(ORG, UNIT, agent, broker=endpoint)
        self.session.subscribe(Subscription("$a2a/#", qos=1, retain_handling=2), handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self.lock:
            self.messages.append(m)

    def snapshot(self) -> list[MqttMessage]:
        time.sleep(0.2)
        with self.lock:
            return list(self.messages)


def raw_client(endpoint: BrokerEndpoint, client_id: str, on_message=None) -> mqtt.Client:
    """A plain paho client (outside the kit's one-session-per-Client-ID registry)."""
    c = paho_client(endpoint, client_id)
    connected = threading.Event()
    c.on_connect = lambda *a: connected.set()
    if on_message:
        c.on_message = on_message
    c.connect(endpoint.host, endpoint.port)
    c.loop_start()
    assert connected.wait(5)
    return c


def ticket_card(agent: str) -> dict:
    return cards.agent_card(
        name="Secured desk", description="needs a token", version="1.0.0", org=ORG, unit=UNIT, agent=agent,
        skills=[cards.skill("rca", "Root cause", "finds root causes", ["secured-test"])],
        security_schemes={"oauth": cards.oauth2_scheme("https://auth.acme.example/token", {SCOPE: "analyze tickets"})},
        security_requirements=[cards.requirement("oauth", [SCOPE])])


# -- the broker's front door ---------------------------------------------------------------------------
def test_only_tls_clients_with_valid_credentials_connect(secure_broker):
    ep = secure_broker.credentials("echo")
    assert ep.tls and ep.ca_file and ep.username == "acme/support/echo"
    with Session(ORG, UNIT, "echo", broker=ep) as ok:
        assert ok.connected
    # Mosquitto 2.0.11 answers a missing and a wrong password over MQTT v5 alike: CONNACK 135
    # Not authorized, never 134 Bad user name or password (lesson 08 and the glossary say so)
    with pytest.raises(SessionError, match="Not authorized") as no_password:
        Session(ORG, UNIT, "anon", broker=BrokerEndpoint(port=secure_broker.port, tls=True,
                                                         ca_file=ep.ca_file, inflight=0))
    assert no_password.value.reason_code == 135
    with pytest.raises(SessionError, match="Not authorized") as wrong_password:
        Session(ORG, UNIT, "echo", broker=ep.with_credentials(ep.username, "not-the-password"))
    assert wrong_password.value.reason_code == 135
    with pytest.raises(SessionError, match="Not authorized") as unknown_user:
        Session(ORG, UNIT, "nobody", broker=ep.with_credentials(f"{ORG}/{UNIT}/nobody", "guess"))
    assert unknown_user.value.reason_code == 135
    plain = BrokerEndpoint(port=secure_broker.port, username=ep.username, password=ep.password, inflight=0)
    with pytest.raises(SessionError):  # no TLS: the handshake never completes, no CONNACK
        Session(ORG, UNIT, "echo", broker=plain, connect_timeout=1.5)
    # a client that does not trust the broker's CA refuses the broker
    ctx = ssl.create_default_context()
    with pytest.raises(ssl.SSLError):
        import socket

        with socket.create_connection(("127.0.0.1", secure_broker.port), timeout=2) as sock:
            ctx.wrap_socket(sock, server_hostname="127.0.0.1")


def test_client_id_is_bound_to_the_login(secure_broker):
    """An intruder that sends the desk's Client ID gets its own username as Client ID instead:
    it cannot take over the desk's session nor its topic rights."""
    desk = uid("desk")
    responder = Responder(desk, lambda ctx: ctx.complete("real desk"), broker=secure_broker.credentials(desk))
    stolen = []
    intruder = raw_client(secure_broker.credentials("mallory"), f"{ORG}/{UNIT}/{desk}",
                          on_message=lambda c, u, m: stolen.append(m.topic))
    intruder.subscribe(f"$a2a/v1/request/{ORG}/{UNIT}/{desk}", qos=1)
    time.sleep(0.2)
    requester = Requester("coordinator", broker=secure_broker.credentials("coordinator"), retry=FAST)
    assert requester.send(desk, "hello").text == "real desk"
    assert responder.session.connect_count == 1, "the desk was kicked off by the intruder's Client ID"
    assert stolen == []
    assert f"as {ORG}/{UNIT}/mallory" in secure_broker.log_text()
    intruder.disconnect()
    intruder.loop_stop()


def test_password_file_in_python_works_with_mosquitto(tmp_path):
    """The fallback hasher (no mosquitto_passwd) writes hashes Mosquitto accepts."""
    line = hash_password("pw", salt=b"0123456789ab")
    assert line.startswith("$7$101$") and verify_password("pw", line) and not verify_password("px", line)
    assert write_password_file(tmp_path / "p", {"acme/support/a": "x"}, use_tool=False) == "python"
    broker = SecureBroker(cast=("echo",), pools={}, observers=(), use_mosquitto_passwd=False).start()
    try:
        assert broker.hasher == "python"
        with Session(ORG, UNIT, "echo", broker=broker.credentials("echo")) as s:
            assert s.connected
        # accounts made after the start: the broker reloads its files
        with Session(ORG, UNIT, "late-joiner", broker=broker.credentials("late-joiner")) as s:
            assert s.connected and broker.reloads == 1
        mosq_line = (broker.files["passwd"]).read_text().splitlines()[0]
        assert mosq_line.split(":", 1)[1].startswith("$7$")
    finally:
        broker.stop()
    assert not broker.folder.exists()  # keys and passwords do not outlive the broker


def test_acl_text_names_identity_patterns():
    text = acl_text(["acme/support/a"], {"p": ["acme/support/a"]}, ["acme/support/a"])
    assert "pattern read $a2a/v1/request/%u" in text and "pattern read $a2a/v1/reply/%u/#" in text
    assert "pattern write $a2a/v1/discovery/%u" in text
    assert "topic read $a2a/v1/request/acme/support/pool/p" in text and "topic read $a2a/#" in text


# -- an intruder with valid credentials -----------------------------------------------------------------
def test_intruder_cannot_read_other_agents_requests_or_replies(secure_broker):
    issuer = LocalIssuer()
    desk = uid("desk")
    Responder(desk, lambda ctx: ctx.complete("confidential answer"), broker=secure_broker.credentials(desk),
              auth=issuer.policy(f"{ORG}/{UNIT}/{desk}", [SCOPE]))
    token = issuer.token(f"{ORG}/{UNIT}/{desk}", [SCOPE])
    seen: list[MqttMessage] = []
    intruder = Session(ORG, UNIT, "mallory", broker=secure_broker.credentials("mallory"))
    # Mosquitto acknowledges these SUBSCRIBEs, then checks every delivery against the ACL
    for f in ("$a2a/#", "$a2a/v1/reply/#", f"$a2a/v1/reply/{ORG}/{UNIT}/coordinator/#",
              f"$a2a/v1/request/{ORG}/{UNIT}/{desk}", "$a2a/v1/request/#"):
        intruder.subscribe(f, handler=seen.append)
    requester = Requester("coordinator", broker=secure_broker.credentials("coordinator"), token=token, retry=FAST)
    reply = requester.send(desk, "the secret ticket")
    assert reply.state == states.COMPLETED and "confidential" in reply.text
    time.sleep(0.3)
    leaked = [m.topic for m in seen if "/request/" in m.topic or "/reply/" in m.topic]
    assert leaked == [], leaked
    assert not any(token in (m.payload.decode("utf-8", "replace") + str(m.user_properties)) for m in seen)
    # pool topics: only members read them
    pool_seen: list[MqttMessage] = []
    intruder.subscribe(f"$a2a/v1/request/{ORG}/{UNIT}/pool/analysts", handler=pool_seen.append)
    with Session(ORG, UNIT, "analyst-analysts-1", broker=secure_broker.credentials("analyst-analysts-1")) as member:
        member_seen: list[MqttMessage] = []
        member.subscribe(f"$a2a/v1/request/{ORG}/{UNIT}/pool/analysts", handler=member_seen.append)
        requester.session.publish(MqttMessage(f"$a2a/v1/request/{ORG}/{UNIT}/pool/analysts", b"{}"))
        time.sleep(0.3)
        assert len(member_seen) == 1 and pool_seen == []


def test_intruder_cannot_fake_or_delete_another_agents_card(secure_broker):
    desk = uid("desk")
    card = ticket_card(desk)
    responder = Responder(desk, lambda ctx: ctx.complete("ok"), card=card, broker=secure_broker.credentials(desk))
    topic = responder.discovery_topic
    intruder = Session(ORG, UNIT, "mallory", broker=secure_broker.credentials("mallory"))
    fake = dict(card, name="Totally the real desk", description="send me your tickets")
    denied = intruder.publish(MqttMessage(topic, encode_json(fake), retain=True,
                                          user_properties=properties.presence_properties("online", "agent")))
    assert denied.reason_code == 135  # Not authorized
    assert intruder.publish(MqttMessage(topic, b"", retain=True)).reason_code == 135  # no retained delete
    # its own card is fine
    own = intruder.publish(MqttMessage(f"$a2a/v1/discovery/{ORG}/{UNIT}/mallory", encode_json(fake), retain=True))
    assert own.accepted
    with Discovery(broker=secure_broker.credentials("discovery"), agent="discovery") as disco:
        entry = disco.wait_for(desk, status=properties.ONLINE)
        assert entry.card["name"] == "Secured desk"
    intruder.publish(MqttMessage(f"$a2a/v1/discovery/{ORG}/{UNIT}/mallory", b"", retain=True))


# -- the story over TLS ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", ["happy", "pool"])
def test_story_runs_over_tls_with_one_login_per_agent(secure_broker, scenario):
    result = run_scenario(scenario, secure_broker.credentials, say=lambda line: None, seed=None)
    assert result.ok, (result.observed, result.final_state, result.steps)
    assert result.final_state == states.COMPLETED and result.report is not None


# -- bearer tokens ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def issuer():
    return LocalIssuer()


@pytest.fixture
def guarded(secure_broker, issuer):
    """A desk whose card requires SCOPE, its policy built from that card, and an observer."""
    desk = uid("guarded")
    card = ticket_card(desk)
    policy = BearerPolicy.from_card(card, issuer=issuer.issuer, audience=f"{ORG}/{UNIT}/{desk}",
                                    key=issuer.public_key)
    responder = Responder(desk, lambda ctx: ctx.complete(f"analysed: {ctx.text}"), card=card,
                          broker=secure_broker.credentials(desk), auth=policy)
    observer = Observer(secure_broker.credentials("recorder"))
    return responder, policy, observer


def _send(broker: SecureBroker, desk: str, token):
    requester = Requester("coordinator", broker=broker.credentials("coordinator"), token=token, retry=FAST)
    try:
        return requester.send(desk, "analyze TCK-4821")
    finally:
        requester.close()


def test_policy_scopes_come_from_the_card():
    card = ticket_card("x")
    assert required_scopes_from_card(card) == [frozenset({SCOPE})]
    assert BearerPolicy.from_card(card, issuer="i", audience="a", key="secret").scope_sets == [frozenset({SCOPE})]


BAD_TOKENS = {
    "expired": (lambda iss, aud: iss.token(aud, [SCOPE], lifetime_s=-60), UNAUTHENTICATED, "expired"),
    "wrong issuer": (lambda iss, aud: iss.token(aud, [SCOPE], issuer="https://evil.example"), UNAUTHENTICATED, "iss"),
    "wrong audience": (lambda iss, aud: iss.token("acme/support/someone-else", [SCOPE]), UNAUTHENTICATED, "aud"),
    "missing scope": (lambda iss, aud: iss.token(aud, ["tickets.read"]), PERMISSION_DENIED, SCOPE),
    "no scope at all": (lambda iss, aud: iss.token(aud, []), PERMISSION_DENIED, SCOPE),
    "bad signature": (lambda iss, aud: LocalIssuer(issuer=iss.issuer, kid=iss.kid).token(aud, [SCOPE]),
                      UNAUTHENTICATED, "signature"),
    "tampered": (lambda iss, aud: _tamper(iss.token(aud, [SCOPE])), UNAUTHENTICATED, "signature"),
    "not a JWT": (lambda iss, aud: "not-a-jwt", UNAUTHENTICATED, "JWT"),
    "unsigned (alg none)": (lambda iss, aud: _unsigned(aud), UNAUTHENTICATED, "algorithm"),
    "missing": (lambda iss, aud: None, UNAUTHENTICATED, "requires"),
}


def _tamper(token: str) -> str:
    import base64

    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["scope"] = SCOPE + " admin"
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{sig}"


def _unsigned(aud: str) -> str:
    import jwt

    return jwt.encode({"iss": "https://auth.acme.example", "aud": aud, "exp": int(time.time()) + 60,
                       "scope": SCOPE}, key=None, algorithm="none")


def test_good_token_is_accepted_and_never_echoed(secure_broker, issuer, guarded):
    responder, policy, observer = guarded
    token = issuer.token(f"{ORG}/{UNIT}/{responder.agent}", [SCOPE, "tickets.read"])
    reply = _send(secure_broker, responder.agent, token)
    assert reply.state == states.COMPLETED and reply.text.startswith("analysed")
    assert policy.checked == 1 and policy.refused == 0
    _assert_never_echoed(observer, token)


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
def test_bad_tokens_are_refused_before_any_processing(secure_broker, issuer, guarded, case):
    responder, policy, observer = guarded
    make, reason, hint = BAD_TOKENS[case]
    token = make(issuer, f"{ORG}/{UNIT}/{responder.agent}")
    with pytest.raises(A2AError) as info:
        _send(secure_broker, responder.agent, token)
    err = info.value
    assert err.code == errors.INVALID_REQUEST and auth_reason(err) == reason, err
    assert hint in err.message
    assert errors.classify(err).retry_eligible is False
    # never processed: no task, no handler run
    assert responder.stats.executions == 0 and len(responder.runtime.store) == 0
    assert policy.refused == 1
    if token:
        _assert_never_echoed(observer, token)


def test_two_authorization_properties_are_a_transport_error(secure_broker, issuer, guarded):
    responder, policy, observer = guarded
    good = issuer.token(f"{ORG}/{UNIT}/{responder.agent}", [SCOPE])
    session = Session(ORG, UNIT, "coordinator", broker=secure_broker.credentials("coordinator"))
    got = []
    reply_topic = f"$a2a/v1/reply/{ORG}/{UNIT}/coordinator/dup-auth"
    session.subscribe(reply_topic, handler=got.append)
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": str(uuid.uuid4())}}
    session.publish(MqttMessage(responder.request_topic, encode_json(body), response_topic=reply_topic,
                                correlation_data=b"d", user_properties=(properties.bearer(good),
                                                                        properties.bearer(good))))
    deadline = time.time() + 3
    while not got and time.time() < deadline:
        time.sleep(0.02)
    err = json.loads(got[0].payload)["error"]
    assert err["code"] == -32005 and err["data"]["a2a_error"] == "transport_protocol_error"
    _assert_never_echoed(observer, good)


def test_jwks_policy_picks_the_key_by_kid(secure_broker, issuer):
    desk = uid("jwks")
    responder = Responder(desk, lambda ctx: ctx.complete("ok"), broker=secure_broker.credentials(desk),
                          auth=issuer.policy(f"{ORG}/{UNIT}/{desk}", [SCOPE], use_jwks=True))
    assert _send(secure_broker, desk, issuer.token(f"{ORG}/{UNIT}/{desk}", [SCOPE])).state == states.COMPLETED
    stranger = LocalIssuer(issuer=issuer.issuer)  # same issuer name, a key id the set does not have
    with pytest.raises(A2AError, match="key id"):
        _send(secure_broker, desk, stranger.token(f"{ORG}/{UNIT}/{desk}", [SCOPE]))
    assert responder.stats.executions == 1


def test_tokens_on_a_connection_without_tls_are_refused(broker_url, issuer):
    """The shared test broker is plain MQTT: a responder on it refuses even a perfectly valid token."""
    desk = uid("plain-desk")
    policy = issuer.policy(f"{ORG}/{UNIT}/{desk}", [SCOPE])
    responder = Responder(desk, lambda ctx: ctx.complete("should not run"), broker=broker_url, auth=policy)
    assert not responder.session.endpoint.tls
    token = issuer.token(f"{ORG}/{UNIT}/{desk}", [SCOPE])
    with pytest.raises(ValueError, match="TLS"):
        Requester(uid("coordinator"), broker=broker_url, token=token, retry=FAST)
    requester = Requester(uid("coordinator"), broker=broker_url, token=token, retry=FAST,
                          allow_token_without_tls=True)
    with pytest.raises(A2AError) as info:
        requester.send(desk, "over plain MQTT")
    assert auth_reason(info.value) == UNAUTHENTICATED and "TLS" in info.value.message
    assert token not in json.dumps(info.value.to_dict())
    reply = info.value.reply  # type: ignore[attr-defined]
    assert token not in reply.mqtt.payload.decode() and not any(
        k.lower() == properties.AUTHORIZATION for k, _ in reply.mqtt.user_properties)
    assert responder.stats.executions == 0 and len(responder.runtime.store) == 0


def _assert_never_echoed(observer: Observer, token: str) -> None:
    """The token appears only where the requester put it: in a2a-authorization on request topics."""
    msgs = observer.snapshot()
    assert any(m.topic.startswith("$a2a/v1/request/") for m in msgs), "the observer saw no request"
    for m in msgs:
        in_props = any(token in v for _, v in m.user_properties)
        in_payload = token.encode() in m.payload
        if m.topic.startswith("$a2a/v1/request/"):
            assert not in_payload
            continue
        assert not in_props and not in_payload, f"token echoed on {m.topic}"
        assert not any(k.lower() == properties.AUTHORIZATION for k, _ in m.user_properties), m.topic
    # what a recording shows: redacted
    for m in msgs:
        assert token not in str(properties.redact(m.user_properties))


# -- the command line ------------------------------------------------------------------------------------
def test_cli_broker_secure_prints_the_mqtts_url_first():
    proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "broker", "--secure"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("mqtts://127.0.0.1:") and "ca=" in first
        notes = "".join(proc.stderr.readline() for _ in range(5))
        assert "credentials.json" in notes and "ca.crt" in notes and "acl" in notes
        ep = BrokerEndpoint.from_url(first)
        folder = os.path.dirname(ep.ca_file)
        users = json.load(open(os.path.join(folder, "credentials.json")))["users"]
        with Session(ORG, UNIT, "coordinator", broker=ep.with_credentials("acme/support/coordinator",
                                                                          users["acme/support/coordinator"])) as s:
            assert s.connected
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_agent_using_another_agents_login_is_told_so(secure_broker):
    before = secure_broker.log_text().count("New connection from")
    with pytest.raises(SessionError, match="credentials") as refused:
        Session(ORG, UNIT, "mallory", broker=secure_broker.credentials("echo"))
    assert refused.value.reason_code is None, "the kit refused it, not the broker"
    assert secure_broker.log_text().count("New connection from") == before, "nothing reached the broker"


def test_the_benchmarks_raw_paho_floor_logs_in_with_the_urls_user_and_tls(secure_broker):
    """Issue [17]: the raw floor used to ignore the URL's user and password (and TLS). It now sets up its
    bare paho clients with the kit's one URL parser and ``paho_client``: it connects, and a wrong password
    is refused."""
    from dataclasses import replace as with_

    from benchmarks.raw_floor import _client

    ep = secure_broker.credentials("bench-floor")
    assert ep.password and ep.password not in ep.url, "the printable URL never shows the password"
    c = _client(BrokerEndpoint.from_url(ep.url_with_secret), ep.username)
    try:
        assert c.is_connected()
    finally:
        c.disconnect()
        c.loop_stop()
    with pytest.raises(RuntimeError, match=r"refused the raw paho client \(reason code 13[45]\)") as refused:
        _client(with_(ep, password="wrong"), ep.username)
    assert "wrong" not in str(refused.value)

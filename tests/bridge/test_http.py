"""The bridge as A2A's HTTP tools see it: card checks and JSON-RPC probes with a plain HTTP client.

The card validates with the official a2a-sdk types; each kind of bad request gets its JSON-RPC error
code; a stream is Server-Sent Events whose items are the agent's StreamResponses; a bearer token
reaches the MQTT request and nothing else; limits answer 503. Real Mosquitto, real ticket desk.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
import uuid

import httpx
import pytest

from a2a_nb.agents import Responder
from a2a_nb.agents.auth import LocalIssuer
from a2a_nb.bridge import Bridge
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, topics
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.story.cast import TicketDesk, desk_card
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.bridge.conftest import ORG, SHORT
from tests.sdk_check import assert_valid
from tests.waiting import wait_until
from tests.helpers import uid

SECRET = "tok-" + secrets.token_hex(8)


def rpc(url: str, method: str, params=None, *, rid=7, headers=None, content=None) -> httpx.Response:
    body = content if content is not None else json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})})
    return httpx.post(url, content=body, headers={"Content-Type": "application/json", **(headers or {})}, timeout=10)


def send_params(text: str = TICKET_TEXT) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}}


def sse_items(response: httpx.Response) -> list[tuple[str, dict]]:
    """``(event name, JSON data)`` of every SSE event of a finished response (comments, which the
    bridge sends while a stream waits, are skipped as every SSE client skips them)."""
    out = []
    for block in response.text.split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if lines:
            event = next((line[7:] for line in lines if line.startswith("event: ")), "message")
            out.append((event, json.loads("".join(line[6:] for line in lines if line.startswith("data: ")))))
    return out


def observe(broker_url: str, unit: str) -> list[MqttMessage]:
    """Every MQTT message of the unit from now on, unredacted (the recorder would redact tokens)."""
    seen: list[MqttMessage] = []
    s = Session(ORG, unit, uid("observer"), broker=broker_url)
    s.subscribe(f"$a2a/v1/+/{ORG}/{unit}/#", handler=seen.append)
    return seen


# -- the card ------------------------------------------------------------------------------------------
def test_card_is_the_retained_card_with_the_bridge_endpoint_first(broker_url, unit, bridge):
    r = httpx.get(bridge.card_url, timeout=5)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    card = r.json()
    assert_valid("AgentCard", card)
    mqtt_card = desk_card(ORG, unit)
    assert card["supportedInterfaces"] == [
        {"url": bridge.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        *mqtt_card["supportedInterfaces"]]
    assert card["skills"] == mqtt_card["skills"] and card["name"] == mqtt_card["name"]
    assert card["capabilities"]["streaming"] is True and card["capabilities"]["pushNotifications"] is False
    assert card == bridge.card

    # an empty retained message unregisters the agent: the bridge has no card to serve any more
    s = Session(ORG, unit, uid("unregister"), broker=broker_url)
    s.publish(MqttMessage(topics.discovery_topic(ORG, unit, "ticket-desk"), b"", qos=1, retain=True))
    assert wait_until(lambda: httpx.get(bridge.card_url, timeout=5).status_code == 404)


# -- errors --------------------------------------------------------------------------------------------
UNKNOWN = "0b9e4c2e-8a6f-4a39-9d47-3f0c1e2a7b55"
BAD_REQUESTS = [
    # (name, method, params, raw body, headers, code, id in the reply)
    ("not JSON", None, None, b"{not json", None, -32700, None),
    ("a batch", None, None, b"[]", None, -32600, None),
    ("jsonrpc 1.0", None, None, b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}', None, -32600, 1),
    ("v0.3 method name", "tasks/get", {"id": UNKNOWN}, None, None, -32601, 7),
    ("GetTask without id", "GetTask", {}, None, None, -32602, 7),
    ("message without parts", "SendMessage", {"message": {"role": "ROLE_USER", "messageId": "m"}}, None, None,
     -32602, 7),
    ("push notifications", "CreateTaskPushNotificationConfig", {"taskId": UNKNOWN}, None, None, -32003, 7),
    ("extended card", "GetExtendedAgentCard", {}, None, None, -32007, 7),
    ("A2A 0.3", "GetTask", {"id": UNKNOWN}, None, {"A2A-Version": "0.3"}, -32009, 7),
    ("body too large", None, None, b" " * (1 << 20 + 1), None, -32600, None),
    ("unknown task (the agent's answer)", "GetTask", {"id": UNKNOWN}, None, None, -32001, 7),
]


@pytest.mark.parametrize("name,method,params,raw,headers,code,rid", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_each_bad_request_gets_its_jsonrpc_error(bridge, name, method, params, raw, headers, code, rid):
    r = rpc(bridge.url, method or "", params, headers=headers, content=raw)
    assert r.status_code == 200, "JSON-RPC errors travel with HTTP 200"
    body = r.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rid and "result" not in body
    assert body["error"]["code"] == code, body
    if code in (-32001, -32003, -32007, -32009):  # core A2A errors carry their ErrorInfo
        assert body["error"]["data"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"


def test_a_silent_agent_is_responder_unavailable_and_a_full_bridge_says_503(broker_url, unit):
    # a card without an agent behind it: nobody answers on its request topic
    s = Session(ORG, unit, uid("ghost-card"), broker=broker_url)
    card = cards.agent_card(name="Ghost", description="never answers", version="1", org=ORG, unit=unit,
                            agent="ghost", skills=[cards.skill("x", "X", "nothing", ["test"])])
    s.publish(MqttMessage(topics.discovery_topic(ORG, unit, "ghost"), encode_json(card), qos=1, retain=True))
    seen = observe(broker_url, unit)
    with Bridge("ghost", org=ORG, unit=unit, broker=broker_url, retry=SHORT, max_requests=1) as bridge:
        first: dict = {}
        waiting = threading.Thread(target=lambda: first.update(r=rpc(bridge.url, "SendMessage", send_params())))
        t0 = time.monotonic()
        waiting.start()
        assert wait_until(lambda: bridge.stats.in_progress == 1)
        busy = rpc(bridge.url, "GetTask", {"id": UNKNOWN})
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["code"] == -32004
        waiting.join(10)
        error = first["r"].json()["error"]
        assert error["code"] == -32004 and error["data"] == {"a2a_error": "responder_unavailable"}
        assert "ghost did not answer" in error["message"]
        assert time.monotonic() - t0 < 5, "two attempts of 0.5 s, then the answer"
        assert bridge.stats.refused == 1 and bridge.stats.in_progress == 0
    # the requester's retry profile: the same Task.id again, with fresh Correlation Data each time
    sends = [m for m in seen if m.topic == topics.request_topic(ORG, unit, "ghost") and m.json()["method"] == "SendMessage"]
    assert len(sends) == SHORT.max_attempts
    assert len({m.json()["params"]["message"]["taskId"] for m in sends}) == 1
    assert len({m.correlation_data for m in sends}) == SHORT.max_attempts


# -- streams -------------------------------------------------------------------------------------------
def test_a_stream_is_server_sent_events_of_the_agents_items(bridge):
    r = rpc(bridge.url, "SendStreamingMessage", send_params(), rid="s-1")
    assert r.headers["content-type"].startswith("text/event-stream")
    items = sse_items(r)
    assert len(items) >= 2 and all(event == "message" for event, _ in items)
    for _, item in items:
        assert item["jsonrpc"] == "2.0" and item["id"] == "s-1"
        assert_valid("StreamResponse", item["result"])
    assert items[0][1]["result"]["task"]["id"]
    assert items[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert bridge.stats.streams_opened == 1 and bridge.stats.streams_open == 0 and bridge.stats.streams_cut == 0

    # an error before the first item is a plain JSON-RPC error, not a stream
    r = rpc(bridge.url, "SubscribeToTask", {"id": UNKNOWN})
    assert r.headers["content-type"].startswith("application/json") and r.json()["error"]["code"] == -32001


def test_a_client_that_leaves_mid_stream_frees_the_mqtt_side(broker_url, unit):
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.15), \
            Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url) as bridge:
        params = send_params(TICKET_TEXT + "\n" + REPRO_TEXT)  # steps given: no pause, a long stream
        with httpx.Client(timeout=10) as http:
            with http.stream("POST", bridge.url, json={"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                                                       "params": params}) as r:
                lines = r.iter_lines()
                first = next(lines)
                assert first.startswith("data: ")
                task_id = json.loads(first[6:])["result"]["task"]["id"]
                assert bridge.stats.streams_open == 1  # `lines` keeps the response open until the block ends
        # the client is gone: the stream is closed, its Correlation Data leaves the in-flight map
        assert wait_until(lambda: bridge.stats.streams_open == 0, timeout=5), bridge.stats
        assert bridge.stats.streams_cut == 1
        # the task runs on (a dropped stream is no cancel); its later items reach nobody
        assert wait_until(lambda: rpc(bridge.url, "GetTask", {"id": task_id}).json()["result"]["status"]["state"]
                          == "TASK_STATE_COMPLETED", timeout=10)
        assert bridge.requester.stats.ignored_unknown_correlation > 0


def test_stop_ends_open_streams_within_its_bound(broker_url, unit):
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.5):
        bridge = Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url).start()
        got: list[str] = []

        def listen() -> None:
            with httpx.stream("POST", bridge.url, timeout=10, json={
                    "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                    "params": send_params(TICKET_TEXT + "\n" + REPRO_TEXT)}) as r:
                got.extend(line for line in r.iter_lines() if line)

        client = threading.Thread(target=listen)
        client.start()
        assert wait_until(lambda: bridge.stats.streams_open == 1)
        t0 = time.monotonic()
        bridge.stop()
        assert time.monotonic() - t0 < 3.5
        client.join(5)
        assert not client.is_alive() and got, "the client's response ended with the bridge"
        assert not bridge.running and bridge.stats.streams_open == 0


# -- bearer tokens -------------------------------------------------------------------------------------
def test_a_bearer_token_reaches_the_mqtt_request_and_is_never_echoed(broker_url, unit, desk):
    seen = observe(broker_url, unit)
    # the test broker is plain MQTT: allow_token_without_tls only so that the token can be seen travelling
    with Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url, allow_token_without_tls=True) as bridge:
        auth = {"Authorization": f"Bearer {SECRET}"}
        sent = rpc(bridge.url, "SendMessage", send_params(), headers=auth)
        streamed = rpc(bridge.url, "SendStreamingMessage", send_params(), headers=auth)
        refused = rpc(bridge.url, "GetTask", {"id": UNKNOWN}, headers={"Authorization": f"Basic {SECRET}"})
    assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert len(sse_items(streamed)) >= 2
    assert refused.json()["error"]["code"] == -32600
    assert refused.json()["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    for r in (sent, streamed, refused):
        assert SECRET not in r.text and SECRET not in str(r.headers)

    assert wait_until(lambda: any(m.topic.startswith("$a2a/v1/reply/") for m in seen))
    requests = [m for m in seen if m.topic.startswith("$a2a/v1/request/")]
    assert requests and all(m.user_property("a2a-authorization") == f"Bearer {SECRET}" for m in requests)
    for m in seen:
        if not m.topic.startswith("$a2a/v1/request/"):
            assert SECRET.encode() not in m.payload and m.user_property("a2a-authorization") is None


def test_a_bearer_token_never_travels_over_plain_mqtt(broker_url, unit, bridge):
    seen = observe(broker_url, unit)
    r = rpc(bridge.url, "SendMessage", send_params(), headers={"Authorization": f"Bearer {SECRET}"})
    error = r.json()["error"]
    assert error["code"] == -32600 and error["data"][0]["reason"] == "UNAUTHENTICATED"
    assert "TLS" in error["message"] and SECRET not in r.text
    time.sleep(0.2)
    assert not [m for m in seen if m.topic.startswith("$a2a/v1/request/")], "nothing was published"


def test_over_tls_the_token_is_checked_by_the_agent_and_never_comes_back():
    """The real path: a secure broker (TLS, a login per agent), a responder that checks bearer tokens,
    the bridge passing each HTTP caller's token on. A good token is served, a bad one refused by the
    agent (-32600 UNAUTHENTICATED, as HTTP 200 JSON-RPC error), and neither appears in a response."""
    issuer, audience = LocalIssuer(), f"{ORG}/support/vault"
    good, forged = issuer.token(audience, ["tickets:analyze"]), LocalIssuer().token(audience, ["tickets:analyze"])
    card = cards.agent_card(name="Vault", description="answers token holders only", version="1", org=ORG,
                            unit="support", agent="vault", skills=[cards.skill("x", "X", "secrets", ["test"])])
    with SecureBroker(cast=("vault", "bridge"), pools={}, observers=()) as secure:
        vault = Responder("vault", lambda ctx: ctx.complete(f"opened for {ctx.text}"), card=card,
                          broker=secure.credentials("vault"), auth=issuer.policy(audience, ["tickets:analyze"]))
        try:
            with Bridge("vault", broker=secure.credentials("bridge")) as bridge:
                ok = rpc(bridge.url, "SendMessage", send_params("TCK-4821"), headers={"Authorization": f"Bearer {good}"})
                refused = rpc(bridge.url, "SendMessage", send_params("TCK-4821"),
                              headers={"Authorization": f"Bearer {forged}"})
                anonymous = rpc(bridge.url, "SendMessage", send_params("TCK-4821"))
        finally:
            vault.stop()
    assert ok.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for r in (refused, anonymous):
        error = r.json()["error"]
        assert r.status_code == 200 and error["code"] == -32600 and error["data"][0]["reason"] == "UNAUTHENTICATED"
    for r in (ok, refused, anonymous):
        assert good not in r.text and forged not in r.text and good not in str(r.headers)


def test_stop_all_stops_the_bridge_with_its_mqtt_session(broker_url, unit, desk):
    """A lesson ends with ``a2a_nb.stop_all()``: the bridge's HTTP server goes with its MQTT session."""
    import a2a_nb

    bridge = Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url).start()
    assert httpx.get(bridge.card_url, timeout=5).status_code == 200
    a2a_nb.stop_all()
    assert not bridge.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(bridge.card_url, timeout=5)
    bridge.stop()  # still safe

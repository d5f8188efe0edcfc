"""ubsp-v1 on a real Mosquitto: what the broker sees, and what a responder refuses.

Profile: Optional Untrusted-Broker Security Profile 3-12. A bare paho-mqtt client subscribed to the
test unit's ``$a2a/`` topics plays the broker's operator (it reads everything the broker carries
there); attacks replay, re-address and re-encrypt sealed requests with bare paho, as anyone on the
broker could.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from typing import Optional

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder
from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.session import paho_client
from a2a_nb.protocol import cards, jsonrpc, messages, properties, ubsp
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.ubsp.keys import AgentKeys
from a2a_nb.ubsp.protection import Ubsp
from a2a_nb.ubsp.trust import KeyTrust, UntrustedKeySource
from tests.sdk_check import assert_valid
from tests.helpers import uid

ORG = "acme"
SECRET = "TCK-4821 customer card ending 4242"
REPORT = "root cause: the order-status webhook drops retries"
INLINE = KeyTrust(trust_inline=True)  # these tests trust the keys on the broker; test_trust.py covers jwksUri


def analyst(ctx) -> None:
    """Streams a report in two chunks and completes with a message naming the ticket."""
    ctx.artifact("report", [messages.text_part(REPORT[:20])], last_chunk=False)
    ctx.artifact("report", [messages.text_part(REPORT[20:])], append=True, last_chunk=True)
    ctx.complete(f"done with {ctx.text}")


class Operator:
    """The broker's operator: a bare paho client that reads everything of the test's unit (``$a2a/#``
    would do as well, but the session broker keeps every other test's retained cards: their flood
    would make this unit's card arrive late)."""

    def __init__(self, broker_url: str, unit: str):
        endpoint = BrokerEndpoint.from_url(broker_url)
        self.seen: list[mqtt.MQTTMessage] = []
        self.client = paho_client(endpoint, uid("operator"))
        self.client.on_message = lambda client, userdata, msg: self.seen.append(msg)
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *a: subscribed.set()
        self.client.connect(endpoint.host, endpoint.port)
        self.client.subscribe(f"$a2a/v1/+/{ORG}/{unit}/#", qos=1)
        self.client.loop_start()
        assert subscribed.wait(5)

    def publish(self, msg: MqttMessage) -> None:
        """Publish a kit message as it is (topic, payload and every property), at QoS 1."""
        props = Properties(PacketTypes.PUBLISH)
        if msg.response_topic:
            props.ResponseTopic = msg.response_topic
        if msg.correlation_data:
            props.CorrelationData = msg.correlation_data
        if msg.content_type:
            props.ContentType = msg.content_type
        if msg.user_properties:
            props.UserProperty = list(msg.user_properties)
        self.client.publish(msg.topic, msg.payload, qos=1, retain=msg.retain, properties=props).wait_for_publish(5)

    def on(self, topic_part: str) -> list[mqtt.MQTTMessage]:
        return [m for m in self.seen if topic_part in m.topic]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def as_kit(m: mqtt.MQTTMessage) -> MqttMessage:
    p = m.properties
    return MqttMessage(m.topic, bytes(m.payload), response_topic=getattr(p, "ResponseTopic", None),
                       correlation_data=getattr(p, "CorrelationData", None),
                       user_properties=tuple(getattr(p, "UserProperty", ())), content_type=getattr(p, "ContentType", None))


@pytest.fixture
def world(broker_url):
    """An operator watching, a ubsp-v1 analyst with a card, and a ubsp-v1 coordinator."""
    unit = uid("ubsp")
    operator = Operator(broker_url, unit)
    card = cards.agent_card(name="Analyst", description="Analyses tickets.", version="1.0.0", org=ORG, unit=unit,
                            agent="analyst", skills=[cards.skill("rca", "Root cause", "Finds root causes", tags=["ticket"])],
                            streaming=True)
    agent = Responder("analyst", analyst, org=ORG, unit=unit, broker=broker_url, card=card,
                      ubsp=Ubsp(AgentKeys("analyst"), INLINE))
    coordinator = Requester("coordinator", org=ORG, unit=unit, broker=broker_url,
                            ubsp=Ubsp(AgentKeys("coordinator"), INLINE))
    yield operator, agent, coordinator, unit
    coordinator.close()
    agent.stop()
    operator.close()


def test_the_broker_sees_no_plaintext_of_a_protected_interaction(world):
    """Request text, streamed artifact and final message cross the broker only as JWE; the
    requester reads them all, and every opened payload is a valid a2a-sdk v1.0 type."""
    operator, agent, coordinator, unit = world
    reply = coordinator.send("analyst", SECRET)
    assert reply.task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert SECRET in messages.text_of(reply.task["status"]["message"])
    assert_valid("SendMessageResponse", reply.result if "task" in reply.result else {"task": reply.result})
    stream = coordinator.stream("analyst", SECRET)
    events = list(stream)
    assert stream.state == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for e in events if e.kind == "artifactUpdate" for p in e.data["artifact"]["parts"]) == REPORT
    for e in events:
        assert_valid("StreamResponse", {e.kind if e.kind != "task" else "task": e.data})
    time.sleep(0.3)
    requests, replies = operator.on(f"/request/{ORG}/{unit}/"), operator.on(f"/reply/{ORG}/{unit}/")
    assert len(requests) == 2 and len(replies) == 1 + len(events) == 5
    for m in requests + replies:
        assert m.properties.ContentType == ubsp.CONTENT_TYPE
        for secret in (SECRET.encode(), REPORT[:20].encode(), b"done with", b"TASK_STATE"):
            assert secret not in m.payload
        assert m.payload.count(b".") == 4  # JWE compact serialization: five parts
    for m in requests:
        assert dict(m.properties.UserProperty)[properties.RECIPIENT_AGENT_ID] == "analyst"
        assert dict(m.properties.UserProperty)[properties.REQUESTER_AGENT_ID] == "coordinator"
    for m in replies:
        props = dict(m.properties.UserProperty)
        assert props[properties.SECURITY_PROFILE] == "ubsp-v1" and props[properties.RESPONDER_AGENT_ID] == "analyst"
    card = json.loads(operator.on(f"/discovery/{ORG}/{unit}/analyst")[0].payload)
    assert ubsp.card_key_metadata(card)["jwks"]["keys"][0]["kty"] == "EC"
    assert_valid("AgentCard", card)


def replies_to(operator: Operator, correlation: bytes, timeout: float = 3.0) -> list[mqtt.MQTTMessage]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [m for m in operator.on("/reply/") if m.properties.CorrelationData == correlation]
        if found:
            time.sleep(0.2)  # a second answer would show now
            return [m for m in operator.on("/reply/") if m.properties.CorrelationData == correlation]
        time.sleep(0.05)
    return []


def sealed_request(coordinator: Requester, unit: str, to: str, text: str, *,
                   recipient: Optional[str] = None, keys_of: Optional[AgentKeys] = None) -> MqttMessage:
    """A SendMessage sealed by the coordinator to ``to`` (or to another agent's key, or addressed on
    the wire to another ``recipient``): what an attacker could build with the public keys."""
    message = coordinator.new_message(text)
    payload = json.dumps(jsonrpc.request("SendMessage", {"message": message}, 1)).encode()
    msg = MqttMessage(f"$a2a/v1/request/{ORG}/{unit}/{to}", payload, response_topic=coordinator.reply_topic,
                      correlation_data=uuid.uuid4().bytes)
    assert coordinator.ubsp is not None
    if keys_of is not None:  # sealed to a key that is not the recipient's
        sealed = coordinator.ubsp.keys.seal(payload, to, keys_of.public_jwks()).encode()
        return dataclasses.replace(msg, payload=sealed, content_type=ubsp.CONTENT_TYPE,
                                   user_properties=ubsp.request_properties("coordinator", to))
    sealed_msg = coordinator.ubsp.seal_request(msg, ORG, unit, to)
    if recipient is None:
        return sealed_msg
    return dataclasses.replace(sealed_msg, user_properties=ubsp.request_properties("coordinator", recipient))


def opened_error(coordinator: Requester, unit: str, m: mqtt.MQTTMessage) -> dict:
    assert coordinator.ubsp is not None
    opened = coordinator.ubsp.open_reply(as_kit(m), ORG, unit)
    return json.loads(opened.payload)["error"]


def test_a_replayed_request_is_refused_and_runs_once(world):
    """An operator republishes a sealed request it saw (new Correlation Data, same bytes): the
    analyst refuses it as a replay (-32005), sealed to the coordinator; the task ran once."""
    operator, agent, coordinator, unit = world
    first = sealed_request(coordinator, unit, "analyst", SECRET)
    operator.publish(first)
    assert len(replies_to(operator, first.correlation_data)) == 1
    again = dataclasses.replace(first, correlation_data=uuid.uuid4().bytes)
    operator.publish(again)
    [answer] = replies_to(operator, again.correlation_data)
    err = opened_error(coordinator, unit, answer)
    assert err["code"] == -32005 and "replayed" in err["message"]
    assert agent.stats.executions == 1 and agent.ubsp.refused == 1


def test_a_request_addressed_to_another_agent_is_refused(world):
    """``a2a-recipient-agent-id`` names another agent: transport_protocol_error (item 11)."""
    operator, agent, coordinator, unit = world
    msg = sealed_request(coordinator, unit, "analyst", SECRET, recipient="billing")
    operator.publish(msg)
    [answer] = replies_to(operator, msg.correlation_data)
    err = opened_error(coordinator, unit, answer)
    assert err["code"] == -32005 and "billing" in err["message"] and "not this responder" in err["message"]
    assert agent.stats.executions == 0


def test_a_request_sealed_to_another_key_or_tampered_is_refused(world):
    """Sealed to a key the analyst does not hold, or one byte of the JWE changed: it cannot be
    opened, so it is refused (-32005) and never run."""
    operator, agent, coordinator, unit = world
    wrong = sealed_request(coordinator, unit, "analyst", SECRET, keys_of=AgentKeys("analyst"))
    good = sealed_request(coordinator, unit, "analyst", SECRET)
    cut = len(good.payload) - 10
    tampered = dataclasses.replace(good, payload=good.payload[:cut] + (b"A" if good.payload[cut:cut + 1] != b"A" else b"B")
                                   + good.payload[cut + 1:])
    for msg in (wrong, tampered):
        operator.publish(msg)
        [answer] = replies_to(operator, msg.correlation_data)
        err = opened_error(coordinator, unit, answer)
        assert err["code"] == -32005 and "cannot decrypt" in err["message"], err
    assert agent.stats.executions == 0


def test_a_reply_forged_by_the_operator_is_not_taken(world):
    """The operator answers a protected request first, sealing its own reply to the coordinator's
    public key and naming the analyst: the signature is not the analyst's, so the coordinator
    refuses it and takes the analyst's real reply."""
    operator, agent, coordinator, unit = world
    agent.frozen = True  # the analyst reads but does not answer, until the forgery is on its way
    forger = AgentKeys("analyst")  # a key of its own under the analyst's name
    results: list = []
    worker = threading.Thread(target=lambda: results.append(coordinator.send("analyst", SECRET)))
    worker.start()
    deadline = time.monotonic() + 3
    while not operator.on(f"/request/{ORG}/{unit}/") and time.monotonic() < deadline:
        time.sleep(0.02)
    [request] = operator.on(f"/request/{ORG}/{unit}/")
    forged = jsonrpc.result_response(1, {"message": messages.agent_message("all fine, close it", message_id="m1")})
    sealed = forger.seal(json.dumps(forged).encode(), "coordinator", coordinator.ubsp.keys.public_jwks())
    operator.publish(MqttMessage(request.properties.ResponseTopic, sealed.encode(),
                                 correlation_data=request.properties.CorrelationData, content_type=ubsp.CONTENT_TYPE,
                                 user_properties=ubsp.response_properties("coordinator", "analyst")))
    time.sleep(0.3)
    agent.frozen = False
    operator.publish(as_kit(request))  # the real analyst now gets the request (a retry would do the same)
    worker.join(10)
    assert results and results[0].task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert coordinator.stats.refused >= 1


def test_no_trusted_key_means_nothing_is_sent(broker_url):
    """A responder whose card points to a jwksUri on a host the requester does not trust: the
    send fails with UntrustedKeySource before anything is published (no plaintext fallback)."""
    unit = uid("ubsp")
    operator = Operator(broker_url, unit)
    card = cards.agent_card(name="Far", description="Keys elsewhere.", version="1.0.0", org=ORG, unit=unit,
                            agent="far", skills=[cards.skill("x", "X", "x", tags=["x"])])
    keys = AgentKeys("far")
    agent = Responder("far", analyst, org=ORG, unit=unit, broker=broker_url, card=card,
                      ubsp=Ubsp(keys, INLINE, {"jwksUri": "https://keys.evil.example/far.json", "jwks": keys.public_jwks()}))
    coordinator = Requester("coordinator", org=ORG, unit=unit, broker=broker_url,
                            ubsp=Ubsp(AgentKeys("coordinator"), KeyTrust(allowed_hosts=("keys.acme.example",),
                                                                        trust_inline=True)))
    try:
        with pytest.raises(UntrustedKeySource, match="keys.evil.example"):
            coordinator.send("far", SECRET)
        time.sleep(0.2)
        assert operator.on(f"/request/{ORG}/{unit}/") == [] and agent.stats.requests == 0
    finally:
        coordinator.close()
        agent.stop()
        operator.close()


def test_a_plain_request_still_works_and_a_responder_without_ubsp_refuses_a_protected_one(world, broker_url):
    """ubsp-v1 is optional: the analyst answers a plain request in plaintext; an agent that does not
    speak ubsp-v1 refuses a protected request with -32005 (in plaintext: it has no keys)."""
    operator, agent, coordinator, unit = world
    plain = Requester("plain", org=ORG, unit=unit, broker=broker_url)
    echo = Responder("echo", analyst, org=ORG, unit=unit, broker=broker_url)
    try:
        assert plain.send("analyst", "hello").task["status"]["state"] == "TASK_STATE_COMPLETED"
        msg = sealed_request(coordinator, unit, "analyst", SECRET)
        msg = dataclasses.replace(msg, topic=f"$a2a/v1/request/{ORG}/{unit}/echo",
                                  user_properties=ubsp.request_properties("coordinator", "echo"))
        operator.publish(msg)
        [answer] = replies_to(operator, msg.correlation_data)
        err = json.loads(answer.payload)["error"]
        assert err["code"] == -32005 and "ubsp-v1" in err["message"]
    finally:
        plain.close()
        echo.stop()


def test_the_ticket_story_with_handover_runs_under_ubsp(broker_url):
    """The desk hands TCK-4821 to an analyst instance, which asks for the reproduction steps; the
    coordinator answers the analyst directly, and gets the report: every request, reply and stream
    item sealed. The analyst has no card: it publishes the desk's key metadata on its event topic,
    and the desk's keys speak for it (its replies are signed in its own name with them)."""
    from a2a_nb.story.cast import TicketDesk
    from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT

    from a2a_nb.traffic.lint import check_traffic
    from a2a_nb.traffic.recorder import Recorder

    unit = uid("ubsp")
    operator = Operator(broker_url, unit)
    recorder = Recorder(broker=broker_url, org_filter=f"$a2a/v1/+/{ORG}/{unit}/#").start()
    desk = TicketDesk(org=ORG, unit=unit, broker=broker_url, handover="first-reply", pace=0.0,
                      ubsp=Ubsp(AgentKeys("ticket-desk"), INLINE))
    coordinator = Requester("coordinator", org=ORG, unit=unit, broker=broker_url,
                            ubsp=Ubsp(AgentKeys("coordinator"), INLINE))
    try:
        stream = coordinator.stream("ticket-desk", TICKET_TEXT)
        list(stream)
        assert stream.state == "TASK_STATE_INPUT_REQUIRED"
        analyst_id = coordinator.target_of(stream.task_id).agent
        assert analyst_id and analyst_id.startswith("analyst-")
        follow_up = coordinator.continue_task(stream, REPRO_TEXT, stream=True)
        list(follow_up)
        assert follow_up.state == "TASK_STATE_COMPLETED"
        final = coordinator.get_task(stream.task_id)
        assert final["artifacts"] and final["status"]["state"] == "TASK_STATE_COMPLETED"
        time.sleep(0.3)
        carried = operator.on(f"/request/{ORG}/{unit}/") + operator.on(f"/reply/{ORG}/{unit}/")
        assert {m.properties.ContentType for m in carried} == {ubsp.CONTENT_TYPE}
        assert all(b"TCK-4821" not in m.payload and b"refresh the order page" not in m.payload for m in carried)
        to_analyst = [m for m in operator.on(f"/request/{ORG}/{unit}/") if m.topic.endswith("/" + analyst_id)]
        assert to_analyst and all(dict(m.properties.UserProperty)[properties.RECIPIENT_AGENT_ID] == analyst_id
                                  for m in to_analyst)
        by_analyst = [m for m in operator.on(f"/reply/{ORG}/{unit}/")
                      if dict(m.properties.UserProperty).get(properties.RESPONDER_AGENT_ID) == analyst_id]
        assert by_analyst and coordinator.stats.refused == 0
        recorder.stop()
        df = recorder.frame()
        ours = df[(df["unit"] == unit) & df["kind"].isin(["request", "reply"])]
        assert len(ours) == len(carried) and set(ours["event"]) == {"protected"}
        assert ours["method"].isna().all() and ours["task_id"].isna().all() and ours["payload_json"].isna().all()
        assert set(ours["content_type"]) == {"application/jose"}
        from a2a_nb.traffic.charts import message_label

        assert {message_label(row) for row in ours.to_dict("records")} == {"request (sealed)", "reply (sealed)"}
        findings = check_traffic(df[df["unit"] == unit])
        assert findings.empty, findings[["rule", "explanation"]].to_string()
    finally:
        recorder.stop()
        coordinator.close()
        desk.stop()
        operator.close()


def test_keys_behind_a_trusted_jwks_uri_and_a_card_swapped_by_the_operator(broker_url):
    """Both agents publish only a ``jwksUri`` on the local HTTPS key server, the one host both trust
    (no inline keys trusted): the interaction runs sealed. Then the operator replaces the analyst's
    retained card with one carrying its own inline keys: the coordinator refuses to use them
    (UntrustedKeySource), and nothing is sent."""
    from a2a_nb.ubsp.key_server import KeyServer

    unit = uid("ubsp")
    with KeyServer() as keys:
        analyst_keys, coordinator_keys = AgentKeys("analyst"), AgentKeys("coordinator")
        for k in (analyst_keys, coordinator_keys):
            keys.publish(f"{ORG}/{unit}/{k.agent}", k.public_jwks())
        trust = keys.trust()
        card = cards.agent_card(name="Analyst", description="Analyses tickets.", version="1.0.0", org=ORG, unit=unit,
                                agent="analyst", skills=[cards.skill("rca", "Root cause", "Finds root causes", tags=["t"])])
        agent = Responder("analyst", analyst, org=ORG, unit=unit, broker=broker_url, card=card,
                          ubsp=Ubsp(analyst_keys, trust, {"jwksUri": keys.url_for(f"{ORG}/{unit}/analyst")}))
        coordinator = Requester("coordinator", org=ORG, unit=unit, broker=broker_url,
                                ubsp=Ubsp(coordinator_keys, trust, {"jwksUri": keys.url_for(f"{ORG}/{unit}/coordinator")}))
        operator = Operator(broker_url, unit)
        try:
            assert coordinator.send("analyst", SECRET).task["status"]["state"] == "TASK_STATE_COMPLETED"
            served = keys.requests_served
            assert served >= 2  # each side fetched the other's keys once; the cache serves the rest
            assert coordinator.send("analyst", SECRET).task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert keys.requests_served == served
            forged_keys = AgentKeys("analyst")
            forged = json.loads(operator.on(f"/discovery/{ORG}/{unit}/analyst")[0].payload)
            forged["capabilities"]["extensions"] = [ubsp.card_extension({"jwks": forged_keys.public_jwks()})]
            operator.client.publish(f"$a2a/v1/discovery/{ORG}/{unit}/analyst", json.dumps(forged).encode(), qos=1,
                                    retain=True).wait_for_publish(5)
            stranger = Requester("newcomer", org=ORG, unit=unit, broker=broker_url,
                                 ubsp=Ubsp(AgentKeys("newcomer"), trust, {"jwks": {"keys": []}}))
            try:
                requests_before = len(operator.on(f"/request/{ORG}/{unit}/"))
                with pytest.raises(UntrustedKeySource, match="inline"):
                    stranger.send("analyst", SECRET)
                assert len(operator.on(f"/request/{ORG}/{unit}/")) == requests_before
            finally:
                stranger.close()
        finally:
            coordinator.close()
            agent.stop()
            operator.close()

"""A client written from the profile alone talks to `serve echo` and `serve ticket-desk`.

Nothing of the kit runs in the client: bare paho-mqtt, hand-built JSON-RPC payloads, its own
artifact assembly. It checks every stream item message by message against the profile (Streaming
Reply Mapping 1-7, Request/Reply Mapping, Optional Task Handover 4) and the a2a-sdk v1.0 types, then
continues the INPUT_REQUIRED task, reads it back with GetTask and asks SubscribeToTask for it; and
it sends both served agents malformed requests (Responder Behavior, Mandatory Binding-Specific Error
Mapping): each gets its error, and the agent keeps serving.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import uuid

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.session import paho_client
from tests.sdk_check import assert_valid

ORG, UNIT = "acme", "judge"
FINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED",
         "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}


class ProfileClient:
    """Requester behaviour from the profile: subscribe the reply topic first, unique correlation per
    publish, match replies by correlation only."""

    def __init__(self, url: str):
        endpoint = BrokerEndpoint.from_url(url)
        self.reply_topic = f"$a2a/v1/reply/{ORG}/{UNIT}/judge/{uuid.uuid4().hex}"
        self.inbox: "queue.Queue[mqtt.MQTTMessage]" = queue.Queue()
        self.c = paho_client(endpoint, f"{ORG}/{UNIT}/judge")
        self.c.on_message = lambda c, u, m: self.inbox.put(m)
        subscribed = queue.Queue()
        self.c.on_subscribe = lambda *a: subscribed.put(True)
        self.c.connect(endpoint.host, endpoint.port)
        self.c.loop_start()
        self.c.subscribe(self.reply_topic, qos=1)
        subscribed.get(timeout=5)

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()

    def request(self, method: str, params: dict, agent: str = "ticket-desk") -> tuple[bytes, str]:
        rid = str(uuid.uuid4())
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        return self.publish(agent, json.dumps(body).encode()), rid

    def publish(self, agent: str, payload: bytes, reply: bool = True, **properties) -> bytes:
        """One request as bytes, with a fresh correlation (``reply=False``: no reply path at all)."""
        corr = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)
        if reply:
            props.ResponseTopic = self.reply_topic
            props.CorrelationData = corr
        for name, value in properties.items():
            setattr(props, name, value)
        self.c.publish(f"$a2a/v1/request/{ORG}/{UNIT}/{agent}", payload, qos=1, properties=props).wait_for_publish(5)
        return corr

    def items(self, corr: bytes, rid: str, quiet_s: float = 1.0) -> list[tuple[mqtt.MQTTMessage, dict]]:
        """Everything that arrives for ``corr`` until the stream is final and then quiet for ``quiet_s``."""
        got, final = [], False
        while True:
            try:
                m = self.inbox.get(timeout=quiet_s if final else 20)
            except queue.Empty:
                assert final, f"stream stalled after {len(got)} items"
                return got
            assert m.properties.CorrelationData == corr, "a reply for a correlation nobody asked about"
            body = json.loads(m.payload)
            assert not final, f"an item after the stream-final one: {body}"
            assert m.qos == 1 and m.topic == self.reply_topic
            assert body["jsonrpc"] == "2.0" and body["id"] == rid
            got.append((m, body))
            result = body.get("result", {})
            state = (result.get("statusUpdate") or result.get("task") or {}).get("status", {}).get("state")
            final = "error" in body or "message" in result or state in FINAL

    def answer(self, corr: bytes, rid: str) -> dict:
        """The one reply of a unary method (GetTask, errors): exactly one message for ``corr``."""
        m = self.inbox.get(timeout=20)
        assert m.properties.CorrelationData == corr and m.qos == 1
        body = json.loads(m.payload)
        assert body["jsonrpc"] == "2.0" and body["id"] == rid
        with pytest.raises(queue.Empty):
            self.inbox.get(timeout=0.3)
        return body


def message(text: str, task_id: str, context_id: str) -> dict:
    return {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}],
                        "taskId": task_id, "contextId": context_id}}


def responder_of(m: mqtt.MQTTMessage) -> str | None:
    ids = [v for k, v in getattr(m.properties, "UserProperty", []) if k == "a2a-responder-agent-id"]
    return ids[-1] if ids else None


def assemble(artifacts: dict, event: dict) -> None:
    """TaskArtifactUpdateEvent semantics: append extends the parts, otherwise create or replace."""
    art = event["artifact"]
    old = artifacts.get(art["artifactId"])
    if event.get("append") and old is not None:
        old["parts"] = old["parts"] + art["parts"]
    else:
        artifacts[art["artifactId"]] = {**art, "parts": list(art["parts"])}
    artifacts[art["artifactId"]]["sealed"] = bool(event.get("lastChunk"))


def serve(broker_url: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, A2A_BROKER_URL=broker_url)
    p = subprocess.Popen([sys.executable, "-m", "a2a_nb", "serve", *args, "--unit", UNIT], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "serving" in p.stdout.readline(), p.stderr.read()
    return p


def stop(p: subprocess.Popen) -> None:
    assert p.poll() is None, "the agent died"
    p.terminate()
    assert p.wait(timeout=15) == 0


@pytest.fixture
def desk(broker_url):
    p = serve(broker_url, "ticket-desk", "--handover", "mid-stream")
    try:  # the served desk stops whatever happens to the client
        client = ProfileClient(broker_url)
        yield client
        client.close()
    finally:
        stop(p)


def good_send() -> dict:
    return {"jsonrpc": "2.0", "id": "good", "method": "SendMessage",
            "params": message("Analyze ticket TCK-4821", str(uuid.uuid4()), str(uuid.uuid4()))}


def rpc(method: str, params) -> dict:
    return {"jsonrpc": "2.0", "id": "bad", "method": method, "params": params}


MALFORMED = {
    "not JSON": (b"{not json", {}, -32700),
    "not UTF-8": (b"\xff\xfe{}", {}, -32700),
    "not JSON-RPC": (b'{"hello": "world"}', {}, -32600),
    "unknown method": (json.dumps(rpc("Frobnicate", {})).encode(), {}, -32601),
    "message not an object": (json.dumps(rpc("SendMessage", {"message": "hi"})).encode(), {}, -32602),
    "Task.id not a UUIDv4": (json.dumps(rpc("SendMessage", message("hi", "task-1", str(uuid.uuid4())))).encode(),
                             {}, -32602),
    "unknown task": (json.dumps(rpc("GetTask", {"id": str(uuid.uuid4())})).encode(), {}, -32001),
    "payload format 0": (json.dumps(good_send()).encode(), {"PayloadFormatIndicator": 0}, -32005),
    "content type text/plain": (json.dumps(good_send()).encode(), {"ContentType": "text/plain"}, -32005),
}


def test_a_profile_client_streams_a_ticket_through_input_required_handover_and_completion(desk):
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())

    # turn 1: no reproduction steps → the stream ends at INPUT_REQUIRED (stream-final, not terminal);
    # the desk hands the task over mid-stream: later items name the analyst
    corr, rid = desk.request("SendStreamingMessage", message("Analyze ticket TCK-4821", task_id, context_id))
    first = desk.items(corr, rid)
    kinds = [next(iter(b["result"])) for _, b in first]
    assert kinds[0] == "task" and kinds[-1] == "statusUpdate"
    assert first[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    for _, b in first:
        assert_valid("StreamResponse", b["result"])
    assert responder_of(first[0][0]) is None, "the card agent itself answers first"
    analyst = responder_of(first[-1][0])
    assert analyst and analyst.startswith("analyst-")

    # turn 2, rerouted as the profile says: to the analyst's own request topic, same Task.id and
    # contextId, new messageId and correlation; the report streams in
    corr2, rid2 = desk.request("SendStreamingMessage",
                               message("Reproduction: pay, then refresh the page twice", task_id, context_id), analyst)
    second = desk.items(corr2, rid2)
    artifacts: dict = {}
    states = []
    for m, b in second:
        result = b["result"]
        assert_valid("StreamResponse", result)
        assert len(result) == 1
        kind, body = next(iter(result.items()))
        if kind in ("statusUpdate", "artifactUpdate"):
            assert body["taskId"] == task_id and body["contextId"] == context_id
        if kind == "statusUpdate":
            states.append(body["status"]["state"])
        if kind == "artifactUpdate":
            assemble(artifacts, body)
        assert not any(k == "a2a-authorization" for k, _ in getattr(m.properties, "UserProperty", []))
    assert states[-1] == "TASK_STATE_COMPLETED" and "TASK_STATE_WORKING" in states
    (report,) = artifacts.values()
    assert report["sealed"] and len(report["parts"]) == 4
    assert report["parts"][0]["data"]["ticket"] == "TCK-4821"

    # GetTask from the analyst, and from the card agent (what a requester falls back to): the same
    # completed task with the same assembled artifact
    for agent in (analyst, "ticket-desk"):
        corr3, rid3 = desk.request("GetTask", {"id": task_id}, agent)
        task = desk.answer(corr3, rid3)["result"]
        assert_valid("Task", task)
        assert task["id"] == task_id and task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert [a["parts"] for a in task["artifacts"]] == [report["parts"]]

    # SubscribeToTask: a terminal task → -32004, an unknown one → -32001
    corr4, rid4 = desk.request("SubscribeToTask", {"id": task_id})
    assert desk.answer(corr4, rid4)["error"]["code"] == -32004
    corr5, rid5 = desk.request("SubscribeToTask", {"id": str(uuid.uuid4())})
    assert desk.answer(corr5, rid5)["error"]["code"] == -32001


@pytest.mark.parametrize("agent, args", [("echo", ()), ("ticket-desk", ("--handover", "first-reply"))])
def test_served_agents_answer_malformed_requests_with_the_profiles_errors_and_stay_up(broker_url, agent, args):
    p = serve(broker_url, agent, *args)
    client = ProfileClient(broker_url)
    try:
        client.publish(agent, json.dumps(good_send()).encode(), reply=False)  # no reply path: dropped
        for case, (payload, props, code) in MALFORMED.items():
            corr = client.publish(agent, payload, **props)
            m = client.inbox.get(timeout=10)
            assert m.properties.CorrelationData == corr, case
            body = json.loads(m.payload)
            assert body["jsonrpc"] == "2.0" and "result" not in body, case
            assert body["error"]["code"] == code, (case, body)
            assert body["id"] in ("bad", "good", None), case
        with pytest.raises(queue.Empty):
            client.inbox.get(timeout=0.3)  # one reply per request, none for the request without a reply path
        corr = client.publish(agent, json.dumps(good_send()).encode())
        m = client.inbox.get(timeout=10)
        assert m.properties.CorrelationData == corr
        result = json.loads(m.payload)["result"]
        assert_valid("SendMessageResponse", result)
    finally:
        client.close()
        stop(p)

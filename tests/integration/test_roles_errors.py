"""Responder error replies for an independent client written from the profile (hand-built payloads).

Profile: Responder Behavior (Interop) 2-8, Mandatory Binding-Specific Error Mapping, Error Handling
and Deduplication 4-5, Multi-Turn 6, OAuth 2.0 and OIDC over MQTT User Properties 6; A2A v1.0
JSON-RPC and core error codes.
"""
from __future__ import annotations

import json
import time
import uuid

import pytest

from a2a_nb.agents import Requester, Responder, ResponderOptions
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage
from tests.integration._roles_support import (  # noqa: F401
    FAST, SECRET, RawClient, rpc, send_rpc, traffic, uid, user_message, wait_until)

COMPLETED = "TASK_STATE_COMPLETED"


def echo(ctx):
    return f"echo: {ctx.text}"


def ask_then_finish(ctx):
    if ctx.turn == 1:
        ctx.ask_input("more please")
    else:
        ctx.complete("finished")


def no_token_echo(m: MqttMessage) -> None:
    assert all(k.lower() != "a2a-authorization" for k, _ in m.user_properties)
    assert SECRET.encode() not in m.payload and b"Bearer" not in m.payload


def assert_error(m: MqttMessage, corr: bytes, code: int, rid, a2a_error=None, reason=None) -> dict:
    """One error reply: JSON-RPC, the request's id, correlation echoed, QoS 1, no token echoed."""
    assert m is not None, "no error reply"
    assert m.correlation_data == corr, "the error reply must echo the Correlation Data"
    assert m.qos == 1
    body = json.loads(m.payload)
    assert body["jsonrpc"] == "2.0" and "result" not in body
    assert body["id"] == rid
    err = body["error"]
    assert err["code"] == code, err
    assert isinstance(err["message"], str) and err["message"]
    if a2a_error is not None:
        assert err["data"]["a2a_error"] == a2a_error
    if reason is not None:
        assert err["data"][0]["reason"] == reason and err["data"][0]["domain"] == "a2a-protocol.org"
    no_token_echo(m)
    return err


@pytest.fixture
def desk(broker_url):
    agent = uid("desk")
    responder = Responder(agent, ask_then_finish, broker=broker_url)
    return agent, responder, RawClient(broker_url)


def good_request_still_answered(raw: RawClient, agent: str) -> None:
    _, m, body = raw.call(agent, send_rpc(user_message("still there?"), rid="ok"))
    assert body["id"] == "ok" and body["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


# -- dropped requests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["response_topic", "correlation", "wildcard response topic"])
def test_request_without_reply_path_is_dropped_and_the_agent_keeps_serving(desk, traffic, missing):
    agent, responder, raw = desk
    kw = {"response_topic": {"response_topic": None}, "correlation": {"correlation": None},
          "wildcard response topic": {"response_topic": raw.reply_topic.rsplit("/", 1)[0] + "/+"}}[missing]
    raw.request(agent, send_rpc(user_message("lost")), **kw)
    assert wait_until(lambda: responder.stats.dropped == 1, 3)
    time.sleep(0.2)
    assert [m for m in traffic.snapshot() if m.topic.startswith("$a2a/v1/reply/")] == [], "nothing is answered"
    assert raw.all == []
    assert len(responder.runtime.store) == 0, "a dropped request creates no task"
    good_request_still_answered(raw, agent)


# -- JSON-RPC, parameter and binding errors -----------------------------------------------------------
TASK = str(uuid.uuid4())
CASES = {
    "bad json": (b'{"jsonrpc": "2.0", "id": "x", "method": ', {}, -32700, None, None),
    "not utf-8": (b"\xff\xfe\x00garbage", {}, -32700, None, None),
    "not json-rpc": ({"hello": "world", "id": "r7"}, {}, -32600, "r7", None),
    "wrong jsonrpc version": ({"jsonrpc": "1.0", "id": 8, "method": "SendMessage", "params": {}}, {}, -32600, 8, None),
    "batch": ([rpc("GetTask", {"id": TASK}, "b1")], {}, -32600, None, None),
    "unknown method": (rpc("message/send", {"message": user_message()}, "r9"), {}, -32601, "r9", None),
    "params not an object": ({"jsonrpc": "2.0", "id": "p", "method": "GetTask", "params": [1]}, {}, -32600, "p", None),
    "message missing": (rpc("SendMessage", {}, "m0"), {}, -32602, "m0", None),
    "empty parts": (rpc("SendMessage", {"message": dict(user_message(), parts=[])}, "m1"), {}, -32602, "m1", None),
    "part with two kinds": (rpc("SendMessage", {"message": dict(user_message(), parts=[{"text": "a", "url": "u"}])},
                                "m2"), {}, -32602, "m2", None),
    "bad role": (rpc("SendMessage", {"message": dict(user_message(), role="user")}, "m3"), {}, -32602, "m3", None),
    "GetTask id not a string": (rpc("GetTask", {"id": 5}, "g1"), {}, -32602, "g1", None),
    "ListTasks bad status": (rpc("ListTasks", {"status": "done"}, "l1"), {}, -32602, "l1", None),
    "missing Task.id": (rpc("SendMessage", {"message": {k: v for k, v in user_message().items() if k != "taskId"}},
                            "t0"), {}, -32602, "t0", None),
    "Task.id not a UUID": (send_rpc(user_message(task_id="task-1"), "t1"), {}, -32602, "t1", None),
    "Task.id a UUIDv1": (send_rpc(user_message(task_id=str(uuid.uuid1())), "t2"), {}, -32602, "t2", None),
    "payload format 0": (send_rpc(user_message(), "b0"), {"payload_format": 0}, -32005, "b0", "transport_protocol_error"),
    "content type text/plain": (send_rpc(user_message(), "b1"), {"content_type": "text/plain"}, -32005, "b1",
                                "transport_protocol_error"),
    "ubsp-v1 requested": (send_rpc(user_message(), "b2"),
                          {"props": (("a2a-security-profile", "ubsp-v1"), ("a2a-authorization", f"Bearer {SECRET}"))},
                          -32005, "b2", "transport_protocol_error"),
    "recipient is another agent": (send_rpc(user_message(), "b3"), {"props": (("a2a-recipient-agent-id", "someone-else"),)},
                                   -32005, "b3", "transport_protocol_error"),
    "two authorization properties": (send_rpc(user_message(), "b4"),
                                     {"props": (("a2a-authorization", f"Bearer {SECRET}"),
                                                ("a2a-authorization", f"Bearer {SECRET}2"))},
                                     -32005, "b4", "transport_protocol_error"),
    "push config not supported": (rpc("CreateTaskPushNotificationConfig", {"taskId": TASK}, "pn"), {}, -32003, "pn", None),
    "get push config not supported": (rpc("GetTaskPushNotificationConfig", {"taskId": TASK, "id": "c"}, "pg"), {},
                                      -32003, "pg", None),
    "list push configs not supported": (rpc("ListTaskPushNotificationConfigs", {"taskId": TASK}, "pl"), {},
                                        -32003, "pl", None),
    "delete push config not supported": (rpc("DeleteTaskPushNotificationConfig", {"taskId": TASK, "id": "c"}, "pd"), {},
                                         -32003, "pd", None),
    "no extended card": (rpc("GetExtendedAgentCard", {}, "xc"), {}, -32007, "xc", None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_invalid_request_gets_the_matching_error_reply(desk, traffic, case):
    agent, responder, raw = desk
    payload, kw, code, rid, a2a_error = CASES[case]
    corr, m, _ = raw.call(agent, payload, **kw)
    err = assert_error(m, corr, code, rid, a2a_error)
    if code in (-32003, -32004, -32005) and a2a_error is None:
        assert not (isinstance(err.get("data"), dict) and "a2a_error" in err["data"]), "a core error, not a binding one"
    assert len(raw.replies(corr, 2, timeout=0.1)) == 1, "exactly one reply per request"
    assert len(responder.runtime.store) == 0, "a rejected request creates no task"
    good_request_still_answered(raw, agent)


# -- errors that depend on the stored task --------------------------------------------------------------
def test_context_id_different_from_the_stored_one_is_invalid_params(desk, traffic):
    agent, _, raw = desk
    msg = user_message("start")
    raw.call(agent, send_rpc(msg))
    other = user_message("continue", task_id=msg["taskId"], context_id=str(uuid.uuid4()))
    corr, m, _ = raw.call(agent, send_rpc(other, "ctx"))
    assert_error(m, corr, -32602, "ctx")
    # the stored task is untouched: the right contextId still continues it
    _, _, ok = raw.call(agent, send_rpc(user_message("continue", task_id=msg["taskId"], context_id=msg["contextId"])))
    assert ok["result"]["task"]["status"]["state"] == COMPLETED


def test_unknown_task_is_task_not_found(desk, traffic):
    agent, _, raw = desk
    for method, rid in (("GetTask", "g"), ("CancelTask", "c"), ("SubscribeToTask", "s")):
        corr, m, _ = raw.call(agent, rpc(method, {"id": str(uuid.uuid4())}, rid))
        assert_error(m, corr, -32001, rid, reason="TASK_NOT_FOUND")


def test_message_to_a_terminal_task_is_unsupported_operation(desk, traffic):
    agent, _, raw = desk
    msg = user_message("start")
    raw.call(agent, send_rpc(msg))
    raw.call(agent, send_rpc(user_message("go on", task_id=msg["taskId"], context_id=msg["contextId"])))
    corr, m, _ = raw.call(agent, send_rpc(user_message("again", task_id=msg["taskId"], context_id=msg["contextId"]), 7))
    assert_error(m, corr, -32004, 7, reason="UNSUPPORTED_OPERATION")
    corr, m, _ = raw.call(agent, rpc("SubscribeToTask", {"id": msg["taskId"]}, "sub"))
    assert_error(m, corr, -32004, "sub", reason="UNSUPPORTED_OPERATION")


def test_cancel_of_a_terminal_task_is_task_not_cancelable(desk, traffic):
    agent, _, raw = desk
    msg = user_message("start")
    raw.call(agent, send_rpc(msg))
    _, _, canceled = raw.call(agent, rpc("CancelTask", {"id": msg["taskId"]}, "c1"))
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    corr, m, _ = raw.call(agent, rpc("CancelTask", {"id": msg["taskId"]}, "c2"))
    assert_error(m, corr, -32002, "c2", reason="TASK_NOT_CANCELABLE")


# -- transport errors: expiry and overload --------------------------------------------------------------
def test_request_that_expired_while_waiting_gets_request_expired(broker_url, traffic):
    agent = uid("busy")
    started = []

    def slow(ctx):
        started.append(ctx.text)
        ctx.wait(2.0)
        return "slow done"

    responder = Responder(agent, slow, broker=broker_url, options=ResponderOptions(workers=1))
    raw = RawClient(broker_url)
    c1 = raw.request(agent, send_rpc(user_message("first"), "r1"))
    assert wait_until(lambda: started, 3)
    expiring = user_message("second")
    c2 = raw.request(agent, send_rpc(expiring, "r2"), expiry=1)
    m = raw.reply(c2, timeout=5)
    assert_error(m, c2, -32003, "r2", "request_expired")
    assert json.loads(raw.reply(c1, 3).payload)["result"]["task"]["status"]["state"] == COMPLETED
    assert started == ["first"], "an expired request is never executed"
    assert responder.runtime.get(expiring["taskId"]) is None


def test_overloaded_responder_answers_responder_unavailable(broker_url, traffic):
    agent = uid("swamped")
    started = []

    def slow(ctx):
        started.append(ctx.text)
        ctx.wait(0.8)
        return f"done {ctx.text}"

    responder = Responder(agent, slow, broker=broker_url, options=ResponderOptions(workers=1, max_pending=1))
    raw = RawClient(broker_url)
    c1 = raw.request(agent, send_rpc(user_message("one"), "r1"))
    assert wait_until(lambda: started, 3)
    c2 = raw.request(agent, send_rpc(user_message("two"), "r2"))  # waits in the queue
    c3 = raw.request(agent, send_rpc(user_message("three"), "r3"))  # the queue is full
    m3 = raw.reply(c3, timeout=2)
    assert_error(m3, c3, -32004, "r3", "responder_unavailable")
    assert responder.stats.overloaded == 1
    for corr, text in ((c1, "one"), (c2, "two")):
        body = json.loads(raw.reply(corr, 4).payload)
        assert body["result"]["task"]["status"]["message"]["parts"][0]["text"] == f"done {text}"
    assert started == ["one", "two"]


def test_requester_retries_responder_unavailable_but_not_transport_protocol_error(broker_url, traffic):
    agent = uid("swamped")
    Responder(agent, lambda ctx: ctx.wait(1.5), broker=broker_url,
              options=ResponderOptions(workers=1, max_pending=1))
    raw = RawClient(broker_url)
    raw.request(agent, send_rpc(user_message("one")))
    time.sleep(0.2)
    raw.request(agent, send_rpc(user_message("two")))
    time.sleep(0.1)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    with pytest.raises(A2AError) as exc:
        req.send(agent, "three")
    assert exc.value.code == -32004 and exc.value.data["a2a_error"] == "responder_unavailable"
    sent = traffic.requests(agent, "SendMessage")
    mine = [b for m, b in sent if m.response_topic == req.reply_topic]
    assert len(mine) == FAST.max_attempts, "responder_unavailable is retry-eligible"
    assert len({b["params"]["message"]["messageId"] for b in mine}) == 1


def test_responder_never_echoes_the_bearer_token(desk, traffic):
    agent, _, raw = desk
    corr, ok, _ = raw.call(agent, send_rpc(user_message("hello")))
    no_token_echo(ok)
    corr, bad, _ = raw.call(agent, b"not json")
    no_token_echo(bad)
    traffic.settle()
    for m in traffic.snapshot():
        if not m.topic.startswith("$a2a/v1/request/"):
            no_token_echo(m)
    assert any(m.user_property("a2a-authorization") == f"Bearer {SECRET}" for m, _ in traffic.requests(agent))

"""Requester and responder request/reply behaviour against a real Mosquitto.

Profile: Client Session Requirements 2, Request/Reply Mapping, Requester Behavior (Interop),
Requester Retry and Timeout Profile, Multi-Turn Conversation Patterns, Error Handling and
Deduplication; task store persistence; concurrency.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pytest

from a2a_nb.agents import Requester, RequestTimeout, Responder, ResponderOptions, SqliteTaskStore, TaskRuntime
from a2a_nb.protocol import retry as retry_mod
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import DEFAULT, RetryProfile
from tests.integration._roles_support import (  # noqa: F401
    FAST, ORG, SECRET, UNIT, RawClient, RawResponder, check_kit_message, json_metadata_ok, is_uuid4,
    request_topic, send_rpc, traffic, uid, user_message, wait_until)

COMPLETED, WORKING, INPUT_REQUIRED = "TASK_STATE_COMPLETED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"


def echo(ctx):
    return f"echo: {ctx.text}"


class Counter:
    """A handler that counts its executions (per task) and optionally takes its time."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, ctx):
        with self.lock:
            self.calls.append(ctx.task_id)
        if self.delay:
            ctx.working("on it")
            ctx.wait(self.delay)
        return f"done: {ctx.text}"


def corr_of(m: MqttMessage) -> bytes:
    assert m.correlation_data is not None
    return m.correlation_data


# -- the observer check itself can fail ------------------------------------------------------------------
def test_the_payload_check_rejects_invalid_kit_output():
    bad_task = {"jsonrpc": "2.0", "id": "1", "result": {"task": {"id": "t", "contextId": "c",
                                                                   "status": {"state": "TASK_STATE_DONE"}}}}
    m = MqttMessage("$a2a/v1/reply/acme/support/x/y", encode_json(bad_task), correlation_data=b"c1")
    with pytest.raises(AssertionError):
        check_kit_message(m, {b"c1": "GetTask"})
    leaky = MqttMessage("$a2a/v1/reply/acme/support/x/y", b"{}", correlation_data=b"c1",
                        user_properties=(("a2a-authorization", "Bearer x"),))
    with pytest.raises(AssertionError, match="echoed"):
        check_kit_message(leaky, {b"c1": "GetTask"})
    bad_request = MqttMessage(request_topic("x"), encode_json({"jsonrpc": "2.0", "id": "1", "method": "GetTask",
                                                                "params": {"id": "t", "bogus": 1}}))
    with pytest.raises(AssertionError):
        check_kit_message(bad_request, {})


# -- requester ---------------------------------------------------------------------------------------
def test_reply_topic_is_subscribed_before_the_first_request(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    # Before any request: a message on the reply topic already reaches the requester, so the
    # subscription (SUBACK) preceded every publish that names this topic.
    raw = RawClient(broker_url)
    raw.publish(MqttMessage(req.reply_topic, b'{"jsonrpc":"2.0","id":"x","result":{}}', correlation_data=b"nobody"))
    assert wait_until(lambda: req.stats.ignored_unknown_correlation == 1, 3)
    assert traffic.requests(agent) == [], "no request may precede the reply-topic subscription"

    reply = req.send(agent, "hi")
    assert reply.text == "echo: hi"
    (first, body), = traffic.requests(agent)
    assert first.response_topic == req.reply_topic
    assert first.response_topic.startswith(f"$a2a/v1/reply/{ORG}/{UNIT}/{req.agent}/")
    assert first.correlation_data and len(first.correlation_data) >= 8
    assert first.qos == 1 and json_metadata_ok(first)
    assert first.message_expiry is not None and first.message_expiry > FAST.reply_first_timeout_s
    assert body["method"] == "SendMessage"
    # the reply echoed that correlation on the requester's reply topic
    (answer,) = traffic.replies(first.correlation_data)
    assert answer.topic == req.reply_topic and answer.qos == 1


def test_every_publish_gets_fresh_correlation_data(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    r1 = req.send(agent, "one")
    req.send(agent, "two")
    req.get_task(r1.task_id)
    req.list_tasks(agent)
    reqs = traffic.requests(agent)
    assert len(reqs) == 4
    corrs = [m.correlation_data for m, _ in reqs]
    assert len(set(corrs)) == 4, "each publish needs its own Correlation Data"
    # Correlation Data is not the Task.id (Request/Reply Mapping 5)
    assert all(c != r1.task_id.encode() for c in corrs)


def test_replies_with_unknown_or_missing_correlation_are_ignored_and_counted(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, Counter(delay=0.6), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=RetryProfile(reply_first_timeout_s=3,
                                                                         stream_idle_timeout_s=1, max_attempts=1))
    raw = RawClient(broker_url)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", req.send(agent, "real")))
    t.start()
    (sent, body), = traffic.wait_for(lambda m: m.topic == request_topic(agent)) and traffic.requests(agent)
    fake_task = {"id": body["params"]["message"]["taskId"], "contextId": body["params"]["message"]["contextId"],
                 "status": {"state": COMPLETED, "message": {"messageId": "f", "role": "ROLE_AGENT",
                                                            "parts": [{"text": "FAKE"}]}}}
    fake = encode_json({"jsonrpc": "2.0", "id": body["id"], "result": {"task": fake_task}})
    raw.publish(MqttMessage(req.reply_topic, fake, correlation_data=b"not-a-known-correlation"))
    raw.publish(MqttMessage(req.reply_topic, fake))  # no Correlation Data at all
    raw.publish(MqttMessage(req.reply_topic, fake, correlation_data=uuid.uuid4().bytes))
    t.join(5)
    assert result["r"].text == "done: real", "a reply without the request's correlation must never be taken"
    assert req.stats.ignored_unknown_correlation == 2
    assert req.stats.ignored_missing_correlation == 1
    assert req.stats.replies == 1
    assert req.send(agent, "again").text == "done: again"  # the requester still works


def test_first_message_carries_requester_made_uuid4_task_and_context_ids(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    reply = req.send(agent, "hi")
    (_, body), = traffic.requests(agent, "SendMessage")
    msg = body["params"]["message"]
    assert is_uuid4(msg["taskId"]) and is_uuid4(msg["contextId"])
    assert msg["role"] == "ROLE_USER"
    assert reply.task_id == msg["taskId"], "the responder must use the requester's Task.id"
    assert reply.context_id == msg["contextId"]
    other = req.send(agent, "new task")
    assert other.task_id != reply.task_id and other.context_id != reply.context_id


def test_timed_out_request_is_resent_with_same_ids_and_new_correlation(broker_url, traffic):
    agent = uid("flaky")
    responder = RawResponder(broker_url, agent, answer_on=2)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST, seed=1)
    t0 = time.time()
    reply = req.send(agent, "please")
    assert reply.state == COMPLETED and reply.text == "answered delivery 2"
    assert len(reply.attempts) == 2 and req.stats.retries == 1
    assert len(responder.received) == 2
    a, b = [json.loads(m.payload) for m in responder.received]
    assert a["params"]["message"]["messageId"] == b["params"]["message"]["messageId"]
    assert a["params"]["message"]["taskId"] == b["params"]["message"]["taskId"]
    assert a["params"]["message"]["contextId"] == b["params"]["message"]["contextId"]
    c1, c2 = (m.correlation_data for m in responder.received)
    assert c1 and c2 and c1 != c2
    seen = [m for m, _ in traffic.requests(agent)]
    assert [m.correlation_data for m in seen] == [c1, c2]
    gap = seen[1].received_at - seen[0].received_at
    assert gap >= FAST.reply_first_timeout_s + FAST.backoff_bounds(1)[0] - 0.05, gap
    assert time.time() - t0 < 3


def test_on_attempt_reports_each_attempt_as_its_outcome_is_known(broker_url, traffic):
    agent = uid("flaky")
    RawResponder(broker_url, agent, answer_on=2)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST, seed=1)
    seen: list[tuple[int, Optional[int], str, int]] = []
    req.on_attempt = lambda a: seen.append((a.number, a.reason_code, a.outcome, len(traffic.requests(agent))))
    reply = req.send(agent, "please")
    assert [(n, code, outcome) for n, code, outcome, _ in seen] == [
        (1, 0, f"no reply within {FAST.reply_first_timeout_s:g} s"), (2, 0, "answered")]
    assert seen[0][3] == 1, "the first attempt is reported before the second is published"
    assert [a.outcome for a in reply.attempts] == ["no reply within 0.5 s", "answered"]

    def broken(_attempt) -> None:
        raise RuntimeError("a printing hook that fails")

    req.on_attempt = broken  # a failing hook is logged; the operation goes on
    assert req.send(RawResponder(broker_url, uid("once"), answer_on=1).agent, "hi").state == COMPLETED


def test_silent_responder_gives_a_timeout_after_max_attempts(broker_url, traffic):
    agent = uid("silent")
    RawResponder(broker_url, agent, answer_on=99)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    with pytest.raises(RequestTimeout):
        req.send(agent, "anyone?")
    seen = traffic.requests(agent)
    assert len(seen) == FAST.max_attempts
    assert len({m.correlation_data for m, _ in seen}) == FAST.max_attempts
    assert len({b["params"]["message"]["taskId"] for _, b in seen}) == 1
    assert req._inflight == {}, "a finished operation leaves nothing in flight"


def test_retry_profile_defaults_are_the_profile_values(broker_url, traffic):
    assert DEFAULT == RetryProfile(15.0, 30.0, 3, (1.0, 2.0, 4.0), 0.2)
    assert retry_mod.DEFAULT.reply_first_timeout_s == 15.0 and DEFAULT.stream_idle_timeout_s == 30.0
    assert DEFAULT.max_attempts == 3 and DEFAULT.backoff_s == (1.0, 2.0, 4.0) and DEFAULT.jitter == 0.2
    assert [DEFAULT.backoff_bounds(i) for i in (1, 2, 3)] == [(0.8, 1.2), (1.6, 2.4), (3.2, 4.8)]
    assert RetryProfile.from_ms() == DEFAULT
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url)
    assert req.retry is DEFAULT
    req.send(agent, "hi")
    (m, _), = traffic.requests(agent)
    assert m.message_expiry is not None and m.message_expiry > 15, "expiry must exceed reply_first_timeout"


def test_slow_first_reply_is_retried_and_deduplicated_by_task_id(broker_url, traffic):
    agent = uid("slow")
    handler = Counter(delay=1.2)
    responder = Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    reply = req.send(agent, "take your time")
    assert reply.state == COMPLETED and reply.text == "done: take your time"
    assert len(reply.attempts) >= 2, "the first attempt timed out and was retried"
    assert handler.calls == [reply.task_id], "the retried request must not run the work again"
    assert responder.stats.executions == 1
    ids = {b["params"]["message"]["messageId"] for _, b in traffic.requests(agent)}
    assert len(ids) == 1


# -- dedup with an independent client ---------------------------------------------------------------------
def test_retried_first_request_while_working_returns_the_existing_task(broker_url, traffic):
    agent = uid("dedup")
    handler = Counter(delay=0.8)
    Responder(agent, handler, broker=broker_url)
    raw = RawClient(broker_url)
    msg = user_message("work")
    payload = send_rpc(msg, rid="r-1")
    c1 = raw.request(agent, payload)
    assert wait_until(lambda: handler.calls, 3)
    c2 = raw.request(agent, payload)  # the same request retried: same Task.id and messageId, new correlation
    r1, r2 = raw.reply(c1, 4), raw.reply(c2, 4)
    assert r1 is not None and r2 is not None
    t1, t2 = json.loads(r1.payload)["result"]["task"], json.loads(r2.payload)["result"]["task"]
    assert t1["id"] == t2["id"] == msg["taskId"] and t2["status"]["state"] == COMPLETED
    assert json.loads(r2.payload)["id"] == "r-1" and r2.correlation_data == c2
    c3 = raw.request(agent, payload)  # and once more after completion
    t3 = json.loads(raw.reply(c3).payload)["result"]["task"]
    assert t3["id"] == msg["taskId"] and t3["status"]["state"] == COMPLETED
    assert handler.calls == [msg["taskId"]], "the handler ran once for three deliveries"


def test_retry_after_input_required_returns_the_interrupted_task_without_rerunning(broker_url, traffic):
    agent = uid("dedup")
    calls = []

    def ask(ctx):
        calls.append(ctx.turn)
        ctx.ask_input("which colour?")

    Responder(agent, ask, broker=broker_url)
    raw = RawClient(broker_url)
    payload = send_rpc(user_message("paint it"))
    _, _, first = raw.call(agent, payload)
    _, _, again = raw.call(agent, payload)
    assert first["result"]["task"]["status"]["state"] == INPUT_REQUIRED
    assert again["result"]["task"]["status"]["state"] == INPUT_REQUIRED
    assert calls == [1]


# -- multi-turn ----------------------------------------------------------------------------------------
def test_a_turn_that_ends_after_the_requester_answered_leaves_the_task_to_the_next_turn(broker_url):
    """The first run asks for input and returns only once the answer has started the second run: that
    late return must not complete the task the second run is working on."""
    agent = uid("late")
    second_started, first_returned = threading.Event(), threading.Event()

    def paint(ctx):
        if ctx.turn == 1:
            ctx.ask_input("which colour?")
            assert second_started.wait(30), "the continuation never started a second run"
            first_returned.set()
            return "done?"  # a plain return: would complete the task if it were still this run's
        second_started.set()
        ctx.working("mixing the paint")
        assert first_returned.wait(30)
        time.sleep(0.2)  # the first run's end has been decided by now
        ctx.complete(f"painted {ctx.text}")

    responder = Responder(agent, paint, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    first = req.send(agent, "paint the door")
    assert first.state == INPUT_REQUIRED
    second = req.continue_task(first, "blue")
    assert second.state == COMPLETED and second.text == "painted blue"
    assert responder.stats.handler_crashes == 0
    history = [m["parts"][0]["text"] for m in req.get_task(first.task_id)["history"]]
    assert "done?" not in history and history[-1] == "painted blue"


def test_multi_turn_input_required_then_continue_then_new_turn(broker_url, traffic):
    agent = uid("painter")

    def paint(ctx):
        if ctx.turn == 1:
            ctx.ask_input("which colour?")
        else:
            ctx.complete(f"painted {ctx.text} (turn {ctx.turn})")

    Responder(agent, paint, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    first = req.send(agent, "paint the door")
    assert first.state == INPUT_REQUIRED and first.text == "which colour?"
    second = req.continue_task(first, "blue")
    assert second.state == COMPLETED and second.text == "painted blue (turn 2)"
    assert second.task_id == first.task_id and second.context_id == first.context_id

    (m1, b1), (m2, b2) = traffic.requests(agent, "SendMessage")
    assert b1["params"]["message"]["messageId"] != b2["params"]["message"]["messageId"]
    assert b1["params"]["message"]["taskId"] == b2["params"]["message"]["taskId"] == first.task_id
    assert b1["params"]["message"]["contextId"] == b2["params"]["message"]["contextId"] == first.context_id
    assert m1.correlation_data != m2.correlation_data

    third = req.send(agent, "paint the wall", context_id=first.context_id)  # new turn, same conversation
    assert third.task_id != first.task_id and is_uuid4(third.task_id)
    assert third.context_id == first.context_id
    assert third.state == INPUT_REQUIRED
    listed = req.list_tasks(agent, context_id=first.context_id)
    assert {t["id"] for t in listed["tasks"]} == {first.task_id, third.task_id}
    history = req.get_task(first.task_id, history_length=10)["history"]
    assert [h["role"] for h in history] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"]


def test_message_to_a_completed_task_is_refused_without_retry(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    done = req.send(agent, "hi")
    with pytest.raises(A2AError) as exc:
        req.continue_task(done, "more")
    assert exc.value.code == -32004
    assert len(traffic.requests(agent, "SendMessage")) == 2, "a core -32004 is not retry-eligible"


def test_handler_exception_fails_the_task_with_a_reason_and_the_agent_keeps_serving(broker_url, traffic):
    agent = uid("fragile")

    def fragile(ctx):
        if "boom" in ctx.text:
            raise ValueError("the printer is on fire")
        return f"fine: {ctx.text}"

    responder = Responder(agent, fragile, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    bad = req.send(agent, "boom")
    assert bad.state == "TASK_STATE_FAILED"
    assert "the printer is on fire" in bad.text and "ValueError" in bad.text
    assert responder.stats.handler_crashes == 1
    assert req.send(agent, "next").text == "fine: next"
    assert req.get_task(bad.task_id)["status"]["state"] == "TASK_STATE_FAILED"


def test_cancel_a_working_task(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, Counter(delay=5), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    started = req.send(agent, "long job", return_immediately=True)
    assert started.state in ("TASK_STATE_SUBMITTED", WORKING)
    t0 = time.time()
    canceled = req.cancel_task(started.task_id)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert time.time() - t0 < 2
    time.sleep(0.2)
    assert req.get_task(started.task_id)["status"]["state"] == "TASK_STATE_CANCELED"


def test_bearer_token_of_a_requester_is_sent_but_never_echoed(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST, token=SECRET,
                    allow_token_without_tls=True)  # the shared test broker is plain MQTT
    reply = req.send(agent, "hi")
    (m, _), = traffic.requests(agent)
    assert m.user_property("a2a-authorization") == f"Bearer {SECRET}"
    assert all(k != "a2a-authorization" for k, _ in reply.mqtt.user_properties)
    assert SECRET.encode() not in reply.mqtt.payload


# -- handover ----------------------------------------------------------------------------------------
def test_handover_reroutes_follow_ups_to_the_instance(broker_url, traffic):
    card_agent, instance = uid("front"), uid("worker")
    runtime = TaskRuntime()
    worker = Responder(instance, echo, runtime=runtime, broker=broker_url)

    def front(ctx):
        ctx.hand_over(worker)
        ctx.complete(f"handled by {ctx.agent}")

    Responder(card_agent, front, runtime=runtime, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    reply = req.send(card_agent, "hi")
    assert reply.responder == instance
    assert req.routing.target(reply.task_id).agent == instance
    req.get_task(reply.task_id)
    (m, _), = traffic.requests(instance, "GetTask")
    assert json.loads(m.payload)["params"]["id"] == reply.task_id


# -- task store ---------------------------------------------------------------------------------------
def test_sqlite_store_survives_a_responder_restart(broker_url, traffic, tmp_path):
    agent = uid("durable")
    db = tmp_path / "tasks.db"
    first_handler = Counter()
    first = Responder(agent, first_handler, runtime=TaskRuntime(store=SqliteTaskStore(db)), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    done = req.send(agent, "remember me")
    assert done.state == COMPLETED
    first.stop()

    second_handler = Counter()
    Responder(agent, second_handler, runtime=TaskRuntime(store=SqliteTaskStore(db)), broker=broker_url)
    task = req.get_task(done.task_id)
    assert task["id"] == done.task_id and task["status"]["state"] == COMPLETED
    assert task["status"]["message"]["parts"][0]["text"] == "done: remember me"
    # a retry of the original request (from the same requester) after the restart is still deduplicated
    req.close()
    raw = RawClient(broker_url, agent=req.agent)
    original = traffic.requests(agent, "SendMessage")[0][1]
    _, _, again = raw.call(agent, original)
    assert again["result"]["task"]["status"]["state"] == COMPLETED
    assert second_handler.calls == []
    raw.session.close()
    req = Requester(req.agent, broker=broker_url, retry=FAST)
    with pytest.raises(A2AError) as exc:
        req.send(agent, message=req.new_message("more", task_id=done.task_id, context_id=done.context_id))
    assert exc.value.code == -32004


# -- concurrency ---------------------------------------------------------------------------------------
def test_two_requesters_and_two_responders_do_not_cross_talk(broker_url, traffic):
    a, b = uid("alpha"), uid("beta")
    Responder(a, lambda ctx: f"{a}:{ctx.text}", broker=broker_url)
    Responder(b, lambda ctx: f"{b}:{ctx.text}", broker=broker_url)
    r1 = Requester(uid("coord1"), broker=broker_url, retry=FAST)
    r2 = Requester(uid("coord2"), broker=broker_url, retry=FAST)
    assert r1.reply_topic != r2.reply_topic

    def job(args):
        requester, to, i = args
        text = f"{requester.agent}#{i}"
        reply = requester.send(to, text)
        return to, text, reply

    work = [(r, to, i) for r in (r1, r2) for to in (a, b) for i in range(10)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(job, work))
    for to, text, reply in results:
        assert reply.text == f"{to}:{text}"
        assert reply.mqtt.topic == (r1 if text.startswith(r1.agent) else r2).reply_topic
    for r in (r1, r2):
        assert r.stats.ignored_unknown_correlation == 0 and r.stats.ignored_missing_correlation == 0
        assert r.stats.replies == 20


def test_one_hundred_concurrent_tasks_none_lost(broker_url, traffic):
    agent = uid("busy")
    handler = Counter()
    responder = Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url,
                    retry=RetryProfile(reply_first_timeout_s=5, stream_idle_timeout_s=5, max_attempts=3,
                                       backoff_s=(0.05, 0.1, 0.2)))
    with ThreadPoolExecutor(100) as pool:
        replies = list(pool.map(lambda i: (i, req.send(agent, f"n{i}")), range(100)))
    assert len(replies) == 100
    for i, reply in replies:
        assert reply.state == COMPLETED and reply.text == f"done: n{i}"
    assert len({r.task_id for _, r in replies}) == 100
    assert sorted(handler.calls) == sorted(r.task_id for _, r in replies)
    assert responder.stats.executions == 100
    assert req._inflight == {}


def test_blocking_send_waiting_on_a_canceled_task_gets_the_canceled_task(broker_url, traffic):
    agent = uid("desk")
    handler = Counter(delay=5)
    Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=RetryProfile(reply_first_timeout_s=4, stream_idle_timeout_s=1))
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("reply", req.send(agent, "long")))
    t.start()
    assert wait_until(lambda: handler.calls, 3)
    req.cancel_task(handler.calls[0], to=agent)  # the same requester, from another thread
    t.join(3)
    assert out["reply"].state == "TASK_STATE_CANCELED"
    assert len(out["reply"].attempts) == 1


def test_a_message_answer_is_returned_as_a_message(broker_url, traffic):
    agent = uid("chat")
    Responder(agent, lambda ctx: ctx.respond(f"re: {ctx.text}"), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    reply = req.send(agent, "hello")
    assert reply.task is None and reply.message["role"] == "ROLE_AGENT"
    assert reply.text == "re: hello"
    assert reply.message["taskId"] == traffic.requests(agent, "SendMessage")[0][1]["params"]["message"]["taskId"]


def test_an_inline_responder_answers_on_its_network_thread_and_starts_no_workers(broker_url, traffic):
    agent = uid("inline")
    threads = []

    def handler(ctx):
        threads.append(threading.current_thread().name)
        ctx.respond(ctx.text)

    Responder(agent, handler, broker=broker_url, options=ResponderOptions(inline=True))
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    assert req.send(agent, "ping").text == "ping"
    assert req.send(agent, "pong").text == "pong"
    assert threads == [f"mqtt-{ORG}/{UNIT}/{agent}"] * 2  # the session's network thread, both times
    assert not [t.name for t in threading.enumerate() if t.name.startswith(f"{agent}-worker-")]


def test_list_tasks_pages_through_every_task_of_a_context(broker_url, traffic):
    agent = uid("desk")
    Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    ctx = str(uuid.uuid4())
    ids = [req.send(agent, f"t{i}", context_id=ctx).task_id for i in range(5)]
    req.send(agent, "elsewhere")
    seen, token, pages = [], None, 0
    while True:
        page = req.list_tasks(agent, context_id=ctx, page_size=2, page_token=token)
        pages += 1
        assert page["totalSize"] == 5 and len(page["tasks"]) <= 2
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert pages == 3 and seen == ids
    assert len(req.list_tasks(agent)["tasks"]) == 6
    done = req.list_tasks(agent, status="TASK_STATE_COMPLETED")
    assert done["totalSize"] == 6

"""Shared pool dispatch (user story 05) against a real Mosquitto.

Profile: Optional Shared Subscription Dispatch 2-11, Requester Behavior 6-8, Requester Retry and
Timeout Profile 9. Requesters publish only to the canonical pool topic, never to ``$share/...``;
exactly one member handles each pooled task; every pooled reply names its responder with
``a2a-responder-agent-id`` (missing: a protocol error); follow-ups and retries go to that member's
direct topic once known, and to the pool topic before.

Mosquitto 2.0.11 does not deliver ``$share`` subscriptions on ``$`` topics, so kit members fall back
to the plain pool topic with slot claiming (``Responder.pool_mode`` says which); the tests hold for
both modes. Nothing is mocked.
"""
from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pytest

from a2a_nb.agents import ProtocolError, Requester, RequestTimeout, Responder
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import pools, topics
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.protocol.routing import Address
from tests.integration._roles_support import HAND_BUILT, ORG, Traffic, hand_key, traffic  # noqa: F401
from tests.helpers import uid

SHORT = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=1.5, max_attempts=3,
                     backoff_s=(0.05, 0.1, 0.2))
PROP = "a2a-responder-agent-id"
COMPLETED = "TASK_STATE_COMPLETED"


def req_topic(unit: str, agent: str) -> str:
    return f"$a2a/v1/request/{ORG}/{unit}/{agent}"


def pool_topic(unit: str, pool: str) -> str:
    return f"$a2a/v1/request/{ORG}/{unit}/pool/{pool}"


def task_id_of_request(body: dict) -> Optional[str]:
    p = body.get("params") or {}
    return (p.get("message") or {}).get("taskId") or p.get("id")


def task_requests(traffic, task_id: str) -> list[tuple[MqttMessage, dict]]:
    return Wire(traffic).for_task(task_id)


class Wire:
    """One settled snapshot of what the observer saw, indexed (settling once, not per query)."""

    def __init__(self, traffic):
        self.requests = traffic.requests()  # settles
        self.messages = traffic.snapshot()

    def for_task(self, task_id: str) -> list[tuple[MqttMessage, dict]]:
        return [(m, b) for m, b in self.requests if isinstance(b, dict) and task_id_of_request(b) == task_id]

    def replies(self, correlation: bytes) -> list[MqttMessage]:
        return [m for m in self.messages if m.topic.startswith("$a2a/v1/reply/") and m.correlation_data == correlation]


@pytest.fixture
def late_traffic(broker_url):
    """An observer on ``$a2a/#`` started when the test asks (after the pool members: with a recorder on
    ``$a2a/#`` the members' $share probe cannot read PUBACK 16 and waits its full second); at teardown
    every kit payload must validate, as with ``traffic``."""
    made: list[Traffic] = []

    def start() -> Traffic:
        t = Traffic(broker_url)
        made.append(t)
        return t

    yield start
    for t in made:
        t.settle(0.08)
        checked, problems = t.kit_problems()
        assert not problems, f"{len(problems)} invalid kit payload(s) out of {checked}:\n" + "\n".join(problems[:20])


class CountingWork:
    """The members' handler: records which member executed which task."""

    def __init__(self):
        self.runs: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, ctx):
        with self._lock:
            self.runs.append((ctx.agent, ctx.task_id))
        return f"{ctx.agent} did {ctx.text}"


def kit_pool(broker_url: str, unit: str, pool: str, work, members: int = 3) -> list[Responder]:
    return [Responder(f"member-{i + 1}", work, unit=unit, pool=pool, broker=broker_url)
            for i in range(members)]


class RawPoolMember:
    """A pool member written from the profile: consumes the plain pool topic and its direct topic,
    answers pooled delivery number ``answer_on`` (with or without ``a2a-responder-agent-id``) and
    every direct request."""

    def __init__(self, broker_url: str, unit: str, pool: str, agent: str, *, answer_on: int = 1,
                 name_itself: bool = True):
        self.agent, self.answer_on, self.name_itself = agent, answer_on, name_itself
        self.pooled: list[MqttMessage] = []
        self.direct: list[MqttMessage] = []
        self.tasks: dict[str, dict] = {}
        self.session = Session(ORG, unit, agent, broker=broker_url)
        self.session.subscribe(pool_topic(unit, pool), handler=self._on_pool)
        self.session.subscribe(req_topic(unit, agent), handler=self._on_direct)

    def _on_pool(self, m: MqttMessage) -> None:
        self.pooled.append(m)
        if len(self.pooled) == self.answer_on:
            self._answer(m, pooled=True)

    def _on_direct(self, m: MqttMessage) -> None:
        self.direct.append(m)
        self._answer(m, pooled=False)

    def _answer(self, m: MqttMessage, pooled: bool) -> None:
        body = json.loads(m.payload)
        p = body["params"]
        if "message" in p:
            msg = p["message"]
            task = {"id": msg["taskId"], "contextId": msg["contextId"],
                    "status": {"state": COMPLETED, "timestamp": "2025-01-01T00:00:00.000Z"}, "history": [msg]}
            self.tasks[task["id"]] = task
            result = {"task": task}
        else:
            result = self.tasks[p["id"]]
        props = ((PROP, self.agent),) if (self.name_itself or not pooled) else ()
        if body["method"] == "SendStreamingMessage":
            result = {"task": result["task"]}
        reply = MqttMessage(m.response_topic, encode_json({"jsonrpc": "2.0", "id": body["id"], "result": result}),
                            qos=1, correlation_data=m.correlation_data, user_properties=props,
                            content_type="application/json", payload_format=1)
        HAND_BUILT[hand_key(reply)] += 1
        self.session.publish_nowait(reply)


# -- one request to the pool, one member; follow-ups direct ---------------------------------------------------
def test_every_pooled_task_is_handled_exactly_once_and_followed_up_on_its_member(broker_url, unit, late_traffic):
    pool = uid("analysts")
    work = CountingWork()
    members = kit_pool(broker_url, unit, pool, work)
    names = {m.agent for m in members}
    modes = {m.pool_mode for m in members}
    assert len(modes) == 1 and modes <= {"shared", "slot"}, modes
    traffic = late_traffic()
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)

    n = 30
    with ThreadPoolExecutor(10) as ex:
        replies = list(ex.map(lambda i: req.send(f"pool:{pool}", f"job {i}"), range(n)))
    tids = [r.task_id for r in replies]
    assert len(set(tids)) == n and all(r.state == COMPLETED for r in replies)

    # exactly once, by the member its reply names
    executed = Counter(t for _, t in work.runs)
    assert executed == Counter(tids), "a pooled task ran twice or not at all"
    assert sum(m.stats.executions for m in members) == n
    by_task = {t: a for a, t in work.runs}
    for r in replies:
        assert r.responder in names and r.responder == by_task[r.task_id]
        assert r.mqtt.user_property(PROP) == r.responder
        assert [a.topic for a in r.attempts] == [pool_topic(unit, pool)] * len(r.attempts)
        assert req.routing.target(r.task_id) == Address(ORG, unit, agent=r.responder)
        assert req.routing.card(r.task_id) == Address(ORG, unit, pool=pool)
        assert [(h.cause, h.to.agent) for h in req.routing.reroutes(r.task_id)] == [("pool-assigned", r.responder)]
        if modes == {"slot"}:
            assert r.responder == pools.claim(r.task_id, names)
    assert len({r.responder for r in replies}) > 1, "one member took every task: not dispatched"

    followed = replies[:6]
    for r in followed:
        task = req.get_task(r.task_id)
        assert task["id"] == r.task_id and task["status"]["state"] == COMPLETED

    # the wire: sends only on the pool topic (never $share), replies name the member, GetTask direct
    seen = Wire(traffic)
    assert not any(m.topic.startswith("$share") for m, _ in seen.requests)
    for r in replies:
        wire = seen.for_task(r.task_id)
        sends = [(m, b) for m, b in wire if b["method"] == "SendMessage"]
        assert sends and all(m.topic == pool_topic(unit, pool) for m, _ in sends)
        for m, _ in sends:
            answers = seen.replies(m.correlation_data)
            assert answers and all(rep.user_property(PROP) == r.responder for rep in answers)
        gets = [m for m, b in wire if b["method"] == "GetTask"]
        if r in followed:
            assert [m.topic for m in gets] == [req_topic(unit, r.responder)]
            assert gets[0].correlation_data not in {m.correlation_data for m, _ in sends}
        else:
            assert gets == []


def test_group_id_is_deterministic_and_shared_by_every_member(broker_url, unit):
    pool = uid("analysts")
    expected = re.sub(r"[^A-Za-z0-9._]", "_", f"a2a.{ORG}.{unit}.{pool}")
    assert topics.group_id(ORG, unit, pool) == expected
    members = kit_pool(broker_url, unit, pool, CountingWork())
    later = Responder("member-late", CountingWork(), unit=unit, pool=pool, broker=broker_url)
    for m in members + [later]:
        filters = [s.filter for s, _ in m.session._subs]
        if m.pool_mode == "shared":
            assert f"$share/{expected}/{pool_topic(unit, pool)}" in filters
        else:
            assert m.pool_mode == "slot" and pool_topic(unit, pool) in filters
            assert not any(f.startswith("$share/") for f in filters)
    groups = {topics.group_id(m.org, m.unit, m.pool) for m in members + [later]}
    assert groups == {expected}
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}", expected.replace(pool, "").replace(unit, ""))


# -- retries before and after the responder is known ----------------------------------------------------------
def test_retries_before_a_member_answered_target_the_pool_topic(broker_url, unit, traffic):
    pool = uid("analysts")
    member = RawPoolMember(broker_url, unit, pool, uid("raw-member"), answer_on=2)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)
    reply = req.send(f"pool:{pool}", "hello pool")
    assert reply.state == COMPLETED and reply.responder == member.agent
    assert [a.topic for a in reply.attempts] == [pool_topic(unit, pool)] * 2
    assert reply.attempts[0].outcome.startswith("no reply") and reply.attempts[1].outcome == "answered"
    assert req.stats.retries == 1

    wire = task_requests(traffic, reply.task_id)
    sends = [(m, b) for m, b in wire if b["method"] == "SendMessage"]
    assert [m.topic for m, _ in sends] == [pool_topic(unit, pool)] * 2
    assert sends[0][0].correlation_data != sends[1][0].correlation_data
    assert sends[0][1]["params"]["message"] == sends[1][1]["params"]["message"]  # same Task.id, same messageId

    task = req.get_task(reply.task_id)
    assert task["id"] == reply.task_id
    gets = [m for m, b in task_requests(traffic, reply.task_id) if b["method"] == "GetTask"]
    assert [m.topic for m in gets] == [req_topic(unit, member.agent)]
    assert len(member.pooled) == 2 and len(member.direct) == 1


def test_retries_after_the_member_is_known_stay_on_its_direct_topic(broker_url, unit, traffic):
    """Profile: Requester Retry 9: once a2a-responder-agent-id is known, follow-ups AND their retries
    target the member's direct topic. A silent member ends in RequestTimeout, not in a GetTask on the
    pool topic (another member would not know the task)."""
    pool = uid("analysts")
    member = RawPoolMember(broker_url, unit, pool, uid("raw-member"))
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)
    reply = req.send(f"pool:{pool}", "hello pool")
    assert reply.responder == member.agent
    member.session.close()

    with pytest.raises(RequestTimeout):
        req.get_task(reply.task_id)
    gets = [m for m, b in task_requests(traffic, reply.task_id) if b["method"] == "GetTask"]
    assert len({m.correlation_data for m in gets}) == len(gets) >= SHORT.max_attempts
    assert [m.topic for m in gets] == [req_topic(unit, member.agent)] * len(gets), \
        "a follow-up for a pooled task whose member is known went back to the pool topic"
    assert req.routing.target(reply.task_id).agent == member.agent


# -- a pooled reply without a2a-responder-agent-id -------------------------------------------------------------
def test_a_pooled_reply_without_responder_id_is_a_protocol_error(broker_url, unit, traffic):
    pool = uid("analysts")
    RawPoolMember(broker_url, unit, pool, uid("raw-anon"), answer_on=1, name_itself=False)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)
    message = req.new_message("who answers?")
    with pytest.raises(ProtocolError, match=PROP):
        req.send(f"pool:{pool}", message=message)
    # a correlated reply arrived: no retry; and no responder is known, so the task stays on the pool
    sends = [m for m, b in task_requests(traffic, message["taskId"]) if b["method"] == "SendMessage"]
    assert [m.topic for m in sends] == [pool_topic(unit, pool)]
    assert req.routing.target(message["taskId"]) == Address(ORG, unit, pool=pool)
    assert req.routing.reroutes() == []


def test_a_pooled_stream_item_without_responder_id_is_a_protocol_error(broker_url, unit, traffic):
    pool = uid("analysts")
    member = RawPoolMember(broker_url, unit, pool, uid("raw-anon"), answer_on=1, name_itself=False)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)
    stream = req.stream(f"pool:{pool}", "stream please")
    with pytest.raises(ProtocolError, match=PROP):
        next(stream)
    # The request is over for the requester: a late item on its correlation is an unknown one.
    (m,) = member.pooled
    late = MqttMessage(m.response_topic, encode_json({"jsonrpc": "2.0", "id": json.loads(m.payload)["id"],
                                                      "result": {"task": member.tasks[stream.task_id]}}),
                       qos=1, correlation_data=m.correlation_data, user_properties=((PROP, member.agent),),
                       content_type="application/json", payload_format=1)
    HAND_BUILT[hand_key(late)] += 1
    before = req.stats.ignored_unknown_correlation
    member.session.publish(late)
    deadline = time.time() + 2
    while time.time() < deadline and req.stats.ignored_unknown_correlation == before:
        time.sleep(0.01)
    assert req.stats.ignored_unknown_correlation == before + 1, \
        "the failed stream's Correlation Data stayed in the in-flight map"
    assert uuid.UUID(stream.task_id).version == 4


# -- claims: the other members see who took a request ---------------------------------------------------------
def test_each_pooled_request_is_claimed_once_by_the_member_that_answers_it(broker_url, unit):
    """Slot mode: the winner claims every request it takes on ``$a2a-nb-pool/{org}/{unit}/{pool}/{agent}``
    (Correlation Data of the request), so the others never take it over in the normal case."""
    pool = uid("analysts")
    work = CountingWork()
    members = kit_pool(broker_url, unit, pool, work)
    if members[0].pool_mode != "slot":
        pytest.skip("the broker dispatches $share itself: no claims")
    claims: list[MqttMessage] = []
    watcher = Session(ORG, unit, uid("watcher"), broker=broker_url)
    watcher.subscribe(pools.claims_filter(ORG, unit, pool), handler=claims.append)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)
    n = 20
    with ThreadPoolExecutor(8) as ex:
        replies = list(ex.map(lambda i: req.send(f"pool:{pool}", f"job {i}"), range(n)))
    deadline = time.time() + 2
    while time.time() < deadline and len(claims) < n:
        time.sleep(0.01)
    by_correlation = Counter(m.correlation_data for m in claims)
    assert len(by_correlation) == n and set(by_correlation.values()) == {1}, by_correlation
    for r in replies:
        (claim,) = [m for m in claims if m.correlation_data == r.attempts[-1].correlation.encode()]
        assert claim.topic == pools.claims_topic(ORG, unit, pool, r.responder) and claim.payload == b""
    assert Counter(t for _, t in work.runs) == Counter(r.task_id for r in replies)
    deadline = time.time() + 2  # the members read the same claims
    while time.time() < deadline and any(m.pool_membership.waiting for m in members):
        time.sleep(0.01)
    assert all(m.pool_membership.taken_over == 0 and m.pool_membership.waiting == 0 for m in members)

"""Agents a learner can trust: attacks from a client that has a login, against a real Mosquitto.

* No reflected replies: a Response Topic outside the reply namespace (the agent's own card topic, a
  request or event topic, a wildcard, another unit's replies) is dropped and the work never runs.
* Tasks belong to their requester: GetTask, CancelTask, SubscribeToTask, continuation SendMessage and
  ListTasks from anyone else answer as for an unknown task (-32001), also after a handover; with a
  bearer policy the token's subject is part of the identity.
* Correlation Data and reply suffixes of a seeded requester (the lessons' coordinator) cannot be
  predicted from the seed: a forged reply built from ``IdSource(4821)`` is ignored.
* Memory stays bounded: finished tasks leave the runtime, the memory store keeps a bounded number.
"""
from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from a2a_nb.agents.auth import LocalIssuer
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.agents.runtime import TaskRuntime
from a2a_nb.agents.store import MemoryTaskStore, TaskRecord
from a2a_nb.mqtt.session import Session, Subscription
from a2a_nb.protocol import errors, jsonrpc, messages, states, topics
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.ids import IdSource
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from tests.waiting import wait_until
from tests.helpers import uid

ORG = "acme"
FAST = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.1,))


class Wire:
    """Everything published under ``$a2a/`` and on one plain topic, seen by a separate client."""

    def __init__(self, broker_url: str, unit: str, also: str = "plain/#"):
        self.messages: list[MqttMessage] = []
        self.lock = threading.Lock()
        self.session = Session(ORG, unit, uid("wire"), broker=broker_url)
        for f in ("$a2a/#", also):
            self.session.subscribe(Subscription(f, qos=1, retain_handling=2), handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self.lock:
            self.messages.append(m)

    def on(self, topic: str) -> list[MqttMessage]:
        with self.lock:
            return [m for m in self.messages if m.topic == topic]


def send_body(text: str) -> dict:
    message = messages.user_message(text, message_id=str(uuid.uuid4()), task_id=str(uuid.uuid4()))
    return jsonrpc.request(jsonrpc.SEND_MESSAGE, {"message": message}, str(uuid.uuid4()))


def retained_card(broker_url: str, unit: str, agent: str) -> dict:
    """What a new discovery subscriber gets on the agent's card topic now."""
    got = []
    s = Session(ORG, unit, uid("look"), broker=broker_url)
    s.subscribe(topics.discovery_topic(ORG, unit, agent), handler=got.append)
    assert wait_until(lambda: got, 3), "no retained card"
    s.close()
    return json.loads(got[-1].payload)


# -- 1. no reflected replies -------------------------------------------------------------------------
def test_requests_naming_a_foreign_response_topic_are_dropped_and_never_run(broker_url, unit):
    desk = TicketDesk(unit=unit, broker=broker_url, handover="none", pace=0.0)
    wire = Wire(broker_url, unit)
    attacker = Session(ORG, unit, uid("mallory"), broker=broker_url)
    foreign = [
        topics.discovery_topic(ORG, unit, "ticket-desk"),   # the desk's own retained card
        topics.request_topic(ORG, unit, "ticket-desk"),     # a request topic (the desk would talk to itself)
        topics.event_topic(ORG, unit, "ticket-desk"),
        f"$a2a/v1/reply/{ORG}/{unit}/#",                    # wildcards cannot be published to
        f"$a2a/v1/reply/{ORG}/other-unit/coordinator/abc",  # another unit's replies
        f"$a2a/v1/reply/{ORG}/{unit}/",                     # the namespace itself, no topic in it
        "plain/topic",                                      # outside $a2a/ altogether
    ]
    before = desk.desk.stats.executions
    for topic in foreign:
        attacker.publish(MqttMessage(topics.request_topic(ORG, unit, "ticket-desk"),
                                     encode_json(send_body("TCK-4821 overwrite your card")), qos=1,
                                     response_topic=topic, correlation_data=b"attack"))
    assert wait_until(lambda: desk.desk.stats.dropped >= len(foreign), 5)
    time.sleep(0.3)
    assert desk.desk.stats.executions == before, "the work of a dropped request ran"
    for topic in foreign:
        replies = [m for m in wire.on(topic) if m.correlation_data == b"attack" and b'"method"' not in m.payload]
        assert not replies, f"a reply went to {topic}"
    card = retained_card(broker_url, unit, "ticket-desk")
    assert card["name"] == "Ticket desk" and "error" not in card
    # the desk still answers a good request
    with Requester(uid("coordinator"), unit=unit, broker=broker_url, retry=FAST) as req:
        reply = req.send("ticket-desk", "TCK-4821: order status not updating. Reproduction: pay, then reload")
        assert reply.state == states.COMPLETED
    desk.stop()


def test_an_operator_can_allow_another_reply_prefix(broker_url, unit):
    agent = uid("echo")
    Responder(agent, lambda ctx: ctx.respond("ok"), unit=unit, broker=broker_url,
              options=ResponderOptions(reply_namespaces=(f"$a2a/v1/reply/{ORG}/{unit}/", f"$a2a/v1/reply/{ORG}/partners/")))
    got = []
    client = Session(ORG, unit, uid("partner"), broker=broker_url)
    client.subscribe(f"$a2a/v1/reply/{ORG}/partners/p1/x", handler=got.append)
    client.publish(MqttMessage(topics.request_topic(ORG, unit, agent), encode_json(send_body("hi")), qos=1,
                               response_topic=f"$a2a/v1/reply/{ORG}/partners/p1/x", correlation_data=b"c1"))
    assert wait_until(lambda: got, 3) and got[0].correlation_data == b"c1"


# -- 2. tasks belong to who created them ------------------------------------------------------------
def test_another_requester_cannot_see_read_cancel_follow_or_continue_a_task(broker_url, unit):
    desk = TicketDesk(unit=unit, broker=broker_url, handover="first-reply", pace=0.0)
    owner = Requester(uid("coordinator"), unit=unit, broker=broker_url, retry=FAST)
    intruder = Requester(uid("mallory"), unit=unit, broker=broker_url, retry=FAST)
    paused = owner.send("ticket-desk", "Analyze ticket TCK-4821: order status not updating after checkout")
    assert paused.state == states.INPUT_REQUIRED
    tid = paused.task_id
    analyst = owner.routing.target(tid).agent
    assert analyst.startswith("analyst-")  # handed over: the analyst inherits the owner
    for where in ("ticket-desk", analyst):
        for attempt in (lambda: intruder.get_task(tid, to=where),
                        lambda: intruder.cancel_task(tid, to=where),
                        lambda: next(iter(intruder.subscribe(tid, to=where))),
                        lambda: intruder.send(where, message=intruder.new_message(
                            "steps: none", task_id=tid, context_id=paused.context_id))):
            with pytest.raises(A2AError) as exc:
                attempt()
            assert exc.value.code == errors.TASK_NOT_FOUND, where
    listed = intruder.list_tasks("ticket-desk")
    assert tid not in [t["id"] for t in listed["tasks"]]
    # the owner still sees and finishes the task, untouched by the intruder
    assert tid in [t["id"] for t in owner.list_tasks("ticket-desk")["tasks"]]
    assert owner.get_task(tid)["status"]["state"] == states.INPUT_REQUIRED
    done = owner.continue_task(paused, "pay with a saved card, then reload the order page")
    assert done.state == states.COMPLETED
    desk.stop()


def test_with_a_bearer_policy_the_token_subject_is_part_of_the_owner(broker_url, unit):
    issuer = LocalIssuer()
    agent = uid("guarded")
    policy = issuer.policy(agent, require_tls=False)  # plain TCP here; lesson 08 shows the TLS set-up
    Responder(agent, lambda ctx: ctx.ask_input("which order?"), unit=unit, broker=broker_url, auth=policy)
    who = uid("coordinator")

    def as_subject(sub: str) -> Requester:
        return Requester(who, unit=unit, broker=broker_url, retry=FAST, allow_token_without_tls=True,
                         token=issuer.token(agent, subject=sub))

    alice = as_subject("alice")
    tid = alice.send(agent, "start").task_id
    alice.close()
    bob = as_subject("bob")  # the same reply topic, another person
    with pytest.raises(A2AError) as exc:
        bob.get_task(tid, to=agent)
    assert exc.value.code == errors.TASK_NOT_FOUND
    assert bob.list_tasks(agent)["tasks"] == []
    bob.close()
    alice = as_subject("alice")
    assert alice.get_task(tid, to=agent)["status"]["state"] == states.INPUT_REQUIRED
    alice.close()


# -- 3. nothing a reply is accepted by can be guessed from a seed ---------------------------------------
def test_a_reply_forged_from_the_lessons_seed_is_ignored(broker_url, unit):
    agent = uid("slow")
    working = threading.Event()

    def slow(ctx):
        working.set()
        ctx.wait(0.6)
        ctx.respond("the genuine answer")

    Responder(agent, slow, unit=unit, broker=broker_url)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, seed=4821, retry=FAST)
    # what an attacker derives from the lessons' seed: the reply suffix, then every 128-bit draw
    guess = IdSource(4821)
    guessed_topic = topics.reply_topic(ORG, unit, "coordinator", guess.reply_suffix())
    guessed_correlations = [guess.correlation() for _ in range(40)]
    forger = Session(ORG, unit, uid("mallory"), broker=broker_url)

    def forge() -> None:
        working.wait(3)
        for corr in guessed_correlations:
            for topic in {guessed_topic, coordinator.reply_topic}:
                forger.publish(MqttMessage(topic, encode_json(jsonrpc.result_response(
                    "x", messages.send_message_result(messages.agent_message("forged: all done", message_id="f")))),
                    qos=1, correlation_data=corr))

    t = threading.Thread(target=forge)
    t.start()
    reply = coordinator.send(agent, "hello")
    t.join(5)
    assert reply.text == "the genuine answer"
    assert guessed_topic != coordinator.reply_topic
    assert coordinator.stats.ignored_unknown_correlation >= len(guessed_correlations)
    coordinator.close()


def test_two_identically_seeded_requesters_use_different_correlation_data(broker_url, unit):
    agent = uid("echo")
    Responder(agent, lambda ctx: ctx.respond("ok"), unit=unit, broker=broker_url)
    seen: list[MqttMessage] = []
    spy = Session(ORG, unit, uid("spy"), broker=broker_url)
    spy.subscribe(topics.request_topic(ORG, unit, agent), handler=seen.append)
    runs = []
    for _ in range(2):
        with Requester("coordinator", unit=unit, broker=broker_url, seed=4821, retry=FAST) as req:
            runs.append((req.reply_topic, req.send(agent, "hi").task_id))
    assert wait_until(lambda: len(seen) == 2, 3)
    assert runs[0][1] == runs[1][1]  # the ids a lesson shows are reproducible...
    assert runs[0][0] != runs[1][0] and seen[0].correlation_data != seen[1].correlation_data  # ...the secrets not


# -- 5. bounded memory -----------------------------------------------------------------------------
def test_memory_store_keeps_a_bounded_number_of_terminal_tasks():
    store = MemoryTaskStore(max_terminal=3)

    def record(i: int, state: str) -> TaskRecord:
        return TaskRecord(messages.task(f"t{i}", "c", messages.task_status(state)), "a")

    store.put(record(0, states.WORKING))
    for i in range(1, 6):
        store.put(record(i, states.COMPLETED))
    store.put(record(6, states.INPUT_REQUIRED))
    assert [store.get(f"t{i}") is not None for i in range(7)] == [True, False, False, True, True, True, True]
    assert store.forgotten == 2 and len(store) == 5
    with pytest.raises(ValueError):
        MemoryTaskStore(max_terminal=0)


def test_finished_tasks_leave_the_runtime_and_the_store_stays_bounded(broker_url, unit):
    agent = uid("echo")
    runtime = TaskRuntime(MemoryTaskStore(max_terminal=50))
    Responder(agent, lambda ctx: ctx.respond(f"echo: {ctx.text}"), unit=unit, broker=broker_url, runtime=runtime,
              options=ResponderOptions(inline=True))
    with Requester(uid("coordinator"), unit=unit, broker=broker_url, retry=FAST) as req:
        for i in range(300):
            assert req.send(agent, f"n{i}").text == f"echo: n{i}"
    assert len(runtime.store) == 50
    assert runtime.tracked_tasks == 0


def test_on_the_secure_broker_a_login_cannot_borrow_another_requesters_identity():
    """The owner is the requester part of the reply topic; the secure broker's ACL lets each login read
    only its own reply topics, so naming the coordinator's reply topic gets an intruder nothing."""
    from a2a_nb.mqtt.secure import SecureBroker

    with SecureBroker() as broker:
        desk = TicketDesk(broker=broker.credentials, handover="none", pace=0.0)
        owner = Requester("coordinator", broker=broker.credentials("coordinator"), retry=FAST)
        paused = owner.send("ticket-desk", "Analyze ticket TCK-4821: order status not updating after checkout")
        assert paused.state == states.INPUT_REQUIRED
        got: list[MqttMessage] = []
        intruder = Session(ORG, "support", "discovery", broker=broker.credentials("discovery"))
        own_topic = topics.reply_topic(ORG, "support", "discovery", "x1")
        borrowed = topics.reply_topic(ORG, "support", "coordinator", "x1")
        intruder.subscribe(own_topic, handler=got.append)
        intruder.subscribe(borrowed, handler=got.append)  # acknowledged, but the ACL never delivers
        get = jsonrpc.request(jsonrpc.GET_TASK, {"id": paused.task_id}, "g1")
        for corr, topic in ((b"as-me", own_topic), (b"as-coordinator", borrowed)):
            intruder.publish(MqttMessage(topics.request_topic(ORG, "support", "ticket-desk"), encode_json(get),
                                         qos=1, response_topic=topic, correlation_data=corr))
        assert wait_until(lambda: got, 3)
        time.sleep(0.3)
        assert [m.correlation_data for m in got] == [b"as-me"]
        assert json.loads(got[0].payload)["error"]["code"] == errors.TASK_NOT_FOUND
        assert owner.get_task(paused.task_id)["status"]["state"] == states.INPUT_REQUIRED
        owner.close()
        intruder.close()
        desk.stop()


def test_an_agent_closed_without_stop_ends_its_workers_and_says_offline(broker_url, unit):
    """``stop_all()`` (a re-run cell, the end of a kernel) closes sessions cleanly, and the broker sends
    no will after a clean DISCONNECT: the agent itself marks its card offline, and its threads end."""
    from a2a_nb.mqtt.session import stop_all
    from a2a_nb.protocol import properties
    from a2a_nb.story.cast import echo_card

    before = threading.active_count()
    agent = uid("echo")
    Responder(agent, lambda ctx: ctx.respond("ok"), unit=unit, broker=broker_url,
              card=echo_card("acme", unit, agent), options=ResponderOptions(workers=8))
    assert threading.active_count() >= before + 8
    stop_all()
    assert wait_until(lambda: threading.active_count() <= before, 3), threading.enumerate()
    got = []
    s = Session(ORG, unit, uid("look"), broker=broker_url)
    s.subscribe(topics.discovery_topic(ORG, unit, agent), handler=got.append)
    assert wait_until(lambda: got, 3)
    assert got[-1].user_property(properties.STATUS) == properties.OFFLINE

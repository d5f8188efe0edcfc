"""Bridged brokers (issue 28 item 3): agents on broker A, requesters on broker B, B bridged to A.

Two real Mosquittos of each test's own (``bridged_pair`` in ``tests/conftest.py``: stopped, with
their clients, even when the test fails). The bridge is the kit's (``a2a_nb.mqtt.bridged``): ``$a2a/#``
and the pool claims both ways, MQTT v5, QoS 1. What must hold across it, as on one broker:

* Discovery and Presence and Liveness: the retained card crosses (retained on B as well), online then
  offline; the Last Will of a ``serve`` process killed with SIGKILL reaches B; nothing loops.
* Request/Reply Mapping: Response Topic, Correlation Data and user properties arrive unchanged.
* Streaming, input-required continuation (the ticket story), Optional Task Handover (the continuation
  goes straight to the analyst).
* Optional Shared Subscription Dispatch: a pool whose members sit on both brokers answers every
  request once (the claims cross the bridge).

Nothing is mocked.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from a2a_nb.agents import Requester, Responder
from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.responder import ResponderOptions
from a2a_nb.mqtt.bridged import BRIDGED_TREES, BridgedBroker, BridgedPair
from a2a_nb.mqtt.broker import BrokerEndpoint, free_port, port_accepts
from a2a_nb.mqtt.session import Session, stop_all
from a2a_nb.protocol import pools, properties, topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.protocol.routing import Address
from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.integration._roles_support import HAND_BUILT, ORG, Traffic, hand_key, wait_until
from tests.integration.test_pools import CountingWork
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]
PATIENT = RetryProfile(reply_first_timeout_s=5.0, stream_idle_timeout_s=5.0, max_attempts=3, backoff_s=(0.1, 0.2))
PROP = "a2a-responder-agent-id"
INPUT_REQUIRED, COMPLETED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"


def echo_on(url: str, unit: str) -> Responder:
    return Responder("echo", echo_handler, unit=unit, card=echo_card(ORG, unit), broker=url,
                     options=ResponderOptions(inline=True))


def retained(url: str, filter_: str, settle: float = 0.3) -> list[MqttMessage]:
    """The retained messages a new subscriber on ``url`` gets for ``filter_``."""
    got: list[MqttMessage] = []
    with Session(ORG, "bridge-check", uid("late"), broker=url) as s:
        s.subscribe(filter_, handler=got.append)
        time.sleep(settle)
    return [m for m in got if m.retain]


# -- discovery, presence, no loops ---------------------------------------------------------------------------
def test_a_card_published_on_a_is_discovered_on_b_online_then_offline_and_nothing_loops(bridged_pair):
    a_url, b_url = bridged_pair.urls
    unit = uid("br")
    card_topic = topics.discovery_topic(ORG, unit, "echo")
    seen_a, seen_b = Traffic(a_url), Traffic(b_url)
    discovery = Discovery(unit=unit, agent=uid("disc"), broker=b_url)

    echo = echo_on(a_url, unit)
    entry = discovery.wait_for("echo", status=properties.ONLINE, timeout=5)
    assert entry.card["name"] == "Echo" and entry.status_source == properties.SOURCE_AGENT

    # retained on B too: a late subscriber there gets the card, once, with its presence properties
    (late,) = retained(b_url, card_topic)
    assert late.user_property(properties.STATUS) == properties.ONLINE

    # no loop: the one publication reached each broker once, and stays once after a while
    time.sleep(0.5)
    assert len(seen_a.on_topic(card_topic)) == 1 and len(seen_b.on_topic(card_topic)) == 1

    echo.stop()  # graceful: the card says offline (source agent), on B as well
    gone = discovery.wait_for("echo", status=properties.OFFLINE, timeout=5)
    assert gone.status_source == properties.SOURCE_AGENT
    (late,) = retained(b_url, card_topic)
    assert late.user_property(properties.STATUS) == properties.OFFLINE
    time.sleep(0.3)
    assert len(seen_a.on_topic(card_topic)) == 2 and len(seen_b.on_topic(card_topic)) == 2


def test_the_last_will_of_a_served_agent_killed_on_a_reaches_b(bridged_pair):
    """``python -m a2a_nb serve echo`` against A, SIGKILL: A publishes the will (offline, source lwt), retained,
    and the bridge carries it to B's discovery (Profile: Presence and Liveness, LWT Configuration)."""
    a_url, b_url = bridged_pair.urls
    unit = uid("br")
    discovery = Discovery(unit=unit, agent=uid("disc"), broker=b_url)
    env = {**os.environ, "A2A_BROKER_URL": a_url, "PYTHONUNBUFFERED": "1"}
    env.pop("A2A_BROKER_CREDENTIALS", None)
    proc = subprocess.Popen(CLI + ["serve", "echo", "--unit", unit], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert discovery.wait_for("echo", status=properties.ONLINE, timeout=15).status_source == properties.SOURCE_AGENT
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        dead = discovery.wait_for("echo", status=properties.OFFLINE, timeout=10)
        assert dead.status_source == properties.SOURCE_LWT
        (late,) = retained(b_url, topics.discovery_topic(ORG, unit, "echo"))
        assert late.user_property(properties.STATUS_SOURCE) == properties.SOURCE_LWT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


# -- request / reply -------------------------------------------------------------------------------------------
def test_a_request_from_b_reaches_the_agent_on_a_and_its_reply_comes_back_with_every_property(bridged_pair):
    a_url, b_url = bridged_pair.urls
    unit = uid("br")
    echo_on(a_url, unit)
    seen_a, seen_b = Traffic(a_url), Traffic(b_url)
    req = Requester(uid("coord"), unit=unit, broker=b_url, retry=PATIENT)

    reply = req.send("echo", "hello across the bridge")
    assert reply.text == "echo: hello across the bridge" and reply.message is not None  # echo answers with a Message
    assert len(reply.attempts) == 1

    (sent, body), = seen_b.requests()
    (arrived, _), = seen_a.requests()  # once on each broker: no copy, no echo back
    assert arrived.topic == sent.topic == topics.request_topic(ORG, unit, "echo")
    assert arrived.response_topic == sent.response_topic == req.reply_topic
    assert arrived.correlation_data == sent.correlation_data and sent.correlation_data
    assert (arrived.payload, arrived.user_properties, arrived.content_type, arrived.payload_format) == \
        (sent.payload, sent.user_properties, sent.content_type, sent.payload_format)
    (answered,) = seen_a.replies(sent.correlation_data)
    (received,) = seen_b.replies(sent.correlation_data)
    assert received.topic == answered.topic == req.reply_topic
    assert (received.payload, received.user_properties) == (answered.payload, answered.user_properties)

    # user properties cross in order, with the other v5 properties (the kit's requester sent none above):
    # the same request again by hand, with a2a-context-id (Profile: Context Identifier Semantics 7)
    context = body["params"]["message"]["contextId"]
    again = MqttMessage(sent.topic, sent.payload, qos=1, response_topic=sent.response_topic, correlation_data=b"by-hand",
                        user_properties=((properties.CONTEXT_ID, context), ("x-trace", "1"), ("x-trace", "2")),
                        content_type="application/json", payload_format=1, message_expiry=30)
    HAND_BUILT[hand_key(again)] += 1
    with Session(ORG, unit, uid("raw"), broker=b_url) as raw:
        assert raw.publish(again).accepted
    (crossed,) = seen_a.wait_for(lambda m: m.correlation_data == b"by-hand" and m.topic == sent.topic)
    assert (crossed.user_properties, crossed.response_topic, crossed.content_type, crossed.payload_format) == \
        (again.user_properties, again.response_topic, "application/json", 1)
    assert crossed.message_expiry is not None and 0 < crossed.message_expiry <= 30
    (back,) = seen_b.wait_for(lambda m: m.correlation_data == b"by-hand" and m.topic == req.reply_topic)
    assert "echo: hello across the bridge" in back.payload.decode(), back.payload[:300]
    for t in (seen_a, seen_b):
        checked, problems = t.kit_problems()
        assert checked and not problems, problems


def test_the_ticket_story_streams_across_the_bridge_with_input_required_and_a_handover(bridged_pair):
    """The desk on A hands the ticket over to an analyst on its first reply; the coordinator on B streams,
    is asked for the reproduction steps, and its continuation goes straight to the analyst's topic."""
    a_url, b_url = bridged_pair.urls
    unit = uid("br")
    desk = TicketDesk(unit=unit, broker=a_url, handover="first-reply", pace=0.01)
    try:
        seen_a = Traffic(a_url)
        Discovery(unit=unit, agent=uid("disc"), broker=b_url).wait_for("ticket-desk", status=properties.ONLINE)
        req = Requester(uid("coord"), unit=unit, broker=b_url, retry=PATIENT)

        stream = req.stream("ticket-desk", TICKET_TEXT)
        events = list(stream)
        assert len(events) > 2 and stream.state == INPUT_REQUIRED
        analyst = desk.instances[0].agent
        assert {e.responder for e in events} == {analyst}  # every stream item names the analyst
        assert req.routing.target(stream.task_id) == Address(ORG, unit, agent=analyst)
        (h,) = req.routing.reroutes(stream.task_id)
        assert (h.from_.agent, h.to.agent, h.cause) == ("ticket-desk", analyst, "handover")

        done = req.continue_task(stream, REPRO_TEXT, stream=True)
        more = list(done)
        assert more and done.state == COMPLETED and done.task_id == stream.task_id
        assert req.get_task(stream.task_id)["status"]["state"] == COMPLETED

        # on A, where the agents are: the first request to the desk, every later one to the analyst
        wire = [(m.topic, b["method"]) for m, b in seen_a.requests()
                if m.response_topic == req.reply_topic]
        assert wire == [(topics.request_topic(ORG, unit, "ticket-desk"), "SendStreamingMessage"),
                        (topics.request_topic(ORG, unit, analyst), "SendStreamingMessage"),
                        (topics.request_topic(ORG, unit, analyst), "GetTask")]
    finally:
        desk.desk.unregister()
        desk.stop()


# -- a pool with members on both brokers ---------------------------------------------------------------------
def pool_on_both(bridged_pair, unit: str, pool: str, work) -> tuple[list, frozenset]:
    """Two members on A and two on B; returned once every member sees all four live (across the bridge too)."""
    members = [Responder(f"member-{side}{i}", work, unit=unit, pool=pool, broker=url)
               for side, url in zip("ab", bridged_pair.urls) for i in (1, 2)]
    names = frozenset(m.agent for m in members)
    assert wait_until(lambda: all(m.live_members == names for m in members), timeout=5), \
        [sorted(m.live_members) for m in members]
    return members, names


def test_a_pool_with_members_on_both_brokers_answers_every_request_once(bridged_pair):
    """Two members on A, two on B, requests from B: each of 40 is executed by exactly one member, the one
    its reply names, and none is lost. Mosquitto 2.0.11 has no ``$share`` on ``$`` topics, so the members
    claim (slot dispatch); a ``$share`` group would be per broker anyway, each dispatching a copy."""
    _, b_url = bridged_pair.urls
    unit, pool = uid("br"), uid("analysts")
    work = CountingWork()
    members, names = pool_on_both(bridged_pair, unit, pool, work)
    assert {m.pool_mode for m in members} == {"slot"}
    req = Requester(uid("coord"), unit=unit, broker=b_url, retry=PATIENT)

    n = 40
    with ThreadPoolExecutor(10) as ex:
        replies = list(ex.map(lambda i: req.send(f"pool:{pool}", f"job {i}"), range(n)))
    time.sleep(2.2 * pools.TAKEOVER_S)  # a duplicate would be a takeover of a claim that did not cross in time

    tids = [r.task_id for r in replies]
    assert len(set(tids)) == n and all(r.state == COMPLETED for r in replies)
    assert Counter(t for _, t in work.runs) == Counter(tids), "a pooled request ran twice or not at all"
    ran_by = dict((t, a) for a, t in work.runs)
    assert all(r.responder == ran_by[r.task_id] == pools.claim(r.task_id, names) for r in replies)
    assert {a[len("member-")] for a in ran_by.values()} == {"a", "b"}, "members of one broker took every request"
    assert sum(m.pool_membership.taken_over for m in members) == 0


def test_bridged_pair_survives_a_crash_of_either_broker(bridged_pair):
    """``crash`` (SIGKILL) and ``restart``: the bridge reconnects by itself and carries requests again."""
    a_url, b_url = bridged_pair.urls
    unit = uid("br")
    echo = echo_on(a_url, unit)
    req = Requester(uid("coord"), unit=unit, broker=b_url, retry=PATIENT)
    assert req.send("echo", "before").text == "echo: before"
    for which in ("a", "b"):
        bridged_pair.crash(which)
        assert not bridged_pair.broker(which).running
        assert bridged_pair.restart(which, timeout=10), bridged_pair.b.log_text()[-1500:]
        assert wait_until(lambda: echo.session.connected and req.session.connected, timeout=10)
        assert req.send("echo", f"after {which}").text.endswith(f"after {which}")
    assert isinstance(bridged_pair, BridgedPair)


def test_a_pool_across_the_bridge_loses_nothing_when_one_broker_crashes_and_comes_back(bridged_pair):
    """B crashes with two members on it: their presence stays ``online`` on A (B never sent their wills), so
    the requests they win wait ``TAKEOVER_S`` for a claim, then A's members take them and count them silent.
    B restarts empty, its members reconnect and announce themselves again, the bridge carries that to A,
    and they take their share again. No request is lost or run twice (Profile: Optional Shared
    Subscription Dispatch 13, Presence and Liveness)."""
    a_url, b_url = bridged_pair.urls
    unit, pool = uid("br"), uid("analysts")
    work = CountingWork()
    members, names = pool_on_both(bridged_pair, unit, pool, work)
    req = Requester(uid("coord"), unit=unit, broker=a_url, retry=PATIENT)

    def send_all(n: int) -> list:
        with ThreadPoolExecutor(6) as ex:
            return list(ex.map(lambda i: req.send(f"pool:{pool}", f"job {i}"), range(n)))

    bridged_pair.crash("b")
    during = send_all(12)
    assert all(r.state == COMPLETED and r.responder.startswith("member-a") for r in during)
    assert sum(m.pool_membership.taken_over for m in members) > 0  # B's members' share, after TAKEOVER_S

    assert bridged_pair.restart("b"), bridged_pair.b.log_text()[-1500:]
    assert wait_until(lambda: all(m.live_members == names for m in members), timeout=10), \
        [sorted(m.live_members) for m in members]
    after = send_all(12)
    assert all(r.state == COMPLETED for r in after)
    assert {r.responder[len("member-")] for r in after} == {"a", "b"}
    time.sleep(2.2 * pools.TAKEOVER_S)
    assert Counter(t for _, t in work.runs) == Counter(r.task_id for r in during + after), "lost or run twice"


def test_without_the_claims_crossing_the_bridge_pooled_requests_run_twice():
    """Why the bridge carries ``$a2a-nb-pool/#`` (``bridged.BRIDGED_TREES``): a member waits
    ``TAKEOVER_S`` for the winner's claim, and a claim that stays on its own broker looks like silence,
    so the member on the other broker runs the request as well (and from then on counts the winner
    silent). With the kit's bridge, the pool test above runs each request exactly once."""
    only_a2a = tuple(t for t in BRIDGED_TREES if not t.startswith(pools.CLAIMS_PREFIX))
    with BridgedPair(trees=only_a2a) as pair:
        try:
            a_url, b_url = pair.urls
            unit, pool = uid("br"), uid("analysts")
            work = CountingWork()
            members = [Responder(f"member-{side}", work, unit=unit, pool=pool, broker=url)
                       for side, url in (("a", a_url), ("b", b_url))]
            names = frozenset(m.agent for m in members)
            assert wait_until(lambda: all(m.live_members == names for m in members), timeout=5)
            req = Requester(uid("coord"), unit=unit, broker=b_url, retry=PATIENT)
            tids = [req.send(f"pool:{pool}", f"job {i}").task_id for i in range(4)]
            # a member judges silence by what its network thread read: the takeover comes 1 to 2 TAKEOVER_S late
            twice = wait_until(lambda: set(Counter(t for _, t in work.runs).values()) == {2}, timeout=4 * pools.TAKEOVER_S)
            runs = Counter(t for _, t in work.runs)
            assert twice and set(runs) == set(tids), runs
            assert sum(m.pool_membership.taken_over for m in members) == len(tids)
        finally:
            stop_all()


def test_pool_dispatch_slot_claims_without_asking_the_broker_for_share(broker_url):
    """``ResponderOptions(pool_dispatch="slot")``: on bridged brokers a ``$share`` group is per broker, so
    where brokers do deliver ``$share`` on ``$`` topics each would dispatch its own copy of a pooled request.
    Told ``"slot"``, a member claims whatever the broker offers: it never probes ``$share`` (nothing on
    ``$a2a-nb-probe/...``); ``"auto"`` probes, and on Mosquitto 2.0.11 falls back to claiming."""
    unit, pool = uid("br"), uid("analysts")
    probes: list[MqttMessage] = []
    with Session(ORG, unit, uid("watch"), broker=broker_url) as watch:
        watch.subscribe("$a2a-nb-probe/#", handler=probes.append)
        slot = Responder("member-slot", CountingWork(), unit=unit, pool=pool, broker=broker_url,
                         options=ResponderOptions(pool_dispatch="slot"))
        assert slot.pool_mode == "slot" and probes == []
        auto = Responder("member-auto", CountingWork(), unit=unit, pool=pool, broker=broker_url)
        assert auto.pool_mode in ("shared", "slot")
        assert wait_until(lambda: probes) and [m.topic for m in probes] == [f"$a2a-nb-probe/{ORG}/{unit}/member-auto"]
    with pytest.raises(ValueError, match="pool_dispatch"):
        Responder("member-x", CountingWork(), unit=unit, pool=pool, broker=broker_url,
                  options=ResponderOptions(pool_dispatch="share"), start=False)


# -- the command ---------------------------------------------------------------------------------------------
def test_broker_stops_cleanly_on_ctrl_c_right_after_its_url_while_the_bridge_is_still_connecting():
    """From the URL on stdout, Ctrl-C stops the broker cleanly (exit 0, "stopped"), also while the bridge
    waits for a remote that does not answer (the command used to die with "interrupted", exit 130)."""
    port = free_port()  # nobody listens there: the bridge keeps retrying
    env = {k: v for k, v in os.environ.items() if k not in ("A2A_BROKER_URL", "A2A_BRIDGE_PASSWORD")}
    proc = subprocess.Popen(CLI + ["broker", "--bridge-to", f"mqtt://127.0.0.1:{port}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("mqtt://127.0.0.1:"), url
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert code == 0, err
    assert "Ctrl-C: stopping the broker ..." in err and err.rstrip().endswith("stopped"), err
    assert "interrupted" not in err and "the bridge is not up yet" not in err, err
    assert not port_accepts("127.0.0.1", BrokerEndpoint.from_url(url).port)


def test_waiting_for_the_bridge_ends_when_cancelled():
    """``wait_connected(cancel=...)``: a Ctrl-C caught by the command ends the wait for a bridge that does
    not come up (a 120 s wait, cancelled, returns False long before)."""
    port = free_port()
    bridged = BridgedBroker(BrokerEndpoint.from_url(f"mqtt://127.0.0.1:{port}"))
    bridged.start()
    try:
        cancel, result = threading.Event(), []
        waiter = threading.Thread(target=lambda: result.append(bridged.wait_connected(120, cancel=cancel)), daemon=True)
        waiter.start()
        cancel.set()
        waiter.join(60)
        assert not waiter.is_alive() and result == [False]
    finally:
        bridged.stop()


def test_broker_bridge_to_prints_its_url_says_what_is_bridged_without_the_password_and_carries_cards(private_broker):
    """``python -m a2a_nb broker --bridge-to URL``: its URL first, then (stderr) what crosses and where, the
    password as ``***``, the bridge up; a retained card published on the remote broker is there to read."""
    unit = uid("br")
    remote = f"mqtt://bridge-user@127.0.0.1:{private_broker.port}"  # the open broker takes any login
    env = {k: v for k, v in os.environ.items() if k != "A2A_BROKER_URL"}
    env["A2A_BRIDGE_PASSWORD"] = "pa55-w0rd"  # never on the command line: `ps` shows it
    proc = subprocess.Popen(CLI + ["broker", "--bridge-to", remote], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("mqtt://127.0.0.1:")
        banner = [proc.stderr.readline() for _ in range(3)]
        assert f"bridged to mqtt://bridge-user:***@127.0.0.1:{private_broker.port}: $a2a/#, $a2a-nb-pool/#" \
               in banner[1], banner
        assert "both ways, QoS 1, MQTT v5" in banner[1] and "the bridge is up" in banner[2], banner
        echo = echo_on(private_broker.url, unit)
        Discovery(unit=unit, agent=uid("disc"), broker=url).wait_for("echo", status=properties.ONLINE, timeout=5)
        echo.stop()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(timeout=10)
        rest = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0, rest
    assert "pa55-w0rd" not in "".join(banner) + rest
    assert not port_accepts("127.0.0.1", BrokerEndpoint.from_url(url).port)

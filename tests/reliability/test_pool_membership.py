"""Pool membership only for members (issue 25 item 1): a client that is not a pool member cannot make
the members leave a share of the pool's requests unclaimed.

The attack, with bare paho-mqtt: a client publishes a retained ``pool-presence`` ``online`` for a
member that does not exist and disconnects. Before the fix every member counted it live, so the
requests whose Task.id hashed to it were claimed by nobody, on every retry (same Task.id), for as long
as the presence stayed retained: measured 9 of 30 requests unanswered on an open broker and 8 of 30 on
the secure broker (one fake among three members). A member that stops answering but stays connected
(SIGSTOP) lost its share the same way until its keep-alive ran out (45 s).

After: presence counts only for names on the pool's allow-list (on the secure broker each login can
announce only itself), and a request whose winner did not claim it within ``pools.TAKEOVER_S`` (1 s)
is taken over by the next live member: nothing is lost, and the silent name stops counting.

Profile: Optional Shared Subscription Dispatch 4, 13; Presence and Liveness; Requester Retry and
Timeout Profile. Real Mosquitto (the session's broker, or a ``SecureBroker`` of this module).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.agents.requester import Requester, RequestTimeout
from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.mqtt.session import paho_client
from a2a_nb.protocol import ids, jsonrpc, messages, pools
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import analyst_pool
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]
ORG = "acme"
COMPLETED = "TASK_STATE_COMPLETED"
# a patient one: a busy machine may delay any answer by seconds; the tests judge by the claims on the wire
PATIENT = RetryProfile(reply_first_timeout_s=10.0, stream_idle_timeout_s=10.0, max_attempts=3, backoff_s=(0.1, 0.2))
N = 24
NOT_AUTHORIZED = 135


# -- the attacker: bare paho ----------------------------------------------------------------------------------
class Stranger:
    """A plain paho client: publishes what it likes and reports each PUBACK's reason code."""

    def __init__(self, endpoint: BrokerEndpoint, client_id: str):
        self.client = paho_client(endpoint, client_id)
        self.codes: dict[int, int] = {}
        self._acked = threading.Condition()
        connected = threading.Event()
        self.client.on_connect = lambda *a: connected.set()
        self.client.on_publish = self._on_publish
        self.client.connect(endpoint.host, endpoint.port)
        self.client.loop_start()
        assert connected.wait(5), "the stranger could not connect"

    def _on_publish(self, client, userdata, mid, reason_code, props) -> None:
        with self._acked:
            self.codes[mid] = reason_code.value
            self._acked.notify_all()

    def publish(self, topic: str, payload: bytes, user_properties=(), retain: bool = False,
                correlation: Optional[bytes] = None) -> int:
        """Publish at QoS 1 and return the PUBACK's reason code (135: not authorized)."""
        props = Properties(PacketTypes.PUBLISH)
        if user_properties:
            props.UserProperty = list(user_properties)
        if correlation is not None:
            props.CorrelationData = correlation
        info = self.client.publish(topic, payload, qos=1, retain=retain, properties=props)
        with self._acked:
            assert self._acked.wait_for(lambda: info.mid in self.codes, 5), "no PUBACK"
            return self.codes[info.mid]

    def announce(self, unit: str, pool: str, agent: str) -> int:
        """A retained ``pool-presence`` ``online`` for ``agent``, as a member would publish it."""
        return self.publish(f"$a2a/v1/event/{ORG}/{unit}/{agent}", json.dumps({"pool": pool, "agent": agent}).encode(),
                            [("a2a-event-type", "pool-presence"), ("a2a-status", "online"),
                             ("a2a-status-source", "agent")], retain=True)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def open_stranger(broker_url: str) -> Stranger:
    return Stranger(BrokerEndpoint.from_url(broker_url), uid("mallory"))


def send_all(req: Requester, target: str, n: int = N) -> tuple[list, int]:
    """``n`` requests at once (8 in flight): (replies, how many ended in RequestTimeout)."""
    def one(i: int):
        try:
            return req.send(target, f"Analyze ticket TCK-4821\nReproduction: job {i}")
        except RequestTimeout:
            return None

    with ThreadPoolExecutor(8) as ex:
        replies = list(ex.map(one, range(n)))
    answered = [r for r in replies if r is not None]
    return answered, n - len(answered)


def slot_mode_or_skip(members) -> None:
    if {m.pool_mode for m in members} != {"slot"}:
        pytest.skip("this broker dispatches $share itself: presence does not decide who takes a request")


# -- open broker -----------------------------------------------------------------------------------------------
def test_a_strangers_retained_presence_takes_no_share_of_the_pool(broker_url):
    """The allow-list: ``analyst_pool`` counts only its own members; a presence for ``ghost`` or for a
    fourth analyst the pool does not have does not count, so no request waits, not even once."""
    unit, pool = uid("pm"), uid("analysts")
    members = analyst_pool(pool, 3, unit=unit, broker=broker_url, pace=0.0)
    slot_mode_or_skip(members)
    mallory = open_stranger(broker_url)
    fakes = ["ghost", f"analyst-{pool}-4"]
    try:
        assert all(mallory.announce(unit, pool, fake) == 0 for fake in fakes)
    finally:
        mallory.close()  # gone: only the retained presence messages stay
    time.sleep(0.3)  # the members read them (before the fix: counted them live)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=PATIENT)
    try:
        replies, unanswered = send_all(req, f"pool:{pool}")
        assert unanswered == 0, f"{unanswered} of {N} pooled requests unanswered after a stranger's presence"
        assert req.stats.retries == 0 and all(r.state == COMPLETED for r in replies)
        assert {r.responder for r in replies} <= {m.agent for m in members}
        assert sum(m.stats.executions for m in members) == N  # each request ran once
        assert all(m.live_members == {x.agent for x in members} for m in members)
        assert all(m.pool_membership.not_allowed >= 2 for m in members)
    finally:
        req.close()
        for m in members:
            m.stop()
        clear_presence(broker_url, unit, fakes)


def clear_presence(broker_url: str, unit: str, agents) -> None:
    cleaner = open_stranger(broker_url)
    for agent in agents:
        cleaner.publish(f"$a2a/v1/event/{ORG}/{unit}/{agent}", b"", retain=True)
    cleaner.close()


def serve_pool(broker_url: str, unit: str, pool: str, members: int) -> tuple[subprocess.Popen, list[str]]:
    """``serve analyst --pool``: the process and the names of its members (from its banner)."""
    env = {**os.environ, "A2A_BROKER_URL": broker_url, "PYTHONUNBUFFERED": "1"}
    env.pop("A2A_BROKER_CREDENTIALS", None)
    proc = subprocess.Popen(CLI + ["serve", "analyst", "--pool", pool, "--unit", unit, "--members", str(members),
                                   "--pace", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    names = []
    for _ in range(members):
        line = proc.stdout.readline()
        assert "serving pool" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        names.append(line.split()[0])
    if "(slot dispatch" not in line:
        stop(proc)
        pytest.skip("this broker dispatches $share itself: presence does not decide who takes a request")
    return proc, names


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()


class ClaimWatcher(Stranger):
    """Reads the members' claims (bare paho): ``takeovers()`` lists the silent winner each takeover named."""

    def __init__(self, broker_url: str, unit: str, pool: str):
        super().__init__(BrokerEndpoint.from_url(broker_url), uid("watcher"))
        self.claims: list[pools.Claim] = []
        self.client.on_message = lambda client, userdata, msg: self.claims.append(pools.read_claim(MqttMessage(
            msg.topic, msg.payload, correlation_data=getattr(msg.properties, "CorrelationData", None))))
        self.client.subscribe(pools.claims_filter(ORG, unit, pool), qos=1)
        self.publish(f"test/{unit}/watcher-ready", b"")  # its PUBACK comes after the SUBSCRIBE took effect (one connection)

    def takeovers(self, replies=None) -> list[str]:
        """The silent winner each takeover named (of the requests of ``replies``, else of all)."""
        attempts = None if replies is None else {a.correlation for r in replies for a in r.attempts}
        return [c.silent for c in list(self.claims) if c is not None and c.silent is not None
                and (attempts is None or ids.readable_correlation(c.correlation) in attempts)]

    def wait_claimed(self, replies) -> None:
        """Until every request of ``replies`` has its claim here (claims leave before answers, but the
        watcher reads them on its own connection)."""
        wanted = {r.attempts[-1].correlation for r in replies}
        wait_until(lambda: wanted <= {ids.readable_correlation(c.correlation) for c in list(self.claims) if c},
                   f"the claims of {len(wanted)} answered requests")


def wait_until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.02)


def test_a_presence_under_a_members_name_that_never_answers_costs_one_takeover(broker_url):
    """``serve analyst --pool`` processes allow ``analyst-{pool}-*`` (their names are random): on an open
    broker a stranger can take such a name. The requests it wins are taken over after ``TAKEOVER_S``;
    the takeover's claim names it silent for every member, and the rest go straight to real members.

    Judged by the members' claims on the wire, not by how long requests took (a busy machine adds
    seconds): before the fix the fake's share went unanswered; a member that kept counting it would
    take over from it again in the second round."""
    unit, pool = uid("pm"), uid("analysts")
    proc, members = serve_pool(broker_url, unit, pool, 3)
    fake = f"analyst-{pool}-ghost"
    watcher = ClaimWatcher(broker_url, unit, pool)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=PATIENT)
    try:
        mallory = open_stranger(broker_url)
        assert mallory.announce(unit, pool, fake) == 0
        mallory.close()
        time.sleep(0.3)  # the members read it (they count it live: its name is allowed)
        replies, unanswered = send_all(req, f"pool:{pool}")
        assert unanswered == 0, f"{unanswered} of {N} pooled requests unanswered after a fake member's presence"
        assert all(r.state == COMPLETED for r in replies) and {r.responder for r in replies} <= set(members)
        assert fake in watcher.takeovers(), "no request was taken over from the fake member"
        # every member now counts the name silent (a takeover's claim names it): nothing waits for it again
        later, unanswered = send_all(req, f"pool:{pool}")
        assert unanswered == 0 and all(r.state == COMPLETED for r in later)
        watcher.wait_claimed(later)
        assert fake not in watcher.takeovers(later), "a member waited for the fake member again"
    finally:
        req.close()
        watcher.close()
        stop(proc)
        clear_presence(broker_url, unit, [fake])


def test_a_member_that_stops_answering_but_stays_connected_loses_nothing(broker_url):
    """A ``serve analyst --pool`` process stopped with SIGSTOP keeps its connection (and its online
    presence) until its keep-alive runs out; before the fix its share of the requests went unanswered
    all that time. Now the other process's members take them over, and then stop waiting for it."""
    unit, pool = uid("pm"), uid("analysts")
    working, _ = serve_pool(broker_url, unit, pool, 2)
    frozen, (frozen_name,) = serve_pool(broker_url, unit, pool, 1)
    watcher = ClaimWatcher(broker_url, unit, pool)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=PATIENT)
    try:
        time.sleep(0.3)  # each process knows the other's members
        frozen.send_signal(signal.SIGSTOP)
        replies, unanswered = send_all(req, f"pool:{pool}")
        assert unanswered == 0, f"{unanswered} of {N} pooled requests unanswered with one member frozen"
        assert all(r.state == COMPLETED for r in replies)
        assert len({r.responder for r in replies}) == 2  # the two members that answer
        assert set(watcher.takeovers()) == {frozen_name}
        later, unanswered = send_all(req, f"pool:{pool}")  # the frozen member is silent now
        assert unanswered == 0 and all(r.state == COMPLETED for r in later)
        watcher.wait_claimed(later)
        assert frozen_name not in watcher.takeovers(later), "a member waited for the frozen one again"
    finally:
        req.close()
        watcher.close()
        stop(frozen)  # SIGKILL ends a stopped process too
        stop(working)


# -- secure broker ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def secure_broker():
    broker = SecureBroker().start()
    yield broker
    broker.stop()


def test_on_the_secure_broker_a_login_outside_the_pool_takes_no_share(secure_broker):
    """``cli`` (a valid login, not a pool member) can announce a presence only on its own event
    topic, which the members do not count; speaking for a member, or claiming for one, is refused."""
    members = analyst_pool("analysts", 3, broker=secure_broker.credentials, pace=0.0)
    slot_mode_or_skip(members)
    ep = secure_broker.credentials("cli")
    mallory = Stranger(ep, "ignored")
    try:
        assert mallory.announce("support", "analysts", "cli") == 0  # its own event topic: allowed
        assert mallory.announce("support", "analysts", "analyst-analysts-4") == NOT_AUTHORIZED
        time.sleep(0.3)
        req = Requester("coordinator", broker=secure_broker.credentials("coordinator"), retry=PATIENT)
        replies, unanswered = send_all(req, "pool:analysts")
        assert unanswered == 0, f"{unanswered} of {N} pooled requests unanswered after a non-member's presence"
        assert req.stats.retries == 0 and all(r.state == COMPLETED for r in replies)
        # the members' own claims are allowed (else each request would run twice: taken over)
        assert sum(m.stats.executions for m in members) == N
        assert all(m.pool_membership.taken_over == 0 for m in members)
        assert all(m.live_members == {x.agent for x in members} for m in members)
        # nor can it keep the members from taking over: claiming for a member, or as itself, is refused
        for agent in ("analyst-analysts-1", "cli"):
            topic = pools.claims_topic(ORG, "support", "analysts", agent)
            assert mallory.publish(topic, b"", correlation=b"\x01") == NOT_AUTHORIZED
    finally:
        for m in members:
            m.stop()
        mallory.publish(f"$a2a/v1/event/{ORG}/support/cli", b"", retain=True)
        mallory.close()


def test_a_member_whose_network_thread_is_busy_does_not_take_over_a_claimed_request(broker_url):
    """A member judges a winner silent only by what it has read. Here analyst B reads a pooled request
    that A wins, then its network thread is busy for 1.5 s (a slow handler on another subscription),
    while A's claim waits unread in B's socket. Before: B's watcher found no claim after 1 s, took the
    request over and ran it a second time (two answers for one request; measured in ``python -m
    benchmarks``' 200-task load run as cross-talk in 6 of 10 runs). After: B waits until its network
    thread has read past the deadline, sees A's claim, and the request runs once."""
    unit, pool = uid("pm"), uid("analysts")
    a, b = analyst_pool(pool, 2, unit=unit, broker=broker_url, pace=0.0)
    slot_mode_or_skip([a, b])
    blocker = f"test/{unit}/busy"
    b.session.subscribe(blocker, handler=lambda msg: time.sleep(1.5))  # runs on B's network thread
    mallory = open_stranger(broker_url)
    answers: list[tuple[bytes, dict]] = []
    reply_to = f"$a2a/v1/reply/{ORG}/{unit}/{uid('coord')}/r1"
    mallory.client.on_message = lambda client, userdata, msg: answers.append(
        (msg.properties.CorrelationData, json.loads(msg.payload)))
    mallory.client.subscribe(reply_to, qos=1)
    time.sleep(0.3)
    try:
        task_id = next(t for t in (str(uuid.uuid4()) for _ in range(100)) if pools.claim(t, {a.agent, b.agent}) == a.agent)
        correlation = uuid.uuid4().bytes
        text = messages.text_part("Analyze ticket TCK-4821\nReproduction: open the export page")
        message = messages.user_message([text], message_id=str(uuid.uuid4()), task_id=task_id)
        request = jsonrpc.request("SendMessage", {"message": message}, 1)
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = reply_to
        props.CorrelationData = correlation
        mallory.client.publish(f"$a2a/v1/request/{ORG}/{unit}/pool/{pool}", json.dumps(request).encode(), qos=1,
                               properties=props)
        assert mallory.publish(blocker, b"busy") == 0  # after the request, on the same connection: B reads it next
        time.sleep(2.5)
        assert [c for c, _ in answers] == [correlation], f"{len(answers)} answers to one pooled request"
        assert answers[0][1]["result"]["task"]["status"]["state"] == COMPLETED, answers[0][1]
        assert a.stats.executions == 1 and b.stats.executions == 0 and b.pool_membership.taken_over == 0
    finally:
        mallory.close()
        a.stop()
        b.stop()

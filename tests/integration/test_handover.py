"""Task handover (user story 07) against a real Mosquitto: the SDK checklist and its failure cases.

Profile: Optional Task Handover 1-6, Requester Behavior 8, Requester Retry and Timeout Profile 3, 6,
Request/Reply Mapping 5-8. Story 07 checklist:

* ``a2a-responder-agent-id`` is parsed on ANY reply or stream message (blocking reply, stream item,
  GetTask reply, continuation reply, error reply);
* the routing table is updated: later operations for that Task.id target the new agent;
* the most recently received value wins (several for one Task.id);
* Task.id does not change across handover;
* every follow-up to the target carries new Correlation Data.

Failure cases: target unreachable (retries on its direct topic, then fallback to the card agent,
which still serves the task through the shared runtime), missing property (no handover), several
handovers in one stream (latest wins). Plus routing persistence across a requester restart.

Everything that reaches the wire is checked by an independent observer (``traffic`` on ``$a2a/#``)
or, where PUBACK 16 must stay observable, by a narrower one that does not subscribe to the
handover target's request topic. Nothing is mocked.
"""
from __future__ import annotations

import json
import threading
import uuid
from typing import Callable, Optional

import pytest

from a2a_nb.agents import Requester, RequestTimeout
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.protocol.routing import Address
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.integration._roles_support import HAND_BUILT, ORG, hand_key, traffic, wait_until  # noqa: F401
from tests.helpers import uid

SHORT = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=1.5, max_attempts=3,
                     backoff_s=(0.05, 0.1, 0.2))
DESK = "ticket-desk"
PROP = "a2a-responder-agent-id"
SUBMITTED, WORKING = "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"
INPUT_REQUIRED, COMPLETED, CANCELED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED"


# -- helpers ---------------------------------------------------------------------------------------------
def req_topic(unit: str, agent: str) -> str:
    return f"$a2a/v1/request/{ORG}/{unit}/{agent}"


def body_of(m: MqttMessage) -> dict:
    return json.loads(m.payload)


def task_id_of_request(body: dict) -> Optional[str]:
    p = body.get("params") or {}
    return (p.get("message") or {}).get("taskId") or p.get("id")


def task_id_of_reply(body: dict) -> Optional[str]:
    """The Task.id a reply or stream item talks about (None for an error)."""
    r = body.get("result")
    if not isinstance(r, dict):
        return None
    if "task" in r:
        return r["task"]["id"]
    if "id" in r and "status" in r:  # GetTask / CancelTask result: a bare Task
        return r["id"]
    for k in ("statusUpdate", "artifactUpdate", "message"):
        if k in r:
            return r[k].get("taskId")
    return None


def task_requests(traffic, task_id: str, response_topic: Optional[str] = None) -> list[tuple[MqttMessage, dict]]:
    """Requests for one Task.id in wire order (optionally only those of one requester)."""
    return [(m, b) for m, b in traffic.requests() if isinstance(b, dict) and task_id_of_request(b) == task_id
            and (response_topic is None or m.response_topic == response_topic)]


def replies_to(traffic, correlation: bytes) -> list[MqttMessage]:
    """Replies seen for one correlation (call after ``task_requests``, which lets the traffic settle)."""
    return [m for m in traffic.snapshot() if m.topic.startswith("$a2a/v1/reply/") and m.correlation_data == correlation]


class ReplyRecorder:
    """A narrow independent observer: the desk's request topic and the unit's reply topics only, so
    a publish to a handover target nobody listens to still gets PUBACK 16 from the broker."""

    def __init__(self, broker_url: str, unit: str):
        self.messages: list[MqttMessage] = []
        self._lock = threading.Lock()
        self.session = Session(ORG, unit, uid("narrow-observer"), broker=broker_url)
        self.session.subscribe(req_topic(unit, DESK), handler=self._on)
        self.session.subscribe(f"$a2a/v1/reply/{ORG}/{unit}/#", handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self._lock:
            self.messages.append(m)

    def on(self, topic: str) -> list[MqttMessage]:
        with self._lock:
            return [m for m in self.messages if m.topic == topic]

    def nobody_listens_on(self, topic: str) -> bool:
        """PUBACK 16 for an empty probe: the broker has dropped every subscription matching ``topic``
        (a closed client's DISCONNECT may still be on its way when its session says closed)."""
        return self.session.publish(MqttMessage(topic, b"", qos=1)).no_subscribers

    def with_correlation(self, corr: bytes) -> list[MqttMessage]:
        with self._lock:
            return [m for m in self.messages if m.correlation_data == corr]


@pytest.fixture
def desks(broker_url, unit):
    made: list[TicketDesk] = []

    def make(plan: str) -> TicketDesk:
        d = TicketDesk(unit=unit, broker=broker_url, handover=plan, pace=0.01)
        made.append(d)
        return d

    yield make
    for d in made:
        if d.desk.alive:
            d.desk.unregister()  # leave no retained card behind on the shared broker
        d.stop()


def coordinator(broker_url: str, unit: str, name: Optional[str] = None, **kw) -> Requester:
    return Requester(name or uid("coord"), unit=unit, broker=broker_url, retry=SHORT, **kw)


# -- independent responders for exact control over which message carries the property --------------------
class ScriptedAgents:
    """Responders written from the profile (one raw client serving several agent ids). ``script(agent,
    body)`` returns the replies to publish: a list of (result or ``{"error": ...}``, responder id or None)."""

    def __init__(self, broker_url: str, unit: str, agents: list[str],
                 script: Callable[[str, dict], list[tuple[dict, Optional[str]]]]):
        self.script = script
        self.received: list[tuple[str, str, dict]] = []  # (agent, method, body)
        self.session = Session(ORG, unit, uid("scripted"), broker=broker_url)
        for a in agents:
            self.session.subscribe(req_topic(unit, a), handler=lambda m, a=a: self._on(a, m))

    def _on(self, agent: str, m: MqttMessage) -> None:
        body = json.loads(m.payload)
        self.received.append((agent, body["method"], body))
        for result, responder in self.script(agent, body):
            payload = {"jsonrpc": "2.0", "id": body["id"]}
            payload.update({"error": result["error"]} if "error" in result else {"result": result})
            props = ((PROP, responder),) if responder else ()
            reply = MqttMessage(m.response_topic, encode_json(payload), qos=1, correlation_data=m.correlation_data,
                                user_properties=props, content_type="application/json", payload_format=1)
            HAND_BUILT[hand_key(reply)] += 1
            self.session.publish_nowait(reply)  # network thread: never wait for the PUBACK here


_STAMP = [0]


def stamp() -> str:
    _STAMP[0] += 1
    return f"2025-01-01T00:00:{_STAMP[0] % 60:02d}.{_STAMP[0]:03d}Z"


def raw_task(task_id: str, context_id: str, state: str) -> dict:
    return {"id": task_id, "contextId": context_id, "status": {"state": state, "timestamp": stamp()}}


def raw_status(task_id: str, context_id: str, state: str) -> dict:
    return {"statusUpdate": {"taskId": task_id, "contextId": context_id,
                             "status": {"state": state, "timestamp": stamp()}}}


# -- checklist: the property on every kind of reply; latest wins; Task.id; fresh correlation -------------
def test_responder_id_is_honoured_on_every_kind_of_reply_and_the_latest_value_wins(broker_url, unit, traffic):
    """Stream items, a GetTask reply, a continuation reply and an error reply each hand the task on;
    a reply without the property leaves the route where it is."""
    front, a1, a2, a3, a4, a5 = "front", "inst-1", "inst-2", "inst-3", "inst-4", "inst-5"

    def script(agent: str, body: dict):
        p = body["params"]
        tid = task_id_of_request(body)
        ctx = (p.get("message") or {}).get("contextId", "ctx-raw")
        method = body["method"]
        if (agent, method) == (front, "SendStreamingMessage"):
            return [({"task": raw_task(tid, ctx, SUBMITTED)}, None),  # the card agent itself: no property
                    (raw_status(tid, ctx, WORKING), a1),               # stream item: handover to a1
                    (raw_status(tid, ctx, WORKING), a2),               # and on to a2
                    (raw_status(tid, ctx, WORKING), a2),               # the same value again: no new reroute
                    (raw_status(tid, ctx, INPUT_REQUIRED), a1)]        # latest wins, even an earlier value
        if (agent, method) == (a1, "GetTask"):
            return [(raw_task(tid, "ctx-raw", INPUT_REQUIRED), a3)]   # GetTask reply
        if (agent, method) == (a3, "SendMessage"):
            return [({"task": raw_task(tid, ctx, INPUT_REQUIRED)}, a4)]  # continuation (blocking) reply
        if (agent, method) == (a4, "CancelTask"):
            return [({"error": {"code": -32002, "message": f"Task {tid} cannot be canceled",
                                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                          "reason": "TASK_NOT_CANCELABLE", "domain": "a2a-protocol.org"}]}},
                     a5)]                                                 # error reply
        if (agent, method) == (a5, "GetTask"):
            return [(raw_task(tid, "ctx-raw", INPUT_REQUIRED), None)]  # no property: stays with a5
        return [({"error": {"code": -32601, "message": f"{agent} was not expected to get {method}"}}, None)]

    ScriptedAgents(broker_url, unit, [front, a1, a2, a3, a4, a5], script)
    req = coordinator(broker_url, unit)
    first = req.new_message("analyze", context_id="ctx-raw")
    tid = first["taskId"]

    events = list(req.stream(front, message=first))
    assert [e.kind for e in events] == ["task", "statusUpdate", "statusUpdate", "statusUpdate", "statusUpdate"]
    assert [e.responder for e in events] == [None, a1, a2, a2, a1]
    assert [e.reroute.to.agent if e.reroute else None for e in events] == [None, a1, a2, None, a1]
    assert req.routing.target(tid) == Address(ORG, unit, agent=a1)

    task = req.get_task(tid)  # goes to a1; its reply names a3
    assert task["id"] == tid
    assert req.routing.target(tid).agent == a3

    cont = req.send(None, message=req.new_message("more detail", task_id=tid, context_id="ctx-raw"))
    assert cont.task_id == tid and cont.responder == a4
    assert req.routing.target(tid).agent == a4

    with pytest.raises(A2AError) as exc:
        req.cancel_task(tid)
    assert exc.value.code == -32002
    assert req.routing.target(tid).agent == a5, "a2a-responder-agent-id on an error reply was not honoured"

    again = req.get_task_reply(tid)
    assert again.responder is None and again.target.agent == a5
    assert req.routing.target(tid).agent == a5, "a reply without the property must not move the task"

    history = req.routing.reroutes(tid)
    assert [(h.from_.agent, h.to.agent, h.cause) for h in history] == [
        (front, a1, "handover"), (a1, a2, "handover"), (a2, a1, "handover"), (a1, a3, "handover"),
        (a3, a4, "handover"), (a4, a5, "handover")]
    assert all(h.task_id == tid for h in history)

    # On the wire: every operation went to the agent named last, with the same Task.id and fresh correlation.
    wire = task_requests(traffic, tid, req.reply_topic)
    assert [(m.topic, b["method"]) for m, b in wire] == [
        (req_topic(unit, front), "SendStreamingMessage"), (req_topic(unit, a1), "GetTask"),
        (req_topic(unit, a3), "SendMessage"), (req_topic(unit, a4), "CancelTask"), (req_topic(unit, a5), "GetTask")]
    corrs = [m.correlation_data for m, _ in wire]
    assert all(c for c in corrs) and len(set(corrs)) == len(corrs)


def test_handover_on_the_first_reply_routes_get_subscribe_cancel_and_continuation_to_the_analyst(
        broker_url, unit, desks, traffic):
    desk = desks("first-reply")
    req = coordinator(broker_url, unit)

    a = req.send(DESK, TICKET_TEXT)  # blocking: the analyst asks for input
    assert a.state == INPUT_REQUIRED
    analyst_a = desk.instances[0].agent
    assert a.responder == analyst_a
    assert req.routing.target(a.task_id) == Address(ORG, unit, agent=analyst_a)
    (h,) = req.routing.reroutes(a.task_id)
    assert (h.from_.agent, h.to.agent, h.cause) == (DESK, analyst_a, "handover")
    assert analyst_a in h.detail

    got = req.get_task_reply(a.task_id)
    assert got.result["id"] == a.task_id and got.result["status"]["state"] == INPUT_REQUIRED
    # straight to the analyst (a busy machine may need a retry; every attempt goes there, none to the desk)
    assert got.target.agent == analyst_a and all(att.topic.endswith("/" + analyst_a) for att in got.attempts)
    snap = req.subscribe(a.task_id).wait()
    assert snap.task_id == a.task_id and snap.state == INPUT_REQUIRED
    canceled = req.cancel_task(a.task_id)
    assert canceled["id"] == a.task_id and canceled["status"]["state"] == CANCELED

    b = req.send(DESK, TICKET_TEXT)
    analyst_b = b.responder
    assert analyst_b == desk.instances[1].agent and analyst_b != analyst_a
    done = req.continue_task(b, REPRO_TEXT)
    assert done.task_id == b.task_id and done.state == COMPLETED
    assert done.target.agent == analyst_b

    mine = req.reply_topic
    wire_a = task_requests(traffic, a.task_id, mine)
    assert [(m.topic, bd["method"]) for m, bd in wire_a] == [
        (req_topic(unit, DESK), "SendMessage"), (req_topic(unit, analyst_a), "GetTask"),
        (req_topic(unit, analyst_a), "SubscribeToTask"), (req_topic(unit, analyst_a), "CancelTask")]
    wire_b = task_requests(traffic, b.task_id, mine)
    assert [(m.topic, bd["method"]) for m, bd in wire_b] == [
        (req_topic(unit, DESK), "SendMessage"), (req_topic(unit, analyst_b), "SendMessage")]
    first_msg, cont_msg = wire_b[0][1]["params"]["message"], wire_b[1][1]["params"]["message"]
    assert cont_msg["taskId"] == first_msg["taskId"] and cont_msg["contextId"] == first_msg["contextId"]
    assert cont_msg["messageId"] != first_msg["messageId"]

    corrs = [m.correlation_data for m, _ in wire_a + wire_b]
    assert len(set(corrs)) == len(corrs), "a follow-up reused Correlation Data"

    # The desk's first reply names the analyst; every reply keeps the Task.id.
    first_reply = replies_to(traffic, wire_a[0][0].correlation_data)
    assert first_reply and first_reply[0].user_property(PROP) == analyst_a
    for (m, _), tid in [(x, a.task_id) for x in wire_a] + [(x, b.task_id) for x in wire_b]:
        rs = replies_to(traffic, m.correlation_data)
        assert rs, f"no reply to {m.topic}"
        assert {task_id_of_reply(body_of(r)) for r in rs} == {tid}


# -- failure case: several handovers in one stream ----------------------------------------------------------
def test_two_handovers_in_one_stream_the_latest_wins(broker_url, unit, desks, traffic):
    desk = desks("double")
    req = coordinator(broker_url, unit)
    stream = req.stream(DESK, TICKET_TEXT + "\n" + REPRO_TEXT)
    events = list(stream)
    assert stream.state == COMPLETED
    assert len(desk.instances) == 2
    first, second = (i.agent for i in desk.instances)

    reroutes = [e.reroute for e in events if e.reroute is not None]
    assert [(r.from_.agent, r.to.agent, r.cause) for r in reroutes] == [(DESK, first, "handover"),
                                                                       (first, second, "handover")]
    named = [e.responder for e in events if e.responder]
    assert named[0] == first and named[-1] == second
    assert named == sorted(named, key=[first, second].index), "an older responder id came after a newer one"
    assert stream.target.agent == second and req.routing.target(stream.task_id).agent == second

    # Task.id is the same in every item, whichever agent published it.
    for e in events:
        tid = e.data["id"] if e.kind == "task" else e.data["taskId"]
        assert tid == stream.task_id

    task = req.get_task(stream.task_id)
    assert task["status"]["state"] == COMPLETED
    wire = task_requests(traffic, stream.task_id, req.reply_topic)
    assert [(m.topic, b["method"]) for m, b in wire] == [
        (req_topic(unit, DESK), "SendStreamingMessage"), (req_topic(unit, second), "GetTask")]
    assert wire[0][0].correlation_data != wire[1][0].correlation_data
    props = [r.user_property(PROP) for r in replies_to(traffic, wire[0][0].correlation_data)]
    values = [p for i, p in enumerate(props) if p and (i == 0 or props[i - 1] != p)]
    assert values == [first, second]


# -- failure case: no property ------------------------------------------------------------------------------
def test_without_the_property_everything_stays_with_the_card_agent(broker_url, unit, desks, traffic):
    desks("none")
    req = coordinator(broker_url, unit)
    a = req.send(DESK, TICKET_TEXT)
    assert a.state == INPUT_REQUIRED and a.responder is None
    assert req.routing.target(a.task_id).agent == DESK
    assert req.get_task(a.task_id)["status"]["state"] == INPUT_REQUIRED
    done = req.continue_task(a, REPRO_TEXT)
    assert done.state == COMPLETED and done.target.agent == DESK
    b = req.send(DESK, TICKET_TEXT)
    assert req.cancel_task(b.task_id)["status"]["state"] == CANCELED
    assert req.routing.reroutes() == []

    for tid, methods in ((a.task_id, ["SendMessage", "GetTask", "SendMessage"]),
                         (b.task_id, ["SendMessage", "CancelTask"])):
        wire = task_requests(traffic, tid, req.reply_topic)
        assert [(m.topic, bd["method"]) for m, bd in wire] == [(req_topic(unit, DESK), x) for x in methods]
        for m, _ in wire:
            rs = replies_to(traffic, m.correlation_data)
            assert rs and all(r.user_property(PROP) is None for r in rs)


# -- failure case: the handover target is unreachable --------------------------------------------------------
def test_unreachable_analyst_retries_on_its_topic_then_falls_back_to_the_desk(broker_url, unit, desks, tmp_path):
    """The analyst dies after asking for input. GetTask: max_attempts publishes to its direct topic
    (new correlation each, PUBACK 16 noted), then the card agent, which serves the task from the shared
    runtime; the continuation then goes straight to the desk. CancelTask falls back the same way.
    The fallback and its reason are in the routing history, on disk too."""
    desk = desks("dies")
    wire = ReplyRecorder(broker_url, unit)
    routes = str(tmp_path / "routes.db")
    name = uid("coord")
    req = coordinator(broker_url, unit, name, routes_path=routes)

    a = req.send(DESK, TICKET_TEXT)
    assert a.state == INPUT_REQUIRED
    inst = desk.instances[0]
    assert a.responder == inst.agent
    assert wait_until(lambda: not inst.alive, 3.0), f"{inst.agent} did not die"
    assert desk.killed == [inst.agent]
    analyst_topic, desk_topic = req_topic(unit, inst.agent), req_topic(unit, DESK)
    assert wait_until(lambda: wire.nobody_listens_on(analyst_topic), 3.0)

    got = req.get_task_reply(a.task_id)
    atts = got.attempts
    assert [x.topic for x in atts] == [analyst_topic] * SHORT.max_attempts + [desk_topic]
    assert len({x.correlation for x in atts}) == len(atts), "a retry reused Correlation Data"
    assert [x.reason_code for x in atts[:-1]] == [16] * SHORT.max_attempts, [(x.reason_code, x.outcome) for x in atts]
    assert all("PUBACK 16" in x.outcome for x in atts[:-1])
    assert atts[-1].outcome == "answered"
    assert got.target.agent == DESK
    assert got.result["id"] == a.task_id and got.result["status"]["state"] == INPUT_REQUIRED
    assert req.stats.fallbacks == 1

    handover, fallback = req.routing.reroutes(a.task_id)
    assert (handover.cause, handover.to.agent) == ("handover", inst.agent)
    assert (fallback.cause, fallback.from_.agent, fallback.to.agent) == ("fallback", inst.agent, DESK)
    assert inst.agent in fallback.detail and f"{SHORT.max_attempts} attempts" in fallback.detail
    assert "PUBACK 16" in fallback.detail

    # the fallback GetTask was seen on the desk's topic with the same Task.id and the new correlation
    fb_corr = atts[-1].correlation.encode("ascii")  # the kit's Correlation Data is text, shown as it is
    assert wait_until(lambda: [m for m in wire.on(desk_topic) if m.correlation_data == fb_corr], 2.0)
    (fb,) = [m for m in wire.on(desk_topic) if m.correlation_data == fb_corr]
    assert body_of(fb)["method"] == "GetTask" and task_id_of_request(body_of(fb)) == a.task_id

    done = req.continue_task(a, REPRO_TEXT)  # now routed to the desk: one attempt
    assert done.state == COMPLETED and done.task_id == a.task_id
    assert [x.topic for x in done.attempts] == [desk_topic]

    b = req.send(DESK, TICKET_TEXT)
    inst_b = desk.instances[1]
    assert b.responder == inst_b.agent
    assert wait_until(lambda: not inst_b.alive, 3.0), f"{inst_b.agent} did not die"
    assert wait_until(lambda: wire.nobody_listens_on(req_topic(unit, inst_b.agent)), 3.0)
    canceled = req.cancel_task(b.task_id)
    assert canceled["id"] == b.task_id and canceled["status"]["state"] == CANCELED
    assert [r.cause for r in req.routing.reroutes(b.task_id)] == ["handover", "fallback"]
    assert req.stats.fallbacks == 2

    def desk_requests_seen() -> list[tuple[str, str]]:
        return [(body_of(m)["method"], task_id_of_request(body_of(m))) for m in wire.on(desk_topic)
                if m.response_topic == req.reply_topic]

    wait_until(lambda: len(desk_requests_seen()) >= 5, 2.0)  # the observer is a client of its own: let it catch up
    desk_requests = desk_requests_seen()
    assert desk_requests == [("SendMessage", a.task_id), ("GetTask", a.task_id), ("SendMessage", a.task_id),
                             ("SendMessage", b.task_id), ("CancelTask", b.task_id)]
    # every reply on the desk-served correlations keeps the Task.id
    for m in wire.on(desk_topic):
        if m.response_topic == req.reply_topic:
            rs = wait_until(lambda: [r for r in wire.with_correlation(m.correlation_data) if r.topic == req.reply_topic])
            assert rs and {task_id_of_reply(body_of(r)) for r in rs} == {task_id_of_request(body_of(m))}

    req.close()
    again = coordinator(broker_url, unit, name, routes_path=routes)
    assert again.routing.target(a.task_id).agent == DESK
    restored = again.routing.reroutes(a.task_id)
    assert [(r.cause, r.to.agent) for r in restored] == [("handover", inst.agent), ("fallback", DESK)]
    assert restored[1].detail == fallback.detail


def test_unreachable_target_without_card_fallback_raises_after_max_attempts(broker_url, unit, traffic):
    """When the card agent is gone too, the requester gives up with RequestTimeout (no endless loop)."""
    front, inst = "front", "inst-gone"

    def script(agent, body):
        tid = task_id_of_request(body)
        return [({"task": raw_task(tid, "ctx", INPUT_REQUIRED)}, inst)]

    raw = ScriptedAgents(broker_url, unit, [front], script)
    req = coordinator(broker_url, unit)
    r = req.send(front, "hi")
    assert req.routing.target(r.task_id).agent == inst
    raw.session.close()
    with pytest.raises(RequestTimeout):
        req.get_task(r.task_id)
    wire = task_requests(traffic, r.task_id, req.reply_topic)
    assert [m.topic for m, _ in wire] == [req_topic(unit, front)] + [req_topic(unit, inst)] * SHORT.max_attempts \
        + [req_topic(unit, front)] * SHORT.max_attempts
    assert len({m.correlation_data for m, _ in wire}) == len(wire)
    assert [x.cause for x in req.routing.reroutes(r.task_id)] == ["handover", "fallback"]


# -- routing persistence --------------------------------------------------------------------------------------
def _handed_over_then_restarted(broker_url, unit, desks, tmp_path):
    desk = desks("first-reply")
    routes = str(tmp_path / "routes.db")
    name = uid("coord")
    req = coordinator(broker_url, unit, name, routes_path=routes)
    a = req.send(DESK, TICKET_TEXT)
    analyst = desk.instances[0].agent
    assert a.responder == analyst and a.state == INPUT_REQUIRED
    req.close()
    return req, coordinator(broker_url, unit, name, routes_path=routes), a, analyst


def test_a_restarted_requester_routes_follow_ups_to_the_analyst_from_its_routes_file(
        broker_url, unit, desks, traffic, tmp_path):
    req, again, a, analyst = _handed_over_then_restarted(broker_url, unit, desks, tmp_path)
    assert again.reply_topic != req.reply_topic
    assert again.routing.target(a.task_id) == Address(ORG, unit, agent=analyst)
    assert again.routing.card(a.task_id) == Address(ORG, unit, agent=DESK)
    assert [(r.cause, r.to.agent) for r in again.routing.reroutes(a.task_id)] == [("handover", analyst)]
    task = again.get_task(a.task_id)
    assert task["id"] == a.task_id and task["status"]["state"] == INPUT_REQUIRED
    assert again.cancel_task(a.task_id)["status"]["state"] == CANCELED

    wire = task_requests(traffic, a.task_id, again.reply_topic)
    assert [(m.topic, b["method"]) for m, b in wire] == [
        (req_topic(unit, analyst), "GetTask"), (req_topic(unit, analyst), "CancelTask")]
    first = task_requests(traffic, a.task_id, req.reply_topic)
    assert [(m.topic, b["method"]) for m, b in first] == [(req_topic(unit, DESK), "SendMessage")]
    corrs = [m.correlation_data for m, _ in first + wire]
    assert len(set(corrs)) == len(corrs)


def test_a_restarted_requester_continuation_is_new_input_for_the_analyst(broker_url, unit, desks, traffic, tmp_path):
    """The restarted coordinator answers INPUT_REQUIRED: its continuation must carry a new messageId,
    or the analyst takes it for a retry of the first message and the input is lost."""
    req, again, a, analyst = _handed_over_then_restarted(broker_url, unit, desks, tmp_path)
    task = again.get_task(a.task_id)
    done = again.continue_task(task, REPRO_TEXT)
    wire = task_requests(traffic, a.task_id, None)
    sends = [b["params"]["message"] for m, b in wire if b["method"] == "SendMessage"]
    assert len(sends) == 2 and sends[1]["taskId"] == sends[0]["taskId"] == a.task_id
    assert sends[1]["messageId"] != sends[0]["messageId"], \
        f"the restarted requester reused messageId {sends[1]['messageId']!r} of its previous run"
    assert done.task_id == a.task_id and done.state == COMPLETED
    assert uuid.UUID(a.task_id).version == 4

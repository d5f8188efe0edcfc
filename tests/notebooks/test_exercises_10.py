"""Lesson 10's exercise check, against a real sealed exchange on the Mosquitto of ``tests/conftest.py``.

The lesson's situation in a unit of its own: a desk and a coordinator under ``ubsp-v1`` (keys
served by a key server with the kit's CA), an operator recording every message. The check opens
the recorded last reply with the coordinator's keys; the answer is the task status read inside.
A bare state (``"completed"``) is a guess and is not enough; no hint gives the state away.
"""
from __future__ import annotations

import uuid

import pytest

from a2a_nb import Recorder, Requester, TicketDesk
from a2a_nb.notebook.exercises import lesson10
from a2a_nb.protocol import states
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from a2a_nb.traffic.records import from_record
from a2a_nb.ubsp.key_server import KeyServer
from a2a_nb.ubsp.keys import AgentKeys
from a2a_nb.ubsp.protection import Ubsp
from tests.helpers import uid


@pytest.fixture(scope="module")
def sealed_exchange(broker_url):
    """(the recorded last sealed reply, the coordinator, the status inside as the lesson reads it)."""
    unit = uid("ex10")
    keys = KeyServer()
    desk_keys, coordinator_keys = AgentKeys("ticket-desk"), AgentKeys("coordinator")
    for k in (desk_keys, coordinator_keys):
        keys.publish(f"acme/{unit}/{k.agent}", k.public_jwks())
    trust = keys.trust()
    operator = Recorder(broker_url, org_filter=f"$a2a/v1/+/acme/{unit}/#").start()
    desk = TicketDesk(unit=unit, broker=broker_url, pace=0.0,
                      ubsp=Ubsp(desk_keys, trust, {"jwksUri": keys.url_for(f"acme/{unit}/ticket-desk")}))
    coordinator = Requester("coordinator", unit=unit, broker=broker_url,
                            ubsp=Ubsp(coordinator_keys, trust, {"jwksUri": keys.url_for(f"acme/{unit}/coordinator")}))
    try:
        stream = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT)
        list(stream)
        assert stream.state == states.COMPLETED
        operator.wait_idle(0.2)
        replies = [r for r in operator.records if "/reply/" in r["topic"]]
        last = replies[-1]
        inside = coordinator.ubsp.read_recorded(from_record(last), "acme", unit).json()
        yield last, coordinator, inside
    finally:
        coordinator.close()
        desk.stop()
        operator.stop()
        keys.close()


def verdict(feedback) -> tuple[bool, str]:
    return feedback.right, feedback.message


def test_the_status_read_inside_is_right(sealed_exchange):
    record, coordinator, inside = sealed_exchange
    status = inside["result"]["statusUpdate"]["status"]
    for answer in (status, inside, inside["result"], dict(status, state="completed")):
        right, message = verdict(lesson10.state_inside(answer, record, coordinator))
        assert right, message
    assert "TASK_STATE_COMPLETED" in message


@pytest.mark.parametrize("guess", ["completed", "TASK_STATE_COMPLETED", "COMPLETED"])
def test_a_bare_state_is_a_guess(sealed_exchange, guess):
    record, coordinator, _ = sealed_exchange
    right, message = verdict(lesson10.state_inside(guess, record, coordinator))
    assert not right and "could be a guess" in message


def test_a_made_up_status_with_the_right_state_is_not_enough(sealed_exchange):
    record, coordinator, _ = sealed_exchange
    right, message = verdict(lesson10.state_inside({"state": "TASK_STATE_COMPLETED"}, record, coordinator))
    assert not right and "not the one inside" in message


@pytest.mark.parametrize("answer, hint", [
    (..., "replace the ..."),
    ("protected", "what the operator sees"),
    ("application/jose", "what the operator sees"),
    (42, "expected the status read inside"),
    ({"state": "sealed"}, "is not a task state"),
    ({"state": "TASK_STATE_WORKING"}, "not the one in the desk's last reply"),
])
def test_wrong_answers_get_a_hint_without_the_answer(sealed_exchange, answer, hint):
    record, coordinator, _ = sealed_exchange
    right, message = verdict(lesson10.state_inside(answer, record, coordinator))
    assert not right and hint in message
    assert "COMPLETED" not in message.upper().replace("TASK_STATE_WORKING", "")


def test_a_record_the_coordinator_cannot_open(sealed_exchange):
    record, coordinator, inside = sealed_exchange
    forged = dict(record, payload_b64="bm90IGEgandl")  # "not a jwe"
    right, message = verdict(lesson10.state_inside(inside, forged, coordinator))
    assert not right and "cannot open that reply" in message

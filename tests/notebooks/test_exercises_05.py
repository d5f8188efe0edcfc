"""Lesson 05's exercise checks, against real desks on the Mosquitto of ``tests/conftest.py``.

Each test works in a unit of its own, so its agents never meet those of other tests: a desk whose
analyst dies (the unreachable case, for the reroute's cause) and a desk that hands over at once (for
the follow-up's topic), as the lesson makes them.
"""
from __future__ import annotations

import uuid

import pandas as pd
import pytest

from tests.waiting import wait_until

from a2a_nb.agents import Requester
from a2a_nb.notebook.exercises import lesson05
from a2a_nb.protocol import states, topics
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT
from tests.helpers import QUICK, gives_nothing_away, uid


@pytest.fixture
def coordinator(broker_url, unit):
    req = Requester("coordinator", unit=unit, broker=broker_url, retry=QUICK, seed=5)
    yield req
    req.close()


# -- find the reroute's cause --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def unreachable(broker_url):
    """The unreachable case of step 7: handover to an analyst that dies, fallback to the desk. Made
    once for the module: the check reads only the routing table, which outlives the sessions that
    ``tests/conftest.py`` closes after each test."""
    unit = uid("ex05")
    desk = TicketDesk(unit=unit, broker=broker_url, handover="dies", seed=7, pace=0.01)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, retry=QUICK, seed=5)
    doomed = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
    doomed.wait()
    analyst = desk.instances[-1]
    assert wait_until(lambda: analyst.agent not in desk.runtime.agents)
    coordinator.continue_task(doomed, REPRO_TEXT, return_immediately=True)
    moves = pd.DataFrame(coordinator.routing.history_rows())
    yield coordinator, doomed.task_id, analyst.agent, moves
    coordinator.close()
    desk.stop()


def test_the_reference_cause_is_right(unreachable):
    coordinator, task_id, analyst, moves = unreachable
    mine = moves[(moves["task_id"] == task_id) & (moves["from"].str.endswith("/" + analyst))]
    feedback = lesson05.reroute_cause(mine["cause"].iloc[0], coordinator, task_id)
    assert feedback.right, feedback
    assert "✓ right" in str(feedback) and "fallback" in feedback.message
    assert lesson05.reroute_cause(" Fallback ", coordinator, task_id).right  # as typed by hand


def test_the_placeholder_asks_for_an_answer(unreachable):
    coordinator, task_id, _, _ = unreachable
    feedback = lesson05.reroute_cause(..., coordinator, task_id)
    assert not feedback.right and "replace the ..." in feedback.message


def test_the_handover_row_is_not_the_reroute_away(unreachable):
    coordinator, task_id, analyst, _ = unreachable
    feedback = lesson05.reroute_cause("handover", coordinator, task_id)
    gives_nothing_away(feedback, "fallback")
    assert f"from is {analyst}" in feedback.message  # where to look


def test_a_column_or_a_table_is_not_one_value(unreachable):
    coordinator, task_id, _, moves = unreachable
    for whole in (moves["cause"], moves[moves["task_id"] == task_id]):
        feedback = lesson05.reroute_cause(whole, coordinator, task_id)
        gives_nothing_away(feedback, "fallback")
        assert ".iloc" in feedback.message


def test_a_cause_that_was_never_recorded(unreachable):
    coordinator, task_id, analyst, _ = unreachable
    for wrong in ("pool-assigned", "timeout", 16):
        feedback = lesson05.reroute_cause(wrong, coordinator, task_id)
        gives_nothing_away(feedback, "fallback")


def test_a_task_without_reroutes(unreachable):
    coordinator, _, _, _ = unreachable
    gives_nothing_away(lesson05.reroute_cause("fallback", coordinator, "no-such-task"))


# -- the follow-up's topic -----------------------------------------------------------------------------
@pytest.fixture
def handed_over(broker_url, unit, coordinator):
    desk = TicketDesk(unit=unit, broker=broker_url, handover="first-reply", seed=7, pace=0.01)
    mine = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
    mine.wait()
    assert mine.state == states.INPUT_REQUIRED
    yield mine
    desk.stop()


def test_the_reference_follow_up_is_right(unit, coordinator, handed_over):
    reply = coordinator.continue_task(handed_over, REPRO_TEXT)
    assert reply.state == states.COMPLETED
    analyst = [e.responder for e in handed_over.events if e.responder][-1]
    assert reply.attempts[0].topic == topics.request_topic("acme", unit, analyst)
    feedback = lesson05.follow_up_topic(reply.attempts[0].topic, handed_over, coordinator)
    assert feedback.right, feedback
    assert analyst in feedback.message


def test_the_topic_placeholder_asks_for_an_answer(coordinator, handed_over):
    feedback = lesson05.follow_up_topic(..., handed_over, coordinator)
    assert not feedback.right and "replace the ..." in feedback.message


def test_the_card_agents_topic_is_where_the_ticket_went_first(unit, coordinator, handed_over):
    analyst = [e.responder for e in handed_over.events if e.responder][-1]
    feedback = lesson05.follow_up_topic(topics.request_topic("acme", unit, "ticket-desk"), handed_over, coordinator)
    gives_nothing_away(feedback, analyst)
    assert "card agent" in feedback.message and "a2a-responder-agent-id" in feedback.message


def test_the_reply_topic_is_not_where_requests_go(coordinator, handed_over):
    analyst = [e.responder for e in handed_over.events if e.responder][-1]
    feedback = lesson05.follow_up_topic(coordinator.reply_topic, handed_over, coordinator)
    gives_nothing_away(feedback, analyst)
    assert "reply topic" in feedback.message


def test_another_analysts_topic(unit, coordinator, handed_over):
    analyst = [e.responder for e in handed_over.events if e.responder][-1]
    feedback = lesson05.follow_up_topic(topics.request_topic("acme", unit, "analyst-9"), handed_over, coordinator)
    gives_nothing_away(feedback, topics.request_topic("acme", unit, analyst))
    assert "analyst-9" in feedback.message


def test_not_a_topic_at_all(coordinator, handed_over):
    analyst = [e.responder for e in handed_over.events if e.responder][-1]
    for wrong in ("analyst's topic", "$a2a/v1/request/acme", handed_over.attempts if hasattr(handed_over, "attempts")
                  else ["a list"]):
        feedback = lesson05.follow_up_topic(wrong, handed_over, coordinator)
        gives_nothing_away(feedback, analyst)


def test_a_task_the_coordinator_does_not_know(broker_url, unit, handed_over):
    other = Requester("other-coordinator", unit=unit, broker=broker_url, retry=QUICK, seed=6)
    try:
        feedback = lesson05.follow_up_topic("$a2a/v1/request/acme/x/y", handed_over, other)
        assert not feedback.right and "routing table" in feedback.message
    finally:
        other.close()

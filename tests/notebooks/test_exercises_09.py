"""Lesson 09's exercise check: the right answer, the ``...`` placeholder and typical wrong answers.

A ticket desk in a unit of the test's own and a bridge in front of it, on the real Mosquitto of
``tests/conftest.py``; the "learner" posts over HTTP as the lesson does. No hint gives the answer
(the analyst's request topic) away.
"""
from __future__ import annotations

import secrets

import httpx
import pytest

from a2a_nb.bridge import Bridge
from a2a_nb.mqtt.session import Session
from a2a_nb.notebook.exercises import lesson09
from a2a_nb.protocol import MqttMessage, topics
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import TICKET_TEXT
from tests.helpers import clear_cards, uid

ORG = "acme"


@pytest.fixture
def bridge(broker_url, unit):
    """Per test: tests/conftest.py closes every MQTT session after each test, the bridge's too."""
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.01, seed=9):
        with Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url, seed=9) as b:
            yield b
    clear_cards(broker_url, unit, ["ticket-desk"])


def post_ticket(bridge: Bridge, message_id: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "messageId": message_id, "parts": [{"text": TICKET_TEXT}]}}}
    return httpx.post(bridge.url, json=body, timeout=10).json()


@pytest.fixture
def sent(bridge):
    """What the learner gets back, and where the follow-ups really go (computed apart from the check:
    from the routing table's current agent)."""
    reply = post_ticket(bridge, uid("ex09"))
    task_id = reply["result"]["task"]["id"]
    analyst = bridge.requester.routing.target(task_id).agent
    assert analyst and analyst.startswith("analyst-"), "the desk hands a new ticket over on its first reply"
    return reply, topics.request_topic(ORG, bridge.unit, analyst), analyst


def test_right(bridge, sent):
    reply, topic, analyst = sent
    feedback = lesson09.follow_up_topic(reply, topic, bridge)
    assert feedback.right, feedback
    assert analyst in feedback.message


@pytest.mark.parametrize("which", ["reply", "topic", "both"])
def test_placeholder(bridge, sent, which):
    reply, topic, _ = sent
    feedback = lesson09.follow_up_topic(... if which in ("reply", "both") else reply,
                                        ... if which in ("topic", "both") else topic, bridge)
    assert not feedback.right and "replace the ..." in feedback.message


def _no_answer_in(message: str, topic: str, analyst: str) -> None:
    assert topic not in message and analyst not in message, f"the hint gives the answer away: {message}"


def test_the_desks_topic_is_where_the_first_message_went(bridge, sent):
    reply, topic, analyst = sent
    feedback = lesson09.follow_up_topic(reply, topics.request_topic(ORG, bridge.unit, "ticket-desk"), bridge)
    assert not feedback.right and "first message" in feedback.message and "a2a-responder-agent-id" in feedback.message
    _no_answer_in(feedback.message, topic, analyst)


def test_the_bridges_reply_topic_is_not_a_request_topic(bridge, sent):
    reply, topic, analyst = sent
    feedback = lesson09.follow_up_topic(reply, bridge.requester.reply_topic, bridge)
    assert not feedback.right and "reply topic" in feedback.message
    _no_answer_in(feedback.message, topic, analyst)


def test_another_analysts_topic(bridge, sent):
    reply, topic, analyst = sent
    other = "analyst-1" if analyst != "analyst-1" else "analyst-2"
    feedback = lesson09.follow_up_topic(reply, topics.request_topic(ORG, bridge.unit, other), bridge)
    assert not feedback.right and "not the one" in feedback.message
    _no_answer_in(feedback.message, topic, analyst)


def test_the_agents_name_instead_of_its_topic(bridge, sent):
    reply, topic, analyst = sent
    feedback = lesson09.follow_up_topic(reply, analyst, bridge)
    assert not feedback.right and "request topic" in feedback.message
    assert topic not in feedback.message


def test_replies_that_are_not_a_tasks_json(bridge, sent):
    reply, topic, _ = sent
    response = httpx.get(bridge.card_url, timeout=10)
    assert "response.json()" in lesson09.follow_up_topic(response, topic, bridge).message
    error = httpx.post(bridge.url, json={"jsonrpc": "2.0", "id": 4, "method": "SendMessage", "params": {}},
                       timeout=10).json()
    assert "error" in error
    assert "answered with an error" in lesson09.follow_up_topic(error, topic, bridge).message
    assert "holds no task" in lesson09.follow_up_topic({"jsonrpc": "2.0", "id": 1, "result": {}}, topic, bridge).message
    stranger = {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "00000000-0000-4000-8000-000000000000"}}}
    assert "never forwarded" in lesson09.follow_up_topic(stranger, topic, bridge).message

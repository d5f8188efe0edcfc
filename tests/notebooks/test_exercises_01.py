"""Lesson 01's exercise checks against live cards on the real broker (tests/conftest.py).

The lesson's situation in a unit of its own: the desk and echo online, and a backup desk with the
desk's skill that crashed (its card offline, source ``lwt``). Each check gets the right answer, the
``...`` placeholder and typical wrong answers; no hint may contain the answer.
"""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.responder import Responder
from a2a_nb.notebook.exercises import lesson01
from a2a_nb.protocol import cards, topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import desk_card, echo_card, echo_handler
from tests.helpers import uid

TAG = "root-cause-analysis"


@pytest.fixture
def lesson(broker_url):
    unit = uid("ex01")
    disco = Discovery("acme", unit, agent="ex01-discovery", broker=broker_url)
    desk = Responder("ticket-desk", lambda ctx: "ok", unit=unit, card=desk_card("acme", unit), broker=broker_url)
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card("acme", unit), broker=broker_url)
    backup = Responder("backup-desk", lambda ctx: "closed", unit=unit, broker=broker_url, card=cards.agent_card(
        name="Backup ticket desk", description="Takes tickets when the main desk cannot.", version="1.0.0",
        org="acme", unit=unit, agent="backup-desk", skills=desk_card("acme", unit)["skills"], streaming=True))
    backup.crash()
    for agent, status in (("ticket-desk", "online"), ("echo", "online"), ("backup-desk", "offline")):
        disco.wait_for(agent, status=status)
    yield disco
    desk.stop()
    echo.stop()
    for agent in disco.agents():  # leave no retained card behind
        disco.session.publish(MqttMessage(topics.discovery_topic("acme", unit, agent), b"", retain=True))
    disco.close()


def verdict(feedback) -> tuple[bool, str]:
    return feedback.right, feedback.message


# -- exercise 1: online agents with the tag ----------------------------------------------------------
def test_find_online_right_answers(lesson):
    found = lesson.find(tags=[TAG], online_only=True)
    for answer in (found, tuple(found), found[0],
                   lesson.find(tags=[TAG], capabilities=["streaming"], online_only=True)):
        right, message = verdict(lesson01.online_with_tag(answer, lesson, TAG))
        assert right, message
    assert "backup-desk has the tag too, but is offline" in message
    assert str(lesson01.online_with_tag(found, lesson, TAG)).startswith(lesson01.FIND_ONLINE + ": ✓ right")


@pytest.mark.parametrize("typed", ["ticket-desk", ["ticket-desk"], ("ticket-desk",), {"ticket-desk"}])
def test_find_online_names_typed_by_hand_are_a_guess(lesson, typed):
    """The exercise asks the discovery: the right name typed from the page is not an answer."""
    right, message = verdict(lesson01.online_with_tag(typed, lesson, TAG))
    assert not right and "typed by hand" in message and "disco.find(...)" in message
    assert "ticket-desk" not in message


def test_find_online_placeholder(lesson):
    right, message = verdict(lesson01.online_with_tag(..., lesson, TAG))
    assert not right and "replace the ..." in message


@pytest.mark.parametrize("answer, hint", [
    # forgot online_only: the crashed backup desk comes along
    (lambda d: d.find(tags=[TAG]), "backup-desk carries the tag, but its card says offline"),
    # no tag at all: echo comes along
    (lambda d: d.find(online_only=True), "echo: no skill on the card is tagged"),
    # a misspelt tag finds nobody
    (lambda d: d.find(tags=["root-cause"], online_only=True), "missing: did you spell the tag"),
    (lambda d: [], "missing"),
    (lambda d: d.find(tags=[TAG], online_only=True) * 2, "twice"),
    (lambda d: 42, "got int"),
    (lambda d: [d.get("ticket-desk"), "echo"], "got list"),
])
def test_find_online_wrong_answers_get_a_hint_without_the_answer(lesson, answer, hint):
    feedback = lesson01.online_with_tag(answer(lesson), lesson, TAG)
    assert not feedback.right
    assert hint in feedback.message, feedback.message
    assert "ticket-desk" not in feedback.message, feedback.message
    assert "online_only" not in feedback.message


# -- exercise 2: the source of a crashed agent's card ------------------------------------------------
def test_crashed_source_right_answer_is_read_from_the_discovery(lesson):
    assert lesson.get("backup-desk").status_source == "lwt"
    right, message = verdict(lesson01.crashed_source(lesson.get("backup-desk").status_source, lesson, "backup-desk"))
    assert right and "last will" in message
    assert verdict(lesson01.crashed_source(" LWT ", lesson, "backup-desk"))[0]


def test_crashed_source_placeholder(lesson):
    right, message = verdict(lesson01.crashed_source(..., lesson, "backup-desk"))
    assert not right and "replace the ..." in message


@pytest.mark.parametrize("answer, hint", [
    ("agent", "graceful stop()"),
    ("offline", "is an a2a-status value"),
    ("broker", "the broker manages by itself"),
    ("will", "is not what the card says"),
    (None, "a string; got NoneType"),
])
def test_crashed_source_wrong_answers_get_a_hint_without_the_answer(lesson, answer, hint):
    feedback = lesson01.crashed_source(answer, lesson, "backup-desk")
    assert not feedback.right
    assert hint in feedback.message, feedback.message
    assert "lwt" not in feedback.message.lower(), feedback.message


def test_crashed_source_the_entry_itself_is_not_the_answer(lesson):
    feedback = lesson01.crashed_source(lesson.get("backup-desk"), lesson, "backup-desk")
    assert not feedback.right and "whole entry" in feedback.message and "lwt" not in feedback.message


def test_crashed_source_follows_the_discovery_not_a_constant(lesson, broker_url):
    """A graceful stop leaves source agent: the check then wants that, since it reads the card."""
    unit = lesson.unit
    quitter = Responder("quitter", echo_handler, unit=unit, card=echo_card("acme", unit, "quitter"), broker=broker_url)
    lesson.wait_for("quitter", status="online")
    quitter.stop()
    lesson.wait_for("quitter", status="offline")
    assert verdict(lesson01.crashed_source("agent", lesson, "quitter"))[0]
    assert not verdict(lesson01.crashed_source("lwt", lesson, "quitter"))[0]
    missing = lesson01.crashed_source("lwt", lesson, "nobody")
    assert not missing.right and "no card of nobody" in missing.message

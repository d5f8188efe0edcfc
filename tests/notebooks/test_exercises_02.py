"""Lesson 02's exercise check, against a real desk on the Mosquitto of ``tests/conftest.py``.

Each test gets a desk and a coordinator in a unit of its own, and a fresh task waiting at
input-required, as the exercise cell makes one.
"""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Requester
from a2a_nb.notebook.exercises import lesson02
from a2a_nb.protocol import states
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT
from tests.helpers import gives_nothing_away, uid


@pytest.fixture
def cast(broker_url):
    unit = uid("ex02")
    desk = TicketDesk(unit=unit, broker=broker_url, handover="first-reply", seed=7, pace=0.01)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, seed=7)
    yield desk, coordinator
    coordinator.close()
    desk.stop()


@pytest.fixture
def waiting(cast):
    _, coordinator = cast
    reply = coordinator.send("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
    assert reply.state == states.INPUT_REQUIRED
    return reply


def hides_the_answer(feedback):
    gives_nothing_away(feedback, "continue_task", REPRO_TEXT)
    assert "..." not in feedback.message or "replace the ..." in feedback.message


def test_the_reference_answer_is_right(cast, waiting):
    _, coordinator = cast
    feedback = lesson02.answered_on_the_same_task(coordinator.continue_task(waiting, REPRO_TEXT), waiting, coordinator)
    assert feedback.right, feedback
    assert "✓ right" in str(feedback)


def test_an_answer_acknowledged_at_once_is_right_once_the_task_completes(cast, waiting):
    _, coordinator = cast
    answer = coordinator.send(None, message=coordinator.new_message(REPRO_TEXT, task_id=waiting.task_id,
                                                                    context_id=waiting.context_id),
                              return_immediately=True)
    assert answer.state == states.WORKING
    assert lesson02.answered_on_the_same_task(answer, waiting, coordinator).right


def test_a_streamed_answer_is_right(cast, waiting):
    _, coordinator = cast
    answer = coordinator.continue_task(waiting, REPRO_TEXT, stream=True)
    assert lesson02.answered_on_the_same_task(answer, waiting, coordinator).right


@pytest.mark.parametrize("text", ["hello", "Reproduction: no idea", REPRO_TEXT.upper()])
def test_any_other_text_on_the_task_is_not_the_answer(cast, waiting, text):
    """The analyst takes any text as the steps and completes; the check wants the steps it asked for."""
    _, coordinator = cast
    answer = coordinator.continue_task(waiting, text)
    assert answer.state == states.COMPLETED  # the agent alone would call it done
    feedback = lesson02.answered_on_the_same_task(answer, waiting, coordinator)
    hides_the_answer(feedback)
    assert "not the reproduction steps" in feedback.message


def test_the_placeholder_is_not_yet(cast, waiting):
    _, coordinator = cast
    feedback = lesson02.answered_on_the_same_task(..., waiting, coordinator)
    assert not feedback.right and "replace the ..." in feedback.message


def test_a_new_task_instead_of_the_waiting_one(cast, waiting):
    _, coordinator = cast
    elsewhere = coordinator.send("ticket-desk", REPRO_TEXT, context_id=CONTEXT_ID)  # no Task.id: a new task
    feedback = lesson02.answered_on_the_same_task(elsewhere, waiting, coordinator)
    hides_the_answer(feedback)
    assert "another task" in feedback.message


def test_a_resend_of_the_first_message_is_not_new_input(cast):
    _, coordinator = cast
    first = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID)
    waiting = coordinator.send("ticket-desk", message=first)
    again = coordinator.send(None, message=first)  # the same messageId: the agent sees a resend
    feedback = lesson02.answered_on_the_same_task(again, waiting, coordinator)
    hides_the_answer(feedback)
    assert "resend" in feedback.message and "input-required" in feedback.message


def test_a_message_never_sent(cast, waiting):
    _, coordinator = cast
    unsent = coordinator.new_message(REPRO_TEXT, task_id=waiting.task_id, context_id=waiting.context_id)
    feedback = lesson02.answered_on_the_same_task(unsent, waiting, coordinator)
    hides_the_answer(feedback)
    assert "sent" in feedback.message


def test_the_question_itself_is_no_answer(cast, waiting):
    _, coordinator = cast
    feedback = lesson02.answered_on_the_same_task(waiting, waiting, coordinator)
    hides_the_answer(feedback)
    assert "asked" in feedback.message


def test_something_else(cast, waiting):
    _, coordinator = cast
    feedback = lesson02.answered_on_the_same_task(REPRO_TEXT, waiting, coordinator)
    assert not feedback.right and "got str" in feedback.message

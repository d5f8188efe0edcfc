"""Lesson 04's exercise checks, against a real desk on the Mosquitto of ``tests/conftest.py``: a task
waiting at input-required to continue, and a finished task to write to once more."""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Requester
from a2a_nb.notebook.exercises import lesson04
from a2a_nb.protocol import states
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT
from tests.helpers import gives_nothing_away, uid


@pytest.fixture
def cast(broker_url):
    unit = uid("ex04")
    desk = TicketDesk(unit=unit, broker=broker_url, handover="none", seed=4, pace=0.01)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, seed=4)
    yield desk, coordinator
    coordinator.close()
    desk.stop()


@pytest.fixture
def question(cast):
    _, coordinator = cast
    stream = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
    stream.wait()
    assert stream.state == states.INPUT_REQUIRED
    return stream


@pytest.fixture
def finished(cast):
    _, coordinator = cast
    stream = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID)
    stream.wait()
    assert stream.state == states.COMPLETED
    return stream


# -- exercise 1: continue the task ------------------------------------------------------------------
def test_the_reference_continuation_is_right(cast, question):
    _, coordinator = cast
    message = coordinator.new_message(REPRO_TEXT, task_id=question.task_id, context_id=question.view.context_id)
    feedback = lesson04.continues_the_task(message, question, coordinator)
    assert feedback.right, feedback
    assert coordinator.get_task(question.task_id)["status"]["state"] == states.COMPLETED


def test_the_placeholder_is_not_yet(cast, question):
    _, coordinator = cast
    feedback = lesson04.continues_the_task(..., question, coordinator)
    assert not feedback.right and "replace the ..." in feedback.message


def test_a_message_for_a_new_task(cast, question):
    _, coordinator = cast
    message = coordinator.new_message(REPRO_TEXT, context_id=CONTEXT_ID)  # a fresh Task.id
    feedback = lesson04.continues_the_task(message, question, coordinator)
    gives_nothing_away(feedback, question.task_id)
    assert "another Task.id" in feedback.message
    assert coordinator.get_task(question.task_id)["status"]["state"] == states.INPUT_REQUIRED  # nothing was sent


def test_a_message_with_another_context(cast, question):
    _, coordinator = cast
    message = coordinator.new_message(REPRO_TEXT, task_id=question.task_id, context_id="ctx-elsewhere")
    feedback = lesson04.continues_the_task(message, question, coordinator)
    gives_nothing_away(feedback, CONTEXT_ID)
    assert "contextId" in feedback.message


def test_the_first_messageid_again(cast, question):
    _, coordinator = cast
    first_id = coordinator.get_task(question.task_id)["history"][0]["messageId"]
    message = coordinator.new_message(REPRO_TEXT, task_id=question.task_id, context_id=question.view.context_id,
                                      message_id=first_id)
    feedback = lesson04.continues_the_task(message, question, coordinator)
    assert not feedback.right and "resend" in feedback.message


def test_already_sent(cast, question):
    _, coordinator = cast
    sent = coordinator.continue_task(question, REPRO_TEXT)
    feedback = lesson04.continues_the_task(sent, question, coordinator)
    assert not feedback.right and "the message itself" in feedback.message


def test_a_task_that_waits_for_nothing(cast, finished):
    _, coordinator = cast
    message = coordinator.new_message(REPRO_TEXT, task_id=finished.task_id, context_id=finished.view.context_id)
    feedback = lesson04.continues_the_task(message, finished, coordinator)
    assert not feedback.right and "completed already" in feedback.message


def test_not_a_message(cast, question):
    _, coordinator = cast
    feedback = lesson04.continues_the_task(REPRO_TEXT, question, coordinator)
    assert not feedback.right and "got str" in feedback.message


# -- exercise 2: which -32004? ------------------------------------------------------------------------
def test_the_reference_error_is_right(cast, finished):
    _, coordinator = cast
    feedback = lesson04.finished_task_error(-32004, False, finished, coordinator)
    assert feedback.right, feedback


def test_the_placeholders_are_not_yet(cast, finished):
    _, coordinator = cast
    for code, marked in ((..., ...), (-32004, ...), (..., False)):
        feedback = lesson04.finished_task_error(code, marked, finished, coordinator)
        assert not feedback.right and "replace the ..." in feedback.message


def test_the_right_code_taken_for_the_profiles_error(cast, finished):
    _, coordinator = cast
    feedback = lesson04.finished_task_error(-32004, True, finished, coordinator)
    gives_nothing_away(feedback, "UnsupportedOperation")
    assert "right code" in feedback.message and "a2a_error" in feedback.message


@pytest.mark.parametrize("code, hint", [(-32602, "contextId"), (-32001, "no such task"), (-32002, "another code")])
def test_wrong_codes(cast, finished, code, hint):
    _, coordinator = cast
    feedback = lesson04.finished_task_error(code, False, finished, coordinator)
    gives_nothing_away(feedback, -32004)
    assert hint in feedback.message


def test_the_code_as_text(cast, finished):
    _, coordinator = cast
    feedback = lesson04.finished_task_error("-32004", False, finished, coordinator)
    assert not feedback.right and "int" in feedback.message


def test_a_task_that_has_not_finished(cast, question):
    _, coordinator = cast
    feedback = lesson04.finished_task_error(-32004, False, question, coordinator)
    assert not feedback.right and "not finished" in feedback.message
    assert coordinator.get_task(question.task_id)["status"]["state"] == states.INPUT_REQUIRED  # left alone

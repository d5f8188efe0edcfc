"""Lesson 10's exercise check: the right answer, the ``...`` placeholder and typical wrong answers
(what the operator sees instead of the state, not a state, another state). No hint gives the state
away. Pure: the check compares with the state the coordinator knows."""
from __future__ import annotations

import pytest

from a2a_nb.notebook.exercises import lesson10


def verdict(feedback) -> tuple[bool, str]:
    return feedback.right, feedback.message


@pytest.mark.parametrize("answer", ["TASK_STATE_COMPLETED", "completed", "COMPLETED"])
def test_the_state_inside_in_any_spelling_is_right(answer):
    right, message = verdict(lesson10.state_inside(answer, "TASK_STATE_COMPLETED"))
    assert right and "TASK_STATE_COMPLETED" in message


@pytest.mark.parametrize("answer, hint", [
    (..., "replace the ..."),
    ("protected", "what the operator sees"),
    ("application/jose", "what the operator sees"),
    ("sealed", "is not a task state"),
    (42, "a task state is a string"),
    ("TASK_STATE_WORKING", "not the one in the desk's last reply"),
])
def test_wrong_answers_get_a_hint_without_the_answer(answer, hint):
    right, message = verdict(lesson10.state_inside(answer, "TASK_STATE_COMPLETED"))
    assert not right and hint in message
    assert "COMPLETED" not in message.upper().replace("TASK_STATE_WORKING", "")

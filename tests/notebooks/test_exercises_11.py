"""Lesson 11's exercise: the check names exactly the checks that failed at level MUST, from the report."""
from __future__ import annotations

import pytest

from a2a_nb.notebook.exercises import lesson11
from a2a_nb.probe.report import ProbeReport, Row


def row(check: str, level: str, verdict: str) -> Row:
    return Row(check, f"rule-{check}", level, "core", "§", "", "", "", verdict, "")


REPORT = ProbeReport("careless", "acme", "support", "core",
                     [row("task-id-echo", "MUST", "fail"), row("correlation-binary", "MUST", "fail"),
                      row("stream", "SHOULD", "fail"), row("get-task", "MUST", "pass")], {}, 0.1)


def test_the_must_failures_are_right():
    feedback = lesson11.must_failures({"task-id-echo", "correlation-binary"}, REPORT)
    assert feedback.right and "exit status to 1" in feedback.message


@pytest.mark.parametrize("answer, hint", [
    (..., "replace the ..."),
    ("task-id-echo", "a set of check names"),
    ({"task-id-echo", "correlation-binary", "get-task"}, "did not fail"),
    ({"task-id-echo", "correlation-binary", "stream"}, "level SHOULD"),
    ({"task-id-echo"}, "missing"),
])
def test_a_wrong_answer_gets_a_hint_not_the_answer(answer, hint):
    feedback = lesson11.must_failures(answer, REPORT)
    assert not feedback.right and hint in feedback.message
    assert "correlation-binary" not in feedback.message

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


def test_lesson_11_s_careless_agent_is_not_found_by_lesson_01_s_searches(broker_url, unit):
    """After Run All of lesson 11 its careless agent's card stays retained on a shared broker (the
    kernel's Last Will marks it offline); lesson 01, run afterwards there, asks for every agent tagged
    'echo' and states the answer ("the second only echo"). Seen in the suite: ['careless', 'echo']."""
    from a2a_nb.agents.discovery import Discovery
    from a2a_nb.probe.examples import careless_agent
    from a2a_nb.story.cast import echo_card

    sloppy = careless_agent(unit=unit, broker=broker_url)
    try:
        with Discovery(org="acme", unit=unit, broker=broker_url) as disco:
            disco.wait_for("careless", timeout=30)
            assert disco.find(tags=["echo"]) == []
            assert [e.agent for e in disco.find(tags=["probe-example"])] == ["careless"]
    finally:
        sloppy.stop(forget=True)
    assert echo_card(unit=unit)["skills"][0]["tags"][0] == "echo"  # what lesson 01's search does find

"""Lesson 03's exercise check: the learner's aggregation rule, on a real stream of the desk (the
Mosquitto of ``tests/conftest.py``) and on the re-cut chunks the check makes from it."""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Requester
from a2a_nb.notebook.exercises import lesson03
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT
from tests.helpers import gives_nothing_away, uid


@pytest.fixture(scope="module")
def stream(broker_url):
    unit = uid("ex03")
    desk = TicketDesk(unit=unit, broker=broker_url, handover="none", seed=3, pace=0.01)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, seed=3)
    s = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID)
    s.wait()
    coordinator.close()
    desk.stop()
    assert sum(1 for ev in s.events if ev.kind == "artifactUpdate") > 1, "the report comes in several chunks"
    return s


def reference(artifacts, update):
    artifact = update["artifact"]
    before = artifacts.get(artifact["artifactId"], []) if update.get("append") else []
    artifacts[artifact["artifactId"]] = before + artifact["parts"]


ANSWERS = ("before +", "artifacts.get(")
"""What no hint may say: the reference rule's key steps."""


def test_the_reference_rule_is_right(stream):
    feedback = lesson03.aggregation_rule(reference, stream)
    assert feedback.right, feedback


def test_a_rule_that_returns_a_new_dict_is_right_too(stream):
    def functional(artifacts, update):
        a = update["artifact"]
        kept = artifacts.get(a["artifactId"], []) if update.get("append") else []
        return {**artifacts, a["artifactId"]: kept + a["parts"]}

    assert lesson03.aggregation_rule(functional, stream).right


def test_the_placeholder_is_not_yet(stream):
    feedback = lesson03.aggregation_rule(..., stream)
    assert not feedback.right and "replace the ..." in feedback.message


def test_the_untouched_function_body(stream):
    def add_chunk(artifacts, update):
        ...

    feedback = lesson03.aggregation_rule(add_chunk, stream)
    gives_nothing_away(feedback, *ANSWERS)
    assert "empty" in feedback.message


def test_always_appending_passes_the_stream_but_not_a_replacement(stream):
    def always_append(artifacts, update):
        a = update["artifact"]
        artifacts.setdefault(a["artifactId"], []).extend(a["parts"])

    feedback = lesson03.aggregation_rule(always_append, stream)
    gives_nothing_away(feedback, *ANSWERS)
    assert "re-cut" in feedback.message and "without append" in feedback.message


def test_always_replacing_keeps_only_the_last_chunk(stream):
    def always_replace(artifacts, update):
        artifacts[update["artifact"]["artifactId"]] = update["artifact"]["parts"]

    feedback = lesson03.aggregation_rule(always_replace, stream)
    gives_nothing_away(feedback, *ANSWERS)
    assert "you kept 1 of its" in feedback.message and "append: true" in feedback.message


def test_keyed_by_something_else(stream):
    def by_task(artifacts, update):
        artifacts.setdefault(update["taskId"], []).extend(update["artifact"]["parts"])

    feedback = lesson03.aggregation_rule(by_task, stream)
    gives_nothing_away(feedback, *ANSWERS)
    assert "keys" in feedback.message


def test_a_rule_that_raises(stream):
    def broken(artifacts, update):
        artifacts[update["artifactId"]] = update["parts"]  # the event's fields are inside "artifact"

    feedback = lesson03.aggregation_rule(broken, stream)
    assert not feedback.right and "KeyError" in feedback.message


def test_not_a_function(stream):
    feedback = lesson03.aggregation_rule({}, stream)
    assert not feedback.right and "function" in feedback.message

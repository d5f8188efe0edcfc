"""Lesson 08's exercise checks: the right answer, the ``...`` placeholder and typical wrong answers.

``which_lock`` is fed real refusals from a secured Mosquitto of its own (a JSON-RPC error from a
guarded agent, a PUBACK 135 from the ACL, a CONNACK 135 for a wrong password, the kit's own refusal
of a borrowed login), as the lesson makes them. ``claims_to_fix`` needs no broker: a token and the
desk's policy. No hint may give the answer away.
"""
from __future__ import annotations

import re

import pytest

from a2a_nb.agents import Requester, Responder
from a2a_nb.agents.auth import LocalIssuer
from a2a_nb.mqtt import Session
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.mqtt.session import PublishResult, SessionError
from a2a_nb.notebook.exercises import lesson08
from a2a_nb.protocol import MqttMessage, topics
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.retry import RetryProfile

UNIT = "lesson08-exercise"
DESK = f"acme/{UNIT}/ticket-desk"
FAST = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.05,))
LOCK_WORDS = re.compile(r"\b(broker|desk|kit)\b")


@pytest.fixture(scope="module")
def issuer():
    return LocalIssuer(issuer="https://auth.acme.example", kid="lesson08-test")


@pytest.fixture(scope="module")
def policy(issuer):
    return issuer.policy(DESK, ["tickets.analyze"])


@pytest.fixture(scope="module")
def refusals(issuer, policy):
    """The lesson's three kinds of refusal, made for real: A by the desk, B by the broker, C by the kit
    (and D, a wrong password: the broker again)."""
    broker = SecureBroker(unit=UNIT, cast=("coordinator", "echo", "ticket-desk"), pools={}, observers=()).start()
    desk = Responder("ticket-desk", lambda ctx: "analysed", unit=UNIT, broker=broker.credentials("ticket-desk"),
                     auth=policy)
    coordinator = Requester("coordinator", unit=UNIT, broker=broker.credentials("coordinator"),
                            token=issuer.token(DESK, ["tickets.analyze"], lifetime_s=-60), retry=FAST)
    intruder = Session("acme", UNIT, "echo", broker=broker.credentials("echo"))
    found = {}
    try:
        with pytest.raises(A2AError) as by_desk:
            coordinator.send("ticket-desk", "Analyze ticket TCK-4821")
        found["A"] = by_desk.value
        found["B"] = intruder.publish(MqttMessage(topics.event_topic("acme", UNIT, "ticket-desk"), b"{}"))
        with pytest.raises(SessionError) as by_kit:
            Session("acme", UNIT, "ticket-desk", broker=broker.credentials("echo"))
        found["C"] = by_kit.value
        login = broker.credentials("coordinator")
        with pytest.raises(SessionError) as wrong_password:
            Session("acme", UNIT, "coordinator", broker=login.with_credentials(login.username, "guess"))
        found["D"] = wrong_password.value
        yield found
    finally:
        intruder.close()
        coordinator.close()
        desk.stop()
        broker.stop()


RIGHT = {"A": "desk", "B": "broker", "C": "kit", "D": "broker"}


def test_the_refusals_are_what_the_lesson_says(refusals):
    assert isinstance(refusals["A"], A2AError) and refusals["A"].code == -32600
    assert isinstance(refusals["B"], PublishResult) and refusals["B"].reason_code == 135
    assert refusals["C"].reason_code is None
    assert refusals["D"].reason_code == 135
    assert {k: lesson08.lock_of(v) for k, v in refusals.items()} == RIGHT


def test_which_lock_right(refusals):
    feedback = lesson08.which_lock(dict(RIGHT), refusals)
    assert feedback.right, feedback
    assert "✓ right" in str(feedback)
    # the same words in other forms are right too
    assert lesson08.which_lock({"A": "Agent", "B": "Mosquitto", "C": "the kit", "D": "BROKER"}, refusals).right


def test_which_lock_placeholder(refusals):
    feedback = lesson08.which_lock(..., refusals)
    assert not feedback.right and "replace the ..." in feedback.message


@pytest.mark.parametrize("answer", [
    {"A": "broker", "B": "broker", "C": "broker", "D": "broker"},   # every refusal blamed on the broker
    {"A": "broker", "B": "desk", "C": "kit", "D": "broker"},        # the JSON-RPC error and the PUBACK swapped
    {"A": "desk", "B": "broker", "C": "broker", "D": "kit"},        # the kit's check taken for a CONNACK
])
def test_which_lock_wrong_names_the_labels_and_where_to_look(refusals, answer):
    feedback = lesson08.which_lock(answer, refusals)
    assert not feedback.right
    wrong = [k for k in RIGHT if answer[k] != RIGHT[k]]
    assert all(f"{k} " in feedback.message or f" {k}" in feedback.message for k in wrong), feedback.message
    assert not LOCK_WORDS.search(feedback.message), f"the hint names a lock: {feedback.message}"
    assert "reason_code is None" in feedback.message  # where to look


def test_which_lock_shape_and_unknown_words(refusals):
    assert "one answer for each of A, B, C, D" in lesson08.which_lock({"A": "desk"}, refusals).message
    assert "one answer for each" in lesson08.which_lock("desk", refusals).message
    odd = lesson08.which_lock({"A": "desk", "B": "firewall", "C": "kit", "D": "broker"}, refusals)
    assert not odd.right and "B" in odd.message and "'firewall'" in odd.message


def test_lock_of_other_objects():
    assert lesson08.lock_of(ValueError("a bearer token may only travel over TLS")) == "kit"
    assert lesson08.lock_of(PublishResult(0, "Success")) is None  # taken: not a refusal
    assert lesson08.lock_of("no") is None


# -- claims_to_fix ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def weak(issuer):
    return issuer.token("acme/support/echo", ["tickets.read"], subject="acme/support/coordinator")


def test_claims_that_fail_are_computed_from_token_and_policy(issuer, policy, weak):
    assert lesson08.claims_that_fail(weak, policy) == {"aud", "scope"}
    assert lesson08.claims_that_fail(issuer.token(DESK, ["tickets.analyze"]), policy) == set()
    assert lesson08.claims_that_fail(issuer.token(DESK, ["tickets.analyze"], lifetime_s=-60), policy) == {"exp"}
    assert lesson08.claims_that_fail(issuer.token(DESK, ["tickets.analyze"], issuer="https://evil.example"),
                                     policy) == {"iss"}


def test_claims_to_fix_right(policy, weak):
    for answer in ({"aud", "scope"}, ["scope", "aud"], {"Audience", "scopes"}):
        feedback = lesson08.claims_to_fix(answer, weak, policy)
        assert feedback.right, (answer, feedback)
    expired = LocalIssuer(issuer=policy.issuer)  # another key does not matter: the claims are what is asked
    assert lesson08.claims_to_fix("exp", expired.token(DESK, ["tickets.analyze"], lifetime_s=-5), policy).right


def test_claims_to_fix_placeholder(policy, weak):
    feedback = lesson08.claims_to_fix(..., weak, policy)
    assert not feedback.right and "replace the ..." in feedback.message


def test_only_what_the_error_named_is_not_enough(policy, weak):
    feedback = lesson08.claims_to_fix({"aud"}, weak, policy)
    assert not feedback.right
    assert "1 more claim" in feedback.message and "first check" in feedback.message
    assert "scope" not in feedback.message


def test_a_claim_that_passes_is_named_as_passing(policy, weak):
    feedback = lesson08.claims_to_fix({"aud", "scope", "exp"}, weak, policy)
    assert not feedback.right
    assert feedback.message.startswith("exp already passes")
    assert "aud" not in feedback.message and "scope" not in feedback.message


@pytest.mark.parametrize("answer, says", [
    ({"iss": "https://auth.acme.example", "aud": "acme/support/echo"}, "names of the claims"),
    (set(), "at least one claim"),
    ({"signature"}, "'signature'"),
    (42, "a set of claim names"),
])
def test_claims_to_fix_other_wrong_answers(policy, weak, answer, says):
    feedback = lesson08.claims_to_fix(answer, weak, policy)
    assert not feedback.right and says in feedback.message, feedback.message

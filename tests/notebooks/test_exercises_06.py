"""Lesson 06's exercise checks, against real agents on the Mosquitto of ``tests/conftest.py``.

The resend exercise runs as in the lesson: a raw MQTT agent that ignores the first request it
gets, a coordinator that gives up after one attempt, and the learner's second send. The -32004
exercise gets its two errors from a real desk: a message to a finished task (A2A's
UnsupportedOperation) and a ticket the desk has no free slot for (the profile's
responder_unavailable).
"""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Requester
from a2a_nb.agents.requester import Attempt, Reply, RequestTimeout
from a2a_nb.mqtt import Session
from a2a_nb.notebook.exercises import lesson06
from a2a_nb.protocol import MqttMessage, encode_json, errors, jsonrpc, messages, states, topics
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT
from tests.helpers import QUICK, gives_nothing_away, uid

ONE_TRY = RetryProfile(reply_first_timeout_s=0.3, stream_idle_timeout_s=0.5, max_attempts=1, backoff_s=(0.05,))


def flaky_agent(broker_url: str, unit: str, name: str):
    """The lesson's agent: it notes every request, ignores the first and answers the others."""
    received: list[dict] = []
    session = Session("acme", unit, name, broker=broker_url)

    def on_request(msg: MqttMessage) -> None:
        request = jsonrpc.parse_request(msg.payload)
        message = request["params"]["message"]
        received.append({"request": len(received) + 1, "messageId": message["messageId"],
                         "Task.id": message["taskId"], "Correlation Data": readable_correlation(msg.correlation_data)})
        if len(received) == 1:
            return
        task = messages.task(message["taskId"], message["contextId"], messages.task_status(states.COMPLETED))
        answer = jsonrpc.result_response(request["id"], messages.send_message_result(task))
        session.publish_then(MqttMessage(msg.response_topic, encode_json(answer),
                                         correlation_data=msg.correlation_data), lambda ack: None)

    session.subscribe(topics.request_topic("acme", unit, name), handler=on_request)
    return session, received


@pytest.fixture
def timed_out(broker_url, unit):
    """A ticket sent once by a coordinator that gives up after one attempt: delivery unknown."""
    hasty = Requester("hasty-coordinator", unit=unit, broker=broker_url, retry=ONE_TRY, seed=3)
    _, heard = flaky_agent(broker_url, unit, "forgetful-analyst")
    ticket = hasty.new_message(TICKET_TEXT, context_id=CONTEXT_ID)
    with pytest.raises(RequestTimeout):
        hasty.send("forgetful-analyst", message=ticket)
    assert len(heard) == 1
    yield hasty, ticket, heard
    hasty.close()


# -- resend the timed-out message ----------------------------------------------------------------------
def test_the_reference_resend_is_right(timed_out):
    hasty, ticket, heard = timed_out
    resend = hasty.send("forgetful-analyst", message=ticket)
    feedback = lesson06.resent_verbatim(resend, heard)
    assert feedback.right, feedback
    assert heard[0]["messageId"] == heard[1]["messageId"] and heard[0]["Correlation Data"] != heard[1]["Correlation Data"]


def test_the_resend_placeholder_asks_for_an_answer(timed_out):
    _, _, heard = timed_out
    feedback = lesson06.resent_verbatim(..., heard)
    assert not feedback.right and "replace the ..." in feedback.message


def test_a_new_message_is_new_work(timed_out):
    hasty, _, heard = timed_out
    resend = hasty.send("forgetful-analyst", TICKET_TEXT, context_id=CONTEXT_ID)
    feedback = lesson06.resent_verbatim(resend, heard)
    gives_nothing_away(feedback, "message=ticket")
    assert "new messageId and a new Task.id" in feedback.message


def test_the_same_messageid_on_a_new_task(timed_out):
    hasty, ticket, heard = timed_out
    copy = hasty.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id=ticket["messageId"])
    feedback = lesson06.resent_verbatim(hasty.send("forgetful-analyst", message=copy), heard)
    gives_nothing_away(feedback)
    assert "Task.id is new" in feedback.message


def test_new_input_on_the_same_task(timed_out):
    hasty, ticket, heard = timed_out
    copy = hasty.new_message(TICKET_TEXT, context_id=CONTEXT_ID, task_id=ticket["taskId"])
    feedback = lesson06.resent_verbatim(hasty.send("forgetful-analyst", message=copy), heard)
    gives_nothing_away(feedback)
    assert "messageId is new" in feedback.message


def test_not_a_reply_or_not_the_last_request(timed_out):
    hasty, ticket, heard = timed_out
    gives_nothing_away(lesson06.resent_verbatim(ticket, heard))  # the message, never sent again
    gives_nothing_away(lesson06.resent_verbatim(hasty.send("forgetful-analyst", message=ticket), heard[:1]))
    first = hasty.send("forgetful-analyst", message=ticket)
    hasty.send("forgetful-analyst", message=ticket)  # a later request: `first` no longer answers the last one
    feedback = lesson06.resent_verbatim(first, heard)
    gives_nothing_away(feedback)
    assert "last request" in feedback.message


def test_the_same_correlation_data_twice():
    """A raw resend that reuses the first attempt's Correlation Data (what the kit never does)."""
    heard = [{"messageId": "m-1", "Task.id": "t-1", "Correlation Data": "aa" * 16},
             {"messageId": "m-1", "Task.id": "t-1", "Correlation Data": "aa" * 16}]
    reply = Reply("SendMessage", {}, MqttMessage("$a2a/v1/reply/acme/x/y/z", b"{}"), 0.1,
                  [Attempt(1, "$a2a/v1/request/acme/x/a", "aa" * 16, 0.0)])
    feedback = lesson06.resent_verbatim(reply, heard)
    gives_nothing_away(feedback)
    assert "Correlation Data" in feedback.message


# -- the two meanings of -32004 ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_32004s(broker_url):
    """Step 5's refusal (a message to a finished task) and the busy desk's, from a real desk."""
    unit = uid("ex06")
    desk = TicketDesk(unit=unit, broker=broker_url, handover="none", seed=9, max_analysts=1, pace=0.1)
    coordinator = Requester("coordinator", unit=unit, broker=broker_url, retry=QUICK, seed=9)
    try:
        first = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID)
        with pytest.raises(A2AError) as busy:
            coordinator.send("ticket-desk", "Analyze ticket TCK-4822", context_id="ctx-tck4822")
        first.wait()
        assert first.state == states.COMPLETED
        with pytest.raises(A2AError) as finished:
            coordinator.continue_task(first, "one more thing")
        yield finished.value, busy.value
    finally:
        coordinator.close()
        desk.stop()


def test_the_two_errors_share_a_code(two_32004s):
    core, profile = two_32004s
    assert core.code == profile.code == -32004
    assert errors.classify(core).name == "UnsupportedOperation"
    assert errors.classify(profile).name == "responder_unavailable"


def test_the_reference_function_is_right(two_32004s):
    core, profile = two_32004s

    def is_profile_error(err):
        return isinstance(err.data, dict) and "a2a_error" in err.data

    feedback = lesson06.tells_the_meanings_apart(is_profile_error, core, profile)
    assert feedback.right, feedback
    assert lesson06.tells_the_meanings_apart(lambda err: errors.classify(err).binding, core, profile).right


def test_the_placeholder_function_asks_for_an_answer(two_32004s):
    core, profile = two_32004s

    def is_profile_error(err):
        return ...

    for answer in (..., is_profile_error):
        feedback = lesson06.tells_the_meanings_apart(answer, core, profile)
        assert not feedback.right and "replace the ..." in feedback.message


def test_the_code_alone_cannot_tell(two_32004s):
    core, profile = two_32004s
    feedback = lesson06.tells_the_meanings_apart(lambda err: err.code == -32004, core, profile)
    gives_nothing_away(feedback, "a2a_error")
    assert "code alone" in feedback.message


def test_reading_the_message_is_caught(two_32004s):
    core, profile = two_32004s
    feedback = lesson06.tells_the_meanings_apart(lambda err: "unavailable" in err.message.lower(), core, profile)
    gives_nothing_away(feedback, "a2a_error")
    assert "right for the lesson's two errors" in feedback.message and "message" in feedback.message


def test_wrong_way_round_always_false_and_crashing(two_32004s):
    core, profile = two_32004s
    swapped = lesson06.tells_the_meanings_apart(lambda err: not (isinstance(err.data, dict)), core, profile)
    gives_nothing_away(swapped, "a2a_error")
    assert "wrong way round" in swapped.message
    never = lesson06.tells_the_meanings_apart(lambda err: False, core, profile)
    gives_nothing_away(never, "a2a_error")
    crashing = lesson06.tells_the_meanings_apart(lambda err: "a2a_error" in err.data.keys(), core, profile)
    gives_nothing_away(crashing, "isinstance")
    assert "AttributeError" in crashing.message and "list" in crashing.message
    not_a_function = lesson06.tells_the_meanings_apart(True, core, profile)
    gives_nothing_away(not_a_function, "a2a_error")

"""Lesson 06's exercises: resend a timed-out message yourself, and tell the two meanings of -32004
apart.

The first check reads what the agent received (the rows its ``flaky_agent`` noted) and the attempts
of the learner's reply: it never trusts the learner's words for what went over the wire. The second
runs the learner's function on the lesson's two real -32004 errors and on a few errors made here
with the kit's own constructors, so a function that only works by chance (reading the message
text) is caught.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ...agents.requester import Reply
from ...protocol import errors
from ...protocol.errors import A2AError
from . import Feedback, not_yet, right, unanswered

RESEND = "Resend the timed-out message"
MEANINGS = "Two meanings of -32004"


def resent_verbatim(resend: Any, heard: Sequence[dict]) -> Feedback:
    """Right when the agent's last request (``heard[-1]``, as its notes hold it: ``messageId``,
    ``Task.id``, ``Correlation Data``) is the message of its first one sent again: same messageId and
    Task.id, new Correlation Data; and ``resend`` is the reply to that last request."""
    blank = unanswered(RESEND, resend)
    if blank is not None:
        return blank
    if not isinstance(resend, Reply):
        return not_yet(RESEND, f"expected what the coordinator's send returns (a Reply), got "
                               f"{type(resend).__name__}: send the ticket again and keep the result")
    if len(heard) < 2:
        return not_yet(RESEND, "the agent has received only the first request so far: your call did not reach it")
    first, last = heard[0], heard[-1]
    mine = resend.attempts[-1].correlation if resend.attempts else None
    if mine != last["Correlation Data"]:
        return not_yet(RESEND, "the agent's last request is not the one your reply answers: run the exercise "
                               "cell once more, with the call that sends the ticket")
    same_message = last["messageId"] == first["messageId"]
    same_task = last["Task.id"] == first["Task.id"]
    if not same_message and not same_task:
        return not_yet(RESEND, "the agent got a new messageId and a new Task.id: to it, that is a new task, and "
                               "if the first request had been processed the work would now run twice. Send the "
                               "very message that timed out")
    if not same_task:
        return not_yet(RESEND, "the messageId is the first one's, but the Task.id is new: the agent would start a "
                               "second task. A resend names the task of the first attempt")
    if not same_message:
        return not_yet(RESEND, "the Task.id is the first one's, but the messageId is new: the agent reads that as "
                               "new input on the task, not as the same message again")
    if last["Correlation Data"] == first["Correlation Data"]:
        return not_yet(RESEND, "the same Correlation Data as the first attempt: a late reply to that one could not "
                               "be told from a reply to this one. Each attempt needs its own")
    return right(RESEND, "same messageId and Task.id, so the agent knows it is the same message (and would not "
                         "run the work twice); new Correlation Data, so each attempt's reply is its own")


def _made_here() -> list[tuple[A2AError, bool, str]]:
    """Errors whose meaning is known, with a word on what could fool a function: (error, is the
    profile's, why it is there)."""
    return [
        (errors.responder_unavailable("all analysts busy"), True, "a -32004 of the profile"),
        (errors.unsupported_operation("the responder is unavailable for finished tasks"), False,
         "an A2A -32004 whose message says 'unavailable'"),
        (errors.request_expired(), True, "the profile's -32003"),
        (errors.push_notification_not_supported(), False, "A2A's -32003"),
        (A2AError(errors.RESPONDER_UNAVAILABLE, "Responder temporarily unavailable"), False,
         "a -32004 without any data"),
    ]


def tells_the_meanings_apart(is_profile_error: Any, core: A2AError, profile: A2AError) -> Feedback:
    """Right when ``is_profile_error(err)`` is True for the profile's errors and False for A2A's own,
    on the lesson's two -32004s (``core``: step 5's, ``profile``: the busy desk's) and on errors made
    here."""
    blank = unanswered(MEANINGS, is_profile_error)
    if blank is not None:
        return blank
    if not callable(is_profile_error):
        return not_yet(MEANINGS, "is_profile_error must be a function of one error, returning True or False")
    check: Callable[[A2AError], Any] = is_profile_error
    answers = []
    for err, expected, what in [(core, False, "step 5's -32004"), (profile, True, "the busy desk's -32004")] \
            + _made_here():
        try:
            said = check(err)
        except Exception as exc:
            return not_yet(MEANINGS, f"your function raised {type(exc).__name__} ({exc}) for {what}: an error's "
                                     "data may be a list, an object (dict) or missing (None)")
        blank = unanswered(MEANINGS, said)
        if blank is not None:  # the function still returns the placeholder
            return blank
        answers.append((bool(said), expected, what))
    (on_core, _, _), (on_profile, _, _) = answers[:2]
    if on_core and on_profile:
        return not_yet(MEANINGS, "it says 'profile' for both -32004s: the code alone cannot tell them apart")
    if not on_core and not on_profile:
        return not_yet(MEANINGS, "it says 'A2A' for both -32004s: the busy desk's error carries something that "
                                 "step 5's does not")
    if on_core and not on_profile:
        return not_yet(MEANINGS, "it has the two -32004s the wrong way round: print both errors' data")
    wrong = [what for said, expected, what in answers[2:] if said != expected]
    if wrong:
        return not_yet(MEANINGS, f"right for the lesson's two errors, but wrong for {wrong[0]}: does it read the "
                                 "message? A message is free text; the meaning is in the data")
    return right(MEANINGS, "the profile marks its errors with error.data.a2a_error (here "
                           f"{profile.data.get('a2a_error') if isinstance(profile.data, dict) else '?'!r}); A2A's "
                           "own carry only their ErrorInfo. Only the profile's -32003 and -32004 mean 'try again'")

"""Lesson 10's exercise: look inside a sealed reply with the key the notebook holds.

The operator's recording shows the desk's last reply as a JWE: ``event`` says ``protected`` and no
state can be read. The coordinator's keys are in the notebook, so the learner can open that reply
again (``coordinator.ubsp.read_recorded``) and hand in the task status read inside. A state alone
could be guessed (the lesson printed how the follow-up ended), so the answer is the whole status
(state and timestamp) the reply carries: the check opens the recorded reply itself with the
coordinator's keys and compares.
"""
from __future__ import annotations

from typing import Any, Optional

from ...protocol import states, topics
from ...traffic.records import from_record
from ...ubsp.keys import SealError
from . import Feedback, not_yet, right, unanswered

__all__ = ["STATE_INSIDE", "state_inside"]

STATE_INSIDE = "Look inside with the key you hold"
HOW = ("take the desk's last reply from the recording (from_record(sealed[-1])), open it with "
       "coordinator.ubsp.read_recorded(message, 'acme', UNIT) and find the status in its JSON")


def _status_in(value: Any) -> Optional[dict]:
    """The task status in what the learner read: the whole JSON-RPC response, its result, the status
    update, or the status itself; None when there is none."""
    for key in ("result", "statusUpdate", "task"):
        if isinstance(value, dict) and isinstance(value.get(key), dict):
            value = value[key]
    if isinstance(value, dict) and isinstance(value.get("status"), dict):
        value = value["status"]
    return value if isinstance(value, dict) and "state" in value else None


def _opened_status(record: dict, coordinator: Any) -> dict:
    """The status in the recorded sealed reply, opened with the coordinator's keys."""
    info = topics.parse_topic(str(record.get("topic", "")))
    if info is None:
        raise ValueError("the record is not an A2A message")
    opened = coordinator.ubsp.read_recorded(from_record(record), info.org, info.unit).json()
    status = _status_in(opened)
    if status is None:
        raise ValueError("the sealed reply holds no task status")
    return status


def state_inside(answer: Any, record: dict, coordinator: Any) -> Feedback:
    """Right when ``answer`` is the task status (a dict with ``state`` and ``timestamp``, or the
    JSON around it) that the recorded sealed reply ``record`` carries, as the check reads it with
    ``coordinator``'s keys."""
    blank = unanswered(STATE_INSIDE, answer)
    if blank is not None:
        return blank
    if isinstance(answer, str):
        if answer in ("protected", "reply (sealed)", "application/jose"):
            return not_yet(STATE_INSIDE, "that is what the operator sees of it; you hold more: " + HOW)
        return not_yet(STATE_INSIDE, "a state on its own could be a guess: hand in the status you read inside "
                                     "(a dict with its state and timestamp), or the whole JSON: " + HOW)
    try:
        expected = _opened_status(record if isinstance(record, dict) else {}, coordinator)
    except (SealError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return not_yet(STATE_INSIDE, f"the check cannot open that reply ({exc}): pass sealed[-1] and the "
                                     "coordinator, as the cell does")
    status = _status_in(answer)
    if status is None:
        return not_yet(STATE_INSIDE, f"expected the status read inside (a dict with a 'state'), got "
                                     f"{type(answer).__name__}: " + HOW)
    try:
        long_name = states.from_short(str(status["state"]))
    except ValueError:
        return not_yet(STATE_INSIDE, f"{status['state']!r} is not a task state: " + HOW)
    if long_name != expected["state"]:
        return not_yet(STATE_INSIDE, f"{long_name} is a state, but not the one in the desk's last reply: " + HOW)
    if dict(status, state=long_name) != expected:
        return not_yet(STATE_INSIDE, "the state matches, but that status is not the one inside the desk's last "
                                     "reply (its timestamp or message differs): " + HOW)
    return right(STATE_INSIDE, f"the last sealed reply says {long_name} (at {expected.get('timestamp')}): the "
                               "coordinator can read it, the operator only sees that a reply went by")

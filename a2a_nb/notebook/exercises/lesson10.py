"""Lesson 10's exercise: look inside a sealed reply with the key the notebook holds.

The operator's recording shows the desk's last reply as a JWE: ``event`` says ``protected`` and no
state can be read. The coordinator's keys are in the notebook, so the learner can open that reply
again (``coordinator.ubsp.read_recorded``) and read the task state inside. The check compares it with
the state the coordinator itself knows for the task.
"""
from __future__ import annotations

from typing import Any

from ...protocol import states
from . import Feedback, not_yet, right, unanswered

__all__ = ["STATE_INSIDE", "state_inside"]

STATE_INSIDE = "Look inside with the key you hold"
HOW = ("take the desk's last reply from the recording (records.from_record), open it with "
       "coordinator.ubsp.read_recorded(message, 'acme', UNIT) and read the state in its JSON")


def state_inside(answer: Any, known_state: str) -> Feedback:
    """Right when ``answer`` names the task state that the last sealed reply carries, which is
    ``known_state`` (the state the coordinator got for the task)."""
    blank = unanswered(STATE_INSIDE, answer)
    if blank is not None:
        return blank
    if not isinstance(answer, str):
        return not_yet(STATE_INSIDE, f"a task state is a string such as 'TASK_STATE_WORKING', got "
                                     f"{type(answer).__name__}: " + HOW)
    if answer in ("protected", "reply (sealed)", "application/jose"):
        return not_yet(STATE_INSIDE, "that is what the operator sees of it; you hold more: " + HOW)
    try:
        long_name = states.from_short(answer)
    except ValueError:
        return not_yet(STATE_INSIDE, f"{answer!r} is not a task state: " + HOW)
    if long_name == states.from_short(known_state):
        return right(STATE_INSIDE, f"the last sealed reply says {long_name}: the coordinator can read it, "
                                   "the operator only sees that a reply went by")
    return not_yet(STATE_INSIDE, f"{long_name} is a state, but not the one in the desk's last reply: " + HOW)

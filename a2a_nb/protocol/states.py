"""A2A v1.0 task states and the rules that follow from them.

A2A v1.0 TaskState; Profile: Streaming Reply Mapping 5-7 (terminal and interrupted states end the
stream for a Correlation Data), Multi-Turn Conversation Patterns (interrupted tasks resume).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Optional

SUBMITTED = "TASK_STATE_SUBMITTED"
WORKING = "TASK_STATE_WORKING"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
REJECTED = "TASK_STATE_REJECTED"

ACTIVE = frozenset({SUBMITTED, WORKING})
INTERRUPTED = frozenset({INPUT_REQUIRED, AUTH_REQUIRED})
TERMINAL = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})
ALL_STATES = ACTIVE | INTERRUPTED | TERMINAL

COLOURS = MappingProxyType({
    SUBMITTED: "#9e9e9e", WORKING: "#1e88e5", INPUT_REQUIRED: "#fb8c00", AUTH_REQUIRED: "#8e24aa",
    COMPLETED: "#43a047", FAILED: "#e53935", CANCELED: "#6d4c41", REJECTED: "#c62828",
})
"""How the kit draws each state, in its HTML badges and its charts alike: one table, so a learner
sees a state in one colour everywhere."""

_PREFIX = "TASK_STATE_"
_ALIASES = MappingProxyType({"cancelled": CANCELED})


def is_state(state: object) -> bool:
    return isinstance(state, str) and state in ALL_STATES


def validate_state(state: object) -> str:
    """Return ``state`` if it is one of the eight v1.0 names, else raise ``ValueError``."""
    if not is_state(state):
        raise ValueError(
            f"unknown task state {state!r}; expected one of {', '.join(sorted(ALL_STATES))} "
            "(v1.0 names; short names like 'working' go through from_short)"
        )
    return state  # type: ignore[return-value]


def is_terminal(state: str) -> bool:
    """Completed, failed, canceled or rejected: the task never changes again."""
    return isinstance(state, str) and state in TERMINAL


def is_interrupted(state: str) -> bool:
    """Input- or auth-required: the task waits for a new message with the same taskId/contextId."""
    return isinstance(state, str) and state in INTERRUPTED


def is_active(state: str) -> bool:
    """Submitted or working."""
    return isinstance(state, str) and state in ACTIVE


def ends_stream(state: str) -> bool:
    """True when a status update with this state ends the reply stream for its Correlation Data.

    Profile: Streaming Reply Mapping 5-7 (terminal states, and also the interrupted ones).
    """
    return isinstance(state, str) and (state in TERMINAL or state in INTERRUPTED)


def can_transition(old: Optional[str], new: str) -> bool:
    """May a task in state ``old`` move to ``new``?

    ``old`` None means "no task yet" (any state may start it). A terminal state never changes;
    a non-terminal one may go anywhere except back to submitted. Staying put is always allowed
    (duplicate deliveries under QoS 1 repeat states). Unknown names raise ``ValueError``.
    """
    validate_state(new)
    if old is None:
        return True
    validate_state(old)
    if old == new:
        return True
    if old in TERMINAL:
        return False
    return new != SUBMITTED


def short_name(state: str) -> str:
    """``"TASK_STATE_INPUT_REQUIRED"`` -> ``"input-required"`` (the profile's prose spelling)."""
    validate_state(state)
    return state[len(_PREFIX):].lower().replace("_", "-")


def from_short(name: str) -> str:
    """The v1.0 state name for ``"working"``, ``"input-required"``, ``"input_required"``,
    ``"INPUT_REQUIRED"`` or an already full name; ``ValueError`` otherwise."""
    if not isinstance(name, str):
        raise ValueError(f"task state must be a string, got {name!r}")
    if name in ALL_STATES:
        return name
    key = name.strip().lower()
    if key in _ALIASES:
        return _ALIASES[key]
    full = _PREFIX + key.replace("-", "_").upper()
    if full in ALL_STATES:
        return full
    shorts = ", ".join(sorted(short_name(s) for s in ALL_STATES))
    raise ValueError(f"unknown task state {name!r}; expected one of: {shorts}")

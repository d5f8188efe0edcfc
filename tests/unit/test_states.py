"""A2A v1.0 task states; Profile: Streaming Reply Mapping 5-7."""
import itertools

import pytest

from a2a_nb.protocol import states as S


def test_groups_partition_all_states():
    assert S.ACTIVE | S.INTERRUPTED | S.TERMINAL == S.ALL_STATES
    assert len(S.ALL_STATES) == 8
    assert not (S.ACTIVE & S.INTERRUPTED or S.ACTIVE & S.TERMINAL or S.INTERRUPTED & S.TERMINAL)
    assert all(s.startswith("TASK_STATE_") for s in S.ALL_STATES)


def test_predicates():
    assert S.is_terminal(S.COMPLETED) and S.is_terminal(S.REJECTED) and not S.is_terminal(S.WORKING)
    assert S.is_interrupted(S.INPUT_REQUIRED) and S.is_interrupted(S.AUTH_REQUIRED)
    assert S.is_active(S.SUBMITTED) and not S.is_active(S.INPUT_REQUIRED)
    assert {s for s in S.ALL_STATES if S.ends_stream(s)} == S.TERMINAL | S.INTERRUPTED
    assert not S.ends_stream(S.WORKING) and not S.ends_stream("TASK_STATE_UNSPECIFIED")


def test_transitions():
    for old, new in itertools.product(sorted(S.ALL_STATES), repeat=2):
        expected = old == new or (old not in S.TERMINAL and new != S.SUBMITTED)
        assert S.can_transition(old, new) is expected, (old, new)
    assert S.can_transition(None, S.SUBMITTED) and S.can_transition(None, S.COMPLETED)
    assert S.can_transition(S.INPUT_REQUIRED, S.WORKING)
    assert not S.can_transition(S.COMPLETED, S.WORKING)
    assert not S.can_transition(S.WORKING, S.SUBMITTED)
    with pytest.raises(ValueError, match="unknown task state"):
        S.can_transition(S.WORKING, "done")
    with pytest.raises(ValueError):
        S.can_transition("working", S.COMPLETED)


def test_short_names():
    assert S.short_name(S.WORKING) == "working"
    assert S.short_name(S.INPUT_REQUIRED) == "input-required"
    for s in S.ALL_STATES:
        assert S.from_short(S.short_name(s)) == s
        assert S.from_short(s) == s
    assert S.from_short("input_required") == S.INPUT_REQUIRED
    assert S.from_short("AUTH_REQUIRED") == S.AUTH_REQUIRED
    assert S.from_short("cancelled") == S.CANCELED
    with pytest.raises(ValueError, match="working"):
        S.from_short("done")
    with pytest.raises(ValueError):
        S.short_name("working")


def test_every_state_has_one_distinct_colour():
    assert set(S.COLOURS) == S.ALL_STATES
    assert len(set(S.COLOURS.values())) == len(S.ALL_STATES)
    assert all(c.startswith("#") and len(c) == 7 for c in S.COLOURS.values())

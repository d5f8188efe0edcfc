"""a2a_nb.notebook.claims: a lesson's check prints what holds and stops at what does not."""
from __future__ import annotations

import pytest

from a2a_nb.notebook.claims import NotAsDescribed, as_described, said
from a2a_nb.notebook.exercises import Feedback, not_yet, right, unanswered


def test_facts_that_hold_print_one_quiet_line_for_the_cell(capsys):
    as_described(said("Three attempts", len([1, 2, 3]), 3), said("(16) every time", {16, 16}, {16}),
                 said("from analyst-1", "analyst-1", "analyst-1"))
    assert capsys.readouterr().out.splitlines() == [
        "✓ as described: Three attempts · (16) every time · from analyst-1",
    ]


def test_a_fact_that_does_not_hold_stops_the_cell_naming_text_and_output(capsys):
    with pytest.raises(NotAsDescribed) as caught:
        as_described(said("Three attempts", 3, 3), said("(16) every time", {0}, {16}))
    assert str(caught.value) == "✗ not as described: the text says “(16) every time” ({16}), the output shows {0}"
    assert capsys.readouterr().out == "✓ as described: Three attempts\n"  # what held is still shown


def test_within_compares_figures_by_ratio():
    assert said("about 5 seconds", 7.4, 5, within=1.5).holds
    assert not said("about 5 seconds", 7.6, 5, within=1.5).holds
    assert not said("about 5 seconds", 3.2, 5, within=1.5).holds
    assert not said("about 5 seconds", 0, 5, within=1.5).holds


@pytest.mark.parametrize("bad", [lambda: said("  ", 1, 1), lambda: said("x", 1, 1, within=0.5), lambda: as_described()])
def test_misuse_is_refused(bad):
    with pytest.raises(ValueError):
        bad()


def test_feedback_says_right_or_not_yet():
    assert str(right("Exercise 1", "that is the analyst's topic")) == \
        "Exercise 1: ✓ right: that is the analyst's topic"
    hint = not_yet("Exercise 1", "that is the card agent's topic; look at the routing table")
    assert str(hint).startswith("Exercise 1: ✗ not yet: ") and not hint.right
    assert "✗ not yet" in hint._repr_html_() and "&#x27;" in not_yet("E", "it's")._repr_html_()
    assert unanswered("Exercise 1", ...) == Feedback("Exercise 1", False,
                                                       "replace the ... with your answer, then run the cell again")
    assert unanswered("Exercise 1", "x") is None

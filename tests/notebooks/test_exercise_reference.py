"""The reference answers' verdict, folded: Run All shows that it checks out, not what it is."""
from __future__ import annotations

import pytest

from a2a_nb.notebook.exercises import Reference, ReferenceNotRight, not_yet, reference, right


def test_a_right_reference_answer_shows_one_line_without_the_answer():
    shown = reference(right("Who said it?", "the card's source is 'lwt': the broker published the will"))
    assert str(shown) == "Who said it?: " + Reference.FOLDED
    assert "lwt" not in str(shown) and "lwt" not in repr(shown)
    html = shown._repr_html_()
    summary, folded = html.split("</summary>")
    assert html.startswith("<details") and " open" not in html.split(">")[0]  # closed until clicked
    assert "lwt" not in summary and "'lwt'" in folded.replace("&#x27;", "'")


def test_the_folded_verdict_is_escaped():
    html = reference(right("<b>x</b>", "<script>alert(1)</script>"))._repr_html_()
    assert "<script>" not in html and "<b>x</b>" not in html


def test_a_reference_answer_that_is_no_longer_right_stops_the_run():
    with pytest.raises(ReferenceNotRight, match="not yet: look again"):
        reference(not_yet("Exercise", "look again"))

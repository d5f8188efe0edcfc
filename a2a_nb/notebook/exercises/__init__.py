"""Exercises at the end of the lessons: a short task, and a check that says right or what is wrong.

Each lesson 01-11 ends with a step "Your turn". An exercise is a cell where the learner replaces
``...`` with an answer and runs a check from this package, e.g.::

    from a2a_nb.notebook.exercises import lesson05
    cause = ...                       # your answer
    lesson05.reroute_cause(cause, coordinator)

The check returns :class:`Feedback`, shown as one line: ``✓ right: ...`` or ``✗ not yet: ...``.
It never gives the answer away: it says which part is wrong, or where to look. A collapsed cell
under each exercise holds the reference answer; nbval runs it, so the reference answers stay right
as the kit changes. Its output gives nothing away either: :func:`reference` shows one line, "✓ the
reference answer checks out", and folds the check's verdict (which names the answer) behind a
"show" the learner clicks; the answer itself is the cell's hidden source. The checks compute what
is right from the objects the learner has (the coordinator, the recording), never from numbers written into the check.

One module per lesson (``lesson01`` ... ``lesson11``) holds that lesson's checks.
"""
from __future__ import annotations

from ...error_base import A2ANbError

import html
from dataclasses import dataclass
from typing import Any

from ..display import NO_MATH

__all__ = ["Feedback", "right", "not_yet", "unanswered", "reference", "Reference", "ReferenceNotRight"]


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: ``right`` and one sentence for the learner."""

    exercise: str
    right: bool
    message: str

    def __str__(self) -> str:
        mark = "✓ right" if self.right else "✗ not yet"
        return f"{self.exercise}: {mark}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = "#2e7d32" if self.right else "#ef6c00"
        mark = "✓ right" if self.right else "✗ not yet"
        return (f'<div class="{NO_MATH}" style="border-left:4px solid {colour};'
                'padding:2px 8px;background:rgba(128,128,128,0.08)">'
                f"<b>{html.escape(self.exercise)}</b>: <b style=\"color:{colour}\">{mark}</b>: "
                f"{html.escape(self.message)}</div>")


def right(exercise: str, message: str) -> Feedback:
    return Feedback(exercise, True, message)


def not_yet(exercise: str, hint: str) -> Feedback:
    return Feedback(exercise, False, hint)


def unanswered(exercise: str, answer: Any) -> Feedback | None:
    """Feedback for an answer still ``...`` (the placeholder the exercise cell starts with), else None."""
    if answer is Ellipsis:
        return not_yet(exercise, "replace the ... with your answer, then run the cell again")
    return None


class ReferenceNotRight(A2ANbError, AssertionError):
    """A lesson's reference answer no longer passes its check (the kit changed under the lesson)."""


@dataclass(frozen=True)
class Reference:
    """A reference answer's verdict, shown folded: one line says it checks out, the verdict itself
    (which names the answer) opens only when the learner clicks "show"."""

    feedback: Feedback

    FOLDED = "✓ the reference answer checks out (its code is hidden above: click the cell's ··· to see it)"

    def __str__(self) -> str:
        return f"{self.feedback.exercise}: {self.FOLDED}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return (f'<details class="{NO_MATH}" style="border-left:4px solid #2e7d32;'
                'padding:2px 8px;background:rgba(128,128,128,0.08)">'
                f"<summary><b>{html.escape(self.feedback.exercise)}</b>: ✓ the reference answer checks out "
                "(click to show what the check says; the answer is the cell's hidden code)</summary>"
                f"<div>{html.escape(self.feedback.message)}</div></details>")


def reference(feedback: Feedback) -> Reference:
    """The verdict on a lesson's reference answer, folded so that Run All shows no answer; raises
    :class:`ReferenceNotRight` when the reference answer does not pass (nbval and the build stop)."""
    if not feedback.right:
        raise ReferenceNotRight(str(feedback))
    return Reference(feedback)

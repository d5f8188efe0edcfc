"""Lesson 11's exercise: which of the careless agent's failures make ``probe`` exit with status 1.

The probe's exit status is 1 when a MUST rule fails (a SHOULD failure alone leaves it at 0), so a
CI job stops on exactly those. The learner reads the report of the careless agent and names the
checks that failed at level MUST; the check computes them from the report the learner has.
"""
from __future__ import annotations

from typing import Any

from . import Feedback, not_yet, right, unanswered

__all__ = ["MUST_FAILURES", "must_failures"]

MUST_FAILURES = "Which failures stop a CI job"


def must_failures(answer: Any, report: Any) -> Feedback:
    """Right when ``answer`` is the set of check names that failed at level MUST in ``report``."""
    waiting = unanswered(MUST_FAILURES, answer)
    if waiting is not None:
        return waiting
    if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)):
        return not_yet(MUST_FAILURES, "answer with a set of check names, e.g. {\"task-id-echo\"}")
    given = {str(a) for a in answer}
    expected = {r.check for r in report.failures("MUST")}
    failed = {r.check for r in report.failures()}
    if given == expected:
        return right(MUST_FAILURES, f"these {len(expected)} MUST failures set the exit status to "
                                    f"{report.exit_code()}; a SHOULD failure alone would leave it at 0")
    if given - failed:
        return not_yet(MUST_FAILURES, "some of these checks did not fail: look at the verdict column")
    if given - expected:
        return not_yet(MUST_FAILURES, "some of these failed at level SHOULD: look at the level column")
    return not_yet(MUST_FAILURES, "some MUST failures are missing: every failed row whose level is MUST counts")

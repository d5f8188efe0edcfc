"""Lesson text checked against the output under it (docs/architecture.md, principle 6).

A lesson's prose states facts about what its cells show: "three attempts", "PUBACK 16 every
time", "the reply came from analyst-1". Each such fact gets a check in a cell under the output,
which quotes the words of the text it checks:

    as_described(
        said("Three attempts", len(ack.attempts), 3),
        said("(16) every time", {a.reason_code for a in ack.attempts}, {16}),
    )

Run, each check compares what the output holds with what the text says; the cell prints one quiet
line for all of them, ``✓ as described: Three attempts · (16) every time`` (the values are in the
output above it). A mismatch raises :class:`NotAsDescribed`, naming the words and both values, so
Run All, the notebook build and nbval stop at the cell where text and output part. Lesson 00 tells
the learner what these lines are. The other direction is
``tests/notebooks/test_prose_claims.py``: every quote must be words of the text above the check,
and every number, agent name and task state the text of a step states must be quoted by one of
the step's checks. Changing the text without its check, or the output without the text, fails.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional
from ..error_base import A2ANbError

__all__ = ["Said", "said", "as_described", "NotAsDescribed"]


class NotAsDescribed(A2ANbError, AssertionError):
    """The output under a lesson's text shows something else than the text says."""


@dataclass(frozen=True)
class Said:
    """One fact of the text: the ``quote`` that states it, what the text says (``expected``) and
    what the output holds (``actual``). ``within`` compares two numbers as equal when neither is
    more than that factor of the other (for times: ``within=1.5``)."""

    quote: str
    actual: Any
    expected: Any
    within: Optional[float] = None

    @property
    def holds(self) -> bool:
        if self.within is None:
            return bool(self.actual == self.expected)
        a, e = float(self.actual), float(self.expected)
        return a > 0 and e > 0 and max(a / e, e / a) <= self.within

    def line(self) -> str:
        shown = _shown(self.actual)
        if self.holds:
            return f"✓ as described: {self.quote} ({shown})"
        return f"✗ not as described: the text says “{self.quote}” ({_shown(self.expected)}), the output shows {shown}"


def said(quote: str, actual: Any, expected: Any, *, within: Optional[float] = None) -> Said:
    """The text states ``quote``, which means ``expected``; the output holds ``actual``."""
    if not quote.strip():
        raise ValueError("said() needs the words of the text it checks")
    if within is not None and not (math.isfinite(within) and within >= 1):
        raise ValueError(f"within must be a factor >= 1, got {within!r}")
    return Said(quote, actual, expected, within)


def as_described(*facts: Said) -> None:
    """Print one line, ``✓ as described: `` and the quotes of the facts that hold; raise
    :class:`NotAsDescribed` naming every fact whose output differs from the text."""
    if not facts:
        raise ValueError("as_described() needs at least one said(...)")
    wrong = [f for f in facts if not f.holds]
    held = [f.quote for f in facts if f.holds]
    if held:
        print("✓ as described: " + " · ".join(held))
    if wrong:
        raise NotAsDescribed("\n".join(f.line() for f in wrong))


def _shown(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(map(repr, value))) + "}"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value) if isinstance(value, str) else str(value)


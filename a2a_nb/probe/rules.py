"""The probe's catalogue: every live check with its rule id, MUST/SHOULD, conformance level and
profile section, registered in the order the probe runs them.

A check is one small function ``check(run) -> Outcome`` registered with ``@check(...)``, like the
traffic lint's rules (``a2a_nb.traffic.lint``). Where a lint rule states the same requirement, the
check carries the lint's rule id and takes its level and section from ``lint.RULES``, so a learner
meets one name per rule whether it was found in a recording or on a live agent.

Verdicts: ``pass``, ``fail``, ``not-applicable`` (the agent's card says it does not offer the
feature, or the agent never did what the check needs, e.g. it never asked for input) and
``skipped`` (the agent had stopped answering, so the check could not run).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from ..traffic.lint import MUST, RULES as LINT_RULES, SHOULD

if TYPE_CHECKING:
    from .probe_run import ProbeRun

CORE, EXTENDED = "Core", "Extended"
PASS, FAIL, NOT_APPLICABLE, SKIPPED = "pass", "fail", "not-applicable", "skipped"

__all__ = ["CORE", "EXTENDED", "PASS", "FAIL", "NOT_APPLICABLE", "SKIPPED", "MUST", "SHOULD", "Check", "Outcome",
           "CHECKS", "check", "passed", "failed", "not_applicable"]


@dataclass(frozen=True)
class Outcome:
    """What one check found: the verdict, what was sent and what came back, and a remark.

    ``level`` weakens a finding below the check's own level (a SHOULD part of a MUST check);
    ``interop`` notes a difference that is not a violation but may trip another implementation.
    """

    verdict: str
    sent: str = ""
    received: str = ""
    remark: str = ""
    level: Optional[str] = None
    interop: str = ""


def passed(sent: str, received: str, remark: str = "", interop: str = "") -> Outcome:
    return Outcome(PASS, sent, received, remark, interop=interop)


def failed(sent: str, received: str, remark: str, level: Optional[str] = None, interop: str = "") -> Outcome:
    return Outcome(FAIL, sent, received, remark, level, interop)


def not_applicable(remark: str, sent: str = "", received: str = "", interop: str = "") -> Outcome:
    return Outcome(NOT_APPLICABLE, sent, received, remark, interop=interop)


@dataclass(frozen=True)
class Check:
    """One live check: ``name`` is unique; ``rule`` may be shared by several checks."""

    name: str
    rule: str
    level: str
    conformance: str
    section: str
    summary: str
    bad_input: bool
    run: Callable[["ProbeRun"], Outcome]
    passive: bool = False
    """Reads only what was already received, so it runs even after the agent went silent."""


CHECKS: list[Check] = []
"""Every check, in the order the probe runs them."""


def check(name: str, rule: str, summary: str, *, level: Optional[str] = None, section: Optional[str] = None,
          conformance: str = CORE, bad_input: bool = False,
          passive: bool = False) -> Callable[[Callable[["ProbeRun"], Outcome]], Callable[["ProbeRun"], Outcome]]:
    """Register ``fn`` as the check ``name`` of ``rule``.

    A rule id the traffic lint knows takes the lint's level and section (pass neither); a new rule
    id needs both. ``bad_input``: the check sends something malformed, so the probe then asks
    whether the agent still answers. ``passive``: it sends nothing (see ``Check.passive``).
    """
    known = LINT_RULES.get(rule)
    if known is not None and (level or section):
        raise ValueError(f"rule {rule!r} is the lint's: its level and section come from a2a_nb.traffic.lint")
    if known is None and not (level and section):
        raise ValueError(f"new rule {rule!r} needs a level and a profile section")

    def register(fn: Callable[["ProbeRun"], Outcome]) -> Callable[["ProbeRun"], Outcome]:
        if any(c.name == name for c in CHECKS):
            raise ValueError(f"check {name!r} is registered twice")
        CHECKS.append(Check(name, rule, known.level if known else str(level),
                            conformance, known.section if known else str(section), summary, bad_input, fn, passive))
        return fn
    return register

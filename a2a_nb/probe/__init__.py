"""The conformance probe: point it at a live A2A-over-MQTT agent, written by anyone, and see which
rules of the profile it keeps.

In a cell::

    from a2a_nb.probe import probe
    probe("echo")            # a DataFrame: one row per check (rule, MUST/SHOULD, section, sent,
                             # received, verdict, remark); .attrs["summary"] holds the verdict

On the command line: ``python -m a2a_nb probe AGENT [--level extended] [--json | --junit FILE]``
(exit status 1 on any MUST failure). ``run_probe`` returns the full :class:`ProbeReport`. The probe
always ends: an exchange lasts 10 timeouts at most, the whole probe ``deadline`` seconds (default
60 timeouts), and what it keeps and shows of the agent is bounded and escaped (``client``, ``report``).

Profile: Conformance Levels (Core and Extended); the checks are listed in ``rules.CHECKS``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import checks_card, checks_tasks, checks_inputs, checks_extended, checks_observed, checks_ubsp  # noqa: F401  (registers, in run order)
from .report import ProbeReport, Row
from .rules import CHECKS
from .runner import LEVELS, ProbeError, run_probe

if TYPE_CHECKING:
    import pandas as pd


def probe(agent: str, **options: Any) -> "pd.DataFrame":
    """Probe ``agent`` and return one row per check (``run_probe``'s options: org, unit, broker,
    level, pool, token, timeout, deadline, probe_as). ``df.attrs["summary"]`` is the one-line verdict."""
    return run_probe(agent, **options).frame()


__all__ = ["CHECKS", "LEVELS", "ProbeError", "ProbeReport", "Row", "probe", "run_probe"]

"""The probe's report: one row per check, a one-line verdict, and the same as a DataFrame, JSON or
JUnit XML (for CI systems, which show each check as a test case).

Profile: Conformance Levels (Core conformance: every MUST of the Core checks holds; Extended
features: the optional parts the agent showed, such as pools and native binary artifacts).

What a row says about the agent quotes the agent, so every row is made safe once, where it is made
(``Row.__post_init__``): invisible characters escaped (``safe_text``: ESC shows as ``\x1b``) and each
field cut to ``SHOWN_CHARS``. Every shape (text, JSON, JUnit, DataFrame, HTML) then shows the
same safe text, and the JUnit file is well-formed XML whatever the agent sent.
"""
from __future__ import annotations

import html
import json
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..protocol.safe_text import safe_text
from .rules import CORE, EXTENDED, FAIL, MUST, NOT_APPLICABLE, PASS, SKIPPED, Check, Outcome

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["check", "rule", "level", "conformance", "section", "sent", "received", "verdict", "remark"]

FEATURES = {
    "handover-responder-id": "task handover",
    "pooled-responder-id": "shared-subscription dispatch (pools)",
    "binary-artifacts": "native binary artifact mode",
    "ubsp-round-trip": "untrusted-broker security profile (ubsp-v1)",
    "trusted-jku": "trusted JKU policy",
    "broker-status": "broker-managed status",
    "task-events": "extended observability (task events)",
}
"""Checks whose pass shows an optional feature, and its name in the summary."""

EXTENDED_CAPABILITIES = (
    ("trusted JKU policy", ("trusted-jku",)),
    ("broker-managed status", ("broker-status",)),
    ("extended observability", ("task-events",)),
    ("native binary artifact mode", ("binary-artifacts",)),
    ("shared-subscription dispatch", ("pooled-responder-id",)),
    ("untrusted-broker security profile (ubsp-v1)", ("ubsp-round-trip", "ubsp-recipient", "ubsp-replay")),
)
"""The six optional capabilities of Extended conformance (Profile: Conformance Levels, Extended 1-6)
and the checks that show each (broker-managed status is the broker's: the probe reads what the broker
set on the agent's card)."""
NOT_OFFERED, NOT_CHECKED = "not offered", "not checked by the probe"

SHOWN_CHARS = {"sent": 300, "received": 400, "remark": 800, "interop": 400}
"""Longest text of each field of a row that can quote the agent (the probe's own words fit well
within: its longest remark is about 400 characters)."""


@dataclass(frozen=True)
class Row:
    check: str
    rule: str
    level: str
    conformance: str
    section: str
    summary: str
    sent: str
    received: str
    verdict: str
    remark: str
    interop: str = ""

    def __post_init__(self) -> None:
        for name, limit in SHOWN_CHARS.items():  # frozen: set once, here, before anyone reads the row
            object.__setattr__(self, name, safe_text(getattr(self, name), limit))

    @classmethod
    def of(cls, c: Check, outcome: Outcome) -> "Row":
        return cls(c.name, c.rule, outcome.level or c.level, c.conformance, c.section, c.summary,
                   outcome.sent, outcome.received, outcome.verdict, outcome.remark, outcome.interop)


@dataclass
class ProbeReport:
    """What a probe found about one agent (``rows`` in the order the checks ran)."""

    agent: str
    org: str
    unit: str
    level: str
    rows: list[Row]
    card: dict
    seconds: float
    traffic: list[dict] = field(default_factory=list)
    """Every message of the probe as recording records (``load_traffic(report.traffic)`` reads them)."""
    sent: frozenset[int] = frozenset()
    """The positions in ``traffic`` of the requests the probe sent (the rest came from the agent)."""
    deadline: Optional[float] = None
    """The probe's overall deadline in seconds."""
    ran_out: bool = False
    """The deadline came before every check had run (those left are ``skipped``)."""
    not_kept: int = 0
    """Messages from the agent beyond the probe's bounds (``probe.client``): counted, not kept."""

    # -- verdicts ----------------------------------------------------------------------------------------
    def failures(self, level: Optional[str] = None) -> list[Row]:
        return [r for r in self.rows if r.verdict == FAIL and (level is None or r.level == level)]

    @property
    def core_conformant(self) -> bool:
        """No MUST of a Core check failed, and nothing was skipped (the agent went silent, or the
        probe's deadline ran out)."""
        core = [r for r in self.rows if r.conformance == CORE]
        return not any(r.verdict == FAIL and r.level == MUST for r in core) and \
            not any(r.verdict == SKIPPED for r in core)

    @property
    def features(self) -> list[str]:
        """The optional features the agent showed (checks that passed with something to show)."""
        return [FEATURES[r.check] for r in self.rows if r.check in FEATURES and r.verdict == PASS]

    @property
    def capabilities(self) -> dict[str, str]:
        """Each Extended capability: ``pass`` (every check of it passed), ``fail`` (one failed),
        ``not offered`` (its checks did not apply), or ``not checked by the probe``."""
        verdicts = {r.check: r.verdict for r in self.rows}
        out = {}
        for name, checks in EXTENDED_CAPABILITIES:
            seen = [verdicts[c] for c in checks if c in verdicts]
            out[name] = (NOT_CHECKED if not checks or not seen else FAIL if FAIL in seen
                         else PASS if PASS in seen else NOT_OFFERED)
        return out

    @property
    def interop(self) -> list[str]:
        """Differences another implementation may trip over (not violations)."""
        return [f"{r.check}: {r.interop}" for r in self.rows if r.interop]

    def exit_code(self) -> int:
        """1 on any MUST failure (or an agent that went silent), else 0."""
        return 0 if not self.failures(MUST) and not any(r.verdict == SKIPPED for r in self.rows) else 1

    def summary(self) -> str:
        """One line: Core conformant or not (naming the failed MUST rules), and the features seen."""
        counts = {v: sum(1 for r in self.rows if r.verdict == v) for v in (PASS, FAIL, NOT_APPLICABLE, SKIPPED)}
        tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        if self.core_conformant:
            verdict = "Core conformant"
        else:
            broken = sorted({r.rule for r in self.failures(MUST) if r.conformance == CORE})
            why = (f"the probe's deadline of {self.deadline:g} s ran out" if self.ran_out
                   else "the agent stopped answering")
            verdict = "NOT Core conformant" + (f" (MUST failed: {', '.join(broken)})" if broken else f" ({why})")
        features = self.features
        extended = f"; Extended features present: {', '.join(features)}" if features else "; no Extended features seen"
        return f"{self.agent} ({self.org}/{self.unit}): {verdict}{extended}; {tally} in {self.seconds:.1f} s"

    # -- shapes --------------------------------------------------------------------------------------------
    def frame(self) -> "pd.DataFrame":
        """One row per check with the columns of ``COLUMNS`` (``attrs["summary"]`` holds the verdict)."""
        import pandas as pd

        df = pd.DataFrame([[getattr(r, c) for c in COLUMNS] for r in self.rows], columns=COLUMNS)
        df.attrs["summary"] = self.summary()
        df.attrs["interop"] = self.interop
        return df

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "org": self.org, "unit": self.unit, "level": self.level,
                "summary": self.summary(), "core_conformant": self.core_conformant, "features": self.features,
                "capabilities": self.capabilities if self.level == "extended" else None,
                "seconds": round(self.seconds, 3), "deadline": self.deadline, "ran_out": self.ran_out,
                "not_kept": self.not_kept, "exit_code": self.exit_code(), "interop": self.interop,
                "checks": [asdict(r) for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    def junit(self) -> str:
        """JUnit XML: one test case per check; a MUST failure is a ``failure``, a SHOULD failure a
        ``failure`` of type ``SHOULD``, not-applicable and skipped checks are ``skipped``."""
        suite = ET.Element("testsuite", name=f"a2a_nb probe {self.org}/{self.unit}/{self.agent}",
                           tests=str(len(self.rows)), failures=str(len(self.failures())),
                           skipped=str(sum(1 for r in self.rows if r.verdict in (NOT_APPLICABLE, SKIPPED))),
                           time=f"{self.seconds:.3f}")
        for r in self.rows:
            case = ET.SubElement(suite, "testcase", classname=f"probe.{r.conformance.lower()}.{r.rule}", name=r.check)
            text = f"[{r.level} · {r.section}] sent: {r.sent}\nreceived: {r.received}\n{r.remark}"
            if r.verdict == FAIL:
                ET.SubElement(case, "failure", message=r.remark[:200], type=r.level).text = text
            elif r.verdict in (NOT_APPLICABLE, SKIPPED):
                ET.SubElement(case, "skipped", message=r.remark[:200] or r.verdict)
            ET.SubElement(case, "system-out").text = text
        ET.SubElement(suite, "system-out").text = self.summary()
        return ET.tostring(suite, encoding="unicode", xml_declaration=True)

    def text(self, width: int = 100) -> str:
        """A readable report: a header, one line per check (verdict, check, rule id, MUST or SHOULD),
        the remark of each check that did not pass wrapped below it, the interop notes, the summary."""
        mark = {PASS: "pass", FAIL: "FAIL", NOT_APPLICABLE: "n/a", SKIPPED: "skip"}  # the JSON's words
        w = max([len("check")] + [len(r.check) for r in self.rows])
        wr = max([len("rule")] + [len(r.rule) for r in self.rows])
        indent = " " * 9  # under the check column
        lines = [f"{'verdict':<8} {'check':<{w}}  {'rule':<{wr}}  level"]
        for r in self.rows:
            lines.append(f"{mark[r.verdict]:<8} {r.check:<{w}}  {r.rule:<{wr}}  {r.level}")
            if r.verdict != PASS and r.remark:
                lines.extend(textwrap.wrap(r.remark, width=width, initial_indent=indent, subsequent_indent=indent))
        for note in self.interop:
            lines.extend(textwrap.wrap("interop: " + note, width=width, subsequent_indent=indent))
        if self.not_kept:
            lines.append(f"note: {self.not_kept:,} more messages from the agent than the probe keeps were counted, "
                         "not read")
        if self.level == "extended":
            lines.append("Extended capabilities: " + "; ".join(f"{name}: {v}" for name, v in self.capabilities.items()))
        lines.append(self.summary())
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line (the report holds every message of the probe: printing all of it floods a cell)."""
        return (f"<ProbeReport {self.summary()}: report.text() shows every check, report.frame() the table, "
                f"report.traffic the {len(self.traffic)} messages>")

    def _repr_html_(self) -> str:
        colour = {PASS: "#1a7f37", FAIL: "#cf222e", NOT_APPLICABLE: "#6e7781", SKIPPED: "#9a6700"}
        head = "".join(f"<th style='text-align:left'>{c}</th>" for c in ("check", "rule", "level", "verdict", "remark"))
        body = "".join(
            f"<tr><td>{html.escape(r.check)}</td><td><code>{html.escape(r.rule)}</code></td><td>{r.level}</td>"
            f"<td style='color:{colour[r.verdict]};font-weight:bold'>{r.verdict}</td>"
            f"<td>{html.escape(r.remark)}</td></tr>" for r in self.rows)
        return f"<p><b>{html.escape(self.summary())}</b></p><table><tr>{head}</tr>{body}</table>"


__all__ = ["COLUMNS", "CORE", "EXTENDED", "ProbeReport", "Row"]

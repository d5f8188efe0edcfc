"""Read a lesson's text file as its sections, claims and checks (for test_prose_claims.py).

A lesson (``notebooks/text/NN-name.py``) is cut into sections at its ``## `` headings. In each
section, the prose is the markdown outside headings, tables and fenced blocks; the checks are the
``said("quote", actual, expected)`` calls of its code cells (``a2a_nb.notebook.claims``).

What the prose *claims* about an output is what a learner can check against it and what drifted
before: numbers (outside inline code), number words (two to twelve), the names of analysts
(``analyst-1``) and task states written as states (`` `working` ``, ``INPUT_REQUIRED``).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import jupytext

NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
STATES = ("submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected")
STATE_CAPS = tuple(s.upper().replace("-", "_") for s in STATES)

# prose numbers that are not claims about an output: references to steps, lessons, exercises and the
# story's steps, to the profile's sections and rules ("Request/Reply Mapping 6", "rule 3"), protocol
# and QoS versions, a numbered list's own numbers
REFERENCE_WORDS = ("[Ss]teps?", "[Ll]essons?", "[Ss]tory steps?", "user story", "[Ee]xercises?", "[Cc]ases?",
                   "[Rr]ules?", "[Ss]ections?", "[Pp]atterns?", "Mapping", "Requirements", "Semantics",
                   "Interoperability", "JupyterLab", "OAuth", "Python")
NOT_CLAIMS = re.compile(r"\b(?:" + "|".join(REFERENCE_WORDS) + r")"
                        r"\s+\d+(?:\.\d+)*\+?(?:\s*(?:-|–|and|,)\s*\d+)*"
                        r"|\bv\d+(?:\.\d+)*\b|\bQoS\s+\d\b|\bMQTT\s+5\b|\bJSON-RPC\s+2\.0\b|\bUUIDv4\b|\bTCK-\d+\b"
                        r"|^\s*\d+\.\s")
NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w.]*\w)")
ANALYST = re.compile(r"\banalyst-[A-Za-z0-9]+\b")
STATE_IN_CODE = re.compile(r"`(?:TASK_STATE_)?(" + "|".join(map(re.escape, STATES + STATE_CAPS)) + r")`")
STATE_CAPS_WORD = re.compile(r"\b(?:TASK_STATE_)?(" + "|".join(STATE_CAPS) + r")\b")
INLINE_CODE = re.compile(r"`[^`]*`")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def normalise(text: str) -> str:
    """Markdown to the words a reader sees: link text kept, emphasis and code marks dropped."""
    text = LINK.sub(r"\1", text)
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class Check:
    quote: str
    cell: int  # index of the code cell in the lesson
    line: int


@dataclass
class Section:
    title: str
    prose: list[tuple[int, str]] = field(default_factory=list)  # (cell index, markdown prose line)
    checks: list[Check] = field(default_factory=list)

    @property
    def is_step(self) -> bool:
        return self.title.startswith("Step ")

    def prose_above(self, cell: int) -> str:
        return normalise(" ".join(line for i, line in self.prose if i < cell))

    def quotes(self) -> list[str]:
        return [normalise(c.quote) for c in self.checks]


def said_quotes(source: str) -> list[tuple[str, int]]:
    """The first argument of every ``said(...)`` call in a code cell: (quote, line)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython magics: drop those lines
        tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                   for line in source.splitlines()))
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "said"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.args[0].value, node.lineno))
    return found


def sections(path: Path) -> list[Section]:
    """The lesson's sections in order; the first (before any ``## `` heading) is titled ''."""
    result = [Section("")]
    for index, cell in enumerate(jupytext.read(path).cells):
        if cell.cell_type == "code":
            result[-1].checks += [Check(q, index, line) for q, line in said_quotes(cell.source)]
            continue
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            if line.startswith("## "):
                result.append(Section(line[3:].strip()))
            elif not line.startswith("#") and not line.lstrip().startswith("|"):
                result[-1].prose.append((index, line))
    return result


def claims_in(line: str) -> set[str]:
    """The claim tokens of one prose line (see the module docstring)."""
    found = {m.group(0) for m in ANALYST.finditer(line)}
    found |= {m.group(1).lower().replace("_", "-") for m in STATE_IN_CODE.finditer(line)}
    plain = INLINE_CODE.sub(" ", LINK.sub(r"\1", line))
    found |= {m.group(1).lower().replace("_", "-") for m in STATE_CAPS_WORD.finditer(plain)}
    plain = NOT_CLAIMS.sub(" ", plain)
    found |= {m.group(0) for m in NUMBER.finditer(plain)}
    found |= {w for w in re.findall(r"[a-z]+", plain.lower()) if w in NUMBER_WORDS}
    return found


def covered(token: str, quotes: list[str]) -> bool:
    """A token is checked when one of the section's quotes holds it (as a word, any case; a state
    also in its CAPS form)."""
    forms = {token.lower(), token.upper().replace("-", "_")}
    for quote in quotes:
        words = set(re.findall(r"-?[\w.-]*\w", quote.lower())) | set(re.findall(r"-?[\w.-]*\w", quote))
        words |= {w.lower() for w in words}
        if forms & words or any(f.lower() in words for f in forms):
            return True
    return False


def unchecked_claims(path: Path, skip_titles: tuple[str, ...] = ("Your turn", "Clean up")) -> list[str]:
    """Each claim token in a step's prose that none of the step's checks quotes."""
    problems = []
    for section in sections(path):
        if not section.is_step or any(s in section.title for s in skip_titles):
            continue
        quotes = section.quotes()
        for _, line in section.prose:
            for token in sorted(claims_in(line)):
                if not covered(token, quotes):
                    problems.append(f"{section.title}: “{token}” in “{line.strip()[:100]}” has no said(...) check")
    return problems


def misquoted_checks(path: Path) -> list[str]:
    """Each said(...) whose quote is not words of the prose above it in the same section."""
    problems = []
    for section in sections(path):
        for check in section.checks:
            if normalise(check.quote) not in section.prose_above(check.cell):
                where = section.title or "the lesson's start"
                problems.append(f"{where}: said({check.quote!r}) quotes words that the text above it does not say")
    return problems


TIME_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}
STATED_TIME = re.compile(r"Run All takes (about|under) (\d+|a|one|two|three|four|five|ten) seconds?")


def stated_run_time(path: Path) -> tuple[str, int] | None:
    """What the lesson's "Time needed" says Run All takes: ``("about", 5)`` for "Run All takes about
    5 seconds", ``("under", 2)`` for "under two seconds"; None when it says neither."""
    time_needed = next(s for s in sections(path) if s.title == "Time needed")
    found = STATED_TIME.search(" ".join(line for _, line in time_needed.prose))
    if found is None:
        return None
    return found.group(1), TIME_WORDS.get(found.group(2)) or int(found.group(2))

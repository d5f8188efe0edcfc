"""One glossary (``notebooks/glossary.md``), linked from each lesson at the first use of a term.

JupyterLab opens ``glossary.md#Some-Term`` in its Markdown preview at the heading "Some Term" (the
heading's text with spaces turned into ``-``), so every link must name a heading that exists, and
every entry must point to a lesson that shows it.
"""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "notebooks" / "glossary.md"
TEXTS = sorted((ROOT / "notebooks" / "text").glob("[0-9][0-9]-*.py"))
LINK = re.compile(r"\[([^\]]+)\]\(glossary\.md#([^)]+)\)")
# entry -> how a lesson's prose says it; the first time a lesson says it, it links the entry
TERMS = {
    "Correlation Data": r"\bCorrelation Data\b",
    "Response Topic": r"\bResponse Topic\b",
    "Retained message": r"\bretained\b",
    "Last Will": r"\b[Ll]ast [Ww]ill\b",
    "PUBACK reason codes": r"\bPUBACK\b",
    "CONNACK reason codes": r"\bCONNACK\b",
    "QoS 1": r"\bQoS 1\b",
    "Shared subscription": r"\b[Ss]hared subscription",
    "Handover": r"\b[Hh]andover\b",
    "Task states": r"\b[Tt]ask states?\b",
    "Error codes": r"(?<![\w-])-32\d{3}\b",
    "Agent Card": r"\bAgent Card\b",
    "User property": r"\b[Uu]ser propert(?:y|ies)\b",
    "Routing table": r"\b[Rr]outing table\b",
    "Retry profile": r"\b[Rr]etry profile\b",
    "Bearer token": r"\b[Bb]earer token\b",
}


def anchor(heading: str) -> str:
    """The id JupyterLab gives a Markdown heading."""
    return heading.strip().replace(" ", "-")


def entries() -> dict[str, str]:
    """Entry heading -> its text, for every ``### `` entry of the glossary."""
    found, current = {}, None
    for line in GLOSSARY.read_text().splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            found[current] = ""
        elif line.startswith("#"):
            current = None
        elif current is not None:
            found[current] += line + "\n"
    return found


def prose(path: Path) -> str:
    """The lesson's markdown, fenced blocks left out, in order."""
    text = []
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            text.append(re.sub(r"```.*?```", "", cell.source, flags=re.S))
    return "\n".join(text)


def test_every_term_has_an_entry():
    assert set(TERMS) <= set(entries()), set(TERMS) - set(entries())


def test_every_entry_points_to_a_lesson_that_exists():
    lessons = {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    for term, text in entries().items():
        targets = re.findall(r"\]\(([^)#]+\.ipynb)", text)
        assert targets, f"glossary entry {term!r} names no lesson that shows it"
        assert set(targets) <= lessons, f"glossary entry {term!r} links to missing {set(targets) - lessons}"


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_links_name_an_entry(path):
    ids = {anchor(h) for h in entries()}
    for text, target in LINK.findall(prose(path)):
        assert target in ids, f"{path.name}: [{text}](glossary.md#{target}) names no glossary entry"


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_first_use_of_a_term_links_the_glossary(path):
    text = prose(path)
    links = [(m.start(), m.end(), m.group(2)) for m in LINK.finditer(text)]
    missing = []
    for term, pattern in TERMS.items():
        first = re.search(pattern, text)
        if first is None:
            continue
        inside = [t for start, end, t in links if start <= first.start() < end]
        if anchor(term) not in inside:
            line = text[max(0, first.start() - 40):first.end() + 40].replace("\n", " ")
            missing.append(f"{term}: first used in “…{line}…” without [..](glossary.md#{anchor(term)})")
    assert not missing, f"{path.name}:\n" + "\n".join(missing)


# entry -> (the lesson that shows it, how that lesson's prose says it): the words of lessons 09 and 10
# a learner looks up (issue 19): the entries exist, and each lesson links its words where it first uses them
LATER_WORDS = {
    "Bridge": ("09-two-bindings.py", r"\bbridge\b"),
    "Well-known card URL": ("09-two-bindings.py", r"well-known URL"),
    "SSE": ("09-two-bindings.py", r"Server-Sent Events"),
    "ubsp-v1": ("10-untrusted-broker.py", r"\bubsp-v1\b"),
    "JWE": ("10-untrusted-broker.py", r"\bJWE\b"),
    "jwksUri": ("10-untrusted-broker.py", r"\bjwksUri\b"),
}


@pytest.mark.parametrize("term", LATER_WORDS)
def test_the_words_of_lessons_09_and_10_have_entries(term):
    lesson, pattern = LATER_WORDS[term]
    text = entries().get(term)
    assert text, f"no glossary entry {term!r}"
    assert f"]({lesson[:-3]}.ipynb)" in text, f"glossary entry {term!r} does not point to {lesson[:-3]}.ipynb"
    assert re.search(pattern, prose(ROOT / "notebooks" / "text" / lesson)), f"{lesson} does not say {term!r}"


@pytest.mark.parametrize("term", LATER_WORDS)
def test_lessons_09_and_10_link_their_words_where_they_first_use_them(term):
    lesson, pattern = LATER_WORDS[term]
    text = prose(ROOT / "notebooks" / "text" / lesson)
    first = re.search(pattern, text)
    assert first, f"{lesson} does not say {term!r}"
    inside = [m.group(2) for m in LINK.finditer(text) if m.start() <= first.start() < m.end()]
    line = text[max(0, first.start() - 40):first.end() + 40].replace("\n", " ")
    assert inside == [anchor(term)], f"{lesson}: {term} first used in “…{line}…” without [..](glossary.md#{anchor(term)})"


def test_links_inside_the_glossary_name_an_entry():
    ids = {anchor(h) for h in entries()}
    targets = re.findall(r"\]\(#([^)]+)\)", GLOSSARY.read_text())
    assert targets, "the new entries link each other"
    assert set(targets) <= ids, set(targets) - ids


def test_markdown_opens_rendered_in_jupyterlab():
    """A double click on glossary.md in the file browser opens JupyterLab's Markdown Preview, not the
    text editor: the setting both `make lab` (scripts/setup.sh) and Binder (binder/postBuild) copy
    into the venv's JupyterLab settings (tests/browser/test_small_things_in_lab.py clicks it)."""
    import json

    overrides = json.loads((ROOT / "scripts" / "jupyterlab-overrides.json").read_text())
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Markdown Preview"
    for installer in (ROOT / "scripts" / "setup.sh", ROOT / "binder" / "postBuild"):
        assert "scripts/jupyterlab-overrides.json" in installer.read_text(), installer

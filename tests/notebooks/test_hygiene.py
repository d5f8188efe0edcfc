"""The stored lessons are fit for nbval: executed, with outputs, no errors, one frame for all.

nbval only compares cells that were executed in the stored notebook, so a notebook saved without
outputs would pass while checking nothing. ``scripts/build_notebooks.py`` builds and executes them.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from a2a_nb.notebook.exercises import Reference

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
FRAME = ("What you will learn", "Time needed", "Prerequisites", "Summary", "What's next")
NBVAL_MARKER = re.compile(r"NBVAL_[A-Z_]+")
NBVAL_LINE = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+\s*$")


def load(path: Path):
    return nbformat.read(path, as_version=4)


def test_lessons_exist():
    names = [p.name for p in PATHS]
    for expected in ("00-start-here.ipynb", "01-discovery.ipynb", "02-send-and-track.ipynb"):
        assert expected in names
    assert all(re.fullmatch(r"\d\d-[a-z0-9-]+\.ipynb", n) for n in names), names


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_valid_and_kernel_is_python3(path):
    nb = load(path)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["kernelspec"]["language"] == "python"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_every_code_cell_executed_in_order_with_outputs(path):
    nb = load(path)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert cells, f"{path.name} has no code cells"
    counts = [c.execution_count for c in cells]
    assert all(isinstance(n, int) for n in counts), f"{path.name}: cells never executed: {counts}"
    assert counts == list(range(1, len(cells) + 1)), f"{path.name}: not run top to bottom once: {counts}"
    with_output = [c for c in cells if c.outputs]
    assert len(with_output) >= len(cells) * 0.6, f"{path.name}: most code cells should show something"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_no_errors_or_stderr_stored(path):
    for i, cell in enumerate(load(path).cells):
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"{path.name} cell {i}: {out.get('ename')}: {out.get('evalue')}"
            if out.output_type == "stream":
                assert out.name == "stdout", f"{path.name} cell {i} wrote to stderr: {out.text[:200]}"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_nbval_markers_alone_on_their_line(path):
    for i, cell in enumerate(load(path).cells):
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            if NBVAL_MARKER.search(line):
                assert NBVAL_LINE.match(line), f"{path.name} cell {i}: nbval marker with other text: {line!r}"
        for tag in cell.metadata.get("tags", []):
            if tag.startswith("nbval"):
                assert tag in ("nbval-ignore-output", "nbval-skip", "nbval-check-output"), tag


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_lesson_frame(path):
    cells = load(path).cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# "), "starts with a title"
    headings = [line.strip() for c in cells if c.cell_type == "markdown" for line in c.source.splitlines()
                if line.startswith("#")]
    titles = [h.lstrip("#").strip() for h in headings]
    for part in FRAME:
        assert part in titles, f"{path.name}: missing the '{part}' heading"
    steps = [t for t in titles if re.match(r"Step \d+\. ", t)]
    assert len(steps) >= 3, f"{path.name}: numbered steps expected, found {steps}"
    assert [int(re.match(r"Step (\d+)", s).group(1)) for s in steps] == list(range(1, len(steps) + 1))
    order = [titles.index(p) for p in FRAME]
    assert order == sorted(order), f"{path.name}: frame headings out of order"
    assert titles.index("Prerequisites") < titles.index(steps[0]) < titles.index("Summary")


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_lesson_ends_with_stop_all(path):
    code = [c.source for c in load(path).cells if c.cell_type == "code"]
    assert "a2a_nb.stop_all()" in code[-1], f"{path.name}: the last code cell should call a2a_nb.stop_all()"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_links_point_at_existing_lessons(path):
    names = {p.name for p in PATHS}
    for cell in load(path).cells:
        if cell.cell_type == "markdown":
            for target in re.findall(r"\]\(([^)#]+\.ipynb)\)", cell.source):
                assert target in names, f"{path.name} links to missing {target}"


EXERCISE_CHECK = re.compile(r"\blesson(\d\d)\.\w+\(")


@pytest.mark.parametrize("path", [p for p in PATHS if not p.name.startswith("00-")],
                         ids=[p.name for p in PATHS if not p.name.startswith("00-")])
def test_lesson_ends_with_exercises_and_collapsed_reference_answers(path):
    """Lessons 01-11 end with a step "Your turn": each exercise cell calls one of the lesson's checks
    (``a2a_nb.notebook.exercises.lessonNN``) on the learner's ``...``, and the cell after it, tagged
    ``solution`` with its source collapsed, calls the same check on the reference answer. Its output
    gives nothing away: one line that the reference answer checks out, the check's verdict (which
    names the answer) folded in a closed ``<details>``, no printed line."""
    cells = load(path).cells
    headings = [(i, line) for i, c in enumerate(cells) if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("## ")]
    turn = [i for i, line in headings if re.match(r"## Step \d+\. Your turn", line)]
    assert turn, f"{path.name}: no '## Step N. Your turn' step with exercises"
    end = next((i for i, line in headings if i > turn[0]), len(cells))
    code = [c for c in cells[turn[0]:end] if c.cell_type == "code"]
    exercises = [c for c in code if "solution" not in c.metadata.get("tags", [])]
    solutions = [c for c in code if "solution" in c.metadata.get("tags", [])]
    asked = [c for c in exercises if EXERCISE_CHECK.search(c.source) and "..." in c.source]
    assert 1 <= len(asked) <= 3, f"{path.name}: one to three exercises expected, found {len(asked)}"
    for c in asked:
        assert EXERCISE_CHECK.search(c.source).group(1) == path.name[:2], f"{path.name}: checks of another lesson"
        after = cells[cells.index(c) + 1]
        assert after in solutions, f"{path.name}: the exercise cell {c.id} has no reference answer right after it"
        assert after.metadata.get("jupyter", {}).get("source_hidden") is True, f"{path.name}: {after.id} not collapsed"
        check = EXERCISE_CHECK.search(c.source).group(0)
        assert check in after.source, f"{path.name}: {after.id} does not call {check}...)"
        assert [o.output_type for o in after.outputs] == ["execute_result"], \
            f"{path.name}: {after.id} shows more than the folded verdict: {after.outputs}"
        data = after.outputs[0].data
        assert data["text/plain"].endswith(Reference.FOLDED), f"{path.name}: {after.id} shows {data['text/plain']!r}"
        folded = data["text/html"]
        assert folded.startswith("<details") and " open" not in folded.split(">")[0], f"{path.name}: {after.id}"
        assert "✓ right" not in folded.split("</summary>")[0], f"{path.name}: {after.id} shows the verdict unfolded"

"""Run All, then the exercises: a learner who ran the whole lesson and goes back to an exercise finds
it working.

Lesson 00 tells learners to *Run All*, so the lesson's last cell runs before any exercise is tried.
Each lesson is executed from its text file in one kernel, top to bottom, as *Run All* does; then
every exercise's reference answer (the collapsed cell under the exercise, which calls the same
check on the same objects) runs again in that kernel and must check out. Clean-up is a function
the learner calls (``clean_up()``), never something *Run All* does before the exercises are tried.
"""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.broker  # the lessons' kernels use the session's broker (A2A_BROKER_URL)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TEXTS = sorted(p for p in (NOTEBOOKS / "text").glob("[0-9][0-9]-*.py") if not p.name.startswith("00-"))
FOLDED = "✓ the reference answer checks out"


def _build_script():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "scripts" / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def shown(cell) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", []))


@pytest.mark.parametrize("text", TEXTS, ids=[p.stem[:2] for p in TEXTS])
def test_after_run_all_every_exercise_works_again(text):
    nb = _build_script().notebook_from_text(text)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    solutions = [i for i, c in enumerate(nb.cells) if "solution" in c.metadata.get("tags", [])]
    assert solutions, f"{text.name}: no reference answers"
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        for i in solutions:  # back to each exercise, after the lesson's last cell ran
            again = copy.deepcopy(nb.cells[i])
            client.execute_cell(again, i)
            assert FOLDED in shown(again), f"{text.name}: the exercise of cell {i} after Run All: {shown(again)[:300]}"
        if any("def clean_up():" in c.source for c in nb.cells):  # then the learner's clean-up, once
            done = nbformat.v4.new_code_cell("clean_up()")
            nb.cells.append(done)
            client.execute_cell(done, len(nb.cells) - 1)
            assert "MQTT session(s)" in shown(done), shown(done)

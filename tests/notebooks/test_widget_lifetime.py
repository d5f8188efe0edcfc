"""Widgets that outlive *Run All Cells* and a reopen (issue 14, item 4), checked on the files.

tests/browser does the same in a real JupyterLab and Chromium; these checks need neither and say
which lesson or setting is wrong:

- no cell after a widget's cell closes it (a clean-up step would blank it right after Run All);
- a committed lesson holds its widgets as HTML snapshots, with no saved widget state and no output
  JupyterLab rewrites when it shows it (opening it would mark it unsaved);
- JupyterLab is told to save widget state when a notebook is saved (``make lab`` and Binder);
- the player's chart is never stretched by its row.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
FACTORIES = r"(?:discovery_browser|send_form|routing_table_view|traffic_player|TrafficPlayer|DiscoveryBrowser|SendForm)"


def _code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_later_cell_closes_a_displayed_widget(path):
    cells = _code(nbformat.read(path, as_version=4))
    for i, src in enumerate(cells):
        for name in re.findall(rf"^(\w+)\s*=\s*{FACTORIES}\(", src, flags=re.M):
            for later in cells[i + 1:]:
                assert f"{name}.close()" not in later, (
                    f"{path.name}: a later cell calls {name}.close(): after Run All the learner finds the "
                    f"widget blank. Stop the agents in the clean-up step and leave the view open.")


REWRITTEN_ON_OPEN = (WIDGET_MIME, "text/vnd.mermaid")
"""Outputs JupyterLab changes as soon as it shows them: a widget view restored from the saved state
(the widget manager marks the notebook unsaved for every model it registers while it saves widget
state), a ``text/vnd.mermaid`` diagram (its renderer writes the drawn SVG into the output)."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_opening_a_committed_lesson_changes_nothing(path):
    """A committed lesson holds each widget as its HTML snapshot and no saved widget state, and no
    output JupyterLab rewrites on display: opening and reading it leaves it saved (tests/browser
    opens each lesson and checks)."""
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state (rebuild with scripts/build_notebooks.py)"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            rewritten = [mime for mime in REWRITTEN_ON_OPEN if mime in data]
            assert not rewritten, f"{path.name} cell {cell.id}: {rewritten} would change when JupyterLab shows it"
    for cell in nb.cells:
        if cell.cell_type == "code" and re.search(rf"^\w+\s*=\s*{FACTORIES}\(", cell.source, flags=re.M):
            assert any("text/html" in out.get("data", {}) for out in cell.outputs), \
                f"{path.name} cell {cell.id}: no HTML snapshot of its widget"


def test_jupyterlab_saves_widget_state_with_the_notebook():
    overrides = json.loads((ROOT / "scripts" / "jupyterlab-overrides.json").read_text())
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
    assert "scripts/jupyterlab-overrides.json" in (ROOT / "scripts" / "setup.sh").read_text()
    assert "scripts/jupyterlab-overrides.json" in (ROOT / "binder" / "postBuild").read_text()


def test_player_chart_keeps_its_shape():
    from a2a_nb.notebook.player import TrafficPlayer

    player = TrafficPlayer(ROOT / "a2a_nb" / "data" / "recordings" / "happy.jsonl")
    try:
        layout = player.chart.layout
        assert layout.height == "auto" and layout.align_self == "flex-start"  # not stretched by its row
        assert layout.max_width == "100%"  # never wider than the output area
        assert "table-layout:fixed" in player.view.value  # packet and payload columns share the width
    finally:
        player.close()

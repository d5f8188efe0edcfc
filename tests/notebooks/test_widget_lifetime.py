"""Widgets that outlive *Run All Cells* and a reopen (issue 14, item 4), checked on the files.

tests/browser does the same in a real JupyterLab and Chromium; these checks need neither and say
which lesson or setting is wrong:

- no cell after a widget's cell closes it (a clean-up step would blank it right after Run All);
- every widget output of a committed lesson has its model in the notebook's saved widget state
  (otherwise JupyterLab shows "Error displaying widget: model not found");
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_widget_output_has_its_model_in_the_saved_state(path):
    nb = nbformat.read(path, as_version=4)
    state = nb.metadata.get("widgets", {}).get(STATE_MIME, {}).get("state", {})
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_MIME)
            if view:
                assert view["model_id"] in state, (
                    f"{path.name} cell {cell.id}: widget {view['model_id']} is not in the saved widget state: "
                    "JupyterLab would show 'Error displaying widget: model not found'. Rebuild the lesson "
                    "(scripts/build_notebooks.py) without closing the widget.")
                assert "text/html" in out["data"], f"{path.name} cell {cell.id}: no HTML snapshot next to the widget"


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

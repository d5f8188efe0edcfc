#!/usr/bin/env python3
"""Build the lessons in notebooks/ from their text files, execute them, save them with outputs.

    .venv/bin/python scripts/build_notebooks.py            # every lesson
    .venv/bin/python scripts/build_notebooks.py 01 02      # only lessons whose name starts so
    .venv/bin/python scripts/build_notebooks.py --no-execute

Each lesson is written as ``notebooks/text/NN-name.py``, a jupytext percent-format text file
(``# %% [markdown]`` and ``# %%`` cells, tags as ``# %% tags=["nbval-ignore-output"]``), paired with
``notebooks/NN-name.ipynb`` (``formats: ipynb,text//py:percent``: the text files sit in a subfolder,
so JupyterLab's file browser lists each lesson once). This script reads each text file with
jupytext, gives the cells stable ids (``NN-ii``, by position), executes the notebook and writes the
``.ipynb``. A new ``text/NN-name.py`` is a new lesson: nothing here lists the lessons. The header
(kernelspec, pairing) is what JupyterLab itself writes, so saving a lesson there leaves its text
file as it was.

Why outputs are stored: nbval compares a fresh run with the stored outputs, and a cell that was
never executed is not compared at all. So every lesson is executed here, against a Mosquitto this
script starts (``EmbeddedBroker``) and names in ``A2A_BROKER_URL`` exactly as ``tests/conftest.py``
does for the test run. Ids are seeded (``seed=`` on ``Requester`` and ``TicketDesk``) and agent names
fixed, so the stored outputs are what the tests see; cells showing timings or live widgets carry
the ``nbval-ignore-output`` tag. A widget is stored as its HTML snapshot (``widget_snapshots``): opening
a committed lesson leaves it unchanged. The kernel is ``python3`` of the current environment.

The build also measures each lesson's Run All time (first code cell started to last one done, as a
learner's *Run All* takes it, kernel start-up aside) and stores it in the notebook's metadata
(``a2a_nb.run_all_s``): ``tests/notebooks/test_prose_claims.py`` holds the time the lesson states
within 1.5x of it, and ``tests/browser/test_run_all_times_in_lab.py`` within 1.5x of what JupyterLab
takes (the time a learner sees).

Every lesson has the same frame: title, What you will learn, Time needed, Prerequisites, numbered
steps, Summary, What's next (``tests/notebooks/test_hygiene.py`` checks it);
``tests/notebooks/test_lessons_as_text.py`` checks that each ``.ipynb`` holds its text file's cells.
"""
from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TEXTS = NOTEBOOKS / "text"
sys.path.insert(0, str(ROOT))

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}  # as JupyterLab writes it
PAIRING = {"formats": "ipynb,text//py:percent"}  # jupytext metadata: JupyterLab keeps both files in step
CELL_METADATA = ("tags", "jupyter")  # kept from the text file: nbval tags, a solution's collapsed source
TIMEOUT_S = 120
BUILD_PORT = 18830
NEW_CELL = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell,
            "raw": nbformat.v4.new_raw_cell}


def lesson_texts() -> dict[str, Path]:
    """Every lesson's text file by lesson name (``NN-name``), in lesson order."""
    return {path.stem: path for path in sorted(TEXTS.glob("[0-9][0-9]-*.py"))}


def notebook_from_text(path: Path) -> nbformat.NotebookNode:
    """The lesson's notebook, without outputs: the text file's cells (sources, types, tags, collapsed
    sources) with stable ids, the python3 kernel and the jupytext pairing."""
    text = jupytext.read(path)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["jupytext"] = dict(PAIRING)
    for i, cell in enumerate(text.cells):
        cell_id = f"{path.stem[:2]}-{i:02d}"
        new = NEW_CELL[cell.cell_type](cell.source, id=cell_id)
        for key in sorted(CELL_METADATA):  # in the order of the saved .ipynb (its JSON keys are sorted)
            if cell.metadata.get(key):
                new.metadata[key] = cell.metadata[key]
        nb.cells.append(new)
    return nb


def as_jupyterlab_writes(nb: nbformat.NotebookNode) -> str:
    """The lesson's text file as JupyterLab (jupytext's contents manager) writes it when the notebook
    is saved: the same cells, jupytext's own spacing between them."""
    return jupytext.writes(nb, fmt="py:percent")


def normalise_text(path: Path, nb: nbformat.NotebookNode) -> bool:
    """Write the text file back as JupyterLab would write it (a blank line more or less): saving
    the lesson then leaves it as it is, and jupytext never finds the pair out of step. True when
    the file changed."""
    canonical = as_jupyterlab_writes(nb)
    if path.read_text() == canonical:
        return False
    path.write_text(canonical)
    return True


def execute(nb: nbformat.NotebookNode) -> float:
    """Run every cell; return the Run All time in seconds (first code cell started to last one
    done). The per-cell timestamps that measure it are not kept in the file."""
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name=KERNELSPEC["name"], allow_errors=False,
                            record_timing=True, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)  # nbclient writes the spec it ran; keep ours
    timings = [cell.metadata.pop("execution") for cell in nb.cells if "execution" in cell.metadata]
    started = datetime.fromisoformat(timings[0]["iopub.execute_input"].replace("Z", "+00:00"))
    done = datetime.fromisoformat(timings[-1]["shell.execute_reply"].replace("Z", "+00:00"))
    return (done - started).total_seconds()


def merge_streams(nb: nbformat.NotebookNode) -> None:
    """Join consecutive outputs of one stream (stdout, stderr) into one, as Jupyter shows them: how
    the kernel happened to flush a cell's prints does not change the stored file."""
    for cell in nb.cells:
        merged: list = []
        for out in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if last is not None and out.output_type == last.output_type == "stream" and out.name == last.name:
                last.text += out.text
            else:
                merged.append(out)
        if "outputs" in cell:
            cell.outputs = merged


WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def widget_snapshots(nb: nbformat.NotebookNode) -> None:
    """Keep each widget's HTML snapshot, drop the live view and the saved widget state.

    A committed lesson's widgets have no kernel behind them; restoring them from a saved state makes
    JupyterLab's widget manager mark the notebook unsaved as soon as it is opened (it does so for every
    model it registers while "save widget state" is on), so a learner who only read the lesson is asked
    to save it. The snapshot (what GitHub and nbviewer show too) says what the widget holds until the
    learner runs the lesson; a notebook the learner saves keeps its live widgets' state as usual."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            out.get("data", {}).pop(WIDGET_VIEW_MIME, None)


def start_build_broker():
    """The build's own Mosquitto, on a fixed port when free (stable stored outputs), else any port."""
    from a2a_nb.mqtt.broker import BrokerError, EmbeddedBroker

    try:
        return EmbeddedBroker(port=BUILD_PORT).start()
    except BrokerError:
        return EmbeddedBroker().start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="build only lessons whose name starts with one of these")
    parser.add_argument("--no-execute", action="store_true", help="write the notebooks without outputs")
    args = parser.parse_args(argv)
    lessons = lesson_texts()
    chosen = {n: p for n, p in lessons.items() if not args.only or any(n.startswith(o) for o in args.only)}
    if not chosen:
        parser.error(f"no lesson matches {args.only}; lessons: {', '.join(lessons)}")

    broker = None
    if not args.no_execute:
        from a2a_nb.mqtt.broker import ENV_URL

        broker = start_build_broker()
        os.environ[ENV_URL] = broker.url  # the kernels inherit it, as they do under tests/conftest.py
        os.environ.setdefault("A2A_NB_TEST_RUN", "1")
        os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        for name, text_path in chosen.items():
            nb = notebook_from_text(text_path)
            if normalise_text(text_path, nb):
                print(f"{text_path.relative_to(ROOT)}: spacing made as JupyterLab writes it")
            note = "not executed"
            if broker is not None:
                run_all_s = execute(nb)
                nb.metadata["a2a_nb"] = {"run_all_s": round(run_all_s, 1)}
                merge_streams(nb)
                widget_snapshots(nb)
                note = f"Run All took {run_all_s:.1f} s"
            path = NOTEBOOKS / f"{name}.ipynb"
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"{path.relative_to(ROOT)}: {len(nb.cells)} cells, {note}")
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

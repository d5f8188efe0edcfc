"""Each lesson is written as a jupytext text file (``notebooks/text/NN-name.py``, percent format)
paired with its notebook (``notebooks/NN-name.ipynb``, built and executed by
``scripts/build_notebooks.py``).

A pair is in sync when the notebook holds exactly the text file's cells: same types, sources, tags
and collapsed sources, in the same order (outputs aside). Editing a text file without rebuilding its notebook, or
editing a notebook outside JupyterLab's jupytext pairing, fails here and names the first cell that
differs.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TEXTS = NOTEBOOKS / "text"
PAIRING = "ipynb,text//py:percent"
LESSON_STEMS = sorted({p.stem for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")}
                      | {p.stem for p in TEXTS.glob("[0-9][0-9]-*.py")})


def cells_of(nb) -> list[tuple[str, str, list[str], dict]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", [])), dict(c.metadata.get("jupyter", {})))
            for c in nb.cells]


def differences(notebook: Path, text: Path) -> list[str]:
    """What differs between the notebook's cells and its text file's (empty when in sync)."""
    stored = cells_of(nbformat.read(notebook, as_version=4))
    written = cells_of(jupytext.read(text))
    found = []
    for i, (in_notebook, in_text) in enumerate(zip(stored, written)):
        for what, a, b in zip(("type", "source", "tags", "jupyter metadata"), in_notebook, in_text):
            if a != b:
                found.append(f"cell {i}: {what} differs: notebook {a!r:.80} vs text {b!r:.80}")
    if len(stored) != len(written):
        found.append(f"{len(stored)} cells in {notebook.name}, {len(written)} in {text.name}")
    return found


def load_build_script():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "scripts" / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_lesson_is_a_pair():
    assert LESSON_STEMS, "no lesson found in notebooks/"
    for stem in LESSON_STEMS:
        assert (TEXTS / f"{stem}.py").is_file(), f"{stem}.ipynb has no text file text/{stem}.py"
        assert (NOTEBOOKS / f"{stem}.ipynb").is_file(), \
            f"{stem}.py has no notebook: run `.venv/bin/python scripts/build_notebooks.py {stem[:2]}`"


@pytest.mark.parametrize("stem", LESSON_STEMS)
def test_notebook_holds_its_text_files_cells(stem):
    found = differences(NOTEBOOKS / f"{stem}.ipynb", TEXTS / f"{stem}.py")
    assert not found, (f"{stem}.ipynb is out of sync with {stem}.py (rebuild it: "
                       f"`.venv/bin/python scripts/build_notebooks.py {stem[:2]}`):\n" + "\n".join(found))


@pytest.mark.parametrize("stem", LESSON_STEMS)
def test_both_files_declare_the_pairing(stem):
    """JupyterLab (jupytext's contents manager) pairs the two files by this metadata."""
    assert nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4).metadata["jupytext"]["formats"] == PAIRING
    text = jupytext.read(TEXTS / f"{stem}.py")
    assert text.metadata["jupytext"]["formats"] == PAIRING
    assert text.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    assert text.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("stem", LESSON_STEMS)
def test_text_file_is_what_jupyterlab_writes(stem):
    """Saving the lesson in JupyterLab writes the text file from the notebook: it must come out
    byte for byte as it is (else a save rewrites it, and jupytext may refuse to open an .ipynb that
    is newer than a text file it disagrees with). The build normalises it."""
    written = load_build_script().as_jupyterlab_writes(nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4))
    assert (TEXTS / f"{stem}.py").read_text() == written, \
        f"text/{stem}.py is not as JupyterLab writes it: run `.venv/bin/python scripts/build_notebooks.py {stem[:2]}`"


def test_an_edited_text_file_is_caught(tmp_path):
    """The check fails for real: a changed sentence, a lost tag and an added cell are each found."""
    stem = "01-discovery"
    notebook = shutil.copy(NOTEBOOKS / f"{stem}.ipynb", tmp_path)
    text = tmp_path / f"{stem}.py"
    original = (TEXTS / f"{stem}.py").read_text()
    assert differences(Path(notebook), TEXTS / f"{stem}.py") == []

    text.write_text(original.replace("# ## Step 1.", "# ## Step One.", 1))
    assert any("source differs" in d for d in differences(Path(notebook), text))

    text.write_text(original.replace('# %% tags=["nbval-ignore-output"]', "# %%", 1))
    assert any("tags differs" in d for d in differences(Path(notebook), text))

    text.write_text(original + '\n# %%\nprint("one more cell")\n')
    assert differences(Path(notebook), text)[-1].endswith(f"in {stem}.py")


def test_build_script_lists_every_text_file():
    build = load_build_script()
    assert list(build.lesson_texts()) == sorted(p.stem for p in TEXTS.glob("[0-9][0-9]-*.py"))


@pytest.mark.parametrize("stem", LESSON_STEMS)
def test_build_gives_the_stored_ids_and_metadata(stem):
    """The build's notebook (before execution) has the stored notebook's cell ids, kernel and pairing:
    rebuilding a lesson whose text did not change changes nothing but outputs."""
    built = load_build_script().notebook_from_text(TEXTS / f"{stem}.py")
    stored = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert [c.id for c in built.cells] == [c.id for c in stored.cells]
    assert cells_of(built) == cells_of(stored)
    for key in ("kernelspec", "jupytext"):
        assert built.metadata[key] == stored.metadata[key]

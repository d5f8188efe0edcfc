"""Every lesson in a real JupyterLab 4 and Chromium, as a learner meets it (issue 19, items 6 and 7):

* opened and scrolled to the end, the committed lesson is not marked unsaved (nothing asks to save
  it on close);
* Run All takes what its "Time needed" says ("Run All takes about N seconds": within 1.5x;
  "under N seconds": at most N), measured in the page from the click to the last cell done. The
  machine may be busy with other jobs: a time outside the bounds is measured once more, in a fresh
  kernel, and the faster of the two counts (a failure names both and the load average).

Each lesson's measured time is written to ``run-all-times.txt`` in the shots folder.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (it is pinned in "
                    "requirements-test.txt: run `make test-setup`)")

from tests.notebooks.prose import stated_run_time

from .lab import (KERNEL_READY_JS, LAYOUT_SETTLED_JS, OPEN_TIMEOUT_MS, errors_in_outputs, open_notebook, run_all,
                  shot)

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
RATIO = 1.5

# scroll the open notebook to its end a screen at a time, as a learner's wheel does, letting
# JupyterLab render each screen (its windowed notebook draws cells, outputs and widgets as they come
# into view); the number of screens scrolled
SCROLL_TO_END_JS = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    const box = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
    const frame = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
    let screens = 0;
    for (let last = -1; box.scrollTop !== last && screens < 500; screens++) {
        last = box.scrollTop;
        box.scrollTop += box.clientHeight * 0.8;
        await frame();
    }
    return screens;
}"""

# what JupyterLab draws after a cell comes into view has been drawn: every image loaded (charts, a
# Mermaid diagram), no widget still "Loading widget...", no Mermaid block still waiting for its drawing
DRAWN_JS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const node = panel.content.node;
    return [...node.querySelectorAll('img')].every(img => img.complete)
        && ![...node.querySelectorAll('.jp-OutputArea-output')].some(o => o.textContent.startsWith('Loading widget'))
        && ![...node.querySelectorAll('.jp-RenderedMarkdown pre > code.language-mermaid, .jp-RenderedMarkdown pre > code.mermaid')
             ].some(code => !code.closest('figure, details'));
}"""

# Kernel ▸ Restart through JupyterLab's own session (resolves once the new kernel is up)
RESTART_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"

DIRTY_JS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    return {model: panel.context.model.dirty,
            tab: !!document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')};
}"""


@pytest.fixture(scope="module")
def times(shots):
    measured: dict[str, tuple[str, float]] = {}
    yield measured
    lines = [f"{name}: {stated}, measured {seconds:.1f} s" for name, (stated, seconds) in sorted(measured.items())]
    (shots / "run-all-times.txt").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_opens_unchanged_and_runs_all_in_its_stated_time(page, lab, shots, times, name):
    found = stated_run_time(ROOT / "notebooks" / "text" / name.replace(".ipynb", ".py"))
    assert found, f"{name}: 'Time needed' states no Run All time"
    how, stated = found

    lab.restore(name)  # the committed lesson, not the copy test_lessons_in_lab.py saved after its Run All
    open_notebook(page, lab, name)
    screens = page.evaluate(SCROLL_TO_END_JS)
    page.wait_for_function(DRAWN_JS, polling=100)
    page.evaluate(LAYOUT_SETTLED_JS)
    dirty = page.evaluate(DIRTY_JS)
    shot(page, shots, f"{name[:2]}-opened-scrolled")

    seconds = [run_all(page)]
    assert errors_in_outputs(page) == []
    if not holds(how, stated, seconds[0]):  # a busy machine (other jobs): measure once more, in a fresh kernel
        page.evaluate(RESTART_JS)
        page.wait_for_function(KERNEL_READY_JS, arg=name, timeout=OPEN_TIMEOUT_MS, polling=100)
        seconds.append(run_all(page))
    best = min(seconds)
    times[name] = (f"{how} {stated} s", best)
    assert dirty == {"model": False, "tab": False}, \
        f"{name}: opened and scrolled ({screens} screens), the lesson is marked unsaved: {dirty}"
    measured = " and ".join(f"{s:.1f} s" for s in seconds)
    load = "load average %.1f %.1f %.1f" % os.getloadavg()
    assert holds(how, stated, best), (f"{name}: says Run All takes {how} {stated} s, the browser measured {measured} "
                                      f"({'more than' if how == 'under' else f'more than {RATIO}x apart from'} "
                                      f"the stated time; {load})")


def holds(how: str, stated: float, seconds: float) -> bool:
    """"under N seconds": at most N; "about N seconds": within ``RATIO`` of N either way."""
    if how == "under":
        return seconds <= stated
    return max(seconds / stated, stated / seconds) <= RATIO

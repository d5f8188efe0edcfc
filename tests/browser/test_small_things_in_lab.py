"""Small things a learner met in a real JupyterLab 4 (issue 19, item 8): the glossary opens rendered
from the file browser, the send form's event log shows its newest event without scrolling, and a
Mermaid diagram stays readable in the dark theme.

The form is tried in a notebook of its own, written into the lab's folder by the test (an echo agent
in a unit of its own), so the check does not depend on a lesson's wording.
"""
from __future__ import annotations

import json

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (it is pinned in "
                             "requirements-test.txt: run `make test-setup`)").expect

from a2a_nb.notebook.widgets import EVENT_LOG_CLASS

from .lab import cell_with, errors_in_outputs, open_notebook, run_all, shot
from .test_lessons_in_lab import THEME_JS, THEME_LOADED_JS

pytestmark = pytest.mark.timeout(300)

# the document JupyterLab shows in the current tab: its content's CSS classes, its text editors
CURRENT_WIDGET_JS = """() => {
    const w = window.jupyterapp.shell.currentWidget;
    return {content: [...w.content.node.classList], editors: w.node.querySelectorAll('.cm-editor').length};
}"""


def test_glossary_opens_rendered_from_the_file_browser(page, lab, shots):
    """A double click on glossary.md in the file browser shows it rendered (JupyterLab's Markdown
    Preview, scripts/jupyterlab-overrides.json), not as Markdown source in the text editor."""
    page.goto(lab.home_url())
    page.locator(".jp-DirListing-itemText").get_by_text("glossary.md", exact=True).dblclick()
    expect(page.locator(".lm-TabBar-tab.jp-mod-current")).to_contain_text("glossary.md")
    page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                           " return !!w && !!w.context && w.context.path === 'glossary.md'; }")
    shown = page.locator(".jp-MarkdownViewer:not(.lm-mod-hidden) .jp-RenderedMarkdown")
    expect(shown.locator("h1[data-jupyter-id='Glossary']")).to_have_count(1)  # rendered headings, with anchors
    expect(shown.locator("h3[data-jupyter-id='Correlation-Data']")).to_have_count(1)
    current = page.evaluate(CURRENT_WIDGET_JS)
    shot(page, shots, "glossary-from-file-browser")
    assert "jp-MarkdownViewer" in current["content"], f"glossary.md opened in {current['content']}"
    assert current["editors"] == 0, "glossary.md opened as Markdown source in the text editor"


FORM_NOTEBOOK = """\
import uuid
from a2a_nb import Requester, Responder
from a2a_nb.story.cast import echo_card, echo_handler
from a2a_nb.notebook import send_form

unit = "form-scroll-" + uuid.uuid4().hex[:8]
echo = Responder("echo", echo_handler, unit=unit, card=echo_card(unit=unit))
me = Requester("form-user", unit=unit)
form = send_form(me, ["echo"])
for i in range(40):
    form.log(f"an older event {i}")
form.text.value = "the newest event"
form"""

# where a line of the form's event log is, compared with the log's visible box (it scrolls)
LINE_IN_VIEW_JS = """([area, needle]) => {
    const LOG_CLASS = '""" + EVENT_LOG_CLASS + """';
    const view = area.querySelector('.' + LOG_CLASS);
    if (!view) return {error: 'no event view'};
    const box = view.getBoundingClientRect();
    const walker = document.createTreeWalker(view, NodeFilter.SHOW_TEXT);
    let rect = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(needle);
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + needle.length);
        rect = range.getBoundingClientRect();
    }
    return {found: !!rect, visible: !!rect && rect.top >= box.top - 1 && rect.bottom <= box.bottom + 1,
            overflows: view.scrollHeight > view.clientHeight + 20,
            line: rect && [rect.top, rect.bottom], view: [box.top, box.bottom]};
}"""


def test_send_form_log_shows_the_newest_event(page, lab, shots):
    """The form's log is at most 20em high: with more events than fit, the newest stays in view
    (before the click and after the reply), and the oldest has scrolled out of it."""
    name = "form-scroll.ipynb"
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "form-scroll-1", "metadata": {},
                           "outputs": [], "source": FORM_NOTEBOOK}],
                "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                            "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    (lab.root / name).write_text(json.dumps(notebook))
    try:
        open_notebook(page, lab, name)
        run_all(page)
        assert errors_in_outputs(page) == []
        output = cell_with(page, "send_form(me").locator(".jp-Cell-outputArea")
        send = output.get_by_role("button", name="Send")
        send.wait_for(state="visible")
        output.scroll_into_view_if_needed()
        handle = output.element_handle()

        before = _line_seen(page, handle, "an older event 39")
        assert before["overflows"], f"40 lines should not fit the event view: {before}"
        assert not page.evaluate(LINE_IN_VIEW_JS, [handle, "an older event 0"])["visible"]

        send.click()
        expect(output).to_contain_text("echo: the newest event")
        after = _line_seen(page, handle, "echo: the newest event")
        shot(page, shots, "form-log-newest-event")
        assert after["visible"], after
    finally:
        (lab.root / name).unlink(missing_ok=True)


def _line_seen(page, handle, needle: str) -> dict:
    """Wait (generously) until ``needle`` is in the event view's visible box; return the geometry
    either way, so a failure says where the line was."""
    try:
        page.wait_for_function(f"(args) => ({LINE_IN_VIEW_JS})(args).visible", arg=[handle, needle], timeout=15_000)
    except Exception:  # playwright's TimeoutError: the assert of the caller shows the geometry
        pass
    return page.evaluate(LINE_IN_VIEW_JS, [handle, needle])


MERMAID_NOTEBOOK = """\
from a2a_nb.data import recording
from a2a_nb.traffic import load_traffic, mermaid_sequence, show_mermaid

show_mermaid(mermaid_sequence(load_traffic(recording("happy"))))"""

def diagram_as_shown(img) -> dict:
    """The diagram as the page shows it (a screenshot, the page's background included), in its middle
    (the messages; the participants' boxes are above and below): the share of light pixels (a card
    to read on) and of dark ink (labels, lines, arrows) there."""
    from io import BytesIO

    from PIL import Image

    img.scroll_into_view_if_needed()
    shown = Image.open(BytesIO(img.screenshot())).convert("L")
    w, h = shown.size
    middle = shown.crop((int(w * 0.2), int(h * 0.2), int(w * 0.8), int(h * 0.8)))
    counts = middle.histogram()  # pixels per grey level, 0 (black) .. 255 (white)
    total = sum(counts)
    return {"light": sum(counts[201:]) / total, "ink": sum(counts[:110]) / total}


def test_mermaid_diagram_reads_in_both_themes(page, lab, shots):
    """The diagram drawn in the light theme stays readable after a switch to JupyterLab Dark (dark
    ink on its own card, not on the dark page), and so does one drawn in the dark theme."""
    name = "mermaid-theme.ipynb"
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "mermaid-1", "metadata": {},
                           "outputs": [], "source": MERMAID_NOTEBOOK}],
                "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                            "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    (lab.root / name).write_text(json.dumps(notebook))
    try:
        open_notebook(page, lab, name)
        run_all(page)
        assert errors_in_outputs(page) == []
        output = cell_with(page, "show_mermaid(").locator(".jp-Cell-outputArea")
        diagram = output.locator("img").first
        expect(diagram).to_be_visible()
        light = diagram_as_shown(diagram)
        page.evaluate(THEME_JS, "JupyterLab Dark")
        page.wait_for_function(THEME_LOADED_JS, arg="false")
        switched = diagram_as_shown(diagram)
        shot(page, shots, "mermaid-drawn-light-shown-dark")
        run_all(page)  # drawn again, now in the dark theme
        expect(diagram).to_be_visible()
        dark = diagram_as_shown(diagram)
        shot(page, shots, "mermaid-drawn-dark")
        for when, seen in (("drawn light", light), ("drawn light, shown dark", switched), ("drawn dark", dark)):
            assert seen["light"] > 0.8, f"{when}: the messages are not on a light card: {seen}"
            assert seen["ink"] > 0.002, f"{when}: no dark labels or lines on the card: {seen}"
    finally:
        page.evaluate(THEME_JS, "JupyterLab Light")
        page.wait_for_function(THEME_LOADED_JS, arg="true")
        (lab.root / name).unlink(missing_ok=True)

"""The lessons' widgets in a real JupyterLab 4 and Chromium: Run All Cells, use each widget as a
learner would, then save, shut the kernel down and reopen (issue 14, item 4).

One JupyterLab serves the whole module (conftest.py). Every step leaves a screenshot in the
``shots`` folder (``A2A_BROWSER_SHOTS=dir`` keeps them) so a person can see what was checked; a
failing test leaves its last view there too.
"""
from __future__ import annotations

import re

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (it is pinned in "
                             "requirements-test.txt: run `make test-setup`)").expect

from a2a_nb.notebook.player import CHART_DPI, CHART_WIDTH_PX
from a2a_nb.notebook.widgets import OFFLINE_TEXT
from a2a_nb.traffic.charts import SMALL

from .lab import (MODEL_NOT_FOUND, cell_with, errors_in_outputs, open_notebook, resize, run_all, save_and_shut_down, select,
                  shot)

pytestmark = pytest.mark.timeout(300)


def agent_row(output, agent: str):
    """The discovery browser's table row of ``agent`` (its first cell is the agent's name)."""
    return output.locator("table tbody tr").filter(
        has=output.page.locator("td:first-child", has_text=re.compile(f"^{re.escape(agent)}$")))


def test_discovery_browser_after_run_all_shows_what_the_text_says(page, lab, shots):
    """Lesson 01 after Run All: the live browser of step 8 shows the desk and echo online, as its
    text says (the lesson keeps them running until the learner calls clean_up()), and the crashed
    backup desk of step 9 offline by its will; "Try it" said each step; the filter works."""
    open_notebook(page, lab, "01-discovery.ipynb")
    run_all(page)
    shot(page, shots, "01-after-run-all")
    assert errors_in_outputs(page) == []
    cell = cell_with(page, "discovery_browser(disco)")
    cell.scroll_into_view_if_needed()
    box = cell.locator(".jupyter-widgets input[type='text']").first
    box.wait_for(state="visible")
    shot(page, shots, "01-browser-live")
    output = cell.locator(".jp-Cell-outputArea")
    expect(output).to_contain_text("agent(s) on $a2a/v1/discovery/acme/support/+")
    for agent, status in (("ticket-desk", "online"), ("echo", "online"), ("backup-desk", "offline")):
        expect(agent_row(output, agent)).to_contain_text(status)
    tried = cell_with(page, "echo_in_browser()").locator(".jp-Cell-outputArea")
    expect(tried).to_contain_text("the browser above shows echo offline (source lwt)")
    expect(tried).to_contain_text("the browser above shows echo online (source agent)")
    expect(tried).to_contain_text("✓ as described")

    box.fill("root-cause-analysis")
    expect(output).to_contain_text("with skill tags root-cause-analysis")
    shot(page, shots, "01-browser-filtered")
    expect(agent_row(output, "ticket-desk")).to_have_count(1)
    expect(agent_row(output, "echo")).to_have_count(0)  # echo has no such skill: the filter hid it
    box.fill("")
    expect(agent_row(output, "echo")).to_have_count(1)

    reopened_shows(page, lab, shots, "01-discovery.ipynb", "discovery_browser(disco)", "ticket-desk")


def test_send_form_sends_and_continues_after_run_all(page, lab, shots):
    open_notebook(page, lab, "02-send-and-track.ipynb")
    run_all(page)
    assert errors_in_outputs(page) == []
    cell = cell_with(page, "send_form(coordinator")
    cell.scroll_into_view_if_needed()
    output = cell.locator(".jp-Cell-outputArea")
    send = output.get_by_role("button", name="Send")
    send.wait_for(state="visible")
    shot(page, shots, "02-form-live")
    send.click()  # the ticket text is filled in: the desk's analyst asks for reproduction steps
    expect(output).to_contain_text("→ SendMessage to ticket-desk")
    expect(output).to_contain_text("task input-required")
    shot(page, shots, "02-form-input-required")
    follow = output.get_by_label("continue the last task")
    expect(follow).to_be_enabled()
    follow.check()
    output.locator("input[type='text']").fill("1. check out 2. the status stays 'pending'")
    send.click()
    expect(output).to_contain_text("→ continue task")
    page.wait_for_function(
        "(el) => /continue task[\\s\\S]*← /.test(el.innerText)", arg=output.element_handle(), timeout=30_000)
    shot(page, shots, "02-form-continued")
    assert "✗" not in output.inner_text()  # the form showed no error line

    # the saved state keeps what the form showed; its line says how to use it again, and that works
    reopened_shows(page, lab, shots, "02-send-and-track.ipynb", "send_form(coordinator", "→ continue task")
    output = follow_the_offline_line(page, shots, "02-send-and-track.ipynb", "send_form(coordinator")
    send = output.get_by_role("button", name="Send")
    send.wait_for(state="visible")
    send.click()
    expect(output).to_contain_text("task input-required")
    shot(page, shots, "02-form-after-the-line")
    assert "✗" not in output.inner_text()


def test_handover_after_run_all_shows_each_step_then_a_live_view(page, lab, shots):
    """Lesson 05 after Run All: the routing table snapshot under "It is empty for now" is empty, the
    one of step 2 routes the task to the desk, the one of step 3 to the analyst; the live view of
    "Your turn" refreshes."""
    open_notebook(page, lab, "05-handover.ipynb")
    run_all(page)
    assert errors_in_outputs(page) == []
    steps = (("empty = routing_snapshot(coordinator)", "no task in the routing table yet", "05-step1-empty"),
             ("before = routing_snapshot(coordinator)", "no reroute", None),
             ("after = routing_snapshot(coordinator)", "a2a-responder-agent-id=analyst-1", "05-step3-after"))
    for source, text, name in steps:
        shown = cell_with(page, source).locator(".jp-Cell-outputArea")
        shown.scroll_into_view_if_needed()
        expect(shown).to_contain_text(text)
        if name:
            shot(page, shots, name)
    expect(cell_with(page, "before = routing_snapshot(coordinator)")).not_to_contain_text("analyst-1")

    cell = cell_with(page, "view = routing_table_view(coordinator)")
    cell.scroll_into_view_if_needed()
    output = cell.locator(".jp-Cell-outputArea")
    refresh = output.get_by_role("button", name="Refresh")
    refresh.wait_for(state="visible")
    expect(output).to_contain_text("handover")
    before = output.inner_text()  # "refreshed at" the time of Run All, to the millisecond
    refresh.click()
    page.wait_for_function("([el, old]) => el.innerText !== old", arg=[output.element_handle(), before])
    shot(page, shots, "05-view-refreshed")
    assert "refreshed at" in output.inner_text()

    reopened_shows(page, lab, shots, "05-handover.ipynb", "view = routing_table_view(coordinator)", "handover")


def test_player_steps_and_plays_after_run_all(page, lab, shots):
    open_notebook(page, lab, "07-traffic-analysis.ipynb")
    run_all(page)
    assert errors_in_outputs(page) == []
    cell = cell_with(page, "player = TrafficPlayer(happy)")
    cell.scroll_into_view_if_needed()
    output = cell.locator(".jp-Cell-outputArea")
    view = output.locator(".a2a-step")
    view.wait_for(state="visible")
    start = int(view.get_attribute("data-i"))
    output.get_by_role("button", name="▶").click()  # next message
    expect(view).to_have_attribute("data-i", str(start + 1))
    shot(page, shots, "07-player-next")
    output.locator(".widget-play button").first.click()  # Play: one message every interval
    shot(page, shots, "07-player-playing")
    expect(view).to_have_attribute("data-i", str(start + 2), timeout=15_000)
    expect(view).to_have_attribute("data-i", str(start + 3), timeout=15_000)
    output.locator(".widget-play button").first.click()  # Pause
    shot(page, shots, "07-player-played")

    for width in (1280, 1800, 2400):  # the chart keeps its shape and the payload stays in view
        resize(page, width, 1000)
        cell.scroll_into_view_if_needed()
        m = player_geometry(output)
        shot(page, shots, f"07-player-{width}px")
        assert abs(m["shown_ratio"] - m["png_ratio"]) < 0.02 * m["png_ratio"], f"chart stretched at {width} px: {m}"
        assert m["scroll_width"] <= m["client_width"] + 1, f"player scrolls sideways at {width} px: {m}"
        assert m["payload_right"] <= m["area_right"] + 1, f"payload cut off at {width} px: {m}"
        # drawn at the size it is shown: the chart's smallest text (SMALL points at CHART_DPI) on screen
        assert m["natural_width"] == CHART_WIDTH_PX, f"the kernel drew the chart {m['natural_width']} px wide: {m}"
        label_px = SMALL * CHART_DPI / 72 * m["shown_width"] / m["natural_width"]
        assert label_px >= 9, f"chart labels {label_px:.1f} px on screen at {width} px: {m}"
        assert set(m["topic_breaks"]) <= {"/"}, f"a topic wraps inside a level at {width} px: {m}"
        assert m["topic_breaks"] or width > 1280, f"at 1280 px the reply topic wraps (after a '/'): {m}"
    resize(page, 1280, 900)

    dark_theme_shows_the_charts(page, shots, output)

    reopened_shows(page, lab, shots, "07-traffic-analysis.ipynb", "player = TrafficPlayer(happy)", "message #")
    output = follow_the_offline_line(page, shots, "07-traffic-analysis.ipynb", "player = TrafficPlayer(happy)")
    view = output.locator(".a2a-step")
    view.wait_for(state="visible")
    start = int(view.get_attribute("data-i"))
    output.get_by_role("button", name="▶").click()
    expect(view).to_have_attribute("data-i", str(start + 1))
    shot(page, shots, "07-player-after-the-line")


def reopened_shows(page, lab, shots, notebook: str, source: str, text: str) -> None:
    """Save, shut the kernel down and reopen ``notebook`` (JupyterLab starts a new kernel): the widget
    cell whose source holds ``source`` shows ``text`` (the saved widget or its snapshot), never
    "model not found", and says what to do to use it (``OFFLINE_TEXT``, a line that is hidden while
    the widget's kernel is live). Saving leaves the lesson's text file as it was."""
    cell = cell_with(page, source)
    expect(cell.locator(".a2a-offline-note")).to_be_hidden()  # live: the line does not show
    text_file = lab.root / "text" / notebook.replace(".ipynb", ".py")
    before = text_file.read_bytes()
    save_and_shut_down(page)
    assert text_file.read_bytes() == before, f"saving {notebook} in JupyterLab rewrote {text_file.name}"
    open_notebook(page, lab, notebook)
    cell = cell_with(page, source)
    cell.scroll_into_view_if_needed()
    shown = cell.locator(".jp-Cell-outputArea")
    expect(shown).to_contain_text(text)
    expect(shown).not_to_contain_text(MODEL_NOT_FOUND)
    note = shown.locator(".a2a-offline-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text(OFFLINE_TEXT)
    cell.scroll_into_view_if_needed()
    shot(page, shots, f"{notebook[:2]}-reopened")


def follow_the_offline_line(page, shots, notebook: str, source: str):
    """In the reopened ``notebook``, do exactly what the widget's offline line says (select the cell,
    Run ▸ Run All Above Selected Cell, then Run ▸ Run Selected Cell): nothing raises, and the
    widget's new view is live (the line hidden). Returns the cell's output area."""
    cell = cell_with(page, source)
    assert "Run > Run All Above Selected Cell, then run this cell" in OFFLINE_TEXT  # what is done here
    select(page, cell)
    run_all(page, "notebook:run-all-above")
    select(page, cell)
    run_all(page, "runmenu:run")
    assert errors_in_outputs(page) == []
    output = cell_with(page, source).locator(".jp-Cell-outputArea")
    expect(output.locator(".a2a-offline-note")).to_be_hidden()
    shot(page, shots, f"{notebook[:2]}-after-the-line")
    return output


def test_lesson_folder_lists_each_lesson_once(page, lab, shots):
    """The file browser shows each lesson once (its text file sits in text/) and the glossary."""
    page.goto(lab.home_url())
    items = page.locator(".jp-DirListing-itemText")
    expect(items.first).to_be_visible()
    names = items.all_inner_texts()
    shot(page, shots, "lesson-folder")
    lessons = sorted(p.name for p in lab.root.glob("[0-9][0-9]-*.ipynb"))
    assert len(lessons) >= 10
    assert sorted(n for n in names if n[:2].isdigit()) == lessons, names
    assert "glossary.md" in names and "text" in names


def test_glossary_link_opens_its_entry(page, lab, shots):
    """A glossary link in a lesson opens glossary.md rendered, scrolled to the entry."""
    open_notebook(page, lab, "05-handover.ipynb")
    # JupyterLab writes the link as .../files/glossary.md?_xsrf=...#Entry
    link = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown a[href*='glossary.md']").first
    link.scroll_into_view_if_needed()
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    expect(page.locator(".lm-TabBar-tab.jp-mod-current")).to_contain_text("glossary.md")
    heading = page.locator(f".jp-RenderedMarkdown [data-jupyter-id='{target}']")  # JupyterLab's heading anchor
    expect(heading).to_be_in_viewport()
    shot(page, shots, "glossary-entry")


def player_geometry(output) -> dict:
    """Sizes in the player's output: the chart's shape as shown and as drawn, whether the player
    scrolls sideways, where the JSON payload ends compared with the output area, and the character
    before each line break inside the packet table's topics (``/`` when topics wrap between levels)."""
    return output.evaluate("""(area) => {
        const img = area.querySelector('.widget-image, img');
        const step = area.querySelector('.a2a-step');
        const pres = step ? [...step.querySelectorAll('pre')] : [];
        const box = img.getBoundingClientRect();
        const scroller = area.querySelector('.jp-OutputArea-output') || area;
        const breaks = [];
        for (const code of step ? step.querySelectorAll('td > code') : []) {
            if (!code.textContent.startsWith('$a2a/')) continue;
            const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
            let top = null, before = null;
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                for (let k = 0; k < node.length; k++) {
                    const range = document.createRange();
                    range.setStart(node, k);
                    range.setEnd(node, k + 1);
                    const rect = range.getClientRects()[0];
                    if (!rect) continue;
                    if (top !== null && rect.top > top + 2) breaks.push(before);
                    top = rect.top;
                    before = node.data[k];
                }
            }
        }
        return {shown_ratio: box.width / box.height, png_ratio: img.naturalWidth / img.naturalHeight,
                shown_width: box.width, natural_width: img.naturalWidth, topic_breaks: breaks,
                scroll_width: scroller.scrollWidth, client_width: scroller.clientWidth,
                payload_right: Math.max(0, ...pres.map(p => p.getBoundingClientRect().right)),
                area_right: area.getBoundingClientRect().right};
    }""")


THEME_JS = """(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})"""
# the theme is applied and JupyterLab's splash (shown while a theme loads) has gone
THEME_LOADED_JS = """(light) => document.body.dataset.jpThemeLight === light
                                && !document.querySelector('#jupyterlab-splash')"""
# the corners and the middle of the chart as the page shows it: transparent around the card, opaque on it
CARD_ALPHA_JS = """(area) => {
    const img = area.querySelector('.widget-image, img');
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const alpha = (x, y) => ctx.getImageData(x, y, 1, 1).data[3];
    return {corner: alpha(0, 0), middle: alpha(img.naturalWidth >> 1, img.naturalHeight >> 1)};
}"""


def dark_theme_shows_the_charts(page, shots, player_output) -> None:
    """JupyterLab Dark: the player's chart and the lesson's charts are cards (transparent corners,
    an opaque white panel), screenshots for a person to look at; the light theme comes back."""
    try:
        page.evaluate(THEME_JS, "JupyterLab Dark")
        page.wait_for_function(THEME_LOADED_JS, arg="false")
        player_output.scroll_into_view_if_needed()
        shot(page, shots, "07-player-dark")
        alpha = player_output.evaluate(CARD_ALPHA_JS)
        assert alpha == {"corner": 0, "middle": 255}, f"the player's chart is not a card: {alpha}"
        for source, name in (("display(reroute_chart(df, names=TASKS))", "reroute"),
                             ("display(state_timeline(df, names=TASKS))", "states"),
                             ('seq = sequence_chart(happy', "sequence")):
            chart = cell_with(page, source).locator(".jp-Cell-outputArea img").first
            chart.scroll_into_view_if_needed()
            shot(page, shots, f"07-{name}-dark")
            alpha = chart.evaluate(CARD_ALPHA_JS.replace("area.querySelector('.widget-image, img')", "area"))
            assert alpha == {"corner": 0, "middle": 255}, f"the {name} chart is not a card: {alpha}"
    finally:
        page.evaluate(THEME_JS, "JupyterLab Light")
        page.wait_for_function(THEME_LOADED_JS, arg="true")

"""The lessons' widgets in a real JupyterLab 4 and Chromium: Run All Cells, use each widget as a
learner would, then save, shut the kernel down and reopen (issue 14, item 4).

One JupyterLab serves the whole module (conftest.py). Every step leaves a screenshot in the
``shots`` folder (``A2A_BROWSER_SHOTS=dir`` keeps them) so a person can see what was checked.
"""
from __future__ import annotations

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (it is pinned in "
                             "requirements.txt: run `make setup`)").expect

from .lab import (MODEL_NOT_FOUND, cell_with, dismiss_news, errors_in_outputs, open_notebook, open_reopened, run_all,
                  save_and_shut_down,
                  shot)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def page(browser):
    p = browser.new_page()
    p.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)
    dismiss_news(p)
    yield p
    p.close()


def test_discovery_browser_filters_after_run_all(page, lab, shots):
    open_notebook(page, lab, "01-discovery.ipynb")
    run_all(page)
    shot(page, shots, "01-after-run-all")
    assert errors_in_outputs(page) == []
    cell = cell_with(page, "discovery_browser(disco)")
    cell.scroll_into_view_if_needed()
    box = cell.locator(".jupyter-widgets input[type='text']").first
    box.wait_for(state="visible")
    shot(page, shots, "01-browser-live")
    output = cell.locator(".jp-OutputArea")
    expect(output).to_contain_text("2 of 2 agent(s)")
    box.fill("root-cause-analysis")
    expect(output).to_contain_text("1 of 2 agent(s) on $a2a/v1/discovery/acme/support/+ with skill tags "
                                   "root-cause-analysis")
    shot(page, shots, "01-browser-filtered")
    rows = output.locator("table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("ticket-desk")  # echo has no such skill: the filter hid it
    box.fill("")
    expect(output).to_contain_text("2 of 2 agent(s)")
    expect(rows).to_have_count(2)

    save_and_shut_down(page)
    open_reopened(page, lab, "01-discovery.ipynb")
    shot(page, shots, "01-reopened")
    cell = cell_with(page, "discovery_browser(disco)")
    cell.scroll_into_view_if_needed()
    shown = cell.locator(".jp-OutputArea").inner_text()
    assert MODEL_NOT_FOUND not in shown
    assert "ticket-desk" in shown

"""What a person does in JupyterLab 4, as playwright steps: open a notebook, Run All Cells, wait
for the kernel, save, shut the kernel down, reopen. Menu items are found by their JupyterLab
command id (``data-command``), not by position."""
from __future__ import annotations

from pathlib import Path

RUN_ALL_TIMEOUT_MS = 120_000
MODEL_NOT_FOUND = "model not found"


KERNEL_DIALOG = ".jp-Dialog"  # JupyterLab's "Select Kernel" question
READY_JS = """() => {
    if (document.querySelector('.jp-Dialog')) return true;
    const ind = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
    const bar = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar');
    return (ind && ind.getAttribute('data-status') === 'idle') || (bar && bar.innerText.includes('No Kernel'));
}"""


def open_notebook(page, lab, name: str) -> None:
    """Open ``name`` and wait until its kernel is idle. JupyterLab may first ask which kernel to
    start: a person keeps the notebook's own (*Select*)."""
    _open(page, lab, name, answer="Select")
    wait_idle(page, timeout_ms=60_000)


def open_reopened(page, lab, name: str) -> None:
    """Open ``name`` again after its kernel was shut down, as a person reading yesterday's work does
    (*No Kernel* if JupyterLab asks; it may also start one by itself)."""
    _open(page, lab, name, answer="No Kernel")


def _open(page, lab, name: str, answer: str) -> None:
    page.goto(lab.notebook_url(name))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    page.wait_for_function(READY_JS, timeout=60_000, polling=200)  # asked, or the kernel settled
    dialog = page.locator(KERNEL_DIALOG, has_text="Select Kernel")
    if dialog.count():
        dialog.get_by_role("button", name=answer, exact=True).click()
        dialog.wait_for(state="hidden")
    news = page.locator(".jp-Notification-Toast", has_text="Jupyter news")
    if news.count():  # out of the screenshots' way
        news.get_by_role("button", name="No").click()


def dismiss_news(page) -> None:
    """Answer JupyterLab's "notified about official Jupyter news?" toast with *No* whenever it shows."""
    news = page.locator(".jp-Notification-Toast", has_text="Jupyter news")
    page.add_locator_handler(news, lambda loc: loc.get_by_role("button", name="No").click())


def command(page, menu: str, command_id: str) -> None:
    """Click ``menu`` in the menu bar, then the item that runs ``command_id``."""
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(f".lm-Menu-item[data-command='{command_id}']").first.click()


def wait_idle(page, timeout_ms: int = RUN_ALL_TIMEOUT_MS) -> None:
    """Until the kernel is idle and no cell prompt shows ``[*]`` (running or queued)."""
    page.wait_for_function(
        """() => {
            const ind = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
            const busy = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputPrompt')]
                .some(p => p.textContent.includes('*'));
            return ind && ind.getAttribute('data-status') === 'idle' && !busy;
        }""", timeout=timeout_ms, polling=250)


def run_all(page) -> None:
    """Run ▸ Run All Cells, then wait until every cell ran."""
    command(page, "Run", "runmenu:run-all")
    page.wait_for_timeout(500)  # let the first cell go busy
    wait_idle(page)


def errors_in_outputs(page) -> list[str]:
    """The tracebacks shown in the open notebook (a cell that raised; Run All stops there)."""
    texts = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").all_inner_texts()
    return [t for t in texts if "Traceback (most recent call last)" in t or t.lstrip().startswith("-" * 20)]


def cell_with(page, text: str):
    """The code cell whose source contains ``text``."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell", has_text=text).first


def save_and_shut_down(page) -> None:
    """File ▸ Save Notebook, then Kernel ▸ Shut Down Kernel."""
    from playwright.sync_api import expect

    command(page, "File", "docmanager:save")
    expect(page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")).to_have_count(0)
    command(page, "Kernel", "kernelmenu:shutdown")
    expect(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar")).to_contain_text("No Kernel")


def shot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


"""What a person does in JupyterLab 4, as playwright steps: open a notebook from the file browser,
Run All Cells, save, shut the kernel down, reopen. Menu items are found by their JupyterLab command
id (``data-command``), not by position.

Every wait is on a readiness signal JupyterLab itself holds, read through ``window.jupyterapp``
(conftest.py starts Lab with ``expose_app_in_browser``), never on a fixed sleep:

* *kernel specs known* before a notebook opens. JupyterLab picks the notebook's kernel from the
  kernel specs; a notebook opened before they have loaded gets a "Select Kernel" question instead;
* *kernel idle* before Run All: the notebook's session has a kernel, connected and idle. The
  execution indicator alone is not enough: it reads ``idle`` for up to two seconds before any kernel
  exists, and a Run All clicked then leaves cells unexecuted (``[ ]:``), the root cause of the old
  flake;
* *every cell ran*: the kernel announced an ``execute_input`` for every code cell (or a cell raised),
  then went idle with no cell still queued.
"""
from __future__ import annotations

from pathlib import Path

RUN_ALL_TIMEOUT_MS = 120_000
OPEN_TIMEOUT_MS = 60_000
MODEL_NOT_FOUND = "model not found"

SPECS_LOADED_JS = "() => !!(window.jupyterapp && window.jupyterapp.serviceManager.kernelspecs.specs)"

# true once `name` is the current tab and its kernel is connected and idle; the dialog's text if
# JupyterLab asks something instead (the caller fails with it rather than waiting it out)
KERNEL_READY_JS = """(name) => {
    const dialog = document.querySelector('.jp-Dialog');
    if (dialog) return 'JupyterLab asked: ' + dialog.innerText.replace(/\\s+/g, ' ');
    const panel = window.jupyterapp.shell.currentWidget;
    if (!panel || !panel.context || panel.context.path !== name || !panel.context.isReady) return false;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""

# count, from the kernel's own broadcast, the code cells that start running (and the errors: all of
# them for Run All, those above the selected cell for Run All Above, one for Run Selected Cell); the
# clock starts when JupyterLab executes the Run command (the learner's click) and stops at the
# kernel's last "idle" (the last cell done, its outputs sent before it)
START_COUNTING_JS = """(commandId) => {
    const app = window.jupyterapp;
    const panel = app.shell.currentWidget;
    const cells = panel.content.widgets;
    const code = c => c.model.type === 'code' && c.model.sharedModel.getSource().trim();
    const active = panel.content.activeCellIndex;
    const expected = commandId === 'notebook:run-all-above' ? cells.slice(0, active).filter(code).length
                   : commandId === 'runmenu:run' ? 1 : cells.filter(code).length;
    const run = {expected, started: 0, errors: [], t0: null, idle: null};
    const count = (_, msg) => {
        const type = msg.header.msg_type;
        if (type === 'execute_input') run.started += 1;
        if (type === 'error') run.errors.push(msg.content.ename + ': ' + msg.content.evalue);
        if (type === 'status' && msg.content.execution_state === 'idle') run.idle = performance.now();
    };
    const clicked = (_, args) => { if (args.id === commandId && run.t0 === null) run.t0 = performance.now(); };
    panel.sessionContext.iopubMessage.connect(count);
    app.commands.commandExecuted.connect(clicked);
    run.stop = () => { panel.sessionContext.iopubMessage.disconnect(count); app.commands.commandExecuted.disconnect(clicked); };
    window.a2aRun = run;
}"""

RUN_FINISHED_JS = """() => {
    const run = window.a2aRun;
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    const queued = [...panel.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
    if ((run.started < run.expected && !run.errors.length) || !kernel || kernel.status !== 'idle' || queued) return false;
    run.stop();
    return {expected: run.expected, started: run.started, errors: run.errors,
            seconds: run.t0 === null || run.idle === null ? null : (run.idle - run.t0) / 1000};
}"""

# two animation frames: Lumino has laid the panels out again after a resize
LAYOUT_SETTLED_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def open_notebook(page, lab, name: str) -> None:
    """Open JupyterLab, then double-click ``name`` in the file browser, as a person does, and wait
    until its kernel (the notebook's own, started by JupyterLab) is idle. Used for a reopen too."""
    page.goto(lab.home_url())
    page.wait_for_function(SPECS_LOADED_JS, timeout=OPEN_TIMEOUT_MS, polling=100)
    page.locator(".jp-DirListing-itemText").get_by_text(name, exact=True).dblclick()
    ready = page.wait_for_function(KERNEL_READY_JS, arg=name, timeout=OPEN_TIMEOUT_MS, polling=100).json_value()
    assert ready is True, f"opening {name}: {ready}"


def command(page, menu: str, command_id: str) -> None:
    """Click ``menu`` in the menu bar, then the item that runs ``command_id``."""
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(f".lm-Menu-item[data-command='{command_id}']").first.click()


def run_all(page, command_id: str = "runmenu:run-all") -> float:
    """Run ▸ Run All Cells (or another item of the Run menu: ``notebook:run-all-above``,
    ``runmenu:run`` for the selected cell), then wait until every code cell it runs ran and the
    kernel is idle again; return the seconds it took as the page saw them (the click to the last
    cell done). A cell that raises stops the run: the test fails naming the error."""
    page.evaluate(START_COUNTING_JS, command_id)
    command(page, "Run", command_id)
    run = page.wait_for_function(RUN_FINISHED_JS, timeout=RUN_ALL_TIMEOUT_MS, polling=250).json_value()
    assert not run["errors"], f"{command_id} stopped at an error: {run['errors']}"
    assert run["started"] == run["expected"], f"{command_id} ran {run['started']} of {run['expected']} code cells"
    assert run["seconds"] is not None, f"{command_id} was not seen to start or end: {run}"
    return run["seconds"]


def select(page, cell) -> None:
    """Select ``cell`` as a learner does: a click on its prompt (left of its source)."""
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.wait_for_function("(el) => el.classList.contains('jp-mod-active')", arg=cell.element_handle())


def errors_in_outputs(page) -> list[str]:
    """The tracebacks shown in the open notebook (also those printed by a background thread)."""
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


def resize(page, width: int, height: int) -> None:
    """Set the window size and wait until JupyterLab has laid itself out again."""
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(LAYOUT_SETTLED_JS)


def shot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path

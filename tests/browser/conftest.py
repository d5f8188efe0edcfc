"""One JupyterLab for the browser tests, driven by Debian's Chromium through playwright.

JupyterLab runs from the venv on a temporary copy of ``notebooks/`` (the lessons find the kit's data inside the
package, as they do outside the checkout), with ``A2A_BROKER_URL`` pointing at the test session's Mosquitto
(tests/conftest.py sets it before this module starts the server, and the kernels inherit it).
Lab exposes its application object (``window.jupyterapp``, as JupyterLab's own galata tests do) so
that lab.py waits on JupyterLab's state rather than on sleeps; the settings of this server only
turn the "Jupyter news?" question off (the venv's overrides.json from scripts/setup.sh applies).

Playwright's own browser download is not used: the tests launch ``/usr/bin/chromium`` (or
``$A2A_CHROMIUM``). Without Chromium or the playwright package the module is skipped, saying which
is missing; where both are present nothing is skipped.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("A2A_CHROMIUM", "/usr/bin/chromium")
# the flags a closed network needs: without the background-networking ones Chromium keeps trying
# (and failing) to reach Google's hosts
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAB_START_TIMEOUT_S = 90
# the "notified about official Jupyter news?" toast, answered *Never* (it would cover the screenshots)
NO_NEWS = ("@jupyterlab/apputils-extension/notification.jupyterlab-settings", {"fetchNews": "false"})


def _missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} not found: install Debian's chromium (`make test-setup` does, as root) to run tests/browser"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (it is pinned in requirements-test.txt: run `make test-setup`)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _missing()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    def __init__(self, url: str, token: str, root: Path, log: Path):
        self.url, self.token, self.root, self.log = url, token, root, log

    def home_url(self) -> str:
        """JupyterLab with its default layout (``reset``: no tab left open by an earlier test)."""
        return f"{self.url}/lab?token={self.token}&reset"

    def restore(self, name: str) -> None:
        """Put the committed ``notebooks/<name>`` back: an earlier test in this server may have saved it."""
        shutil.copyfile(ROOT / "notebooks" / name, self.root / name)

    def shut_down_kernels(self) -> None:
        """Shut every running kernel down (Jupyter's REST API), so no lesson's agents outlive its test."""
        for kernel in self._api("GET", "kernels"):
            self._api("DELETE", f"kernels/{kernel['id']}")

    def _api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


@pytest.fixture(scope="package")
def lab(broker_url, tmp_path_factory):
    """JupyterLab on a copy of the notebooks, started once and stopped after the last browser test."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    home = work / "home"  # settings and workspaces of this server only, not the user's
    for d in ("config", "data", "runtime", "settings", "workspaces"):
        (home / d).mkdir(parents=True)
    news = home / "settings" / NO_NEWS[0]
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps(NO_NEWS[1]))
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, A2A_BROKER_URL=broker_url, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_DATA_DIR=str(home / "data"),  # an empty trust database, as on a fresh machine
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), MPLBACKEND="module://matplotlib_inline.backend_inline")
    cmd = [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", f"--port={port}",
           "--ip=127.0.0.1", f"--ServerApp.token={token}", f"--ServerApp.root_dir={work / 'notebooks'}",
           "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = work / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=work / "notebooks")
    url = f"http://127.0.0.1:{port}"
    server = Lab(url, token, work / "notebooks", log)
    deadline = time.monotonic() + LAB_START_TIMEOUT_S
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start in {LAB_START_TIMEOUT_S} s:\n{server.log_tail()}")
                time.sleep(0.3)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="package")
def browser(lab):
    """Debian's Chromium, headless, with a fresh profile.

    Package-scoped on purpose: while playwright's sync API is alive its event loop counts as running in
    the main thread, so every later ``asyncio.run`` (the SDK tests) would fail with "cannot be called
    from a running event loop". Stopping it after tests/browser gives the rest of the suite a clean thread.
    """
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="a2a-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> Path:
    """Where the screenshots go (``A2A_BROWSER_SHOTS`` to keep them somewhere known)."""
    where = os.environ.get("A2A_BROWSER_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        return Path(where)
    return tmp_path_factory.mktemp("shots")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, for ``page`` to see whether the test failed."""
    outcome = yield
    setattr(item, f"report_{call.when}", outcome.get_result())


@pytest.fixture
def page(request, browser, lab, shots):
    """A fresh tab. When the test fails, its last view is kept (``<test>-failed.png`` and ``.html``
    in the shots folder); afterwards every kernel is shut down, so no lesson's agents outlive it."""
    from playwright.sync_api import expect

    p = browser.new_page()
    p.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)
    yield p
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        p.screenshot(path=str(shots / f"{request.node.name}-failed.png"))
        (shots / f"{request.node.name}-failed.html").write_text(p.content())
    p.close()
    lab.shut_down_kernels()

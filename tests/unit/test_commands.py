"""Helpers of the sub-commands, in-process: the wait of a foreground command, the broker's export line,
and the routes file of ``send``."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from a2a_nb.agents.routes_store import SqliteRoutes
from a2a_nb.commands import roles
from a2a_nb.commands.broker import export_line
from a2a_nb.commands.common import no_card_hint, wait_for_signal
from a2a_nb.protocol.routing import Address, Route


# -- wait_for_signal: Ctrl-C, SIGTERM or the timeout ends it ----------------------------------------------
def test_wait_ends_after_the_timeout_and_restores_the_handlers():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    t = time.monotonic()
    wait_for_signal(0.3)
    assert 0.3 <= time.monotonic() - t < 2
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-timeout", "timeout"])
def test_ctrl_c_ends_the_wait_early(timeout):
    ctrl_c = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    ctrl_c.start()
    t = time.monotonic()
    wait_for_signal(timeout)  # returns instead of raising KeyboardInterrupt
    assert time.monotonic() - t < 5
    ctrl_c.join()


def test_a_second_ctrl_c_cannot_cut_the_clean_stop_short():
    before = signal.getsignal(signal.SIGINT)
    stopped = []

    def clean_stop() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the impatient second Ctrl-C, in the middle of the clean stop
        time.sleep(0.2)  # Python runs a signal handler between bytecodes: this gives it every chance
        stopped.append("all agents offline")

    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    wait_for_signal(30, then=clean_stop)
    assert stopped == ["all agents offline"]
    assert signal.getsignal(signal.SIGINT) == before


def test_the_clean_stop_runs_after_a_timeout_too():
    stopped = []
    wait_for_signal(0.1, then=lambda: stopped.append(True))
    assert stopped == [True]


def test_off_the_main_thread_only_the_timeout_ends_the_wait():
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            wait_for_signal(0.2)  # signal.signal() would raise ValueError here
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=wait)
    worker.start()
    worker.join(5)
    assert not worker.is_alive() and errors == []


def test_a_signal_is_answered_with_what_stops_and_a_last_word(capsys):
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    wait_for_signal(30, then=lambda: print("agents offline"), stopping="echo", ready="echo serving")
    out, err = capsys.readouterr()
    assert out == "echo serving\nagents offline\n"
    assert err == "Ctrl-C: stopping echo ...\nstopped\n"


def test_the_banner_comes_once_ctrl_c_is_caught(monkeypatch):
    """A user who reads the banner may press Ctrl-C at once: by then the clean stop's handler is in place."""
    handler_when_written = []

    class Stdout(io.StringIO):
        def write(self, text: str) -> int:
            handler_when_written.append(signal.getsignal(signal.SIGINT))
            return super().write(text)

    stdout = Stdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    wait_for_signal(0.1, ready="serving")
    assert stdout.getvalue() == "serving\n"
    assert handler_when_written and signal.default_int_handler not in handler_when_written


def test_a_timeout_ends_the_wait_without_a_word(capsys):
    wait_for_signal(0.1, stopping="the recording")
    assert capsys.readouterr().err == ""


# -- what to do about an agent without a card ---------------------------------------------------------------
def test_only_agents_the_kit_serves_get_a_serve_hint():
    assert no_card_hint("echo", "acme", "support") == ("serve it first (`python -m a2a_nb serve echo`) or check the "
                                                       "agent name, --org and --unit")
    assert "serve echo --org bank --unit loans" in no_card_hint("echo", "bank", "loans")
    other = no_card_hint("nobody", "acme", "support")
    assert "serve nobody" not in other and other.startswith("check the agent name, --org and --unit")


# -- broker: its export line pastes into any shell -------------------------------------------------------
@pytest.mark.parametrize("url", ["mqtt://127.0.0.1:1883", "mqtt://127.0.0.1:41234?inflight=0",
                                 "mqtts://127.0.0.1:8883?ca=/tmp/a b/ca.crt&inflight=0"])
def test_the_export_line_gives_the_shell_the_exact_url(url, tmp_path):
    line = export_line("A2A_BROKER_URL", url)
    assert line.startswith("export A2A_BROKER_URL=") and ("'" in line) == any(c in url for c in "?& ")
    shell = subprocess.run(["bash", "-O", "failglob", "-c", f'{line}; printf %s "$A2A_BROKER_URL"'], cwd=tmp_path,
                           capture_output=True, text=True, timeout=10)
    assert shell.returncode == 0 and shell.stdout == url, shell.stderr


# -- send: the routes file ---------------------------------------------------------------------------------
def test_the_routes_file_is_under_xdg_state_home_and_private(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = roles.routes_path()
    assert path == str(tmp_path / "state" / "a2a_nb" / "routes.sqlite")
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec: a relative path is ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert roles.routes_path() == str(tmp_path / "home" / ".local" / "state" / "a2a_nb" / "routes.sqlite")


def test_without_a_routes_file_send_says_so_and_goes_on(monkeypatch, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "file"))  # a file where the folder should be
    assert roles.routes_path() is None
    assert "note: cannot keep routes in" in capsys.readouterr().err


def test_the_routes_file_keeps_only_the_newest_routes(tmp_path):
    path = str(tmp_path / "routes.sqlite")
    desk = Address("acme", "support", agent="ticket-desk")
    store = SqliteRoutes(path, max_routes=3)
    for n in range(5):
        store.save(Route(f"task-{n}", desk, desk, updated_at=float(n)))
    store.close()
    reopened = SqliteRoutes(path, max_routes=3)
    assert list(reopened.load().routes) == ["task-2", "task-3", "task-4"]  # oldest first, as the table keeps them
    reopened.close()


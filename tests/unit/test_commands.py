"""Helpers of the sub-commands, in-process: the wait of a foreground command and finding the benchmarks."""
from __future__ import annotations

import importlib
import os
import signal
import threading
import time

import pytest

from a2a_nb.commands import bench
from a2a_nb.commands.common import CliError, wait_for_signal


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


# -- bench: where are the benchmarks? ----------------------------------------------------------------------
def import_fails_with(monkeypatch, error: ImportError) -> None:
    """Make ``bench._benchmarks``'s import of ``benchmarks.run`` fail as Python would with ``error``."""
    def import_module(name: str, package=None):
        assert name == "benchmarks.run"
        raise error

    monkeypatch.setattr(importlib, "import_module", import_module)


@pytest.mark.parametrize("missing", ["benchmarks", "benchmarks.run"])
def test_bench_without_the_benchmarks_folder_says_where_they_are(monkeypatch, missing):
    import_fails_with(monkeypatch, ModuleNotFoundError(f"No module named {missing!r}", name=missing))
    with pytest.raises(CliError, match="benchmarks/ folder") as refused:
        bench._benchmarks()
    assert "from a clone of the repository" in refused.value.hint


@pytest.mark.parametrize("error", [
    ModuleNotFoundError("No module named 'httpx'", name="httpx"),  # benchmarks/bridge.py: import httpx
    ModuleNotFoundError("No module named 'benchmarks_extra'", name="benchmarks_extra"),
    ImportError("cannot import name 'Client' from 'httpx'", name="httpx"),
], ids=["missing-dependency", "look-alike-name", "import-error"])
def test_bench_keeps_the_message_of_a_failing_dependency(monkeypatch, error):
    import_fails_with(monkeypatch, error)
    with pytest.raises(ImportError) as raised:
        bench._benchmarks()
    assert raised.value is error

"""Issue [14] item 6: small mistakes end in one clear line that names what to change.

``serve ticket-desk --store PATH`` with a folder, a file that is not SQLite, a task table of somebody
else's or a path it cannot create names PATH (before: ``OperationalError: unable to open database
file`` or ``DatabaseError: file is not a database``, no path); a CA file that is missing, a folder or
not a certificate is named with where it came from (before: ``[Errno 2] No such file or directory``);
``story --served`` says which ``serve`` options a scenario needs (before: only ``BAD``).
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from a2a_nb.agents.store import SqliteTaskStore
from a2a_nb.mqtt.broker import free_port

CLI = [sys.executable, "-m", "a2a_nb"]


def run(args: list[str], env: dict, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=timeout)


def assert_one_error(out: subprocess.CompletedProcess, status: int, *phrases: str) -> None:
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == status, (out.returncode, out.stdout, out.stderr)
    for phrase in phrases:
        assert phrase in out.stderr, out.stderr


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))


def _stores(tmp_path) -> list[tuple[str, str]]:
    folder = tmp_path / "folder"
    folder.mkdir()
    text = tmp_path / "notes.txt"
    text.write_text("not a database, only some words that are long enough to be read as a header\n" * 3)
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE tasks (a INTEGER)")
    return [(str(folder), "it is a folder; give a file in it, for example"),
            (str(text), "the file is not an SQLite database"),
            (str(tmp_path / "missing" / "tasks.db"), f"its folder {tmp_path / 'missing'} does not exist"),
            (str(text / "tasks.db"), f"{text} is not a folder"),
            (str(foreign), "its table 'tasks' is not a task store's")]


def test_a_task_store_that_cannot_be_opened_is_named(tmp_path, env, broker_url):
    for path, why in _stores(tmp_path):
        out = run(["serve", "ticket-desk", "--store", path, "--unit", "store-errors"], env)
        assert_one_error(out, 2, f"error: cannot open task store {path}: {why}")


def test_a_read_only_task_store_is_named():
    """A task store file the user may not write is named with why. Root may write any file, so as
    root the store is opened by a forked child that runs as ``nobody`` (nothing is skipped)."""
    from a2a_nb.agents.store import TaskStoreError

    folder = Path(tempfile.mkdtemp(prefix="a2a-ro-store-"))
    try:
        folder.chmod(0o755)  # nobody may look in, not write
        path = folder / "tasks.db"
        SqliteTaskStore(path).close()
        path.chmod(0o444)
        expected = f"cannot open task store {path}: the file is read-only"
        if os.geteuid() != 0:
            with pytest.raises(TaskStoreError, match=expected):
                SqliteTaskStore(path)
            return
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # the child: drop to nobody, try, report, leave without pytest's clean-up
            os.close(read)
            try:
                os.setgid(65534)
                os.setuid(65534)
                SqliteTaskStore(path).close()
                said = "opened"
            except BaseException as exc:  # noqa: BLE001 - the child reports whatever happened
                said = f"{type(exc).__name__}: {exc}"
            os.write(write, said.encode())
            os._exit(0)
        os.close(write)
        ready, _, _ = select.select([read], [], [], 10.0)  # a child stuck on a lock some thread held is killed
        if not ready:
            os.kill(child, signal.SIGKILL)
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read().decode() if ready else "no answer within 10 s"
        os.waitpid(child, 0)
        assert said.startswith(f"TaskStoreError: {expected}"), said
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_ca_file_that_cannot_be_used_is_named_with_where_it_came_from(tmp_path, env):
    port = free_port()  # nothing listens: the CA is checked before any connection
    text = tmp_path / "notes.txt"
    text.write_text("no certificate here\n")
    cases = [(f"mqtts://127.0.0.1:{port}?ca=/missing/ca.crt", {},
              "error: the CA file /missing/ca.crt (?ca= in the broker URL) does not exist"),
             (f"mqtts://127.0.0.1:{port}", {"A2A_BROKER_CA": "/missing/ca.crt"},
              "error: the CA file /missing/ca.crt (A2A_BROKER_CA) does not exist"),
             (f"mqtts://127.0.0.1:{port}?ca={tmp_path}", {}, f"error: the CA file {tmp_path} (?ca= in the broker "
                                                               "URL) is a folder, not a certificate file"),
             (f"mqtts://127.0.0.1:{port}?ca={text}", {}, f"error: cannot use the CA file {text}: it holds no PEM "
                                                         "certificate")]
    for url, extra, line in cases:
        out = run(["send", "echo", "hi", "--timeout", "1"], dict(env, A2A_BROKER_URL=url, **extra))
        assert_one_error(out, 1, line)
        assert "Errno" not in out.stderr


def test_story_served_says_which_serve_options_a_scenario_needs(private_broker, env):
    env = dict(env, A2A_BROKER_URL=private_broker.url)
    desk = subprocess.Popen(CLI + ["serve", "ticket-desk", "--pace", "0.01"], env=dict(env, PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in desk.stdout.readline()
        told = run(["story", "--served", "--scenario", "no-handover"], env, timeout=60)
    finally:
        desk.terminate()
        desk.wait(timeout=15)
    assert told.returncode == 1, told.stdout + told.stderr
    assert "BAD no-handover" in told.stdout
    assert ("with --served, no-handover needs the desk served without handover: "
            "`python -m a2a_nb serve ticket-desk --handover none`") in told.stdout, told.stdout


def test_story_served_without_its_agents_names_the_serve_command(private_broker, env):
    env = dict(env, A2A_BROKER_URL=private_broker.url)
    out = run(["story", "--served", "--scenario", "multi-handover"], env)
    assert_one_error(out, 1, "error: no online agent with a root-cause-analysis skill",
                     "hint: serve them first: multi-handover needs the desk served handing over twice per ticket: "
                     "`python -m a2a_nb serve ticket-desk --handover double`")
    pooled = run(["story", "--served", "--scenario", "pool"], env)
    assert_one_error(pooled, 1, "error: timeout: SendStreamingMessage: no reply from acme/support/pool:analysts",
                     "hint: pool needs the pool analysts served: "
                     "`python -m a2a_nb serve analyst --pool analysts --members 3`")

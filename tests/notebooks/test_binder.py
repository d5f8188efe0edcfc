"""binder/: the files repo2docker reads, and ``binder/start`` run for real as a non-root user.

On Binder, ``start`` runs at every launch as the notebook user (not root), must start Mosquitto
in the background, export ``A2A_BROKER_URL`` and always end in ``exec "$@"``: a start script that
fails leaves Binder with nothing but "failed to start". So it is run here as ``nobody`` (through
``setpriv``, or ``os.setuid`` in the child when ``setpriv`` is missing; directly when the tests
already run as a normal user), with a temporary HOME and a free port (``A2A_BINDER_PORT``).
Every Mosquitto it starts is stopped by the pid it wrote, nothing else.
"""
from __future__ import annotations

import os
import sys
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

from a2a_nb.mqtt.broker import free_port
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol.packet import MqttMessage

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
PROBE = 'echo "pid=$$ uid=$(id -u) url=${A2A_BROKER_URL:-unset}"'


def _target_user() -> Optional[tuple[int, int]]:
    """(uid, gid) to drop to, or None when the tests already run as a non-root user."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam("nobody")
        return pw.pw_uid, pw.pw_gid
    except KeyError:  # no such account: any unused uid works for setuid
        return 65534, 65534


class Sandbox:
    """A temporary HOME owned by the non-root user, a copy of binder/start, and the runs made."""

    def __init__(self):
        self.user = _target_user()
        self.base = Path(tempfile.mkdtemp(prefix="a2a-binder-test-"))
        os.chmod(self.base, 0o755)
        self.home = self.base / "home"
        self.home.mkdir()
        self.script = self.base / "start"
        shutil.copy(BINDER / "start", self.script)
        os.chmod(self.script, 0o755)
        if self.user is not None:
            os.chown(self.home, *self.user)

    @property
    def broker_dir(self) -> Path:
        return self.home / ".a2a-broker"

    def mosquitto_pid(self) -> Optional[int]:
        pid_file = self.broker_dir / "mosquitto.pid"
        return int(pid_file.read_text().strip()) if pid_file.exists() else None

    def run(self, env_extra: dict, timeout: float = 30) -> tuple[int, subprocess.CompletedProcess]:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8", **env_extra}
        argv = [str(self.script), "sh", "-c", PROBE]
        preexec = None
        if self.user is not None:
            uid, gid = self.user
            setpriv = shutil.which("setpriv")
            if setpriv:
                argv = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]
            else:
                def preexec():  # runs in the child, before exec
                    os.setgroups([])
                    os.setgid(gid)
                    os.setuid(uid)
        proc = subprocess.Popen(argv, env=env, cwd=self.home, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=preexec)
        out, err = proc.communicate(timeout=timeout)
        return proc.pid, subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def stop_broker(self) -> None:
        pid = self.mosquitto_pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.time() + 5
        while time.time() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)

    def cleanup(self) -> None:
        self.stop_broker()
        shutil.rmtree(self.base, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def _uid_of(pid: int) -> Optional[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except FileNotFoundError:
        return None
    return None


def _probe(stdout: str) -> dict:
    m = re.search(r"pid=(\d+) uid=(\d+) url=(\S+)", stdout)
    assert m, f"the command after exec did not run: {stdout!r}"
    return {"pid": int(m.group(1)), "uid": int(m.group(2)), "url": m.group(3)}


@pytest.fixture
def sandbox():
    box = Sandbox()
    yield box
    box.cleanup()


def test_start_runs_mosquitto_as_non_root_and_execs_the_command(sandbox):
    port = free_port()
    pid, run = sandbox.run({"A2A_BINDER_PORT": str(port)})
    assert run.returncode == 0, run.stderr
    seen = _probe(run.stdout)
    assert seen["pid"] == pid, "the command must replace the start script (exec), not run as its child"
    assert seen["uid"] != 0
    assert seen["url"] == f"mqtt://127.0.0.1:{port}"

    broker_pid = sandbox.mosquitto_pid()
    assert broker_pid is not None and _alive(broker_pid)
    if sandbox.user is not None:
        assert _uid_of(broker_pid) == sandbox.user[0]

    conf = (sandbox.broker_dir / "mosquitto.conf").read_text()
    for line in (f"listener {port} 127.0.0.1", "allow_anonymous true", "set_tcp_nodelay true",
                 "persistence false", f"log_dest file {sandbox.broker_dir}/mosquitto.log"):
        assert line in conf.splitlines(), line

    # a real MQTT v5 broker answers there: CONNACK, then a PUBACK with a reason code
    session = Session("acme", "support", "binder-check", broker=seen["url"])
    try:
        assert session.connected
        result = session.publish(MqttMessage("binder/check", b"hello", qos=1))
        assert result.reason_code == 16  # accepted, nobody subscribed
    finally:
        session.close()

    sandbox.stop_broker()
    assert not _alive(broker_pid)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_start_still_execs_when_mosquitto_is_missing(sandbox):
    pid, run = sandbox.run({"A2A_BINDER_PORT": str(free_port()), "A2A_MOSQUITTO": "/nonexistent/mosquitto"})
    assert run.returncode == 0
    seen = _probe(run.stdout)
    assert seen["pid"] == pid and seen["url"] == "unset"
    assert "mosquitto not found" in run.stderr
    assert sandbox.mosquitto_pid() is None


def test_start_still_execs_when_the_port_is_busy(sandbox):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        pid, run = sandbox.run({"A2A_BINDER_PORT": str(port)})
    assert run.returncode == 0
    seen = _probe(run.stdout)
    assert seen["pid"] == pid and seen["url"] == "unset"
    assert "already in use" in run.stderr
    assert sandbox.mosquitto_pid() is None


def test_start_keeps_a_broker_url_given_from_outside(sandbox):
    pid, run = sandbox.run({"A2A_BROKER_URL": "mqtt://broker.example:1883", "A2A_BINDER_PORT": str(free_port())})
    assert run.returncode == 0
    seen = _probe(run.stdout)
    assert seen["url"] == "mqtt://broker.example:1883"
    assert sandbox.mosquitto_pid() is None  # nothing started


def test_start_script_shape():
    text = (BINDER / "start").read_text()
    assert text.startswith("#!/bin/bash\n")
    assert os.access(BINDER / "start", os.X_OK)
    code = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert code[-1] == 'exec "$@"'
    assert "set -e" not in text  # a failing command must never stop it before the exec
    subprocess.run(["bash", "-n", str(BINDER / "start")], check=True)


def _pins(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_binder_requirements_are_the_lab_set_plus_the_kit():
    """Binder's image gets what `make lab` installs (requirements.txt, the lessons' pins), no test tool."""
    root = _pins(ROOT / "requirements.txt")
    binder = _pins(BINDER / "requirements.txt")
    assert binder[-1] == "-e ."
    assert binder[:-1] == root
    assert all("==" in line for line in root)
    names = {line.split("==")[0].lower() for line in binder[:-1]}
    assert not names & {"pytest", "pytest-timeout", "nbval", "hypothesis", "mypy", "playwright"}


def test_apt_runtime_and_postbuild():
    apt = _pins(BINDER / "apt.txt")
    assert apt == ["mosquitto"]  # the broker; the status plugin's compiler and headers are for the tests
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    post = (BINDER / "postBuild").read_text()
    assert post.startswith("#!/bin/bash\n") and "set -euo pipefail" in post
    assert os.access(BINDER / "postBuild", os.X_OK)
    assert "matplotlib" in post


def test_postbuild_runs(tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
               MPLCONFIGDIR=str(tmp_path))
    run = subprocess.run(["bash", str(BINDER / "postBuild")], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr

"""``python -m a2a_nb serve-sdk MODULE:FACTORY`` as a user runs it: an SDK executor answers ``send``,
its card says offline after Ctrl-C, and a bad spec is one line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import topics
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]


def _env(broker_url, tmp_path) -> dict:
    return dict(os.environ, A2A_BROKER_URL=broker_url, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONUNBUFFERED="1")


def test_serve_sdk_answers_send_and_says_offline_on_ctrl_c(broker_url, tmp_path):
    env, unit = _env(broker_url, tmp_path), uid("sdkcli")
    proc = subprocess.Popen(CLI + ["serve-sdk", "tests.sdk.executors:EchoExecutor", "--agent", "sdk-echo",
                                   "--unit", unit], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert f"EchoExecutor serving as sdk-echo on {topics.request_topic('acme', unit, 'sdk-echo')}" in line, \
            proc.stderr.read() if proc.poll() is not None else line
        out = subprocess.run(CLI + ["send", "sdk-echo", "hello from the CLI", "--unit", unit], env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "echo: hello from the CLI" in out.stdout, out.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    watcher = Session("acme", unit, uid("watch"), broker=broker_url)
    watcher.subscribe(topics.discovery_topic("acme", unit, "sdk-echo"))
    card = watcher.receive(timeout=10)
    watcher.close()
    assert card is not None and dict(card.user_properties)["a2a-status"] == "offline"
    assert json.loads(card.payload)["name"] == "EchoExecutor"


def test_serve_sdk_refuses_a_spec_that_names_nothing_in_one_line(broker_url, tmp_path):
    env = _env(broker_url, tmp_path)
    for spec, said in (("no_such_module:build", "cannot import 'no_such_module'"),
                       ("tests.sdk.executors:Missing", "tests.sdk.executors has no callable 'Missing'"),
                       ("tests.sdk.executors", "is not MODULE:FACTORY")):
        out = subprocess.run(CLI + ["serve-sdk", spec], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, out.stderr

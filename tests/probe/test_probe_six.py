"""The issue's command lines (issue [16]): `python -m a2a_nb broker` (with its a2a_status plugin), then
`serve echo --pool echoes` and `serve ticket-desk --pool analysts`, each probed with `probe AGENT --pool
POOL --level extended --json`: all six Extended capabilities offered and passing, Core conformant.
Real processes, real Mosquitto."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from a2a_nb.mqtt.status_plugin import plugin_path, unavailable_reason
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]
SIX = ("trusted JKU policy", "broker-managed status", "extended observability", "native binary artifact mode",
       "shared-subscription dispatch", "untrusted-broker security profile (ubsp-v1)")

pytestmark = pytest.mark.skipif(plugin_path() is None, reason=f"no a2a_status plugin here: {unavailable_reason()}")


def start(*args: str, env: dict) -> subprocess.Popen:
    p = subprocess.Popen(CLI + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p


def stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()


def test_served_echo_and_ticket_desk_offer_and_pass_all_six_extended_capabilities(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "A2A_UBSP_DIR": str(tmp_path / "keys")}
    env.pop("A2A_BROKER_URL", None)
    broker = start("broker", env=env)
    served = []
    try:
        url = broker.stdout.readline().strip()
        assert url.startswith("mqtt://"), broker.stderr.read()
        env["A2A_BROKER_URL"] = url
        unit = uid("six")
        for agent, pool in (("echo", "echoes"), ("ticket-desk", "analysts")):
            p = start("serve", agent, "--pool", pool, "--unit", unit, "--pace", "0", env=env)
            served.append(p)
            line = p.stdout.readline()  # one at a time: the first makes the key home, the next reads it
            assert "serving" in line, p.stderr.read() if p.poll() is not None else line
        for agent, pool in (("echo", "echoes"), ("ticket-desk", "analysts")):
            out = subprocess.run(CLI + ["probe", agent, "--pool", pool, "--unit", unit, "--level", "extended", "--json"],
                                 env=env, capture_output=True, text=True, timeout=120)
            report = json.loads(out.stdout)
            assert report["capabilities"] == dict.fromkeys(SIX, "pass"), (agent, report["capabilities"])
            assert out.returncode == 0 and "Core conformant" in report["summary"], report["summary"]
    finally:
        stop(*served, broker)

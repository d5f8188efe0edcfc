"""``python -m a2a_nb bridge AGENT``: one real run in a subprocess, and its error when there is no card."""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import uuid

import httpx

from a2a_nb import cli
from tests.sdk_check import assert_valid


def test_bridge_command_serves_the_desk_until_sigterm(broker_url, unit, desk):
    env = {**os.environ, "A2A_BROKER_URL": broker_url}
    proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "bridge", "ticket-desk", "--unit", unit],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "the bridge printed no URL within 20 s"
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/"), url
        card = httpx.get(url + ".well-known/agent-card.json", timeout=5).json()
        assert_valid("AgentCard", card)
        assert card["supportedInterfaces"][0]["url"] == url
        reply = httpx.post(url, timeout=10, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex,
                                   "parts": [{"text": "Analyze ticket TCK-4821"}]}}}).json()
        assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert err.endswith("SIGTERM: stopping the bridge ...\nstopped\n"), err


def test_bridge_command_without_a_card_says_what_to_do(broker_url, unit, capsys):
    status = cli.main(["bridge", "ticket-desk", "--unit", unit, "--broker", broker_url])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert err[0] == (f"error: no Agent Card for ticket-desk in acme/{unit} "
                      f"(waited 2 s on $a2a/v1/discovery/acme/{unit}/ticket-desk)")
    assert err[1] == (f"hint: serve it first (`python -m a2a_nb serve ticket-desk --unit {unit}`) or check the agent "
                      "name, --org and --unit")


def test_bridge_to_an_agent_the_kit_cannot_serve_suggests_no_serve_command(broker_url, unit, capsys):
    status = cli.main(["bridge", "nobody", "--unit", unit, "--broker", broker_url])
    err = capsys.readouterr().err.splitlines()
    assert status == 1 and err[0].startswith(f"error: no Agent Card for nobody in acme/{unit}")
    assert "serve nobody" not in err[1]
    assert err[1] == (f"hint: check the agent name, --org and --unit (the kit serves echo and ticket-desk: "
                      f"`python -m a2a_nb serve ticket-desk --unit {unit}`)")


def test_bridge_on_a_busy_port_says_so(broker_url, unit, desk, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        status = cli.main(["bridge", "ticket-desk", "--unit", unit, "--broker", broker_url, "--port", str(port)])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert err == [f"error: port {port} on 127.0.0.1 is already in use (another bridge, or another server)",
                   "hint: pick another port with --port, or leave --port out to use a free one"]

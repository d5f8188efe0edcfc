"""Issue [14] item 5: ``serve ticket-desk`` with the desk's own login in ``A2A_BROKER_URL``.

On ``broker --secure`` the broker names every client after its login, so analysts started under the
desk's login would each take over the desk's session (and the desk, reconnecting, theirs): before the
fix one ``send`` caused 141 takeovers in 5 s. Now the desk refuses to start without a credentials
file (one ``error:`` line and a ``hint:`` naming it), and with ``A2A_BROKER_CREDENTIALS`` set each
analyst logs in as itself from it. Driven as a user would: the command line, a URL with a login.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from urllib.parse import quote

import pytest

from a2a_nb.mqtt.secure import SecureBroker

CLI = [sys.executable, "-m", "a2a_nb"]
TAKEOVER = "already connected, closing old connection"  # Mosquitto's log line for a session takeover
TICKET = "TCK-4821: order status not updating after checkout\nReproduction: pay by card, then open the order page"


@pytest.fixture(scope="module")
def secure():
    with SecureBroker() as broker:
        yield broker


def desk_url(broker: SecureBroker) -> str:
    password = json.loads(broker.files["credentials"].read_text())["users"]["acme/support/ticket-desk"]
    return (f"mqtts://{quote('acme/support/ticket-desk', safe='')}:{quote(password, safe='')}@127.0.0.1:"
            f"{broker.port}?ca={broker.files['ca']}&inflight=0")


def env_with(**values: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_BROKER")}
    env.update(values)
    return env


def test_the_desk_refuses_to_start_its_analysts_under_its_own_login(secure):
    before = secure.log_text().count(TAKEOVER)
    try:
        out = subprocess.run(CLI + ["serve", "ticket-desk"], env=env_with(A2A_BROKER_URL=desk_url(secure)),
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("serve ticket-desk started under the desk's login instead of refusing")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "error: the broker URL logs in as acme/support/ticket-desk, the desk's own login" in out.stderr
    assert "hint: drop the login from the broker URL and export A2A_BROKER_CREDENTIALS=" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 2, out.stderr  # one error line, one hint line
    assert secure.log_text().count(TAKEOVER) == before


def test_with_the_credentials_file_each_analyst_logs_in_as_itself(secure):
    credentials = str(secure.files["credentials"])
    desk = subprocess.Popen(CLI + ["serve", "ticket-desk", "--pace", "0.01"], text=True,
                            env=env_with(A2A_BROKER_URL=desk_url(secure), A2A_BROKER_CREDENTIALS=credentials,
                                         PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert "ticket-desk serving on" in desk.stdout.readline()
        before = secure.log_text().count(TAKEOVER)
        sent = subprocess.run(CLI + ["send", "ticket-desk", TICKET, "--stream"], capture_output=True, text=True,
                              timeout=60, env=env_with(A2A_BROKER_URL=secure.url, A2A_BROKER_CREDENTIALS=credentials))
        assert sent.returncode == 0, sent.stderr
        assert re.search(r"routing: handover .*ticket-desk → .*analyst-1", sent.stdout), sent.stdout
        assert re.search(r"task \S+: completed", sent.stdout), sent.stdout
        assert secure.log_text().count(TAKEOVER) == before, "an analyst took over the desk's session"
        assert desk.poll() is None
    finally:
        desk.terminate()
        desk.wait(timeout=15)
    logins = re.findall(r"New client connected from \S+ as (\S+) \(.*u'([^']*)'\)", secure.log_text())
    assert ("acme/support/analyst-1", "acme/support/analyst-1") in logins, logins

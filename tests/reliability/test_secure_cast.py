"""The whole cast on ``broker --secure``, across shells: exactly the commands the banner prints.

``python -m a2a_nb broker --secure`` runs in one process; ``serve ticket-desk`` and ``send`` run in
others with ``A2A_BROKER_URL`` and ``A2A_BROKER_CREDENTIALS`` exported. Every agent must log in as
itself (username = Client ID = ``{org}/{unit}/{agent}``): the desk's analysts as ``analyst-N``, never
with the desk's login (the broker would close the desk's connection: a session takeover), and ``send``
as ``cli``, or as the coordinator when the URL carries the coordinator's login.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from a2a_nb.mqtt.broker import BrokerEndpoint, login_from_file
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import properties

pytestmark = pytest.mark.broker  # its helpers start `broker --secure`

TICKET = "TCK-4821: order status not updating after checkout\nReproduction: pay by card, then open the order page"
TAKEOVER = "already connected, closing old connection"  # Mosquitto's log line for a session takeover


def run_cli(*args: str, env: dict, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "a2a_nb", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def read_until(stream, pattern: str, seen: list[str], timeout: float) -> re.Match:
    """Read lines from a child's pipe (on a thread, so a silent child cannot hang the test) until
    one matches ``pattern``."""
    found: list[re.Match] = []

    def reader() -> None:
        for line in stream:
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match)
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(timeout)
    assert found, f"no line matching {pattern!r} within {timeout} s; got:\n{''.join(seen)}"
    return found[0]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture
def secure_broker_process():
    """``python -m a2a_nb broker --secure``: its banner (stdout: the URL; stderr: the exports)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_BROKER")}
    proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "broker", "--secure"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out: list[str] = []
        url = read_until(proc.stdout, r"^(mqtts://\S+)", out, 20).group(1)
        err: list[str] = []
        read_until(proc.stderr, r"export A2A_BROKER_URL='mqtts://acme%2Fsupport%2Fcoordinator", err, 10)
        banner = "".join(err)
        yield proc, url, banner
    finally:
        stop(proc)


def banner_value(banner: str, pattern: str) -> str:
    match = re.search(pattern, banner)
    assert match, f"{pattern!r} not in the banner:\n{banner}"
    return match.group(1)


def test_the_whole_cast_logs_in_as_itself_on_the_secure_broker(secure_broker_process):
    broker, url, banner = secure_broker_process
    exported_url = banner_value(banner, r"export A2A_BROKER_URL='(mqtts://127[^']+)'")
    credentials = banner_value(banner, r"export A2A_BROKER_CREDENTIALS=(\S+)")
    workdir = Path(banner_value(banner, r"config and log in (\S+)\)"))
    assert exported_url == url and Path(credentials).parent == workdir
    assert os.stat(credentials).st_mode & 0o077 == 0, "the credentials file must be private (mode 0600)"
    log = workdir / "mosquitto.log"

    # an observer (the broker's `recorder` login may read every $a2a/ topic) sees the replies
    observed = []
    observer = Session("acme", "support", "recorder",
                       broker=login_from_file(BrokerEndpoint.from_url(url), credentials, "acme/support/recorder"))
    observer.subscribe("$a2a/v1/reply/#", handler=observed.append)

    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_BROKER")}
    env.update(A2A_BROKER_URL=exported_url, A2A_BROKER_CREDENTIALS=credentials)
    desk = subprocess.Popen([sys.executable, "-m", "a2a_nb", "serve", "ticket-desk", "--pace", "0.01"], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        read_until(desk.stdout, r"ticket-desk serving on", [], 20)

        sent = run_cli("send", "ticket-desk", TICKET, "--stream", env=env)
        assert sent.returncode == 0, sent.stderr
        assert re.search(r"task \S+: completed", sent.stdout), sent.stdout
        assert re.search(r"routing: handover .*ticket-desk → .*analyst-1", sent.stdout), sent.stdout

        # the replies to `cli` named analyst-1 as their responder after the handover
        to_cli = [m for m in observed if m.topic.startswith("$a2a/v1/reply/acme/support/cli/")]
        named = {m.user_property(properties.RESPONDER_AGENT_ID) for m in to_cli} - {None}
        assert named == {"analyst-1"}, named

        # the coordinator's login from the banner, password from the credentials file
        password = json.loads(Path(credentials).read_text())["users"]["acme/support/coordinator"]
        coordinator_url = banner_value(banner, r"export A2A_BROKER_URL='(mqtts://acme%2Fsupport%2Fcoordinator[^']+)'")
        as_coordinator = {k: v for k, v in env.items() if k != "A2A_BROKER_CREDENTIALS"}
        as_coordinator["A2A_BROKER_URL"] = coordinator_url.replace("PASSWORD", quote(password, safe=""))
        sent2 = run_cli("send", "ticket-desk", TICKET, env=as_coordinator)
        assert sent2.returncode == 0, sent2.stderr
        assert re.search(r"task \S+: completed", sent2.stdout), sent2.stdout
        assert any(m.topic.startswith("$a2a/v1/reply/acme/support/coordinator/") for m in observed)

        assert desk.poll() is None, "the desk process ended"
    finally:
        stop(desk)
        observer.close()

    text = log.read_text(errors="replace")
    logins = re.findall(r"New client connected from \S+ as (\S+) \(.*u'([^']*)'\)", text)
    assert logins, text[-2000:]
    assert all(client == user for client, user in logins), logins  # Client ID = username, always
    clients = {client for client, _ in logins}
    assert {"acme/support/ticket-desk", "acme/support/analyst-1", "acme/support/cli",
            "acme/support/coordinator"} <= clients, clients
    assert sum(1 for client, _ in logins if client == "acme/support/ticket-desk") == 1  # connected once
    assert TAKEOVER not in text, "a client took over another one's session"
    assert "not authorised" not in text.lower(), text[-2000:]


def test_a_pool_and_a_recorder_work_across_shells_on_the_secure_broker(secure_broker_process, tmp_path):
    """``serve analyst --pool analysts`` logs its members in with the pool logins the broker issued, and
    ``record`` with the observer login: both only work as themselves."""
    broker, url, banner = secure_broker_process
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_BROKER")}
    env.update(A2A_BROKER_URL=banner_value(banner, r"export A2A_BROKER_URL='(mqtts://127[^']+)'"),
               A2A_BROKER_CREDENTIALS=banner_value(banner, r"export A2A_BROKER_CREDENTIALS=(\S+)"))
    pool = subprocess.Popen([sys.executable, "-m", "a2a_nb", "serve", "analyst", "--pool", "analysts",
                             "--members", "2", "--pace", "0.01"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    recording = tmp_path / "secure.jsonl"
    recorder = subprocess.Popen([sys.executable, "-m", "a2a_nb", "record", "--out", str(recording),
                                 "--seconds", "20"], env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    try:
        seen: list[str] = []
        read_until(pool.stdout, r"analyst-analysts-2 serving pool analysts", seen, 20)
        assert "analyst-analysts-1 serving pool analysts" in "".join(seen)
        time.sleep(1.0)  # the recorder connects and subscribes
        sent = run_cli("send", "pool:analysts", TICKET, env=env)
        assert sent.returncode == 0, sent.stderr
        assert re.search(r"task \S+: completed", sent.stdout), sent.stdout
        assert pool.poll() is None and recorder.poll() is None, (pool.stderr, recorder.stderr)
    finally:
        stop(recorder)
        stop(pool)
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    topics_seen = {r["topic"] for r in lines}
    assert "$a2a/v1/request/acme/support/pool/analysts" in topics_seen, topics_seen
    assert any(t.startswith("$a2a/v1/reply/acme/support/cli/") for t in topics_seen), topics_seen


# -- the look-up itself: A2A_BROKER_CREDENTIALS -----------------------------------------------------------
@pytest.fixture
def credentials_file(tmp_path, monkeypatch):
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"ca": "/srv/ca.crt", "users": {"acme/support/analyst-1": "pw1",
                                                               "acme/support/cli": "pw2"}}))
    monkeypatch.setenv("A2A_BROKER_CREDENTIALS", str(path))
    return path


def test_a_session_without_a_username_logs_in_as_itself_from_the_credentials_file(credentials_file):
    from a2a_nb.mqtt.broker import resolve

    ep = resolve("mqtts://127.0.0.1:8883", "acme/support/analyst-1")
    assert (ep.username, ep.password, ep.ca_file) == ("acme/support/analyst-1", "pw1", "/srv/ca.crt")
    assert ep.username_is_client_id  # Session.connect refuses a login that is not its own Client ID
    assert resolve("mqtts://127.0.0.1:8883?ca=/mine.crt", "acme/support/cli").ca_file == "/mine.crt"
    # a URL with a login wins; a look-up without a client (cmd_serve's printable URL) changes nothing
    assert resolve("mqtts://acme%2Fsupport%2Fcli:x@127.0.0.1:8883", "acme/support/analyst-1").username == \
        "acme/support/cli"
    assert resolve("mqtts://127.0.0.1:8883").username is None


def test_an_agent_without_a_login_in_the_file_gets_an_error_naming_the_file(credentials_file, tmp_path, monkeypatch):
    from a2a_nb.mqtt.broker import BrokerError, resolve

    with pytest.raises(BrokerError, match=r"credentials\.json has no login for acme/support/analyst-9"):
        resolve("mqtts://127.0.0.1:8883", "acme/support/analyst-9")
    monkeypatch.setenv("A2A_BROKER_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(BrokerError, match="cannot read it"):
        resolve("mqtts://127.0.0.1:8883", "acme/support/cli")


def test_send_acts_as_the_agent_its_url_logs_in_as(monkeypatch):
    from a2a_nb.cli import UsageError, build_parser
    from a2a_nb.commands.roles import sender_agent

    monkeypatch.delenv("A2A_BROKER_URL", raising=False)
    parse = build_parser().parse_args
    assert sender_agent(parse(["send", "echo", "hi", "--broker", "mqtt://127.0.0.1:1883"])) == "cli"
    coordinator = "mqtts://acme%2Fsupport%2Fcoordinator:pw@127.0.0.1:8883"
    assert sender_agent(parse(["send", "echo", "hi", "--broker", coordinator])) == "coordinator"
    monkeypatch.setenv("A2A_BROKER_URL", coordinator)
    assert sender_agent(parse(["send", "echo", "hi"])) == "coordinator"
    with pytest.raises(UsageError, match="--org acme --unit support"):
        sender_agent(parse(["send", "echo", "hi", "--unit", "billing"]))

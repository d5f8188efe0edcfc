"""The bridge against a web page and a hostile local process (issue [14] items 2 and 7), with plain
HTTP from ``http.client`` and raw sockets, as an attacker would send it.

* A page the user visits posts ``text/plain`` (no preflight) or from its own Origin: refused (415,
  403), nothing reaches MQTT. A DNS-rebinding page (a foreign Host): refused (403), no task read.
* Allowed names and origins (``allow_hosts``, ``allow_origins``) work, CORS only for those.
* Idle half-sent requests: the bridge process (``python -m a2a_nb bridge``, 256 files) keeps
  serving, stays idle and logs a handful of lines, where it used to lock out, spin and log ~30,000
  lines a second; a request that does not arrive in time is cut; a full bridge makes room.
* A stream whose broker is killed says so in SSE comments and ends within the bridge's patience.
Real Mosquitto, real ticket desk.
"""
from __future__ import annotations

import http.client
import json
import logging
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from a2a_nb import cli
from a2a_nb.bridge import Bridge
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, topics
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.bridge.conftest import ORG
from tests.waiting import wait_until
from tests.helpers import uid

EVIL = "https://evil.example"


def call(port: int, method: str, path: str = "/", body: object = None, headers: dict | None = None,
         timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly these headers (http.client adds Host only when none is given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def rpc_body(method: str, params: dict, rid: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def send_params(text: str = TICKET_TEXT) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}}


def requests_seen(broker_url: str, unit: str) -> list[MqttMessage]:
    """Every request published in the unit from now on."""
    seen: list[MqttMessage] = []
    s = Session(ORG, unit, uid("watch"), broker=broker_url)
    s.subscribe(f"$a2a/v1/request/{ORG}/{unit}/#", handler=seen.append)
    return seen


def new_task(port: int) -> str:
    status, _, data = call(port, "POST", body=rpc_body("SendMessage", send_params()),
                           headers={"Content-Type": "application/json"})
    assert status == 200
    return json.loads(data)["result"]["task"]["id"]


# -- a web page: media type and Origin ---------------------------------------------------------------------
def test_a_web_page_cannot_start_or_cancel_tasks(broker_url, unit, bridge):
    """A page's "simple" POST (text/plain, no preflight), from its own Origin or without one."""
    port = bridge.port
    task_id = new_task(port)
    seen = requests_seen(broker_url, unit)
    page = {"Content-Type": "text/plain;charset=UTF-8", "Origin": EVIL}

    status, headers, data = call(port, "POST", body=rpc_body("SendMessage", send_params()), headers=page)
    assert status == 403 and "evil.example" in json.loads(data)["error"]
    assert "access-control-allow-origin" not in headers
    status, _, _ = call(port, "POST", body=rpc_body("CancelTask", {"id": task_id}), headers=page)
    assert status == 403
    # the page's Origin with a JSON body (what a preflight would have let through): refused as well
    status, _, _ = call(port, "POST", body=rpc_body("CancelTask", {"id": task_id}),
                        headers={"Content-Type": "application/json", "Origin": EVIL})
    assert status == 403
    # text/plain without an Origin (a page whose browser leaves it out, or a form): not JSON, refused
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        status, _, data = call(port, "POST", body=rpc_body("CancelTask", {"id": task_id}),
                               headers={"Content-Type": content_type} if content_type else {})
        assert status == 415, content_type
        error = json.loads(data)["error"]
        assert error["code"] == -32600 and "application/json" in error["message"]

    time.sleep(0.3)
    assert seen == [], "nothing reached MQTT"
    status, _, data = call(port, "POST", body=rpc_body("GetTask", {"id": task_id}),
                           headers={"Content-Type": "application/json"})
    assert json.loads(data)["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", "not canceled"
    assert bridge.stats.refused_origin == 3 and bridge.stats.refused_media_type == 4


def test_the_json_media_types_of_a2a_pass(bridge):
    for content_type in ("application/json", "application/json; charset=utf-8", "application/a2a+json"):
        status, _, data = call(bridge.port, "POST", body=rpc_body("ListTasks", {}),
                               headers={"Content-Type": content_type})
        assert status == 200 and "result" in json.loads(data), content_type


def test_a_rebinding_page_cannot_read_tasks(bridge):
    """A page whose DNS name now resolves to 127.0.0.1 is same-origin with the bridge: its requests
    name its own host, which the bridge does not answer to."""
    port = bridge.port
    task_id = new_task(port)
    for host in (f"rebind.evil.example:{port}", "rebind.evil.example", f"127.0.0.1.evil.example:{port}",
                 f"localhost:{port + 1}"):
        for method, path, body in (("POST", "/", rpc_body("GetTask", {"id": task_id})),
                                   ("POST", "/", rpc_body("ListTasks", {})),
                                   ("GET", "/.well-known/agent-card.json", None)):
            status, _, data = call(port, method, path, body, headers={
                "Host": host, "Content-Type": "application/json", "Origin": f"http://{host}"})
            assert status == 403, (host, path)
            assert task_id.encode() not in data and b"ticket" not in data.lower()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:  # HTTP/1.0 without a Host
        raw.sendall(b"GET /.well-known/agent-card.json HTTP/1.0\r\n\r\n")
        assert raw.recv(65536).startswith(b"HTTP/1.1 403")
    # the names a local client uses are fine, with or without the bridge's own Origin
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        status, _, data = call(port, "POST", body=rpc_body("GetTask", {"id": task_id}),
                               headers={"Host": host, "Content-Type": "application/json"})
        assert status == 200 and json.loads(data)["result"]["id"] == task_id
    status, _, _ = call(port, "GET", "/.well-known/agent-card.json",
                        headers={"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
    assert status == 200
    assert bridge.stats.refused_host == 13


def test_names_and_origins_the_operator_allows(broker_url, unit, desk):
    tool = "https://tool.example"
    with Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url, allow_hosts=["box.local", "localhost:9000"],
                allow_origins=[tool + "/"]) as bridge:
        port = bridge.port
        for host in (f"box.local:{port}", "localhost:9000"):  # a name of the operator's, a port-forward
            status, _, _ = call(port, "GET", "/.well-known/agent-card.json", headers={"Host": host})
            assert status == 200, host
        assert call(port, "GET", "/.well-known/agent-card.json", headers={"Host": "box.local:1"})[0] == 403

        # the allowed origin: preflight and request get CORS headers
        preflight = {"Origin": tool, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "content-type"}
        status, headers, _ = call(port, "OPTIONS", headers=preflight)
        assert status == 204 and headers["access-control-allow-origin"] == tool
        assert "POST" in headers["access-control-allow-methods"]
        assert "content-type" in headers["access-control-allow-headers"].lower()
        status, headers, data = call(port, "POST", body=rpc_body("ListTasks", {}),
                                     headers={"Origin": tool, "Content-Type": "application/json"})
        assert status == 200 and headers["access-control-allow-origin"] == tool and "result" in json.loads(data)

        # any other origin: no CORS, no preflight
        status, headers, _ = call(port, "OPTIONS", headers={**preflight, "Origin": EVIL})
        assert status == 403 and "access-control-allow-origin" not in headers
    with pytest.raises(ValueError, match="not an origin"):
        Bridge("ticket-desk", allow_origins=["*"])
    with pytest.raises(ValueError, match="not a host name"):
        Bridge("ticket-desk", allow_hosts=["http://box.local/"])


def test_bridge_command_checks_its_allow_options(broker_url, unit, capsys):
    for option, value in (("--allow-origin", "*"), ("--allow-origin", "null"), ("--allow-host", "a/b")):
        with pytest.raises(SystemExit) as stop:
            cli.main(["bridge", "ticket-desk", "--unit", unit, "--broker", broker_url, option, value])
        assert stop.value.code == 2
        assert f"argument {option}: not a" in capsys.readouterr().err


# -- connections: a cap, a deadline, quiet logs ----------------------------------------------------------
FD_LIMIT, HALF_SENT = 256, 300


def _cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _half_sent(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port)
    return s


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads CPU time from /proc")
def test_idle_half_sent_requests_do_not_lock_the_bridge_out(broker_url, unit, desk, tmp_path):
    """300 connections that never finish their request, against a bridge allowed 256 files (the
    issue's 1,100 at 1,024, scaled down). Before: every descriptor taken, a card request timed out,
    about 40 % of a core busy and 74,000 log lines within 4 s. Now: served, idle, a line or two (at
    this low limit a burst may touch it once: one rate-limited line, never a flood)."""
    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < HALF_SENT + 200:  # the attacker's own sockets
        if hard != resource.RLIM_INFINITY and hard < HALF_SENT + 200:
            pytest.skip(f"this process may open only {hard} files")
        resource.setrlimit(resource.RLIMIT_NOFILE, (HALF_SENT + 200, hard))
    log_file = tmp_path / "bridge.err"
    with open(log_file, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "bridge", "ticket-desk", "--unit", unit],
                                env={**os.environ, "A2A_BROKER_URL": broker_url}, stdout=subprocess.PIPE,
                                stderr=err, text=True, preexec_fn=low_fd_limit)
    attackers: list[socket.socket] = []
    try:
        assert select.select([proc.stdout], [], [], 20)[0], "the bridge printed no URL within 20 s"
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1].rstrip("/"))
        for _ in range(HALF_SENT):
            attackers.append(_half_sent(port))
        time.sleep(0.5)
        cpu0, t0 = _cpu_s(proc.pid), time.monotonic()
        status, _, _ = call(port, "GET", "/.well-known/agent-card.json", timeout=3)
        assert status == 200, "a local client is still served while the idle connections stay"
        time.sleep(max(0.0, 2 - (time.monotonic() - t0)))
        busy = (_cpu_s(proc.pid) - cpu0) / (time.monotonic() - t0)
        open_files = len(os.listdir(f"/proc/{proc.pid}/fd"))
        lines = log_file.read_text().splitlines()
        assert busy < 0.15, f"the bridge used {busy:.0%} of a core while idle connections waited"
        assert open_files < FD_LIMIT // 2, open_files
        assert len(lines) <= 3, lines[:10]
    finally:
        for s in attackers:
            s.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _closed_within(s: socket.socket, seconds: float) -> bool:
    """Did the server close ``s`` within ``seconds`` (EOF or reset)?"""
    s.settimeout(seconds)
    try:
        while s.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_request_that_does_not_arrive_in_time_is_cut(broker_url, unit, desk):
    with Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url, request_timeout_s=1.0) as bridge:
        port = bridge.port
        t0 = time.monotonic()
        head = _half_sent(port)  # a head that never ends
        silent = socket.create_connection(("127.0.0.1", port))  # not a byte
        body = socket.create_connection(("127.0.0.1", port))  # a head, then a trickle of body
        body.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{" % port)
        for s in (head, silent, body):
            assert _closed_within(s, 3), "the connection is still open 3 s after its 1 s deadline"
            s.close()
        assert time.monotonic() - t0 < 2.5
        # on a kept-alive connection the deadline runs again for the next request
        keep = socket.create_connection(("127.0.0.1", port))
        keep.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
        keep.settimeout(3)
        assert keep.recv(65536).startswith(b"HTTP/1.1 200")
        keep.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1")
        t1 = time.monotonic()
        assert _closed_within(keep, 3) and time.monotonic() - t1 < 2.5
        keep.close()
        assert wait_until(lambda: bridge.stats.requests_timed_out == 4), bridge.stats
        assert call(port, "GET", "/.well-known/agent-card.json")[0] == 200


def test_a_full_bridge_makes_room_and_refuses_only_when_every_connection_is_busy(broker_url, unit):
    """``max_connections=4``: idle connections give way to a new one; four requests in progress
    (to an agent that never answers) leave none to give, and the fifth connection gets 503."""
    s = Session(ORG, unit, uid("ghost-card"), broker=broker_url)
    card = cards.agent_card(name="Ghost", description="never answers", version="1", org=ORG, unit=unit,
                            agent="ghost", skills=[cards.skill("x", "X", "nothing", ["test"])])
    s.publish(MqttMessage(topics.discovery_topic(ORG, unit, "ghost"), encode_json(card), qos=1, retain=True))
    slow = RetryProfile(reply_first_timeout_s=3.0, max_attempts=1)
    with Bridge("ghost", org=ORG, unit=unit, broker=broker_url, retry=slow, max_connections=4) as bridge:
        port = bridge.port
        idle = [_half_sent(port) for _ in range(10)]
        status, _, _ = call(port, "GET", "/.well-known/agent-card.json", timeout=3)
        assert status == 200 and bridge.stats.connections_evicted >= 7
        for sock in idle:
            sock.close()

        waiting = [threading.Thread(target=call, args=(port, "POST", "/", rpc_body("ListTasks", {}),
                                                       {"Content-Type": "application/json"}))
                   for _ in range(4)]
        for t in waiting:
            t.start()
        assert wait_until(lambda: bridge.stats.in_progress == 4)
        status, headers, data = call(port, "GET", "/.well-known/agent-card.json", timeout=3)
        assert status == 503 and headers["retry-after"] == "1" and b"busy" in data
        assert bridge.stats.connections_refused == 1
        for t in waiting:
            t.join(10)


def test_a_flood_of_invalid_requests_is_logged_once(bridge, caplog):
    """Before: uvicorn's "Invalid HTTP request received." once per request (200 lines here)."""
    with caplog.at_level(logging.WARNING):
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", bridge.port), timeout=5) as s:
                s.sendall(b"NOT HTTP\x00\r\n\r\n")
                assert s.recv(1024).startswith(b"HTTP/1.1 400")
        assert call(bridge.port, "GET", "/.well-known/agent-card.json")[0] == 200
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # one line per 10 s for the whole process (an earlier test's refusals may take this interval's)
    assert len(lines) <= 2 and all(line.startswith("refused a request that is not valid HTTP") for line in lines), \
        lines[:5]


def test_refusals_are_logged_once_per_interval(caplog):
    import asyncio

    from a2a_nb.bridge.connections import RefusalLog

    async def flood() -> None:
        refusals = RefusalLog(interval_s=0.2)
        for i in range(10_000):
            refusals.note("refused a request from a web page", f'"https://evil{i}.example"')
        await asyncio.sleep(0.4)

    with caplog.at_level(logging.WARNING, logger="a2a_nb.bridge.connections"):
        asyncio.run(flood())
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ['refused a request from a web page ("https://evil0.example")',
                     'refused a request from a web page: 9999 more in the last 0.2 s '
                     '(last: "https://evil9999.example")']


# -- a stream whose broker is killed -----------------------------------------------------------------------
def test_a_stream_says_its_broker_is_gone_and_ends_within_the_bridges_patience(private_broker):
    """kill -9 of the broker mid-stream. Before: 30 s (here 3 s) of silence, then "ticket-desk did
    not answer"; now the SSE comments say what happens and the end names the task to re-subscribe to."""
    unit = uid("brg")
    retry = RetryProfile(reply_first_timeout_s=1.0, stream_idle_timeout_s=3.0, max_attempts=2, backoff_s=(0.1,))
    with TicketDesk(org=ORG, unit=unit, broker=private_broker.url, pace=0.3), \
            Bridge("ticket-desk", org=ORG, unit=unit, broker=private_broker.url, retry=retry) as bridge:
        conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=20)
        conn.request("POST", "/", body=json.dumps(rpc_body("SendStreamingMessage", send_params(
            TICKET_TEXT + "\n" + REPRO_TEXT))), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        lines: list[tuple[float, str]] = []
        killed = 0.0
        while True:
            line = response.fp.readline().decode()
            if not line or line == "0\r\n":  # the chunked response's end
                break
            if line.startswith(("data:", ":", "event:")):
                lines.append((time.monotonic(), line.strip()))
            if not killed and line.startswith("data:"):
                private_broker.crash()  # the broker dies without a word (SIGKILL)
                killed = time.monotonic()
        conn.close()
    gone = [(t, text) for t, text in lines if text.startswith(": broker gone")]
    assert gone and gone[0][0] - killed < 2.5, lines
    assert "reconnecting" in gone[0][1] and "; this stream ends in" in gone[0][1]
    assert any("(attempt 1)" in text for _, text in gone), gone  # the session's own words
    (t_end, event), (_, data) = lines[-2], lines[-1]
    assert event == "event: error" and t_end - killed < 3.0 + 2.5
    error = json.loads(data[5:])["error"]
    assert error["code"] == -32004 and "lost its MQTT broker" in error["message"]
    assert "SubscribeToTask" in error["message"] and bridge.stats.streams_open == 0


def test_after_a_broker_restart_a_stream_recovers_when_the_agent_announces_itself(private_broker):
    """kill -9, then the broker back on its port: the agents reconnect and publish their cards again,
    and the stream asks for its task at once (GetTask) instead of after its 10 s of silence. Before:
    the silence, then the recovery. The comments say what happened, the attempt number included."""
    unit = uid("brg")
    retry = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=10.0, max_attempts=2, backoff_s=(0.1,))
    with TicketDesk(org=ORG, unit=unit, broker=private_broker.url, pace=0.3), \
            Bridge("ticket-desk", org=ORG, unit=unit, broker=private_broker.url, retry=retry) as bridge:
        conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=30)
        conn.request("POST", "/", body=json.dumps(rpc_body("SendStreamingMessage", send_params(
            TICKET_TEXT + "\n" + REPRO_TEXT))), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        lines: list[tuple[float, str]] = []
        killed = back = 0.0
        while True:
            line = response.fp.readline().decode()
            if not line or line == "0\r\n":
                break
            if line.startswith(("data:", ":", "event:")):
                lines.append((time.monotonic(), line.strip()))
            if not killed and line.startswith("data:"):
                private_broker.crash()
                killed = time.monotonic()
            if killed and not back and line.startswith(": broker gone for 1 s"):
                private_broker.restart()  # the same port; Mosquitto without persistence: no retained cards
                back = time.monotonic()
        conn.close()
    texts = [text for _, text in lines]
    assert any("reconnecting to mqtt://" in t and "(attempt 1)" in t for t in texts), texts
    assert any(t.startswith(": broker back after") for t in texts), texts
    recovered = [(t, text) for t, text in lines if t > back and text.startswith("data:") and '"task":{' in text]
    assert back and recovered and recovered[0][0] - back < 5.0, "GetTask once the desk announced itself"
    assert not any(t == "event: error" for t in texts), texts
    last = json.loads(texts[-1][5:])["result"]
    state = (last.get("task") or last.get("statusUpdate"))["status"]["state"]
    assert state in ("TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"), last


def test_a_card_nested_too_deep_is_ignored_not_a_crash(broker_url, unit, caplog):
    """The bridge reads the agent's card as a peer's bytes (``cards.parse_card``: 64 KiB, 64
    levels): a card nested 100,000 deep is logged and ignored (before: RecursionError on the
    network thread), and the good card published after it is served."""
    from a2a_nb.bridge.card import CardWatch
    from a2a_nb.story.cast import desk_card

    session = Session(ORG, unit, uid("bridge-card"), broker=broker_url)
    evil = Session(ORG, unit, uid("evil"), broker=broker_url)
    try:
        watch = CardWatch(session, ORG, unit, "ghost")
        topic = topics.discovery_topic(ORG, unit, "ghost")
        with caplog.at_level("WARNING", logger="a2a_nb.bridge.card"):
            evil.publish(MqttMessage(topic, b"[" * 100_000 + b"]" * 100_000, qos=1, retain=True))
            assert watch.wait(1.0) is None
        assert any("card is not usable JSON" in r.getMessage() for r in caplog.records)
        evil.publish(MqttMessage(topic, json.dumps(desk_card(ORG, unit)).encode(), qos=1, retain=True))
        assert watch.wait(5.0)["name"] == "Ticket desk"
    finally:
        evil.close()
        session.close()

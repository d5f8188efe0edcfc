"""ubsp-v1 attacked as a hostile peer would (issue 35 items 1-4), on a real Mosquitto, with the command line.

An operator (bare paho, reading and writing the test unit's ``$a2a/`` topics) captures sealed
messages and plays them back where they do not belong; ``serve echo`` / ``serve ticket-desk`` and
``send --ubsp`` run as a user runs them, their keys in a key home of the test's own. What each test
covers is listed in docs/surfaces-ubsp.md.
"""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from joserfc import jwe
from joserfc.jwk import KeySet

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.protocol import ubsp
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import echo_card, echo_handler
from a2a_nb.ubsp.keys import CONTENT_ALG, KEY_ALG, AgentKeys
from a2a_nb.ubsp.local_keys import LocalKeys
from tests.ubsp.test_ubsp_wire import ORG, REPORT, Operator, as_kit
from tests.waiting import wait_until
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]


@pytest.fixture
def env(broker_url, tmp_path):
    e = dict(os.environ)
    e["A2A_BROKER_URL"] = broker_url
    e["XDG_STATE_HOME"] = str(tmp_path / "state")
    e["A2A_UBSP_DIR"] = str(tmp_path / "ubsp")
    return e


@pytest.fixture
def served(env):
    """``serve AGENT ...`` as a process; stopped (and checked to stop cleanly) at the end."""
    procs: list[subprocess.Popen] = []

    def serve(*args: str) -> subprocess.Popen:
        p = subprocess.Popen(CLI + ["serve", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        assert "serving" in (p.stdout.readline() if p.stdout else ""), p.stderr.read() if p.stderr else ""
        return p

    yield serve
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=20)


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    assert p.wait(timeout=20) == 0


def request_props(requester: str, recipient: str) -> tuple:
    return ubsp.request_properties(requester, recipient)


def error_of(m, reader=None) -> dict:
    """The JSON-RPC error of a refusal: in plaintext, or (``reader``: the requester's ubsp-v1, which
    can open it) sealed to the requester; fails on an answer with a result."""
    sealed = getattr(m.properties, "ContentType", None) is not None
    assert reader is not None or not sealed, "a sealed answer to a request of the attacker's"
    answer = reader.read_recorded(as_kit(m), ORG, m.topic.split("/")[4]).json() if sealed else json.loads(m.payload)
    assert "result" not in answer, answer
    return answer["error"]


def replies_on(operator: Operator, correlation: bytes) -> list:
    return [m for m in operator.on("/reply/") if getattr(m.properties, "CorrelationData", None) == correlation]


# -- item 1: a sealed reply is bound to its request ------------------------------------------------------
def test_a_sealed_reply_replayed_as_the_answer_to_the_next_send_is_refused(env, broker_url, tmp_path):
    """The operator keeps the sealed reply to ``send echo "PAY 10 EUR TO ALICE" --ubsp`` and, while
    echo is held back, answers the next ``send echo "PAY 9000 EUR TO BOB" --ubsp`` with it (the new
    Correlation Data, the old JWE). The requester refuses it, in one line naming why, and takes
    echo's real answer. (Before: it printed the old answer, exit 0.)"""
    unit = uid("bind")
    operator = Operator(broker_url, unit)
    with LocalKeys(tmp_path / "ubsp") as home:
        echo = Responder("echo", echo_handler, org=ORG, unit=unit, broker=broker_url, card=echo_card(ORG, unit),
                         options=ResponderOptions(inline=True), ubsp=home.ubsp(ORG, unit, "echo"))
        try:
            first = subprocess.run(CLI + ["send", "echo", "PAY 10 EUR TO ALICE", "--unit", unit, "--ubsp"], env=env,
                                   capture_output=True, text=True, timeout=60)
            assert first.returncode == 0 and "PAY 10 EUR TO ALICE" in first.stdout, first.stderr
            [kept] = operator.on("/reply/")
            echo.frozen = True  # the broker holds echo's answer back (it reads and does not answer)
            second = subprocess.Popen(CLI + ["send", "echo", "PAY 9000 EUR TO BOB", "--unit", unit, "--ubsp",
                                             "--timeout", "30"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            said: list[str] = []
            reader = threading.Thread(target=lambda: said.extend(second.stderr or ()), daemon=True)
            reader.start()
            assert wait_until(lambda: len(operator.on("/request/")) == 2, 30), "the second request never came"
            request = operator.on("/request/")[1]
            operator.publish(dataclasses.replace(as_kit(kept), topic=request.properties.ResponseTopic,
                                                 correlation_data=request.properties.CorrelationData))
            refused = wait_until(lambda: any("refused a sealed reply" in line for line in said) or second.poll() is not None, 30)
            assert refused and second.poll() is None, \
                f"the replayed reply was taken: {second.stdout.read() if second.stdout else ''}"
            echo.frozen = False
            operator.publish(as_kit(request))  # echo now reads the request (as a retry would bring it)
            out, _ = second.communicate(timeout=60)
            reader.join(5)
            assert second.returncode == 0, said
            assert "PAY 9000 EUR TO BOB" in out and "PAY 10 EUR" not in out, out
            line = next(line for line in said if "refused a sealed reply" in line)
            assert "answers another request (request jti" in line and line.count("\n") == 1
            assert "1 refused" in out
        finally:
            echo.stop()
            operator.close()


def test_stream_items_replayed_into_another_stream_are_refused(broker_url):
    """One requester identity, two processes (two ``send --stream --ubsp`` of one user, B's keys
    loaded before A's stream ran): the sealed stream items of A's SendStreamingMessage, played back
    with the Correlation Data of B's, are each refused (B never saw their jti and they were issued
    after it started: only the binding to B's request tells them apart); B's stream then ends with
    its own items. (Before: B took A's items.)"""
    from a2a_nb.protocol import cards
    from a2a_nb.ubsp.protection import Ubsp
    from tests.ubsp.test_ubsp_wire import INLINE, analyst

    unit = uid("bind")
    operator = Operator(broker_url, unit)
    card = cards.agent_card(name="Analyst", description="Analyses tickets.", version="1.0.0", org=ORG, unit=unit,
                            agent="analyst", skills=[cards.skill("rca", "Root cause", "Finds root causes", tags=["t"])],
                            streaming=True)
    agent = Responder("analyst", analyst, org=ORG, unit=unit, broker=broker_url, card=card,
                      ubsp=Ubsp(AgentKeys("analyst"), INLINE))
    keys = AgentKeys("coordinator")
    b_keys = AgentKeys("coordinator", keys.private_jwks())  # B's process starts ...
    a = Requester("coordinator", org=ORG, unit=unit, broker=broker_url, ubsp=Ubsp(keys, INLINE))
    try:
        assert list(a.stream("analyst", "TCK-1"))
        wait_until(lambda: len(operator.on("/reply/")) >= 4, 5)
        kept = list(operator.on("/reply/"))
    finally:
        a.close()  # ... and connects once A is done (one client id: one session at a time)
    b = Requester("coordinator", org=ORG, unit=unit, broker=broker_url, ubsp=Ubsp(b_keys, INLINE))
    try:
        agent.frozen = True
        results: list = []
        worker = threading.Thread(target=lambda: results.append(list(b.stream("analyst", "TCK-2"))))
        worker.start()
        assert wait_until(lambda: len(operator.on("/request/")) == 2, 10)
        request = operator.on("/request/")[1]
        for m in kept:
            operator.publish(dataclasses.replace(as_kit(m), topic=request.properties.ResponseTopic,
                                                 correlation_data=request.properties.CorrelationData))
        assert wait_until(lambda: b.stats.refused >= len(kept) or not worker.is_alive(), 15), b.stats
        assert b.stats.refused == len(kept), f"B took A's stream items: {results}"
        agent.frozen = False
        operator.publish(as_kit(request))
        worker.join(30)
        [events] = results
        text = "".join(p["text"] for e in events if e.kind == "artifactUpdate" for p in e.data["artifact"]["parts"])
        assert text == REPORT and "TCK-2" in json.dumps(events[-1].data) and "TCK-1" not in json.dumps([e.data for e in events])
    finally:
        b.close()
        agent.stop()
        operator.close()


# -- item 2: replays survive a restart ---------------------------------------------------------------------
@pytest.mark.parametrize("agent", ["echo", "ticket-desk --store"])
def test_a_sealed_request_replayed_after_the_agent_restarts_is_refused(agent, served, env, broker_url, tmp_path):
    """A requester that stays up (its keys still served) sends one sealed request; the operator
    keeps it, the agent restarts (echo without a store; the desk with ``--store``), and the operator
    publishes the request again within its 60 s: refused as a replay, nothing run.
    (Before: the restarted agent answered it, sealed.)"""
    unit = uid("restart")
    name, *store = agent.split()
    args = [name, "--unit", unit] + ([store[0], str(tmp_path / "desk.db"), "--pace", "0.01"] if store else [])
    operator = Operator(broker_url, unit)
    serving = served(*args)
    with LocalKeys(tmp_path / "ubsp") as home:
        coordinator = Requester("coordinator", org=ORG, unit=unit, broker=broker_url,
                                ubsp=home.ubsp(ORG, unit, "coordinator"))
        try:
            coordinator.send(name, "Analyze ticket TCK-4821")
            captured = next(m for m in operator.on("/request/") if m.topic.endswith("/" + name))
            stop(serving)
            served(*args)
            again = dataclasses.replace(as_kit(captured), correlation_data=uuid.uuid4().bytes)
            operator.publish(again)
            assert wait_until(lambda: replies_on(operator, again.correlation_data), 30), "no answer to the replay"
            err = error_of(replies_on(operator, again.correlation_data)[0], coordinator.ubsp)
            assert err["code"] == -32005 and "replayed" in err["message"], err
            assert coordinator.send(name, "Analyze ticket TCK-4822").result  # a new request is answered
        finally:
            coordinator.close()
            operator.close()


# -- item 3: no decompression bomb -------------------------------------------------------------------------
BOMB_BYTES = 96 << 20  # inflated size; deflated to ~128 KiB


@pytest.fixture(scope="module")
def bomb_for():
    made: dict = {}

    def bomb(public_jwks: dict) -> bytes:
        """A ``zip: DEF`` JWE of 96 MiB of zeros sealed to these keys (anyone can: they are public)."""
        key = next(k for k in KeySet.import_key_set(public_jwks) if k.get("use") == "enc")
        if key.kid not in made:
            made[key.kid] = jwe.encrypt_compact({"alg": KEY_ALG, "enc": CONTENT_ALG, "zip": "DEF", "kid": key.kid},
                                                b"\0" * BOMB_BYTES, key).encode()
        return made[key.kid]
    return bomb


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_compressed_sealed_request_is_refused_before_it_is_inflated(served, env, broker_url, tmp_path, bomb_for):
    """Three ~128 KiB sealed requests with ``zip: DEF`` (96 MiB each once inflated) to ``serve echo``:
    each is refused (-32005, naming the compression) and the agent's peak memory barely moves.
    (Before: each was inflated before any signature check, +96 MB each.)"""
    unit = uid("bomb")
    operator = Operator(broker_url, unit)
    echo = served("echo", "--unit", unit)
    private = json.loads((tmp_path / "ubsp" / "agents" / f"{ORG}.{unit}.echo.jwks.json").read_text())
    sealed = bomb_for(AgentKeys("echo", private).public_jwks())
    assert 100_000 < len(sealed) < 140_000
    try:
        before = peak_rss_mb(echo.pid)
        sent = []
        for _ in range(3):
            msg = MqttMessage(f"$a2a/v1/request/{ORG}/{unit}/echo", sealed,
                              response_topic=f"$a2a/v1/reply/{ORG}/{unit}/mallory/x",
                              correlation_data=uuid.uuid4().bytes, content_type=ubsp.CONTENT_TYPE,
                              user_properties=request_props("mallory", "echo"))
            operator.publish(msg)
            sent.append(msg.correlation_data)
        assert wait_until(lambda: all(replies_on(operator, c) for c in sent), 60), "not every bomb was answered"
        for c in sent:
            err = error_of(replies_on(operator, c)[0])
            assert err["code"] == -32005 and "compressed JWE" in err["message"], err
        grown = peak_rss_mb(echo.pid) - before
        assert grown < 40, f"echo's peak memory grew by {grown:.0f} MB"
    finally:
        operator.close()


# -- item 4: a slow key server freezes nobody --------------------------------------------------------------
class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never answers (a key server that hangs)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted += 1

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def test_a_key_server_that_never_answers_freezes_nobody(served, env, broker_url, tmp_path):
    """A retained key-metadata event names ``mallory``'s keys at a jwksUri on a trusted host
    (127.0.0.1) whose server accepts and never answers; then 20 garbage sealed requests and 3
    well-formed ones (sealed to echo's public key, signed by a key of mallory's own) naming mallory.
    A plain ``send`` from another client is answered within its 10 s (one attempt); the garbage is
    refused without a key fetch, and mallory's key server is asked at most once.
    (Before: each refusal fetched on the network thread for 3 s: echo answered nobody for ~60 s.)"""
    unit = uid("slowkeys")
    operator = Operator(broker_url, unit)
    silent = SilentServer()
    echo = served("echo", "--unit", unit)
    event = f"$a2a/v1/event/{ORG}/{unit}/mallory"
    private = json.loads((tmp_path / "ubsp" / "agents" / f"{ORG}.{unit}.echo.jwks.json").read_text())
    echo_keys = AgentKeys("echo", private).public_jwks()
    mallory = AgentKeys("mallory")
    try:
        operator.publish(dataclasses.replace(ubsp.key_metadata_message(
            ORG, unit, "mallory", {"jwksUri": f"https://127.0.0.1:{silent.port}/jwks/mallory.json"}), retain=True))
        sent = []
        for i in range(23):
            payload = (b"eyJhbGciOiJFQ0RILUVTK0EyNTZLVyIsImVuYyI6IkEyNTZHQ00ifQ.AAAA.BBBB.CCCC.DDDD" if i < 20 else
                       mallory.seal(b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}', "echo", echo_keys).encode())
            msg = MqttMessage(f"$a2a/v1/request/{ORG}/{unit}/echo", payload,
                              response_topic=f"$a2a/v1/reply/{ORG}/{unit}/mallory/r",
                              correlation_data=uuid.uuid4().bytes, content_type=ubsp.CONTENT_TYPE,
                              user_properties=request_props("mallory", "echo"))
            operator.publish(msg)
            sent.append(msg.correlation_data)
        started = time.monotonic()
        plain = subprocess.run(CLI + ["send", "echo", "hello", "--unit", unit, "--timeout", "10"], env=env,
                               capture_output=True, text=True, timeout=120)
        took = time.monotonic() - started
        assert plain.returncode == 0 and "echo: hello" in plain.stdout, plain.stderr
        assert "attempt 1" not in plain.stderr, f"the first attempt was not answered within 10 s: {plain.stderr}"
        print(f"plain send answered in {took:.2f} s")
        assert wait_until(lambda: all(replies_on(operator, c) for c in sent[:20]), 30)
        for c in sent[:20]:
            assert error_of(replies_on(operator, c)[0])["code"] == -32005
        assert wait_until(lambda: all(replies_on(operator, c) for c in sent[20:]), 30)
        assert all("refused jwksUri" in error_of(replies_on(operator, c)[0])["message"] for c in sent[20:])
        assert silent.accepted <= 1  # the first lookup fetched; the others found the failure cached
        assert echo.poll() is None
    finally:
        operator.client.publish(event, b"", qos=1, retain=True).wait_for_publish(5)
        silent.close()
        operator.close()

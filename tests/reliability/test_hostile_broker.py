"""A hostile broker bounds the client (issue 18 item 8): a fake broker written with raw sockets on
127.0.0.1 (``tests/hostile_broker.py``) against ``check-broker``, ``serve echo`` and a bare Session.

Before: a flood of QoS 0 PUBLISHes on a topic nobody subscribed grew without end (every message
kept in the session's inbox); a CONNACK announcing 256 MB was read whole (~800 MB) and then taken
as a real CONNACK; an HTTP answer cost the whole connect timeout. After: the flood is dropped, the
inbox is bounded, a packet over the Maximum Packet Size (sent in CONNECT) ends the connection, and
an answer to CONNECT that is not a small CONNACK is "not an MQTT broker", said in one line.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from a2a_nb.mqtt import network_loop
from a2a_nb.mqtt.session import MAX_PACKET_BYTES, BoundedInbox, ConnectFailed, Session
from a2a_nb.protocol.packet import MqttMessage
from tests.hostile_broker import HUGE, HostileBroker
from tests.waiting import wait_until

GROWTH_MB = 200  # what one command may grow by, whatever the broker sends


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_against(broker: HostileBroker, args: list[str], tmp_path, *, until_sent: int = 0,
                deadline: float = 60.0) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``python -m a2a_nb ARGS`` against ``broker``, sampling its RSS until it ends, or (with
    ``until_sent``) until the broker has sent that many bytes; then it is stopped. Returns what it
    printed, its first RSS sample and its peak (MB)."""
    env = dict(os.environ, A2A_BROKER_URL=broker.url, XDG_STATE_HOME=str(tmp_path / "state"),
               A2A_UBSP_DIR=str(tmp_path / "ubsp"))
    env.pop("A2A_BROKER_CREDENTIALS", None)
    p = subprocess.Popen([sys.executable, "-m", "a2a_nb", *args], env=env, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    start = time.monotonic()
    first = peak = 0.0
    while p.poll() is None and time.monotonic() - start < deadline:
        now = rss_mb(p.pid)
        first, peak = first or now, max(peak, now)
        if until_sent and broker.sent >= until_sent or peak > 3000:
            break
        time.sleep(0.05)
    if p.poll() is None:
        p.kill()
    out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err), first, peak


@pytest.mark.parametrize("mode", ["garbage", "huge-connack"])
@pytest.mark.parametrize("command", [["check-broker"], ["serve", "echo"]])
def test_an_answer_to_connect_that_is_no_connack_is_not_an_mqtt_broker(mode, command, tmp_path):
    with HostileBroker(mode) as broker:
        done, first, peak = run_against(broker, command, tmp_path, deadline=60)
    assert done.returncode == 1, (done.returncode, done.stderr)
    said = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("connecting to ")]
    assert len(said) == 1 and "not an MQTT broker" in said[0], done.stderr
    assert broker.url in said[0] and "Traceback" not in done.stderr
    if mode == "garbage":
        assert "b'HTTP/1.1 400 Bad'" in said[0]
    else:
        assert f"{HUGE:,} bytes" in said[0]
    assert peak - first < 50, f"{peak - first:.0f} MB read from a broker that is none"
    assert "CONNACK says" not in done.stdout  # never reported as a real CONNACK


def test_a_flood_on_a_topic_nobody_subscribed_is_dropped(tmp_path):
    """``check-broker`` against a broker that answers SUBSCRIBE and PUBLISH but floods QoS 0 messages
    of 16 KiB on another topic: its memory stays bounded while the broker sends 400 MB."""
    with HostileBroker("flood") as broker:
        done, first, peak = run_against(broker, ["check-broker", "--timeout", "20"], tmp_path,
                                        until_sent=400 * 1024 * 1024, deadline=90)
        sent_mb = broker.sent / 1024 / 1024
    assert sent_mb >= 100, f"the fake broker only got {sent_mb:.0f} MB out: too slow a machine to tell"
    growth = peak - first
    assert growth < min(GROWTH_MB, sent_mb / 2), f"grew {growth:.0f} MB while the broker sent {sent_mb:.0f} MB"
    assert "a topic this client never subscribed to" in done.stderr or done.returncode == -9


def test_a_packet_over_the_maximum_packet_size_ends_the_connection(tmp_path):
    """A real CONNACK, then a PUBLISH announcing 256 MB, on every reconnect: ``check-broker`` grows by
    far less than that, however long it runs."""
    with HostileBroker("huge-publish") as broker:
        done, first, peak = run_against(broker, ["check-broker", "--timeout", "10"], tmp_path,
                                        until_sent=600 * 1024 * 1024, deadline=90)
        sent_mb = broker.sent / 1024 / 1024
        connections = broker.connections
    assert sent_mb >= 300, f"the fake broker only got {sent_mb:.0f} MB out"
    assert connections >= 2, "the connection was never ended (or never tried again)"
    assert peak - first < GROWTH_MB, f"grew {peak - first:.0f} MB while the broker sent {sent_mb:.0f} MB"


def test_a_session_says_why_it_left_and_asks_for_the_maximum_packet_size():
    with HostileBroker("huge-publish") as broker:
        told: list[str] = []
        s = Session("acme", "hostile", "victim", broker=broker.url, connect=False)
        s.on_link = told.append
        s.connect(10)
        try:
            assert wait_until(lambda: any("Maximum Packet Size" in t for t in told), 30), told
        finally:
            s.close()
        connect = broker.connects[0]
    assert b"\x27" + MAX_PACKET_BYTES.to_bytes(4, "big") in connect  # property 39: Maximum Packet Size
    assert "more than 16,777,216 bytes" in next(t for t in told if "Maximum Packet Size" in t)


def test_a_session_drops_what_it_never_subscribed_to():
    with HostileBroker("flood") as broker:
        s = Session("acme", "hostile", "flooded", broker=broker.url)
        try:
            assert wait_until(lambda: s.unsolicited >= 1000, 60), s.unsolicited
            assert s.inbox.qsize() == 0
        finally:
            s.close()


def test_a_real_broker_keeps_within_the_maximum_packet_size_a_client_asks_for(broker_url):
    small = Session("acme", "maxpacket", "small", broker=broker_url, max_packet_size=4096)
    sender = Session("acme", "maxpacket", "sender", broker=broker_url)
    got: list[MqttMessage] = []
    try:
        small.subscribe("acme/maxpacket/t", handler=got.append)
        sender.publish(MqttMessage("acme/maxpacket/t", b"x" * 8000))
        sender.publish(MqttMessage("acme/maxpacket/t", b"small"))
        assert wait_until(lambda: any(m.payload == b"small" for m in got), 10)
        assert [m.payload for m in got] == [b"small"]  # Mosquitto dropped the one over 4,096 bytes
        assert small.connected
    finally:
        small.close()
        sender.close()


def test_the_inbox_is_bounded_in_messages_and_bytes():
    inbox = BoundedInbox(max_messages=3, max_bytes=100)
    assert all(inbox.offer(MqttMessage("t", b"x" * 10)) for _ in range(3))
    assert not inbox.offer(MqttMessage("t", b"x")) and inbox.dropped == 1
    assert inbox.get_nowait().payload == b"x" * 10 and inbox.bytes == 20
    assert not inbox.offer(MqttMessage("t", b"x" * 81)) and inbox.offer(MqttMessage("t", b"x" * 80))
    assert inbox.qsize() == 3 and inbox.bytes == 100


@pytest.mark.parametrize("head, verdict", [
    (b"\x20\x03\x00\x00\x00", None),
    (b"\x20", ""),  # the length is still to come
    (b"\x20\xff\xff", ""),
    (b"\x20\xff\xff\xff\x7f", "announced 268,435,455 bytes"),
    (b"\x20\x81\x80\x04", "announced 65,537 bytes"),  # one more than a first packet may have
    (b"\x20\xff\xff\xff\xff\x01", "no valid packet length"),
    (b"HTTP/1.1 200 OK", "it answered CONNECT with b'HTTP/1.1 200 OK'"),
    (b"\x30\x03\x00\x01t", "not a CONNACK"),
    (b"\x1b[2J\x07", r"b'\x1b[2J\x07'"),  # escaped, never sent to a terminal as it is
])
def test_the_first_bytes_of_a_broker_are_judged(head, verdict):
    said = network_loop.first_packet_verdict(head)
    if verdict is None or verdict == "":
        assert said == verdict
    else:
        assert said and said.startswith("not an MQTT broker") and verdict in said, said


def test_a_session_cannot_connect_to_a_web_server():
    with HostileBroker("garbage") as broker:
        with pytest.raises(ConnectFailed, match="is not an MQTT broker: it answered CONNECT with b'HTTP/1.1"):
            Session("acme", "hostile", "web", broker=broker.url, connect_timeout=20)

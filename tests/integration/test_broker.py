"""The embedded Mosquitto: start, accept MQTT v5, stop; actionable errors; external URLs."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from a2a_nb.mqtt import broker as broker_mod
from a2a_nb.mqtt.broker import BrokerEndpoint, BrokerError, EmbeddedBroker, port_accepts
from a2a_nb.mqtt.session import Session


def test_stop_removes_the_brokers_temp_folder():
    b = EmbeddedBroker().start()
    folder = b.workdir
    b.restart()
    assert b.running and b.workdir.exists()
    b.stop()
    assert not folder.exists() and not b.workdir.exists()


def test_embedded_broker_starts_accepts_v5_and_stops():
    with EmbeddedBroker() as b:
        assert b.running and port_accepts("127.0.0.1", b.port)
        conf = (b.workdir / "mosquitto.conf").read_text()
        assert "set_tcp_nodelay true" in conf and "persistence false" in conf
        s = Session("acme", "support", "probe", broker=b.url)
        assert s.connected
        s.close()
        port = b.port
    assert not b.running
    assert not port_accepts("127.0.0.1", port)


def test_log_is_written_after_privilege_drop():
    with EmbeddedBroker() as b:
        Session("acme", "support", "logprobe", broker=b.url).close()
        deadline = time.time() + 3
        while "logprobe" not in b.log_text() and time.time() < deadline:
            time.sleep(0.05)
        assert "acme/support/logprobe" in b.log_text()


def test_busy_port_gives_an_actionable_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(BrokerError, match=r"already in use.*--port"):
            EmbeddedBroker(port=port).start()


def test_missing_binary_names_the_install_command(monkeypatch):
    monkeypatch.setattr(broker_mod.shutil, "which", lambda name: None)
    monkeypatch.setattr(broker_mod.os, "access", lambda path, mode: False)
    with pytest.raises(BrokerError, match="apt-get install mosquitto") as info:
        EmbeddedBroker().start()
    assert "brew install mosquitto" in str(info.value) and "A2A_BROKER_URL" in str(info.value)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("mqtt://127.0.0.1:1884", BrokerEndpoint("127.0.0.1", 1884)),
        ("mqtt://broker.local", BrokerEndpoint("broker.local", 1883)),
        ("mqtts://alice:s%40cret@hive.example:8884?ca=/etc/ca.pem",
         BrokerEndpoint("hive.example", 8884, True, "alice", "s@cret", "/etc/ca.pem")),
        ("mqtts://emqx.example", BrokerEndpoint("emqx.example", 8883, True)),
        ("mqtt://h:1?inflight=0", BrokerEndpoint("h", 1, inflight=0)),
    ],
)
def test_broker_url_parsing(url, expected):
    assert BrokerEndpoint.from_url(url) == expected


def test_embedded_broker_url_round_trips_its_window():
    with EmbeddedBroker() as b:
        assert BrokerEndpoint.from_url(b.url) == b.endpoint and b.endpoint.inflight == 0


def test_printed_url_hides_the_password():
    ep = BrokerEndpoint.from_url("mqtts://alice:secret@h:8883")
    assert "secret" not in ep.url and "secret" in ep.url_with_secret


@pytest.mark.parametrize("bad", ["http://x:1", "tcp://x", "mqtt://", "mqtt://h:notaport", "mqtt://h:1?inflight=x"])
def test_bad_broker_url_is_refused_clearly(bad):
    with pytest.raises(BrokerError, match="mqtt"):
        BrokerEndpoint.from_url(bad)


def test_ca_file_from_environment(monkeypatch):
    monkeypatch.setenv("A2A_BROKER_CA", "/tmp/ca.pem")
    assert BrokerEndpoint.from_url("mqtts://h").ca_file == "/tmp/ca.pem"


def test_resolve_prefers_the_environment(monkeypatch):
    monkeypatch.setenv("A2A_BROKER_URL", "mqtt://10.1.2.3:1999")
    assert broker_mod.resolve() == BrokerEndpoint("10.1.2.3", 1999)


def test_cli_broker_prints_its_url_first_and_accepts_a_client():
    env = dict(os.environ)
    env.pop("A2A_BROKER_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "broker"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("mqtt://127.0.0.1:")
        s = Session("acme", "support", "cli-probe", broker=first)
        assert s.publish_nowait is not None and s.connected
        s.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert not port_accepts("127.0.0.1", BrokerEndpoint.from_url(first).port)


def test_restart_keeps_the_port(private_broker):
    port = private_broker.port
    private_broker.restart()
    assert private_broker.port == port and port_accepts("127.0.0.1", port)


def test_broker_stops_when_the_process_that_started_it_is_killed(tmp_path):
    """A SIGKILLed notebook kernel runs no atexit: the watchdog still stops its Mosquitto."""
    script = tmp_path / "orphan.py"
    script.write_text("import os\nfrom a2a_nb.mqtt.broker import EmbeddedBroker\n"
                      "b = EmbeddedBroker().start()\nprint(b.port, b.workdir, flush=True)\nos.kill(os.getpid(), 9)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    port, workdir = out.stdout.split()
    port = int(port)
    shutil.rmtree(workdir, ignore_errors=True)  # a SIGKILLed process cannot tidy up its temp folder
    deadline = time.time() + 5
    while port_accepts("127.0.0.1", port) and time.time() < deadline:
        time.sleep(0.05)
    assert not port_accepts("127.0.0.1", port)


@pytest.mark.parametrize("bad", ["http://alice:s3cret@host", "mqtt://alice:s3cret@host:notaport",
                                 "mqtt://alice:s3cret@:1883", "mqtt://alice:s3cret@host?inflight=x"])
def test_errors_about_a_bad_url_never_show_its_password(bad):
    with pytest.raises(BrokerError) as exc:
        BrokerEndpoint.from_url(bad)
    assert "s3cret" not in str(exc.value) and "alice:***@" in str(exc.value)

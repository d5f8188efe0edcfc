"""Bridged brokers attacked from the command line (issue [18] item 6).

``python -m a2a_nb broker --bridge-to URL`` writes the URL's parts into a ``mosquitto.conf``: a password
``s3cret%0Alistener%20PORT%20...%0Aallow_anonymous%20true`` became config lines (a second, anonymous
listener; a ``plugin`` line would load code). ``ps`` showed the password; the config was 0644. Two
brokers bridged to each other, or one bridged to itself, turned one publish into 54,000 copies in 10 s.

Each attack is run as an attacker (or a careless operator) would: the command line, bare paho counting
copies of one publish, a TCP proxy that leads a bridge back to its own broker. Real Mosquittos, every
wait bounded.
"""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from a2a_nb.mqtt.bridged import LOOP_GRACE_S, BridgedBroker, LoopGuard
from a2a_nb.mqtt.broker import BrokerEndpoint, BrokerError, free_port, port_accepts
from tests.broker_proxy import Limits, LimitedBroker
from tests.waiting import wait_until

pytestmark = pytest.mark.broker  # its helpers start bridged Mosquittos

CLI = [sys.executable, "-m", "a2a_nb", "broker"]
LOOP_SAID = "brings messages back"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("A2A_BROKER_URL", "A2A_BRIDGE_PASSWORD")}
    env.update(extra)
    return env


class BrokerCommand:
    """``python -m a2a_nb broker ARGS`` in the background; always stopped (SIGINT, then SIGKILL)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(CLI + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=env or clean_env())
        self.err = ""

    def exited(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def banner(self) -> tuple[str, str]:
        """Its URL (stdout's first line) and the ``# Mosquitto running (config and log in DIR)`` line."""
        url = self.proc.stdout.readline().strip()
        return url, self.proc.stderr.readline()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        code = self.exited(15)
        if code is None:
            self.proc.kill()
            code = self.proc.wait(10)
        self.err += self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code


def copies_of_one_publish(port: int, topic: str, listen: float = 3.0) -> int:
    """Bare paho on ``port``: subscribe to ``topic``, publish one message there, count what arrives."""
    got, subscribed = [], threading.Event()
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"copies-{time.monotonic_ns()}", protocol=mqtt.MQTTv5)
    c.on_message = lambda *_: got.append(1)
    c.on_subscribe = lambda *_: subscribed.set()
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        assert c.subscribe(topic, qos=0)[0] == mqtt.MQTT_ERR_SUCCESS
        assert subscribed.wait(10), "no SUBACK"
        c.publish(topic, b"once", qos=0)
        time.sleep(listen)
        return len(got)
    finally:
        c.disconnect()
        c.loop_stop()


# -- URL parts are data ------------------------------------------------------------------------------------
INJECTED = {"listener": "%0Alistener%20{port}%20127.0.0.1%0Aallow_anonymous%20true",
            "plugin": "%0Aplugin%20%2Fnonexistent%2Fevil.so%0Alistener%20{port}%20127.0.0.1"}


@pytest.mark.parametrize("part,lines", [("password", "listener"), ("user", "listener"), ("ca", "listener"),
                                        ("password", "plugin")])
def test_a_url_part_with_newlines_never_becomes_config_lines(private_broker, part, lines):
    """The issue's URL (the injected listener on a loopback port, not 0.0.0.0): before, the broker started
    with a second, anonymous listener (or tried to load the plugin); now the command refuses with one
    line, and nothing listens."""
    extra_port = free_port()
    lines = INJECTED[lines].format(port=extra_port)
    remote = {"password": f"mqtt://bridge:s3cret{lines}@127.0.0.1:{private_broker.port}",
              "user": f"mqtt://bridge{lines}@127.0.0.1:{private_broker.port}",
              "ca": f"mqtts://127.0.0.1:{private_broker.port}?ca=/tmp/ca.crt{lines}"}[part]
    broker = BrokerCommand("--bridge-to", remote)
    try:
        code = broker.exited(20)
        listening = port_accepts("127.0.0.1", extra_port)
    finally:
        broker.stop()
    assert not listening, "an injected listener came up"
    assert code == 2 and "Load error" not in broker.err, broker.err
    said = broker.err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("error: "), said
    assert "s3cret" not in broker.err


def test_a_password_from_the_environment_with_newlines_is_refused_too(private_broker):
    extra_port = free_port()
    env = clean_env(A2A_BRIDGE_PASSWORD=f"s3cret\nlistener {extra_port} 127.0.0.1\nallow_anonymous true")
    broker = BrokerCommand("--bridge-to", f"mqtt://bridge@127.0.0.1:{private_broker.port}", env=env)
    try:
        code = broker.exited(20)
        listening = port_accepts("127.0.0.1", extra_port)
    finally:
        broker.stop()
    assert not listening and code == 2, broker.err
    assert "control character (U+000A" in broker.err and "s3cret" not in broker.err


def test_the_listen_address_cannot_add_config_lines_either(tmp_path):
    extra_port = free_port()
    broker = BrokerCommand("--host", f"127.0.0.1\nlistener {extra_port} 127.0.0.1")
    try:
        code = broker.exited(20)
        listening = port_accepts("127.0.0.1", extra_port)
    finally:
        broker.stop()
    assert not listening and code == 2, broker.err
    assert "--host" in broker.err


# -- the password stays out of argv and out of readable files ----------------------------------------------
def test_a_password_on_the_command_line_is_refused(private_broker):
    broker = BrokerCommand("--bridge-to", f"mqtt://bridge:pa55-w0rd@127.0.0.1:{private_broker.port}")
    try:
        code = broker.exited(20)
    finally:
        broker.stop()
    assert code == 2 and "A2A_BRIDGE_PASSWORD" in broker.err and "pa55-w0rd" not in broker.err, broker.err


@pytest.mark.parametrize("source", ["environment", "file"])
def test_the_password_comes_from_the_environment_or_a_file_and_lands_in_a_private_config(private_broker, tmp_path,
                                                                                          source):
    secret = f"pa55 w0rd-{source}"  # a space inside is data too
    url = f"mqtt://bridge@127.0.0.1:{private_broker.port}"
    if source == "environment":
        broker = BrokerCommand("--bridge-to", url, env=clean_env(A2A_BRIDGE_PASSWORD=secret))
    else:
        (tmp_path / "pw").write_text(secret + "\n")
        broker = BrokerCommand("--bridge-to", url, "--bridge-password-file", str(tmp_path / "pw"))
    try:
        own_url, running = broker.banner()
        assert own_url.startswith("mqtt://127.0.0.1:"), broker.stop() or broker.err
        while "In another shell" not in (line := broker.proc.stderr.readline()) and line:
            pass  # the banner's last line: from here on Ctrl-C stops cleanly
        folder = Path(running.split("config and log in ", 1)[1].split(")", 1)[0])
        conf = folder / "mosquitto.conf"
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert f"remote_password {secret}" in conf.read_text().splitlines()
        # what `ps` shows: the command line of the kit and of its Mosquitto
        pids = [broker.proc.pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(broker.proc.pid)],
                                                                    capture_output=True, text=True).stdout.split()]
        for pid in pids:
            assert secret.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    finally:
        code = broker.stop()
    assert code == 0, broker.err
    assert secret not in broker.err


# -- loops -------------------------------------------------------------------------------------------------
def test_a_broker_bridged_to_its_own_port_is_refused():
    port = free_port()
    broker = BrokerCommand("--port", str(port), "--bridge-to", f"mqtt://localhost:{port}")
    try:
        code = broker.exited(20)
    finally:
        broker.stop()
    assert code == 2 and "bridged to itself" in broker.err, broker.err


def test_a_bridge_led_back_to_its_own_broker_by_a_proxy_is_stopped():
    """A path the command cannot see (a proxy, another address of this machine): the loop guard's probe
    comes back, and the broker stops with an error instead of copying every message for ever."""
    port = free_port()
    proxy = LimitedBroker(port, Limits())  # a TCP relay to the broker's own port
    broker = BrokerCommand("--port", str(port), "--bridge-to", proxy.url)
    try:
        code = broker.exited(30)
    finally:
        broker.stop()
        proxy.close()
    assert code == 2 and LOOP_SAID in broker.err, broker.err


def test_two_brokers_bridged_to_each_other_stop_the_loop_and_one_publish_stays_one():
    """A bridged to B and B to A: before, one publish became tens of thousands of copies in seconds. Now
    the loop is found and at least one broker stops (saying why); on a broker still running, one
    publish arrives once."""
    pa, pb = free_port(), free_port()
    a = BrokerCommand("--port", str(pa), "--bridge-to", f"mqtt://127.0.0.1:{pb}")
    b = BrokerCommand("--port", str(pb), "--bridge-to", f"mqtt://127.0.0.1:{pa}")
    try:
        assert wait_until(lambda: a.proc.poll() is not None or b.proc.poll() is not None, 40, 0.1), \
            f"copies of one publish on A in 3 s: {copies_of_one_publish(pa, '$a2a/v1/event/acme/loop/x')}"
        time.sleep(1.5)  # the other guard's next probe: it sees no loop now (or stops too: both were young)
        counts = {p: copies_of_one_publish(p, "$a2a/v1/event/acme/loop/x", listen=2)
                  for p, cmd in ((pa, a), (pb, b)) if cmd.proc.poll() is None}
    finally:
        codes = (a.stop(), b.stop())
    assert 2 in codes and LOOP_SAID in a.err + b.err, (a.err, b.err)
    assert all(n == 1 for n in counts.values()), counts


def test_the_broker_that_was_there_first_keeps_running_when_a_newcomer_closes_a_loop(private_broker):
    """A bridged to B for a while (no loop: B is a plain broker). B is replaced by a broker bridged back to
    A: the loop closes. The newcomer stops at once; A, settled, gives it a grace, finds no loop any more,
    and keeps running: what was there first is not taken down by a misconfigured newcomer."""
    looped: list[int] = []
    with BridgedBroker(private_broker.endpoint) as a:
        guard = LoopGuard(a, on_loop=looped.append, settled_after=1.0).start()
        try:
            assert a.wait_bridged(10)
            time.sleep(2)  # the guard is settled: probes went round, no loop
            port = private_broker.port
            private_broker.stop()
            newcomer = BrokerCommand("--port", str(port), "--bridge-to", a.url)
            try:
                code = newcomer.exited(40)
            finally:
                newcomer.stop()
            assert code == 2 and LOOP_SAID in newcomer.err, newcomer.err
            time.sleep(LOOP_GRACE_S + 2)  # A's grace, then a probe that finds no loop
            assert not guard.looped.is_set() and looped == []
            assert copies_of_one_publish(a.port, "$a2a/v1/event/acme/first/x", listen=1) == 1
        finally:
            guard.stop()


def test_a_star_of_bridges_is_no_loop(private_broker):
    """Two brokers bridged to one central broker (the README's sites): the guard stays quiet."""
    url = f"mqtt://127.0.0.1:{private_broker.port}"
    one, two = BrokerCommand("--bridge-to", url), BrokerCommand("--bridge-to", url)
    try:
        urls = [one.banner()[0], two.banner()[0]]
        assert all(u.startswith("mqtt://") for u in urls)
        assert one.exited(4) is None and two.exited(1) is None  # several probes went round
        port = int(urls[0].rsplit(":", 1)[1].split("?")[0])
        assert copies_of_one_publish(port, "$a2a/v1/event/acme/star/x", listen=1) == 1
    finally:
        codes = (one.stop(), two.stop())
    assert codes == (0, 0), (one.err, two.err)
    assert LOOP_SAID not in one.err + two.err


def test_the_library_refuses_a_broker_bridged_to_its_own_port_too():
    port = free_port()
    for host in ("127.0.0.1", "localhost", "::ffff:127.0.0.1", "0.0.0.0"):
        with pytest.raises(BrokerError, match="bridged to itself"):
            BridgedBroker(BrokerEndpoint(host=host, port=port), port=port)
    BridgedBroker(BrokerEndpoint(host="127.0.0.1", port=port + 1 if port < 65535 else port - 1), port=port)  # not started

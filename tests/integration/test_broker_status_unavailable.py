"""Without a C compiler or Mosquitto's plugin headers (a pip-only machine, a Binder image without the
apt packages), broker-managed status is off and says why: the broker still starts, and cards stay as
their agents publish them. Runs everywhere: the build is made to fail on purpose."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from a2a_nb.mqtt import status_plugin
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import properties, topics
from a2a_nb.protocol.packet import MqttMessage
from tests.waiting import wait_until
from tests.helpers import uid


@pytest.fixture
def unbuilt(monkeypatch, tmp_path):
    """An empty plugin cache, and the module's memory of an earlier build forgotten."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(status_plugin, "_built", None)
    monkeypatch.setattr(status_plugin, "_why_not", None)
    return tmp_path


def test_no_compiler_means_no_plugin_and_the_reason_names_the_package(unbuilt, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(status_plugin.shutil, "which", lambda name: None)
    assert status_plugin.plugin_path() is None
    assert status_plugin.unavailable_reason() == "no C compiler to build the a2a_status plugin (apt-get install gcc)"


def test_missing_headers_are_named_with_the_packages_that_bring_them(unbuilt, monkeypatch):
    fake = unbuilt / "cc"
    fake.write_text("#!/bin/sh\necho 'a2a_status.c:12:10: fatal error: mosquitto_broker.h: No such file or "
                    "directory' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CC", str(fake))
    assert status_plugin.plugin_path() is None
    assert status_plugin.unavailable_reason() == ("the a2a_status plugin did not build: the Mosquitto plugin headers "
                                                  "are missing (mosquitto_broker.h): apt-get install mosquitto-dev "
                                                  "libmosquitto-dev")
    assert list((unbuilt / "cache" / "a2a_nb").iterdir()) == []  # no half-built library left behind


def test_the_broker_command_runs_without_it_and_leaves_cards_as_published(unbuilt):
    env = {**os.environ, "CC": str(unbuilt / "no-such-cc"), "XDG_CACHE_HOME": str(unbuilt / "cache")}
    env.pop("A2A_BROKER_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "a2a_nb", "broker"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        banner = [proc.stderr.readline().strip() for _ in range(2)]
        assert url.startswith("mqtt://127.0.0.1:")
        assert banner[0].endswith("WARNING broker-managed status is off: the a2a_status plugin did not build: "
                                  f"[Errno 2] No such file or directory: '{unbuilt / 'no-such-cc'}'"), banner
        assert banner[1].startswith("# Mosquitto running"), banner
        unit = uid("unbuilt")
        topic = topics.discovery_topic("acme", unit, "echo")
        agent = Session("acme", unit, "echo", broker=url)
        agent.publish(MqttMessage(topic, b'{"name": "Echo"}', retain=True,
                                  user_properties=((properties.STATUS, "online"), (properties.STATUS_SOURCE, "agent"))))
        got: list[MqttMessage] = []
        late = Session("acme", unit, "late", broker=url)
        late.subscribe(topic, handler=got.append)
        assert wait_until(lambda: got, 3)
        assert (got[0].user_property(properties.STATUS), got[0].user_property(properties.STATUS_SOURCE)) == \
            ("online", "agent")
        agent.close()
        late.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert "broker-managed status" not in proc.stderr.read()  # said once, by the warning

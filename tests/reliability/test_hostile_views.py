"""Views and charts on a peer's data, driven as an attacker would (issue [14] item 4).

* Agent Cards published by a bare paho client with every field of the wrong type, huge, deeply
  nested or not JSON at all: ``Discovery``, ``find``, ``table()``, the discovery browser and
  ``agents_table_html`` show what is valid, mark the rest ("card not valid: skills must be a
  non-empty list") and never raise, for the other learners on the broker.
* Recording files crafted by hand: a field of the wrong type, deep nesting, an over-long line,
  invalid UTF-8 end as ``FILE line N: ...`` and exit 2 from ``python -m a2a_nb lint`` (never a
  ``TypeError`` or ``RecursionError``); the player shows a Correlation Data that is not hex.
* ``python -m a2a_nb story --charts DIR`` with a hostile peer's retained messages on the broker:
  every chart is drawn, quickly, with its labels as plain text.

Everything talks to a real Mosquitto; each test uses a unit or a broker of its own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.waiting import wait_until

from a2a_nb.agents import discovery as discovery_module
from a2a_nb.agents.discovery import Discovery
from a2a_nb.mqtt.broker import resolve
from a2a_nb.notebook import DiscoveryBrowser
from a2a_nb.notebook.display import agents_table_html
from a2a_nb.protocol import topics
from a2a_nb.story.cast import echo_card

ROOT = Path(__file__).resolve().parents[2]


def bare_client(url: str, client_id: str) -> mqtt.Client:
    """A plain paho client: what any program with a login on the broker can run."""
    endpoint = resolve(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    connected = threading.Event()
    c.on_connect = lambda *a: connected.set()
    c.connect(endpoint.host, endpoint.port)
    c.loop_start()
    assert connected.wait(5)
    return c


def publish(c: mqtt.Client, topic: str, payload, *, retain: bool = True, correlation: bytes | None = None,
            response_topic: str | None = None, user_properties=()) -> None:
    props = Properties(PacketTypes.PUBLISH)
    if correlation is not None:
        props.CorrelationData = correlation
    if response_topic is not None:
        props.ResponseTopic = response_topic
    if user_properties:
        props.UserProperty = list(user_properties)
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    c.publish(topic, body, qos=1, retain=retain, properties=props).wait_for_publish(5)


# -- (a) Agent Cards ---------------------------------------------------------------------------------

def hostile_cards(unit: str) -> dict[str, object]:
    """One card per agent id, each bad in its own way (one is only huge, and valid)."""
    good = echo_card("acme", unit)
    skill = good["skills"][0]
    return {
        "skills-string": {**good, "skills": "echo"},
        "tags-numbers": {**good, "skills": [{**skill, "tags": [1, None, "echo"]}]},
        "name-dict": {**good, "name": {"first": "evil"}},
        "caps-list": {**good, "capabilities": ["streaming"]},
        "skills-int": {**good, "skills": 5},
        "skill-id-list": {**good, "skills": [{**skill, "id": ["x"]}, "not a skill"]},
        "requirements-int": {**good, "securityRequirements": 7},
        "huge-fields": {**good, "name": "N" * 20_000, "description": "<script>alert(1)</script>" * 500,
                        "skills": [{**skill, "id": "i" * 5000, "tags": ["echo", "t" * 5000]}]},  # valid, 43 kB
        "a-list": [good],
        "nested-900": json.loads("[" * 900 + "]" * 900),  # parses in Python, breaks whatever walks it
        "nested-in-card": {**good, "name": json.loads("[" * 500 + "]" * 500)},
        "too-deep": ("[" * 30_000 + "]" * 30_000).encode(),  # RecursionError in json.loads
        "too-big": json.dumps({**good, "description": "d" * 2_000_000}).encode(),
        "not-json": b"\xff\xfe<not json>",
    }


EXPECTED_VERDICT = {
    "skills-string": "card not valid: skills must be a non-empty list",
    "skills-int": "card not valid: skills must be a non-empty list",
    "tags-numbers": "card not valid: skills[0].tags must be a list of non-empty strings",
    "name-dict": "card not valid: name must be a non-empty string",
    "caps-list": "card not valid: capabilities must be an object",
    "skill-id-list": "card not valid: skills[0].id must be a non-empty string",
    "requirements-int": "card not valid: securityRequirements must be a list",
    "a-list": "card not valid: card is a JSON list, not an object",
    "nested-900": "card not valid: card is not usable JSON: nested more than 64 levels deep",
    "nested-in-card": "card not valid: card is not usable JSON: nested more than 64 levels deep",
    "too-deep": "card not valid: card is not usable JSON: nested more than 64 levels deep",
    "too-big": "card not valid: card is not usable JSON: ",
    "not-json": "card not valid: card is not usable JSON: not UTF-8",
    "huge-fields": "",
}


@pytest.fixture
def unit() -> str:
    return f"hostile-{uuid.uuid4().hex[:8]}"


def test_hostile_cards_never_break_discovery_or_its_views(broker_url, unit):
    """A learner's discovery browser stays live and right while a peer publishes bad cards: each
    bad card is a marked row, the valid one is found and shown as it is."""
    evil = bare_client(broker_url, f"evil-{unit}")
    good = echo_card("acme", unit)
    disco = Discovery(unit=unit, agent=f"disco-{unit}", broker=broker_url)
    browser = DiscoveryBrowser(disco)
    bad = hostile_cards(unit)
    try:
        publish(evil, topics.discovery_topic("acme", unit, "echo"), good, user_properties=[("a2a-status", "online")])
        for agent, card in bad.items():
            publish(evil, topics.discovery_topic("acme", unit, agent), card, user_properties=[("a2a-status", "online")])
        assert wait_until(lambda: len(disco.agents()) == len(bad) + 1, timeout=10)
        # the browser followed every card (before: its refresh raised on paho's thread at the first bad one)
        assert wait_until(lambda: all(f"<code>{a}</code>" in browser.table.value for a in bad), timeout=5)

        table = browser.table.value
        assert "<script>" not in table and len(table) < 40_000, "peer text is escaped and cut"
        for agent, verdict in EXPECTED_VERDICT.items():
            assert disco.get(agent).verdict.startswith(verdict), (agent, disco.get(agent).verdict)
        rows = {r["agent"]: r for r in disco.table()}
        assert rows["echo"]["card"] == "" and rows["echo"]["card problems"] == 0 and rows["echo"]["name"] == good["name"]
        assert rows["skills-string"]["card"] == "card not valid: skills must be a non-empty list"
        assert rows["tags-numbers"]["tags"] == "echo"  # what is readable of an invalid card
        assert rows["name-dict"]["name"] is None and rows["caps-list"]["streaming"] is False

        # find selects among valid cards only, whatever the others hold
        assert sorted(e.agent for e in disco.find(tags=["echo"])) == ["echo", "huge-fields"]
        assert sorted(e.agent for e in disco.find(capabilities=["streaming"], schemes=["bearer"])) == [
            "echo", "huge-fields"]
        assert {e.agent for e in disco.find(valid_only=False)} == {"echo", *bad}
        browser.filter.value = "echo"
        shown = {e.agent for e in browser.entries()}
        assert {"echo", "tags-numbers"} <= shown and "skills-string" not in shown
        assert "card not valid: skills[0].tags must be a list" in browser.table.value
        html = agents_table_html(disco.find(valid_only=False))
        assert html.count("card not valid") == len(bad) - 1
    finally:
        browser.close()
        disco.close()
        for agent in ("echo", *bad):
            publish(evil, topics.discovery_topic("acme", unit, agent), b"")
        evil.loop_stop()
        evil.disconnect()


def test_a_flood_of_cards_is_bounded(broker_url, unit, monkeypatch):
    """More agents than ``MAX_AGENTS``: the first ones are kept, the rest noted, the table cut."""
    monkeypatch.setattr(discovery_module, "MAX_AGENTS", 30, raising=False)
    evil = bare_client(broker_url, f"flood-{unit}")
    disco = Discovery(unit=unit, agent=f"disco-{unit}", broker=broker_url)
    names = [f"a{k:03d}" for k in range(40)]
    try:
        for name in names:
            publish(evil, topics.discovery_topic("acme", unit, name), {"name": name})
        assert wait_until(lambda: len(disco.invalid) == 10, timeout=10)
        assert len(disco.agents()) == 30
        assert disco.invalid[-1][1] == "not kept: this discovery already holds 30 agents"
        html = agents_table_html(disco.find(valid_only=False), max_rows=20)
        assert html.count("<tr><td") == 20 and "… and 10 more agent(s) not shown" in html
    finally:
        disco.close()
        for name in names:
            publish(evil, topics.discovery_topic("acme", unit, name), b"")
        evil.loop_stop()
        evil.disconnect()

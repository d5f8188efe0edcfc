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
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.waiting import wait_until

from a2a_nb.agents import discovery as discovery_module
from a2a_nb.agents.discovery import Discovery
from a2a_nb.mqtt.broker import resolve
from a2a_nb.mqtt.session import paho_client
from a2a_nb.notebook import DiscoveryBrowser
from a2a_nb.notebook.display import agents_table_html
from a2a_nb.protocol import topics
from a2a_nb.story.cast import echo_card

ROOT = Path(__file__).resolve().parents[2]


def bare_client(url: str, client_id: str) -> mqtt.Client:
    """A plain paho client: what any program with a login on the broker can run."""
    endpoint = resolve(url)
    c = paho_client(endpoint, client_id)
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
        assert rows["echo"]["why not valid"] == "" and rows["echo"]["card problems"] == 0 and rows["echo"]["name"] == good["name"]
        assert rows["skills-string"]["why not valid"] == "card not valid: skills must be a non-empty list"
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


# -- (b) recording files -----------------------------------------------------------------------------

def run_cli(args: list[str], env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "a2a_nb", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env or {**os.environ, "MPLBACKEND": "Agg"})


def good_record() -> dict:
    with (ROOT / "a2a_nb" / "data" / "recordings" / "happy.jsonl").open(encoding="utf-8") as fh:
        fh.readline()
        return json.loads(fh.readline())  # a request: correlation, response topic, user properties


def crafted_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """Recordings an attacker (or a slip of the hand) could make, and the error each must get."""
    ok = json.dumps(good_record())
    bad_lines: dict[str, tuple[bytes, str]] = {
        "t-text": (json.dumps({**good_record(), "t": "yesterday"}).encode(),
                   "line 2: t must be a number (Unix seconds), got 'yesterday'"),
        "qos-text": (json.dumps({**good_record(), "qos": "one"}).encode(), "line 2: qos must be 0, 1 or 2, got 'one'"),
        "retain-text": (json.dumps({**good_record(), "retain": "yes"}).encode(),
                        "line 2: retain must be true or false, got 'yes'"),
        "size-text": (json.dumps({**good_record(), "size": "big"}).encode(),
                      "line 2: size must be a whole number of bytes, got 'big'"),
        "topic-number": (json.dumps({**good_record(), "topic": 5}).encode(), "line 2: topic must be a string, got 5"),
        "properties-number": (json.dumps({**good_record(), "user_properties": 5}).encode(),
                              "line 2: user_properties must be a list of [key, value] string pairs or null, got 5"),
        "properties-triples": (json.dumps({**good_record(), "user_properties": [[1, 2, 3]]}).encode(),
                               "line 2: user_properties must be a list of [key, value] string pairs"),
        "correlation-number": (json.dumps({**good_record(), "correlation": 12}).encode(),
                               "line 2: correlation must be a string (hex) or null, got 12"),
        "base64-number": (json.dumps({**good_record(), "payload_json": None, "payload_b64": 7}).encode(),
                          "line 2: payload_b64 must be base64 text or null, got 7"),
        "base64-junk": (json.dumps({**good_record(), "payload_json": None, "payload_b64": "%%%"}).encode(),
                        "line 2: payload_b64 must be base64 text or null, got '%%%'"),
        "infinity": (json.dumps({**good_record(), "t": float("inf")}).encode(), "line 2: not usable JSON (Infinity"),
        "nested-5000": (b'{"v":1,"topic":"x","payload_json":' + b"[" * 5000 + b"]" * 5000 + b"}",
                        "line 2: nested more than 65 levels deep"),
        "nested-900": (b'{"v":1,"topic":"$a2a/v1/request/acme/support/echo","payload_json":' + b"[" * 900
                       + b"]" * 900 + b"}", "line 2: nested more than 65 levels deep"),
        "not-utf8": (b'{"v":1,"topic":"\xff\xfe"}', "line 2: not text (a recording is UTF-8 JSON lines"),
        "long-line": (json.dumps({**good_record(), "payload_json": None, "payload_b64": "A" * (17 << 20)}).encode(),
                      "line 2: longer than 16,777,216 bytes"),
    }
    out = {}
    for name, (line, error) in bad_lines.items():
        path = folder / f"{name}.jsonl"
        path.write_bytes(ok.encode() + b"\n" + line + b"\n" + ok.encode() + b"\n")
        out[name] = (path, f"{path} {error}")
    return out


def test_lint_names_the_file_and_line_of_a_crafted_recording(tmp_path):
    """Each crafted file: one line ``error: FILE line 2: ...`` and exit 2, within a few seconds (before:
    TypeError or RecursionError without a line, exit 1, or a wrong value read as it came)."""
    for name, (path, error) in crafted_files(tmp_path).items():
        start = time.monotonic()
        out = run_cli(["lint", "--no-schema", str(path)])
        assert out.returncode == 2, (name, out.returncode, out.stdout[-500:], out.stderr[-500:])
        assert out.stderr.startswith(f"error: {error}"), (name, out.stderr[:300])
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, (name, out.stderr)
        assert time.monotonic() - start < 20, name


def test_the_player_shows_a_correlation_that_is_not_hex(tmp_path):
    """A hand-edited Correlation Data is shown as it is, marked (before: ValueError from bytes.fromhex)."""
    from a2a_nb.notebook.player import TrafficPlayer, step_html

    rec = good_record()
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({**rec, "correlation": "<not hex>"}) + "\n", encoding="utf-8")
    player = TrafficPlayer(path)
    try:
        assert "&lt;not hex&gt; (as recorded: not hex text)" in player.view.value
    finally:
        player.close()
    records = [{**rec, "correlation": "zz"}, {**rec, "correlation": None, "payload_json": None, "payload_b64": "%%",
                                              "user_properties": [["k", "v" * 100_000]]}]
    assert "zz (as recorded: not hex text)" in step_html(records, 0)  # records handed in by hand, too
    assert len(step_html(records, 1)) < 10_000


def test_what_a_peer_publishes_is_recorded_within_the_bounds_readers_accept(broker_url, unit, tmp_path, monkeypatch):
    """Deeply nested JSON, a number too large for a float, NaN, a payload and user properties past the
    line bound (made 64 KiB here): the recording keeps them as base64 or leaves them out (``omitted``),
    and every reader reads it back (before: lint ended in RecursionError)."""
    from a2a_nb.traffic import records
    from a2a_nb.traffic.recorder import Recorder

    monkeypatch.setattr(records, "MAX_LINE_BYTES", 64 * 1024, raising=False)
    path = tmp_path / "hostile.jsonl"
    evil = bare_client(broker_url, f"evil-{unit}")
    topic = topics.event_topic("acme", unit, "evil")
    payloads = {
        "nested": b"[" * 900 + b"]" * 900,
        "huge-number": b'{"x": 1e400}',
        "nan": b'{"x": NaN}',
        "big": json.dumps({"x": "y" * 200_000}).encode(),
        "fine": b'{"x": 1}',
    }
    with Recorder(broker_url, path=path, org_filter=f"$a2a/v1/+/acme/{unit}/#") as rec:
        for name, body in payloads.items():
            publish(evil, topic, body, retain=False, user_properties=[("case", name)])
        publish(evil, topic, b'{"x": 2}', retain=False, user_properties=[("case", "big-properties")]
                + [("p", "v" * 1000)] * 100)
        assert rec.wait_for(len(payloads) + 1, timeout=10)
    evil.loop_stop()
    evil.disconnect()

    kept = {dict(r["user_properties"]).get("case", "big-properties"): r for r in records.read_records(path)}
    assert kept["nested"]["payload_json"] is None and kept["nested"]["payload_b64"]
    assert kept["huge-number"]["payload_b64"] and kept["nan"]["payload_b64"]
    assert kept["fine"]["payload_json"] == {"x": 1} and "omitted" not in kept["fine"]
    assert kept["big"]["omitted"] == ["payload"] and kept["big"]["size"] == len(payloads["big"])
    assert kept["big"]["payload_json"] is None and kept["big"]["payload_b64"] is None
    assert kept["big-properties"]["omitted"] == ["payload", "user_properties"]
    assert max(len(line) for line in path.read_bytes().splitlines()) <= 64 * 1024
    assert records.read_records(path) == rec.records  # the memory and the file hold the same
    out = run_cli(["lint", "--no-schema", str(path)])
    assert out.returncode in (0, 1) and "error" not in out.stderr, out.stderr[-500:]


# -- story --charts with a hostile peer on the broker ---------------------------------------------------

MATH = r"$\frac{1}{2}$" + "x" * 100_000 + r"$\sqrt{2}$"  # mathtext, and 100 kB: 42 s to draw in full


def leave_hostile_messages(url: str) -> list[str]:
    """Retained messages a peer leaves on the broker: every recorder that subscribes gets them."""
    evil = bare_client(url, "evil-story")
    reply_topic = "$a2a/v1/reply/acme/support/evil/r1"
    left = {
        "$a2a/v1/request/acme/support/evil": (
            {"jsonrpc": "2.0", "id": 1, "method": MATH,
             "params": {"message": {"messageId": MATH, "taskId": "t" * 50, "role": "ROLE_USER",
                                    "parts": [{"text": MATH}]}}}, [], b"c1", reply_topic),
        reply_topic: ({"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t" * 50, "contextId": MATH,
                                                                       "status": {"state": MATH}}}},
                      [("a2a-responder-agent-id", MATH[:2000])], b"c1", None),
        "$a2a/v1/discovery/acme/support/evil": ({"name": MATH[:30_000], "skills": "evil"},
                                                [("a2a-status", MATH[:2000])], None, None),
        "$a2a/v1/request/acme/support/evil-deep": (b"[" * 900 + b"]" * 900, [], b"c2", reply_topic),
        "$a2a/v1/request/acme/support/evil-math": (  # not even valid mathtext: matplotlib raised ValueError
            {"jsonrpc": "2.0", "id": 3, "method": r"Send$\undefined{x$Message", "params": {}}, [], b"c4", reply_topic),
        "$a2a/v1/request/acme/support/evil-number": (b'{"jsonrpc": "2.0", "id": 2, "method": "$x$", "x": 1e400}', [],
                                                     b"c3", reply_topic),
    }
    for topic, (payload, props, corr, rt) in left.items():
        publish(evil, topic, payload, user_properties=props, correlation=corr, response_topic=rt)
    evil.loop_stop()
    evil.disconnect()
    return list(left)


def test_story_charts_with_a_hostile_peer_on_the_broker(private_broker, tmp_path):
    """``story --charts`` draws every chart from a recording that holds a peer's mathtext, 100 kB
    labels, a deeply nested payload and a number too large for a float; the Mermaid text and the
    player read the same recording (before: the story succeeded, then ``--charts`` exited 2 with a
    mathtext error, a 100 kB label took 42 s to draw, the Mermaid text held 100 kB lines)."""
    from matplotlib import cbook

    from a2a_nb.notebook.player import TrafficPlayer
    from a2a_nb.traffic.charts import mermaid_sequence
    from a2a_nb.traffic.records import read_records

    leave_hostile_messages(private_broker.url)
    charts, recording = tmp_path / "charts", tmp_path / "story.jsonl"
    env = {**os.environ, "A2A_BROKER_URL": private_broker.url, "MPLBACKEND": "Agg"}
    start = time.monotonic()
    out = run_cli(["story", "--charts", str(charts), "--record", str(recording), "--pace", "0.01"], env=env,
                  timeout=240)
    took = time.monotonic() - start
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert took < 60, f"story --charts took {took:.0f} s"
    drawn = sorted(p.name for p in charts.iterdir())
    for name in ("states.png", "states-time.png", "reroutes.png", "latency.png", "index.md"):
        assert name in drawn, drawn
    assert any(n.startswith("sequence-") for n in drawn), drawn
    index = (charts / "index.md").read_text(encoding="utf-8")
    assert len(index) < 20_000 and "x" * 100 not in index

    records = read_records(recording)
    assert any(r["topic"].endswith("/evil-deep") and r["payload_b64"] for r in records)
    text = mermaid_sequence(records)
    assert max(map(len, text.splitlines())) < 120 and "$" not in text and "#36;" in text
    player = TrafficPlayer(recording)
    try:
        start = time.monotonic()
        for i in range(len(player)):
            player.index = i
            assert len(player.view.value) < 40_000
        assert time.monotonic() - start < 30
        _, ax = player._page(0)
        assert not [t for t in ax.figure.findobj(lambda a: hasattr(a, "get_text"))
                    if cbook.is_math_text(t.get_text())]
    finally:
        player.close()


def test_payloads_of_the_wrong_shape_in_every_view(tmp_path):
    """Peers whose JSON-RPC holds a list for a Task.id, a method, a state, a number for a Task, a
    text error code, parts that are no list, and a hand-edited time out of order: lint, every chart
    and the player take the recording (before: TypeError 'unhashable type' in lint and the state
    chart, AttributeError in the chart's row labels, an Agg error for a time out of order)."""
    from a2a_nb.notebook.player import TrafficPlayer
    from a2a_nb.traffic.charts import mermaid_sequence, save_charts
    from a2a_nb.traffic.records import read_records, write_records

    recs = read_records(ROOT / "a2a_nb" / "data" / "recordings" / "handover.jsonl")
    requests = [r for r in recs if "/request/" in r["topic"]]
    replies = [r for r in recs if "/reply/" in r["topic"] and isinstance(r["payload_json"], dict)]
    requests[0]["payload_json"]["params"]["message"]["taskId"] = ["not", "an", "id"]
    requests[0]["payload_json"]["params"]["message"]["parts"] = True
    requests[-1]["payload_json"]["method"] = ["SendMessage"]
    requests[-1]["payload_json"]["params"] = ["a list"]
    replies[0]["payload_json"]["result"] = {"task": 5}
    replies[1]["payload_json"]["result"] = {"statusUpdate": {"taskId": {"id": 1}, "status": {"state": ["working"]}}}
    replies[2]["payload_json"] = {"jsonrpc": "2.0", "id": [1], "error": {"code": "oops", "data": [1]}}
    recs[0]["t"] = recs[-1]["t"] + 1e9  # a hand-edited time: every other message 30 years before the first
    path = tmp_path / "odd.jsonl"
    write_records(recs, path)

    out = run_cli(["lint", str(path)])
    assert out.returncode in (0, 1) and not out.stderr, out.stderr[-800:]
    written = [p.name for p, _ in save_charts(path, tmp_path / "charts")]
    assert "states-time.png" in written and "latency.png" in written
    assert mermaid_sequence(path).startswith("sequenceDiagram")
    player = TrafficPlayer(path)
    try:
        for i in range(len(player)):
            player.index = i
    finally:
        player.close()

"""The recorder against the session's real Mosquitto: format, fidelity, redaction, no loss."""
from __future__ import annotations

import base64
import json
import threading

import pytest

from a2a_nb.mqtt.session import Session
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.traffic import Recorder as LazyRecorder
from a2a_nb.traffic.recorder import Recorder
from a2a_nb.traffic.records import FIELDS, from_record, read_records, to_record, write_records


def scoped(unit: str) -> str:
    return f"$a2a/v1/+/acme/{unit}/#"


def test_records_every_property_as_one_json_line(broker_url, unit, tmp_path):
    path = tmp_path / "run.jsonl"
    pub = Session("acme", unit, "pub", broker=broker_url)
    with Recorder(broker_url, path=path, org_filter=scoped(unit)) as rec:
        assert rec.session.client_id.startswith("acme/support/recorder-")
        pub.publish(MqttMessage(
            f"$a2a/v1/request/acme/{unit}/desk", b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
            qos=1, response_topic=f"$a2a/v1/reply/acme/{unit}/pub/abc", correlation_data=b"\x01\x02\xff",
            user_properties=(("a2a-authorization", "Bearer s3cr3t"), ("x", "1"), ("x", "2")),
            content_type="application/json", message_expiry=30, payload_format=1))
        pub.publish(MqttMessage(f"$a2a/v1/reply/acme/{unit}/pub/abc", b"\x00\x01[]", qos=1, payload_format=0,
                                correlation_data=b"\x01\x02\xff"))
        pub.publish(MqttMessage(f"$a2a/v1/event/acme/{unit}/pub", b"not json {", qos=0))
        pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/pub", b'{"name":"x"}', qos=1, retain=True))
        pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/pub", b"", qos=1, retain=True))  # unregister
        assert rec.wait_for(5, timeout=5)
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and len(rec) == 5
    recs = [json.loads(x) for x in lines]
    assert recs == rec.records == read_records(path)
    assert all(list(r) == list(FIELDS) for r in recs)
    req, binary, text, card, delete = recs
    assert req["v"] == 1 and isinstance(req["t"], float)
    assert req["qos"] == 1 and req["retain"] is False
    assert req["correlation"] == "0102ff" and req["response_topic"].endswith("/pub/abc")
    assert req["user_properties"] == [["a2a-authorization", "[redacted]"], ["x", "1"], ["x", "2"]]
    assert "s3cr3t" not in path.read_text()
    assert req["content_type"] == "application/json" and req["message_expiry"] in (29, 30)
    assert req["payload_format"] == 1 and req["payload_json"]["method"] == "GetTask" and req["payload_b64"] is None
    assert req["size"] == 63
    # bytes that happen to parse as JSON stay bytes when the indicator says "bytes"
    assert binary["payload_json"] is None and base64.b64decode(binary["payload_b64"]) == b"\x00\x01[]"
    assert text["qos"] == 0 and text["payload_b64"] == base64.b64encode(b"not json {").decode()
    assert card["retain"] is True and card["payload_json"] == {"name": "x"}  # Retain As Published
    assert delete["payload_b64"] == "" and delete["size"] == 0


def test_from_record_rebuilds_the_message():
    msg = MqttMessage("$a2a/v1/request/acme/support/desk", b'{"a":1}', qos=1, response_topic="r",
                      correlation_data=b"\xab", user_properties=(("k", "v"),), content_type="application/json",
                      message_expiry=5, payload_format=1, received_at=12.5)
    rec = to_record(msg)
    assert rec["t"] == 12.5
    back = from_record(rec)
    assert back == msg
    raw = MqttMessage("t", b"\x00\xff", payload_format=0)
    assert from_record(to_record(raw, t=1.0)).payload == b"\x00\xff"
    assert from_record(to_record(MqttMessage("t", b""))).payload == b""


def test_read_records_explains_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="record one with"):
        read_records(tmp_path / "nope.jsonl")
    p = tmp_path / "bad.jsonl"
    p.write_text('{"v": 1, "topic": "a"}\n\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl line 3: not JSON \(Expecting value at column 1\)"):
        read_records(p)
    p.write_text('{"v": 2, "topic": "a"}\n')
    with pytest.raises(ValueError, match='expected a recording record with "v": 1'):
        read_records(p)
    assert write_records([{"v": 1, "topic": "a"}], p) == 1 and read_records(p) == [{"v": 1, "topic": "a"}]


def test_filter_must_start_with_a2a():
    with pytest.raises(ValueError, match="must start with '\\$a2a/'"):
        Recorder(org_filter="#")


def test_retained_cards_arrive_at_subscribe_time_and_wait_idle(broker_url, unit):
    pub = Session("acme", unit, "desk", broker=broker_url)
    pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/desk", b'{"name":"desk"}', retain=True,
                            user_properties=(("a2a-status", "online"),)))
    rec = Recorder(broker_url, org_filter=scoped(unit))
    assert not rec.running
    rec.start()
    assert rec.start() is rec  # idempotent
    assert rec.wait_for(1, timeout=30), "the retained card never reached the recorder"
    assert rec.wait_idle(0.15, timeout=5) == 1  # and nothing after it
    assert rec.records[0]["retain"] is True and rec.records[0]["user_properties"] == [["a2a-status", "online"]]
    pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/desk", b"", retain=True))
    assert rec.wait_for(2, timeout=30), "the card's removal never reached the recorder"
    rec.stop()
    rec.stop()
    assert not rec.running and len(rec) == 2
    assert "stopped, 2 messages" in repr(rec)
    assert LazyRecorder is Recorder


def test_paused_is_no_subscriber_and_records_nothing(broker_url, unit):
    """While paused the recorder is counted out by the broker (PUBACK 16 for a topic only it
    listened to), records nothing, and after the block it records again without the retained
    messages a fresh subscription would bring."""
    pub = Session("acme", unit, "desk", broker=broker_url)
    pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/desk", b'{"name":"desk"}', retain=True))
    topic = f"$a2a/v1/request/acme/{unit}/gone"
    with Recorder(broker_url, org_filter=scoped(unit)) as rec:
        assert rec.wait_for(1, timeout=30), "the retained card never reached the recorder"
        assert pub.publish(MqttMessage(topic, b"{}", qos=1)).reason_code == 0  # the recorder listens
        with rec.paused() as same:
            assert same is rec
            assert pub.publish(MqttMessage(topic, b"{}", qos=1)).reason_code == 16
        assert pub.publish(MqttMessage(topic, b"{}", qos=1)).reason_code == 0
        assert rec.wait_for(3, timeout=30), f"recorded {rec.count} of the 3 messages within 30 s"
        rec.wait_idle(0.15, timeout=5)  # and nothing more after them
        assert [r["topic"] for r in rec.records] == [f"$a2a/v1/discovery/acme/{unit}/desk", topic, topic]
    with rec.paused():  # stopped: nothing to pause
        pass
    pub.publish(MqttMessage(f"$a2a/v1/discovery/acme/{unit}/desk", b"", retain=True))


def test_no_message_lost_at_a_high_rate(broker_url, unit, tmp_path):
    n = 3000
    path = tmp_path / "burst.jsonl"
    topic = f"$a2a/v1/event/acme/{unit}/burst"
    with Recorder(broker_url, path=path, org_filter=scoped(unit)) as rec:
        pubs = [Session("acme", unit, f"burst-{k}", broker=broker_url) for k in range(2)]

        def blast(s: Session, start: int) -> None:
            pending = [s.publish_nowait(MqttMessage(topic, json.dumps({"seq": k}).encode(), qos=1))
                       for k in range(start, start + n // 2)]
            for p in pending:
                assert p.result(10).accepted

        threads = [threading.Thread(target=blast, args=(s, k * (n // 2))) for k, s in enumerate(pubs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert rec.wait_for(n, timeout=20)
    seqs = sorted(r["payload_json"]["seq"] for r in read_records(path))
    assert seqs == list(range(n))

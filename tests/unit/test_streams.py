"""Telling a stream item from a copy of it (Profile: Error Handling and Deduplication 1-2).

A copy that QoS 1 delivers again has the same payload bytes; the kit's runtime numbers
(``a2a-stream-seq``) only an item whose payload its reply path already carried.
"""
from __future__ import annotations

import json

from a2a_nb.protocol.streams import StreamDeduper, StreamNumbering, ends_stream, item_key, reply_ends_stream


def _item(text: str, append: bool = True) -> tuple[dict, bytes]:
    result = {"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append,
                                 "artifact": {"artifactId": "log", "parts": [{"text": text}]}}}
    return result, json.dumps({"jsonrpc": "2.0", "id": "r", "result": result}).encode()


def _done() -> tuple[dict, bytes]:
    result = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}
    return result, json.dumps({"jsonrpc": "2.0", "id": "r", "result": result}).encode()


def test_only_a_repeated_payload_is_numbered_with_its_position():
    numbering = StreamNumbering()
    payloads = [_item(t)[1] for t in ("a", ".", ".", "b", ".")]
    assert [numbering.seq_for(p) for p in payloads] == [None, None, "3", None, "5"]


def test_the_requester_keeps_numbered_repeats_and_drops_copies():
    numbering = StreamNumbering()
    sent = [(r, numbering.seq_for(p), p) for r, p in (_item("a", False), _item("."), _item("."), _done())]
    copies = [sent[1], sent[2], sent[1], sent[0]]  # QoS 1 redeliveries, out of order
    dedup = StreamDeduper()
    accepted = [r for r, seq, p in sent[:3] + copies + sent[3:] if dedup.accept(r, seq, p)]
    assert [r["artifactUpdate"]["artifact"]["parts"][0]["text"] for r in accepted[:3]] == ["a", ".", "."]
    assert len(accepted) == 4 and dedup.finished and dedup.duplicates == 4
    assert not dedup.accept(*sent[3]), "nothing is accepted after the stream's last item"


def test_an_unnumbered_repeat_from_another_implementation_counts_as_a_copy():
    dedup = StreamDeduper()
    result, payload = _item(".")
    assert dedup.accept(result, None, payload)
    assert not dedup.accept(result, None, payload)


def test_item_key_prefers_the_number_then_the_bytes_then_the_parsed_json():
    result, payload = _item("x")
    assert item_key(result, "7", payload) == ("seq", "7")
    assert item_key(result, None, payload) == item_key(result, None, bytes(payload))
    assert item_key(result, None, payload) != item_key(result, None, payload + b" ")
    # a recording keeps parsed JSON only: key order does not matter there
    reordered = json.loads(json.dumps(result, sort_keys=True))
    assert item_key(result) == item_key(reordered)


def _status(state: object) -> dict:
    return {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": state}}}


def test_reply_ends_stream_on_an_error_a_message_or_a_final_state():
    """Streaming Reply Mapping 5-7: the probe's client and checks and the traffic lint all ask this."""
    reply = {"jsonrpc": "2.0", "id": "r"}
    assert reply_ends_stream({**reply, "error": {"code": -32001, "message": "Task not found"}})
    assert reply_ends_stream({**reply, "result": {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}}})
    for state in ("TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
        assert reply_ends_stream({**reply, "result": _status(state)}), state
    assert reply_ends_stream({**reply, "result": {"task": {"id": "t", "status": {"state": "TASK_STATE_FAILED"}}}})
    assert not reply_ends_stream({**reply, "result": _status("TASK_STATE_WORKING")})
    working_final = _status("TASK_STATE_WORKING")
    working_final["statusUpdate"]["final"] = True  # v0.3's flag: v1.0 has none, the state decides
    assert not reply_ends_stream({**reply, "result": working_final})
    assert not reply_ends_stream({**reply, "result": _item("x")[0]})
    assert not reply_ends_stream({**reply, "result": {"artifactUpdate": {"lastChunk": True}}})
    assert not reply_ends_stream({**reply, "result": "done"})
    for not_a_reply in (None, "text", [], {"jsonrpc": "2.0", "id": "r"}):
        assert not reply_ends_stream(not_a_reply)


def test_a_malformed_status_does_not_end_the_stream_and_does_not_raise():
    for status in ("TASK_STATE_COMPLETED", None, ["TASK_STATE_COMPLETED"]):
        result = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": status}}
        assert not ends_stream(result)
        assert not reply_ends_stream({"jsonrpc": "2.0", "id": "r", "result": result})

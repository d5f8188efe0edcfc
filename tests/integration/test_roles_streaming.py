"""Streaming replies (SendStreamingMessage, SubscribeToTask) against a real Mosquitto.

Profile: Streaming Reply Mapping 1-8, Optional MQTT Native Binary Artifact Mode, Error Handling
and Deduplication 1-2, Requester Retry and Timeout Profile 7-8; A2A v1.0 StreamResponse.
"""
from __future__ import annotations

import base64
import json
import os
import threading
import time

import pytest

from a2a_nb.agents import Requester, Responder, TaskRuntime
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage, encode_json
from tests.integration._roles_support import (  # noqa: F401
    FAST, HAND_BUILT, ORG, UNIT, RawClient, hand_key, json_metadata_ok, request_topic, traffic, uid, wait_until)
from tests.sdk_check import assert_valid

SUBMITTED, WORKING, COMPLETED = "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"


def reporter(ctx):
    ctx.working("starting")
    ctx.artifact("report", "hello ", name="report")
    ctx.artifact("report", "world", append=True, last_chunk=True)
    ctx.complete("report ready")


def stream_request(traffic, agent: str, method: str = "SendStreamingMessage", reply_topic=None) -> MqttMessage:
    found = [m for m, b in traffic.requests(agent, method) if reply_topic is None or m.response_topic == reply_topic]
    assert len(found) == 1, f"expected one {method}, saw {len(found)}"
    return found[0]


def test_each_stream_item_is_its_own_qos1_jsonrpc_message_on_the_response_topic(broker_url, traffic):
    agent = uid("reporter")
    Responder(agent, reporter, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "write it")
    events = list(stream)
    assert [e.kind for e in events] == ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    assert events[0].state == SUBMITTED and events[1].state == WORKING and events[-1].state == COMPLETED
    assert stream.view.artifacts.text("report") == "hello world"
    assert stream.view.artifacts.is_sealed("report")
    assert stream.state == COMPLETED and stream.view.text == "report ready"

    request = stream_request(traffic, agent)
    rid = json.loads(request.payload)["id"]
    items = traffic.replies(request.correlation_data)
    assert len(items) == len(events), "one MQTT message per stream item"
    for m in items:
        assert m.topic == request.response_topic == req.reply_topic
        assert m.correlation_data == request.correlation_data
        assert m.qos == 1 and json_metadata_ok(m)
        body = json.loads(m.payload)
        assert body["jsonrpc"] == "2.0" and body["id"] == rid and "error" not in body
        assert_valid("StreamResponse", body["result"])
        for key in ("statusUpdate", "artifactUpdate"):
            if key in body["result"]:
                assert body["result"][key]["taskId"] == stream.task_id
    # nothing more on that correlation after the terminal state
    time.sleep(0.2)
    assert len(traffic.replies(request.correlation_data)) == len(items)


def test_input_required_ends_the_stream_and_a_streamed_continuation_completes(broker_url, traffic):
    agent = uid("asker")

    def ask(ctx):
        if ctx.turn == 1:
            ctx.working("thinking")
            ctx.ask_input("which format?")
        else:
            ctx.artifact("out", f"as {ctx.text}")
            ctx.complete("done")

    Responder(agent, ask, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    first = req.stream(agent, "export")
    kinds = [(e.kind, e.state) for e in first]
    assert kinds[-1] == ("statusUpdate", INPUT_REQUIRED)
    assert first.done and first.view.text == "which format?"
    request = stream_request(traffic, agent)
    assert req._inflight == {}, "the interrupted state released the correlation"
    time.sleep(0.2)
    n_first = len(traffic.replies(request.correlation_data))
    assert n_first == len(kinds)

    second = req.continue_task(first, "pdf", stream=True)
    second.wait()
    assert second.state == COMPLETED and second.view.artifacts.text("out") == "as pdf"
    sends = traffic.requests(agent, "SendStreamingMessage")
    assert len(sends) == 2 and sends[0][0].correlation_data != sends[1][0].correlation_data
    m1, m2 = (b["params"]["message"] for _, b in sends)
    assert m1["taskId"] == m2["taskId"] and m1["contextId"] == m2["contextId"] and m1["messageId"] != m2["messageId"]


def chunker(data: bytes, n: int):
    size = len(data) // n

    def handler(ctx):
        ctx.working("sending")
        for i in range(n):
            ctx.chunk("blob", data[i * size:(i + 1) * size], content_type="application/octet-stream", last=i == n - 1)
        ctx.complete("sent")

    return handler


def test_one_thousand_binary_chunks_are_reassembled_byte_exactly(broker_url, traffic):
    agent = uid("binary")
    n = 1000
    data = os.urandom(n * 256)
    Responder(agent, chunker(data, n), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "send the blob", artifact_mode="binary")
    view = stream.wait()
    assert stream.state == COMPLETED
    assert view.binary["blob"].data() == data
    assert sum(1 for e in stream.events if e.kind == "binaryChunk") == n
    assert not any(e.kind == "artifactUpdate" for e in stream.events), "binary mode sends no JSON artifact copies"

    request = stream_request(traffic, agent)
    assert request.user_property("a2a-artifact-mode") == "binary"
    traffic.settle()
    items = traffic.replies(request.correlation_data)
    chunks = [m for m in items if m.payload_format == 0]
    assert len(chunks) == n
    for i, m in enumerate(sorted(chunks, key=lambda m: int(m.user_property("a2a-chunk-seqno")))):
        assert m.qos == 1 and m.topic == req.reply_topic
        assert m.user_property("a2a-event-type") == "task-artifact-update"
        assert m.user_property("a2a-task-id") == stream.task_id
        assert m.user_property("a2a-artifact-id") == "blob"
        assert m.user_property("a2a-chunk-seqno") == str(i)
        assert m.user_property("a2a-last-chunk") == ("true" if i == n - 1 else "false")
        assert m.content_type == "application/octet-stream"
        assert m.payload == data[i * 256:(i + 1) * 256]
    json_items = [m for m in items if m.payload_format != 0]
    assert all(m.user_property("a2a-artifact-mode") == "binary" for m in items)
    assert [list(json.loads(m.payload)["result"])[0] for m in json_items] == ["task", "statusUpdate", "statusUpdate"]


def test_json_mode_requester_gets_the_same_bytes_as_base64_raw_parts(broker_url, traffic):
    agent = uid("binary")
    n = 200
    data = os.urandom(n * 128)
    Responder(agent, chunker(data, n), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "send the blob")  # no a2a-artifact-mode: JSON
    view = stream.wait()
    assert stream.state == COMPLETED and view.binary == {}
    parts = view.artifacts.get("blob")["parts"]
    assert len(parts) == n and all(set(p) <= {"raw", "mediaType"} for p in parts)
    assert b"".join(base64.b64decode(p["raw"]) for p in parts) == data
    request = stream_request(traffic, agent)
    assert all(json_metadata_ok(m) for m in traffic.replies(request.correlation_data))
    # and the stored task holds the same artifact for GetTask
    task = req.get_task(stream.task_id)
    assert b"".join(base64.b64decode(p["raw"]) for p in task["artifacts"][0]["parts"]) == data


def test_duplicate_deliveries_are_not_shown_twice_and_do_not_flip_state(broker_url, traffic):
    agent = uid("dupes")
    gate = threading.Event()

    def handler(ctx):
        ctx.working("step 1")
        ctx.artifact("log", "a")
        ctx.artifact("log", "b", append=True)
        gate.wait(5)
        ctx.artifact("log", "c", append=True, last_chunk=True)
        ctx.complete("done")

    Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    raw = RawClient(broker_url)
    stream = req.stream(agent, "go")
    seen = [next(stream) for _ in range(4)]  # task, working, artifact a, artifact b
    assert [e.kind for e in seen] == ["task", "statusUpdate", "artifactUpdate", "artifactUpdate"]
    captured = list(traffic.replies(stream_request(traffic, agent).correlation_data))
    assert len(captured) == 4
    for m in reversed(captured):  # the broker delivering everything again (QoS 1), even out of order
        raw.publish(MqttMessage(m.topic, m.payload, qos=1, correlation_data=m.correlation_data,
                                user_properties=m.user_properties, content_type=m.content_type,
                                payload_format=m.payload_format))
    assert wait_until(lambda: req.stats.replies >= 8, 3)
    gate.set()
    rest = list(stream)
    assert [e.kind for e in rest] == ["artifactUpdate", "statusUpdate"]
    assert stream.duplicates == 4
    assert stream.view.artifacts.text("log") == "abc", "a duplicated append must not repeat content"
    assert [s for _, s, _ in stream.view.transitions] == [SUBMITTED, WORKING, COMPLETED], "no state flip-back"
    assert stream.state == COMPLETED
    # a late duplicate after the end is ignored (the correlation is released)
    before = req.stats.ignored_unknown_correlation
    raw.publish(MqttMessage(captured[1].topic, captured[1].payload, correlation_data=captured[1].correlation_data,
                            user_properties=captured[1].user_properties))
    assert wait_until(lambda: req.stats.ignored_unknown_correlation == before + 1, 3)
    assert stream.state == COMPLETED


class ForeignStreamer:
    """Another implementation's responder: streams without ``a2a-stream-seq`` and repeats items."""

    def __init__(self, broker_url: str, agent: str):
        self.session = Session(ORG, UNIT, agent, broker=broker_url)
        self.session.subscribe(request_topic(agent), handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        body = json.loads(m.payload)
        msg = body["params"]["message"]
        tid, cid = msg["taskId"], msg["contextId"]

        def status(state, ts):
            return {"statusUpdate": {"taskId": tid, "contextId": cid,
                                     "status": {"state": state, "timestamp": ts}}}

        def art(text, append):
            ev = {"taskId": tid, "contextId": cid, "artifact": {"artifactId": "log", "parts": [{"text": text}]}}
            if append:
                ev["append"] = True
            return {"artifactUpdate": ev}

        snapshot = {"task": {"id": tid, "contextId": cid,
                             "status": {"state": SUBMITTED, "timestamp": "2025-01-01T00:00:00.000Z"}}}
        working = status(WORKING, "2025-01-01T00:00:01.000Z")
        a, b = art("a", False), art("b", True)
        items = [snapshot, working, a, b, working, snapshot, b, status(COMPLETED, "2025-01-01T00:00:02.000Z")]
        for result in items:
            out = MqttMessage(m.response_topic, encode_json({"jsonrpc": "2.0", "id": body["id"], "result": result}),
                              qos=1, correlation_data=m.correlation_data)
            HAND_BUILT[hand_key(out)] += 1
            self.session.publish_nowait(out)


def test_duplicates_from_an_implementation_without_stream_seq_are_dropped_by_content(broker_url, traffic):
    agent = uid("foreign")
    ForeignStreamer(broker_url, agent)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "go")
    kinds = [(e.kind, e.state) for e in stream]
    assert kinds == [("task", SUBMITTED), ("statusUpdate", WORKING), ("artifactUpdate", None),
                     ("artifactUpdate", None), ("statusUpdate", COMPLETED)]
    assert stream.duplicates == 3
    assert stream.view.artifacts.text("log") == "ab"
    assert [s for _, s, _ in stream.view.transitions] == [SUBMITTED, WORKING, COMPLETED]


def test_duplicate_binary_chunks_are_dropped_by_seqno(broker_url, traffic):
    agent = uid("bindupes")
    gate = threading.Event()
    data = os.urandom(3 * 64)

    def handler(ctx):
        ctx.chunk("blob", data[:64])
        ctx.chunk("blob", data[64:128])
        gate.wait(5)
        ctx.chunk("blob", data[128:], last=True)
        ctx.complete("ok")

    Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    raw = RawClient(broker_url)
    stream = req.stream(agent, "go", artifact_mode="binary")
    got = [next(stream) for _ in range(3)]
    assert [e.kind for e in got] == ["task", "binaryChunk", "binaryChunk"]
    corr = stream_request(traffic, agent).correlation_data
    for m in [m for m in traffic.replies(corr) if m.payload_format == 0]:
        raw.publish(MqttMessage(m.topic, m.payload, correlation_data=m.correlation_data,
                                user_properties=m.user_properties, content_type=m.content_type, payload_format=0))
    assert wait_until(lambda: req.stats.replies >= 5, 3)
    gate.set()
    stream.wait()
    assert stream.view.binary["blob"].data() == data
    assert stream.duplicates == 2
    assert sum(1 for e in stream.events if e.kind == "binaryChunk") == 3


# -- recovery ----------------------------------------------------------------------------------------
def test_responder_dying_mid_stream_is_recovered_with_get_task_not_a_republish(broker_url, traffic):
    agent = uid("fragile")
    runtime = TaskRuntime()  # what survives the crash: the task state (a durable store in real life)
    release = threading.Event()

    def handler(ctx):
        ctx.working("started")
        ctx.artifact("out", "part 1;")
        release.wait(10)
        ctx.artifact("out", "part 2;", append=True)  # produced while the agent is offline: lost in transit
        ctx.wait(2.0)
        ctx.artifact("out", "part 3", append=True, last_chunk=True)
        ctx.complete("finished")

    first = Responder(agent, handler, runtime=runtime, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "long job")
    assert [next(stream).kind for _ in range(3)] == ["task", "statusUpdate", "artifactUpdate"]
    out: dict = {}
    consumer = threading.Thread(target=lambda: out.setdefault("rest", list(stream)))
    consumer.start()  # the requester keeps reading: its stream-idle clock runs from the last item
    first.crash()
    release.set()
    time.sleep(FAST.stream_idle_timeout_s + 0.2)  # down for longer than the requester's stream-idle timeout
    Responder(agent, handler, runtime=runtime, broker=broker_url)  # back, with the task state
    consumer.join(10)
    rest = out["rest"]
    assert stream.state == COMPLETED and stream.view.text == "finished"
    assert stream.recoveries == 1
    assert [e.kind for e in rest] == ["recovered", "task", "artifactUpdate", "statusUpdate"]
    assert rest[0].state == WORKING
    assert stream.view.artifacts.text("out") == "part 1;part 2;part 3", "the recovered view lost part of the artifact"

    sends = traffic.requests(agent, "SendStreamingMessage")
    assert len(sends) == 1, "recovery must never republish SendStreamingMessage"
    gets = traffic.requests(agent, "GetTask")
    subs = traffic.requests(agent, "SubscribeToTask")
    assert len(gets) >= 1 and len(subs) == 1
    assert all(json.loads(m.payload)["params"]["id"] == stream.task_id for m, _ in gets + subs)
    assert gets[0][0].received_at < subs[0][0].received_at, "GetTask first, then re-attach"
    assert gets[0][0].received_at - sends[0][0].received_at >= FAST.stream_idle_timeout_s - 0.1


def test_items_lost_during_a_short_outage_are_recovered_not_silently_skipped(broker_url, traffic):
    """The instance is back before the requester's stream-idle timeout; the item produced while it
    was away never reached the requester. The stream must not go on as if nothing was missing."""
    agent = uid("blip")
    runtime = TaskRuntime()
    release = threading.Event()

    def handler(ctx):
        ctx.working("started")
        ctx.artifact("out", "part 1;")
        release.wait(10)
        ctx.artifact("out", "part 2;", append=True)  # nobody can publish this one
        ctx.wait(0.6)
        ctx.artifact("out", "part 3", append=True, last_chunk=True)
        ctx.complete("finished")

    first = Responder(agent, handler, runtime=runtime, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "job")
    assert [next(stream).kind for _ in range(3)] == ["task", "statusUpdate", "artifactUpdate"]
    out: dict = {}
    consumer = threading.Thread(target=lambda: out.setdefault("rest", list(stream)))
    consumer.start()
    first.crash()
    release.set()
    time.sleep(0.3)
    Responder(agent, handler, runtime=runtime, broker=broker_url)  # back well within the idle timeout
    consumer.join(10)
    assert stream.state == COMPLETED
    assert stream.view.artifacts.text("out") == "part 1;part 2;part 3"
    assert stream.recoveries == 1
    assert len(traffic.requests(agent, "SendStreamingMessage")) == 1


def test_stream_whose_task_finished_while_the_responder_was_away_ends_with_get_task(broker_url, traffic):
    agent = uid("fragile")
    runtime = TaskRuntime()
    release = threading.Event()
    done = threading.Event()

    def handler(ctx):
        ctx.working("started")
        release.wait(10)
        ctx.complete("finished alone")
        done.set()

    first = Responder(agent, handler, runtime=runtime, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "job")
    assert [next(stream).kind for _ in range(2)] == ["task", "statusUpdate"]
    first.crash()
    release.set()
    assert done.wait(3)
    Responder(agent, handler, runtime=runtime, broker=broker_url)
    rest = list(stream)
    assert [e.kind for e in rest] == ["recovered"] and rest[0].state == COMPLETED
    assert stream.view.text == "finished alone"
    assert len(traffic.requests(agent, "SendStreamingMessage")) == 1
    assert len(traffic.requests(agent, "GetTask")) == 1
    assert traffic.requests(agent, "SubscribeToTask") == []


# -- SubscribeToTask --------------------------------------------------------------------------------
def test_subscribe_to_a_running_task_gives_a_snapshot_first_then_events(broker_url, traffic):
    agent = uid("runner")
    go_on = threading.Event()

    def handler(ctx):
        ctx.working("phase 1")
        ctx.artifact("notes", "first ")
        go_on.wait(5)
        ctx.artifact("notes", "second", append=True, last_chunk=True)
        ctx.complete("all done")

    Responder(agent, handler, broker=broker_url)
    owner = Requester(uid("coord"), broker=broker_url, retry=FAST)
    started = owner.send(agent, "run", return_immediately=True)
    assert wait_until(lambda: owner.get_task(started.task_id)["status"]["state"] == WORKING, 3)
    sub = owner.subscribe(started.task_id, to=agent)
    first = next(sub)
    assert first.kind == "task" and first.state == WORKING
    assert first.data["artifacts"][0]["parts"][0]["text"] == "first "
    go_on.set()
    rest = list(sub)
    assert [e.kind for e in rest] == ["artifactUpdate", "statusUpdate"] and rest[-1].state == COMPLETED
    assert sub.view.artifacts.text("notes") == "first second"
    request = stream_request(traffic, agent, "SubscribeToTask")
    rid = json.loads(request.payload)["id"]
    items = traffic.replies(request.correlation_data)
    assert len(items) == 3 and all(json.loads(m.payload)["id"] == rid for m in items)
    assert list(json.loads(items[0].payload)["result"]) == ["task"]


def test_subscribe_to_a_terminal_task_is_unsupported_operation(broker_url, traffic):
    agent = uid("runner")
    Responder(agent, lambda ctx: "quick", broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    done = req.send(agent, "go")
    with pytest.raises(A2AError) as exc:
        req.subscribe(done.task_id).wait()
    assert exc.value.code == -32004
    assert exc.value.data[0]["reason"] == "UNSUPPORTED_OPERATION"
    assert req._inflight == {}, "an error reply ends the stream and frees its correlation"


def test_subscribe_to_an_unknown_task_is_task_not_found(broker_url, traffic):
    agent = uid("runner")
    Responder(agent, lambda ctx: "quick", broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    with pytest.raises(A2AError) as exc:
        req.subscribe("8a1c2f0e-5d6b-4c3a-9e8f-7a6b5c4d3e2f", to=agent).wait()
    assert exc.value.code == -32001
    assert len(traffic.requests(agent, "SubscribeToTask")) == 1, "a -32001 is not retried"
    assert req._inflight == {}, "an error reply ends the stream and frees its correlation"


def test_a_message_answer_is_the_streams_only_item(broker_url, traffic):
    """A2A: a stream answered with a Message carries that Message alone (no Task snapshot first)."""
    agent = uid("chatty")
    Responder(agent, lambda ctx: ctx.respond(f"just a message: {ctx.text}"), broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "hi")
    kinds = [e.kind for e in stream]
    assert kinds == ["message"]
    assert stream.view.text == "just a message: hi"
    assert req.get_task(stream.task_id)["status"]["state"] == COMPLETED


def test_cancel_ends_a_running_stream_with_canceled(broker_url, traffic):
    agent = uid("cancel")
    stopped = threading.Event()

    def handler(ctx):
        ctx.working("long job")
        try:
            ctx.wait(5)
        finally:
            stopped.set()
        ctx.complete("never")

    Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "go")
    assert [next(stream).state for _ in range(2)] == [SUBMITTED, WORKING]
    canceled = req.cancel_task(stream.task_id)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    rest = list(stream)
    assert [(e.kind, e.state) for e in rest] == [("statusUpdate", "TASK_STATE_CANCELED")]
    assert stopped.wait(2), "the handler's wait was interrupted by the cancel"
    time.sleep(0.1)
    assert req.get_task(stream.task_id)["status"]["state"] == "TASK_STATE_CANCELED"

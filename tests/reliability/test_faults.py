"""Faults: a broker restart mid-stream, an agent restart with a durable store, a killed analyst,
duplicated requests, stalled replies. Every task ends in a known state (terminal, or interrupted and
waiting for the requester), and the requester always gets an answer or a clear timeout.

All against real Mosquitto brokers: the shared one, or ``private_broker`` where the broker itself is
restarted.
"""
from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.recovery import fail_orphaned_tasks
from a2a_nb.agents.requester import RequestTimeout, Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.agents.runtime import TaskRuntime
from a2a_nb.agents.store import SqliteTaskStore
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, properties, states
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.protocol.streams import STREAM_SEQ, StreamDeduper
from a2a_nb.story.scenarios import run_scenario
from tests.helpers import uid

ORG, UNIT = "acme", "support"
CHUNKS = 12
RESILIENT = RetryProfile(reply_first_timeout_s=1.0, stream_idle_timeout_s=1.0, max_attempts=6,
                         backoff_s=(0.2, 0.4, 0.8, 1.0))


def assert_known_states(runtime: TaskRuntime) -> None:
    """Every task is terminal, or interrupted (waiting for the requester): none is left 'running'."""
    for rec in runtime.store.list():
        assert states.is_terminal(rec.state) or states.is_interrupted(rec.state), (rec.id, rec.state)


def streaming_handler(pace: float = 0.05, chunks: int = CHUNKS):
    def handler(ctx) -> None:
        ctx.working("started")
        for i in range(chunks):
            ctx.wait(pace)
            ctx.artifact("report", [{"text": f"chunk {i}"}], append=i > 0, last_chunk=i == chunks - 1)
        ctx.complete("all chunks sent")
    return handler


def chunks_of(task: dict) -> list[str]:
    arts = [a for a in task.get("artifacts", []) if a["artifactId"] == "report"]
    return [p["text"] for a in arts for p in a["parts"]]


# -- broker restart ----------------------------------------------------------------------------------
def test_broker_restart_mid_stream_task_completes(private_broker, tmp_path):
    url = private_broker.url
    agent = uid("streamer")
    runtime = TaskRuntime(SqliteTaskStore(tmp_path / "tasks.db"))
    responder = Responder(agent, streaming_handler(pace=0.08), runtime=runtime, broker=url)
    requester = Requester(uid("coord"), broker=url, retry=RESILIENT)
    stream = requester.stream(agent, "stream through a broker restart")
    seen = 0
    restarted = False
    for ev in stream:
        seen += 1
        if seen == 3 and not restarted:
            private_broker.restart(pause=0.3)  # every client loses its connection; the broker forgets all
            restarted = True
    assert restarted
    # the sessions came back and resubscribed
    assert responder.session.wait_connected(10) and requester.session.wait_connected(10)
    assert responder.session.connect_count >= 2 and requester.session.connect_count >= 2
    final = requester.get_task(stream.task_id)
    assert final["status"]["state"] == states.COMPLETED
    assert chunks_of(final) == [f"chunk {i}" for i in range(CHUNKS)]
    assert stream.state == states.COMPLETED  # the stream itself reached the end (directly or recovered)
    assert responder.stats.executions == 1
    # after the restart, new work goes through as usual
    again = requester.send(agent, "after the restart")
    assert again.state == states.COMPLETED
    assert_known_states(runtime)


def test_broker_down_then_back_requester_retries(private_broker):
    url = private_broker.url
    agent = uid("echoer")
    responder = Responder(agent, lambda ctx: ctx.complete("pong"), broker=url)
    requester = Requester(uid("coord"), broker=url, retry=RESILIENT)
    assert requester.send(agent, "ping").state == states.COMPLETED
    private_broker.stop()
    result = {}

    def send_while_down():
        try:
            result["reply"] = requester.send(agent, "ping while the broker is down")
        except Exception as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    t = threading.Thread(target=send_while_down)
    t.start()
    time.sleep(0.5)
    private_broker.restart()  # back on the same port
    t.join(30)
    assert "reply" in result, result.get("error")
    assert result["reply"].state == states.COMPLETED
    assert_known_states(responder.runtime)


# -- responder restart with a durable store ----------------------------------------------------------
def test_sqlite_store_keeps_tasks_across_a_responder_restart(broker_url, tmp_path):
    path = tmp_path / "desk.db"
    agent = uid("durable")

    def handler(ctx):
        if ctx.turn == 1 and "ask" in ctx.text:
            ctx.ask_input("which order?")
            return None
        ctx.complete(f"done: {ctx.text}")

    first = Responder(agent, handler, runtime=TaskRuntime(SqliteTaskStore(path)), broker=broker_url)
    requester = Requester(uid("coord"), broker=broker_url, retry=RESILIENT)
    done = requester.send(agent, "finish now")
    waiting = requester.send(agent, "ask me")
    assert done.state == states.COMPLETED and waiting.state == states.INPUT_REQUIRED
    original = requester.new_message("finish now, again", task_id=done.task_id, context_id=done.context_id,
                                      message_id=done.task["history"][0]["messageId"])
    first.stop()
    first.runtime.store.close()

    second = Responder(agent, handler, runtime=TaskRuntime(SqliteTaskStore(path)), broker=broker_url)
    assert requester.get_task(done.task_id)["status"]["state"] == states.COMPLETED
    assert requester.get_task(waiting.task_id)["status"]["state"] == states.INPUT_REQUIRED
    # a retry of an old request is still recognised (same Task.id and messageId): no second execution
    again = requester.send(None, message=original)
    assert again.state == states.COMPLETED and second.stats.executions == 0
    # the interrupted task continues on the restarted agent
    cont = requester.continue_task(waiting, "order 1042")
    assert cont.state == states.COMPLETED and second.stats.executions == 1
    assert_known_states(second.runtime)


def test_tasks_running_when_the_agent_died_end_failed_after_restart(broker_url, tmp_path):
    path = tmp_path / "crash.db"
    agent = uid("crashy")
    block = threading.Event()

    def slow(ctx):
        ctx.working("working on it")
        block.wait(10)  # never finishes before the crash
        ctx.complete("too late")

    first = Responder(agent, slow, runtime=TaskRuntime(SqliteTaskStore(path)), broker=broker_url)
    first_workers = [t for t in threading.enumerate() if t.name.startswith(f"{agent}-worker")]
    requester = Requester(uid("coord"), broker=broker_url, retry=RESILIENT)
    stream = requester.stream(agent, "start and crash")
    events = [next(stream), next(stream)]  # the snapshot, WORKING
    assert events[-1].state == states.WORKING
    first.crash()  # the process dies: nobody executes the task any more
    first.runtime.store.close()

    runtime = TaskRuntime(SqliteTaskStore(path))
    failed = fail_orphaned_tasks(runtime)  # at start, before taking requests
    assert failed == [stream.task_id]
    second = Responder(agent, slow, runtime=runtime, broker=broker_url)
    # the requester's stream goes quiet, recovers with GetTask and sees the final state
    view = stream.wait()
    assert view.state == states.FAILED and stream.recoveries >= 1
    task = requester.get_task(stream.task_id)
    assert task["status"]["state"] == states.FAILED
    assert "restarted" in task["status"]["message"]["parts"][0]["text"]
    block.set()
    assert second.stats.executions == 0
    assert_known_states(runtime)
    for t in first_workers:  # the dead agent's released handler meets its closed store: let it end here
        t.join(5)
    assert first.stats.handler_crashes == 1


# -- a killed analyst ----------------------------------------------------------------------------------
def test_killed_agent_is_marked_offline_by_its_last_will(broker_url):
    agent = uid("analyst")
    card = cards.agent_card(name="Analyst", description="dies", version="1.0.0", org=ORG, unit=UNIT, agent=agent,
                            skills=[cards.skill("rca", "RCA", "root causes", ["fault-test"])])
    responder = Responder(agent, lambda ctx: ctx.complete("ok"), card=card, broker=broker_url,
                          options=ResponderOptions(keepalive=2))
    with Discovery(broker=broker_url, agent=uid("disco")) as disco:
        assert disco.wait_for(agent, status=properties.ONLINE).status_source == properties.SOURCE_AGENT
        responder.session.kill_socket()  # no DISCONNECT: the broker notices and publishes the will
        entry = disco.wait_for(agent, status=properties.OFFLINE, timeout=10)
        assert entry.status == properties.OFFLINE and entry.status_source == properties.SOURCE_LWT
        assert all(e.agent != agent for e in disco.find(tags=["fault-test"], online_only=True))


def test_dead_analyst_requester_falls_back_to_the_card_agent(broker_url):
    result = run_scenario("handover-unreachable", broker_url, say=lambda line: None, seed=None)
    assert result.ok, (result.observed, result.final_state, result.steps)
    assert [r["cause"] for r in result.reroutes] == ["handover", "fallback"]
    assert result.final_state == states.COMPLETED


# -- duplicates ----------------------------------------------------------------------------------------
class RawRequester:
    """Publishes hand-built requests and keeps every reply by Correlation Data."""

    def __init__(self, broker_url: str):
        self.name = uid("raw")
        self.session = Session(ORG, UNIT, self.name, broker=broker_url)
        self.reply_topic = f"$a2a/v1/reply/{ORG}/{UNIT}/{self.name}/r"
        self.replies: dict[bytes, list[MqttMessage]] = {}
        self.cond = threading.Condition()
        self.session.subscribe(self.reply_topic, handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self.cond:
            self.replies.setdefault(m.correlation_data, []).append(m)
            self.cond.notify_all()

    def publish(self, agent: str, body: dict, corr: bytes) -> None:
        self.session.publish(MqttMessage(f"$a2a/v1/request/{ORG}/{UNIT}/{agent}", encode_json(body), qos=1,
                                         response_topic=self.reply_topic, correlation_data=corr))

    def wait(self, pred, timeout: float = 10.0) -> None:
        with self.cond:
            self.cond.wait_for(pred, timeout)


def _send_body(method: str, task_id: str, message_id: str) -> dict:
    return {"jsonrpc": "2.0", "id": "dup", "method": method, "params": {"message": {
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "dup"}], "taskId": task_id,
        "contextId": "ctx-dup"}}}


def test_duplicate_requests_execute_once_and_all_get_the_answer(broker_url):
    agent = uid("dedupe")
    responder = Responder(agent, streaming_handler(pace=0.02, chunks=3), broker=broker_url)
    raw = RawRequester(broker_url)
    task_id, message_id = str(uuid.uuid4()), "m-dup-1"
    body = _send_body("SendMessage", task_id, message_id)
    # a retry (new correlation, same Task.id and messageId) while the task runs
    raw.publish(agent, body, b"c1")
    raw.publish(agent, body, b"c2")
    raw.wait(lambda: b"c1" in raw.replies and b"c2" in raw.replies)
    for corr in (b"c1", b"c2"):
        result = json.loads(raw.replies[corr][0].payload)["result"]
        assert result["task"]["status"]["state"] == states.COMPLETED
    assert responder.stats.executions == 1
    # and after it finished: a late duplicate gets the stored task, still without running again
    raw.publish(agent, body, b"c3")
    raw.wait(lambda: b"c3" in raw.replies)
    assert json.loads(raw.replies[b"c3"][0].payload)["result"]["task"]["id"] == task_id
    assert responder.stats.executions == 1
    assert_known_states(responder.runtime)


def test_redelivered_stream_request_is_deduplicated_by_the_requester_side(broker_url):
    agent = uid("redeliver")
    responder = Responder(agent, streaming_handler(pace=0.02, chunks=4), broker=broker_url)
    raw = RawRequester(broker_url)
    body = _send_body("SendStreamingMessage", str(uuid.uuid4()), "m-redeliver")
    # QoS 1 may deliver the same PUBLISH twice: same correlation, same payload
    raw.publish(agent, body, b"same")
    raw.publish(agent, body, b"same")

    def finished():
        d = StreamDeduper()
        for m in raw.replies.get(b"same", []):
            d.accept(json.loads(m.payload)["result"], m.user_property(STREAM_SEQ))
        return d.finished

    raw.wait(finished)
    time.sleep(0.2)
    dedup = StreamDeduper()
    accepted = [json.loads(m.payload)["result"] for m in raw.replies[b"same"]
                if dedup.accept(json.loads(m.payload)["result"], m.user_property(STREAM_SEQ))]
    kinds = [next(iter(r)) for r in accepted]
    assert kinds[0] == "task" and kinds.count("artifactUpdate") == 4
    assert accepted[-1]["statusUpdate"]["status"]["state"] == states.COMPLETED
    assert dedup.finished and responder.stats.executions == 1
    assert_known_states(responder.runtime)


# -- stalled replies -----------------------------------------------------------------------------------
def test_stalled_stream_is_recovered_with_get_task_and_subscribe(broker_url):
    agent = uid("staller")

    def stall(ctx):
        ctx.working("thinking")
        ctx.wait(1.6)  # longer than the requester's stream-idle timeout
        ctx.artifact("report", [{"text": "late"}], last_chunk=True)
        ctx.complete("done after a pause")

    responder = Responder(agent, stall, broker=broker_url)
    retry = RetryProfile(reply_first_timeout_s=1.0, stream_idle_timeout_s=0.5, max_attempts=5, backoff_s=(0.1,))
    requester = Requester(uid("coord"), broker=broker_url, retry=retry)
    stream = requester.stream(agent, "take your time")
    view = stream.wait()
    assert view.state == states.COMPLETED
    assert stream.recoveries >= 1
    assert any(e.kind == "recovered" for e in stream.events)
    assert responder.stats.executions == 1
    assert_known_states(responder.runtime)


def test_slow_blocking_reply_is_retried_with_the_same_task_and_runs_once(broker_url):
    agent = uid("slowpoke")

    def slow(ctx):
        ctx.wait(1.0)
        ctx.complete("finally")

    responder = Responder(agent, slow, broker=broker_url)
    retry = RetryProfile(reply_first_timeout_s=0.35, stream_idle_timeout_s=1.0, max_attempts=6, backoff_s=(0.05,))
    requester = Requester(uid("coord"), broker=broker_url, retry=retry)
    reply = requester.send(agent, "slow one")
    assert reply.state == states.COMPLETED
    assert len(reply.attempts) >= 2  # the first attempt timed out
    assert responder.stats.executions == 1
    assert_known_states(responder.runtime)


def test_silent_agent_ends_in_a_clear_timeout(broker_url):
    agent = uid("frozen")
    responder = Responder(agent, lambda ctx: ctx.complete("never"), broker=broker_url)
    responder.frozen = True  # takes nothing in any more (a hung process that is still connected)
    retry = RetryProfile(reply_first_timeout_s=0.2, stream_idle_timeout_s=0.5, max_attempts=3, backoff_s=(0.05,))
    requester = Requester(uid("coord"), broker=broker_url, retry=retry)
    started = time.time()
    with pytest.raises(RequestTimeout):
        requester.send(agent, "anyone?")
    assert time.time() - started < 3
    assert len(responder.runtime.store) == 0

"""The outbox, and a handler's context driving runtime + outbox: no broker, connections are fakes.

The runtime decides (``test_runtime.py``); here: the outbox publishes what was decided, in order,
from the sender's connection; a path that loses an item gets no more; a handover waits for the old
owner's PUBACKs; nothing is published while the runtime's lock is held; and a task's items leave in
the order they were decided even when a CancelTask arrives from another thread mid-stream.
"""
from __future__ import annotations

import json
import threading

import pytest

from a2a_nb.agents.context import TaskContext
from a2a_nb.agents.reply_paths import STREAM, Listener, Outgoing
from a2a_nb.agents.runtime import TaskCanceled, TaskRuntime
from a2a_nb.mqtt.session import PublishResult
from a2a_nb.protocol import messages, states
from a2a_nb.protocol.ids import IdSource
from a2a_nb.protocol.packet import MqttMessage

REPLY = "$a2a/v1/reply/acme/support/coordinator/inbox"


class Connection:
    """Records what it publishes; acknowledges at once unless ``hold`` (then ``ack_all()`` does)."""

    def __init__(self, log: list, hold: bool = False, fail: bool = False):
        self.log, self.hold, self.fail = log, hold, fail
        self.pending: list = []
        self.lock = threading.Lock()

    def publish_then(self, msg: MqttMessage, on_ack) -> None:
        if self.fail:
            raise OSError("connection lost")
        with self.lock:
            self.log.append(msg)
        if self.hold:
            self.pending.append(on_ack)
        else:
            on_ack(PublishResult(0, "Success"))

    def ack_all(self, code: int = 0) -> None:
        for on_ack in self.pending:
            on_ack(PublishResult(code, "ack"))
        self.pending = []


class Agent:
    """A live agent: an id, a connection, the runtime it serves from."""

    def __init__(self, agent: str, runtime: TaskRuntime, session: Connection):
        self.agent, self.runtime, self.session = agent, runtime, session
        runtime.register(self)


def message(i: int, corr: str = "s1") -> Outgoing:
    return Outgoing("desk", MqttMessage(REPLY, f"item {i}".encode(), correlation_data=corr.encode()))


def test_items_go_out_in_order_from_their_senders_connection():
    rt = TaskRuntime()
    desk_log: list = []
    analyst_log: list = []
    Agent("desk", rt, Connection(desk_log))
    Agent("analyst-1", rt, Connection(analyst_log))
    rt.outbox.send([message(1), Outgoing("analyst-1", message(2).message), message(3)])
    assert [m.payload for m in desk_log] == [b"item 1", b"item 3"] and [m.payload for m in analyst_log] == [b"item 2"]
    assert rt.outbox.dropped == 0


def test_an_item_that_cannot_go_out_loses_its_path_and_the_paths_later_items():
    rt = TaskRuntime()
    log: list = []
    Agent("desk", rt, Connection(log))
    broken = Listener(STREAM, REPLY, b"s1", "r1", "desk")
    other = Listener(STREAM, REPLY, b"s2", "r2", "desk")
    first, second, elsewhere = message(1), message(2), message(3, "s2")
    rt.outbox.send([Outgoing(None, first.message, broken), Outgoing("desk", second.message, broken),
                    Outgoing("desk", elsewhere.message, other)])
    assert broken.lost and not other.lost
    assert [m.payload for m in log] == [b"item 3"], "no hole in a stream: s1's later item is not sent"
    assert rt.outbox.dropped == 1


def test_a_dead_connection_drops_the_item_and_counts_nothing_unacknowledged():
    rt = TaskRuntime()
    Agent("desk", rt, Connection([], fail=True))
    path = Listener(STREAM, REPLY, b"s1", "r1", "desk")
    rt.outbox.send([Outgoing("desk", message(1).message, path)])
    assert path.lost and rt.outbox.dropped == 1 and rt.outbox.wait_acked("desk", 0.0)


def test_wait_acked_waits_for_every_puback_and_counts_the_unheard():
    rt = TaskRuntime()
    conn = Connection([], hold=True)
    Agent("desk", rt, conn)
    rt.outbox.send([message(1), message(2)])
    assert not rt.outbox.wait_acked("desk", 0.01)
    conn.ack_all(16)  # No matching subscribers: the requester stopped listening
    assert rt.outbox.wait_acked("desk", 0.01) and rt.unheard_replies == 2


def _task(rt: TaskRuntime, owner: Agent, corr: str = "s1") -> TaskContext:
    msg = messages.user_message("go", message_id="m1", task_id="t1", context_id="ctx")
    listener = Listener(STREAM, REPLY, corr.encode(), "r1", owner.agent)
    with rt.outbox.in_order():
        rt.outbox.send(rt.receive(msg, "alice", listener, new_context_id=lambda: "ctx").outgoing)
    return TaskContext(rt, owner, "t1", msg, IdSource(seed=1))


def _items(log: list) -> list[str]:
    out = []
    for m in log:
        result = json.loads(m.payload)["result"]
        if "artifactUpdate" in result:
            out.append(result["artifactUpdate"]["artifact"]["parts"][0]["text"])
        else:
            body = result.get("statusUpdate") or result["task"]
            out.append(states.short_name(body["status"]["state"]))
    return out


def test_a_handlers_verbs_publish_outside_the_runtimes_lock():
    rt = TaskRuntime()
    held: list[bool] = []

    class Watching(Connection):
        def publish_then(self, msg, on_ack):
            free: list[bool] = []

            def probe() -> None:  # another thread: can it take the runtime's lock right now?
                got = rt.lock.acquire(timeout=1.0)
                free.append(got)
                if got:
                    rt.lock.release()

            t = threading.Thread(target=probe)
            t.start()
            t.join()
            held.append(not free[0])
            super().publish_then(msg, on_ack)

    log: list = []
    ctx = _task(rt, Agent("desk", rt, Watching(log)))
    ctx.working("reading")
    ctx.artifact("report", "found it")
    ctx.complete("done")
    assert _items(log) == ["submitted", "working", "found it", "completed"]
    assert held == [False] * 4


def test_a_handover_waits_for_the_old_owners_pubacks_then_the_delegate_sends():
    rt = TaskRuntime()
    desk_conn = Connection([], hold=True)
    analyst_log: list = []
    desk = Agent("desk", rt, desk_conn)
    analyst = Agent("analyst-1", rt, Connection(analyst_log))
    ctx = _task(rt, desk)
    ctx.working("triage")  # the snapshot and this status: published by the desk, PUBACKs outstanding
    handed = threading.Thread(target=ctx.hand_over, args=(analyst,))
    handed.start()
    handed.join(0.2)
    assert handed.is_alive() and rt.owner_of("t1") == "desk", "no handover while the desk's items are unacknowledged"
    desk_conn.ack_all()
    handed.join(2.0)
    assert rt.owner_of("t1") == "analyst-1" and ctx.agent == "analyst-1"
    ctx.complete("done")
    assert _items(analyst_log) == ["completed"]
    with pytest.raises(ValueError, match="does not share"):
        ctx.hand_over(Agent("stranger", TaskRuntime(), Connection([])))


def test_a_cancel_from_another_thread_is_the_streams_last_item_whatever_the_timing():
    rt = TaskRuntime()
    log: list = []
    ctx = _task(rt, Agent("desk", rt, Connection(log)))
    started = threading.Event()
    stopped: list[BaseException] = []

    def stream() -> None:
        try:
            for i in range(5000):
                ctx.artifact("report", f"{i}", append=i > 0)
                if i == 20:
                    started.set()
        except TaskCanceled as exc:
            stopped.append(exc)

    worker = threading.Thread(target=stream)
    worker.start()
    started.wait(5)
    with rt.outbox.in_order():
        rt.outbox.send(rt.cancel("t1", "alice").outgoing)
    worker.join(5)
    items = _items(log)
    assert stopped and items[0] == "submitted" and items[-1] == "canceled"
    chunks = items[1:-1]
    assert chunks == [str(i) for i in range(len(chunks))] and len(chunks) < 5000
    assert rt.record("t1").state == states.CANCELED

"""The task runtime's rules, checked as plain values: no broker, no session, no thread.

Every call returns what it decided to send (``Outgoing``: the sending agent and the MQTT message);
``wire()`` below reads those messages back as one line each, so a test states the exact items, their
order, who sends them and the user properties they carry (Profile: Streaming Reply Mapping 1-7,
Optional Task Handover, Requester Retry 4, Optional MQTT Native Binary Artifact Mode).
"""
from __future__ import annotations

import json
from typing import Optional

import pytest

from a2a_nb.agents.reply_paths import BLOCKING, STREAM, Listener, Outgoing
from a2a_nb.agents.runtime import TaskCanceled, TaskRuntime
from a2a_nb.protocol import errors, inbound, jsonrpc, messages, properties, states
from a2a_nb.protocol.errors import A2AError

REPLY = "$a2a/v1/reply/acme/support/coordinator/inbox"
ALICE, BOB = "alice", "bob"  # requester identities (the runtime only compares them)


class Agent:
    """Just enough of a live agent for the runtime to count it as live; nothing is published here."""

    def __init__(self, agent: str):
        self.agent = agent
        self.session = None


def runtime(*live: str) -> TaskRuntime:
    rt = TaskRuntime(clock=lambda: 100.0)
    for name in live or ("desk",):
        rt.register(Agent(name))
    return rt


def path(corr: str, kind: str = STREAM, by: str = "desk", **kw) -> Listener:
    return Listener(kind, REPLY, corr.encode(), f"req-{corr}", by, **kw)


def ask(text: str = "analyse TCK-4821", task_id: str = "t1", mid: str = "m1", context_id: Optional[str] = "ctx") -> dict:
    return messages.user_message(text, message_id=mid, task_id=task_id, context_id=context_id)


def receive(rt: TaskRuntime, listener: Listener, message: Optional[dict] = None, caller: str = ALICE, **kw):
    kw.setdefault("new_context_id", lambda: "new-ctx")
    return rt.receive(message or ask(), caller, listener, **kw)


def say(text: str, mid: str = "a1") -> dict:
    return messages.agent_message(text, message_id=mid, task_id="t1", context_id="ctx")


def chunk(text: str, append: bool = True, artifact_id: str = "report") -> dict:
    return messages.artifact_update("t1", "ctx", messages.artifact(artifact_id, [messages.text_part(text)]), append=append)


def short(state: str) -> str:
    return states.short_name(state)


def wire(out: list[Outgoing]) -> list[str]:
    """Each message as ``sender>correlation: what [user properties]``."""
    lines = []
    for o in out:
        m = o.message
        if m.payload_format == 0:
            what = f"raw {m.payload.decode()}"
        else:
            body = json.loads(m.payload)
            assert body["jsonrpc"] == "2.0" and body["id"] == f"req-{m.correlation_data.decode()}"
            what = describe(body)
        props = "".join(f" [{k}={v}]" for k, v in m.user_properties)
        lines.append(f"{o.sender}>{m.correlation_data.decode()}: {what}{props}")
    return lines


def describe(body: dict) -> str:
    if "error" in body:
        return f"error {body['error']['code']}"
    result = body["result"]
    if "artifactUpdate" in result:
        parts = result["artifactUpdate"]["artifact"]["parts"]
        return "artifact " + "".join(p.get("text", p.get("raw", "")) for p in parts)
    if "statusUpdate" in result:
        return f"status {short(result['statusUpdate']['status']['state'])}"
    if "message" in result:
        return f"message {messages.text_of(result['message'])}"
    task = result.get("task", result)
    return f"task {short(task['status']['state'])}"


# -- a new task, and the items each kind of reply path hears ------------------------------------------
def test_a_new_task_is_submitted_belongs_to_who_asked_and_sends_nothing_yet():
    rt = runtime()
    got = receive(rt, path("s1"))
    assert got.what == inbound.SEND_NEW and got.outgoing == []
    rec = rt.record("t1")
    assert (rec.state, rec.owner, rec.requester) == (states.SUBMITTED, "desk", ALICE)
    assert rec.task["contextId"] == "ctx" and rec.task["history"][0]["messageId"] == "m1"
    made = []
    receive(rt, path("s2"), ask(task_id="t2", context_id=None), new_context_id=lambda: made.append(1) or "fresh")
    assert rt.record("t2").task["contextId"] == "fresh" and made == [1]


def test_a_stream_hears_the_snapshot_then_each_event_in_order_and_ends_with_the_final_state():
    rt = runtime()
    receive(rt, path("s1"))
    out = rt.update("t1", state=states.WORKING, status_message=say("reading the logs")).outgoing
    out += rt.update("t1", artifact_event=chunk("root cause: ", append=False)).outgoing
    out += rt.update("t1", artifact_event=chunk("a stale cache")).outgoing
    out += rt.update("t1", state=states.COMPLETED, status_message=say("done", "a2")).outgoing
    assert wire(out) == ["desk>s1: task submitted",  # the snapshot as it was before the first event
                         "desk>s1: status working",
                         "desk>s1: artifact root cause: ",
                         "desk>s1: artifact a stale cache",
                         "desk>s1: status completed"]
    assert rt.record("t1").task["artifacts"][0]["parts"] == [{"text": "root cause: "}, {"text": "a stale cache"}]
    assert rt.update("t1", artifact_event=chunk("late")).outgoing == [], "nothing after the final event"


def test_a_blocking_request_hears_only_where_the_task_stops():
    rt = runtime()
    receive(rt, path("b1", BLOCKING))
    assert rt.update("t1", state=states.WORKING).outgoing == []
    assert rt.update("t1", artifact_event=chunk("partial", append=False)).outgoing == []
    out = rt.update("t1", state=states.INPUT_REQUIRED, status_message=say("which order?")).outgoing
    assert wire(out) == ["desk>b1: task input-required"]
    assert rt.update("t1", state=states.WORKING).outgoing == [], "the blocking path was answered once"


def test_a_blocking_path_to_a_task_that_already_stopped_gets_the_task_at_once():
    rt = runtime()
    receive(rt, path("b1", BLOCKING))
    rt.update("t1", state=states.COMPLETED)
    assert wire(rt.add_listener("t1", path("b2", BLOCKING), snapshot=False)) == ["desk>b2: task completed"]
    assert rt.add_listener("t1", path("s9"), snapshot=False) == [], "a stream to a finished task stays silent"


def test_return_immediately_answers_with_the_submitted_task_and_attaches_nothing():
    rt = runtime()
    got = receive(rt, path("b1", BLOCKING), immediate=True)
    assert wire(got.outgoing) == ["desk>b1: task submitted"]
    assert rt.update("t1", state=states.COMPLETED).outgoing == []


# -- the state machine ---------------------------------------------------------------------------------
@pytest.mark.parametrize("end", sorted(states.TERMINAL))
def test_a_terminal_task_never_changes_and_a_refused_change_stores_and_sends_nothing(end):
    rt = runtime()
    receive(rt, path("s1"))
    rt.update("t1", state=end)
    stored = rt.record("t1")
    refused = TaskCanceled if end == states.CANCELED else ValueError  # a canceled task's handler stops
    for later in sorted(states.ALL_STATES - {end}):
        with pytest.raises(refused):
            rt.update("t1", state=later, status_message=say("again"))
        assert rt.record("t1") is stored


def test_a_task_never_goes_back_to_submitted():
    rt = runtime()
    receive(rt, path("s1"))
    rt.update("t1", state=states.WORKING)
    with pytest.raises(ValueError):
        rt.update("t1", state=states.SUBMITTED)
    assert rt.record("t1").state == states.WORKING
    assert rt.update("t1", state=states.WORKING).record.state == states.WORKING, "staying put is allowed"


# -- retries and new input -----------------------------------------------------------------------------
def test_a_retried_send_attaches_to_the_task_with_a_snapshot_instead_of_running_again():
    rt = runtime()
    receive(rt, path("s1"))
    out = rt.update("t1", state=states.WORKING).outgoing
    again = receive(rt, path("s2"))  # the same messageId: QoS 1 redelivery or a requester retry
    assert again.what == inbound.SEND_DUPLICATE
    out += again.outgoing + rt.update("t1", state=states.COMPLETED).outgoing
    assert wire(out) == ["desk>s1: task submitted", "desk>s1: status working",
                         "desk>s2: task working",  # the retry's stream starts with the task as it is now
                         "desk>s1: status completed", "desk>s2: status completed"]


def test_new_input_continues_an_interrupted_task_but_not_a_finished_one():
    rt = runtime()
    receive(rt, path("s1"))
    rt.update("t1", state=states.INPUT_REQUIRED, status_message=say("which order?"))
    got = receive(rt, path("s2"), ask("order 1182", mid="m2"))
    assert got.what == inbound.SEND_CONTINUE and got.record.state == states.WORKING
    assert [m["messageId"] for m in got.record.task["history"]] == ["m1", "a1", "m2"]
    with pytest.raises(A2AError) as mismatch:
        receive(rt, path("s3"), ask("x", mid="m3", context_id="other"))
    assert mismatch.value.code == errors.INVALID_PARAMS
    rt.update("t1", state=states.COMPLETED)
    with pytest.raises(A2AError) as finished:
        receive(rt, path("s4"), ask("more", mid="m4"))
    assert finished.value.code == errors.UNSUPPORTED_OPERATION


def test_admit_refuses_a_new_task_before_it_exists():
    rt = runtime()
    busy = errors.responder_unavailable("desk is at capacity")
    with pytest.raises(A2AError) as refused:
        receive(rt, path("b1", BLOCKING), admit=lambda message: busy)
    assert refused.value is busy and rt.get("t1") is None and rt.tracked_tasks == 0


# -- ownership: someone else's task does not exist for them --------------------------------------------
def test_someone_elses_task_answers_like_an_unknown_one_and_stays_untouched():
    rt = runtime()
    receive(rt, path("s1"))
    stored = rt.record("t1")
    assert rt.task_for("t1", ALICE) is stored and rt.task_for("t1", BOB) is None
    for attempt in (lambda: receive(rt, path("x1"), ask(mid="m9"), caller=BOB),
                    lambda: rt.cancel("t1", BOB),
                    lambda: rt.subscribe("t1", BOB, path("x2"))):
        with pytest.raises(A2AError) as refused:
            attempt()
        assert refused.value.code == errors.TASK_NOT_FOUND
    assert rt.record("t1") is stored and not rt.cancel_flag("t1").is_set()
    out = rt.update("t1", state=states.COMPLETED).outgoing
    assert [line.split(":")[0] for line in wire(out)] == ["desk>s1", "desk>s1"], "bob's paths hear nothing"


def test_an_unknown_task_cannot_be_canceled_or_subscribed_to():
    rt = runtime()
    for attempt in (lambda: rt.cancel("nope", ALICE), lambda: rt.subscribe("nope", ALICE, path("s1"))):
        with pytest.raises(A2AError) as refused:
            attempt()
        assert refused.value.code == errors.TASK_NOT_FOUND
    assert rt.tracked_tasks == 0


# -- subscribing ---------------------------------------------------------------------------------------
def test_subscribe_sends_the_snapshot_at_once_then_the_events_but_not_to_a_finished_task():
    rt = runtime()
    receive(rt, path("b1", BLOCKING))
    rt.update("t1", state=states.WORKING)
    assert wire(rt.subscribe("t1", ALICE, path("s2"))) == ["desk>s2: task working"]
    assert wire(rt.update("t1", state=states.COMPLETED).outgoing) == ["desk>b1: task completed", "desk>s2: status completed"]
    with pytest.raises(A2AError) as finished:
        rt.subscribe("t1", ALICE, path("s3"))
    assert finished.value.code == errors.UNSUPPORTED_OPERATION


# -- handover: who sends, and what the requester is told ------------------------------------------------
def test_after_a_handover_the_delegate_sends_and_names_itself():
    rt = runtime("desk", "analyst-1")
    receive(rt, path("s1"))
    first = rt.update("t1", state=states.WORKING).outgoing
    assert rt.hand_over("t1", "analyst-1") is None, "a handover sends nothing by itself"
    rec = rt.record("t1")
    assert (rec.owner, rec.requester) == ("analyst-1", ALICE)
    later = rt.update("t1", artifact_event=chunk("found it", append=False)).outgoing
    later += rt.update("t1", state=states.COMPLETED).outgoing
    assert wire(first + later) == ["desk>s1: task submitted", "desk>s1: status working",
                                   "analyst-1>s1: artifact found it [a2a-responder-agent-id=analyst-1]",
                                   "analyst-1>s1: status completed [a2a-responder-agent-id=analyst-1]"]


def test_when_the_delegate_is_gone_the_addressee_answers_and_says_so():
    rt = runtime("desk", "analyst-1")
    receive(rt, path("s1"))
    rt.hand_over("t1", "analyst-1")
    rt.update("t1", state=states.WORKING)
    rt.unregister(rt.agents["analyst-1"])
    out = rt.update("t1", state=states.COMPLETED).outgoing
    assert wire(out) == ["desk>s1: status completed [a2a-responder-agent-id=desk]"], \
        "the path was told analyst-1 answers: the change back to the desk is told too"
    assert rt.sender_for("analyst-1", "desk") == "desk"
    rt.unregister(rt.agents["desk"])
    assert rt.sender_for("analyst-1", "desk") is None


def test_a_pooled_request_always_names_its_responder():
    rt = runtime("analyst-2")
    got = receive(rt, path("p1", by="analyst-2", pooled=True))
    out = got.outgoing + rt.update("t1", state=states.COMPLETED).outgoing
    assert wire(out) == ["analyst-2>p1: task submitted [a2a-responder-agent-id=analyst-2]",
                         "analyst-2>p1: status completed [a2a-responder-agent-id=analyst-2]"]


def test_nothing_live_to_send_from_gives_a_message_without_a_sender():
    rt = runtime("desk")
    receive(rt, path("s1"))
    rt.unregister(rt.agents["desk"])
    out = rt.update("t1", state=states.WORKING).outgoing
    assert [o.sender for o in out] == [None, None] and all(o.message.user_properties == () for o in out)


def test_a_reply_comes_from_whoever_answers_for_the_task_now():
    rt = runtime("desk", "analyst-1")
    receive(rt, path("b1", BLOCKING))
    rt.hand_over("t1", "analyst-1")
    result = rt.reply(rt.record("t1"), "desk", False, REPLY, b"g1", jsonrpc.result_response("req-g1", rt.record("t1").task))
    error = rt.reply(None, "desk", False, REPLY, b"e1", jsonrpc.error_response("req-e1", errors.task_not_found("t9")))
    assert wire([result, error]) == ["analyst-1>g1: task submitted [a2a-responder-agent-id=analyst-1]",
                                     "desk>e1: error -32001"]


# -- cancel --------------------------------------------------------------------------------------------
def test_cancel_ends_every_stream_answers_every_waiter_and_stops_the_handler():
    rt = runtime()
    receive(rt, path("s1"))
    receive(rt, path("b1", BLOCKING))
    flag = rt.cancel_flag("t1")  # what the handler's context holds
    canceled = rt.cancel("t1", ALICE)
    assert canceled.record.state == states.CANCELED
    assert wire(canceled.outgoing) == ["desk>s1: task submitted", "desk>s1: status canceled", "desk>b1: task canceled"]
    assert flag.is_set() and rt.cancel_flag("t1").is_set()
    for handler_step in (lambda: rt.update("t1", state=states.WORKING),
                         lambda: rt.update("t1", artifact_event=chunk("late")),
                         lambda: rt.binary_chunk("t1", "bin", b"x", None, False),
                         lambda: rt.complete_with_message("t1", say("too late"))):
        with pytest.raises(TaskCanceled):
            handler_step()
    assert rt.record("t1") is canceled.record and rt.tracked_tasks == 0


def test_a_finished_task_cannot_be_canceled_and_stays_as_it_was():
    rt = runtime()
    receive(rt, path("s1"))
    done = rt.update("t1", state=states.COMPLETED).record
    with pytest.raises(A2AError) as refused:
        rt.cancel("t1", ALICE)
    assert refused.value.code == errors.TASK_NOT_CANCELABLE
    assert rt.record("t1") is done and not rt.cancel_flag("t1").is_set()


def test_an_interrupted_task_can_be_canceled():
    rt = runtime()
    receive(rt, path("s1"))
    rt.update("t1", state=states.INPUT_REQUIRED)
    assert rt.cancel("t1", ALICE).record.state == states.CANCELED


# -- answering with a Message --------------------------------------------------------------------------
def test_a_message_answer_is_each_paths_only_item_and_completes_the_task():
    rt = runtime()
    receive(rt, path("s1"))
    receive(rt, path("b1", BLOCKING))
    done = rt.complete_with_message("t1", say("echo: hi"))
    assert wire(done.outgoing) == ["desk>s1: message echo: hi", "desk>b1: message echo: hi"]
    assert done.record.state == states.COMPLETED and done.record.task["status"]["message"]["messageId"] == "a1"
    assert rt.tracked_tasks == 0


# -- binary chunks, repeats, lost paths -----------------------------------------------------------------
def test_binary_chunks_go_raw_to_binary_streams_and_as_base64_to_the_others():
    rt = runtime()
    receive(rt, path("bin", artifact_mode=properties.MODE_BINARY))
    out = receive(rt, path("js", artifact_mode=properties.MODE_JSON)).outgoing  # a retry that asked for JSON
    out += rt.binary_chunk("t1", "dump", b"AB", "application/octet-stream", False).outgoing
    out += rt.binary_chunk("t1", "dump", b"CD", "application/octet-stream", True).outgoing
    raw = [o.message for o in out if o.message.payload_format == 0]
    assert [m.payload for m in raw] == [b"AB", b"CD"]
    assert [dict(m.user_properties)[properties.CHUNK_SEQNO] for m in raw] == ["0", "1"]
    assert [dict(m.user_properties)[properties.LAST_CHUNK] for m in raw] == ["false", "true"]
    assert raw[0].content_type == "application/octet-stream"
    assert [line for line in wire(out) if line.startswith("desk>js")] == [
        "desk>js: task submitted [a2a-artifact-mode=json]",
        "desk>js: artifact QUI= [a2a-artifact-mode=json]", "desk>js: artifact Q0Q= [a2a-artifact-mode=json]"]
    assert rt.record("t1").task["artifacts"][0]["parts"] == [{"raw": "QUI=", "mediaType": "application/octet-stream"},
                                                             {"raw": "Q0Q=", "mediaType": "application/octet-stream"}]


def test_an_item_that_repeats_an_earlier_one_byte_for_byte_is_numbered():
    rt = runtime()
    receive(rt, path("s1"))
    out = [rt.update("t1", artifact_event=chunk(".")).outgoing for _ in range(3)]
    seqs = [[dict(o.message.user_properties).get("a2a-stream-seq") for o in items] for items in out]
    assert seqs == [[None, None], ["3"], ["4"]], "snapshot and first dot plain; each repeat carries its position"


def test_a_lost_path_gets_nothing_more():
    rt = runtime()
    receive(rt, path("s1"))
    lost = path("s2")
    rt.subscribe("t1", ALICE, lost)
    lost.lost = True  # what the outbox does when an item could not be published on it
    assert wire(rt.update("t1", state=states.WORKING).outgoing) == ["desk>s1: task submitted", "desk>s1: status working"]


def test_a_finished_task_leaves_the_runtime_bookkeeping():
    rt = runtime()
    receive(rt, path("s1"))
    receive(rt, path("s2"), ask(task_id="t2", mid="m2"))
    assert rt.tracked_tasks == 2
    rt.update("t1", state=states.FAILED)
    assert rt.tracked_tasks == 1
    with pytest.raises(ValueError):
        rt.update("t1", state=states.WORKING)
    assert rt.tracked_tasks == 1, "a refused change leaves no bookkeeping behind"


# -- task events: extended observability (protocol/task_events.py) ------------------------------------
def test_a_runtime_that_announces_tasks_sends_each_state_change_to_the_answering_agents_event_topic():
    from a2a_nb.protocol import task_events
    from tests.sdk_check import assert_valid

    rt = TaskRuntime(clock=lambda: 100.0, task_events=("acme", "support"))
    rt.register(Agent("desk"))
    receive(rt, path("s1"))
    out = rt.update("t1", state=states.WORKING, status_message=say("reading the ticket")).outgoing
    out += rt.update("t1", state=states.WORKING, status_message=say("still reading", "a2")).outgoing  # same state
    out += rt.update("t1", artifact_event=chunk("root cause: ", append=False)).outgoing
    out += rt.update("t1", state=states.COMPLETED).outgoing
    events = [o for o in out if o.path is None]
    assert [o.sender for o in events] == ["desk", "desk"]
    assert all(o.message.topic == "$a2a/v1/event/acme/support/desk" and o.message.qos == 0 and not o.message.retain
               and task_events.is_task_event(o.message) for o in events)
    bodies = [json.loads(o.message.payload) for o in events]
    assert [b["status"]["state"] for b in bodies] == [states.WORKING, states.COMPLETED], "a state change each, once"
    assert all("message" not in b["status"] for b in bodies), "what was said stays on the reply path"
    assert events[0].message.user_property(properties.TASK_ID) == "t1"
    assert events[0].message.user_property(properties.CONTEXT_ID) == "ctx"
    for b in bodies:
        assert_valid("TaskStatusUpdateEvent", b)


def test_no_task_events_for_a_sealed_task_or_from_a_runtime_that_does_not_announce():
    rt = TaskRuntime(clock=lambda: 100.0, task_events=("acme", "support"))
    rt.register(Agent("desk"))
    receive(rt, path("s1", seal=lambda msg, sender: msg))  # a ubsp-v1 path
    assert [o for o in rt.update("t1", state=states.WORKING).outgoing if o.path is None] == []
    quiet = runtime()
    receive(quiet, path("s1"))
    assert [o for o in quiet.update("t1", state=states.WORKING).outgoing if o.path is None] == []

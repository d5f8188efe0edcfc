"""Checks of task semantics: resends, GetTask / CancelTask / ListTasks / SubscribeToTask, streams,
multi-turn conversations and handover.

Profile: Requester Retry and Timeout Profile 4 (dedupe by Task.id), Request/Reply Mapping (MQTT v5)
7-8, Streaming Reply Mapping (SendStreamingMessage) 1-7, Multi-Turn Conversation Patterns, Optional
Task Handover 2-4; A2A v1.0 method semantics and error codes (a2a-v1-wire-notes).
"""
from __future__ import annotations

import functools
from typing import Callable

from ..protocol import errors, jsonrpc, messages, properties, states
from ..protocol.artifacts import ArtifactSet
from ..protocol.ids import IDENTIFIER_RE
from ..protocol.messages import task_ids_of
from ..protocol.routing import HANDOVER
from ..protocol.safe_text import quoted
from ..protocol.streams import reply_ends_stream
from ..protocol.sdk_schema import validate_payload
from ..traffic.lint import SHOULD
from .checks_card import SILENT
from .client import FINAL, Exchange, no_end
from .rules import MUST, Outcome, check, failed, not_applicable, passed
from .probe_run import ANSWER_TEXT, ProbeRun, Sent, state_in, task_in

A2A_METHODS = "A2A v1.0 method semantics and error codes (Mandatory Binding-Specific Error Mapping 3)"


def _short(task_id: str) -> str:
    return task_id[:8] + "…"


def expect_error(sent: str, ex: Exchange, code: int, why: str, binding: bool = False) -> Outcome:
    """Pass when the first correlated reply is JSON-RPC error ``code`` (a core error, or with
    ``binding`` the profile's own, marked by ``error.data.a2a_error``)."""
    if ex.first is None:
        return failed(sent, ex.came_back(), f"no correlated reply: error {code} was expected ({why})")
    err = ex.error
    if err is None:
        return failed(sent, ex.came_back(), f"answered without an error; expected error {code} ({why})")
    kind = errors.classify(err)
    if err.get("code") == code and kind.binding == binding:
        return passed(sent, ex.came_back())
    if err.get("code") == code:
        return failed(sent, ex.came_back(), f"error {code} with the wrong marker: {kind.name} (expected "
                      f"{'the binding marker' if binding else 'the core A2A error, without data.a2a_error'}; {why})")
    return failed(sent, ex.came_back(), f"error {quoted(err.get('code'))} ({kind.name}); expected {code} ({why})")


# -- resend and task operations ----------------------------------------------------------------------

@check("idempotent-resend", "idempotent-resend", "a resend (same messageId and Task.id, new Correlation Data) "
       "returns the existing task instead of running the work again", level=MUST,
       section="Requester Retry and Timeout Profile 4")
def idempotent_resend(run: ProbeRun) -> Outcome:
    base = run.baseline()
    if base.exchange.first is None:
        return not_applicable("the first SendMessage got no correlated reply (see correlation-text)")
    sent = f"the first SendMessage again, byte for byte, new Correlation Data (task {_short(base.task_id)})"
    ex = run.client.exchange(run.client.topic_for(run.agent, base.task_id), base.exchange.sent.payload,
                             user_properties=run.props(), task_id=base.task_id)
    if ex.first is None:
        return failed(sent, ex.came_back(), "no correlated reply to the resend: a requester that lost the first "
                      "reply retries like this, and must get the task back")
    if ex.error is not None:
        return failed(sent, ex.came_back(), "the resend was answered with an error: a responder that already created "
                      "the task must return its state (it must recognise the retry by Task.id and messageId)")
    result = ex.result if isinstance(ex.result, dict) else {}
    task = task_in(ex.response)
    named = task_ids_of(ex.response, {})[0]
    if named != base.task_id:
        return failed(sent, ex.came_back(),
                      f"the resend names task {quoted(named)}, not {base.task_id!r}: a duplicate task")
    first_kind, again_kind = _kind(base.exchange.result), _kind(ex.result)
    interop = (f"the first answer was {first_kind}, the resend's is {again_kind}: a requester that reads one kind "
               "of answer misses the other") if first_kind != again_kind else ""
    if task is not None:
        ran = sum(1 for m in task.get("history") or [] if m.get("messageId") == base.message["messageId"])
        if ran > 1:
            return failed(sent, ex.came_back(), f"the task's history holds the message {ran} times: the work ran again")
        return passed(sent, ex.came_back(), interop=interop)
    earlier = (base.exchange.result or {}).get("message") or {}
    again = result.get("message") or {}
    if earlier.get("messageId") == again.get("messageId"):
        return passed(sent, ex.came_back(), interop=interop)
    return passed(sent, ex.came_back(), "answered with a new Message: from outside the probe cannot tell whether "
                  "the work ran twice", interop=interop)


def _kind(result: object) -> str:
    """What a result is: Task, Message, statusUpdate, artifactUpdate (or "result")."""
    if messages.is_task(result) or isinstance(result, dict) and "task" in result:
        return "Task"
    if isinstance(result, dict):
        for kind in ("message", "statusUpdate", "artifactUpdate"):
            if kind in result:
                return "Message" if kind == "message" else kind
    return "result"


def _get_base(run: ProbeRun) -> Exchange:
    """GetTask of the first task, routed to its latest responder (made once)."""
    base = run.baseline()
    return run.once("get-base", lambda: run.call(jsonrpc.GET_TASK, messages.get_task_params(base.task_id),
                                                 task_id=base.task_id))


@check("get-task", "get-task", "GetTask returns the task by the requester's Task.id", level=MUST,
       section="Request/Reply Mapping (MQTT v5) 7-8")
def get_task(run: ProbeRun) -> Outcome:
    base = run.baseline()
    if base.exchange.first is None:
        return not_applicable("the first SendMessage got no correlated reply (see correlation-text)")
    ex = _get_base(run)
    sent = f"GetTask {_short(base.task_id)} to {run.client.topic_for(run.agent, base.task_id).rsplit('/', 1)[1]}"
    if ex.first is None:
        return failed(sent, ex.came_back(), "no reply to GetTask")
    if ex.error is not None and ex.error_code != errors.TASK_NOT_FOUND:
        return failed(sent, ex.came_back(), "GetTask is an A2A v1.0 method: answer it with the Task (Request/Reply "
                      "Mapping 8: requesters use the same Task.id for GetTask, CancelTask and subscriptions)")
    task = ex.result if messages.is_task(ex.result) else None
    if task is None:
        return failed(sent, ex.came_back(), "the agent answered this task, but GetTask does not return it: responders "
                      "track task state by the requester's Task.id (Request/Reply Mapping 7); an agent that handed "
                      "the task to another instance must say so with a2a-responder-agent-id (Optional Task Handover 2)")
    if task.get("id") != base.task_id or task.get("contextId") != base.context_id:
        return failed(sent, ex.came_back(), f"GetTask returned task {quoted(task.get('id'))} in context "
                      f"{quoted(task.get('contextId'))}: the requester's ids must come back unchanged")
    bad = validate_payload("Task", task)
    if bad:
        return failed(sent, ex.came_back(), f"not a valid A2A v1.0 Task: {bad}")
    return passed(sent, f"Task {task['status'].get('state')}")


@check("task-not-found", "task-not-found", "GetTask, CancelTask and SubscribeToTask of an unknown Task.id answer "
       "-32001", level=MUST, section=A2A_METHODS)
def task_not_found(run: ProbeRun) -> Outcome:
    methods = [jsonrpc.GET_TASK, jsonrpc.CANCEL_TASK] + ([jsonrpc.SUBSCRIBE_TO_TASK] if run.streaming else [])
    unknown = run.unknown_task_id()
    sent = f"{', '.join(methods)} of task {_short(unknown)} (never created)"
    got = []
    for method in methods:
        ex = run.call(method, {"id": unknown}, until=FINAL if method == jsonrpc.SUBSCRIBE_TO_TASK else "first")
        got.append(f"{method}: {ex.came_back()}")
        outcome = expect_error(sent, ex, errors.TASK_NOT_FOUND, f"{method} of a task that does not exist")
        if outcome.verdict != "pass":
            return failed(sent, "; ".join(got), outcome.remark)
    return passed(sent, "; ".join(got))


@check("list-tasks", "list-tasks", "ListTasks answers a valid page that holds the requester's tasks", level=SHOULD,
       section=A2A_METHODS)
def list_tasks(run: ProbeRun) -> Outcome:
    base = run.baseline()
    ex = run.call(jsonrpc.LIST_TASKS, messages.list_tasks_params(context_id=base.context_id))
    sent = f"ListTasks contextId {_short(base.context_id)}"
    if ex.first is None:
        return failed(sent, ex.came_back(), "no reply to ListTasks")
    if ex.error is not None:
        return failed(sent, ex.came_back(), "ListTasks is an A2A v1.0 method; answer it with a page of the "
                      "caller's tasks")
    bad = validate_payload("ListTasksResponse", ex.result)
    if bad:
        return failed(sent, ex.came_back(), f"not a valid ListTasksResponse: {bad}")
    ids = [t.get("id") for t in ex.result.get("tasks") or []]
    if base.exchange.first is not None and task_in(base.exchange.response) and base.task_id not in ids:
        return failed(sent, ex.came_back(), f"the page does not list task {_short(base.task_id)} of this context")
    return passed(sent, ex.came_back())


# -- streaming ---------------------------------------------------------------------------------------

def _stream(run: ProbeRun) -> list[Sent]:
    """SendStreamingMessage of a new task, and, when it stops for input, the streamed answer (made once)."""
    def make() -> list[Sent]:
        first = run.send(run.message(), stream=True)
        out = [first]
        if states.is_interrupted(first.state or ""):
            out.append(run.send(run.message(ANSWER_TEXT, task_id=first.task_id, context_id=first.context_id),
                                stream=True))
        return out
    return run.once("stream", make)


def _stream_sent(sents: list[Sent]) -> str:
    more = " and its continuation" if len(sents) > 1 else ""
    return f"SendStreamingMessage, new task {_short(sents[0].task_id)}{more}"


NO_STREAMING = "the card says capabilities.streaming is false"


def streamed(fn: Callable[[ProbeRun, list[Sent]], Outcome]) -> Callable[[ProbeRun], Outcome]:
    """A check of the shared stream (made once), not applicable when the card offers no streaming."""
    @functools.wraps(fn)
    def check_stream(run: ProbeRun) -> Outcome:
        if not run.streaming:
            return not_applicable(NO_STREAMING)
        return fn(run, _stream(run))
    return check_stream


@check("stream-correlation", "reply-correlation", "every stream item echoes the request's Correlation Data")
@streamed
def stream_correlation(run: ProbeRun, sents: list[Sent]) -> Outcome:
    for n, s in enumerate(sents):
        if not s.exchange.replies:
            which = "the continuation" if n else "the streamed request"
            return failed(_stream_sent(sents), s.exchange.came_back(), f"{which}: {SILENT}")
        if s.exchange.first is None or s.exchange.stray:
            return failed(_stream_sent(sents), s.exchange.came_back(), "stream items must all echo the Correlation "
                          "Data of their request (Streaming Reply Mapping 2)")
    return passed(_stream_sent(sents), f"{sum(len(s.exchange.correlated) for s in sents)} items, all correlated")


@check("stream-end", "stream-end", "a stream ends with a final item: a terminal or interrupted state, a Message, or "
       "an error", level=MUST, section="Streaming Reply Mapping (SendStreamingMessage) 5-7")
@streamed
def stream_end(run: ProbeRun, sents: list[Sent]) -> Outcome:
    for s in sents:
        if s.exchange.ran_out:
            return failed(_stream_sent(sents), s.exchange.came_back(), f"{no_end(s.exchange.ran_out)} (the probe's "
                          "limit for one exchange, 10 × --timeout): the stream kept sending items without a final "
                          "one (terminal or interrupted status, or a Message), so a requester never learns it ended")
        if not any(reply_ends_stream(p) for p in s.exchange.payloads):
            return failed(_stream_sent(sents), s.exchange.came_back(), "the stream went quiet without a final item "
                          "(terminal or interrupted status, or a Message): the requester never learns it ended")
    first = sents[0].exchange.result
    interop = ("the stream's only item is a Message: a requester that waits for status updates (WORKING, then "
               "COMPLETED) sees none" if isinstance(first, dict) and "message" in first else "")
    return passed(_stream_sent(sents), f"ended {sents[-1].state}", interop=interop)


@check("after-stream-final", "after-stream-final", "nothing is published on a correlation after its final item")
@streamed
def after_stream_final(run: ProbeRun, sents: list[Sent]) -> Outcome:
    for s in sents:
        payloads = s.exchange.payloads
        ends = [i for i, p in enumerate(payloads) if reply_ends_stream(p)]
        if ends and any(p != payloads[ends[0]] for p in payloads[ends[0] + 1:]):
            late = [p for p in payloads[ends[0] + 1:] if p != payloads[ends[0]]]
            return failed(_stream_sent(sents), s.exchange.came_back(),
                          f"{len(late)} item(s) after the stream-final item: the requester has already closed that "
                          "correlation and drops them; stop publishing after a terminal or interrupted state")
    return passed(_stream_sent(sents), "nothing after the final item")


@check("stream-qos", "qos1", "stream items are published with QoS 1")
@streamed
def stream_qos(run: ProbeRun, sents: list[Sent]) -> Outcome:
    low = [m for s in sents for m in s.exchange.correlated if m.qos < 1]
    if low:
        return failed(_stream_sent(sents), f"{len(low)} item(s) with QoS 0", "stream items use QoS 1 so publishers "
                      "get PUBACK reason codes (Streaming Reply Mapping 4)")
    return passed(_stream_sent(sents), "every item with QoS 1")


@check("stream-schema", "a2a-schema", "every stream item is a valid A2A v1.0 StreamResponse")
@streamed
def stream_schema(run: ProbeRun, sents: list[Sent]) -> Outcome:
    for s in sents:
        for p in s.exchange.payloads:
            if isinstance(p, dict) and "result" in p:
                bad = validate_payload("StreamResponse", p["result"])
                if bad:
                    return failed(_stream_sent(sents), s.exchange.came_back(), f"not a valid StreamResponse: {bad}")
    return passed(_stream_sent(sents), "every item a valid StreamResponse")


@check("stream-artifacts", "artifact-chunks", "artifact updates append only to an artifact already sent, and "
       "nothing follows its lastChunk", level=SHOULD,
       section="Streaming Reply Mapping (SendStreamingMessage) 3 (A2A TaskArtifactUpdateEvent)")
@streamed
def stream_artifacts(run: ProbeRun, sents: list[Sent]) -> Outcome:
    seen = ArtifactSet()
    count = 0
    for s in sents:
        for p in s.exchange.payloads:
            update = (p.get("result") or {}).get("artifactUpdate") if isinstance(p, dict) else None
            if not isinstance(update, dict) or not isinstance(update.get("artifact"), dict):
                continue
            aid = update["artifact"].get("artifactId")
            if update.get("append") and aid not in seen:
                return failed(_stream_sent(sents), f"append to artifact {quoted(aid)}",
                              "append=true extends an artifact "
                              "already sent; the first chunk of an artifact has append false")
            if aid in seen and seen.is_sealed(aid):
                return failed(_stream_sent(sents), f"a chunk of artifact {quoted(aid)} after its lastChunk",
                              "lastChunk=true ends that artifact: nothing more for it")
            seen.apply(update)
            count += 1
    if not count:
        return not_applicable("the stream carried no artifact updates", _stream_sent(sents))
    return passed(_stream_sent(sents), f"{count} artifact update(s) for {len(seen)} artifact(s)")


@check("subscribe-to-task", "subscribe-to-task", "SubscribeToTask of an unfinished task starts with a Task snapshot; "
       "of a finished task it answers -32004", level=MUST,
       section="Streaming Reply Mapping (SendStreamingMessage) 1-2 (A2A v1.0 SubscribeToTask)")
def subscribe_to_task(run: ProbeRun) -> Outcome:
    if not run.streaming:
        return not_applicable(NO_STREAMING)
    base = run.baseline()
    if base.exchange.first is None or base.state is None:
        return not_applicable("the first SendMessage got no usable reply (see correlation-text)")
    ex = run.call(jsonrpc.SUBSCRIBE_TO_TASK, messages.subscribe_task_params(base.task_id), task_id=base.task_id,
                  until=FINAL)
    sent = f"SubscribeToTask {_short(base.task_id)} ({base.state})"
    if states.is_terminal(base.state):
        return expect_error(sent, ex, errors.UNSUPPORTED_OPERATION, "there is nothing left to subscribe to")
    if ex.first is None:
        return failed(sent, ex.came_back(), "no reply to SubscribeToTask")
    if ex.error is not None:
        return failed(sent, ex.came_back(), "SubscribeToTask (an A2A v1.0 method) of an unfinished task streams it, "
                      "starting with its snapshot")
    first = ex.result if isinstance(ex.result, dict) else {}
    if not isinstance(first.get("task"), dict) or first["task"].get("id") != base.task_id:
        return failed(sent, ex.came_back(), "the first item of SubscribeToTask is the task's snapshot "
                      "({'task': ...}) with the same Task.id")
    return passed(sent, ex.came_back())


# -- multi-turn and context ---------------------------------------------------------------------------

@check("context-mismatch", "context-mismatch", "a message naming a known Task.id with another contextId is "
       "rejected with -32602", level=MUST, section="Multi-Turn Conversation Patterns (Context Identifier Semantics 6)")
def context_mismatch(run: ProbeRun) -> Outcome:
    base = run.baseline()
    if base.exchange.first is None:
        return not_applicable("the first SendMessage got no correlated reply (see correlation-text)")
    other = run.client.ids.context_id()
    sent_msg = run.message(task_id=base.task_id, context_id=other)
    s = run.send(sent_msg)
    return expect_error(f"SendMessage to task {_short(base.task_id)} with another contextId {_short(other)}",
                        s.exchange, errors.INVALID_PARAMS, "the contextId differs from the one stored with the task")


@check("multi-turn", "multi-turn", "an interrupted task resumes with a new message on the same Task.id and contextId",
       level=MUST, section="Multi-Turn Conversation Patterns (Interaction Patterns 3)")
def multi_turn(run: ProbeRun) -> Outcome:
    base = run.interrupted()
    if base is None:
        return not_applicable("the agent never asked for input (its first answer was "
                              f"{run.baseline().state or 'no state'}), so there was nothing to continue")
    answer = run.send(run.message(ANSWER_TEXT, task_id=base.task_id, context_id=base.context_id))
    sent = f"SendMessage to {base.state} task {_short(base.task_id)}: same Task.id and contextId, new messageId"
    ex = answer.exchange
    if ex.first is None:
        return failed(sent, ex.came_back(), "no correlated reply to the continuation (routed to the task's latest "
                      "responder)")
    if ex.error is not None:
        return failed(sent, ex.came_back(), "the continuation of an interrupted task was refused: the responder "
                      "resumes processing on the new correlation")
    named = (task_in(ex.response) or {}).get("id") or ((ex.result or {}).get("message") or {}).get("taskId")
    if named != base.task_id:
        return failed(sent, ex.came_back(),
                      f"the continuation answered for task {quoted(named)}: the task keeps its Task.id")
    return passed(sent, ex.came_back())


@check("new-turn", "context-id", "a new task in an existing context is accepted and keeps the contextId")
def new_turn(run: ProbeRun) -> Outcome:
    base = run.baseline()
    turn = run.send(run.message(context_id=base.context_id))
    sent = f"SendMessage, new Task.id {_short(turn.task_id)} in the first task's context {_short(base.context_id)}"
    ex = turn.exchange
    if ex.first is None:
        return failed(sent, ex.came_back(), "no correlated reply to the new turn")
    if ex.error is not None:
        return failed(sent, ex.came_back(), "a new task in an existing context is a new turn of the conversation "
                      "(Interaction Patterns 2): accept it")
    ctx = task_ids_of(ex.response, {})[1]
    if ctx != base.context_id:
        return failed(sent, ex.came_back(),
                      f"the reply has contextId {quoted(ctx)}: responders echo the requester's contextId")
    return passed(sent, ex.came_back())


# -- cancel and terminal tasks ----------------------------------------------------------------------------

@check("cancel-task", "cancel-task", "CancelTask of an unfinished task answers the task CANCELED", level=MUST,
       section=A2A_METHODS)
def cancel_task(run: ProbeRun) -> Outcome:
    made = run.canceled()
    if made is None:
        return not_applicable("a task sent with returnImmediately was already finished (or not a Task) in its first "
                              "answer, so there was nothing to cancel")
    sent, ex = made
    what = f"SendMessage returnImmediately, then CancelTask {_short(sent.task_id)} ({sent.state})"
    if ex.error is not None and ex.error.get("code") == errors.TASK_NOT_CANCELABLE:
        return not_applicable("the task finished before the cancel arrived", what, ex.came_back())
    if messages.is_task(ex.result) and state_in(ex.response) == states.CANCELED:
        return passed(what, ex.came_back())
    if ex.first is None:
        return failed(what, ex.came_back(), "no correlated reply to CancelTask: answer it with the Task, canceled")
    return failed(what, ex.came_back(), "CancelTask (the A2A v1.0 method) of an unfinished task returns the Task, "
                  "canceled")


@check("cancel-terminal", "task-not-cancelable", "CancelTask of a finished task answers -32002", level=MUST,
       section=A2A_METHODS)
def cancel_terminal(run: ProbeRun) -> Outcome:
    done = run.finished()
    if done is None:
        return not_applicable("no finished task to try (none of the probe's tasks reached a terminal state)")
    ex = run.call(jsonrpc.CANCEL_TASK, messages.cancel_task_params(done.task_id), task_id=done.task_id)
    return expect_error(f"CancelTask {_short(done.task_id)} (finished)", ex, errors.TASK_NOT_CANCELABLE,
                        "a terminal task cannot be canceled")


@check("terminal-task-message", "terminal-task", "a new message to a finished task answers -32004 "
       "(UnsupportedOperation, not the retryable responder_unavailable)", level=MUST, section=A2A_METHODS)
def terminal_task_message(run: ProbeRun) -> Outcome:
    done = run.finished()
    if done is None:
        return not_applicable("no finished task to try (none of the probe's tasks reached a terminal state)")
    s = run.send(run.message(task_id=done.task_id, context_id=done.context_id))
    return expect_error(f"SendMessage, new messageId, to finished task {_short(done.task_id)}", s.exchange,
                        errors.UNSUPPORTED_OPERATION, "a terminal task never changes; a follow-up is a new task. "
                        "Only a resend, with the same messageId, gets the existing task back (idempotent-resend)")


# -- handover -----------------------------------------------------------------------------------------------

@check("handover-responder-id", "handover-responder-id", "a task answered by another instance names it in "
       "a2a-responder-agent-id, and follow-ups sent there work", level=MUST, section="Optional Task Handover 2-4")
def handover_responder_id(run: ProbeRun) -> Outcome:
    named = {m.user_property(properties.RESPONDER_AGENT_ID) for i, m in enumerate(list(run.client.traffic))
             if i not in run.client.sent} - {None}
    bad = sorted(n for n in named if n and not IDENTIFIER_RE.fullmatch(n))
    if bad:
        return failed("every request of the probe", f"a2a-responder-agent-id {quoted(bad[0])}",
                      "not a valid agent_id: requesters cannot route follow-ups to it")
    moves = [r for r in run.client.routing.history if r.cause == HANDOVER]
    base = run.baseline()
    if moves:
        last = moves[-1]
        ex = run.call(jsonrpc.GET_TASK, messages.get_task_params(last.task_id), task_id=last.task_id)
        sent = f"GetTask {_short(last.task_id)} to {last.to.label} (named by a2a-responder-agent-id)"
        if messages.is_task(ex.result) and ex.result.get("id") == last.task_id:
            return passed(sent, ex.came_back())
        return failed(sent, ex.came_back(), f"the reply named {last.to.label} as the task's responder, but a follow-up "
                      "sent to its direct request topic does not get the task")
    if base.exchange.first is None:
        return not_applicable("no reply to read (see correlation-text)")
    ex = _get_base(run)
    if messages.is_task(ex.result):
        return not_applicable("no reply named another responder: the agent answers for its tasks itself",
                              f"GetTask {_short(base.task_id)} to {run.agent}", ex.came_back())
    if ex.error_code != errors.TASK_NOT_FOUND:
        return not_applicable("no reply named another responder, and GetTask does not work on this agent (see "
                              "get-task), so a silent handover cannot be told apart",
                              f"GetTask {_short(base.task_id)} to {run.agent}", ex.came_back())
    return failed(f"GetTask {_short(base.task_id)} to {run.agent}", ex.came_back(),
                  f"{run.agent} answered the task, named no other responder, and now does not know it: if another "
                  "instance took the task, its replies must carry a2a-responder-agent-id so follow-ups reach it")

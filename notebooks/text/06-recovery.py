# ---
# jupyter:
#   jupytext:
#     formats: ipynb,text//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Recovery: the coordinator's checklist, live
#
# Any step of the handoff can break. The walkthrough ends with a checklist: for each observation,
# one action. This lesson makes each line happen on the real broker and shows the coordinator
# recovering: a reply that never comes, a stream that stops, a coordinator that can only poll, an
# analysis that takes too long, and an analyst that is gone after a [handover](glossary.md#Handover).
#
# ## What you will learn
# - **timeout**: resend verbatim (same messageId and Task.id, new
#   [Correlation Data](glossary.md#Correlation-Data)), and why the agent does not run the work twice;
# - **dropped stream**: recover with `GetTask` and `SubscribeToTask`, automatically after a stall and
#   by hand after the coordinator lost its connection;
# - **polling only**: `GetTask` with backoff until the task is terminal;
# - **past the time limit**: `CancelTask`, then a new task in the same contextId, and which of the
#   two meanings of [-32004](glossary.md#Error-codes) a refusal has;
# - **analyst unreachable**: retries, fallback to the card agent with the reason in the
#   [routing table](glossary.md#Routing-table), why [PUBACK](glossary.md#PUBACK-reason-codes) says 16
#   here where lesson 05 showed 0, and what is left when the card agent is gone too.
#
# Every wait follows the coordinator's [retry profile](glossary.md#Retry-profile).
#
# ## Time needed
# About 25 minutes. Run All takes about 9 seconds (it waits for real timeouts).
#
# ## Prerequisites
# - [04 · Input required](04-input-required.ipynb) (continuing a task) and
#   [05 · Handover](05-handover.ipynb) (routing table, fallback).

# %% [markdown]
# ## Step 1. A retry profile for the classroom
#
# The profile's *Requester Retry and Timeout Profile* fixes the defaults every requester must
# implement: 15 s for a first reply, 30 s of stream silence, 3 attempts, backoff 1 / 2 / 4 s with
# ±20 % jitter. They are right for a real network and far too slow for a lesson, so this coordinator
# uses much shorter times. The rules that use them are unchanged.

# %%
import threading
import time

import pandas as pd

import a2a_nb
from a2a_nb import (A2AError, Requester, RequestTimeout, Responder, RetryProfile, Session, TicketDesk,
                    as_described, said)
from a2a_nb.protocol import MqttMessage, encode_json, errors, jsonrpc, messages, states, topics
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.protocol.retry import DEFAULT
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", 90)
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=0.5, max_attempts=3,
                     backoff_s=(0.05, 0.1, 0.2))

def describe(p):
    return {"first-reply timeout": f"{p.reply_first_timeout_s:g} s", "stream idle timeout": f"{p.stream_idle_timeout_s:g} s",
            "attempts": p.max_attempts, "backoff": " / ".join(f"{b:g}" for b in p.backoff_s) + f" s ±{p.jitter:.0%}",
            "message expiry": f"{p.message_expiry_s()} s", "give up after (worst case)": f"{p.worst_case_s():.2f} s"}

pd.DataFrame({"profile default": describe(DEFAULT), "this lesson": describe(QUICK)})

# %%
as_described(
    said("15 s for a first reply", DEFAULT.reply_first_timeout_s, 15),
    said("30 s of stream silence", DEFAULT.stream_idle_timeout_s, 30),
    said("3 attempts", DEFAULT.max_attempts, 3),
    said("backoff 1 / 2 / 4 s", DEFAULT.backoff_s, (1, 2, 4)),
    said("±20 % jitter", DEFAULT.jitter, 0.2),
)

# %%
coordinator = Requester("coordinator", seed=4821, retry=QUICK)

def attempts_table(attempts):
    return pd.DataFrame([{"attempt": a.number, "to": topics.parse_topic(a.topic).agent,
                          "Correlation Data": a.correlation[:16] + "…", "PUBACK": a.reason_code,
                          "outcome": a.outcome} for a in attempts])

print(coordinator)


# %% [markdown]
# ## Step 2. "SendMessage timed out; delivery unknown" → resend verbatim
#
# After a timeout the coordinator cannot know what happened: the request may have been lost, or
# processed with its reply lost. The rule covers both: publish **the same request again** (same
# messageId, same Task.id) with **new Correlation Data**, at most `max_attempts` times, and stop at
# the first correlated reply.
#
# To make the first attempt fail on purpose, here is an agent written with nothing but a raw MQTT
# session: it reads requests on its request topic, **ignores the first one** and answers the others
# with a finished task. It also notes what it received.

# %%
def flaky_agent(name):
    """A raw MQTT agent: it notes every request, ignores the first and answers the others."""
    received = []
    session = Session("acme", "support", name)

    def on_request(msg):
        request = jsonrpc.parse_request(msg.payload)
        message = request["params"]["message"]
        received.append({"request": len(received) + 1, "messageId": message["messageId"],
                         "Task.id": message["taskId"], "Correlation Data": readable_correlation(msg.correlation_data)})
        if len(received) == 1:
            return                                   # lost: no reply for the first attempt
        task = messages.task(message["taskId"], message["contextId"], messages.task_status(states.COMPLETED))
        answer = jsonrpc.result_response(request["id"], messages.send_message_result(task))
        session.publish_then(MqttMessage(msg.response_topic, encode_json(answer),
                                         correlation_data=msg.correlation_data), lambda ack: None)

    session.subscribe(topics.request_topic("acme", "support", name), handler=on_request)
    return session, received

flaky, received = flaky_agent("flaky-analyst")
print(flaky.client_id, "listens on", topics.request_topic("acme", "support", "flaky-analyst"))

# %%
reply = coordinator.send("flaky-analyst", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-1")
print("state:", states.short_name(reply.state))
attempts_table(reply.attempts)

# %% [markdown]
# What the agent received: the same message twice, told apart only by the Correlation Data.

# %%
pd.DataFrame(received)

# %%
as_described(
    said("the same message twice",
         f"{len(received)} requests, {len({(r['messageId'], r['Task.id']) for r in received})} message",
         "2 requests, 1 message"),
    said("told apart only by the Correlation Data",
         f"{len({r['Correlation Data'] for r in received})} different of {len(received)}", "2 different of 2"),
)

# %% [markdown]
# And when the first request *was* processed? Then the agent recognises the resend by its Task.id
# and messageId and returns the task it already has: the work runs **once**. The ticket desk (no
# handover this time, and quick) shows it: the same message sent twice, one analysis.

# %%
flaky.close()
desk = TicketDesk(handover="none", seed=4821, pace=0.01)

ticket = coordinator.new_message(TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                                 message_id="coord-tck4821-m-2")
once = coordinator.send("ticket-desk", message=ticket)
again = coordinator.send("ticket-desk", message=ticket)          # verbatim: same dict, same ids
print("both:          ", states.short_name(once.state), states.short_name(again.state))
print("same task:     ", once.task_id == again.task_id)
print("analyses run:  ", desk.desk.stats.executions)

# %%
as_described(
    said("the same message sent twice", f"{len([once, again])} replies, {len({once.task_id, again.task_id})} task",
         "2 replies, 1 task"),
    said("one analysis", desk.desk.stats.executions, 1),
    said("returns the task it already has", again.task == once.task, True),
)

# %% [markdown]
# ## Step 3. "Event stream dropped mid-way" → GetTask / SubscribeToTask
#
# A dropped stream is not a failed task: the agent keeps working. The coordinator asks where the
# task stands (`GetTask`) and, if it still runs, re-attaches with `SubscribeToTask` on the same
# Task.id. It never republishes the original request (once a stream item arrived, that is
# forbidden: rule 7 of the retry profile).
#
# The agent for this step collects evidence in three chunks and stops at a **gate** after the first
# one, so we decide when it goes on.

# %%
gate = threading.Event()

def collect_evidence(ctx):
    ctx.working("collecting evidence for TCK-4821")
    ctx.artifact("evidence", [messages.text_part("orders scanned; ")], name="Evidence")
    gate.wait(10)                                   # ... until the lesson opens the gate
    ctx.artifact("evidence", [messages.text_part("events scanned; ")], append=True)
    ctx.artifact("evidence", [messages.text_part("pattern confirmed")], append=True, last_chunk=True)
    ctx.complete("evidence collected")

collector = Responder("evidence-collector", collect_evidence)
print(collector)

# %% [markdown]
# **A stalled stream.** After the first chunk the stream goes quiet. When nothing arrives for
# `stream_idle_timeout` (0.5 s here), the stream recovers by itself: `GetTask` (still `working`),
# then `SubscribeToTask`, whose first item is the task as it is now. We open the gate as soon as
# we see the recovery.

# %%
ignored_before = coordinator.stats.ignored_unknown_correlation
stalled = coordinator.stream("evidence-collector", "Collect the evidence for TCK-4821", context_id=CONTEXT_ID)
for event in stalled:
    print(event, "| Correlation Data:", readable_correlation(event.mqtt.correlation_data, 16) if event.mqtt else "-",
          flush=True)
    if event.kind == "recovered":
        gate.set()
print()
print("recoveries:", stalled.recoveries, "| evidence:", stalled.view.artifacts.text("evidence"))
print("items still coming on the old correlation, ignored:",
      coordinator.stats.ignored_unknown_correlation - ignored_before)

# %%
kinds = [e.kind for e in stalled.events]
recovered = stalled.events[kinds.index("recovered")]
after_snapshot = kinds[kinds.index("recovered") + 2:]             # past the recovery and the task snapshot
as_described(
    said("collects evidence in three chunks", kinds.count("artifactUpdate"), 3),
    said("stream_idle_timeout (0.5 s here)", QUICK.stream_idle_timeout_s, 0.5),
    said("GetTask (still working)", states.short_name(recovered.state), "working"),
    said("whose first item is the task as it is now", kinds[kinds.index("recovered") + 1], "task"),
)

# %% [markdown]
# The subscription has its own Correlation Data. The agent never stopped sending on the old one
# (nothing told it the coordinator left), and each of those items was ignored: after recovery, the
# old correlation is no longer in flight.

# %%
as_described(said("each of those items was ignored",
                  coordinator.stats.ignored_unknown_correlation - ignored_before, len(after_snapshot)))

# %% [markdown]
# **A lost connection.** Now the coordinator itself goes away mid-stream: its TCP connection is cut
# (`kill_socket`, as if the network dropped). A new coordinator session comes up with a new reply
# topic. It knows the Task.id and the routing table (a real coordinator would keep them on disk:
# `Requester(routes_path=...)`).

# %%
gate.clear()
dropped = coordinator.stream("evidence-collector", "Collect the evidence for TCK-4821 again", context_id=CONTEXT_ID)
seen = [next(dropped) for _ in range(3)]
print("before the drop:", seen)

lost_task = dropped.task_id
coordinator.session.kill_socket()                                   # the network drops
coordinator = Requester("coordinator", seed=4822, retry=QUICK, routing=coordinator.routing)
print("back with a new reply topic:", coordinator.reply_topic)

# %%
snapshot = coordinator.get_task(lost_task)
print("GetTask:", states.short_name(snapshot["status"]["state"]), "| evidence so far:",
      repr(messages.text_of(snapshot["artifacts"][0])))

resumed = coordinator.subscribe(lost_task)
print(next(resumed), "(the snapshot)")
gate.set()
for event in resumed:
    print(event)
print()
print("evidence:", resumed.view.artifacts.text("evidence"))

# %% [markdown]
# What the agent published for the lost session after the snapshot went to a reply topic nobody
# listens to any more. This lesson runs no recorder and no tap, so nobody else subscribes there
# either, and the broker answered each of those replies with [PUBACK](glossary.md#PUBACK-reason-codes)
# 16, *No matching subscribers*. The agent counts such replies (`runtime.unheard_replies`):

# %%
late = resumed.events[1:]                                           # what the new session got after the snapshot
for _ in range(100):                                                # their PUBACKs come back within milliseconds
    if collector.runtime.unheard_replies >= len(late):
        break
    time.sleep(0.01)
print("replies nobody heard:", collector.runtime.unheard_replies)

# %%
as_described(said("answered each of those replies with PUBACK 16, No matching subscribers",
                  f"{collector.runtime.unheard_replies} of {len(late)}", f"{len(late)} of {len(late)}"))

# %% [markdown]
# ## Step 4. "Polling only" → GetTask with backoff until terminal
#
# A coordinator that cannot hold a stream (or a push endpoint) asks: `GetTask`, wait, ask again,
# each wait twice the last (here 0.1, 0.2, 0.4 s ..., at most 1 s). `poll` does it; its `until`
# function sees every state it reads, and this one opens the gate after the third answer.

# %%
FIRST_WAIT_S, LONGEST_WAIT_S = 0.1, 1.0
gate.clear()
ack = coordinator.send("evidence-collector", "Collect the evidence once more", context_id=CONTEXT_ID,
                       return_immediately=True)
print("acknowledged at once:", states.short_name(ack.state))

polls = []

def until(state):
    polls.append((time.time(), states.short_name(state)))
    print(f"GetTask {len(polls)}: {states.short_name(state)}", flush=True)
    if len(polls) == 3:
        gate.set()
    return states.is_terminal(state)

final = coordinator.poll(ack.task_id, until=until, interval_s=FIRST_WAIT_S, max_interval_s=LONGEST_WAIT_S)
print("final:", states.short_name(final["status"]["state"]), "|", messages.text_of(final["artifacts"][0], sep=""))

# %% [markdown]
# The waits between the asks, measured (so they change from run to run, and so does this cell's
# output; its check holds each within 1.5x of what the text says):

# %% tags=["nbval-ignore-output"]
waits = [b - a for (a, _), (b, _) in zip(polls, polls[1:])]
print(" ".join(f"{w:.2f}s" for w in waits))
as_described(
    said("here 0.1", waits[0], 0.1, within=1.5),
    said("0.2", waits[1], 0.2, within=1.5),
    said("0.4 s", waits[2], 0.4, within=1.5),
)

# %%
as_described(said("at most 1 s", LONGEST_WAIT_S, 1))

# %% [markdown]
# ## Step 5. "WORKING past the ticket's time limit" → CancelTask, then a new task
#
# This agent digs through months of logs unless asked for less. Its handler waits with
# `ctx.wait(...)`, which wakes up (and stops the work) the moment the task is canceled.

# %%
stopped = threading.Event()

def dig_logs(ctx):
    if "last 24 h" in ctx.text:
        return "no cache errors in the last 24 h since the fix"
    ctx.working("digging through six months of logs")
    try:
        ctx.wait(60)
    finally:
        stopped.set()

digger = Responder("log-digger", dig_logs)
slow = coordinator.send("log-digger", "Dig through the logs for TCK-4821", context_id=CONTEXT_ID,
                        return_immediately=True)
limit = coordinator.poll(slow.task_id, until=states.is_terminal, interval_s=0.1, timeout_s=0.3)
print("after the 0.3 s time limit:", states.short_name(limit["status"]["state"]))

# %%
canceled = coordinator.cancel_task(slow.task_id)
print("CancelTask ->", states.short_name(canceled["status"]["state"]))
print("the agent stopped working:", stopped.wait(2))

# %% [markdown]
# A canceled task is terminal: it cannot restart, and cannot be canceled twice. Each refusal is a
# JSON-RPC error; the cell shows its `data` too:

# %%
refusals = []
for attempt in (lambda: coordinator.continue_task(slow, "only the last 24 h, please"),
                lambda: coordinator.cancel_task(slow.task_id)):
    try:
        attempt()
    except A2AError as err:
        refusals.append(err)
        marker = err.data.get("a2a_error") if isinstance(err.data, dict) else None
        print(f"error {err.code} ({errors.classify(err).name}): {err.message}")
        print(f"   data: {err.data}")
        print(f"   a2a_error marker: {marker}")

# %% [markdown]
# The first, -32004, is A2A's own *UnsupportedOperation*: a message to a task that has ended. The
# same number has a second meaning. The A2A over MQTT profile reuses -32004 for its
# *responder_unavailable* (busy, try again later: lesson 00's desk at capacity) and marks its errors
# with `error.data.a2a_error`. This error's `data` is only A2A's ErrorInfo list, with no
# `a2a_error` marker: A2A's meaning, and trying again would not help. The second, -32002, is
# *TaskNotCancelable*. (Both codes, and their other meanings, are in the glossary's
# [Error codes](glossary.md#Error-codes).)

# %%
as_described(
    said("The first, -32004, is A2A's own UnsupportedOperation",
         f"{refusals[0].code} {errors.classify(refusals[0]).name}", "-32004 UnsupportedOperation"),
    said("with no a2a_error marker", "a2a_error" in str(refusals[0].data), False),
    said("The second, -32002, is TaskNotCancelable",
         f"{refusals[1].code} {errors.classify(refusals[1]).name}", "-32002 TaskNotCancelable"),
)

# %% [markdown]
# So the coordinator starts a **new task in the same contextId**, with a request that fits the time
# limit:

# %%
narrower = coordinator.send("log-digger", "Dig through the logs for TCK-4821, last 24 h only",
                            context_id=CONTEXT_ID)
print("Task.id:  ", narrower.task_id[:8] + "…", "(the canceled one:", slow.task_id[:8] + "…)")
print("contextId:", narrower.context_id)
print("state:    ", states.short_name(narrower.state), "|", narrower.text)

# %%
as_described(
    said("a new task", narrower.task_id != slow.task_id, True),
    said("in the same contextId", {narrower.context_id, slow.context_id}, {CONTEXT_ID}),
)

# %% [markdown]
# ## Step 6. "Analyst unreachable" → retry, then switch
#
# The desk of lesson 05's third failure case: its analyst asks for the reproduction steps and then
# disappears. As in lesson 05, the cell waits until the analyst's session is closed; then the
# coordinator answers, prints each attempt as it goes, falls back to the card agent, and records
# why.

# %%
desk.stop()
desk = TicketDesk(handover="dies", seed=4824)

question = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-3")
question.wait()
analyst = desk.instances[-1]
print("asked by", analyst.agent, "| state:", states.short_name(question.state), flush=True)

print(f"waiting for {analyst.agent} to disconnect ...", flush=True)
print(f"{analyst.agent} is gone:", desk.wait_gone(analyst), flush=True)   # at most 3 s; it takes milliseconds

attempts_seen = []

def show(attempt):
    attempts_seen.append(attempt)
    print(f"attempt {attempt.number} to {topics.parse_topic(attempt.topic).agent}: "
          f"PUBACK {attempt.reason_code}, {attempt.outcome}", flush=True)

coordinator.on_attempt = show
ack = coordinator.continue_task(question, REPRO_TEXT, message_id="coord-tck4821-m-4", return_immediately=True)
coordinator.on_attempt = None
attempts_table(ack.attempts)

# %% [markdown]
# The same three attempts on the analyst's topic as in lesson 05, and the same fallback, but this
# time the broker's PUBACK says 16 (*No matching subscribers*) on every attempt there, not
# *Success* as in lesson 05. The difference is not the analyst: lesson 05 ran a recorder subscribed
# to every request topic of the unit, and this lesson runs none, so once the analyst is gone nobody
# listens on its topic. The coordinator waited out each timeout all the same: 16 is a hint, the
# timeout decides.

# %%
on_analyst = [a for a in ack.attempts if a.topic == analyst.request_topic]
as_described(
    said("The same three attempts on the analyst's topic", len(on_analyst), QUICK.max_attempts),
    said("the same fallback", topics.parse_topic(ack.attempts[-1].topic).agent, "ticket-desk"),
    said("PUBACK says 16 (No matching subscribers) on every attempt there", {a.reason_code for a in on_analyst}, {16}),
)

# %%
pd.DataFrame([r for r in coordinator.routing.history_rows() if r["task_id"] == question.task_id],
             columns=["cause", "from", "to", "detail"])

# %%
done = coordinator.poll(question.task_id, until=states.is_terminal)
print("task:", states.short_name(done["status"]["state"]), "| finished by the card agent:",
      coordinator.routing.target(question.task_id).label)


# %% [markdown]
# And if the card agent is gone too? There is nobody left to fall back to: after the full retry
# profile the coordinator gives up with `RequestTimeout`, and the task *may* still exist somewhere.
# The walkthrough's last resort is to switch to another agent found by discovery (by skill, as in
# lesson 01) and to start over in a **new contextId**, recording why the old one was abandoned.
#
# The attempts print without their PUBACK this time. The desk says goodbye (MQTT DISCONNECT) just
# before the first attempt, and whether the broker has dropped the desk's subscription by then is a
# race: the first PUBACK usually says *No matching subscribers*, but on a busy machine now and then
# *Success*. One more reason why the coordinator trusts its timeout, never the PUBACK.

# %%
def no_reply(attempt):
    attempts_seen.append(attempt)
    print(f"attempt {attempt.number} to {topics.parse_topic(attempt.topic).agent}: "
          f"{'answered' if attempt.outcome.startswith('answered') else 'no reply'}", flush=True)

desk.stop()
attempts_seen.clear()
coordinator.on_attempt = no_reply
try:
    coordinator.get_task(question.task_id)
except RequestTimeout as exc:
    reason = str(exc)
    print("RequestTimeout:", reason)
coordinator.on_attempt = None

restart = coordinator.new_message(
    TICKET_TEXT + "\n" + REPRO_TEXT, context_id="ctx-tck4821-r2", message_id="coord-tck4821-r2-m-1",
    metadata={"previousContextId": CONTEXT_ID, "switchReason": reason})
print()
print("the next first message:", {k: restart[k] for k in ("messageId", "contextId", "metadata")})

# %%
as_described(
    said("after the full retry profile", len(attempts_seen), QUICK.max_attempts),
    said("start over in a new contextId", restart["contextId"] != CONTEXT_ID, True),
)

# %% [markdown]
# ## Step 7. The checklist, with what you saw
#
# The walkthrough's recovery table, with the kit call for each line and the step of this lesson that
# showed it:

# %%
pd.DataFrame([
    ("SendMessage timed out; delivery unknown", "resend verbatim (same messageId, Task.id)",
     "automatic in send / stream (RetryProfile)", "2"),
    ("event stream dropped mid-way", "GetTask, then SubscribeToTask; ignore the old correlation",
     "automatic after stream_idle_timeout; get_task + subscribe", "3"),
    ("polling only", "GetTask with backoff until terminal", "poll(task_id, until=...)", "4"),
    ("WORKING past the time limit", "CancelTask, new task in the same contextId",
     "cancel_task, then send(..., context_id=...)", "5"),
    ("more authorization needed", "AUTH_REQUIRED, delegate upward", "continue_task (like INPUT_REQUIRED)",
     "lesson 04"),
    ("analyst unreachable", "retry, fall back to the card agent, then switch agents; record the reason",
     "automatic fallback; RequestTimeout when none is left", "6"),
], columns=["observation", "action", "in the kit", "step"])

# %% [markdown]
# ## Step 8. Your turn
#
# **Resend a timed-out message yourself.** This coordinator gives up after one attempt, so the
# resend is yours to make; its agent, made by `flaky_agent` of step 2, ignores the first request it
# gets. The cell below sends the ticket once, and it times out:

# %%
ONE_TRY = RetryProfile(reply_first_timeout_s=1.5, stream_idle_timeout_s=1.5, max_attempts=1, backoff_s=(0.05,))
hasty = Requester("hasty-coordinator", seed=4830, retry=ONE_TRY)
forgetful, heard = flaky_agent("forgetful-analyst")
ticket = hasty.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="hasty-tck4821-m-1")
try:
    hasty.send("forgetful-analyst", message=ticket)
except RequestTimeout as exc:
    print("RequestTimeout:", exc)

# %% [markdown]
# Delivery unknown. Send it again with `hasty` so that the agent can tell it is the same message:
# what must stay the same, and what must change? The check looks at what the agent received
# (`heard`) and at the attempts of your reply.

# %%
from a2a_nb.notebook.exercises import lesson06

resend = ...   # your answer: the call that sends the ticket again (keep what it returns)
lesson06.resent_verbatim(resend, heard)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
resend = hasty.send("forgetful-analyst", message=ticket)
reference(lesson06.resent_verbatim(resend, heard))

# %% [markdown]
# **Tell the two -32004s apart.** A desk with a single analyst slot, busy with one ticket, refuses a
# second one: it answers -32004 as well. The coordinator retried it (the profile's -32004 allows
# that), then gave up:

# %%
one_slot = TicketDesk(handover="none", seed=4831, max_analysts=1, pace=0.1)
first_ticket = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID)
try:
    coordinator.send("ticket-desk", "Analyze ticket TCK-4822: the invoice PDF is empty", context_id="ctx-tck4822")
except A2AError as err:
    busy = err
    print(f"error {busy.code} ({errors.classify(busy).name}): {busy.message}")
print("the first ticket:", states.short_name(first_ticket.wait().state))


# %% [markdown]
# Write `is_profile_error(err)`: `True` for an error of the A2A over MQTT profile, `False` for one of
# A2A itself. Compare `refusals[0]` (step 5) with `busy`, and look at their `data`, not at their
# messages. The check runs your function on both, and on a few errors it makes itself.

# %%
def is_profile_error(err):
    return ...   # your answer: True or False, from err

lesson06.tells_the_meanings_apart(is_profile_error, refusals[0], busy)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
def is_profile_error(err):
    return isinstance(err.data, dict) and "a2a_error" in err.data

reference(lesson06.tells_the_meanings_apart(is_profile_error, refusals[0], busy))


# %% [markdown]
# ## Step 9. Clean up, when you are done
#
# The exercises need the agents and the coordinators, so *Run All* leaves them running: this cell
# only defines `clean_up()`. Call it when you are done.

# %%
def clean_up():
    """Stop the agents and close this notebook's MQTT sessions."""
    for agent in (collector, digger, desk, one_slot):
        agent.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - A timeout means "delivery unknown": resend the same request (same messageId and Task.id) with
#   new Correlation Data; the agent deduplicates by Task.id, so the work runs once.
# - A dropped stream is not a failed task: `GetTask`, then `SubscribeToTask` on the same Task.id;
#   never republish the original request; items on an abandoned correlation are ignored.
# - Without a stream, `GetTask` with exponential backoff until the task is terminal.
# - A task past its time limit is canceled (`CancelTask`; the agent's `ctx.wait` stops the work);
#   terminal tasks never restart: a new task in the same contextId takes over.
# - -32004 has two meanings: A2A's *UnsupportedOperation*, and the profile's *responder_unavailable*,
#   marked with `error.data.a2a_error`; only the profile's says "try again".
# - An unreachable analyst gets the retry profile, then the card agent takes the task back, with the
#   reason in the routing table; PUBACK 16 says nobody listens on its topic, unless some other
#   subscriber (a recorder) does. With nobody left, `RequestTimeout`, and a new contextId elsewhere.
#
# ## What's next
# You have followed ticket TCK-4821 from discovery to recovery.
# [07 · Traffic analysis](07-traffic-analysis.ipynb) replays recordings of the whole story and
# analyses what crossed the broker. Or go back to [00 · Start here](00-start-here.ipynb) for the list
# of lessons, and replay any failure here with other timings: every agent in these lessons is a few
# lines of Python.

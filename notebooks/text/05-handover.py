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
# # 05 · [Handover](glossary.md#Handover): the desk delegates, the coordinator follows
#
# The ticket desk owns the only [Agent Card](glossary.md#Agent-Card), but it does not analyse
# tickets itself: for each ticket it hands the task to an **analyst instance** with its own MQTT
# client ID and no card. The analyst's replies say so with the [user property](glossary.md#User-property)
# `a2a-responder-agent-id`, and from then on the coordinator sends everything about that task
# **directly to the analyst**. This is the profile's *Optional Task Handover*. The profile tells
# each of its features as a numbered *user story*, a short scenario with the steps it takes and the
# rules it checks; the handover is **user story 07**. This lesson walks through it step by step and
# then through its failure cases.
#
# ## What you will learn
# - the six steps of user story 07 on a real broker: the reply that carries
#   `a2a-responder-agent-id`, the coordinator's [routing table](glossary.md#Routing-table) before and
#   after, follow-ups on the analyst's direct request topic with new
#   [Correlation Data](glossary.md#Correlation-Data) and the same Task.id;
# - failure case 1: no `a2a-responder-agent-id` → the task stays with the card agent;
# - failure case 2: two handovers in one stream → the latest one wins;
# - failure case 3: the analyst is unreachable → retries against its direct topic, then fallback to
#   the card agent, with the reason recorded;
# - why [PUBACK](glossary.md#PUBACK-reason-codes) 16 (*No matching subscribers*) is only a hint: any
#   subscriber, a recorder too, turns it into 0;
# - snapshots of the routing table step by step, and a live view of it to play with
#   (`routing_table_view`).
#
# ## Time needed
# About 20 minutes. Run All takes about 7 seconds (failure case 3 waits for real timeouts).
#
# ## Prerequisites
# - [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) and
#   [04 · Input required](04-input-required.ipynb): stream events, continuing a task.

# %% [markdown]
# ## Step 1. The agents, a tap and a recorder
#
# The desk with `handover="first-reply"`: it hands each ticket to an analyst as soon as it has
# accepted it. The coordinator gets a short [retry profile](glossary.md#Retry-profile) (wait 0.5 s
# for a first reply, 3 attempts, backoff 0.05 / 0.1 / 0.2 s) so that failure case 3 takes seconds,
# where the profile's defaults wait 15 s for each first reply. The tap from lesson 04 shows every
# request the coordinator publishes.

# %%
import pandas as pd

import a2a_nb
from a2a_nb import RequestTap, Requester, RetryProfile, TicketDesk, as_described, said
from a2a_nb.notebook.routing_table import routing_snapshot, routing_table_view
from a2a_nb.protocol import MqttMessage, states, topics
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.protocol.retry import DEFAULT
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", 90)
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math

desk = TicketDesk(handover="first-reply", seed=4821)
QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=3.0, max_attempts=3,
                     backoff_s=(0.05, 0.1, 0.2))
coordinator = Requester("coordinator", seed=4821, retry=QUICK)

tap = RequestTap("acme", "support", "lesson-05-tap")

def tapped():
    """The requests the tap saw since the last call, as a table."""
    return pd.DataFrame(tap.take(), columns=["topic", "method", "messageId", "Task.id", "Correlation Data"])

def reroutes(task_id):
    rows = [r for r in coordinator.routing.history_rows() if r["task_id"] == task_id]
    return pd.DataFrame(rows, columns=["from", "to", "cause", "detail"])

print(coordinator)

# %%
as_described(
    said("backoff 0.05 / 0.1 / 0.2 s", QUICK.backoff_s, (0.05, 0.1, 0.2)),
    said("wait 0.5 s for a first reply", QUICK.reply_first_timeout_s, 0.5),
    said("3 attempts", QUICK.max_attempts, 3),
    said("the profile's defaults wait 15 s for each first reply", DEFAULT.reply_first_timeout_s, 15),
)

# %% [markdown]
# A recorder hears every A2A message of this lesson from now on. It only subscribes, but to
# `$a2a/v1/+/acme/support/#`: every request and reply topic of the unit. Step 8 draws each task's
# route from what it heard, and step 7 shows what else a listener like it changes.

# %%
# %matplotlib inline
from IPython.display import display

from a2a_nb import Recorder
from a2a_nb.traffic import reroute_chart, routing_view
from a2a_nb.traffic import reroutes as recorded_reroutes
from a2a_nb.traffic.charts import route_hops

recorder = Recorder(org_filter="$a2a/v1/+/acme/support/#").start()

# %% [markdown]
# The coordinator's routing table, as a **snapshot**: the table as it is when the cell runs, which
# never changes afterwards. The steps below take a new one wherever the story moves on, so each
# shows what the text around it says; the live view, to play with, comes in the last step. It is
# empty for now:

# %%
empty = routing_snapshot(coordinator)
empty

# %%
as_described(said("It is empty for now", empty.tasks, 0))

# %% [markdown]
# ## Step 2. Story steps 1-2: the request goes to the card agent
#
# 1. Agent A (the coordinator) is subscribed to its reply topic (it did so when it was created).
# 2. It publishes the request to agent B's request topic, the one in B's card, with a
#    [Response Topic](glossary.md#Response-Topic) and Correlation Data, and a Task.id it made itself.

# %%
print("1. reply topic:  ", coordinator.reply_topic)
first = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-1")
stream = coordinator.stream("ticket-desk", message=first)
task_id = stream.task_id
request = tapped().iloc[0]
print("2. published to: ", request["topic"])
print("   Task.id:      ", first["taskId"])
print("   Correlation:  ", request["Correlation Data"])

# %% [markdown]
# The first reply is already in (that is when `stream(...)` returns), but the coordinator has not
# read it yet. Its routing table holds what it knew when it sent: the task is routed to the card
# agent.

# %%
before = routing_snapshot(coordinator)
before

# %%
as_described(said("the task is routed to the card agent", before.rows[0]["current"], "ticket-desk"))

# %% [markdown]
# ## Step 3. Story steps 3-4: the desk delegates, the replies say so
#
# 3. The desk accepts the Task.id (its first stream item is the task snapshot, `submitted`) and
#    hands the task to one of its analysts.
# 4. From then on the analyst publishes on the coordinator's reply topic, echoing the Correlation
#    Data and the Task.id, and its reply carries the user property `a2a-responder-agent-id`.
#
# We read the stream item by item and look at the route after each one:

# %%
for event in stream:
    state = states.short_name(event.state) if event.state else ""
    print(f"{event.kind:13} {state:15} a2a-responder-agent-id: {event.responder or '-':15} "
          f"route -> {coordinator.routing.target(task_id).label}")
print()
print("the analyst asks:", stream.view.status_text)

# %%
as_described(said("its first stream item is the task snapshot, submitted",
                   f"{stream.events[0].kind}, {states.short_name(stream.events[0].state)}", "task, submitted"))

# %% [markdown]
# The item that moved the route, as an MQTT packet:

# %%
handover = next(e for e in stream.events if e.reroute is not None)
packet = handover.mqtt
print("published on:     ", packet.topic)
print("Correlation Data: ", readable_correlation(packet.correlation_data, 16), "(the request's)")
echoed = handover.data.get("taskId") or handover.data.get("id")  # an event's taskId, a Task's id
print("item:             ", handover.kind)
print("Task.id echoed:   ", echoed == task_id)
print("user properties:  ", packet.user_properties)

# %% [markdown]
# The routing table after: the task keeps its card agent (the fallback) and is now routed to the
# analyst the property named; the reroute is recorded with its cause.

# %%
after = routing_snapshot(coordinator)
after

# %%
as_described(
    said("keeps its card agent", after.rows[0]["card"], "ticket-desk"),
    said("is now routed to the analyst the property named", after.rows[0]["current"], handover.responder),
    said("the reroute is recorded with its cause", [m["cause"] for m in after.rows[0]["reroutes"]], ["handover"]),
)

# %% [markdown]
# ## Step 4. Story steps 5-6: follow-ups go straight to the analyst
#
# 5. The coordinator persists Task.id → responder: that is its routing table (with
#    `Requester(routes_path=...)` it is also written to SQLite, so a restarted coordinator keeps it).
# 6. Every follow-up for the task goes to the analyst's **direct request topic**: the answer to the
#    question, and a `GetTask` afterwards. Each is a new request with **new Correlation Data**;
#    the **Task.id never changes**.

# %%
answer = coordinator.continue_task(stream, REPRO_TEXT, stream=True, message_id="coord-tck4821-m-2")
answer.wait()
final = coordinator.get_task(task_id)
print("task state:", states.short_name(final["status"]["state"]))
follow_ups = tapped()
follow_ups

# %%
as_described(
    said("goes to the analyst's direct request topic", set(follow_ups["topic"]),
         {topics.request_topic("acme", "support", handover.responder)}),
    said("the answer to the question, and a GetTask afterwards", list(follow_ups["method"]),
         ["SendStreamingMessage", "GetTask"]),
    said("new Correlation Data", f"{follow_ups['Correlation Data'].nunique()} different of {len(follow_ups)}",
         f"{len(follow_ups)} different of {len(follow_ups)}"),
    said("the Task.id never changes", set(follow_ups["Task.id"]), {request["Task.id"]}),
)

# %% [markdown]
# ## Step 5. Failure case 1: no `a2a-responder-agent-id`
#
# A desk that does the work itself (`handover="none"`) never sets the property. The coordinator must
# then keep routing to the card agent: a reply without the property is **not** a handover.

# %%
desk.stop()
desk = TicketDesk(handover="none", seed=4822)

plain = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                           message_id="coord-tck4821-m-3")
plain.wait()
coordinator.get_task(plain.task_id)
print("a2a-responder-agent-id on the items:", {e.responder for e in plain.events})
print("routed to:                          ", coordinator.routing.target(plain.task_id))
tapped()

# %%
as_described(
    said("never sets the property", {e.responder for e in plain.events}, {None}),
    said("keep routing to the card agent", coordinator.routing.target(plain.task_id).label, "ticket-desk"),
    said("is not a handover", len(reroutes(plain.task_id)), 0),
)

# %% [markdown]
# ## Step 6. Failure case 2: two handovers in one stream
#
# This desk starts on the ticket itself, hands it to a first analyst, and that analyst passes it to
# a second one halfway through the report (`handover="double"`; the reproduction steps are in the
# first message, so it is one stream). The property takes two values: the coordinator must honour
# the **most recent** one. (Each failure case starts a fresh desk with its own seed, so its analysts
# are again `analyst-1`, `analyst-2`.)

# %%
desk.stop()
desk = TicketDesk(handover="double", seed=4823)

twice = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                           message_id="coord-tck4821-m-4")
twice.wait()
pd.DataFrame([{"event": e.kind, "state": states.short_name(e.state) if e.state else "",
               "a2a-responder-agent-id": e.responder or "",
               "reroute": f"{e.reroute.from_.label} → {e.reroute.to.label}" if e.reroute else ""}
              for e in twice.events])

# %%
reroutes(twice.task_id)

# %%
named = list(dict.fromkeys(e.responder for e in twice.events if e.responder))
as_described(
    said("The property takes two values", len(named), 2),
    said("its analysts are again analyst-1, analyst-2", named, ["analyst-1", "analyst-2"]),
)

# %% [markdown]
# The latest analyst is where follow-ups go now; the task's identity never changed:

# %%
coordinator.get_task(twice.task_id)
print("routed to:", coordinator.routing.target(twice.task_id))
latest = tapped()
latest

# %%
as_described(
    said("The latest analyst is where follow-ups go now", latest["topic"].iloc[-1],
         topics.request_topic("acme", "support", named[-1])),
    said("the task's identity never changed", latest["Task.id"].nunique(), 1),
)

# %% [markdown]
# ## Step 7. Failure case 3: the analyst is unreachable
#
# This time the analyst asks for the reproduction steps and then disappears (`handover="dies"`: its
# MQTT connection ends right after its question reached the broker). The user story's rule: apply
# the retry profile against the **new agent's direct topic**; when it is exhausted, **fall back to
# the original card agent**. The desk shares its task runtime with its analysts, so it can take the
# task back.
#
# The tap has done its job and stops listening. The cell waits until the analyst is really gone:
# its session is closed and the desk's runtime, which lists its live agents, has dropped it.

# %%
tap.stop_listening()
desk.stop()
desk = TicketDesk(handover="dies", seed=4824)

doomed = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-5")
doomed.wait()
analyst = desk.instances[-1]
print("the question came from:", analyst.agent, "| state:", states.short_name(doomed.state), flush=True)

print(f"waiting for {analyst.agent} to disconnect ...", flush=True)
print(f"{analyst.agent} is gone:", desk.wait_gone(analyst))   # at most 3 s; it takes a few milliseconds

# %%
as_described(
    said("asks for the reproduction steps", states.short_name(doomed.state), "input-required"),
    said("and then disappears", analyst.agent not in desk.runtime.agents and not analyst.alive, True),
)


# %% [markdown]
# The coordinator answers the question. It asks the agent to acknowledge at once
# (`return_immediately=True`), so the attempts below are only about reaching an agent. The cell
# prints each attempt as soon as its outcome is known (`coordinator.on_attempt`), then the table:

# %%
def show(attempt):
    print(f"attempt {attempt.number} to {topics.parse_topic(attempt.topic).agent}: "
          f"PUBACK {attempt.reason_code}, {attempt.outcome}", flush=True)

coordinator.on_attempt = show
ack = coordinator.continue_task(doomed, REPRO_TEXT, message_id="coord-tck4821-m-6", return_immediately=True)
coordinator.on_attempt = None
pd.DataFrame([{"attempt": a.number, "topic": a.topic, "Correlation Data": a.correlation[:16] + "…",
               "PUBACK reason code": a.reason_code, "outcome": a.outcome} for a in ack.attempts])

# %% [markdown]
# Three attempts on the analyst's topic, each with new Correlation Data and no reply; the retry
# profile exhausted, the coordinator fell back to the card agent, and the desk answered.
#
# Now look at the PUBACK column: the broker answered 0 (*Success*) every time, although
# `analyst-1` was gone. That is the recorder of step 1: it subscribes to every request topic of the
# unit, so each publish there has a matching subscriber. Any subscriber does that: a recorder, a
# tap, a dashboard. So 16 is only a hint, never proof, and the coordinator does not rely on it: it
# waits out the first-reply timeout on every attempt, whatever the PUBACK said.

# %%
on_analyst = [a for a in ack.attempts if a.topic == analyst.request_topic]
as_described(
    said("Three attempts on the analyst's topic", len(on_analyst), 3),
    said("each with new Correlation Data", f"{len({a.correlation for a in ack.attempts})} different of {len(ack.attempts)}",
         f"{len(ack.attempts)} different of {len(ack.attempts)}"),
    said("and no reply", {a.outcome for a in on_analyst}, {f"no reply within {QUICK.reply_first_timeout_s:g} s"}),
    said("fell back to the card agent, and the desk answered",
         f"{topics.parse_topic(ack.attempts[-1].topic).agent}: {ack.attempts[-1].outcome}", "ticket-desk: answered"),
    said("the broker answered 0 (Success) every time", {a.reason_code for a in ack.attempts}, {0}),
    said("although analyst-1 was gone", f"{analyst.agent}: {'up' if analyst.alive else 'gone'}", "analyst-1: gone"),
)

# %% [markdown]
# Step the recorder aside for a moment (`recorder.paused()`: it unsubscribes, and subscribes again
# after the block) and publish once more on the analyst's topic: a probe, [QoS 1](glossary.md#QoS-1)
# with an empty payload, not a request. Now nobody's subscription matches, and the broker says so:

# %%
probe = MqttMessage(analyst.request_topic, b"", qos=1)
with recorder.paused():
    alone = coordinator.session.publish(probe)
print("PUBACK with the recorder paused:", alone.reason_code, alone.reason)
print("the recorder listens again:     ", recorder.running)

# %% [markdown]
# 16, *No matching subscribers*: the same topic, a moment apart, gave 0 and 16, and only the
# recorder made the difference. [Lesson 06](06-recovery.ipynb) has no recorder: there every attempt
# on its unreachable analyst's topic gets 16. Read 16 as "nobody listens here, as far as the broker
# knows" and 0 as "somebody listens", never as "the agent is alive".

# %%
as_described(
    said("16, No matching subscribers", f"{alone.reason_code}, {alone.reason}", "16, No matching subscribers"),
    said("gave 0 and 16", f"{sorted({a.reason_code for a in on_analyst})} with the recorder, {alone.reason_code} without",
         "[0] with the recorder, 16 without"),
)

# %% [markdown]
# The routing table recorded why the task went back to the card agent:

# %%
reroutes(doomed.task_id)

# %% [markdown]
# and the desk, which took the task back, finishes it:

# %%
done = coordinator.poll(doomed.task_id, until=states.is_terminal)
print("task state:", states.short_name(done["status"]["state"]), "| routed to:", coordinator.routing.target(doomed.task_id))

# %%
as_described(
    said("The routing table recorded why the task went back to the card agent",
         [m["cause"] for m in routing_snapshot(coordinator, task_ids=[doomed.task_id]).rows[0]["reroutes"]],
         ["handover", "fallback"]),
    said("finishes it", f"{states.short_name(done['status']['state'])} by {coordinator.routing.target(doomed.task_id).label}",
         "completed by ticket-desk"),
)

# %% [markdown]
# ## Step 8. The whole routing table
#
# Four tasks, the four outcomes of user story 07: one row per task, and every reroute.
# `away from the card agent` says where a task's requests go **now**; `reroutes` counts every move
# on the way. So the unreachable analyst's task is not away from the card agent although it moved
# twice: handed over, then back to the desk by the fallback.

# %%
whole = routing_snapshot(coordinator)
case = {task_id: "story 07", plain.task_id: "no property", twice.task_id: "two handovers",
        doomed.task_id: "unreachable"}
pd.DataFrame([{"case": case[r["task_id"]], "card agent": r["card"], "current agent": r["current"],
               "away from the card agent": r["rerouted"], "reroutes": len(r["reroutes"])} for r in whole.rows])

# %%
moves = pd.DataFrame([{"case": case[r["task_id"]], **{k: m[k] for k in ("cause", "from", "to", "detail")}}
                      for r in whole.rows for m in r["reroutes"]])
moves

# %%
unreachable = next(r for r in whole.rows if case[r["task_id"]] == "unreachable")
as_described(
    said("Four tasks, the four outcomes", sorted(case[r["task_id"]] for r in whole.rows), sorted(case.values())),
    said("is not away from the card agent although it moved twice", (unreachable["rerouted"],
         [m["cause"] for m in unreachable["reroutes"]]), (False, ["handover", "fallback"])),
)

# %% [markdown]
# The same tasks from the wire, as the recorder heard them: one panel per task, one row per agent it
# met, one marker per **hop** in order. A circle is an operation the coordinator sent (hollow: no
# reply came); a star is a reply whose `a2a-responder-agent-id` named a new responder, so the first
# handover of the double-handover case shows although no request ever went to its first analyst;
# a square stands for the replies an agent sent before it handed the task on (the double-handover
# desk worked on the ticket itself first; the other desks handed over in their first reply). The
# label under each hop is its method and, in bold, why it went there.
#
# The recording holds enough to work the routing table out again: `recorded_reroutes(recorder)`
# feeds the recorded requests and replies through the same `RoutingTable` the coordinator used
# (`protocol.routing.replay`) and finds the same reroutes, with the same causes.

# %%
recorder.wait_idle(0.3)
recorder.stop()
wire = routing_view(recorder)
replayed = recorded_reroutes(recorder)
display(reroute_chart(recorder, names=case, title="Lesson 05: where each task went, hop by hop"))

# %%
first_analyst = named[0]
hops = route_hops(recorder)
as_described(
    said("one panel per task", wire["task_id"].nunique(), len(case)),
    said("no request ever went to its first analyst",
         len(wire[(wire["task_id"] == twice.task_id) & (wire["target"] == first_analyst)]), 0),
    said("the double-handover desk worked on the ticket itself first",
         sorted({case[t] for t in hops[hops["kind"] == "replied"]["task_id"] if t in case}), ["two handovers"]),
    said("finds the same reroutes, with the same causes",
         sorted(zip(replayed["task_id"].map(case), replayed["cause"], replayed["from"], replayed["to"])),
         sorted((case[r["task_id"]], m["cause"], m["from"], m["to"]) for r in whole.rows for m in r["reroutes"])),
)

# %% [markdown]
# The user story's checklist, and where you saw each item:
#
# | SDK requirement | seen in |
# |---|---|
# | parse `a2a-responder-agent-id` on any reply or stream message | step 3, step 6 (mid-stream, twice) |
# | update the routing table: later operations for the Task.id go to the new agent | steps 3-4 |
# | honour the most recent `a2a-responder-agent-id` | step 6 |
# | Task.id does not change across handover | steps 4, 6 |
# | new Correlation Data for follow-ups to the handover target | step 4, step 7 |
# | failure: responder unreachable → retry profile, then fallback to the card agent | step 7 |
# | failure: property missing → keep routing to the card agent | step 5 |

# %% [markdown]
# ## Step 9. Your turn
#
# First, the routing table **live**: this view is for you to play with. It shows the table when it
# is created; click *Refresh* after any cell you run, or tick *auto refresh* and it follows every
# change by itself. (After *Run All* it shows the four tasks above; the exercises below add theirs.)

# %% tags=["nbval-ignore-output"]
view = routing_table_view(coordinator)
view

# %% [markdown]
# **Find the reroute.** The unreachable task of step 7 ended back at the card agent. In `moves`, the
# DataFrame of every reroute (step 8), find the row that took that task away from its analyst, and
# give the cause the routing table recorded for it, as an expression on `moves`.

# %%
from a2a_nb.notebook.exercises import lesson05

cause = ...   # your answer: one value of moves' cause column
lesson05.reroute_cause(cause, coordinator, doomed.task_id)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
cause = moves[(moves["case"] == "unreachable") & (moves["from"] == analyst.agent)]["cause"].iloc[0]
reference(lesson05.reroute_cause(cause, coordinator, doomed.task_id))

# %% [markdown]
# **Send the follow-up yourself.** A desk that hands over at once again; the cell sends it a new
# ticket, whose analyst asks for the reproduction steps. Answer the question with `REPRO_TEXT`
# (one call of the coordinator), then say which topic your answer was published on: the check
# compares it with what the replies told the coordinator. (Each run of the cell sends a fresh
# ticket; with *auto refresh* ticked, watch the live view above.)

# %%
desk.stop()
desk = TicketDesk(handover="first-reply", seed=4825)
print(desk.desk)

# %%
mine = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
mine.wait()
reply = ...   # your answer: send REPRO_TEXT as the answer to mine's question
topic = ...   # and the topic it was published on (each attempt in reply.attempts has a .topic)
lesson05.follow_up_topic(topic, mine, coordinator)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
mine = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
mine.wait()
reply = coordinator.continue_task(mine, REPRO_TEXT)
topic = reply.attempts[0].topic
reference(lesson05.follow_up_topic(topic, mine, coordinator))


# %% [markdown]
# ## Step 10. Clean up, when you are done
#
# The exercises need the desk and the coordinator, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done. The live view stays: *Refresh* still reads the
# coordinator's table.

# %%
def clean_up():
    """Stop the desk and close this notebook's MQTT sessions."""
    tap.close()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - A card agent may hand a task to another instance; the replies then carry
#   `a2a-responder-agent-id` with that instance's agent id, on any reply or stream message.
# - The requester's **routing table** maps Task.id → the agent answering now (and keeps the card
#   agent); follow-ups go to that agent's direct request topic, with new Correlation Data and the
#   same Task.id.
# - No property → no handover. Several → the latest wins.
# - An unreachable handover target gets the full retry profile; then the requester falls back to the
#   card agent and records the reason.
# - PUBACK 16 says nobody listens on a topic; any other subscriber (a recorder, a tap) turns it into
#   0. It is a hint; the timeout decides.
# - `routing_snapshot(requester)` shows the table as it is at one moment; `routing_table_view(requester)`
#   shows it live (`refresh()`, the button, or *auto refresh*).
#
# ## What's next
# [06 · Recovery](06-recovery.ipynb): the walkthrough's recovery checklist, one live demonstration
# per line: timeouts, dropped streams, polling, cancelling, and the unreachable analyst again.

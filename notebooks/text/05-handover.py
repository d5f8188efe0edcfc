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
# # 05 · Handover: the desk delegates, the routing table follows
#
# The ticket desk owns the only Agent Card, but it does not analyse tickets itself: for each ticket
# it spawns an **analyst instance** with its own MQTT client ID and no card, and hands the task to
# it. The analyst's replies say so with the user property `a2a-responder-agent-id`, and from then
# on the coordinator sends everything about that task **directly to the analyst**. This is the
# profile's *Optional Task Handover*, told as **user story 07**; this lesson walks through it step
# by step and then through its three failure cases.
#
# ## What you will learn
# - the six steps of user story 07 on a real broker: the reply that carries
#   `a2a-responder-agent-id`, the routing table before and after, follow-ups on the analyst's direct
#   request topic with new Correlation Data and the same Task.id;
# - failure case 1: no `a2a-responder-agent-id` → the task stays with the card agent;
# - failure case 2: two handovers in one stream → the latest one wins;
# - failure case 3: the analyst is unreachable → retries against its direct topic, then fallback to
#   the card agent, with the reason recorded;
# - a live view of the routing table (`routing_table_view`).
#
# ## Time needed
# About 20 minutes. The notebook runs in about 5 seconds (case 3 waits for real timeouts).
#
# ## Prerequisites
# - [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) and
#   [04 · Input required](04-input-required.ipynb): stream events, continuing a task.

# %% [markdown]
# ## Step 1. The agents, a tap and the routing table view
#
# The desk with `handover="first-reply"`: it hands each ticket to a new analyst as soon as it has
# accepted it. The coordinator gets a short retry profile (wait 0.5 s for a first reply, 3 attempts, backoff
# 0.05 / 0.1 / 0.2 s) so that failure case 3 takes seconds instead of the profile's default 45.
# The tap from lesson 04 shows every request the coordinator publishes.

# %%
import json
import time

import pandas as pd

import a2a_nb
from a2a_nb.agents import Requester
from a2a_nb.mqtt import Session
from a2a_nb.notebook.routing_view import routing_table_view
from a2a_nb.protocol import MqttMessage, properties, states, topics
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", 90)

desk = TicketDesk(handover="first-reply", seed=4821)
QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=3.0, max_attempts=3,
                     backoff_s=(0.05, 0.1, 0.2))
coordinator = Requester("coordinator", seed=4821, retry=QUICK)

tap = Session("acme", "support", "lesson-05-tap")
tap.subscribe("$a2a/v1/request/acme/support/#")

def tapped():
    """The requests the tap saw since the last call, one dict each."""
    rows = []
    while (m := tap.receive(timeout=0.2)) is not None:
        request = json.loads(m.payload)
        params = request["params"]
        message = params.get("message", {})
        rows.append({"topic": m.topic, "method": request["method"], "messageId": message.get("messageId", ""),
                     "Task.id": (message.get("taskId") or params.get("id"))[:8] + "…",
                     "Correlation Data": m.correlation_data.hex()[:16] + "…"})
    return pd.DataFrame(rows)

def route_rows():
    return pd.DataFrame(coordinator.routing.rows()).drop(columns="updated_at")

def reroutes(task_id):
    rows = [r for r in coordinator.routing.history_rows() if r["task_id"] == task_id]
    return pd.DataFrame(rows, columns=["from", "to", "cause", "detail"])

print(coordinator)

# %% [markdown]
# A recorder hears every A2A message of this lesson from now on (it only subscribes); step 8 draws
# the four tasks' routes from what it heard.

# %%
# %matplotlib inline
from IPython.display import display

from a2a_nb.traffic import Recorder
from a2a_nb.traffic.charts import reroute_chart

recorder = Recorder(org_filter="$a2a/v1/+/acme/support/#").start()

# %% [markdown]
# The routing table as a widget: one row per task with its card agent, the agent answering for it
# now, and every reroute. It shows what the table holds when `refresh()` runs (or the *Refresh*
# button is clicked; tick *auto refresh* to follow changes by itself). It is empty for now; it will
# be displayed again below.

# %% tags=["nbval-ignore-output"]
view = routing_table_view(coordinator)
view

# %% [markdown]
# ## Step 2. Story steps 1-2: the request goes to the card agent
#
# 1. Agent A (the coordinator) is subscribed to its reply topic (it did so when it was created).
# 2. It publishes the request to agent B's request topic, the one in B's card, with Response Topic
#    and Correlation Data, and a Task.id it made itself.

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
# read it yet. Its routing table holds what it knew when it sent: the task belongs to the card agent.

# %%
route_rows()

# %% [markdown]
# ## Step 3. Story steps 3-4: the desk delegates, the replies say so
#
# 3. The desk accepts the Task.id (its first stream item is the task snapshot, `submitted`) and
#    hands the task to an analyst it spawns.
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

# %% [markdown]
# The item that moved the route, as an MQTT packet:

# %%
handover = next(e for e in stream.events if e.reroute is not None)
packet = handover.mqtt
print("published on:     ", packet.topic)
print("Correlation Data: ", packet.correlation_data.hex()[:16] + "…", "(the request's)")
echoed = handover.data.get("taskId") or handover.data.get("id")  # an event's taskId, a Task's id
print("item:             ", handover.kind)
print("Task.id echoed:   ", echoed == task_id)
print("user properties:  ", packet.user_properties)

# %% [markdown]
# The routing table after: the task keeps its card agent (the fallback) and is now routed to the
# analyst; the reroute is recorded with its cause.

# %%
route_rows()

# %%
reroutes(task_id)

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
print("all to the analyst's topic:  ", set(follow_ups["topic"]) == {topics.request_topic("acme", "support", "analyst-1")})
print("one Task.id for all:         ", follow_ups["Task.id"].nunique() == 1 and request["Task.id"] == follow_ups["Task.id"][0])
print("new Correlation Data on each:", follow_ups["Correlation Data"].nunique() == len(follow_ups))

# %% [markdown]
# The widget shows the table when it is refreshed. (The stored notebook shows the snapshot taken
# when this cell ran; run it yourself and click *Refresh* after any later cell.)

# %% tags=["nbval-ignore-output"]
view.refresh()
view

# %% [markdown]
# ## Step 5. Failure case 1: no `a2a-responder-agent-id`
#
# A desk that does the work itself (`handover="none"`) never sets the property. The coordinator must
# then keep routing to the card agent: a reply without the property is **not** a handover. (Each
# failure case starts a fresh desk with its own seed; its analysts are again `analyst-1`, `analyst-2`, ….)

# %%
desk.stop()
desk = TicketDesk(handover="none", seed=4822)

plain = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                           message_id="coord-tck4821-m-3")
plain.wait()
coordinator.get_task(plain.task_id)
print("a2a-responder-agent-id on the items:", {e.responder for e in plain.events})
print("routed to:                          ", coordinator.routing.target(plain.task_id))
print("reroutes:                           ", len(reroutes(plain.task_id)))
tapped()

# %% [markdown]
# ## Step 6. Failure case 2: two handovers in one stream
#
# This desk starts on the ticket itself, hands it to a first analyst, and that analyst passes it to
# a second one halfway through the report (`handover="double"`; the reproduction steps are in the
# first message, so it is one stream). The property appears twice with two values: the coordinator
# must honour the **most recent** one.

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

# %% [markdown]
# The latest analyst is where follow-ups go now; the task's identity never changed:

# %%
coordinator.get_task(twice.task_id)
print("routed to:", coordinator.routing.target(twice.task_id))
tapped()

# %% [markdown]
# ## Step 7. Failure case 3: the analyst is unreachable
#
# This time the analyst asks for the reproduction steps and then disappears (`handover="dies"`: its
# MQTT connection ends 0.2 s after the question). The user story's rule: apply the retry profile
# against the **new agent's direct topic**; when it is exhausted, **fall back to the original card
# agent**. The desk shares its task runtime with its analysts, so it can take the task back.
#
# The tap steps aside for this case: as a subscriber to every request topic it would make the
# broker answer each publish with PUBACK 0, hiding the cheapest hint that nobody listens (reason
# code 16, *No matching subscribers*).

# %%
tap.unsubscribe("$a2a/v1/request/acme/support/#")
desk.stop()
desk = TicketDesk(handover="dies", seed=4824)

doomed = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-5")
doomed.wait()
analyst = desk.instances[-1]
print("the question came from:", {e.responder for e in doomed.events} - {None})
print("state:                 ", states.short_name(doomed.state))

# The analyst's connection ends 0.2 s after its question. We wait for the broker's word that it
# is gone: a QoS 1 publish (empty payload) on its request topic gets PUBACK 16 once nobody listens.
gone = topics.request_topic("acme", "support", analyst.agent)
for _ in range(500):
    if coordinator.session.publish(MqttMessage(gone, b"", qos=1)).no_subscribers:
        break
    time.sleep(0.01)
print("nobody listens on:     ", gone)

# %% [markdown]
# The coordinator answers the question. It asks the agent to acknowledge at once
# (`return_immediately=True`), so the attempts below are only about reaching an agent:

# %%
ack = coordinator.continue_task(doomed, REPRO_TEXT, message_id="coord-tck4821-m-6", return_immediately=True)
pd.DataFrame([{"attempt": a.number, "topic": a.topic, "Correlation Data": a.correlation[:16] + "…",
               "PUBACK reason code": a.reason_code, "outcome": a.outcome} for a in ack.attempts])

# %% [markdown]
# Three attempts on the analyst's topic, each with new Correlation Data; the broker's PUBACK said
# *No matching subscribers* (16) every time: nobody listens there any more. The retry profile
# exhausted, the coordinator fell back to the card agent, and the desk answered. The routing table
# recorded why:

# %%
reroutes(doomed.task_id)

# %%
done = coordinator.poll(doomed.task_id, until=states.is_terminal)
print("task state:", states.short_name(done["status"]["state"]), "| routed to:", coordinator.routing.target(doomed.task_id))

# %% [markdown]
# ## Step 8. The whole routing table
#
# Four tasks, the four outcomes of user story 07. The widget, refreshed (its times change on every
# run):

# %% tags=["nbval-ignore-output"]
view.refresh()
view

# %% [markdown]
# The same content as plain tables: one row per task, and every reroute.

# %%
case = {task_id: "story 07", plain.task_id: "no property", twice.task_id: "two handovers",
        doomed.task_id: "unreachable"}
pd.DataFrame([{"case": case[r["task_id"]], "card agent": r["card"], "current agent": r["current"],
               "rerouted": r["rerouted"], "reroutes": len(r["reroutes"])} for r in view.rows()])

# %%
pd.DataFrame([{"case": case[r["task_id"]], **{k: m[k] for k in ("cause", "from", "to", "detail")}}
              for r in view.rows() for m in r["reroutes"]])

# %% [markdown]
# The same four tasks from the wire, as the recorder heard them: one panel per task, one row per
# agent it met, one marker per **hop** in order. A circle is an operation the coordinator sent
# (hollow: no reply came); a star is a reply whose `a2a-responder-agent-id` named a new responder,
# so the first handover of "two handovers" shows although no request went to that analyst. The
# label under each hop is its method and, in bold, why it went there.

# %%
recorder.wait_idle(0.3)
recorder.stop()
display(reroute_chart(recorder, names=case, title="Lesson 05: where each task went, hop by hop"))

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
#
# ## Step 9. Clean up
#
# The agents stop; the routing view above stays: *Refresh* still reads the coordinator's table.

# %%
tap.close()
desk.stop()
print(f"closed {a2a_nb.stop_all()} MQTT session(s)")

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
# - `routing_table_view(requester)` shows the table per task; `refresh()` (or the button) updates it.
#
# ## What's next
# [06 · Recovery](06-recovery.ipynb): the walkthrough's recovery checklist, one live demonstration
# per line: timeouts, dropped streams, polling, cancelling, and the unreachable analyst again.

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
# # 02 · Send a ticket and track its task
#
# The coordinator found the ticket desk (lesson 01). Now it hands over ticket TCK-4821: one
# `SendMessage` request over MQTT, a reply matched by [**Correlation Data**](glossary.md#Correlation-Data),
# a **task** that pauses for input, a follow-up on the same task, and `GetTask` until the task is done.
#
# ## What you will learn
# - the identifier conventions: a `contextId` named after the ticket, `messageId`s that embed it,
#   and a `Task.id` the requester makes;
# - what a request looks like on the wire, built *before* sending: topic, MQTT v5 properties,
#   JSON-RPC payload;
# - the two kinds of result: a `Message` (echo) and a `Task` (the desk);
# - answering `INPUT_REQUIRED` on the same task and tracking it with `GetTask` and backoff;
# - the JSON payload next to the MQTT properties of a reply;
# - the eight [task states](glossary.md#Task-states), which of them a blocking send shows, and what the
#   coordinator does in each;
# - sending the answer to a waiting task yourself (the exercise at the end).
#
# ## Time needed
# About 25 minutes. Run All takes about 2 seconds.
#
# ## Prerequisites
# - [00 · Start here](00-start-here.ipynb) (topics, client IDs) and
#   [01 · Discovery](01-discovery.ipynb) (cards, the ticket desk).
# - JSON. JSON-RPC 2.0 helps but is explained on the way.

# %% [markdown]
# ## Step 1. The agents and the coordinator
#
# The same desk and echo agent as in lesson 01, and the coordinator: a `Requester`. On creation it
# subscribes to its own **reply topic** before it ever sends anything: replies can only arrive where
# somebody listens. The lesson seeds its ids (`seed=4821`) so that Task.ids and names are the same on
# every run, but never the reply topic's suffix or the Correlation Data: a reply is accepted because
# of them, so whoever could guess them could forge one. Those always come from `secrets`.

# %%
import json

import pandas as pd
from IPython.display import HTML

import a2a_nb
from a2a_nb import Requester, Responder, TicketDesk
from a2a_nb.notebook.display import mqtt_side_by_side_html, publish_bytes_html
from a2a_nb.protocol import IdSource, MqttMessage, encode_json, ids, jsonrpc, messages, states, topics
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.story.cast import echo_card, echo_handler
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
desk = TicketDesk(handover="first-reply", seed=4821)
echo = Responder("echo", echo_handler, card=echo_card())
coordinator = Requester("coordinator", seed=4821)
print(coordinator)

# %% [markdown]
# ## Step 2. Identifiers that tell the story
#
# These decisions are made now and never changed:
#
# - the **contextId** is named after the ticket (`ctx-tck4821`): every later task about this ticket
#   (re-analysis, supplements, escalation) shares it;
# - each **messageId** embeds the ticket and counts the coordinator's messages about it
#   (`coord-tck4821-m-1`, `-m-2`, ..., as in `python -m a2a_nb story`): on a timeout the same message
#   is resent verbatim, and the agent recognises the duplicate instead of analysing twice.
#
# Over MQTT the **requester** also makes the `Task.id`, a UUIDv4, and puts it in the very first
# message (the profile's request/reply mapping). Over HTTP the server would make it; here the
# coordinator knows the id before anything is sent.

# %%
print("contextId:", CONTEXT_ID)
message = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-1")
print(json.dumps(message, indent=2))
print("Task.id is a UUIDv4 made by the requester:", ids.is_uuid4(message["taskId"]))

# %% [markdown]
# ## Step 3. The request, built before it is sent
#
# Everything the coordinator will publish can be built with the pure functions of
# `a2a_nb.protocol` and looked at first:
#
# - the **topic**: the desk's request topic (named in its card);
# - the **MQTT v5 properties**: a [*Response Topic*](glossary.md#Response-Topic) (where to answer),
#   *Correlation Data* (the 32 hex digits of 16 random bytes, sent as those 32 characters of text:
#   they come back with the reply and match it to this request; any bytes would do, but text is
#   what other implementations can read; every lesson shows them as they are sent, with
#   `readable_correlation`) and a *Message Expiry Interval* (a request nobody takes in time is dropped by the broker);
# - the **payload**: a JSON-RPC 2.0 request with method `SendMessage` and the message as params.

# %%
envelope = jsonrpc.request(jsonrpc.SEND_MESSAGE, messages.send_message_params(message), id="req-101")
preview = MqttMessage(
    topic=topics.request_topic("acme", "support", "ticket-desk"),
    payload=encode_json(envelope),
    qos=1,
    response_topic=coordinator.reply_topic,
    correlation_data=IdSource(seed=101).correlation(),
    message_expiry=coordinator.retry.message_expiry_s(),
)
print("PUBLISH to      ", preview.topic, "(QoS 1)")
print("Response Topic  ", preview.response_topic)
print("Correlation Data", readable_correlation(preview.correlation_data))
print("Message Expiry  ", preview.message_expiry, "s")
print("user properties ", preview.user_properties or "none")
print(json.dumps(envelope, indent=2))

# %%
from a2a_nb import as_described, said

correlation_text = preview.correlation_data.decode()
as_described(
    said("the 32 hex digits", len(correlation_text), 32),
    said("of 16 random bytes", len(bytes.fromhex(correlation_text)), 16),
)

# %% [markdown]
# On the wire this is one MQTT v5 **PUBLISH** packet. `a2a_nb.mqtt.wire` spells it out piece by
# piece: the fixed header (packet type, QoS, how many bytes follow), the topic, the packet
# identifier that the broker's [PUBACK](glossary.md#PUBACK-reason-codes) will name, the properties (each an identifier byte, then its
# value) and the JSON payload. A2A itself adds nothing else: everything the binding needs travels in
# the topic and the properties.

# %%
HTML(publish_bytes_html(preview, mid=1))

# %% [markdown]
# When it really sends, the requester draws a fresh JSON-RPC `id` and fresh Correlation Data for
# every publish (a retry gets new Correlation Data but keeps the same `messageId` and `Task.id`);
# everything else is exactly what you see above.
#
# ## Step 4. A first request: echo answers with a Message
#
# `send` publishes, waits for the PUBACK, then for the reply with matching Correlation Data. A
# stateless agent like echo answers with a **Message**: no task to track.

# %%
hello = coordinator.send("echo", "hello from the coordinator")
print("result holds a", "message" if hello.message else "task")
print("text:", hello.text)
print(json.dumps(hello.result, indent=2))

# %% [markdown]
# ## Step 5. The ticket: the desk answers with a Task
#
# Now the message from step 2 goes to the ticket desk. `send` is *blocking* (the A2A v1.0 default):
# the reply comes when the task reaches a terminal or interrupted state. The desk hands the ticket
# to an analyst it spawns; the analyst reads the ticket, and needs the reproduction steps:
# **INPUT_REQUIRED**.

# %%
reply = coordinator.send("ticket-desk", message=message)
print("same Task.id:", reply.task_id == message["taskId"])
print("state:       ", reply.state)
print("answered by: ", reply.responder)
print("the analyst: ", reply.text)

# %% [markdown]
# The reply came from `analyst-1`, not from the desk: it carries the
# [user property](glossary.md#User-property) `a2a-responder-agent-id`. That is a
# [**handover**](glossary.md#Handover): the coordinator's [routing table](glossary.md#Routing-table)
# now sends everything about this task to the analyst's own request topic.

# %%
print("follow-ups go to:", coordinator.routing.target(reply.task_id).topic)
pd.DataFrame(coordinator.routing.history_rows())[["from", "to", "cause", "detail"]]

# %%
as_described(
    said("and needs the reproduction steps: INPUT_REQUIRED", states.short_name(reply.state), "input-required"),
    said("The reply came from analyst-1", reply.responder, "analyst-1"),
)

# %% [markdown]
# The kit's rich view of a reply (with the round-trip time, so its numbers change on every run):

# %% tags=["nbval-ignore-output"]
reply

# %% [markdown]
# ## Step 6. Answer on the same task, then track it with GetTask
#
# The coordinator asks the user and sends the reproduction steps as a **new message** (new
# `messageId`: this is new input, not a resend) on the **same task** (same `Task.id` and
# `contextId`):

# %%
answer = coordinator.new_message(REPRO_TEXT, task_id=reply.task_id, context_id=reply.context_id,
                                 message_id="coord-tck4821-m-2")
print(json.dumps(answer, indent=2))

# %% [markdown]
# This time we do not wait for the end: `return_immediately=True` asks the agent to acknowledge at
# once, and the coordinator tracks the task itself. No target is given (`None`): the routing table
# knows that this task now belongs to the analyst. (`coordinator.continue_task(reply, text)` does
# both steps in one call.)

# %%
ack = coordinator.send(None, message=answer, return_immediately=True)
print("published to:", ack.attempts[0].topic)
print("acknowledged for the same task:", ack.task_id == reply.task_id)
print("state in the acknowledgement: ", states.short_name(ack.state))

# %% [markdown]
# The acknowledgement already shows the task moving again: `working` (the analyst has the answer).
# Tracking without a stream means **GetTask with backoff**: ask, wait 0.2 s, ask again, and double
# the wait after each ask (never more than 2 s) until the task is terminal. Each ask is this small
# request:

# %%
print(json.dumps(jsonrpc.request(jsonrpc.GET_TASK, messages.get_task_params(reply.task_id), id="req-103"),
                 indent=2))

# %%
BACKOFF = {"interval_s": 0.2, "max_interval_s": 2.0}   # the first wait, the longest wait
sent_before = coordinator.stats.sent
final = coordinator.poll(reply.task_id, until=states.is_terminal, **BACKOFF)
print("final state:", final["status"]["state"])

as_described(
    said("already shows the task moving again: working", states.short_name(ack.state), "working"),
    said("ask, wait 0.2 s", BACKOFF["interval_s"], 0.2),
    said("never more than 2 s", BACKOFF["max_interval_s"], 2.0),
)

# %% [markdown]
# How many asks it took depends on your machine's speed (this cell's output changes from run to run):

# %% tags=["nbval-ignore-output"]
print(f"GetTask requests sent: {coordinator.stats.sent - sent_before}")

# %% [markdown]
# The result comes in layers: the **Artifact** (the structured report, streamed in chunks that the
# task assembled by `artifactId`) and the **status message** (the conclusion for the user).

# %%
report_artifact = final["artifacts"][0]
report = {}
for data in messages.data_of(report_artifact):
    report.update(data)

print("artifact:       ", report_artifact["artifactId"], "-", report_artifact["name"])
print("root cause:     ", report["rootCause"])
print("confidence:     ", report["confidence"])
print("affected orders:", len(report["affectedOrders"]))
print("first action:   ", report["recommendedActions"][0])
print()
print("conclusion:", messages.text_of(final["status"]["message"]))

# %% [markdown]
# ## Step 7. The JSON and the MQTT packet, side by side
#
# A reply is A2A and MQTT at once. The **JSON payload** is pure A2A: a JSON-RPC response whose
# `result` holds the Task. The **MQTT v5 packet** is what the binding adds: it arrived on the
# coordinator's reply topic, with the Correlation Data of the request it answers, and with the
# user property that announced the handover. `reply.mqtt` is that packet as a plain value.

# %%
packet = reply.mqtt
print("topic:            ", packet.topic)
print("Correlation Data: ", readable_correlation(packet.correlation_data))
print("sent with request:", reply.attempts[-1].correlation == readable_correlation(packet.correlation_data))
print("user properties:  ", packet.user_properties)

# %%
HTML(mqtt_side_by_side_html(reply.mqtt))

# %% [markdown]
# ## Step 8. The task states
#
# A2A v1.0 has eight task states. `a2a_nb.protocol.states` says which group each belongs to and
# whether it ends a reply stream; the last column is the coordinator's action from the walkthrough.

# %%
ACTION = {
    states.SUBMITTED: "wait: stream, push, or GetTask with backoff",
    states.WORKING: "wait: stream, push, or GetTask with backoff",
    states.INPUT_REQUIRED: "ask the user, send the answer on the same task (new messageId)",
    states.AUTH_REQUIRED: "complete the authorization the status message describes",
    states.COMPLETED: "read the artifacts and the final message, hand them to the user",
    states.FAILED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
    states.CANCELED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
    states.REJECTED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
}

def group(state):
    if states.is_active(state):
        return "active"
    return "interrupted" if states.is_interrupted(state) else "terminal"

table = pd.DataFrame([
    {"state": s, "short name": states.short_name(s), "group": group(s),
     "ends a stream": states.ends_stream(s), "coordinator does": ACTION[s]}
    for s in ACTION
])
as_described(said("A2A v1.0 has eight task states", len(states.ALL_STATES), 8))
table

# %% [markdown]
# Which of them did our task go through? The coordinator only knows what its replies said, one state
# per reply:

# %%
seen = pd.DataFrame([
    {"step": 5, "request": "SendMessage (blocking)", "the reply said": states.short_name(reply.state)},
    {"step": 6, "request": "SendMessage (returnImmediately)", "the reply said": states.short_name(ack.state)},
    {"step": 6, "request": "GetTask (the last ask)", "the reply said": states.short_name(final["status"]["state"])},
])
seen

# %% [markdown]
# So the coordinator saw `input-required` → `working` → `completed`. That is not the whole life of the
# task: a blocking `SendMessage` answers only once the task stops (step 5), so whatever the task went
# through before its first stop never reached the coordinator.
#
# A **stream** shows every state as it happens (lesson 03). As a preview, the coordinator asks for a
# re-analysis of the ticket, a **new task in the same context** (a terminal task never changes again,
# so more work on the ticket is always a new task), and streams it:

# %%
recheck = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-3")
for event in recheck:
    print(event)
trail = [states.short_name(state) for _, state, _ in recheck.view.transitions]
print("states:", " → ".join(trail))

# %% [markdown]
# A new task starts `submitted` (the desk has stored it, nobody works on it yet), turns `working` (the
# analyst reads the ticket) and stops at `input-required`. Our first task began the same way, so its
# whole life was `submitted` → `working` → `input-required` → `working` → `completed`: the
# coordinator saw the last three. (The first item also names a new handover: the desk gave this
# task to `analyst-2`, while `analyst-1` still answers for ours.)

# %%
as_described(
    said("So the coordinator saw input-required → working → completed", list(seen["the reply said"]),
         ["input-required", "working", "completed"]),
    said("its whole life was submitted → working → input-required → working → completed: the coordinator "
         "saw the last three", list(seen["the reply said"]),
         ["submitted", "working", "input-required", "working", "completed"][-3:]),
    said("A new task starts submitted", trail[0], "submitted"),
    said("turns working (the analyst reads the ticket) and stops at input-required", trail[1:],
         ["working", "input-required"]),
    said("the desk gave this task to analyst-2", recheck.events[0].responder, "analyst-2"),
    said("while analyst-1 still answers for ours", coordinator.routing.target(reply.task_id).agent, "analyst-1"),
)

# %% [markdown]
# Nobody answers the re-analysis in this lesson: it stays at `input-required`, as our task did after
# step 5. In step 11 you answer such a task yourself.
#
# ## Step 9. Whose task is it?
#
# A task belongs to the requester that created it. The desk knows who that is from the request's
# reply topic: `$a2a/v1/reply/acme/support/coordinator/...` names the coordinator (and on a broker
# with a password per agent, lesson 08, nobody else may read replies there). Anyone else asking about
# the coordinator's task, to the desk or to the analyst, gets the answer for a task that does not
# exist ([-32001](glossary.md#Error-codes)), and their `ListTasks` does not show it. The same holds
# for `CancelTask`, `SubscribeToTask` and a message continuing the task.

# %%
from a2a_nb import A2AError

stranger = Requester("stranger")
refusals = {}
for agent in ("ticket-desk", coordinator.routing.target(reply.task_id).agent):
    try:
        stranger.get_task(reply.task_id, to=agent)
    except A2AError as err:
        refusals[agent] = err.code
        print(f"stranger's GetTask at {agent}: error {err.code}: {err.message}")
print("tasks the stranger can list:   ", len(stranger.list_tasks("ticket-desk")["tasks"]))
print("tasks the coordinator can list:", len(coordinator.list_tasks("ticket-desk")["tasks"]))
stranger.close()
as_described(said("to the desk or to the analyst, gets the answer for a task that does not exist (-32001)",
                  list(refusals.values()), [-32001, -32001]))

# %% [markdown]
# ## Step 10. Try it yourself: a send form
#
# This form is live: it sends with the coordinator of this notebook, to the agents of this notebook.
# After *Run All* it shows the ticket's text in its message box and no events yet: nothing has been
# sent from it. Pick an agent, type, click **Send**; each reply or event appears under the button as
# it arrives. With *stream* ticked the form uses `SendStreamingMessage` and shows each state as the
# task enters it; when a task stops at input-required, tick *continue the last task* and send the
# answer. (Reopened later without a running kernel, the form says so: run the cell again to use it.)

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook import send_form

form = send_form(coordinator, ["ticket-desk", "echo"])
form.text.value = TICKET_TEXT
form

# %%
as_described(
    said("it shows the ticket's text in its message box", form.text.value, TICKET_TEXT),
    said("and no events yet", len(form.lines), 0),
)

# %% [markdown]
# ## Step 11. Your turn
#
# **Send the answer yourself.** The cell below asks the desk for one more analysis of the ticket (a
# new task, blocking, as in step 5): it stops at input-required, and `waiting` is the reply that
# asked. Replace the `...` with the request that answers it: the reproduction steps (`REPRO_TEXT`)
# as new input on **that** task, sent with the coordinator. The check then asks the desk whether the
# task got your message and completed. (Each run of the cell starts a fresh task to answer.)

# %%
from a2a_nb.notebook.exercises import lesson02

waiting = coordinator.send("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
answer = ...   # your answer: send REPRO_TEXT on waiting's task; keep what the coordinator returns
lesson02.answered_on_the_same_task(answer, waiting, coordinator)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
waiting = coordinator.send("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
answer = coordinator.continue_task(waiting, REPRO_TEXT)
reference(lesson02.answered_on_the_same_task(answer, waiting, coordinator))


# %% [markdown]
# ## Step 12. Clean up, when you are done with the form
#
# The form needs the agents and the coordinator, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done (the form then stops working), or shut the kernel
# down (*Kernel ▸ Shut Down Kernel*): the broker then marks the agents offline by their
# [last will](glossary.md#Last-Will).

# %%
def clean_up():
    """Stop the agents and close this notebook's MQTT sessions (the form above stops working)."""
    desk.stop()
    echo.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the form above: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - The coordinator makes the `Task.id` (UUIDv4) and names the `contextId` after the ticket; each
#   `messageId` embeds the ticket and is reused only for a verbatim resend.
# - A request is a JSON-RPC payload on the agent's request topic, with *Response Topic* and
#   *Correlation Data*; the reply comes back on the reply topic with the same Correlation Data.
# - Echo answers with a Message; the desk answers with a Task. `a2a-responder-agent-id` on a reply
#   hands the task over to another agent, and the routing table follows it.
# - `INPUT_REQUIRED` is answered on the same task with a new message; `GetTask` with backoff tracks
#   a task to a terminal state; the report is an Artifact, the conclusion the status message.
# - A task starts `submitted`; a blocking send shows only where it stops, a stream shows every state.
# - A task belongs to its requester: to anyone else it does not exist.
#
# ## What's next
# [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb): the same ticket with
# `SendStreamingMessage`, where every status change and every report chunk arrives as its own event
# (the send form above already shows it; tick *stream*).

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
# `SendMessage` request over MQTT, a reply matched by **Correlation Data**, a **task** that pauses
# for input, a follow-up on the same task, and `GetTask` until the task is done.
#
# ## What you will learn
# - the identifier conventions: a `contextId` named after the ticket, `messageId`s that embed it,
#   and a `Task.id` the requester makes;
# - what a request looks like on the wire, built *before* sending: topic, MQTT v5 properties,
#   JSON-RPC payload;
# - the two kinds of result: a `Message` (echo) and a `Task` (the desk);
# - answering `INPUT_REQUIRED` on the same task and tracking it with `GetTask` and backoff;
# - the JSON payload next to the MQTT properties of a reply;
# - the eight task states and what the coordinator does in each.
#
# ## Time needed
# About 20 minutes. The notebook runs in a few seconds.
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
from a2a_nb.agents import Requester, Responder
from a2a_nb.notebook.display import mqtt_side_by_side_html, publish_bytes_html
from a2a_nb.protocol import IdSource, MqttMessage, encode_json, ids, jsonrpc, messages, states, topics
from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
desk = TicketDesk(handover="first-reply", seed=4821)
echo = Responder("echo", echo_handler, card=echo_card())
coordinator = Requester("coordinator", seed=4821)
print(coordinator)

# %% [markdown]
# ## Step 2. Identifiers that tell the story
#
# Two decisions are made now and never changed:
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
# - the **MQTT v5 properties**: a *Response Topic* (where to answer), *Correlation Data* (the 32 hex
#   digits of 16 random bytes, sent as text: they come back with the reply and match it to this
#   request; any bytes would do, but text is what other implementations can read) and a *Message Expiry
#   Interval* (a request nobody takes in time is dropped by the broker);
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
print("Correlation Data", preview.correlation_data.decode())
print("Message Expiry  ", preview.message_expiry, "s")
print("user properties ", preview.user_properties or "none")
print(json.dumps(envelope, indent=2))

# %% [markdown]
# On the wire this is one MQTT v5 **PUBLISH** packet. `a2a_nb.mqtt.wire` spells it out piece by
# piece: the fixed header (packet type, QoS, how many bytes follow), the topic, the packet
# identifier that the broker's PUBACK will name, the properties (each an identifier byte, then its
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
# The reply came from `analyst-1`, not from the desk: it carries the user property
# `a2a-responder-agent-id`. That is a **handover**: the coordinator's routing table now sends
# everything about this task to the analyst's own request topic.

# %%
print("follow-ups go to:", coordinator.routing.target(reply.task_id).topic)
pd.DataFrame(coordinator.routing.history_rows())[["from", "to", "cause", "detail"]]

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

# %% [markdown]
# Tracking without a stream means **GetTask with backoff**: ask, wait 0.2 s, ask, wait 0.4 s, 0.8 s,
# ... (at most 2 s between two asks) until the task is terminal. Each ask is this small request:

# %%
print(json.dumps(jsonrpc.request(jsonrpc.GET_TASK, messages.get_task_params(reply.task_id), id="req-103"),
                 indent=2))

# %%
sent_before = coordinator.stats.sent
final = coordinator.poll(reply.task_id, until=states.is_terminal, interval_s=0.2, max_interval_s=2.0)
print("final state:", final["status"]["state"])

# %% [markdown]
# How many asks it took depends on your machine's speed (this cell's output changes from run to run):

# %% tags=["nbval-ignore-output"]
print(f"GetTask requests sent: {coordinator.stats.sent - sent_before}")

# %% [markdown]
# The result comes in two layers: the **Artifact** (the structured report, streamed in chunks that
# the task assembled by `artifactId`) and the **status message** (the conclusion for the user).

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
# A reply is two things at once. The **JSON payload** is pure A2A: a JSON-RPC response whose
# `result` holds the Task. The **MQTT v5 packet** is what the binding adds: it arrived on the
# coordinator's reply topic, with the Correlation Data of the request it answers, and with the
# user property that announced the handover. `reply.mqtt` is that packet as a plain value.

# %%
packet = reply.mqtt
print("topic:            ", packet.topic)
print("Correlation Data: ", packet.correlation_data.decode())
print("sent with request:", reply.attempts[-1].correlation == packet.correlation_data.hex())
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

pd.DataFrame([
    {"state": s, "short name": states.short_name(s), "group": group(s),
     "ends a stream": states.ends_stream(s), "coordinator does": ACTION[s]}
    for s in ACTION
])

# %% [markdown]
# Our task went `working` → `input-required` → `working` → `completed`. A terminal task never changes
# again: to analyse the ticket once more, the coordinator starts a **new task in the same context**.
#
# ## Step 9. Whose task is it?
#
# A task belongs to the requester that created it. The desk knows who that is from the request's
# reply topic: `$a2a/v1/reply/acme/support/coordinator/...` names the coordinator (and on a broker
# with a password per agent, lesson 08, nobody else may read replies there). Anyone else asking about
# the coordinator's task, to the desk or to the analyst, gets the answer for a task that does not
# exist (-32001), and their `ListTasks` does not show it. The same holds for `CancelTask`,
# `SubscribeToTask` and a message continuing the task.

# %%
from a2a_nb.protocol.errors import A2AError

stranger = Requester("stranger")
for agent in ("ticket-desk", coordinator.routing.target(reply.task_id).agent):
    try:
        stranger.get_task(reply.task_id, to=agent)
    except A2AError as err:
        print(f"stranger's GetTask at {agent}: error {err.code}: {err.message}")
print("tasks the stranger can list:   ", len(stranger.list_tasks("ticket-desk")["tasks"]))
print("tasks the coordinator can list:", len(coordinator.list_tasks("ticket-desk")["tasks"]))
stranger.close()

# %% [markdown]
# ## Step 10. Try it yourself: a send form
#
# Pick an agent, type, send. With *stream* ticked the form uses `SendStreamingMessage` and shows every
# event as it arrives; when a task stops at input-required, tick *continue the last task* and send
# the answer. (Live output: the stored notebook shows a snapshot.)

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook import send_form

form = send_form(coordinator, ["ticket-desk", "echo"])
form.text.value = TICKET_TEXT
form


# %% [markdown]
# ## Step 11. Clean up, when you are done with the form
#
# The form needs the agents and the coordinator, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done (the form then stops working), or shut the kernel
# down (*Kernel ▸ Shut Down Kernel*): the broker then marks the agents offline by their last will.

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
# - A task belongs to its requester: to anyone else it does not exist.
#
# ## What's next
# [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb): the same ticket with
# `SendStreamingMessage`, where every status change and every report chunk arrives as its own event
# (the send form above already shows it; tick *stream*).

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
# # 00 · Start here: the broker, the cast and the topic model
#
# This kit teaches the **A2A protocol v1.0** (Agent2Agent) carried over **MQTT v5**, following the
# *A2A over MQTT* profile. Every lesson tells a piece of one story: a **coordinator** agent, facing a
# user, hands support ticket **TCK-4821** ("order status not updating after checkout") to a
# **ticket-analysis agent**, and follows the task until the root cause comes back. Underneath runs a
# real Eclipse Mosquitto broker: everything you see in these notebooks really crossed it.
#
# ## What you will learn
# - where the kit's broker comes from (its own Mosquitto, or the one `A2A_BROKER_URL` names) and how
#   to check that it answers;
# - who the agents of the story are and which MQTT client IDs they use;
# - the topic model of the profile: discovery, request, reply, event and pool topics;
# - how the lessons are organised.
#
# ## Time needed
# About 10 minutes. Run All takes under 2 seconds.
#
# ## Prerequisites
# - Python basics (functions, dicts, `print`). No MQTT or A2A knowledge is needed.
# - Run the cells from top to bottom (Shift+Enter, or *Run > Run All Cells*).

# %% [markdown]
# ## Step 1. The broker
#
# MQTT is publish/subscribe: clients never talk to each other directly, they publish messages to
# **topics** on a **broker**, and the broker forwards each message to every client subscribed to a
# matching topic filter. The kit needs one MQTT v5 broker:
#
# - if the environment variable `A2A_BROKER_URL` is set (`mqtt://host:port`), the kit uses that
#   broker (this is what Binder and the test suite do);
# - otherwise it starts its own Mosquitto on a free port of `127.0.0.1` and stops it when the kernel
#   exits. You never start a broker by hand.
#
# `broker.resolve()` answers the question "which broker?" with the broker's URL, whichever way the
# kit found it. On your machine the port differs (a free port is picked each time), and so does the
# host if `A2A_BROKER_URL` names a broker elsewhere. In a terminal, `echo $A2A_BROKER_URL` tells you
# which case is yours (an empty line: the kit's own Mosquitto).

# %%
import a2a_nb
from a2a_nb.mqtt import broker

endpoint = broker.resolve()
print("broker URL:", endpoint.url)

# %% [markdown]
# The `?inflight=0` after the port is not part of the address: it tells the kit's MQTT client how
# many [QoS 1](glossary.md#QoS-1) messages it may have on their way at once, still waiting for the
# broker's acknowledgement. The kit's own Mosquitto takes any number, and `0` means "no limit"; a
# broker named by `A2A_BROKER_URL` gets a limit most brokers accept, unless its URL says `?inflight=N`.
#
# Is it answering? A `Session` is one MQTT v5 client. Its client ID follows the profile's pattern
# `{org}/{unit}/{agent}`; the story's organisation is `acme`, its unit `support`.
#
# We publish with QoS 1, so the broker acknowledges every message with a
# [PUBACK](glossary.md#PUBACK-reason-codes) that carries a **reason code**. Code 16, *No matching
# subscribers*, is not an error: the broker took the message but nobody was subscribed to that topic.
# It is the cheapest hint that nobody is listening.

# %%
from a2a_nb import Session, as_described, said
from a2a_nb.protocol import MqttMessage

probe = Session("acme", "support", "lesson-00-probe")
print(probe)

hello = MqttMessage("lessons/00/hello", b"hello, broker", qos=1)
alone = probe.publish(hello)
print("nobody subscribed:", alone.reason_code, alone.reason)

# %%
as_described(said("Code 16, No matching subscribers", (alone.reason_code, alone.reason),
                  (16, "No matching subscribers")))

# %% [markdown]
# Now the probe subscribes to the topic itself and publishes again: the broker takes the message,
# answers *Success*, and delivers it back to the probe.

# %%
probe.subscribe("lessons/00/#")            # a filter: '#' matches any number of levels
heard = probe.publish(hello)
received = probe.receive(timeout=5)
print("with a subscriber:", heard.reason_code, heard.reason)
print("received:", received.topic, received.payload)

# %%
as_described(said("answers Success", heard.reason, "Success"),
              said("delivers it back to the probe", received.payload, hello.payload))

# %% [markdown]
# ## Step 2. The cast
#
# The table shows the four agents of the story: the coordinator, the ticket desk, the analyst the
# desk hands a ticket over to (a [handover](glossary.md#Handover)) and `echo`, a test agent that
# answers with what it gets. Later lessons add others where they need them (agents that fail on
# purpose, a pool of analysts, an intruder) and introduce each one there.
#
# Every agent is an MQTT client with its own client ID. Only agents that want to be found publish a
# [retained](glossary.md#Retained-message) [Agent Card](glossary.md#Agent-Card) (lesson 01); the
# analysts the desk spawns do not: the coordinator learns about them from the replies themselves (a
# [user property](glossary.md#User-property) named `a2a-responder-agent-id`, lesson 02).
#
# The tables are pandas DataFrames. Every lesson that shows them first asks for whole cells
# (`display.max_colwidth`) and for no math (`display.html.use_mathjax`): every A2A topic starts
# with `$`, and JupyterLab would typeset the text between a pair of `$` in a table as a formula.

# %%
import pandas as pd
from a2a_nb.protocol import ids

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math

cast = pd.DataFrame([
    {"agent": "coordinator", "role": "requester (A2A client)", "card": "no",
     "job": "faces the user, picks an agent by skill, sends the ticket, tracks the task"},
    {"agent": "ticket-desk", "role": "responder (A2A server)", "card": "yes, retained",
     "job": "publishes the card; takes each ticket and hands it to one of its analysts"},
    {"agent": "analyst-1", "role": "responder spawned by the desk", "card": "no",
     "job": "finds the root cause; its replies name it, so follow-ups go straight to it"},
    {"agent": "echo", "role": "responder (a test agent)", "card": "yes, retained",
     "job": "answers every message with the same text"},
])
cast["MQTT client ID"] = [ids.client_id("acme", "support", agent) for agent in cast["agent"]]
cast

# %%
as_described(said("the four agents of the story", len(cast), 4))

# %% [markdown]
# Here is the ticket desk, started for real. It runs at most four analysts at once, `analyst-1` to
# `analyst-4`, each with its own client ID and no card. None is connected yet: the desk connects
# one when a ticket needs it and reuses it for the next ticket once it is free, so a burst of tickets
# never opens a connection per ticket.

# %%
from a2a_nb import TicketDesk

desk = TicketDesk()
print(desk.desk)
print("analysts:", [slot.name for slot in desk.slots], "| connected now:", desk.analysts_connected)

# %%
names = [slot.name for slot in desk.slots]
as_described(said("at most four analysts at once", desk.max_analysts, 4),
              said("analyst-1 to analyst-4", (names[0], names[-1]), ("analyst-1", "analyst-4")),
              said("None is connected yet", desk.analysts_connected, 0))

# %% [markdown]
# When all of them are busy, the desk refuses a new ticket before any task exists, with the JSON-RPC
# error [-32004](glossary.md#Error-codes) marked `responder_unavailable`: busy, retry later. The
# same code means something else without that marker: in A2A v1.0, -32004 is *UnsupportedOperation*,
# e.g. a message to a task that has already ended (lesson 04 shows one). The marker in `error.data`
# tells them apart. Filling the desk up takes a burst of tickets (the kit's tests do that), so here
# are both errors, built with `a2a_nb.protocol.errors` and read back with `errors.classify` (nothing
# is sent):

# %%
from a2a_nb.protocol import errors

busy = errors.responder_unavailable(f"ticket-desk is working on {desk.max_analysts} tickets, its capacity; retry later")
ended = errors.unsupported_operation("the task is completed: it takes no more messages")
two_meanings = pd.DataFrame([
    {"error": name, "code": e.code, "error.data": e.data, "means": errors.classify(e).name,
     "retry later?": errors.classify(e).retry_eligible}
    for name, e in (("busy", busy), ("ended", ended))
])
two_meanings

# %%
as_described(said("-32004", set(two_meanings["code"]), {-32004}),
              said("marked responder_unavailable: busy, retry later",
                   (busy.data, errors.classify(busy).retry_eligible), ({"a2a_error": "responder_unavailable"}, True)),
              said("-32004 is UnsupportedOperation", errors.classify(ended).name, "UnsupportedOperation"))

# %% [markdown]
# ## Step 3. The topic model
#
# The profile puts everything under `$a2a/v1/`, then a **kind**, then `{org}/{unit}` and the agent.
# `a2a_nb.protocol.topics` builds each name and checks every identifier, so a stray `/` can never
# add a level. These are pure functions: nothing is sent.

# %%
from a2a_nb.protocol import IdSource, topics

ORG, UNIT = "acme", "support"
reply_suffix = IdSource().reply_suffix()   # a requester draws one per reply topic, always at random

topic_model = pd.DataFrame([
    ("discovery", topics.discovery_topic(ORG, UNIT, "ticket-desk"),
     "ticket-desk (its card, retained)", "whoever looks for agents"),
    ("discovery filter", topics.discovery_filter(ORG, UNIT), "",
     "the coordinator: every card of the unit"),
    ("request", topics.request_topic(ORG, UNIT, "ticket-desk"), "coordinator", "ticket-desk"),
    ("request after a handover", topics.request_topic(ORG, UNIT, "analyst-1"), "coordinator",
     "analyst-1"),
    ("reply", topics.reply_topic(ORG, UNIT, "coordinator", reply_suffix), "ticket-desk, analysts",
     "coordinator"),
    ("event", topics.event_topic(ORG, UNIT, "ticket-desk"), "ticket-desk", "whoever follows its events"),
    ("pool request", topics.pool_topic(ORG, UNIT, "analysts"), "coordinator", ""),
    ("pool subscription", topics.shared_pool_subscription(ORG, UNIT, "analysts"), "",
     "each analyst of a pool (one of them gets each request)"),
], columns=["kind", "topic", "published by", "subscribed by"])
topic_model

# %% [markdown]
# The parser reads a topic back, and the builders refuse identifiers that would change the topic's
# structure:

# %%
print(topics.parse_topic(topics.reply_topic(ORG, UNIT, "coordinator", reply_suffix)))

try:
    topics.request_topic(ORG, UNIT, "ticket/desk")
except ids.InvalidIdentifier as exc:
    print(exc)

# %% [markdown]
# One MQTT rule surprises everybody once: a filter that starts with a wildcard (`#` or `+`) does
# **not** match topics that start with `$`. A client subscribed to `#` sees none of the A2A traffic;
# it must subscribe to `$a2a/#`. The PUBACK reason code shows it on the real broker: *No matching
# subscribers* while the probe holds only `#`, *Success* once it holds `$a2a/#`
# (`retain_handling=2` skips messages other lessons left retained on the broker):

# %%
a2a_topic = topics.event_topic(ORG, UNIT, "lesson-00-probe")

probe.subscribe("#", retain_handling=2)
only_hash = probe.publish(MqttMessage(a2a_topic, b"ping")).reason
print("subscribed to '#':      ", only_hash)
probe.subscribe("$a2a/#", retain_handling=2)
with_a2a = probe.publish(MqttMessage(a2a_topic, b"ping")).reason
print("subscribed to '$a2a/#': ", with_a2a)

# %%
as_described(said("No matching subscribers while the probe holds only #", only_hash, "No matching subscribers"),
              said("Success once it holds $a2a/#", with_a2a, "Success"))

# %% [markdown]
# ## Step 4. How the lessons work
#
# | lesson | in the story |
# |---|---|
# | **00 · Start here** (this one) | the broker, the cast, the topics |
# | [01 · Discovery](01-discovery.ipynb) | the coordinator finds the ticket desk by a skill tag in its retained Agent Card, and watches agents go offline and online |
# | [02 · Send and track](02-send-and-track.ipynb) | it sends ticket TCK-4821, the analyst asks for reproduction steps (INPUT_REQUIRED), the coordinator answers on the same task and follows it with GetTask to COMPLETED |
# | [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) | the report arrives event by event, chunk by chunk, assembled by artifactId; binary chunks |
# | [04 · Input required](04-input-required.ipynb) | the pause for reproduction steps, answered on the same task; a new turn in the same context |
# | [05 · Handover](05-handover.ipynb) | the desk hands the task to a spawned analyst; the [routing table](glossary.md#Routing-table) follows `a2a-responder-agent-id`; its three failure cases |
# | [06 · Recovery](06-recovery.ipynb) | timeouts, dropped streams, polling, cancel past the time limit, an unreachable analyst |
# | [07 · Traffic analysis](07-traffic-analysis.ipynb) | the whole story's recording in pandas, charts, a sequence diagram, profile checks, a step-through player |
# | [08 · Security](08-security.ipynb) | a secured broker (TLS, a password per agent, ACLs), an intruder with a stolen password, bearer tokens the desk checks, and why both are needed |
# | [09 · Two bindings, one agent](09-two-bindings.ipynb) | the same TCK-4821 task over MQTT and over HTTP through a bridge: one JSON-RPC body, the official `a2a-sdk` client, what only MQTT gives |
# | [10 · What the broker sees](10-untrusted-broker.ipynb) | the ticket watched from the broker operator's seat, then sealed end to end (`ubsp-v1`): keys behind a trusted `jwksUri`, a replayed request refused |
# | [11 · The conformance probe](11-conformance-probe.ipynb) (appendix, after 07) | the story's desk and a careless agent checked rule by rule against the profile: what the probe sends, its report, its exit status for CI |
#
# Every lesson has the same frame: *What you will learn*, *Time needed*, *Prerequisites*, numbered
# steps, a *Summary* and *What's next*; lessons 01-11 end with a step *Your turn*: short exercises
# with a check that tells you whether your answer is right, and under each exercise a reference
# answer, folded away: click it open once you have tried. Each lesson starts the agents it needs,
# so you can open any lesson on its own and run it top to bottom. *Run All* leaves them running,
# so the widgets and the exercises still work when you come back to them: the last step of each
# lesson defines `clean_up()`, for you to call when you are done (or shut the kernel down).
# Lesson 07 opens no connection at all: it replays a recording.
#
# Under many outputs a short cell prints one line that starts with `✓ as described:` and quotes
# the text above. It checks the words of the text above against the output it describes, so a
# lesson can never tell you something its output does not show. You can read past these lines; if
# one ever fails, *Run All* stops there and the error names the words and the value that differ.
#
# Words in links, such as [QoS 1](glossary.md#QoS-1), open the [glossary](glossary.md) at their
# entry: one short page with every term the lessons use and the lesson that shows it.
#
# The whole story, as the walkthrough tells it (the lessons follow it step by step):
#
# ```mermaid
# sequenceDiagram
#     participant U as User
#     participant C as Coordinator (A2A client)
#     participant D as Ticket desk (A2A server, with a card)
#     participant S as Analyst (spawned by the desk, no card)
#     U->>C: "What is wrong with this ticket?"
#     C->>D: read the desk's retained Agent Card (discovery)
#     C->>D: SendMessage (analysis request, messageId coord-tck4821-m-1)
#     D->>S: hands the ticket over
#     S-->>C: Task(WORKING), a2a-responder-agent-id names the analyst
#     S-->>C: Task(INPUT_REQUIRED): missing reproduction steps
#     C->>S: SendMessage (supplement, messageId coord-tck4821-m-2, same taskId and contextId)
#     S-->>C: Task(WORKING)
#     S-->>C: Artifact: structured report (chunked, lastChunk)
#     S-->>C: Task(COMPLETED) + concluding Message
#     C-->>U: Root cause and recommendation
# ```
#
# Good habits: re-running a cell that creates an agent replaces the old MQTT client (one live client
# per client ID), so cells can be run again; *Kernel > Restart Kernel and Run All Cells* gives a
# clean slate.
#
# ## Step 5. Clean up
#
# `a2a_nb.stop_all()` disconnects every MQTT client this kernel opened: here the probe and the desk
# (which first marks its card offline). Every lesson's clean-up ends with it.

# %%
closed = a2a_nb.stop_all()
print(f"closed {closed} MQTT session(s)")
as_described(said("here the probe and the desk", closed, 2))

# %% [markdown]
# ## Summary
# - The kit uses the broker named by `A2A_BROKER_URL`, or starts its own Mosquitto; `broker.resolve()`
#   gives its URL.
# - Every agent is an MQTT v5 client with client ID `{org}/{unit}/{agent}`; QoS 1 publishes return
#   a reason code (16 = nobody subscribed).
# - The desk runs at most four analysts; a ticket beyond that is refused with -32004
#   `responder_unavailable`, and the same code without that marker is A2A's UnsupportedOperation.
# - A2A over MQTT uses `$a2a/v1/{discovery|request|reply|event}/{org}/{unit}/...`; the builders in
#   `a2a_nb.protocol.topics` make and check these names without sending anything.
# - `#` does not match `$a2a/...`: subscribe to `$a2a/#` explicitly.
#
# ## What's next
# [01 · Discovery](01-discovery.ipynb): the ticket desk publishes its Agent Card, and the coordinator
# picks it by skill tag, not by name.

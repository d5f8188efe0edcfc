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
# # 03 · Streaming and artifacts: the report arrives piece by piece
#
# In lesson 02 the coordinator waited for each answer as a whole. A root-cause analysis takes a
# while, and the walkthrough wants no blind wait: with `SendStreamingMessage` every status change
# and every piece of the report arrives as its **own MQTT message** the moment the analyst has it.
# The report is an **Artifact** streamed in chunks; the conclusion for the user is a **Message**.
#
# ## What you will learn
# - how a stream travels over MQTT: one PUBLISH per event on the coordinator's reply topic, all with
#   the [Correlation Data](glossary.md#Correlation-Data) of the one request;
# - the three kinds of stream item (Task snapshot, `TaskStatusUpdateEvent`, `TaskArtifactUpdateEvent`)
#   and which states end a stream;
# - aggregating artifact chunks by `artifactId` (`append`, `lastChunk`) without assuming chunk counts;
# - reading the structured report: data parts as pandas tables, and the text summary;
# - the final Message next to the Artifact, and a stream that is only a Message;
# - the optional native **binary** artifact mode: raw bytes, `a2a-chunk-seqno`, `a2a-last-chunk`,
#   byte-exact reassembly;
# - writing the aggregation rule yourself (the exercise at the end).
#
# ## Time needed
# About 25 minutes. Run All takes under 2 seconds.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb): Task.id, contextId, messageId, Correlation Data,
#   [task states](glossary.md#Task-states).
# - pandas basics (a DataFrame is a table).

# %% [markdown]
# ## Step 1. The agents
#
# The ticket desk again, this time without a [handover](glossary.md#Handover) (`handover="none"`):
# the desk does the analysis itself, so every event of this lesson comes from one agent (handing a
# task over to another agent is lesson 05). The echo agent is here for one comparison in step 6.

# %%
import base64
import csv
import io

import pandas as pd

import a2a_nb
from a2a_nb import Requester, Responder, TicketDesk
from a2a_nb.protocol import messages, properties, states
from a2a_nb.protocol.artifacts import ArtifactSet
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.story import analysis, ticket_data
from a2a_nb.story.cast import REPORT_ID, echo_card, echo_handler
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
desk = TicketDesk(handover="none", seed=4821)
echo = Responder("echo", echo_handler, card=echo_card())
coordinator = Requester("coordinator", seed=4821)
print(desk.desk)
print(coordinator)

# %% [markdown]
# ## Step 2. Start the stream
#
# This time the coordinator already has the reproduction steps and puts them in the first message
# (on a line starting with `Reproduction:`), so the analyst never has to stop and ask (that pause is
# lesson 04).
#
# `coordinator.stream(...)` publishes one `SendStreamingMessage` request and returns as soon as the
# first event is in; iterating over the stream hands out the events one by one as they arrive, and
# the loop ends by itself when the stream ends.

# %%
first = coordinator.new_message(TICKET_TEXT + "\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                                message_id="coord-tck4821-m-1")
print(messages.text_of(first))
print()

stream = coordinator.stream("ticket-desk", message=first)
for event in stream:
    print(event)
print()
print("the stream ended by itself:", stream.done, "| task state:", states.short_name(stream.state))

# %% [markdown]
# The events really arrived one at a time: the analyst waits a little between its steps (`pace`).
# Arrival times after the first event (they change on every run):

# %% tags=["nbval-ignore-output"]
t0 = stream.events[0].mqtt.received_at
print("  ".join(f"+{(e.mqtt.received_at - t0) * 1000:.0f} ms" for e in stream.events))


# %% [markdown]
# ## Step 3. Each event is its own MQTT message
#
# Every item was a separate PUBLISH on the coordinator's reply topic carrying the **same**
# Correlation Data: the one of the request. That is how the coordinator knows they all belong to
# this stream (Streaming Reply Mapping, rules 1-2). A copy delivered twice ([QoS 1](glossary.md#QoS-1)
# allows it) is the same PUBLISH again, byte for byte, so the coordinator drops an item whose payload
# it already has on this Correlation Data. An agent that sends the very same payload twice on purpose
# (one chunk appended twice) numbers the repeat in the [user property](glossary.md#User-property)
# `a2a-stream-seq`, so it is not taken for a copy; no item of this stream repeats another.

# %%
def event_row(ev):
    row = {"kind": ev.kind, "state": states.short_name(ev.state) if ev.state else "",
           "artifact id": "", "append": "", "lastChunk": "", "parts": ""}
    if ev.kind == "artifactUpdate":
        art = ev.data["artifact"]
        row.update({"artifact id": art["artifactId"], "append": ev.data.get("append", False),
                    "lastChunk": ev.data.get("lastChunk", False),
                    "parts": ", ".join("data" if "data" in p else "text" for p in art["parts"])})
    row["Correlation Data"] = readable_correlation(ev.mqtt.correlation_data, 16)
    return row

events = pd.DataFrame([event_row(ev) for ev in stream.events])
events

# %%
print("topics used:       ", set(ev.mqtt.topic for ev in stream.events))
print("correlations used: ", len(set(ev.mqtt.correlation_data for ev in stream.events)))
print("duplicates dropped:", stream.duplicates)

# %%
from a2a_nb import as_described, said

as_described(
    said("Every item was a separate PUBLISH on the coordinator's reply topic",
         {ev.mqtt.topic for ev in stream.events}, {coordinator.reply_topic}),
    said("carrying the same Correlation Data", len({ev.mqtt.correlation_data for ev in stream.events}), 1),
    said("no item of this stream repeats another",
         len({ev.mqtt.payload for ev in stream.events}) == len(stream.events) and stream.duplicates == 0, True),
)

# %% [markdown]
# The first item is a **Task** snapshot (state `submitted`), then `statusUpdate`s and
# `artifactUpdate`s. `lastChunk: true` on the last piece of the report seals the *artifact*; it
# does not end the stream. What ends a stream over MQTT is the state (rules 5-7 of the profile's
# Streaming Reply Mapping): a terminal state, or an interrupted one (`input-required`,
# `auth-required`: the task goes on later, on a new request). A `message` result ends it too.

# %%
enders = pd.DataFrame([
    {"state": states.short_name(s), "terminal": states.is_terminal(s), "ends the stream": states.ends_stream(s)}
    for s in (states.SUBMITTED, states.WORKING, states.INPUT_REQUIRED, states.AUTH_REQUIRED,
              states.COMPLETED, states.FAILED, states.CANCELED, states.REJECTED)
])
enders

# %%
first = stream.events[0]
sealed_at = next(i for i, ev in enumerate(stream.events) if ev.kind == "artifactUpdate" and ev.data.get("lastChunk"))
interrupted_enders = sorted(enders[enders["ends the stream"] & ~enders["terminal"]]["state"])
as_described(
    said("The first item is a Task snapshot (state submitted)", (first.kind, states.short_name(first.state)),
         ("task", "submitted")),
    said("it does not end the stream", sealed_at < len(stream.events) - 1, True),
    said("What ends a stream over MQTT is the state",
         [i for i, ev in enumerate(stream.events) if ev.state and states.ends_stream(ev.state)], [len(stream.events) - 1]),
    said("or an interrupted one (input-required, auth-required", interrupted_enders,
         ["auth-required", "input-required"]),
)

# %% [markdown]
# ## Step 4. Aggregate the chunks by `artifactId`
#
# The coordinator does not know in advance how many chunks a report has, and must not care. It
# keeps one artifact per `artifactId`:
#
# - `append` false or absent: the chunk creates (or replaces) the artifact;
# - `append: true`: the chunk's parts are added to the end;
# - `lastChunk: true`: this artifact is complete.
#
# The stream did exactly that as the events came in; `stream.view` is the task as assembled so far:

# %%
arts = stream.view.artifacts
report = arts.get(REPORT_ID)
print("artifacts:", [a["artifactId"] for a in arts.as_list()])
print("name:     ", report["name"])
print("sealed:   ", arts.is_sealed(REPORT_ID))
pd.DataFrame([
    {"part": i, "kind": "data" if "data" in p else "text",
     "content": ", ".join(p["data"]) if "data" in p else p["text"][:70] + "…"}
    for i, p in enumerate(report["parts"])
])


# %% [markdown]
# Nothing depends on how the agent cut the report. Replaying the same four parts cut into one, two
# or four chunks gives the same artifact every time (`ArtifactSet` is the pure rule the stream uses):

# %%
def replay(cuts):
    assembled, start = ArtifactSet(), 0
    for n, size in enumerate(cuts):
        piece = messages.artifact(REPORT_ID, report["parts"][start:start + size])
        assembled.apply(messages.artifact_update(stream.task_id, CONTEXT_ID, piece, append=n > 0,
                                                 last_chunk=start + size == len(report["parts"])))
        start += size
    return assembled.get(REPORT_ID)["parts"] == report["parts"] and assembled.is_sealed(REPORT_ID)

CUTS = ([4], [2, 2], [1, 3], [1, 1, 1, 1])   # parts per chunk
same = {}
for cuts in CUTS:
    same[len(cuts)] = same.get(len(cuts), True) and replay(cuts)
    print(f"chunks of {cuts}: same report: {replay(cuts)}")

as_described(
    said("the same four parts", len(report["parts"]), 4),
    said("cut into one, two or four chunks", sorted(same), [1, 2, 4]),
    said("gives the same artifact every time", all(same.values()), True),
)

# %% [markdown]
# ## Step 5. Read the report
#
# The report's **data parts** are plain JSON objects; merged, they are the structured report the
# walkthrough promises: root cause, confidence, affected orders, recommended actions.

# %%
data = {}
for piece in arts.data(REPORT_ID):
    data.update(piece)

print("ticket:     ", data["ticket"])
print("confidence: ", data["confidence"])
print("root cause: ", data["rootCause"])

# %% [markdown]
# The affected orders, ready for pandas:

# %%
affected = pd.DataFrame(data["affectedOrders"])
affected

# %%
print("evidence:")
for key, value in data["evidence"].items():
    print(f"  {key}: {value}")
print("recommended actions:")
for n, action in enumerate(data["recommendedActions"], 1):
    print(f"  {n}. {action}")

# %% [markdown]
# And the **text part**, a summary written for people:

# %%
print(arts.text(REPORT_ID))

# %% [markdown]
# ## Step 6. The final Message next to the Artifact
#
# The result comes in layers (walkthrough, section 4): the **Artifact** is the report, for
# programs; the **Message** in the final status is the conclusion, in words, for the user. The
# Message is an agent message (`ROLE_AGENT`) with its own `messageId`, tied to the task and its
# context:

# %%
conclusion = stream.view.status["message"]
print("role:     ", conclusion["role"])
print("messageId:", conclusion["messageId"])
print("same task:", conclusion["taskId"] == stream.task_id, "| contextId:", conclusion["contextId"])
print()
print(messages.text_of(conclusion))

# %% [markdown]
# The agent keeps both in the task, so a coordinator that missed the stream gets the complete
# delivery with one `GetTask`, identical to what the stream assembled:

# %%
task = coordinator.get_task(stream.task_id)
print("state:                    ", states.short_name(task["status"]["state"]))
print("same report as assembled: ", task["artifacts"] == arts.as_list())
print("same conclusion:          ", task["status"]["message"] == conclusion)

# %% [markdown]
# Not every answer is a task. A stateless agent such as echo answers with a **Message** alone: no
# Task.id to track, no artifacts, nothing to ask for later. In a stream, such a Message is the one
# and only item, and it ends the stream.

# %%
hello = coordinator.send("echo", "is anybody there?")
print("result holds:", list(hello.result))
print("role:        ", hello.message["role"])
print("text:        ", hello.text)

echoed = coordinator.stream("echo", "is anybody there? (streamed)")
for event in echoed:
    print("stream item: ", event.kind, "|", messages.text_of(event.data))
print("stream ended:", echoed.done)

as_described(
    said("such a Message is the one and only item, and it ends the stream",
         ([ev.kind for ev in echoed.events], echoed.done), (["message"], True)),
)

# %% [markdown]
# ## Step 7. Binary artifacts: raw bytes instead of base64
#
# JSON is the baseline: bytes travel as base64 in a `raw` part, a third bigger than the bytes. The
# profile has an optional **native binary artifact mode**: the requester asks for it with the user
# property `a2a-artifact-mode: binary`, and the responder may then publish each chunk as the raw
# bytes themselves, the artifact's identity moving into user properties:
#
# | user property | value |
# |---|---|
# | `a2a-event-type` | `task-artifact-update` |
# | `a2a-task-id`, `a2a-context-id` | the task's ids |
# | `a2a-artifact-id` | the artifact |
# | `a2a-chunk-seqno` | 0, 1, 2, ... |
# | `a2a-last-chunk` | `true` on the last chunk |
#
# plus *Payload Format Indicator* 0 (bytes) and the media type as *Content Type*.
#
# A small agent shows it: it exports the affected orders of the report as CSV, in chunks of at most
# 96 bytes. Its handler calls `ctx.chunk(...)` for each piece; the kit sends raw bytes to requesters
# that asked for binary and base64 JSON to the others.

# %%
report_data = analysis.analyse(ticket_data.load(), "TCK-4821", REPRO_TEXT)
out = io.StringIO()
writer = csv.DictWriter(out, fieldnames=list(report_data["affectedOrders"][0]), lineterminator="\n")
writer.writeheader()
writer.writerows(report_data["affectedOrders"])
CSV = out.getvalue().encode()
CHUNK = 96

def export_orders(ctx):
    ctx.working("exporting the affected orders as CSV")
    for start in range(0, len(CSV), CHUNK):
        ctx.chunk("tck-4821-orders.csv", CSV[start:start + CHUNK], content_type="text/csv",
                  last=start + CHUNK >= len(CSV))
    ctx.complete(f"exported {len(report_data['affectedOrders'])} orders")

exporter = Responder("order-export", export_orders)
print(f"the CSV: {len(CSV)} bytes, so {-(-len(CSV) // CHUNK)} chunks")

# %%
binary = coordinator.stream("order-export", "Export the affected orders of TCK-4821", artifact_mode="binary")
for event in binary:
    print(event, event.data if event.kind == "binaryChunk" else "")


# %% [markdown]
# Each `binaryChunk` is an MQTT message whose payload is the bytes themselves. Its properties:

# %%
def chunk_row(ev):
    m = ev.mqtt
    return {"payload bytes": len(m.payload), "Payload Format": m.payload_format, "Content Type": m.content_type,
            **{k: m.user_property(k) for k in (properties.EVENT_TYPE, properties.ARTIFACT_ID,
                                               properties.CHUNK_SEQNO, properties.LAST_CHUNK)}}

chunks = pd.DataFrame([chunk_row(ev) for ev in binary.events if ev.kind == "binaryChunk"])
chunks

# %%
as_described(
    said("in chunks of at most 96 bytes", chunks["payload bytes"].max(), 96),
    said("Payload Format Indicator 0 (bytes)", set(chunks["Payload Format"]), {0}),
    said("base64 in a raw part, a third bigger than the bytes", len(base64.b64encode(CSV)) / len(CSV), 4 / 3,
         within=1.02),
)

# %% [markdown]
# Reassembly goes by `a2a-chunk-seqno`, not by arrival order: chunks that arrive out of order or
# twice are put in place or dropped, and the artifact is complete once the last chunk and every
# chunk before it are in. The bytes come out exactly as they went in:

# %%
received = binary.view.binary["tck-4821-orders.csv"]
print("complete:", received.complete, "| missing:", received.missing)
print("byte-exact:", received.data() == CSV)
print()
print(received.data().decode())

# %% [markdown]
# The same export without `artifact_mode`: JSON mode, base64 in `raw` parts. Same bytes at the end,
# more bytes on the wire:

# %%
as_json = coordinator.stream("order-export", "Export the affected orders of TCK-4821 (JSON)")
as_json.wait()
csv_artifact = as_json.view.artifacts.get("tck-4821-orders.csv")
decoded = b"".join(base64.b64decode(p["raw"]) for p in csv_artifact["parts"])
print("first part:", {k: (v[:24] + "…" if k == "raw" else v) for k, v in csv_artifact["parts"][0].items()})
print("byte-exact:", decoded == CSV)

def wire_bytes(s, kind):
    return sum(len(e.mqtt.payload) for e in s.events if e.kind == kind)

print(f"artifact bytes on the wire: binary {wire_bytes(binary, 'binaryChunk')}, "
      f"JSON {wire_bytes(as_json, 'artifactUpdate')}")

# %% [markdown]
# Base64 alone makes the bytes a third bigger (step 7); most of the difference is the JSON each
# chunk travels in: the JSON-RPC envelope, the task's ids, the artifact's id and name, once per
# chunk. A binary chunk carries those in user properties, and its payload is the bytes alone.

# %%
as_described(
    said("Base64 alone makes the bytes a third bigger", len(base64.b64encode(CSV)) / len(CSV), 4 / 3, within=1.02),
    said("most of the difference is the JSON each chunk travels in",
         wire_bytes(as_json, "artifactUpdate") - len(base64.b64encode(CSV)) > len(base64.b64encode(CSV)) - len(CSV), True),
    said("its payload is the bytes alone", wire_bytes(binary, "binaryChunk"), len(CSV)),
)

# %% [markdown]
# ## Step 8. Your turn
#
# **Write the aggregation rule.** Complete `add_chunk(artifacts, update)`: `artifacts` is a dict
# *artifactId → list of parts*, `update` is one `TaskArtifactUpdateEvent` (the `data` of an
# `artifactUpdate` event, with `artifact`, `append` and `lastChunk`). Apply it as step 4 says: a
# chunk with `append: true` adds its parts to the end of its artifact's list; without it the chunk
# creates, or replaces, the artifact (`lastChunk` only seals an artifact: a list of parts can leave it
# aside). The check runs your rule over this lesson's stream, then over chunks it cuts differently
# (two artifacts interleaved, one replaced) and compares each result with the kit's.

# %%
from a2a_nb.notebook.exercises import lesson03


def add_chunk(artifacts, update):
    ...   # your answer: put update's parts under its artifactId in artifacts


lesson03.aggregation_rule(add_chunk, stream)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
def add_chunk(artifacts, update):
    artifact = update["artifact"]
    before = artifacts.get(artifact["artifactId"], []) if update.get("append") else []
    artifacts[artifact["artifactId"]] = before + artifact["parts"]


reference(lesson03.aggregation_rule(add_chunk, stream))


# %% [markdown]
# ## Step 9. Clean up, when you are done
#
# *Run All* leaves the agents running, so the exercise above still works when you come back to it:
# this cell only defines `clean_up()`. Call it when you are done.

# %%
def clean_up():
    """Stop the agents and the exporter, and close this notebook's MQTT sessions."""
    desk.stop()
    echo.stop()
    exporter.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - `SendStreamingMessage` over MQTT: every event is its own PUBLISH on the reply topic, with the
#   request's Correlation Data; a copy delivered twice is the same payload again and is dropped.
# - A stream ends at a terminal state, at `input-required` / `auth-required`, or with a Message
#   result; `lastChunk` only seals an artifact.
# - Artifacts are aggregated by `artifactId` (`append` extends, no `append` creates or replaces,
#   `lastChunk` seals), whatever the number of chunks.
# - The Artifact is the structured report (data parts, text part); the Message in the final status
#   is the conclusion for the user; `GetTask` returns both.
# - Binary mode (`a2a-artifact-mode: binary`) sends raw bytes with `a2a-chunk-seqno` and
#   `a2a-last-chunk`; reassembly by sequence number is byte-exact.
#
# ## What's next
# [04 · Input required](04-input-required.ipynb): the same stream without the reproduction steps,
# the analyst's pause, and the coordinator's answer on the same task.

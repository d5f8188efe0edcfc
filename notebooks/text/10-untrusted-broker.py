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
# # 10 · What the broker sees: end-to-end sealed payloads ([ubsp-v1](glossary.md#ubsp-v1))
#
# Every lesson so far trusted the broker: whoever runs it can read every ticket, every report, and
# could answer in the desk's name. In this lesson you sit in the broker operator's seat and watch
# ticket TCK-4821 twice: once as before, once under the profile's optional **untrusted-broker
# security profile**, `ubsp-v1`, where the coordinator and the desk seal every payload for each
# other. Then you play the operator who tries to replay a sealed request, and to send it to another
# agent.
#
# ## What you will learn
# - what a broker operator can read of ordinary A2A traffic, and what stays readable under `ubsp-v1`
#   (topics, [Correlation Data](glossary.md#Correlation-Data), [user properties](glossary.md#User-property));
# - how an agent says where its public keys are (its [Agent Card](glossary.md#Agent-Card) names a
#   [`jwksUri`](glossary.md#jwksUri)) and why a key is believed only when a trusted HTTPS host serves it;
# - a sealed payload: a [JWE](glossary.md#JWE) only the recipient can open, holding a signature only the sender can make;
# - why a replayed or re-addressed request is refused with
#   [-32005 `transport_protocol_error`](glossary.md#Error-codes).
#
# ## Time needed
# About 10 minutes. Run All takes under 3 seconds.
#
# ## Prerequisites
# - The ticket story with its question and its [handover](glossary.md#Handover) to an analyst:
#   lessons [04 · Input required](04-input-required.ipynb) and [05](05-handover.ipynb).
# - [08 · Security](08-security.ipynb): TLS and certificates, bearer tokens.

# %% [markdown]
# ## Step 1. The operator's seat
#
# The operator of a broker can subscribe to `$a2a/#` like any recorder. This lesson works in the unit
# `vault` of its own. The operator records it while the desk and the coordinator work the ticket the
# usual way. Nothing stops it: the operator can read every ticket.

# %%
import base64

import a2a_nb
from a2a_nb import Recorder, Requester, TicketDesk, as_described, said
from a2a_nb.protocol import properties
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from a2a_nb.traffic.records import from_record

UNIT = "vault"
operator = Recorder(org_filter=f"$a2a/v1/+/acme/{UNIT}/#").start()
desk = TicketDesk(unit=UNIT, pace=0.0)
coordinator = Requester("coordinator", unit=UNIT)
stream = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT)
events = list(stream)
operator.wait_idle(0.2)   # the recorder reads on its own connection: let it catch up


def exchanged(records):
    """The recorded requests and replies (cards and events left on the broker are not counted)."""
    return [r for r in records if "/request/" in r["topic"] or "/reply/" in r["topic"]]


def readable(records):
    """The recorded requests and replies whose payload names the ticket, as the operator reads them."""
    return [r for r in exchanged(records)
            if "TCK-4821" in str(r.get("payload_json")) + base64.b64decode(r.get("payload_b64") or "").decode("latin-1")]


plain = readable(operator.records)
print("the task ended", stream.state)
print("requests and replies the operator can read that name TCK-4821:", len(plain), "of",
      len(exchanged(operator.records)))
print("one of them:", str(plain[-1]["payload_json"])[:150], "...")

# %%
as_described(
    said("the desk and the coordinator work the ticket the usual way", stream.state, "TASK_STATE_COMPLETED"),
    said("the operator can read every ticket", len(plain) > 0, True),
)

# %% [markdown]
# ## Step 2. Keys, and a place both sides trust
#
# Under `ubsp-v1` each agent has two key pairs: one to sign what it sends, one others encrypt to. The
# public halves are served over HTTPS by a key server; the card only *points* to them (`jwksUri`).
# Why not put the keys in the card? The operator can replace a [retained](glossary.md#Retained-message)
# card, but cannot serve keys
# from a host the agents trust with a certificate from their CA. Here the key server is a small one
# on this machine with the kit's own CA, and `trust` believes that host only.

# %%
from a2a_nb.ubsp.key_server import KeyServer
from a2a_nb.ubsp.keys import AgentKeys
from a2a_nb.ubsp.protection import Ubsp

keys = KeyServer()
desk_keys, coordinator_keys = AgentKeys("ticket-desk"), AgentKeys("coordinator")
for k in (desk_keys, coordinator_keys):
    keys.publish(f"acme/{UNIT}/{k.agent}", k.public_jwks())
trust = keys.trust()
print(keys)
print("trusted hosts:", trust.allowed_hosts, " inline keys trusted:", trust.trust_inline)
print("the desk's public keys:", [(k["kid"], k["use"]) for k in desk_keys.public_jwks()["keys"]])

# %%
as_described(
    said("each agent has two key pairs: one to sign what it sends, one others encrypt to",
         sorted(k["use"] for k in desk_keys.public_jwks()["keys"]), ["enc", "sig"]),
    said("trust believes that host only", trust.allowed_hosts, (keys.host_port,)),
)

# %% [markdown]
# ## Step 3. The same ticket, sealed
#
# The desk and the coordinator start again, each with its keys, the trust, and where its public
# keys are (`Ubsp(keys, trust, {"jwksUri": ...})`). The desk's card now names its `jwksUri`; the
# coordinator, which has no card, announces its own on its event topic. The story runs as in lesson
# 04: the desk hands the ticket to an analyst, who asks for the reproduction steps.

# %%
desk.stop()
coordinator.close()
mark = len(operator.records)

desk = TicketDesk(unit=UNIT, pace=0.0,
                  ubsp=Ubsp(desk_keys, trust, {"jwksUri": keys.url_for(f"acme/{UNIT}/ticket-desk")}))
coordinator = Requester("coordinator", unit=UNIT,
                        ubsp=Ubsp(coordinator_keys, trust, {"jwksUri": keys.url_for(f"acme/{UNIT}/coordinator")}))
stream = coordinator.stream("ticket-desk", TICKET_TEXT)
events = list(stream)
analyst = coordinator.target_of(stream.task_id).agent
answer = coordinator.continue_task(stream, REPRO_TEXT, stream=True)
report = list(answer)
operator.wait_idle(0.2)
print("first stream ended", stream.state, "- then the steps went to", analyst)
print("the follow-up ended", answer.state, "with", sum(e.kind == "artifactUpdate" for e in report), "report chunks")

sealed = exchanged(operator.records[mark:])
print("requests and replies the operator recorded:", len(sealed))
print("content types:", sorted({r["content_type"] for r in sealed}))
print("of them naming TCK-4821:", len(readable(sealed)))

# %%
as_described(
    said("the desk hands the ticket to an analyst", analyst.startswith("analyst-"), True),
    said("who asks for the reproduction steps", stream.state, "TASK_STATE_INPUT_REQUIRED"),
    said("The story runs as in lesson 04", answer.state, "TASK_STATE_COMPLETED"),
)

# %% [markdown]
# ## Step 4. What the operator still reads
#
# The payloads are JWE texts: five base64 parts joined by dots, and none of them names the ticket.
# What the broker needs to route stays readable: the topic, the Correlation Data and the user
# properties. A sealed request says which profile it uses, who sent it and for whom it is sealed; a
# sealed reply names the requester and the responder.

# %%
first = from_record(sealed[0])
print("topic:       ", first.topic)
print("content type:", first.content_type)
print("payload:     ", first.payload[:60].decode(), "...", first.payload.count(b"."), "dots")
for key, value in first.user_properties:
    print(f"  {key} = {value}")
frame = operator.frame()
ours = frame[(frame["unit"] == UNIT) & frame["kind"].isin(["request", "reply"])]
print(ours.tail(3)[["kind", "from_agent", "to_agent", "event", "method", "task_id"]].to_string(index=False))

# %%
as_described(
    said("The payloads are JWE texts: five base64 parts joined by dots", first.payload.count(b".") + 1, 5),
    said("none of them names the ticket", len(readable(sealed)), 0),
    said("who sent it", first.user_property(properties.REQUESTER_AGENT_ID), "coordinator"),
    said("and for whom it is sealed", first.user_property(properties.RECIPIENT_AGENT_ID), "ticket-desk"),
)

# %% [markdown]
# ## Step 5. The operator replays a request
#
# The operator cannot read the sealed request, but it can publish it again, byte for byte, with new
# Correlation Data, hoping the desk runs the ticket twice. The desk's replay cache remembers every
# `jti` (a unique id inside the sealed content) until the payload expires, so it refuses the copy
# with -32005. Its refusal is sealed to the coordinator; this notebook holds the coordinator's keys,
# so it can read it. The error's message reads *MQTT binding metadata invalid*, the profile's text
# for this error, whose name (in `error.data`, under `a2a_error`) is `transport_protocol_error`.

# %%
import os
import time
from dataclasses import replace

from a2a_nb import Session

intruder = Session("acme", UNIT, "operator")
replay = replace(from_record(sealed[0]), correlation_data=os.urandom(16))   # the same bytes, a new correlation
intruder.publish(replay)
refusal = None
for _ in range(50):
    found = [from_record(r) for r in operator.records if r.get("correlation") == replay.correlation_data.hex()
             and "/reply/" in r["topic"]]
    if found:
        refusal = coordinator.ubsp.read_recorded(found[0], "acme", UNIT).json()["error"]
        break
    time.sleep(0.05)
print("the desk answered:", refusal["code"], refusal["message"])
print("error.data:       ", refusal.get("data"))

# %%
as_described(
    said("it refuses the copy with -32005", refusal["code"], -32005),
    said("The desk's replay cache remembers every jti", "replayed" in refusal["message"], True),
    said("The error's message reads MQTT binding metadata invalid", refusal["message"].split(":")[0],
         "MQTT binding metadata invalid"),
    said("whose name (in error.data, under a2a_error) is transport_protocol_error",
         (refusal.get("data") or {}).get("a2a_error"), "transport_protocol_error"),
)

# %% [markdown]
# ## Step 6. The operator re-addresses a request
#
# The analyst that took over the ticket holds the desk's keys (the desk's keys speak for the analysts
# it spawns), so it *can* open a request sealed for the desk. The operator sends the desk's sealed
# request to the analyst's request topic instead. The analyst refuses it with -32005: the request says
# it is for `ticket-desk`. The operator then also rewrites that user property, which it can read and
# change. The analyst refuses again, because the sealed content names its recipient too, and only the
# coordinator could have signed that.

# %%
from a2a_nb.protocol import topics


def sent_by_operator(message):
    """Publish as the operator, and read the refusal that comes back (sealed to the coordinator)."""
    intruder.publish(message)
    for _ in range(50):
        found = [from_record(r) for r in operator.records if r.get("correlation") == message.correlation_data.hex()
                 and "/reply/" in r["topic"]]
        if found:
            return coordinator.ubsp.read_recorded(found[0], "acme", UNIT).json()["error"]
        time.sleep(0.05)


request = from_record(sealed[0])
moved = replace(request, topic=topics.request_topic("acme", UNIT, analyst), correlation_data=os.urandom(16))
as_addressed = sent_by_operator(moved)
print("sent to", analyst, "as it was:", as_addressed["code"], as_addressed["message"])
relabelled = replace(moved, correlation_data=os.urandom(16),
                     user_properties=tuple((k, analyst if k == properties.RECIPIENT_AGENT_ID else v)
                                           for k, v in moved.user_properties))
relabelled_refusal = sent_by_operator(relabelled)
print("with a2a-recipient-agent-id rewritten:", relabelled_refusal["code"], relabelled_refusal["message"])

# %%
as_described(
    said("The analyst refuses it with -32005", as_addressed["code"], -32005),
    said("the request says it is for `ticket-desk`", request.user_property(properties.RECIPIENT_AGENT_ID),
         "ticket-desk"),
    said("The analyst refuses again", relabelled_refusal["code"], -32005),
    said("the sealed content names its recipient too", "sealed for 'ticket-desk'" in relabelled_refusal["message"],
         True),
)

# %% [markdown]
# ## Step 6b. The operator swaps an answer
#
# The operator cannot forge an answer, but it kept every sealed reply. Could it hand the coordinator the
# answer to an *earlier* request when it asks again? No: every sealed reply and stream item names the
# request it answers (its `jti`, Correlation Data and JSON-RPC id, inside the signed part), so an answer
# captured from one exchange is refused as the answer to another.
#
# **What ubsp-v1 guarantees:** the broker cannot read a payload, change it, forge one in the name of an
# agent whose keys come from a trusted host, replay a request (also after the agent restarts), or answer
# one request with another's reply. **What it does not:** topics, who talks to whom, when and how much,
# Correlation Data and the `a2a-` user properties stay readable; the broker can still drop or delay
# anything, or make a request fail (a refusal may come in plaintext); a stolen agent key or a compromised
# key host defeats it; a retried request may run twice.

# %%
from a2a_nb.ubsp.keys import SealError

coordinator.get_task(stream.task_id)                      # one more sealed exchange: a fresh answer
operator.wait_idle(0.2)
kept = from_record([r for r in operator.records if "/reply/" in r["topic"]][-1])
next_call = ("jti-of-the-next-request", os.urandom(16), "id-of-the-next-call")   # what the coordinator sends next
swapped = replace(kept, correlation_data=next_call[1])    # the operator answers it with the kept reply
try:
    coordinator.ubsp.open_reply(swapped, "acme", UNIT, answers=next_call)
    why = "taken"
except SealError as exc:
    why = str(exc)
print("the coordinator says:", why.split(" (")[0])
as_described(
    said("an answer captured from one exchange is refused as the answer to another",
         "answers another request" in why, True),
)

# %% [markdown]
# ## Step 7. Your turn
#
# **Look inside with the key you hold.** The operator's frame says only `protected` for the last
# reply of step 3 (`sealed[-1]`, the end of the follow-up). Take it from the recording
# (`from_record`), open it with the coordinator's keys
# (`coordinator.ubsp.read_recorded(message, "acme", UNIT)`), and find the status in its JSON: the
# [task state](glossary.md#Task-states) with its timestamp, which no one without the key can know.
# Hand the check that status (a dict): the check opens the reply itself and compares.

# %%
from a2a_nb.notebook.exercises import lesson10

status = ...   # your answer: the task status inside the last sealed reply of step 3
lesson10.state_inside(status, sealed[-1], coordinator)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
inside = coordinator.ubsp.read_recorded(from_record(sealed[-1]), "acme", UNIT).json()["result"]
status = inside["statusUpdate"]["status"]
reference(lesson10.state_inside(status, sealed[-1], coordinator))


# %% [markdown]
# ## Step 8. Clean up, when you are done
#
# The exercise needs the coordinator and the key server, so *Run All* leaves them running: this
# cell only defines `clean_up()`. Call it when you are done.

# %%
def clean_up():
    """Stop the desk, the recorder and the key server; close this notebook's MQTT sessions."""
    intruder.close()
    coordinator.close()
    desk.stop()
    operator.stop()
    keys.close()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - A broker operator reads every ordinary A2A payload; under `ubsp-v1` it reads only what routing
#   needs: topics, Correlation Data and the profile's user properties.
# - A sealed payload is a **JWE** to the recipient's key holding a **signature** by the sender, with
#   a unique `jti` and a short expiry inside.
# - Keys are believed only from a `jwksUri` on a trusted HTTPS host: a swapped card cannot swap keys.
# - A replayed or re-addressed request is refused with -32005 `transport_protocol_error`.
#
# ## What's next
# From a terminal: `python -m a2a_nb serve ticket-desk` accepts sealed requests, and
# `python -m a2a_nb send ticket-desk "..." --ubsp --stream` sends one ([docs/ubsp.md](../docs/ubsp.md)).
# Back to the start: [00 · Start here](00-start-here.ipynb).

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
# # 09 · Two bindings, one agent: the ticket desk over HTTP
#
# Most people meet A2A over HTTP: JSON-RPC requests to a URL, streams as [Server-Sent Events](glossary.md#SSE), the
# official `a2a-sdk` client. Our ticket desk speaks A2A over MQTT only. In this lesson a small
# **[bridge](glossary.md#Bridge)** puts an HTTP face on it, and the coordinator's ticket TCK-4821 reaches the desk twice:
# once over MQTT as in every lesson so far, once over HTTP through the bridge. Then we compare what
# crossed each wire.
#
# ## What you will learn
# - how an HTTP client finds the agent: the **[well-known URL](glossary.md#Well-known-card-URL)** `/.well-known/agent-card.json`
#   instead of a **[retained](glossary.md#Retained-message) card** on a discovery topic, and the
#   card's `supportedInterfaces`;
# - that the **JSON-RPC bodies are the same** on both bindings: the bridge forwards the request and
#   hands back the agent's result untouched;
# - the one rule the bridge must add: over HTTP the server names a new task, over MQTT the
#   requester does, so the bridge gives the message its `Task.id`;
# - what each transport adds around the body: **[Response Topic](glossary.md#Response-Topic) +
#   [Correlation Data](glossary.md#Correlation-Data)** vs an HTTP connection; **one MQTT message per stream event** vs **Server-Sent Events**;
# - that the official `a2a-sdk` client, used as for any HTTP agent, works with our MQTT agent; and
#   that with `a2a_nb.sdk` the SDK speaks MQTT itself, as a client and as an agent;
# - what only MQTT gives: [handover](glossary.md#Handover) routing, presence, pools.
#
# ## Time needed
# About 25 minutes. Run All takes about 3 seconds.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb) (requests, Correlation Data,
#   [task states](glossary.md#Task-states)),
#   [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) and
#   [05 · Handover](05-handover.ipynb) (the [routing table](glossary.md#Routing-table)).
# - Helpful, not required: HTTP requests and responses, and `curl`.

# %% [markdown]
# ## Step 1. The desk, a tap and the bridge
#
# The desk hands each ticket to an analyst on its first reply, as in lesson 05. The **tap** is a
# plain MQTT client that keeps every message of `acme/support` (cards, requests, replies), so we
# can look at what really crossed the broker. The **bridge** is an HTTP server on `127.0.0.1`; on
# the MQTT side it is one more requester, `acme/support/bridge`. It starts only when the desk has a
# retained card: without a card there is nothing to bridge.

# %%
import json
import time
import uuid

import httpx
import pandas as pd

import a2a_nb
from a2a_nb import Bridge, Requester, Session, TicketDesk, as_described, said
from a2a_nb.protocol import properties, topics
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
desk = TicketDesk(seed=4821)
coordinator = Requester("coordinator", seed=4821)

seen = []                                     # every MQTT message of acme/support, in order
tap = Session("acme", "support", "lesson-09-tap")
tap.subscribe("$a2a/v1/+/acme/support/#", handler=seen.append)

def quiet(seconds=0.1):
    """Wait until the tap has seen nothing new for ``seconds``: everything published so far is in."""
    count = -1
    while count != len(seen):
        count = len(seen)
        time.sleep(seconds)

bridge = Bridge("ticket-desk", seed=9).start()
http = httpx.Client(timeout=10)
print(bridge)
print("card:    ", bridge.card_url)
print("JSON-RPC:", bridge.url)

# %% [markdown]
# ## Step 2. Two ways to find the card
#
# Over MQTT the card is a **retained message** on `$a2a/v1/discovery/acme/support/ticket-desk`: a
# subscriber gets it from the broker at once. Over HTTP it is a document at a **well-known URL**.
# The bridge serves the very card the desk publishes, with one more entry in
# `supportedInterfaces`: its own URL with the `JSONRPC` binding, first, because the first entry is
# the preferred one. The MQTT entry stays, so an HTTP client may still choose MQTT (Discovery
# Interoperability 3). Everything else is the desk's card, unchanged.

# %%
quiet()
card_topic = topics.discovery_topic("acme", "support", "ticket-desk")
card_msg = [m for m in seen if m.topic == card_topic][-1]   # the retained card, as the tap received it
mqtt_card = card_msg.json()
http_card = http.get(bridge.card_url).json()

def interfaces(card):
    return [(i["protocolBinding"][:40], i["url"]) for i in card["supportedInterfaces"]]

def changed(new, old):
    return sorted(k for k in new.keys() | old.keys() if new.get(k) != old.get(k))

print("retained card on MQTT:", interfaces(mqtt_card))
print("card over HTTP:       ", interfaces(http_card))
print("fields that differ:   ", changed(http_card, mqtt_card))

# %%
as_described(
    said("its own URL with the JSONRPC binding, first", interfaces(http_card)[0], ("JSONRPC", bridge.url)),
    said("The MQTT entry stays", interfaces(http_card)[1:], interfaces(mqtt_card)),
    said("Everything else is the desk's card, unchanged", changed(http_card, mqtt_card), ["supportedInterfaces"]),
)

# %% [markdown]
# ## Step 3. The same ticket, twice
#
# The coordinator sends TCK-4821 over MQTT as always. Then an HTTP client sends the same ticket to
# the bridge: a JSON-RPC `SendMessage` in an HTTP POST, as it would to any A2A server. Over HTTP a
# client does not name a new task (the server does), so its message has no `taskId`.

# %%
over_mqtt = coordinator.send("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-1")

http_request = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "role": "ROLE_USER", "messageId": "web-tck4821-m-1", "contextId": "ctx-tck4821-web",
    "parts": [{"text": TICKET_TEXT}]}}}
http_response = http.post(bridge.url, json=http_request)
over_http = http_response.json()

print("over MQTT:", over_mqtt.state, "task", over_mqtt.task_id)
print("over HTTP:", over_http["result"]["task"]["status"]["state"], "task", over_http["result"]["task"]["id"])

# %% [markdown]
# Both tickets reached the desk and both wait for the reproduction steps (`INPUT_REQUIRED`): the
# analyst asks for them, as in lesson 04.

# %%
as_described(
    said("its message has no taskId", "taskId" not in http_request["params"]["message"], True),
    said("both wait for the reproduction steps (INPUT_REQUIRED)",
         [over_mqtt.state, over_http["result"]["task"]["status"]["state"]], ["TASK_STATE_INPUT_REQUIRED"] * 2),
)

# %% [markdown]
# Now look at the bodies. The bridge published the HTTP client's request on the desk's request
# topic: let us put the three requests side by side (what the HTTP client posted, what the bridge
# published, what the coordinator published).

# %%
quiet()

def requests_for(reply_prefix):
    return [m.json() for m in seen if topics.parse_topic(m.topic).kind == "request"
            and m.response_topic.startswith(reply_prefix)]

bridged = requests_for("$a2a/v1/reply/acme/support/bridge/")[-1]
direct = requests_for("$a2a/v1/reply/acme/support/coordinator/")[-1]

def flat(body):
    message = body["params"]["message"]
    return {"method": body["method"], "JSON-RPC id": body["id"], "params keys": sorted(body["params"]),
            "message keys": sorted(message), "text": message["parts"][0]["text"][:30] + "…",
            "taskId": message.get("taskId", "(none)"), "contextId": message["contextId"]}

side_by_side = pd.DataFrame({"HTTP client → bridge": flat(http_request), "bridge → desk (MQTT)": flat(bridged),
                             "coordinator → desk (MQTT)": flat(direct)})
side_by_side

# %%
as_described(said("put the three requests side by side", len(side_by_side.columns), 3))

# %% [markdown]
# The same method, the same `params`, the same message: one JSON-RPC body on both bindings. The
# bridge changed one thing and added one thing:
#
# - the JSON-RPC `id` is per hop: the HTTP client's `1` stays on the HTTP side, the bridge's own
#   request on MQTT has its own id (and the reply to the client carries `1` again);
# - the **`taskId`**: over MQTT the requester names the task, a UUIDv4, before it publishes, so that
#   a retry can never create a second task (Request/Reply Mapping 6). The HTTP client learns it
#   from the reply, as it would from any HTTP server.
#
# The answer is the same object too: the `result` the desk published to the bridge's reply topic
# is the `result` of the HTTP response.

# %%
task_id = over_http["result"]["task"]["id"]
desk_reply = next(m.json() for m in seen if topics.parse_topic(m.topic).kind == "reply"
                  and m.topic.startswith("$a2a/v1/reply/acme/support/bridge/")
                  and m.json().get("result", {}).get("task", {}).get("id") == task_id)
print("HTTP result == MQTT result:", over_http["result"] == desk_reply["result"])
print("HTTP response id:", over_http["id"], "(the HTTP client's)")
print("MQTT reply id is the bridge's request id:", desk_reply["id"] == bridged["id"])

# %%
posted, forwarded = http_request["params"]["message"], bridged["params"]["message"]
as_described(
    said("The same method, the same params, the same message",
         (bridged["method"], sorted(bridged["params"]), {k: v for k, v in forwarded.items() if k != "taskId"})
         == (http_request["method"], sorted(http_request["params"]), posted), True),
    said("the bridge's own request on MQTT has its own id", bridged["id"] != http_request["id"], True),
    said("the reply to the client carries 1 again", over_http["id"], http_request["id"]),
    said("the requester names the task, a UUIDv4", uuid.UUID(forwarded["taskId"]).version, 4),
    said("The HTTP client learns it from the reply", forwarded["taskId"], task_id),
    said("the result the desk published to the bridge's reply topic is the result of the HTTP response",
         over_http["result"] == desk_reply["result"], True),
)

# %% [markdown]
# ## Step 4. What each transport adds around the body
#
# The body is A2A; the envelope is the transport's. On MQTT the request carries its way back in
# **properties**: a Response Topic and Correlation Data chosen by the requester. On HTTP the way
# back is the **open connection**: the response comes on it, nothing needs naming.

# %%
bridged_msg = next(m for m in seen if topics.parse_topic(m.topic).kind == "request"
                   and m.response_topic.startswith("$a2a/v1/reply/acme/support/bridge/"))
reply_msg = next(m for m in seen if m.topic == bridged_msg.response_topic)
pd.DataFrame([
    {"": "where the request goes", "MQTT": bridged_msg.topic, "HTTP": f"POST {bridge.url}"},
    {"": "how the reply finds its way back", "MQTT": f"Response Topic {bridged_msg.response_topic}",
     "HTTP": "the same TCP connection"},
    {"": "which request it answers", "MQTT": f"Correlation Data {readable_correlation(bridged_msg.correlation_data, 16)}",
     "HTTP": "the response to this request"},
    {"": "delivery", "MQTT": f"QoS {bridged_msg.qos}, PUBACK; expires after {bridged_msg.message_expiry} s",
     "HTTP": f"HTTP {http_response.status_code}, {http_response.headers['content-type']}"},
    {"": "who answered", "MQTT": f"a2a-responder-agent-id={reply_msg.user_property(properties.RESPONDER_AGENT_ID)}",
     "HTTP": "(not visible)"},
])

# %% [markdown]
# The last row matters: the desk handed the ticket to an analyst, `analyst-2`, and said so on the
# reply. (The desk gives each new ticket to the analyst it used least recently: the coordinator's
# ticket, a moment earlier, went to `analyst-1`.) The HTTP client never sees it; the bridge's
# requester does, and its routing table now sends every follow-up of that task to the analyst
# (lesson 05).

# %%
pd.DataFrame(bridge.requester.routing.rows())[["task_id", "card", "current", "reroutes"]]

# %%
as_described(
    said("the desk handed the ticket to an analyst, analyst-2, and said so on the reply",
         reply_msg.user_property(properties.RESPONDER_AGENT_ID), "analyst-2"),
    said("the coordinator's ticket, a moment earlier, went to analyst-1",
         coordinator.routing.target(over_mqtt.task_id).agent, "analyst-1"),
    said("its routing table now sends every follow-up of that task to the analyst",
         bridge.requester.routing.target(task_id).agent, reply_msg.user_property(properties.RESPONDER_AGENT_ID)),
)

# %% [markdown]
# ## Step 5. A stream: Server-Sent Events vs one MQTT message per event
#
# The HTTP client answers the analyst's question with a streamed `SendStreamingMessage` on the same
# task (same `taskId` and `contextId`, new `messageId`). Over HTTP the stream is one response of type
# `text/event-stream`: each event a `data:` line holding a complete JSON-RPC response. Over MQTT each
# event was one PUBLISH to the bridge's reply topic with the request's Correlation Data.

# %%
answer = {"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": {
    "role": "ROLE_USER", "messageId": "web-tck4821-m-2", "taskId": task_id, "contextId": "ctx-tck4821-web",
    "parts": [{"text": REPRO_TEXT}]}}}
sse = http.post(bridge.url, json=answer)
events = [json.loads(line[6:]) for line in sse.text.splitlines() if line.startswith("data: ")]
print(sse.headers["content-type"])
print(sse.text.splitlines()[0][:110] + "…")
print(len(events), "events, the last one:", events[-1]["result"]["statusUpdate"]["status"]["state"])

# %%
data_lines = [line for line in sse.text.splitlines() if line.startswith("data: ")]
as_described(
    said("one response of type text/event-stream", sse.headers["content-type"].split(";")[0], "text/event-stream"),
    said("each event a data: line holding a complete JSON-RPC response",
         {(e["jsonrpc"], e["id"], "result" in e) for e in events} if len(events) == len(data_lines) else None,
         {("2.0", answer["id"], True)}),
)

# %% [markdown]
# The MQTT side of the same stream, as the tap saw it: the continuation went straight to the
# analyst's own request topic (the bridge followed the handover), and the analyst published one
# reply message per event.

# %%
quiet()
continuation = [m for m in seen if topics.parse_topic(m.topic).kind == "request"
                and m.json()["method"] == "SendStreamingMessage"][-1]
stream_msgs = [m for m in seen if m.topic == continuation.response_topic
               and m.correlation_data == continuation.correlation_data]
print("continuation published to:", continuation.topic)
print("MQTT messages with its Correlation Data:", len(stream_msgs), "  SSE events:", len(events))
print("same items, in order:", [m.json()["result"] for m in stream_msgs] == [e["result"] for e in events])

# %%
as_described(
    said("the continuation went straight to the analyst's own request topic",
         continuation.topic, topics.request_topic("acme", "support", reply_msg.user_property(properties.RESPONDER_AGENT_ID))),
    said("the analyst published one reply message per event", len(stream_msgs), len(events)),
    said("one PUBLISH to the bridge's reply topic with the request's Correlation Data",
         {m.topic.startswith("$a2a/v1/reply/acme/support/bridge/") for m in stream_msgs}, {True}),
)

# %% [markdown]
# ## Step 6. The official A2A client, unchanged
#
# An HTTP client built for any A2A server works with the MQTT desk through the bridge. Here is the
# official `a2a-sdk` client used as its documentation shows for an HTTP agent: resolve the card,
# let the factory pick the JSON-RPC interface, send. The cell awaits the client's calls (a notebook
# cell may use `await` directly).

# %%
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

async with httpx.AsyncClient(timeout=10) as sdk_http:
    card = await A2ACardResolver(httpx_client=sdk_http, base_url=bridge.url).get_agent_card()
    client = ClientFactory(ClientConfig(httpx_client=sdk_http)).create(card)
    ticket = Message(role=Role.ROLE_USER, message_id="sdk-tck4821-m-1",
                     parts=[Part(text=TICKET_TEXT + "\n" + REPRO_TEXT)])   # steps given: no pause this time
    sdk_events = [event async for event in client.send_message(SendMessageRequest(message=ticket))]
    sdk_task = await client.get_task(GetTaskRequest(id=sdk_events[0].task.id))

print("the SDK chose:", card.supported_interfaces[0].protocol_binding, "at", card.supported_interfaces[0].url)
print("stream events:", [event.WhichOneof("payload") for event in sdk_events])
print("GetTask:      ", TaskState.Name(sdk_task.status.state), "with", len(sdk_task.artifacts), "artifact",
      sdk_task.artifacts[0].artifact_id)

# %%
as_described(
    said("let the factory pick the JSON-RPC interface", card.supported_interfaces[0].protocol_binding, "JSONRPC"),
    said("works with the MQTT desk through the bridge", TaskState.Name(sdk_task.status.state), "TASK_STATE_COMPLETED"),
)

# %% [markdown]
# ## Step 7. The official SDK over MQTT, no bridge
#
# The bridge is one way in for people who use the SDK. The kit offers another, with no HTTP at all
# ([docs/sdk.md](../docs/sdk.md) tells more): `a2a_nb.sdk.connect(card)` gives the SDK's own `Client`
# with an MQTT transport inside, and `a2a_nb.sdk.serve(executor, card)` puts an agent written with
# the SDK on the broker.
#
# First the client. We give it the desk's retained card from step 2, whose only interface is MQTT,
# and send the ticket of step 6 again. What comes out is in the SDK's own types: a `StreamResponse`
# per event, a `Task` from GetTask. Underneath, the kit's requester does the MQTT work (Response
# Topic, Correlation Data, the `Task.id`), so the tap sees each request.

# %%
from a2a.types import StreamResponse, Task

from a2a_nb import sdk
from a2a_nb.protocol.card_interface import MQTT_BINDING

async with sdk.connect(mqtt_card) as mqtt_client:    # the SDK's Client, an MQTT transport inside
    ticket = Message(role=Role.ROLE_USER, message_id="sdk-tck4821-m-2",
                     parts=[Part(text=TICKET_TEXT + "\n" + REPRO_TEXT)])
    mqtt_events = [event async for event in mqtt_client.send_message(SendMessageRequest(message=ticket))]
    mqtt_task = await mqtt_client.get_task(GetTaskRequest(id=mqtt_events[0].task.id))

quiet()
from_sdk = [m for m in seen if topics.parse_topic(m.topic).kind == "request"
            and m.response_topic.startswith("$a2a/v1/reply/acme/support/sdk-client/")]
print("stream events:", type(mqtt_events[0]).__name__, [event.WhichOneof("payload") for event in mqtt_events])
print("GetTask:      ", type(mqtt_task).__name__, TaskState.Name(mqtt_task.status.state))
print("what the SDK client published:", [(m.json()["method"], m.topic) for m in from_sdk])

# %% [markdown]
# The stream went to the desk; the GetTask went straight to the analyst who took the ticket: the
# transport followed the [handover](glossary.md#Handover) as the kit's requester always does.

# %%
took = next(m.user_property(properties.RESPONDER_AGENT_ID) for m in seen
            if m.topic == from_sdk[0].response_topic and m.user_property(properties.RESPONDER_AGENT_ID))
as_described(
    said("whose only interface is MQTT", [i["protocolBinding"] for i in mqtt_card["supportedInterfaces"]], [MQTT_BINDING]),
    said("a StreamResponse per event", {type(event) for event in mqtt_events}, {StreamResponse}),
    said("a Task from GetTask", isinstance(mqtt_task, Task), True),
    said("the tap sees each request", [m.json()["method"] for m in from_sdk], ["SendStreamingMessage", "GetTask"]),
    said("The stream went to the desk; the GetTask went straight to the analyst who took the ticket",
         [m.topic for m in from_sdk], [topics.request_topic("acme", "support", "ticket-desk"),
                                       topics.request_topic("acme", "support", took)]),
)

# %% [markdown]
# Now the other way round: an agent written with the SDK, on MQTT. Such an agent is an
# `AgentExecutor`: its `execute` reads the request and puts events on a queue. This one counts the
# words of a message and answers with a Message. `sdk.serve` puts it behind the kit's responder,
# which publishes its card and answers on the profile's topics; the executor never sees MQTT. The
# coordinator calls it like any agent of the kit.

# %%
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.types import AgentCard, AgentSkill


class WordCounter(AgentExecutor):
    async def execute(self, context, event_queue):
        words = len(get_message_text(context.message).split())
        await event_queue.enqueue_event(new_text_message(f"{words} words", context_id=context.context_id))

    async def cancel(self, context, event_queue):
        raise RuntimeError("nothing to cancel: it answers at once")


counter_card = AgentCard(name="Word counter", description="Counts the words of a message.", version="1.0.0",
                         skills=[AgentSkill(id="count", name="Count words", description="Counts the words", tags=["text"])])
counter = sdk.serve(WordCounter(), counter_card, agent="word-counter")
counted = coordinator.send("word-counter", TICKET_TEXT)
print(counter)
print("its card's MQTT interface:", counter.card["supportedInterfaces"][0]["url"])
print("the coordinator got a", *counted.result, "-", counted.text)

# %%
quiet()
as_described(
    said("counts the words of a message", counted.text, f"{len(TICKET_TEXT.split())} words"),
    said("answers with a Message", list(counted.result), ["message"]),
    said("publishes its card", any(m.topic == topics.discovery_topic("acme", "support", "word-counter") for m in seen), True),
)

# %% [markdown]
# ## Step 8. What only MQTT gives
#
# The bridge shows A2A's bodies do not depend on the transport. The transports still differ, and
# some things of this kit exist only on the MQTT side:
#
# | | over MQTT | through the HTTP bridge |
# |---|---|---|
# | finding agents | subscribe once to `$a2a/v1/discovery/acme/support/+`: every card, and every change | one URL per agent, asked when you want |
# | presence | `a2a-status` on the retained card, the [Last Will](glossary.md#Last-Will) says `offline` when an agent dies | none: a card is served while the desk's retained card exists |
# | handover | `a2a-responder-agent-id`: follow-ups go to the analyst's own topic | hidden in the bridge's routing table |
# | pools | one pool topic, many members share the work | one URL, one agent |
# | the way back | named in the request (Response Topic + Correlation Data): replies may go to another instance, arrive late, be matched anyway | the open connection: gone when it closes |
#
# The presence of the desk, which no HTTP client can see:

# %%
print("a2a-status:       ", card_msg.user_property(properties.STATUS))
print("a2a-status-source:", card_msg.user_property(properties.STATUS_SOURCE))

# %% [markdown]
# ## Step 9. Your turn
#
# **Send it yourself, then follow the handover.** Post TCK-4821 to the bridge as an HTTP client
# would: a `SendMessage` as in step 3, with a `messageId` of your own. Keep the JSON of the answer in
# `reply`. Then find the MQTT topic where the bridge will send every follow-up of *your* task. The
# HTTP answer does not say; what crossed the broker (`seen`, after `quiet()`) or the bridge's
# routing table does.

# %%
from a2a_nb.notebook.exercises import lesson09

reply = ...   # your answer: the JSON the bridge answered to your SendMessage
topic = ...   # your answer: the MQTT request topic of your task's follow-ups
lesson09.follow_up_topic(reply, topic, bridge)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
mine = {"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {
    "role": "ROLE_USER", "messageId": "web-tck4821-m-3", "parts": [{"text": TICKET_TEXT}]}}}
reply = http.post(bridge.url, json=mine).json()
topic = bridge.requester.routing.target(reply["result"]["task"]["id"]).topic
reference(lesson09.follow_up_topic(reply, topic, bridge))


# %% [markdown]
# ## Step 10. Clean up, when you are done
#
# The exercise needs the bridge and the desk, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done: the bridge stops its HTTP server and ends any
# stream still open; then the agents stop.

# %%
def clean_up():
    """Stop the bridge (its HTTP server and streams), the word counter, the tap and the desk; close the
    MQTT sessions."""
    http.close()
    bridge.stop()
    counter.stop()
    tap.close()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the bridge, the desk and the word counter keep running for the exercise: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - The bridge serves the desk's **retained card** at the **well-known URL**, with its own
#   `JSONRPC` interface first and the MQTT one kept.
# - The **JSON-RPC body** is the same on both bindings; the bridge adds the **`taskId`**, because
#   over MQTT the requester names a new task.
# - MQTT carries the way back in the request (**Response Topic + Correlation Data**), HTTP in the
#   open connection; a stream is **one MQTT message per event**, or **Server-Sent Events** on one
#   HTTP response.
# - The official `a2a-sdk` client talks to the MQTT desk through the bridge unchanged.
# - With `a2a_nb.sdk` the SDK's `Client` talks MQTT itself (`sdk.connect(card)`), and an SDK
#   `AgentExecutor` is served on the broker (`sdk.serve(executor, card)`) for any requester.
# - Handover routing, presence and pools stay on the MQTT side.
#
# ## What's next
# Run the bridge from a terminal: `python -m a2a_nb serve ticket-desk` in one shell and
# `python -m a2a_nb bridge ticket-desk` in another (both with the same `A2A_BROKER_URL`), then point
# `curl` or any A2A HTTP tool at the URL it prints. Next, the broker itself stops being trusted:
# [10 · What the broker sees](10-untrusted-broker.ipynb).

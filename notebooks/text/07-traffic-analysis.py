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
# # 07 · Traffic analysis: replay what crossed the broker
#
# Every lesson so far ran live agents. This one needs no broker at all: it replays
# **recordings** of the story. While the coordinator worked on ticket TCK-4821, a `Recorder`
# subscribed to `$a2a/#` wrote every MQTT message that crossed the broker, with all its v5
# properties, as one JSON line. `full.jsonl` holds the six scenarios of the story one after the
# other: **happy** (the desk hands the ticket to an analyst at once, in its first reply),
# **[handover](glossary.md#Handover)** (an analyst takes over mid-stream), **no-handover**,
# **multi-handover** (two handovers in one stream), **handover-unreachable** (the analyst dies:
# retries, then fallback to the desk) and **pool** (three analysts behind one
# [pool](glossary.md#Pool) topic).
#
# pandas, the charts, the conformance checks and the step-through player all read the same
# records, so what you see here is exactly what crossed the broker.
#
# ## What you will learn
# - what a recording holds, and how `load_traffic` turns it into a DataFrame with the A2A
#   fields pulled out (method, Task.id, state, who sent what to whom, latency);
# - following every task through its states with `state_transitions`;
# - finding every reroute (handover, pool assignment, fallback) with `routing_view` and
#   `handovers`;
# - latency by method with `latency_view`;
# - four charts and a Mermaid sequence diagram of one conversation;
# - checking traffic against the profile with `check_traffic`, and what a broken recording
#   looks like;
# - stepping through a conversation message by message with the player.
#
# ## Time needed
# About 25 minutes. Run All takes about 3 seconds, and needs no broker.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb): requests and replies matched by
#   [Correlation Data](glossary.md#Correlation-Data), [task states](glossary.md#Task-states), the
#   `a2a-responder-agent-id` handover.
# - pandas basics: selecting columns, filtering rows, `groupby`.

# %% [markdown]
# ## Step 1. Open a recording
#
# The recordings ship inside the kit, in `a2a_nb/data/recordings/` (one file per scenario, and
# `full.jsonl` with all of them); `recordings_dir()` finds that folder wherever the kit is
# installed, and `make recordings` makes them again against a fresh Mosquitto. Each line is one
# MQTT PUBLISH as the recorder received it (`a2a_nb/traffic/FORMAT.md` describes every key).
# Here is the first request of the story, the coordinator's `SendStreamingMessage` to the
# ticket desk:

# %%
# %matplotlib inline
import copy
import json

import pandas as pd
from IPython.display import display
from matplotlib.text import Text

import a2a_nb
from a2a_nb import as_described, said
from a2a_nb.data import recordings_dir
from a2a_nb.story.scenarios import SCENARIOS
from a2a_nb.traffic import (check_traffic, handovers, latency_chart, latency_view, load_traffic,
                            mermaid_sequence, read_records, reroute_chart, routing_view, sequence_chart,
                            show_mermaid, state_timeline, state_transitions)
from a2a_nb.traffic.charts import DPI, route_hops
from a2a_nb.traffic.frame import SUMMARY_COLUMNS, short_state
from a2a_nb.traffic.lint import RULES, exit_code, format_findings, summary
from a2a_nb.traffic.records import from_record

pd.set_option("display.max_rows", 40)
pd.set_option("display.max_colwidth", 100)
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math

RECORDINGS = recordings_dir()   # a2a_nb/data/recordings, wherever the kit is installed
records = read_records(RECORDINGS / "full.jsonl")
print(f"full.jsonl: {len(records)} messages")
print(json.dumps(records[1], indent=2))

# %% [markdown]
# Everything the binding adds is there: the **topic** (the desk's request topic),
# **[QoS 1](glossary.md#QoS-1)**, the **[Response Topic](glossary.md#Response-Topic)** (the
# coordinator's reply topic), the **Correlation Data** (the file stores its bytes as hex, so the
# 32 characters sent take 64 hex digits here; every view shows the 32 characters), the
# **Message Expiry Interval**;
# and the JSON-RPC payload is pure A2A. Agent Cards, published
# [retained](glossary.md#Retained-message), are recorded too, with their `a2a-status`
# [user property](glossary.md#User-property).

# %%
as_described(
    said("the 32 characters sent", len(from_record(records[1]).correlation_data), 32),
    said("take 64 hex digits here", len(records[1]["correlation"]), 64),
)

# %% [markdown]
# ## Step 2. One row per message
#
# `load_traffic` reads the file into a DataFrame, one row per message, and names what each
# message is: its topic **kind** (discovery, request, pool, reply, event), the A2A **method**,
# the **Task.id**, the **state** or stream **event** a reply carries, who sent it to whom, and
# for a reply the row of its request (joined by Correlation Data) and the **latency** since
# that request. The story has one task per scenario, in the order of `SCENARIOS`, so we can
# name each task after its scenario.

# %%
df = load_traffic(RECORDINGS / "full.jsonl")
TASKS = dict(zip(df["task_id"].dropna().unique(), SCENARIOS))   # Task.id -> scenario
print(f"{len(df)} messages over {df['dt'].max():.1f} s, {len(df.columns)} columns")
print("tasks:", ", ".join(f"{task[:8]}… = {name}" for task, name in TASKS.items()))
df["kind"].value_counts()

# %% [markdown]
# Replies outnumber requests: a streaming request gets one reply per stream item. The ten
# discovery messages are the desk's retained card, online when a scenario starts and offline
# when it ends (the pool scenario runs without the desk). The six `event` messages come from the
# pool scenario: each of its three analysts announces its presence, retained, on its own event
# topic when it joins the pool (online) and when it stops (offline). This Mosquitto does not
# deliver [shared subscriptions](glossary.md#Shared-subscription) on `$a2a/...` topics, so the
# members all read the plain pool topic, follow each other's presence, and each claims the
# requests it wins among the live members.

# %%
kinds = df["kind"].value_counts()
cards, events = df[df["kind"] == "discovery"], df[df["kind"] == "event"]
as_described(
    said("Replies outnumber requests", kinds["reply"] > kinds["request"] + kinds.get("pool", 0), True),
    said("The ten discovery messages are the desk's retained card", (len(cards), set(cards["from_agent"]),
         bool(cards["retain"].all())), (10, {"ticket-desk"}, True)),
    said("online when a scenario starts and offline when it ends",
         list(cards["status"]), ["online", "offline"] * (len(cards) // 2)),
    said("The six event messages come from the pool scenario", len(events), 6),
    said("each of its three analysts announces its presence, retained",
         (events["from_agent"].nunique(), bool(events["retain"].all())), (3, True)),
    said("when it joins the pool (online) and when it stops (offline)",
         events.groupby("from_agent")["status"].agg(list).map(tuple).unique().tolist(), [("online", "offline")]),
)


# %% [markdown]
# The summary columns of the happy scenario (its first 17 messages; times and latencies in
# milliseconds, Task.ids cut to 8 characters):

# %%
def summary_table(frame):
    table = frame[list(SUMMARY_COLUMNS)].copy()
    table["dt"] = (table["dt"] * 1000).round(1)
    table["latency_s"] = (table["latency_s"] * 1000).round(1)
    table["task_id"] = table["task_id"].str[:8]
    table["state"] = table["state"].map(short_state)
    return table.rename(columns={"dt": "dt_ms", "latency_s": "latency_ms"})

happy_part = df.iloc[:len(read_records(RECORDINGS / "happy.jsonl"))]   # happy.jsonl: the same messages
summary_table(happy_part)

# %% [markdown]
# Read it top to bottom: the desk's card (retained), the coordinator's request to
# `ticket-desk`, and then the first reply, a Task in state `submitted`: it already comes from
# `analyst-1`, and its `responder_agent_id` names that analyst. The desk handed the ticket over
# before it answered anything itself: that is the *happy* path, a handover in the first reply.
# From then on the coordinator sends its requests straight to `analyst-1`.

# %%
desk_request = happy_part[happy_part["kind"] == "request"].iloc[0]
first_reply = happy_part[happy_part["request_i"] == desk_request["i"]].iloc[0]
later = happy_part[(happy_part["kind"] == "request") & (happy_part["i"] > desk_request["i"])]
as_described(
    said("its first 17 messages", len(happy_part), 17),
    said("the happy scenario", set(happy_part["task_id"].dropna().map(TASKS)), {"happy"}),
    said("Task.ids cut to 8 characters", int(summary_table(happy_part)["task_id"].str.len().max()), 8),
    said("the coordinator's request to ticket-desk", desk_request["to_agent"], "ticket-desk"),
    said("the first reply, a Task in state submitted", (first_reply["event"], first_reply["state"]),
         ("task", "TASK_STATE_SUBMITTED")),
    said("it already comes from analyst-1", first_reply["from_agent"], "analyst-1"),
    said("its responder_agent_id names that analyst", first_reply["responder_agent_id"], "analyst-1"),
    said("the coordinator sends its requests straight to analyst-1", set(later["to_agent"]), {"analyst-1"}),
)

# %% [markdown]
# Which stream events did each scenario produce? `event` says what a reply carries: a `task`
# snapshot, a `status` update, an `artifact` chunk.

# %%
replies = df[df["kind"] == "reply"]
pd.crosstab(replies["task_id"].map(TASKS), replies["event"]).reindex(list(SCENARIOS))

# %% [markdown]
# ## Step 3. Every task through its states
#
# `state_transitions` keeps, per task, every *change* of state (a Task snapshot repeating the
# state a status update just announced is not a change). One line per scenario:

# %%
tr = state_transitions(df)
for task, states in tr.groupby("task_id", sort=False)["short"]:
    print(f"{TASKS[task]:21s} {' → '.join(states)}")

# %% [markdown]
# Every task but one pauses at `input-required` (the analyst asks for the reproduction steps)
# and resumes `working` when the coordinator answers on the same task. In *multi-handover*
# the coordinator sends the steps with the ticket, so the task never waits.

# %%
trails = {TASKS[task]: list(states) for task, states in tr.groupby("task_id", sort=False)["short"]}
paused = [name for name, trail in trails.items() if "input-required" in trail]
as_described(
    said("Every task but one pauses at input-required", sorted(set(SCENARIOS) - set(paused)), ["multi-handover"]),
    said("resumes working", {trail[trail.index("input-required") + 1] for name, trail in trails.items()
                             if name in paused}, {"working"}),
)

# %% [markdown]
# Each step in detail, for the happy scenario (who announced the state, and in which kind of
# reply):

# %%
happy_task = next(task for task, name in TASKS.items() if name == "happy")
steps = tr[tr["task_id"] == happy_task].copy()
steps["previous"] = steps["previous"].map(short_state)
steps["dt_ms"] = (steps["dt"] * 1000).round(1)
steps[["i", "dt_ms", "previous", "short", "from_agent", "event"]]

# %% [markdown]
# ## Step 4. Every reroute
#
# `routing_view` lists every operation on a task (each request that names a Task.id): where
# it went (`target`), who answered first, and whether it went somewhere new (`reroute`), with
# the cause:
#
# - **handover**: a reply carried `a2a-responder-agent-id`, so follow-ups go to that agent;
# - **pool-assigned**: the first request went to the pool topic; the member that answered
#   owns the task from then on;
# - **fallback**: the new agent went silent, so the coordinator went back to the card agent.

# %%
rv = routing_view(df)
rv.insert(0, "scenario", rv["task_id"].map(TASKS))
rv["dt_ms"] = (rv["dt"] * 1000).round(1)
rv[["scenario", "i", "dt_ms", "method", "target", "responder", "answered", "reroute", "cause"]]

# %% [markdown]
# Only the reroutes:

# %%
rv.loc[rv["reroute"], ["scenario", "i", "method", "target", "cause"]]

# %% [markdown]
# *handover-unreachable* shows the whole retry story: the analyst dies after asking for input,
# the coordinator's answer goes to it three times (`answered` is False: new Correlation Data
# each time, no reply), then falls back to `ticket-desk`, which answers.

# %%
dies = rv[rv["scenario"] == "handover-unreachable"]
silent = dies[~dies["answered"]]
back = dies[dies["cause"] == "fallback"]
as_described(
    said("the coordinator's answer goes to it three times", (len(silent), set(silent["target"])),
         (3, {"analyst-1"})),
    said("new Correlation Data each time", df.loc[df["i"].isin(silent["i"]), "correlation"].nunique(), 3),
    said("then falls back to ticket-desk, which answers", (list(back["target"]), bool(back["answered"].all())),
         (["ticket-desk"], True)),
)

# %% [markdown]
# `handovers` looks at the other side: the replies whose `a2a-responder-agent-id` differs from
# the agent their request addressed. Here the first reply that named each new responder:

# %%
hv = handovers(df)
hv.insert(0, "scenario", hv["task_id"].map(TASKS))
hv.drop_duplicates(["task_id", "responder"])[["scenario", "i", "addressed", "responder", "cause"]]


# %% [markdown]
# *multi-handover* names two responders in one stream (`analyst-1`, then `analyst-2`): the
# latest one wins, which is why `routing_view` shows a single reroute for it, for the `GetTask`
# that followed the stream. *happy* and *handover* differ in when the analyst took over: in
# *happy* the first reply already named `analyst-1`; in *handover* the desk answered the
# stream itself twice (a Task, `submitted`, then a status update, `working`) and `analyst-1`
# took over in the third reply, mid-stream.

# %%
def replies_to_first_request(scenario):
    task = next(t for t, name in TASKS.items() if name == scenario)
    first = df[(df["task_id"] == task) & (df["kind"] == "request")].iloc[0]
    return df[(df["kind"] == "reply") & (df["request_i"] == first["i"])]

multi = hv[hv["scenario"] == "multi-handover"].drop_duplicates("responder")
multi_reroutes = rv[(rv["scenario"] == "multi-handover") & rv["reroute"]]
at_once, mid_stream = replies_to_first_request("happy"), replies_to_first_request("handover")
desk_first = mid_stream[mid_stream["from_agent"] == "ticket-desk"]
as_described(
    said("names two responders in one stream (analyst-1, then analyst-2)", list(multi["responder"]),
         ["analyst-1", "analyst-2"]),
    said("a single reroute for it, for the GetTask that followed the stream",
         list(zip(multi_reroutes["method"], multi_reroutes["target"])), [("GetTask", "analyst-2")]),
    said("in happy the first reply already named analyst-1", at_once["responder_agent_id"].iloc[0], "analyst-1"),
    said("the desk answered the stream itself twice", len(desk_first), 2),
    said("(a Task, submitted, then a status update, working)",
         list(zip(desk_first["event"], desk_first["state"].map(short_state))),
         [("task", "submitted"), ("status", "working")]),
    said("analyst-1 took over in the third reply, mid-stream",
         (mid_stream["responder_agent_id"].iloc[2], bool(mid_stream["responder_agent_id"].iloc[:2].isna().all())),
         ("analyst-1", True)),
)

# %% [markdown]
# ## Step 5. Latency by method
#
# `latency_view` has one row per request: the time to its first reply (NaN when none came) and
# how many replies came back on its Correlation Data. A streaming request gets many replies;
# its latency is the time to the first one.

# %%
lat = latency_view(df)
lat["latency_ms"] = lat["latency_s"] * 1000
lat.groupby("method").agg(requests=("i", "size"), answered=("replies", lambda r: int((r > 0).sum())),
                          replies=("replies", "sum"), median_ms=("latency_ms", "median"),
                          max_ms=("latency_ms", "max")).round(2)

# %%
print("never answered:")
print(lat.loc[lat["replies"] == 0, ["i", "method", "target"]].to_string(index=False))

# %% [markdown]
# The three unanswered requests are the retries to the analyst that died. Everything else got
# its first reply within 20 ms: a responder acknowledges a request at once (a Task snapshot),
# and the analyst's pace (50 ms between steps) shows in the later stream items, not in the
# latency.

# %%
unanswered = lat[lat["replies"] == 0]
first_events = replies.sort_values("i").groupby("request_i")["event"].first()
gaps = replies.sort_values("i").groupby("request_i")["dt"].diff().dropna() * 1000
as_described(
    said("The three unanswered requests are the retries to the analyst that died",
         sorted(unanswered["i"]), sorted(silent["i"])),
    said("Everything else got its first reply within 20 ms", bool(lat["latency_ms"].max() < 20), True),
    said("(a Task snapshot)", set(first_events), {"task"}),
    said("the analyst's pace (50 ms between steps)", round(float(gaps[gaps > 10].median()), -1), 50),
)

# %% [markdown]
# ## Step 6. Four charts
#
# Each chart is one call on the DataFrame and returns a matplotlib figure 8 inches wide at 96
# dots per inch: 768 pixels, which a JupyterLab cell shows at that size, so its smallest text
# (7 points) is about 9 pixels on screen. Every chart is drawn on a white card with a rounded
# frame and a transparent background around it, so it reads the same in JupyterLab's light and
# dark themes. First, the **sequence chart** of the happy scenario: one lane per agent, one
# arrow per message in recorded order; a star marks a reply that named a new responder.

# %%
happy = load_traffic(RECORDINGS / "happy.jsonl")
seq = sequence_chart(happy, title="The happy scenario: who sent what to whom")
display(seq)

# %%
smallest = min(t.get_fontsize() for t in seq.findobj(Text) if t.get_text().strip())
as_described(
    said("a matplotlib figure 8 inches wide at 96 dots per inch", (float(seq.get_size_inches()[0]), seq.dpi), (8, 96)),
    said("768 pixels", float(seq.get_size_inches()[0] * DPI), 768),
    said("its smallest text (7 points) is about 9 pixels on screen", (smallest, round(smallest * DPI / 72)), (7, 9)),
)

# %% [markdown]
# The **state timeline**: per task (a row, named by its scenario), the states it passed
# through, step by step: the x axis counts the task's messages, so `submitted`, acknowledged
# within 20 ms of the request, is as wide as any other state. Hatched segments are
# interrupted states (the task waits for the coordinator): five of the six tasks pause at
# `input-required`. A black-edged square is a terminal state. On each row: where the task was
# first sent (dot, below), every reply naming a new responder (star, with the agent), the
# fallback to the card agent (diamond) and the requests that got no reply (hollow circles).
# `x="time"` draws the same states against seconds.

# %%
display(state_timeline(df, names=TASKS))

# %%
acked = []
for task in TASKS:
    rows = df[df["task_id"] == task]
    sent = rows[rows["kind"].isin(["request", "pool"])]["dt"].iloc[0]
    acked.append(rows[rows["state"] == "TASK_STATE_SUBMITTED"]["dt"].iloc[0] - sent)
as_described(
    said("submitted, acknowledged within 20 ms of the request", bool(max(acked) < 0.020), True),
    said("five of the six tasks pause at input-required", (len(paused), len(TASKS)), (5, 6)),
)

# %% [markdown]
# The **reroute chart**: one panel per task, one row per agent it met, one marker per hop in
# order: an operation the coordinator sent (a circle; hollow: no reply), a reply that named a
# new responder (a star, labelled with the reply it came in) and, before such a star, the
# replies the previous agent had sent on the same request (a square). Under each hop: its
# method or what it carried and, in bold, the cause of a reroute. Compare the first two panels:
# in *happy* the star follows the request at once (in the first reply); in *handover* a square
# on the `ticket-desk` row comes first (2 replies: `submitted`, `working`), then the star
# (mid-stream, reply 3). *multi-handover* has two stars, each after a square.

# %%
display(reroute_chart(df, names=TASKS))

# %%
hops = route_hops(df)
hops["scenario"] = hops["task_id"].map(TASKS)

def panel(scenario):
    return hops[hops["scenario"] == scenario].reset_index(drop=True)

happy_hops, handover_hops = panel("happy"), panel("handover")
as_described(
    said("in happy the star follows the request at once (in the first reply)",
         (list(happy_hops["kind"][:2]), happy_hops["detail"][1]), (["request", "named"], "in the first reply")),
    said("in handover a square on the ticket-desk row comes first (2 replies: submitted, working)",
         (handover_hops["kind"][1], handover_hops["agent"][1], handover_hops["detail"][1]),
         ("replied", "ticket-desk", "2 replies\nsubmitted, working")),
    said("then the star (mid-stream, reply 3)", (handover_hops["kind"][2], handover_hops["detail"][2]),
         ("named", "mid-stream, reply 3")),
    said("multi-handover has two stars, each after a square", list(panel("multi-handover")["kind"][1:5]),
         ["replied", "named", "replied", "named"]),
)

# %% [markdown]
# The **latency chart**: time to the first reply by method, a box per method and every request
# as a dot.

# %%
display(latency_chart(df))

# %% [markdown]
# ## Step 7. A sequence diagram as text
#
# `mermaid_sequence` writes the same conversation as a Mermaid `sequenceDiagram`:
# JupyterLab 4.1+ and GitHub draw it, and it is plain text you can paste into documentation or
# compare in a test.

# %%
show_mermaid(mermaid_sequence(happy))

# %% [markdown]
# ## Step 8. Check the traffic against the profile
#
# `check_traffic` reads the same DataFrame and reports every MUST and SHOULD of the A2A over
# MQTT profile that the traffic breaks (payloads are also checked against the official A2A
# v1.0 types of `a2a-sdk`). These are its rules:

# %%
pd.DataFrame([{"rule": r.id, "level": r.level, "section": r.section} for r in RULES.values()])

# %%
findings = check_traffic(df)
print(format_findings(findings))
print(summary(findings, len(df), "full.jsonl"))
for name in SCENARIOS:
    path = RECORDINGS / f"{name}.jsonl"
    one = load_traffic(path)
    print(summary(check_traffic(one), len(one), path.name))

# %% [markdown]
# The story's traffic keeps every rule. The same checks run from a terminal:
# `python -m a2a_nb lint a2a_nb/data/recordings/full.jsonl` (from the checkout).

# %%
as_described(said("The story's traffic keeps every rule", len(findings), 0))

# %% [markdown]
# ## Step 9. A broken copy
#
# What does a mistake look like? We copy the happy recording and break three things a careless
# implementation gets wrong:
#
# 1. the analyst's input-required reply loses its **Correlation Data** (the coordinator could
#    not match it to its request);
# 2. the final `GetTask` **reuses the Correlation Data** of the first request (and its reply
#    echoes it), so two requests share one correlation;
# 3. the coordinator's answer goes to the **ticket desk** instead of the analyst that took
#    over (it ignored `a2a-responder-agent-id`).

# %%
happy_records = read_records(RECORDINGS / "happy.jsonl")
broken = copy.deepcopy(happy_records)
first_request = int(happy.loc[happy["kind"] == "request", "i"].iloc[0])
asks_input = int(happy.loc[happy["state"] == "TASK_STATE_INPUT_REQUIRED", "i"].iloc[0])
answer = int(happy.loc[(happy["kind"] == "request") & (happy["i"] > asks_input), "i"].iloc[0])
get_task = int(happy.loc[happy["method"] == "GetTask", "i"].iloc[0])   # the request; its reply follows

broken[asks_input]["correlation"] = None                                     # 1
for row in (get_task, get_task + 1):                                         # 2
    broken[row]["correlation"] = happy_records[first_request]["correlation"]
broken[answer]["topic"] = happy_records[first_request]["topic"]             # 3
print(f"#{asks_input}: Correlation Data removed")
print(f"#{get_task}, #{get_task + 1}: Correlation Data of #{first_request} reused")
print(f"#{answer}: sent to {broken[answer]['topic']}")

# %%
broken_df = load_traffic(broken)
shared = broken_df[(broken_df["kind"] == "request")
                   & (broken_df["correlation"] == happy_records[first_request]["correlation"])]
as_described(
    said("break three things", len({asks_input, get_task, answer}), 3),
    said("so two requests share one correlation", len(shared), 2),
)

# %%
bad = check_traffic(broken_df)
print(summary(bad, len(broken), "broken copy of happy.jsonl"))
bad[["i", "rule", "level", "section"]]

# %%
print(format_findings(bad))

# %% [markdown]
# Each finding names the row, the rule, the profile section, and what to change. All three
# breaks are MUST violations: `python -m a2a_nb lint` on this copy would exit with status 1
# (handy in CI). Rows are the `i` column of the DataFrame, the same numbers the player below
# shows.

# %%
must_rows = set(bad.loc[bad["level"] == "MUST", "i"])
as_described(
    said("All three breaks are MUST violations", sorted({asks_input, get_task, answer} & must_rows),
         sorted({asks_input, get_task, answer})),
    said("would exit with status 1", exit_code(bad), 1),
)

# %% [markdown]
# ## Step 10. Step through a conversation
#
# The player replays a recording one message at a time: press ▶ (Play) or drag the slider. For
# the current message it shows who sent what to whom, what it changed (a handover, a reroute),
# the state of every task after it, its MQTT v5 properties next to its JSON payload, and the
# sequence chart with the message highlighted, drawn at the width it is shown (640 pixels), so
# its labels keep their size. This one is live: play with it. (Reopened without a running
# kernel, the notebook shows a table of the first steps instead, and says to run the cell
# again.)

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook.player import TrafficPlayer, step_text

player = TrafficPlayer(happy)
player

# %%
as_described(said("drawn at the width it is shown (640 pixels)", (player.chart_width, player.chart.layout.width),
                   (640, "640px")))

# %% [markdown]
# The player can be driven from code too: set `player.index` (the player above moves to that
# message), and `player.text()` says what it shows in one line (`step_text(df, i)` does the
# same for any recording).

# %%
player.index = asks_input
print(player.text())
for i in (answer, answer + 1, get_task - 1):
    print(step_text(happy, i))

# %% [markdown]
# ## Step 11. Your turn
#
# **Find the fallback.** In one scenario the coordinator gave up on an agent and went back to
# the card agent. Find that reroute in the routing view `rv` (its `cause` column): which
# scenario, and from which agent to which? "From" is where the task's previous operation went.

# %%
from a2a_nb.notebook.exercises import lesson07

answer_fallback = ...   # your answer: (scenario, from_agent, to_agent)
lesson07.fallback(answer_fallback, df, TASKS)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
row = rv[rv["cause"] == "fallback"].iloc[0]
before = rv[(rv["task_id"] == row["task_id"]) & (rv["i"] < row["i"])].iloc[-1]
answer_fallback = (row["scenario"], before["target"], row["target"])
reference(lesson07.fallback(answer_fallback, df, TASKS))

# %% [markdown]
# **The slowest first reply.** Which request waited longest for its first reply, and what was
# its method? Use `lat` (the latency view of step 5), not the chart: two of the slowest are
# close.

# %%
answer_slowest = ...   # your answer: (the request's row i, its method)
lesson07.slowest_first_reply(answer_slowest, df)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
slowest = lat.loc[lat["latency_s"].idxmax()]
answer_slowest = (int(slowest["i"]), slowest["method"])
reference(lesson07.slowest_first_reply(answer_slowest, df))

# %% [markdown]
# ## Step 12. Clean up
#
# Replaying opened no MQTT connection, so there is nothing to close; `stop_all()` says so.

# %%
print(f"closed {a2a_nb.stop_all()} MQTT session(s)")

# %% [markdown]
# ## Summary
# - A recording is one JSON line per MQTT PUBLISH with every v5 property (`Recorder`,
#   `python -m a2a_nb record`); `load_traffic` makes it a DataFrame with the A2A fields pulled
#   out, replies joined to their requests by Correlation Data.
# - `state_transitions` follows every task through its states; `routing_view` and `handovers`
#   show every reroute: handover (in the first reply or mid-stream), pool assignment, fallback
#   after a silent agent.
# - `latency_view` measures each request to its first reply; unanswered requests stand out.
# - Four charts (`sequence_chart`, `state_timeline`, `reroute_chart`, `latency_chart`) and a
#   Mermaid diagram (`mermaid_sequence`) draw the same data, on cards readable in light and dark
#   themes.
# - `check_traffic` (and `python -m a2a_nb lint`) checks traffic against the profile's MUST
#   and SHOULD rules: a missing or reused Correlation Data and an ignored handover are MUST
#   violations.
#
# ## What's next
# Record your own traffic: run `python -m a2a_nb record --out my-run.jsonl` in a terminal (or
# `with Recorder(path="my-run.jsonl"):` in a cell) while you work through a lesson, then load
# it here instead of `full.jsonl`, and lint it. `python -m a2a_nb story --scenario full
# --record story.jsonl` replays the whole story live against your broker.
# [08 · Security](08-security.ipynb) locks the broker down (TLS, a password per agent, topic
# ACLs) and makes the desk demand a [bearer token](glossary.md#Bearer-token) on every request. Back to
# [00 · Start here](00-start-here.ipynb) for the list of lessons.
